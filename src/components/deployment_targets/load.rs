//! Objects from a YAML (or JSON) stream, for `cvo dt reconcile`: each document one object of a
//! kind the component handles (a `v1 List` holds several), read the way kubectl reads them. A
//! namespaced object without a namespace is in `default`; a `metadata.deletionTimestamp` means
//! it is being deleted.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::OnceLock;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rayon::prelude::*;
use serde_json::Value;

use super::fields::{CompiledSchema, UnknownField, schema_of};
use super::model::{Kind, Object, ObjectRef, World};
use super::tracking::Hashing;
use crate::suggest::suggest;
use crate::yaml::{
    Chunk, Position, is_json_stream, parse_document, split_stream, split_yaml_stream,
};

/// Why a stream could not be read; `document` counts from 1, `line` is where the problem is
/// (for a YAML syntax error, the bad line; otherwise where the document starts).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("document {document} (line {line}): {message}")]
    Document {
        document: usize,
        line: usize,
        message: String,
    },
}

/// The objects of a stream, and what the reader should know about them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loaded {
    pub world: World,
    pub warnings: Vec<String>,
}

/// Reads every document of `text` into a [`World`]. Linear in the number of documents; the
/// documents are parsed, checked against their kind's schema and typed on every core, then
/// taken in order (so the first problem reported is the first in the stream, as one pass finds
/// it).
pub fn load(text: &str) -> Result<Loaded, LoadError> {
    let chunks = split(text)?;
    let schemas = Schemas::default();
    let documents: Vec<(usize, Result<Vec<Read>, LoadError>)> = (chunks.into_par_iter())
        .enumerate()
        .map(|(index, chunk)| (chunk.line, read_document(chunk, index + 1, &schemas)))
        .collect();
    let mut loaded = Loaded {
        world: World::with_capacity(documents.len()),
        warnings: Vec::new(),
    };
    let mut seen: HashMap<ObjectRef, usize, Hashing> =
        HashMap::with_capacity_and_hasher(documents.len(), Hashing::default());
    for (index, (line, items)) in documents.into_iter().enumerate() {
        let document = index + 1;
        let at = |message: String| LoadError::Document {
            document,
            line,
            message,
        };
        for item in items? {
            let (object, unknown) = item.map_err(at)?;
            let reference = object.reference();
            if let Some(first) = seen.insert(reference.clone(), document) {
                return Err(at(format!("{reference} is also document {first}")));
            }
            for field in unknown {
                loaded.warnings.push(format!(
                    "document {document} (line {line}): {reference}: {field}; the API server would drop it"
                ));
            }
            if let Some(warning) = gone_already(&object) {
                loaded
                    .warnings
                    .push(format!("document {document}: {warning}"));
                continue;
            }
            loaded.world.insert_shared(object);
        }
    }
    Ok(loaded)
}

/// One object of a document as read, with the fields the API server would drop, or what is
/// wrong with it.
/// Shared from the start: the thread that reads it allocates the object where the world will
/// hold it (no copy of every object when the world takes them).
type Read = Result<(Arc<Object>, Vec<UnknownField>), String>;

/// The objects of one document (`document` counts from 1), each read on its own: an error in
/// one item of a `List` comes after the items before it.
fn read_document(chunk: Chunk, document: usize, schemas: &Schemas) -> Result<Vec<Read>, LoadError> {
    let value = value_of(chunk, document)?;
    Ok(items(value)
        .into_iter()
        .map(|value| object(value, schemas))
        .collect())
}

/// The documents of the stream. JSON documents separated by `---` lines are YAML (JSON is YAML
/// 1.2's subset): they are read as such, not as one JSON stream, where `---` is no JSON.
fn split(text: &str) -> Result<Vec<Chunk<'_>>, LoadError> {
    let separated = text.lines().any(|line| line.starts_with("---"));
    let chunks = match is_json_stream(text) && separated {
        true => split_yaml_stream(text),
        false => split_stream(text),
    };
    chunks.map_err(|e| LoadError::Syntax {
        line: e.position.map_or(1, |p| p.line),
        message: e.message,
    })
}

fn value_of(chunk: Chunk, document: usize) -> Result<Value, LoadError> {
    if let Some(json) = chunk.json {
        return Ok(json);
    }
    parse_document(&chunk.reader_text())
        .map(|n| n.into_value())
        .map_err(|e| {
            let line = |p: Position| chunk.line + p.line - 1;
            let message = match e.started_at {
                Some(start) => format!(
                    "{} (it started at line {} column {})",
                    e.message,
                    line(start),
                    start.column
                ),
                None => e.message,
            };
            LoadError::Document {
                document,
                line: e.position.map_or(chunk.line, line),
                message,
            }
        })
}

