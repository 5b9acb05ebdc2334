//! The namespace a service's operator declares, as anax finds it (`common/deploymentconfig.go`
//! `GetClusterDeploymentMetadata` and `GetKubeOperatorNamespace`, anax main 2f3fa5a): the
//! cluster deployment's `metadata.namespace` when it has one (publishing writes it), else, read
//! from `operatorYamlArchive` (a base64 gzipped tar of YAML files), the last `v1` Namespace's
//! name, or failing that the namespace of an `apps/v1` Deployment. Pure: the archive is
//! decoded in memory.

use std::io::Read as _;

use base64::Engine as _;
use serde_json::Value;

/// Why the namespace cannot be read; anax's words where it has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveError {
    #[error("failed to unmarshal json for cluster deployment field {0}: {1}")]
    Json(String, String),
    #[error("Invalid data presented in the cluster deployment field: {0}")]
    NotAnObject(String),
    #[error("The metadata attribute in the cluster deployment has wrong format.")]
    Metadata,
    #[error("Failed to get the namespace from the Kube operator. {0}")]
    Archive(String),
}

/// An archive's contents are read up to this many bytes (a guard against a gzip bomb; an
/// operator's YAML is kilobytes).
const MAX_ARCHIVE_BYTES: u64 = 64 << 20;

/// The namespace of a service's `clusterDeployment` (a JSON string, as the exchange holds it,
/// or an object); empty when it names none.
pub fn cluster_deployment_namespace(cluster_deployment: &Value) -> Result<String, ArchiveError> {
    let config = match cluster_deployment {
        Value::Null => return Ok(String::new()),
        Value::String(text) if text.is_empty() => return Ok(String::new()),
        Value::String(text) => serde_json::from_str::<Value>(text)
            .map_err(|e| ArchiveError::Json(text.clone(), e.to_string()))?,
        other => other.clone(),
    };
    let Value::Object(config) = config else {
        return Err(ArchiveError::NotAnObject(config.to_string()));
    };
    if let Some(metadata) = config.get("metadata") {
        let Value::Object(metadata) = metadata else {
            return Err(ArchiveError::Metadata);
        };
        if let Some(ns) = metadata.get("namespace") {
            // anax asserts a string; anything else reads as none here.
            return Ok(ns.as_str().unwrap_or_default().to_owned());
        }
    }
    match config.get("operatorYamlArchive") {
        Some(Value::String(archive)) => {
            operator_namespace(archive).map_err(|e| ArchiveError::Archive(e.to_string()))
        }
        _ => Ok(String::new()),
    }
}

#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("the archive is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("the archive is not a gzipped tar: {0}")]
    Tar(#[from] std::io::Error),
    #[error("the archive holds more than {MAX_ARCHIVE_BYTES} bytes")]
    TooLarge,
}

/// anax's `GetKubeOperatorNamespace` over the base64 archive.
fn operator_namespace(archive: &str) -> Result<String, ReadError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(archive.trim_end())?;
    let gz = flate2::read::GzDecoder::new(bytes.as_slice());
    let mut tar = tar::Archive::new(gz.take(MAX_ARCHIVE_BYTES + 1));
    let mut bodies = Vec::new();
    let mut total = 0u64;
    for entry in tar.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type().is_dir() {
            continue;
        }
        let mut body = Vec::new();
        entry.read_to_end(&mut body)?;
        total += body.len() as u64;
        if total > MAX_ARCHIVE_BYTES {
            return Err(ReadError::TooLarge);
        }
        bodies.push(String::from_utf8_lossy(&body).into_owned());
    }
    Ok(namespace_of_yaml(&bodies))
}

