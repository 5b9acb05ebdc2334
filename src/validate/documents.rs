//! Reading every file into documents with the engine, turning each reading problem into a
//! finding, plus what the engine lets pass: repeated keys, a missing `apiVersion`, and the same
//! resource in two files.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rayon::prelude::*;

use super::metadata::{Metadata, check_template_tags};
use super::presence::Presence;
use super::{Code, Doc, Finding, files, locate, relative_path};
use crate::include::DEFAULT_CLUSTER_PROFILE;
use crate::manifest::{Manifest, ManifestDir, ManifestId, ParseError, ParseErrorKind, parse_file};
use crate::payload::{InputFile, Layout, PayloadInput, RenderConfig, template};
use crate::yaml;

/// Every document that could be read, and what could not.
pub(crate) struct Parsed {
    pub docs: Vec<Doc>,
    pub findings: Vec<Finding>,
    pub files: Vec<String>,
    pub sources: BTreeMap<String, Arc<String>>,
}

struct FileOutcome {
    path: String,
    docs: Vec<Doc>,
    findings: Vec<Finding>,
    text: Option<Arc<String>>,
}

/// Reads every file on all cores, `manifests/` (templated) first, like the CVO.
pub(crate) fn parse_all(input: &PayloadInput, meta: &Metadata, release_image: &str) -> Parsed {
    let render = RenderConfig {
        release_image: release_image.to_string(),
        cluster_profile: DEFAULT_CLUSTER_PROFILE.to_string(),
        images: meta.images.clone().unwrap_or_default(),
    };
    let images = meta.images.as_ref();
    let mut parsed = Parsed {
        docs: Vec::new(),
        findings: Vec::new(),
        files: Vec::new(),
        sources: BTreeMap::new(),
    };
    let dirs = [
        (ManifestDir::Manifests, &input.manifests),
        (ManifestDir::ReleaseManifests, &input.release_manifests),
    ];
    for (dir, files) in dirs {
        let outcomes: Vec<FileOutcome> = files
            .par_iter()
            .map(|f| parse_one(f, dir, input.layout, &render, images))
            .collect();
        for outcome in outcomes {
            parsed.files.push(outcome.path.clone());
            if let Some(text) = outcome.text {
                parsed.sources.insert(outcome.path, text);
            }
            parsed.docs.extend(outcome.docs);
            parsed.findings.extend(outcome.findings);
        }
    }
    parsed
}

/// One file: its name, its text (rendered for `manifests/`), its documents.
fn parse_one(
    file: &InputFile,
    dir: ManifestDir,
    layout: Layout,
    render: &RenderConfig,
    images: Option<&BTreeMap<String, String>>,
) -> FileOutcome {
    let path = relative_path(layout, dir, &file.name);
    let mut outcome = FileOutcome {
        docs: Vec::new(),
        findings: files::check_name(&file.name, &path).into_iter().collect(),
        text: None,
        path,
    };
    let text = match read_text(file, &outcome.path) {
        Ok(text) => text,
        Err(finding) => {
            outcome.findings.push(finding);
            return outcome;
        }
    };
    let text = if dir == ManifestDir::Manifests {
        outcome
            .findings
            .extend(check_template_tags(text, &outcome.path, images));
        match template::render(&file.name, text, render) {
            Ok(rendered) => rendered,
            Err(e) => {
                let finding = template_finding(&outcome.path, text, e);
                outcome.findings.push(finding);
                outcome.text = Some(Arc::new(text.to_string()));
                return outcome;
            }
        }
    } else {
        text.to_string()
    };
    read_documents(&mut outcome, &file.name, dir, Arc::new(text));
    outcome
}

/// The engine reads the documents; its errors, repeated keys and missing `apiVersion`s become
/// findings.
fn read_documents(outcome: &mut FileOutcome, name: &str, dir: ManifestDir, text: Arc<String>) {
    let path: Arc<str> = Arc::from(outcome.path.as_str());
    let (manifests, errors) = parse_file(name, dir, text.clone());
    outcome.findings.extend(duplicate_keys(&manifests, &path));
    let findings = errors.iter().map(|e| parse_finding(e, &path, &text));
    outcome.findings.extend(findings);
    for manifest in manifests {
        outcome
            .findings
            .extend(missing_api_version(&manifest, &path));
        outcome.docs.push(Doc {
            manifest,
            path: path.clone(),
        });
    }
    outcome.text = Some(text);
}

