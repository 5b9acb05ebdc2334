//! Manifests: the documents of a payload, with the identity and annotations the CVO reads from
//! them (upstream `library-go/pkg/manifest`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::capability::Capability;
use crate::graph::GraphTask;
use crate::yaml::{self, Node, Position};

pub const CAPABILITY_ANNOTATION: &str = "capability.openshift.io/name";
pub const DELETE_ANNOTATION: &str = "release.openshift.io/delete";
pub const CREATE_ONLY_ANNOTATION: &str = "release.openshift.io/create-only";

/// Which payload directory a manifest comes from; `manifests/` is loaded first and templated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ManifestDir {
    #[serde(rename = "manifests")]
    Manifests,
    #[serde(rename = "release-manifests")]
    ReleaseManifests,
}

impl ManifestDir {
    pub fn as_str(self) -> &'static str {
        match self {
            ManifestDir::Manifests => "manifests",
            ManifestDir::ReleaseManifests => "release-manifests",
        }
    }
}

impl fmt::Display for ManifestDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The identity the CVO matches resources by: group, kind, namespace, name (not the version).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ManifestId {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for ManifestId {
    /// Upstream `resourceId.String()`: the namespace part only when there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Group: {} Kind: {} ",
            go_quote(&self.group),
            go_quote(&self.kind)
        )?;
        if !self.namespace.is_empty() {
            write!(f, "Namespace: {} ", go_quote(&self.namespace))?;
        }
        write!(f, "Name: {}", go_quote(&self.name))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    fn from_api_version(api_version: &str, kind: &str) -> Self {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        GroupVersionKind {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }
}

/// One document of a payload file.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Base name of the file (upstream `OriginalFilename`).
    pub file: Arc<str>,
    pub dir: ManifestDir,
    /// 0-based position among the file's non-empty documents.
    pub index: usize,
    /// 1-based line of the file where the document starts.
    pub line: usize,
    /// Go-compatible JSON of the document (`Manifest.Raw`): the exact bytes for JSON files,
    /// `json.Marshal` of the YAML tree otherwise. The version hash is computed over these.
    pub raw: Box<[u8]>,
    pub gvk: GroupVersionKind,
    pub id: ManifestId,
    /// `metadata.annotations` as the CVO sees them: `None` when missing, null, or holding any
    /// value that is not a string or null (then every inclusion check says "no annotations").
    pub annotations: Option<BTreeMap<String, String>>,
    /// Some mapping of the document may write a key twice (go-yaml keeps the last value
    /// silently); `yaml::duplicate_keys` says which. Exact unless merge keys are used.
    pub repeated_keys: bool,
    /// The whole file's text, shared by its documents (an `Arc<String>` so the file is not
    /// copied once more when it is loaded).
    source: Arc<String>,
    span: Range<usize>,
}

impl Manifest {
    /// The document's text as written (comments and formatting kept).
    pub fn original_text(&self) -> &str {
        &self.source[self.span.clone()]
    }

    /// The text of the whole file the document came from.
    pub fn file_text(&self) -> &str {
        &self.source
    }

    /// The full object. Parsed from `raw` on demand: the payload keeps only the header fields
    /// resident, which keeps memory near the payload's size on disk.
    pub fn object(&self) -> Value {
        serde_json::from_slice(&self.raw).unwrap_or(Value::Null)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// Upstream `GetManifestCapabilities`: `None` without the annotation or when it is empty;
    /// otherwise the `+`-separated names, untrimmed (`a+` gives `["a", ""]`).
    pub fn capabilities(&self) -> Option<Vec<Capability>> {
        let value = self.annotation(CAPABILITY_ANNOTATION)?;
        if value.is_empty() {
            return None;
        }
        Some(value.split('+').map(Capability::from).collect())
    }

    /// Upstream `Manifest.String()`.
    pub fn describe(&self) -> String {
        format!("Filename: {} {}", go_quote(&self.file), self.id)
    }

    /// Upstream task display string: `configmap "ns/name" (5 of 10)`.
    pub fn task_string(&self, index: usize, total: usize) -> String {
        let name = if self.id.name.is_empty() {
            self.file.to_string()
        } else if self.id.namespace.is_empty() {
            self.id.name.clone()
        } else {
            format!("{}/{}", self.id.namespace, self.id.name)
        };
        format!(
            "{} {} ({index} of {total})",
            self.gvk.kind.to_lowercase(),
            go_quote(&name)
        )
    }

    /// Path relative to the payload root, e.g. `release-manifests/0000_50_x.yaml`.
    pub fn path(&self) -> String {
        format!("{}/{}", self.dir, self.file)
    }
}

impl GraphTask for Manifest {
    fn file_name(&self) -> &str {
        &self.file
    }