/// The objects of a document: none for an empty one, the items of a `v1 List`.
fn items(value: Value) -> Vec<Value> {
    let is_list = value.get("kind").and_then(Value::as_str) == Some("List")
        && value.get("apiVersion").and_then(Value::as_str) == Some("v1");
    match value {
        Value::Null => Vec::new(),
        Value::Object(mut map) if is_list => match map.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        other => vec![other],
    }
}

/// The schema of each kind (and of object metadata), compiled once per stream, when the first
/// object that needs it comes (from any thread).
struct Schemas {
    kinds: HashMap<Kind, OnceLock<CompiledSchema>>,
    metadata: OnceLock<CompiledSchema>,
}

impl Default for Schemas {
    fn default() -> Self {
        Schemas {
            kinds: Kind::ALL.iter().map(|&k| (k, OnceLock::new())).collect(),
            metadata: OnceLock::new(),
        }
    }
}

impl Schemas {
    /// The unknown fields of `value`, an object of `kind`.
    fn unknown(&self, kind: Kind, value: &Value) -> Vec<UnknownField> {
        let mut found = match self.kinds.get(&kind) {
            Some(schema) => (schema.get_or_init(|| CompiledSchema::new(&schema_of_kind(kind))))
                .unknown_fields(value),
            None => CompiledSchema::new(&schema_of_kind(kind)).unknown_fields(value),
        };
        // A CRD's schema says nothing of metadata (the API server checks it as ObjectMeta).
        if kind.is_custom() {
            let metadata =
                (self.metadata).get_or_init(|| CompiledSchema::new(&schema_of::<ObjectMeta>()));
            if let Some(meta) = value.get("metadata") {
                for mut field in metadata.unknown_fields(meta) {
                    field.path = format!("metadata.{}", field.path);
                    found.push(field);
                }
            }
        }
        found
    }
}

/// The schema the API server holds objects of `kind` to: a CRD's `openAPIV3Schema`, a
/// built-in type's OpenAPI schema.
fn schema_of_kind(kind: Kind) -> Value {
    use k8s_openapi::api::core::v1::{
        LimitRange, Namespace, ResourceQuota, Secret, ServiceAccount,
    };
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use kube::CustomResourceExt;

    use super::types::{
        DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment,
        GitOpsDeploymentManagedEnvironment, SpaceRequest,
    };
    let crd = match kind {
        Kind::DeploymentTargetClass => DeploymentTargetClass::crd(),
        Kind::DeploymentTarget => DeploymentTarget::crd(),
        Kind::DeploymentTargetClaim => DeploymentTargetClaim::crd(),
        Kind::Environment => Environment::crd(),
        Kind::GitOpsDeploymentManagedEnvironment => GitOpsDeploymentManagedEnvironment::crd(),
        Kind::SpaceRequest => SpaceRequest::crd(),
        Kind::Namespace => return schema_of::<Namespace>(),
        Kind::ServiceAccount => return schema_of::<ServiceAccount>(),
        Kind::RoleBinding => return schema_of::<RoleBinding>(),
        Kind::ResourceQuota => return schema_of::<ResourceQuota>(),
        Kind::LimitRange => return schema_of::<LimitRange>(),
        Kind::Secret => return schema_of::<Secret>(),
    };
    let schema = (crd.spec.versions.first())
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok());
    let mut schema = schema.unwrap_or(Value::Null);
    // What every object has, which a CRD's schema need not declare.
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for key in ["apiVersion", "kind", "metadata"] {
            properties
                .entry(key)
                .or_insert_with(|| serde_json::json!({"type": "object"}));
        }
    }
    schema
}

/// One object, its kind known and its namespace defaulted, with the fields the API server
/// would drop.
fn object(mut value: Value, schemas: &Schemas) -> Read {
    let field = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (api_version, kind_name) = (field("apiVersion"), field("kind"));
    let kind = kind_of(&api_version, &kind_name)?;
    let meta = value.get_mut("metadata").and_then(Value::as_object_mut);
    let Some(meta) = meta.filter(|m| {
        m.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
    }) else {
        return Err(format!("{kind_name} has no metadata.name"));
    };
    if kind.is_namespaced() {
        let namespace = meta.entry("namespace").or_insert(Value::Null);
        if namespace.as_str().is_none_or(str::is_empty) {
            *namespace = "default".into();
        }
    } else {
        meta.remove("namespace");
    }
    let unknown = schemas.unknown(kind, &value);
    let mut object = Object::from_value(kind, value).map_err(|e| format!("{kind_name}: {e}"))?;
    if let Object::Secret(secret) = &mut object {
        fold_string_data(secret);
    }
    Ok((Arc::new(object), unknown))
}