/// The file as text, or a finding saying why not (positioned on the first bad byte).
fn read_text<'f>(file: &'f InputFile, path: &str) -> Result<&'f str, Finding> {
    let unreadable = |message: String| {
        Finding::new(Code::UnreadableFile, path, message).help(
            "check the file's permissions and save it as UTF-8, or remove it from the payload",
        )
    };
    let bytes = file
        .contents
        .as_ref()
        .map_err(|e| unreadable(format!("cannot read file: {e}")))?;
    std::str::from_utf8(bytes).map_err(|e| {
        let good = &bytes[..e.valid_up_to()];
        // The valid prefix is UTF-8 by definition.
        let (line, column) =
            locate::line_column(std::str::from_utf8(good).unwrap_or(""), good.len());
        unreadable(ParseErrorKind::NotUtf8(e.valid_up_to()).to_string()).at(line, column)
    })
}

/// Upstream `render` fails on such a template and the installer with it; at load the CVO
/// skips the file ("may require newer CVO"), so the document is never applied.
fn template_finding(path: &str, text: &str, error: String) -> Finding {
    let line = error
        .strip_prefix("template: ")
        .and_then(|rest| rest.split(':').nth(1))
        .and_then(|line| line.trim().parse::<usize>().ok());
    let finding = Finding::new(
        Code::Template,
        path,
        format!("template rendering failed: {error}"),
    )
    .help(ParseErrorKind::Template(String::new()).help());
    match line {
        Some(line) => {
            // Go names the line only: point at its first action.
            let column = text
                .lines()
                .nth(line.saturating_sub(1))
                .and_then(|l| l.find("{{").map(|i| l[..i].chars().count() + 1))
                .unwrap_or(1);
            finding.at(line, column)
        }
        None => finding,
    }
}

/// A reading problem of the engine, with its upstream message and help.
fn parse_finding(error: &ParseError, path: &str, text: &str) -> Finding {
    let code = match &error.kind {
        ParseErrorKind::Unreadable(_) | ParseErrorKind::NotUtf8(_) => Code::UnreadableFile,
        ParseErrorKind::Syntax(_) => Code::YamlSyntax,
        ParseErrorKind::NotAMapping(_) => Code::NotAMapping,
        ParseErrorKind::FieldNotString { .. } => Code::FieldType,
        ParseErrorKind::MissingRequiredFields(_) => Code::MissingField,
        ParseErrorKind::DuplicateResource { .. } => Code::DuplicateResource,
        ParseErrorKind::Template(_) => Code::Template,
        ParseErrorKind::ReleaseMetadata(_) => Code::ReleaseMetadata,
        ParseErrorKind::ImageReferences(_) => Code::ImageReferences,
        ParseErrorKind::NoManifests => Code::NoManifests,
    };
    let finding = Finding::new(code, path, error.kind.to_string()).help(error.help());
    let position = match (&error.kind, error.position) {
        (ParseErrorKind::FieldNotString { field, .. }, Some(p)) => {
            field_position(text, p.line, field).unwrap_or((p.line, p.column))
        }
        (_, Some(p)) => (p.line, p.column),
        (_, None) => return finding,
    };
    finding.at(position.0, position.1)
}