    fn is_job(&self) -> bool {
        self.gvk.group == "batch" && self.gvk.version == "v1" && self.gvk.kind == "Job"
    }
}

/// Go's `%q` (`strconv.Quote`) of a string.
pub fn go_quote(s: &str) -> String {
    go_quote_bytes(s.as_bytes())
}

/// Go's `strconv.Quote` of bytes, which need not be UTF-8 (Go strings are bytes): a byte that
/// is not part of a UTF-8 character is `\xNN`. Non-printable characters other than the
/// controls are written as they are (Go escapes them, by Unicode tables this does not carry).
pub fn go_quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        chunk
            .valid()
            .chars()
            .for_each(|c| push_go_quoted(&mut out, c));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

fn push_go_quoted(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}

/// What is wrong with a file or one of its documents, with where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {kind}", self.location())]
pub struct ParseError {
    /// Path of the file relative to the payload root (or as given).
    pub path: String,
    /// 0-based index of the document in the file (counting only non-empty ones).
    pub document: Option<usize>,
    pub position: Option<Position>,
    pub kind: ParseErrorKind,
}

impl ParseError {
    /// `path:line:column: document N`, with the parts that are known.
    pub fn location(&self) -> String {
        let mut out = self.path.clone();
        if let Some(p) = self.position {
            out.push_str(&format!(":{}:{}", p.line, p.column));
        }
        if let Some(d) = self.document {
            out.push_str(&format!(" (document {d})"));
        }
        out
    }

    /// The fix to suggest.
    pub fn help(&self) -> &'static str {
        self.kind.help()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("cannot read file: {0}")]
    Unreadable(String),
    #[error("file is not valid UTF-8 (byte {0})")]
    NotUtf8(usize),
    #[error("{0}")]
    Syntax(String),
    #[error("document is {0}, not a mapping")]
    NotAMapping(&'static str),
    #[error("{field} must be a string, not {found}")]
    FieldNotString {
        field: &'static str,
        found: &'static str,
    },
    #[error("Resource with fields {0} must contain kubernetes required fields kind and name")]
    MissingRequiredFields(ManifestId),
    #[error("duplicate resource: ({id}) (first defined in document {first_document})")]
    DuplicateResource {
        id: ManifestId,
        first_document: usize,
    },
    #[error("template rendering failed: {0}")]
    Template(String),
    #[error("{0}")]
    ReleaseMetadata(String),
    #[error("{0}")]
    ImageReferences(String),
    #[error(
        "no manifest file (*.yaml, *.yml or *.json) in manifests/ or release-manifests/: the CVO would apply nothing"
    )]
    NoManifests,
}

impl ParseErrorKind {
    pub fn help(&self) -> &'static str {
        match self {
            ParseErrorKind::Unreadable(_) => {
                "check the file's permissions, or remove it from the payload"
            }
            ParseErrorKind::NotUtf8(_) => "save the file as UTF-8",
            ParseErrorKind::Syntax(_) => "fix the YAML/JSON syntax at the position shown",
            ParseErrorKind::NotAMapping(_) => {
                "each document must be a Kubernetes object (a mapping with apiVersion, kind and metadata)"
            }
            ParseErrorKind::FieldNotString { .. } => "quote the value so that it is a string",
            ParseErrorKind::MissingRequiredFields(_) => {
                "set `kind` and `metadata.name` in this document"
            }
            ParseErrorKind::DuplicateResource { .. } => {
                "remove one of the two documents, or give them different names: the CVO rejects the whole file"
            }
            ParseErrorKind::Template(_) => {
                "the manifests/ directory only supports {{.ReleaseImage}}, {{.ClusterProfile}} and {{index .Images \"tag\"}}"
            }
            ParseErrorKind::ReleaseMetadata(_) => {
                "release-metadata must be JSON with \"kind\": \"cincinnati-metadata-v0\" and a semantic \"version\""
            }
            ParseErrorKind::ImageReferences(_) => {
                "image-references must be an image.openshift.io/v1 ImageStream whose metadata.name is the release version"
            }
            ParseErrorKind::NoManifests => {
                "put the payload's manifests in release-manifests/ (and the CVO's own, templated, in manifests/), or pass --payload the directory that holds them"
            }
        }
    }
}