/// `stringData` goes into `data` (its values win), as the API server stores a Secret: it keeps
/// no `stringData`.
fn fold_string_data(secret: &mut k8s_openapi::api::core::v1::Secret) {
    let Some(strings) = secret.string_data.take() else {
        return;
    };
    let data = secret.data.get_or_insert_with(Default::default);
    for (key, text) in strings {
        data.insert(key, ByteString(text.into_bytes()));
    }
}

/// The kind of `apiVersion`/`kind`, or an error listing the kinds there are.
fn kind_of(api_version: &str, kind: &str) -> Result<Kind, String> {
    if let Some(found) = Kind::from_type(api_version, kind) {
        return Ok(found);
    }
    if kind.is_empty() {
        return Err("not a Kubernetes object: no kind".into());
    }
    let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    if let Some(known) = Kind::ALL.iter().find(|k| k.as_str() == kind) {
        return Err(format!(
            "{kind} is {}, not {api_version:?}",
            known.api_version()
        ));
    }
    let hint = suggest(kind, &names)
        .map(|s| format!(" (did you mean {s}?)"))
        .unwrap_or_default();
    let valid: Vec<String> = (Kind::ALL.iter())
        .map(|k| format!("{} {}", k.api_version(), k.as_str()))
        .collect();
    Err(format!(
        "unknown kind {api_version} {kind}{hint}; valid kinds: {}",
        valid.join(", ")
    ))
}

