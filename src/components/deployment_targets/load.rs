//! Objects from a YAML (or JSON) stream, for `cvo dt reconcile`: each document one object of a
//! kind the component handles (a `v1 List` holds several), read the way kubectl reads them. A
//! namespaced object without a namespace is in `default`; a `metadata.deletionTimestamp` means
//! it is being deleted.

use serde_json::Value;

use super::model::{Kind, Object, ObjectRef, World};
use crate::suggest::suggest;
use crate::yaml::{Chunk, parse_document, split_stream};

/// Why a stream could not be read; `document` counts from 1, `line` is where it starts.
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

/// Reads every document of `text` into a [`World`].
pub fn load(text: &str) -> Result<Loaded, LoadError> {
    let chunks = split_stream(text).map_err(|e| LoadError::Syntax {
        line: e.position.map_or(1, |p| p.line),
        message: e.message,
    })?;
    let mut loaded = Loaded::default();
    let mut seen: Vec<(ObjectRef, usize)> = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        let document = index + 1;
        let at = |message: String| LoadError::Document {
            document,
            line: chunk.line,
            message,
        };
        for value in items(value_of(chunk).map_err(&at)?) {
            let object = object(value).map_err(&at)?;
            let reference = object.reference();
            if let Some((_, first)) = seen.iter().find(|(r, _)| *r == reference) {
                return Err(at(format!("{reference} is also document {first}")));
            }
            seen.push((reference.clone(), document));
            if let Some(warning) = gone_already(&object) {
                loaded
                    .warnings
                    .push(format!("document {document}: {warning}"));
                continue;
            }
            loaded.world.insert(object);
        }
    }
    Ok(loaded)
}

fn value_of(chunk: &Chunk) -> Result<Value, String> {
    if let Some(json) = &chunk.json {
        return Ok(json.clone());
    }
    (parse_document(&chunk.reader_text()).map(|n| n.into_value())).map_err(|e| e.message)
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

/// One object, its kind known and its namespace defaulted.
fn object(mut value: Value) -> Result<Object, String> {
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
    Object::from_value(kind, value).map_err(|e| format!("{kind_name}: {e}"))
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
            (doc2("key: [unclosed\n"), "document 2 (line 5): "),
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
}