/// Parses every document of a file. All errors are returned, not only the first; a file with
/// errors must not be used (upstream rejects it whole).
pub fn parse_file(
    file: &str,
    dir: ManifestDir,
    text: Arc<String>,
) -> (Vec<Manifest>, Vec<ParseError>) {
    let path = format!("{dir}/{file}");
    let error = |document, position, kind| ParseError {
        path: path.clone(),
        document,
        position,
        kind,
    };
    let chunks = match yaml::split_stream(&text) {
        Ok(chunks) => chunks,
        Err(e) => {
            return (
                vec![],
                vec![error(None, e.position, ParseErrorKind::Syntax(e.message))],
            );
        }
    };
    let file: Arc<str> = Arc::from(file);
    let mut manifests = Vec::new();
    let mut errors = Vec::new();
    let mut seen: HashMap<ManifestId, usize> = HashMap::new();
    for mut chunk in chunks {
        let index = manifests.len()
            + errors
                .iter()
                .filter(|e: &&ParseError| e.document.is_some())
                .count();
        let start = chunk.text.as_ptr() as usize - text.as_ptr() as usize;
        let span = start..start + chunk.text.len();
        let (value, raw, repeated_keys) = match document_value(&mut chunk) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => continue,
            Err(e) => {
                let position = e.position.map(|p| shift(p, chunk.line));
                let message = match e.started_at.map(|p| shift(p, chunk.line)) {
                    Some(start) => format!(
                        "{} (it started at line {} column {})",
                        e.message, start.line, start.column
                    ),
                    None => e.message,
                };
                errors.push(error(
                    Some(index),
                    position,
                    ParseErrorKind::Syntax(message),
                ));
                continue;
            }
        };
        let at = Some(Position {
            line: chunk.line,
            column: 1,
        });
        match header(&value) {
            Ok((gvk, id, annotations)) => {
                if let Some(&first_document) = seen.get(&id) {
                    errors.push(error(
                        Some(index),
                        at,
                        ParseErrorKind::DuplicateResource { id, first_document },
                    ));
                    continue;
                }
                seen.insert(id.clone(), index);
                manifests.push(Manifest {
                    file: file.clone(),
                    dir,
                    index,
                    line: chunk.line,
                    raw,
                    gvk,
                    id,
                    annotations,
                    repeated_keys,
                    source: text.clone(),
                    span,
                });
            }
            Err(kind) => errors.push(error(Some(index), at, kind)),
        }
    }
    (manifests, errors)
}

/// A parsed document, its raw bytes, and whether a key may repeat in it.
type Document = (Node, Box<[u8]>, bool);

/// A document's tree and its raw bytes, or `None` for an empty/null document (skipped).
fn document_value(chunk: &mut yaml::Chunk<'_>) -> Result<Option<Document>, yaml::Error> {
    let (node, raw, repeats) = match chunk.json.take() {
        // serde_json keeps the last of repeated keys too; JSON payload files are rare and
        // machine-written, so their repeats are not looked for.
        Some(value) => (
            Node::from(value),
            chunk.text.trim().as_bytes().into(),
            false,
        ),
        None => {
            let (node, repeats) = yaml::parse_document_noting_repeats(&chunk.reader_text())?;
            let raw = yaml::go_json(&node).into_boxed_slice();
            (node, raw, repeats)
        }
    };
    Ok((!node.is_null()).then_some((node, raw, repeats)))
}

/// Line positions inside a document are relative to it; make them relative to the file.
fn shift(p: Position, first_line: usize) -> Position {
    Position {
        line: p.line + first_line - 1,
        column: p.column,
    }
}

