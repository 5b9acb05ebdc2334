//! The payload's own metadata (`release-metadata`, `image-references`) and what documents need
//! from it: images the ImageStream pins, and ClusterOperator versions the CVO waits for.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

use serde_json::Value;

use super::{Code, Doc, Finding, locate};
use crate::capability::DECLARED_CAPABILITIES_KEY;
use crate::payload::{
    IMAGE_REFERENCES, InputFile, Layout, PayloadInput, RELEASE_METADATA, Release,
    parse_image_references, parse_release_metadata,
};

/// What the metadata files say, and what is wrong with them.
pub(crate) struct Metadata {
    pub release: Option<Release>,
    /// Tag → pullspec of the ImageStream; `None` when there is no usable `image-references`.
    pub images: Option<BTreeMap<String, String>>,
    pub findings: Vec<Finding>,
}

pub(crate) fn check_files(input: &PayloadInput) -> Metadata {
    let mut findings = Vec::new();
    let root = input.layout == Layout::PayloadRoot;
    let release = match &input.release_metadata {
        Some(file) => release_metadata(file, &mut findings),
        None => {
            findings.extend(root.then(|| missing(RELEASE_METADATA)));
            None
        }
    };
    let version = release.as_ref().map(|r| r.version.as_str());
    let images = match &input.image_references {
        Some(file) => image_references(file, version, &mut findings),
        None => {
            findings.extend(root.then(|| missing(IMAGE_REFERENCES)));
            None
        }
    };
    Metadata {
        release,
        images,
        findings,
    }
}

fn path(name: &str) -> String {
    format!("release-manifests/{name}")
}

/// A payload repository usually has no metadata: `oc adm release new` writes both files when
/// it builds the release image. The CVO itself refuses a payload without them.
fn missing(name: &str) -> Finding {
    Finding::new(
        Code::MissingMetadata,
        path(name),
        format!("release-manifests/{name} is missing: the CVO refuses a payload without it"),
    )
    .help("fine for a repository of manifests (oc adm release new writes it into the release image); a payload given to a CVO must have it")
}

fn release_metadata(file: &InputFile, findings: &mut Vec<Finding>) -> Option<Release> {
    let parsed = file
        .contents
        .as_ref()
        .map_err(|e| format!("cannot read file: {e}"))
        .and_then(|bytes| parse_release_metadata(bytes));
    match parsed {
        Ok((release, warnings)) => {
            findings.extend(warnings.into_iter().map(|w| {
                if w.starts_with(DECLARED_CAPABILITIES_KEY) {
                    Finding::new(Code::CapabilityDeclaration, path(RELEASE_METADATA), w)
                        .help("declare each new capability once: {\"name\", \"description\", \"sets\"} (see docs/payload-format.md, \"Capabilities a payload declares\")")
                } else {
                    Finding::new(Code::ReleaseMetadataValue, path(RELEASE_METADATA), w)
                        .help("the CVO only logs this and ignores the value")
                }
            }));
            Some(release)
        }
        Err(message) => {
            findings.push(
                Finding::new(Code::ReleaseMetadata, path(RELEASE_METADATA), message).help(
                    "release-metadata must be JSON with \"kind\": \"cincinnati-metadata-v0\" and a semantic \"version\"",
                ),
            );
            None
        }
    }
}

fn image_references(
    file: &InputFile,
    version: Option<&str>,
    findings: &mut Vec<Finding>,
) -> Option<BTreeMap<String, String>> {
    let parsed = file
        .contents
        .as_ref()
        .map_err(|e| format!("cannot read file: {e}"))
        .and_then(|bytes| parse_image_references(bytes, version));
    match parsed {
        Ok(images) => Some(images),
        Err(message) => {
            findings.push(
                Finding::new(Code::ImageReferences, path(IMAGE_REFERENCES), message).help(
                    "image-references must be an image.openshift.io/v1 ImageStream whose metadata.name is the release version",
                ),
            );
            None
        }
    }
}