/// The top-level `field:` of the document that starts at `start_line`.
fn field_position(text: &str, start_line: usize, field: &str) -> Option<(usize, usize)> {
    let start = text
        .split_inclusive('\n')
        .take(start_line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    let offset = start + locate::find_key(&text[start..], field)?;
    Some(locate::line_column(text, offset))
}

/// Repeated keys of the documents where reading noticed some; positions made relative to the
/// file. (A document that does not read at all gets its syntax error instead.)
fn duplicate_keys(manifests: &[Manifest], path: &str) -> Vec<Finding> {
    manifests
        .iter()
        .filter(|m| m.repeated_keys)
        .flat_map(|m| {
            yaml::duplicate_keys(m.original_text())
                .into_iter()
                .map(move |d| duplicate_key_finding(&d, m.line, path))
        })
        .collect()
}

fn duplicate_key_finding(d: &yaml::DuplicateKey, first_line: usize, path: &str) -> Finding {
    let shift = |line: usize| line + first_line - 1;
    let place = if d.path.is_empty() {
        "the document".to_string()
    } else {
        d.path.clone()
    };
    let key = crate::manifest::go_quote(&d.key);
    let first = shift(d.first.line);
    let finding = if d.same_value {
        Finding::new(
            Code::RedundantKey,
            path,
            format!("key {key} appears twice in {place} with the same value (first at line {first})"),
        )
        .help("remove the repeat: nothing is lost, but yamllint and strict decoders reject the document")
    } else {
        Finding::new(
            Code::DuplicateKey,
            path,
            format!("key {key} appears twice in {place} (first at line {first}): the CVO silently keeps this one and drops the first"),
        )
        .help("remove one of the two, or merge their values")
    };
    finding.at(shift(d.position.line), d.position.column)
}

/// `oc adm release new` rejects a manifest without `apiVersion`; the CVO's engine does not look.
fn missing_api_version(manifest: &crate::manifest::Manifest, path: &str) -> Option<Finding> {
    if !manifest.gvk.version.is_empty() || !manifest.gvk.group.is_empty() {
        return None;
    }
    let (line, column) = locate::document_start(manifest);
    Some(
        Finding::new(
            Code::MissingField,
            path,
            "manifests must contain Kubernetes API objects with 'kind' and 'apiVersion' set",
        )
        .at(line, column)
        .help("set `apiVersion` (e.g. `v1`, `apps/v1`) in this document"),
    )
}

/// The same resource in two files that one cluster applies together: the CVO (unlike its
/// `render`) does not notice, and applies both, each overwriting the other on every sync.
pub(crate) fn cross_file_duplicates(docs: &[Doc], presence: &Presence) -> Vec<Finding> {
    let mut by_id: HashMap<&ManifestId, Vec<usize>> = HashMap::new();
    for (i, doc) in docs.iter().enumerate() {
        by_id.entry(&doc.manifest.id).or_default().push(i);
    }
    let mut findings = Vec::new();
    for indices in by_id.values().filter(|v| v.len() > 1) {
        for (n, &later) in indices.iter().enumerate() {
            let clash = indices[..n].iter().find_map(|&earlier| {
                let together = presence.together(earlier, later);
                presence.first(together).map(|config| (earlier, config))
            });
            if let Some((earlier, config)) = clash {
                findings.push(cross_file_finding(
                    &docs[earlier],
                    &docs[later],
                    &config.describe(),
                ));
            }
        }
    }
    findings
}

fn cross_file_finding(first: &Doc, second: &Doc, config: &str) -> Finding {
    let (line, column) = locate::document_start(&second.manifest);
    Finding::new(
        Code::DuplicateResource,
        &*second.path,
        format!(
            "duplicate resource: ({}) is also defined in {}:{}, and a cluster with {config} applies both",
            second.manifest.id, first.path, first.manifest.line
        ),
    )
    .at(line, column)
    .help("the two overwrite each other on every sync: remove one, or make them exclusive with different profiles, feature sets or feature gates")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::payload::Layout;
    use crate::validate::presence::Scope;

    pub(crate) fn input_of(files: &[(&str, &str)]) -> PayloadInput {
        PayloadInput {
            origin: "test".into(),
            layout: Layout::PayloadRoot,
            manifests: vec![],
            release_manifests: files
                .iter()
                .map(|(name, text)| InputFile {
                    name: name.to_string(),
                    contents: Ok(text.as_bytes().to_vec()),
                })
                .collect(),
            release_metadata: None,
            image_references: None,
        }
    }

    fn no_metadata() -> Metadata {
        Metadata {
            release: None,
            images: None,
            findings: vec![],
        }
    }

    pub(crate) fn parsed(files: &[(&str, &str)]) -> Parsed {
        parse_all(&input_of(files), &no_metadata(), "quay.io/r:1")
    }

    /// The documents of some `release-manifests/` files, for the other checks' tests.
    pub(crate) fn docs_of(files: &[(&str, &str)]) -> Vec<Doc> {
        let parsed = parsed(files);
        assert!(
            parsed.findings.iter().all(|f| f.code == Code::FileName),
            "{:?}",
            parsed.findings
        );
        parsed.docs
    }

    fn found(files: &[(&str, &str)]) -> Vec<(Code, Option<usize>, Option<usize>, String)> {
        parsed(files)
            .findings
            .into_iter()
            .map(|f| (f.code, f.line, f.column, f.message))
            .collect()
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    #[test]
    fn a_good_file_has_no_findings() {
        assert!(found(&[("0000_10_a_x.yaml", CM)]).is_empty());
    }

    #[test]
    fn engine_errors_keep_their_upstream_message_and_position() {
        let text = format!(
            "{CM}---\nkind: [\n---\n- a\n---\napiVersion: v1\nkind: A\nmetadata: {{}}\n---\n{CM}"
        );
        let got = found(&[("0000_10_a_x.yaml", &text)]);
        let codes: Vec<Code> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            codes,
            vec![
                Code::YamlSyntax,
                Code::NotAMapping,
                Code::MissingField,
                Code::DuplicateResource
            ]
        );
        assert_eq!(got[1].1, Some(11));
        assert_eq!(
            got[2].3,
            r#"Resource with fields Group: "" Kind: "A" Name: "" must contain kubernetes required fields kind and name"#
        );
        assert_eq!((got[3].1, got[3].2), (Some(17), Some(1)));
    }

    #[test]
    fn unreadable_and_non_utf8_files() {
        let mut input = input_of(&[]);
        input.release_manifests = vec![
            InputFile {
                name: "0000_10_a_x.yaml".into(),
                contents: Err("permission denied".into()),
            },
            InputFile {
                name: "0000_10_a_y.yaml".into(),
                contents: Ok(vec![b'a', 0xff]),
            },
        ];
        let parsed = parse_all(&input, &no_metadata(), "r");
        let messages: Vec<(Code, &str)> = parsed
            .findings
            .iter()
            .map(|f| (f.code, f.message.as_str()))
            .collect();
        assert_eq!(
            messages,
            vec![
                (Code::UnreadableFile, "cannot read file: permission denied"),
                (Code::UnreadableFile, "file is not valid UTF-8 (byte 1)")
            ]
        );
        assert_eq!(parsed.findings[0].line, None);
        assert_eq!(
            (parsed.findings[1].line, parsed.findings[1].column),
            (Some(1), Some(2))
        );
    }

    #[test]
    fn duplicate_keys_point_into_the_file() {
        let text = format!(
            "{CM}---\n{}",
            CM.replace("name: a\n", "name: b\n  name: c\n")
        );
        let got = found(&[("0000_10_a_x.yaml", &text)]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, Code::DuplicateKey);
        assert_eq!((got[0].1, got[0].2), (Some(13), Some(3)));
        assert_eq!(
            got[0].3,
            r#"key "name" appears twice in metadata (first at line 12): the CVO silently keeps this one and drops the first"#
        );
    }

    #[test]
    fn a_key_repeated_with_the_same_value_is_only_redundant() {
        let text = CM.replace("name: a\n", "name: a\n  name: a\n");
        let got = found(&[("0000_10_a_x.yaml", &text)]);
        assert_eq!(
            got,
            vec![(
                Code::RedundantKey,
                Some(5),
                Some(3),
                r#"key "name" appears twice in metadata with the same value (first at line 4)"#
                    .into()
            )]
        );
    }

    #[test]
    fn missing_api_version() {
        let got = found(&[("0000_10_a_x.yaml", &CM.replace("apiVersion: v1\n", ""))]);
        assert_eq!(
            got,
            vec![(
                Code::MissingField,
                Some(1),
                Some(1),
                "manifests must contain Kubernetes API objects with 'kind' and 'apiVersion' set"
                    .into()
            )]
        );
    }

    #[test]
    fn templates_of_manifests_dir() {
        let mut input = input_of(&[]);
        input.manifests = vec![
            InputFile {
                name: "0000_00_cvo_x.yaml".into(),
                contents: Ok(CM
                    .replace("name: a", "name: '{{.ReleaseImage}}'")
                    .into_bytes()),
            },
            InputFile {
                name: "0000_00_cvo_y.yaml".into(),
                contents: Ok(format!("{CM}data:\n  x: '{{{{.Nope}}}}'\n").into_bytes()),
            },
        ];
        let parsed = parse_all(&input, &no_metadata(), "quay.io/r:1");
        assert_eq!(parsed.docs[0].manifest.id.name, "quay.io/r:1");
        assert_eq!(parsed.findings.len(), 1);
        assert_eq!(parsed.findings[0].code, Code::Template);
        assert_eq!(
            (parsed.findings[0].line, parsed.findings[0].column),
            (Some(9), Some(7))
        );
        assert_eq!(
            parsed.files,
            vec![
                "manifests/0000_00_cvo_x.yaml",
                "manifests/0000_00_cvo_y.yaml"
            ]
        );
    }

    #[test]
    fn the_same_resource_in_two_files_only_when_a_cluster_applies_both() {
        let tech = CM.replace(
            "  annotations:\n",
            "  annotations:\n    release.openshift.io/feature-set: TechPreviewNoUpgrade\n",
        );
        let default = CM.replace(
            "  annotations:\n",
            "  annotations:\n    release.openshift.io/feature-set: Default\n",
        );
        let docs = docs_of(&[
            ("0000_10_a_1.yaml", &tech),
            ("0000_10_a_2.yaml", &default),
            ("0000_10_a_3.yaml", CM),
        ]);
        let presence = Presence::compute(&docs, &Scope::all(), None);
        let found = cross_file_duplicates(&docs, &presence);
        // 1 and 2 never meet; 3 meets both and is reported once, against the first.
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].file, "release-manifests/0000_10_a_3.yaml");
        assert_eq!(
            found[0].message,
            r#"duplicate resource: (Group: "" Kind: "ConfigMap" Namespace: "ns" Name: "a") is also defined in release-manifests/0000_10_a_1.yaml:1, and a cluster with profile self-managed-high-availability, feature set TechPreviewNoUpgrade applies both"#
        );
    }
}