type Header = (
    GroupVersionKind,
    ManifestId,
    Option<BTreeMap<String, String>>,
);

fn header(node: &Node) -> Result<Header, ParseErrorKind> {
    let object = node
        .as_map()
        .ok_or(ParseErrorKind::NotAMapping(node.type_name()))?;
    let api_version = string_field(object.get("apiVersion"), "apiVersion")?;
    let kind = string_field(object.get("kind"), "kind")?;
    let metadata = object.get("metadata").and_then(Node::as_map);
    let field = |key: &str| {
        metadata
            .and_then(|m| m.get(key))
            .and_then(Node::as_str)
            .unwrap_or("")
    };
    let gvk = GroupVersionKind::from_api_version(api_version, kind);
    let id = ManifestId {
        group: gvk.group.clone(),
        kind: kind.to_string(),
        namespace: field("namespace").to_string(),
        name: field("name").to_string(),
    };
    if id.kind.is_empty() || id.name.is_empty() {
        return Err(ParseErrorKind::MissingRequiredFields(id));
    }
    let annotations = metadata
        .and_then(|m| m.get("annotations"))
        .and_then(string_map);
    Ok((gvk, id, annotations))
}

fn string_field<'v>(
    value: Option<&'v Node>,
    field: &'static str,
) -> Result<&'v str, ParseErrorKind> {
    match value {
        None | Some(Node::Null) => Ok(""),
        Some(Node::Str(s)) => Ok(s),
        Some(other) => Err(ParseErrorKind::FieldNotString {
            field,
            found: other.type_name(),
        }),
    }
}