/// `index .Images "tag"` (or with a raw string) inside a template action.
static IMAGES_INDEX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"index\s+\.Images\s+(?:"([^"]*)"|`([^`]*)`)"#).expect("a constant, valid pattern")
});

/// `{{index .Images "tag"}}` in a `manifests/` template whose tag the ImageStream lacks: Go's
/// `index` of a missing key is the empty string, so the manifest gets an empty image.
pub(crate) fn check_template_tags(
    text: &str,
    path: &str,
    images: Option<&BTreeMap<String, String>>,
) -> Vec<Finding> {
    let Some(images) = images else {
        return Vec::new();
    };
    IMAGES_INDEX
        .captures_iter(text)
        .filter_map(|c| {
            let tag = c.get(1).or_else(|| c.get(2))?;
            (!images.contains_key(tag.as_str())).then(|| {
                let (line, column) = locate::line_column(text, tag.start());
                Finding::new(
                    Code::MissingImageTag,
                    path,
                    format!(
                        "image-references has no tag {}: the template renders an empty image",
                        crate::manifest::go_quote(tag.as_str())
                    ),
                )
                .at(line, column)
                .help(format!(
                    "add the tag to image-references, or use one of: {}",
                    images.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            })
        })
        .collect()
}

/// Checks that need the documents: images and ClusterOperator versions.
pub(crate) fn check_documents(docs: &[Doc], meta: &Metadata, release_image: &str) -> Vec<Finding> {
    let pinned: Option<BTreeSet<&str>> = meta
        .images
        .as_ref()
        .map(|images| images.values().map(String::as_str).collect());
    let mut findings = Vec::new();
    for doc in docs {
        let m = &doc.manifest;
        let is_cluster_operator = m.gvk.is("config.openshift.io", "ClusterOperator");
        if pinned.is_none() && !is_cluster_operator {
            continue;
        }
        let object = m.object();
        if is_cluster_operator {
            findings.extend(cluster_operator_versions(doc, &object));
        }
        if let Some(pinned) = &pinned {
            findings.extend(unpinned_images(doc, &object, pinned, release_image));
        }
    }
    findings
}

/// Upstream `checkOperatorHealth` fails every update on a ClusterOperator manifest that
/// declares no versions (`ClusterOperatorNoVersions`).
fn cluster_operator_versions(doc: &Doc, object: &Value) -> Option<Finding> {
    let versions = object.pointer("/status/versions").and_then(Value::as_array);
    if versions.is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let m = &doc.manifest;
    let (line, column) = locate::document_start(m);
    Some(
        Finding::new(
            Code::ClusterOperatorVersions,
            &*doc.path,
            format!(
                "Cluster operator {} does not declare expected versions",
                m.id.name
            ),
        )
        .at(line, column)
        .help("add status.versions, e.g. `- name: operator` with `version: \"0.0.1-snapshot\"`, which oc adm release new replaces with the release version"),
    )
}

fn unpinned_images(
    doc: &Doc,
    object: &Value,
    pinned: &BTreeSet<&str>,
    release_image: &str,
) -> Vec<Finding> {
    let mut images = Vec::new();
    container_images(object, &mut images, 0);
    images.sort_unstable();
    images.dedup();
    images
        .into_iter()
        .filter(|image| !image.is_empty() && *image != release_image && !pinned.contains(image))
        .map(|image| {
            let (line, column) = locate::text(&doc.manifest, image);
            Finding::new(
                Code::MissingImage,
                &*doc.path,
                format!("image {image} is not in image-references: the release does not pin or mirror it"),
            )
            .at(line, column)
            .help("list the image in the operator's image-references, so that oc adm release new replaces it with the release's pullspec")
        })
        .collect()
}