/// An object being deleted that no finalizer holds would already be gone from a cluster.
fn gone_already(object: &Object) -> Option<String> {
    let meta = object.meta();
    (meta.deletion_timestamp.is_some() && meta.finalizers.is_none()).then(|| {
        format!(
            "{} is being deleted and has no finalizer, so on a cluster it is already gone; it is left out (give it the finalizer its controller adds, e.g. binder.appstudio.redhat.com/finalizer on a claim, to reconcile its deletion)",
            object.reference()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_stream_defaulting_namespaces_and_skipping_empty_documents() {
        let text = "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClaim
metadata: {name: c}
spec: {deploymentTargetClassName: cls}
---
# nothing here
---
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClass
metadata: {name: cls, namespace: ignored}
spec: {provisioner: appstudio.redhat.com/namespace, reclaimPolicy: Delete}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: team}}
- {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: team}}
";
        let loaded = load(text).unwrap();
        let refs: Vec<String> = loaded
            .world
            .objects()
            .map(|o| o.reference().to_string())
            .collect();
        assert_eq!(
            refs,
            [
                "DeploymentTargetClass cls",
                "DeploymentTargetClaim default/c",
                "Namespace team",
                "Secret team/s"
            ]
        );
        assert_eq!(loaded.warnings, Vec::<String>::new());
    }

    #[test]
    fn a_deleting_object_without_finalizers_is_left_out_with_a_warning() {
        let text = "apiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTargetClaim\nmetadata: {name: c, namespace: ns, deletionTimestamp: '2024-05-01T12:00:00Z'}\nspec: {deploymentTargetClassName: cls}\n";
        let loaded = load(text).unwrap();
        assert_eq!(loaded.world.objects().count(), 0);
        assert!(
            loaded.warnings[0].starts_with(
                "document 1: DeploymentTargetClaim ns/c is being deleted and has no finalizer"
            ),
            "{:?}",
            loaded.warnings
        );
        let held = text.replace(
            "namespace: ns,",
            "namespace: ns, finalizers: [binder.appstudio.redhat.com/finalizer],",
        );
        let loaded = load(&held).unwrap();
        let claim = loaded.world.claim("ns", "c").unwrap();
        assert_eq!(
            claim
                .metadata
                .deletion_timestamp
                .as_ref()
                .map(|t| t.0.to_string()),
            Some("2024-05-01T12:00:00Z".into())
        );
    }

    #[test]
    fn bad_documents_are_named_with_what_is_wrong() {
        let doc2 = |body: &str| {
            format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: a}}\n---\n{body}")
        };
        let cases = [
            (
                doc2(
                    "apiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTargt\nmetadata: {name: x}\n",
                ),
                "document 2 (line 5): unknown kind appstudio.redhat.com/v1alpha1 DeploymentTargt (did you mean DeploymentTarget?); valid kinds: appstudio.redhat.com/v1alpha1 DeploymentTargetClass, ",
            ),
            (
                doc2("apiVersion: apps/v1\nkind: DeploymentTarget\nmetadata: {name: x}\n"),
                "document 2 (line 5): DeploymentTarget is appstudio.redhat.com/v1alpha1, not \"apps/v1\"",
            ),
            (
                doc2("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
                "document 2 (line 5): unknown kind v1 ConfigMap; valid kinds: ",
            ),
            (
                doc2("just: text\n"),
                "document 2 (line 5): not a Kubernetes object: no kind",
            ),
            (
                doc2("apiVersion: v1\nkind: Secret\nmetadata: {}\n"),
                "document 2 (line 5): Secret has no metadata.name",
            ),
            (
                doc2(
                    "apiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTarget\nmetadata: {name: x}\nspec: {claimRef: 3}\n",
                ),
                "document 2 (line 5): DeploymentTarget: ",
            ),
            (
                doc2("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"),
                "document 2 (line 5): Namespace a is also document 1",
            ),
            (
                doc2("key: [unclosed\n"),
                "document 2 (line 6): while parsing a flow sequence: did not find expected ',' or ']' (it started at line 5 column 6)",
            ),
            (
                "a: 1\n--- x\n".into(),
                "line 2: invalid Yaml document separator: x",
            ),
        ];
        for (text, want) in cases {
            let got = load(&text).unwrap_err().to_string();
            assert!(got.starts_with(want), "{got}\n  wanted: {want}");
        }
    }

    #[test]
    fn fields_the_api_server_would_drop_are_warned_about_with_the_near_miss() {
        let text = "\
apiVersion: appstudio.redhat.com/v1alpha1
kind: DeploymentTargetClaim
metadata: {name: c, namespace: team, labells: {a: b}}
spec:
  deploymentTargetClassName: cls
  targetname: dt
  resources: {requests: {memory: 16Gi}}
  arch: x86-64
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: team}
strngData: {a: b}
";
        let loaded = load(text).unwrap();
        assert_eq!(
            loaded.warnings,
            [
                "document 1 (line 1): DeploymentTargetClaim team/c: unknown field spec.arch (known fields there: deploymentTargetClassName, targetName); the API server would drop it",
                "document 1 (line 1): DeploymentTargetClaim team/c: unknown field spec.resources (known fields there: deploymentTargetClassName, targetName); the API server would drop it",
                "document 1 (line 1): DeploymentTargetClaim team/c: unknown field spec.targetname (did you mean targetName?); the API server would drop it",
                "document 1 (line 1): DeploymentTargetClaim team/c: unknown field metadata.labells (did you mean labels?); the API server would drop it",
                "document 2 (line 10): Secret team/s: unknown field strngData (did you mean stringData?); the API server would drop it",
            ]
        );
        assert_eq!(
            loaded.world.claim("team", "c").unwrap().spec.target_name,
            ""
        );
    }

    #[test]
    fn type_errors_name_the_field() {
        let text = "apiVersion: appstudio.redhat.com/v1alpha1\nkind: DeploymentTarget\nmetadata: {name: x}\nspec: {claimRef: {name: c}}\n";
        assert_eq!(
            load(text).unwrap_err().to_string(),
            "document 1 (line 1): DeploymentTarget: spec.claimRef: invalid type: map, expected a string"
        );
    }

    #[test]
    fn string_data_is_folded_into_data_as_the_api_server_stores_it() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {a: b2xk, b: b2xk}\nstringData: {b: new, c: more}\n";
        let loaded = load(text).unwrap();
        let secret = loaded.world.secret("ns", "s").unwrap();
        assert_eq!(secret.string_data, None);
        let data: Vec<(&str, &[u8])> = (secret.data.iter().flatten())
            .map(|(k, v)| (k.as_str(), v.0.as_slice()))
            .collect();
        assert_eq!(
            data,
            [("a", &b"old"[..]), ("b", &b"new"[..]), ("c", &b"more"[..])]
        );
    }

    #[test]
    fn json_documents_are_read_as_one_stream_or_separated_by_dashes() {
        let ns = |name: &str| {
            format!(
                "{{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {{\"name\": \"{name}\"}}}}"
            )
        };
        let names = |text: &str| -> Vec<String> {
            (load(text).unwrap().world.objects())
                .map(|o| o.reference().name)
                .collect()
        };
        let stream = format!("{}\n{}\n", ns("a"), ns("b"));
        assert_eq!(names(&stream), ["a", "b"]);
        let separated = format!("{}\n---\n{}\n", ns("a"), ns("b"));
        assert_eq!(names(&separated), ["a", "b"]);
        let broken = format!("{}\n---\n{{\"apiVersion\": \"v1\",\n", ns("a"));
        let error = load(&broken).unwrap_err().to_string();
        assert!(error.starts_with("document 2 (line 4): "), "{error}");
    }
}