/// apimachinery's `NestedNullCoercingStringMap`: nulls become "", any other non-string value
/// makes the whole map absent.
fn string_map(node: &Node) -> Option<BTreeMap<String, String>> {
    node.as_map()?
        .iter()
        .map(|(k, v)| match v {
            Node::Str(s) => Some((k.to_string(), s.clone())),
            Node::Null => Some((k.to_string(), String::new())),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<Manifest>, Vec<ParseError>) {
        parse_file(
            "0000_10_a_file.yaml",
            ManifestDir::ReleaseManifests,
            Arc::new(text.to_string()),
        )
    }

    #[test]
    fn go_quote_escapes_as_strconv_quote() {
        // Expected values printed by Go 1.26's strconv.Quote.
        let text = "a\"\\\u{7}\u{8}\u{c}\n\r\t\u{b}\u{1}\u{7f}\u{85}é€";
        let quoted = r#""a\"\\\a\b\f\n\r\t\v\x01\x7f\u0085é€""#;
        assert_eq!(go_quote(text), quoted);
        assert_eq!(go_quote_bytes(&[b'%', 0xe2, 0x82]), r#""%\xe2\x82""#);
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    #[test]
    fn reads_identity_annotations_and_go_raw_json() {
        let (m, e) = parse(CM);
        assert!(e.is_empty(), "{e:?}");
        let m = &m[0];
        assert_eq!(
            m.id,
            ManifestId {
                group: "".into(),
                kind: "ConfigMap".into(),
                namespace: "ns".into(),
                name: "a".into()
            }
        );
        assert_eq!(
            m.annotation("include.release.openshift.io/self-managed-high-availability"),
            Some("true")
        );
        assert_eq!(
            std::str::from_utf8(&m.raw).unwrap(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"include.release.openshift.io/self-managed-high-availability":"true"},"name":"a","namespace":"ns"}}"#
        );
        assert_eq!(m.original_text(), CM);
        assert_eq!(
            m.describe(),
            r#"Filename: "0000_10_a_file.yaml" Group: "" Kind: "ConfigMap" Namespace: "ns" Name: "a""#
        );
        assert_eq!(m.task_string(5, 10), r#"configmap "ns/a" (5 of 10)"#);
    }

    #[test]
    fn json_documents_keep_their_bytes() {
        let text = "{\n  \"kind\": \"Test\", \"apiVersion\": \"v1\",\n  \"metadata\": {\"name\": \"x\"}\n}\n";
        let (m, e) = parse(text);
        assert!(e.is_empty());
        assert_eq!(&*m[0].raw, text.trim().as_bytes());
    }

    #[test]
    fn empty_documents_are_skipped_and_not_counted() {
        let (m, e) = parse(&format!(
            "---\n---\n{CM}---\n# comment\n---\n{}",
            CM.replace("name: a", "name: b")
        ));
        assert!(e.is_empty());
        assert_eq!(
            m.iter().map(|m| (m.index, m.line)).collect::<Vec<_>>(),
            vec![(0, 3), (1, 13)]
        );
    }

    #[test]
    fn non_string_annotation_values_mean_no_annotations() {
        let (m, _) = parse(&CM.replace("\"true\"", "yes"));
        assert_eq!(m[0].annotations, None);
        let (m, _) = parse(&CM.replace("\"true\"", "null"));
        assert_eq!(
            m[0].annotation("include.release.openshift.io/self-managed-high-availability"),
            Some("")
        );
        let (m, _) = parse("apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations: {}\n");
        assert_eq!(m[0].annotations, Some(BTreeMap::new()));
    }

    #[test]
    fn missing_kind_or_name_uses_the_upstream_message() {
        let (_, e) = parse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  namespace: ns\n");
        assert_eq!(
            e[0].kind.to_string(),
            r#"Resource with fields Group: "apps" Kind: "Deployment" Namespace: "ns" Name: "" must contain kubernetes required fields kind and name"#
        );
        let (_, e) = parse("apiVersion: v1\nmetadata:\n  name: x\n");
        assert_eq!(
            e[0].kind.to_string(),
            r#"Resource with fields Group: "" Kind: "" Name: "x" must contain kubernetes required fields kind and name"#
        );
        assert_eq!(
            e[0].to_string(),
            r#"release-manifests/0000_10_a_file.yaml:1:1 (document 0): Resource with fields Group: "" Kind: "" Name: "x" must contain kubernetes required fields kind and name"#
        );
    }

    #[test]
    fn duplicate_ids_in_one_file_are_rejected() {
        let (m, e) = parse(&format!("{CM}---\n{CM}"));
        assert_eq!(m.len(), 1);
        assert_eq!(
            e[0].kind,
            ParseErrorKind::DuplicateResource {
                id: m[0].id.clone(),
                first_document: 0
            }
        );
        assert!(e[0].kind.to_string().starts_with(
            r#"duplicate resource: (Group: "" Kind: "ConfigMap" Namespace: "ns" Name: "a")"#
        ));
        assert_eq!(e[0].position.unwrap().line, 9);
    }

    #[test]
    fn syntax_errors_point_into_the_file_and_all_are_reported() {
        let (m, e) = parse(&format!(
            "{CM}---\nkind: [\n---\n- a\n---\n{}",
            CM.replace("name: a", "name: c")
        ));
        assert_eq!(m.len(), 2);
        assert_eq!(e.len(), 2);
        assert!(e[0].position.unwrap().line >= 9, "{:?}", e[0]);
        assert_eq!(e[0].document, Some(1));
        assert_eq!(e[1].kind, ParseErrorKind::NotAMapping("a sequence"));
        assert_eq!(e[1].document, Some(2));
        assert_eq!(m[1].index, 3);
    }

    #[test]
    fn capabilities_split_on_plus_untrimmed() {
        let with = |v: &str| {
            CM.replace(
                "  annotations:\n",
                &format!("  annotations:\n    capability.openshift.io/name: \"{v}\"\n"),
            )
        };
        let (m, _) = parse(&with("a+b"));
        assert_eq!(
            m[0].capabilities(),
            Some(vec![Capability::from("a"), Capability::from("b")])
        );
        let (m, _) = parse(&with("a+"));
        assert_eq!(
            m[0].capabilities(),
            Some(vec![Capability::from("a"), Capability::from("")])
        );
        let (m, _) = parse(&with(""));
        assert_eq!(m[0].capabilities(), None);
    }

    #[test]
    fn jobs_are_detected_by_exact_group_version_kind() {
        let (m, _) = parse("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n");
        assert!(m[0].is_job());
        let (m, _) = parse("apiVersion: batch/v1beta1\nkind: Job\nmetadata:\n  name: j\n");
        assert!(!m[0].is_job());
    }
}