/// `image` of every container, init container and ephemeral container, wherever a pod spec
/// sits (Deployment, DaemonSet, Job, CronJob, Pod...). Depth-limited like the YAML reader.
fn container_images<'v>(value: &'v Value, out: &mut Vec<&'v str>, depth: usize) {
    if depth > 200 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if matches!(
                    key.as_str(),
                    "containers" | "initContainers" | "ephemeralContainers"
                ) && let Some(list) = child.as_array()
                {
                    out.extend(
                        list.iter()
                            .filter_map(|c| c.get("image").and_then(Value::as_str)),
                    );
                }
                container_images(child, out, depth + 1);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| container_images(item, out, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::Layout;

    fn file(name: &str, text: &str) -> InputFile {
        InputFile {
            name: name.into(),
            contents: Ok(text.as_bytes().to_vec()),
        }
    }

    fn input(metadata: Option<&str>, references: Option<&str>) -> PayloadInput {
        PayloadInput {
            origin: "t".into(),
            layout: Layout::PayloadRoot,
            manifests: vec![],
            release_manifests: vec![],
            release_metadata: metadata.map(|t| file(RELEASE_METADATA, t)),
            image_references: references.map(|t| file(IMAGE_REFERENCES, t)),
        }
    }

    const STREAM: &str = r#"{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"4.18.0"},"spec":{"tags":[{"name":"cvo","from":{"kind":"DockerImage","name":"quay.io/cvo@sha256:1"}}]}}"#;

    fn codes(meta: &Metadata) -> Vec<(Code, String)> {
        meta.findings
            .iter()
            .map(|f| (f.code, f.message.clone()))
            .collect()
    }

    #[test]
    fn good_metadata_has_no_findings() {
        let meta = check_files(&input(
            Some(r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#),
            Some(STREAM),
        ));
        assert!(meta.findings.is_empty());
        assert_eq!(meta.images.unwrap().len(), 1);
    }

    #[test]
    fn missing_metadata_is_a_warning_for_a_root_and_nothing_for_a_plain_directory() {
        let meta = check_files(&input(None, None));
        assert_eq!(
            codes(&meta),
            vec![
                (
                    Code::MissingMetadata,
                    "release-manifests/release-metadata is missing: the CVO refuses a payload without it".into()
                ),
                (
                    Code::MissingMetadata,
                    "release-manifests/image-references is missing: the CVO refuses a payload without it".into()
                )
            ]
        );
        let mut plain = input(None, None);
        plain.layout = Layout::PlainDirectory;
        assert!(check_files(&plain).findings.is_empty());
    }

    #[test]
    fn upstream_messages_for_bad_metadata() {
        let meta = check_files(&input(
            Some(r#"{"kind":"cincinnati-metadata-v1","version":"4.18.0"}"#),
            Some(STREAM),
        ));
        assert_eq!(
            codes(&meta),
            vec![(
                Code::ReleaseMetadata,
                r#"unrecognized Cincinnati metadata kind "cincinnati-metadata-v1""#.into()
            )]
        );
        let meta = check_files(&input(
            Some(
                r#"{"kind":"cincinnati-metadata-v0","version":"4.17.0","metadata":{"release.openshift.io/architecture":"arm"}}"#,
            ),
            Some(STREAM),
        ));
        assert_eq!(
            codes(&meta),
            vec![
                (
                    Code::ReleaseMetadataValue,
                    r#"unrecognized release.openshift.io/architecture value "arm": only "multi" is recognised"#.into()
                ),
                (
                    Code::ImageReferences,
                    "version from image-references (4.18.0) differs from release-metadata (4.17.0)".into()
                )
            ]
        );
    }

    #[test]
    fn template_tags_must_exist() {
        let images = BTreeMap::from([("cvo".to_string(), "quay.io/cvo@sha256:1".to_string())]);
        let text = "a: '{{index .Images \"cvo\"}}'\nb: '{{ index .Images `nope` }}'\n";
        let found = check_template_tags(text, "manifests/x.yaml", Some(&images));
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].message,
            r#"image-references has no tag "nope": the template renders an empty image"#
        );
        assert_eq!((found[0].line, found[0].column), (Some(2), Some(23)));
        assert!(check_template_tags(text, "p", None).is_empty());
    }
}