/// anax's `getK8sNamespaceObjectFromYaml`: every file split at each `---` (anywhere, as
/// anax's `strings.Split` does), each piece decoded; a `v1` Namespace sets the namespace (the
/// last wins), an `apps/v1` Deployment's namespace counts while none is set. Pieces that do
/// not decode are skipped, as anax skips them.
pub fn namespace_of_yaml(files: &[String]) -> String {
    let mut namespace = String::new();
    for file in files {
        for piece in file.split("---").filter(|p| !p.trim().is_empty()) {
            let Ok(object) = crate::yaml::parse_value(piece) else {
                continue;
            };
            let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
            match (text("/apiVersion"), text("/kind")) {
                (Some("v1"), Some("Namespace")) => {
                    namespace = text("/metadata/name").unwrap_or_default().to_owned();
                }
                (Some("apps/v1"), Some("Deployment")) if namespace.is_empty() => {
                    if let Some(ns) = text("/metadata/namespace").filter(|ns| !ns.is_empty()) {
                        namespace = ns.to_owned();
                    }
                }
                _ => {}
            }
        }
    }
    namespace
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A base64 gzipped tar of `files`, as `hzn exchange service publish` puts it in the
    /// service.
    pub(crate) fn archive(files: &[(&str, &str)]) -> String {
        let mut builder = tar::Builder::new(Vec::new());
        let mut dir = tar::Header::new_gnu();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_size(0);
        builder
            .append_data(&mut dir, "operator/", std::io::empty())
            .unwrap();
        for (name, body) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(body.len() as u64);
            header.set_mode(0o644);
            builder
                .append_data(&mut header, name, body.as_bytes())
                .unwrap();
        }
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap())
    }

    const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: operator-ns\n";
    const DEPLOYMENT: &str =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: dep-ns\n";

    #[test]
    fn the_namespace_of_the_operator_yaml() {
        let both = format!("{NAMESPACE}---\n{DEPLOYMENT}");
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (vec![], ""),
            (vec![NAMESPACE], "operator-ns"),
            (vec![DEPLOYMENT], "dep-ns"),
            // A Namespace wins over a Deployment, wherever it is.
            (vec![DEPLOYMENT, NAMESPACE], "operator-ns"),
            (vec![&both], "operator-ns"),
            // The last Namespace wins.
            (
                vec![
                    NAMESPACE,
                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: second\n",
                ],
                "second",
            ),
            // Other API versions are not what anax decodes.
            (
                vec!["apiVersion: apps/v1beta1\nkind: Deployment\nmetadata:\n  namespace: x\n"],
                "",
            ),
            (
                vec!["apiVersion: example.com/v1\nkind: Namespace\nmetadata:\n  name: x\n"],
                "",
            ),
            // Pieces that are not YAML are skipped.
            (vec!["a: [\n", NAMESPACE], "operator-ns"),
        ];
        for (files, want) in cases {
            let files: Vec<String> = files.into_iter().map(str::to_owned).collect();
            assert_eq!(namespace_of_yaml(&files), want, "{files:?}");
        }
    }

    #[test]
    fn metadata_first_then_the_archive() {
        let with_ns = archive(&[("operator/ns.yaml", NAMESPACE)]);
        let cases: Vec<(Value, Result<&str, &str>)> = vec![
            (Value::Null, Ok("")),
            (json!(""), Ok("")),
            (json!({"operatorYamlArchive": with_ns}), Ok("operator-ns")),
            // A string, as the exchange holds it.
            (
                json!(json!({"operatorYamlArchive": with_ns}).to_string()),
                Ok("operator-ns"),
            ),
            // Publishing writes metadata.namespace (empty when the operator names none): it wins.
            (
                json!({"operatorYamlArchive": with_ns, "metadata": {"namespace": ""}}),
                Ok(""),
            ),
            (
                json!({"operatorYamlArchive": "x", "metadata": {"namespace": "md"}}),
                Ok("md"),
            ),
            // metadata without a namespace: the archive is read.
            (
                json!({"operatorYamlArchive": with_ns, "metadata": {}}),
                Ok("operator-ns"),
            ),
            (
                json!({"metadata": "x"}),
                Err("The metadata attribute in the cluster deployment has wrong format."),
            ),
            (
                json!([1]),
                Err("Invalid data presented in the cluster deployment field: [1]"),
            ),
            (
                json!({"operatorYamlArchive": "not base64!"}),
                Err(
                    "Failed to get the namespace from the Kube operator. the archive is not base64: Invalid symbol 32, offset 3.",
                ),
            ),
            (
                json!({"operatorYamlArchive": "bm90IGEgZ3ppcCBhcmNoaXZlISE="}),
                Err(
                    "Failed to get the namespace from the Kube operator. the archive is not a gzipped tar: invalid gzip header",
                ),
            ),
        ];
        for (deployment, want) in cases {
            let got = cluster_deployment_namespace(&deployment).map_err(|e| e.to_string());
            assert_eq!(
                got,
                want.map(str::to_owned).map_err(str::to_owned),
                "{deployment}"
            );
        }
        assert!(matches!(
            cluster_deployment_namespace(&json!("{")),
            Err(ArchiveError::Json(..))
        ));
    }
}
