//! A release payload: its manifests in load order, its release metadata and image references.
//!
//! [`source`] reads the files (a directory, or the payload bundled into the binary) into a
//! [`PayloadInput`]; [`Payload::from_input`] turns that into manifests with no further I/O,
//! parsing files on all cores. Inclusion is not applied at load: [`Payload::evaluate`] gives
//! every document's verdict, so `explain` can show why a document is left out.

pub mod metadata;
pub mod source;
pub mod template;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

pub use metadata::{Release, parse_image_references, parse_release_metadata};
pub use source::{PayloadSource, bundled_input, read_directory, read_image, read_input};
pub use template::RenderConfig;

use crate::capability::Registry;
use crate::include::{Exclusion, InclusionConfig, include};
use crate::manifest::{Manifest, ManifestDir, ParseError, ParseErrorKind, parse_file};

pub const RELEASE_METADATA: &str = "release-metadata";
pub const IMAGE_REFERENCES: &str = "image-references";

/// How the payload directory was laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// `manifests/` and `release-manifests/` under a payload root.
    PayloadRoot,
    /// A plain directory of manifests, read as `release-manifests/` with no metadata.
    PlainDirectory,
}

/// One file as read by a source: its name and bytes, or why it could not be read.
#[derive(Debug, Clone)]
pub struct InputFile {
    pub name: String,
    pub contents: Result<Vec<u8>, String>,
}

/// Everything a payload consists of, read but not parsed.
#[derive(Debug, Clone)]
pub struct PayloadInput {
    /// How to name the payload in messages (a path, or `bundled:4.18.0`).
    pub origin: String,
    pub layout: Layout,
    /// `manifests/` files, byte-sorted, manifest extensions only.
    pub manifests: Vec<InputFile>,
    /// `release-manifests/` files, byte-sorted, manifest extensions only.
    pub release_manifests: Vec<InputFile>,
    pub release_metadata: Option<InputFile>,
    pub image_references: Option<InputFile>,
}

/// What `manifests/` templates are rendered with, and how a template failure is treated.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `{{.ReleaseImage}}`; default: [`default_release_image`] of the payload's version.
    pub release_image: Option<String>,
    pub cluster_profile: String,
    /// Upstream load skips a file whose template fails (with a warning); render fails.
    pub strict_templates: bool,
}

/// A loaded payload. Never partially loaded: any problem makes loading fail as a whole.
#[derive(Debug, Clone)]
pub struct Payload {
    pub origin: String,
    pub layout: Layout,
    pub release: Option<Release>,
    pub images: BTreeMap<String, String>,
    /// What `{{.ReleaseImage}}` was rendered as.
    pub release_image: String,
    /// Every document, `manifests/` first, then `release-manifests/`, each in file order.
    pub manifests: Vec<Manifest>,
    /// Things the CVO would only log: skipped templates, odd metadata, missing metadata files.
    pub warnings: Vec<String>,
    /// When the release was made: image-references' `metadata.creationTimestamp` (seconds since
    /// the epoch; upstream's `releaseCreated`, the value of `cluster_version{type="current"}`).
    pub created: Option<i64>,
}

/// All the problems that make a payload unusable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {} problem{} loading the payload:\n{}", problems.len(), if problems.len() == 1 { "" } else { "s" }, list(problems))]
pub struct LoadError {
    pub origin: String,
    pub problems: Vec<ParseError>,
}

fn list(problems: &[ParseError]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A document and whether it is included.
pub type Verdict<'a> = (&'a Manifest, Result<(), Exclusion>);

impl Payload {
    /// Parses a payload's files. All problems are collected before giving up.
    pub fn from_input(input: PayloadInput, options: &LoadOptions) -> Result<Payload, LoadError> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let release = input.release_metadata.as_ref().and_then(|file| {
            let path = format!("release-manifests/{}", file.name);
            match file
                .contents
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|b| parse_release_metadata(b))
            {
                Ok((release, w)) => {
                    warnings.extend(w.into_iter().map(|w| format!("{path}: {w}")));
                    Some(release)
                }
                Err(e) => {
                    problems.push(file_problem(path, ParseErrorKind::ReleaseMetadata(e)));
                    None
                }
            }
        });
        let created = (input.image_references.as_ref())
            .and_then(|file| file.contents.as_ref().ok())
            .and_then(|bytes| metadata::image_references_created(bytes));
        let images = input
            .image_references
            .as_ref()
            .map_or_else(BTreeMap::new, |file| {
                let path = format!("release-manifests/{}", file.name);
                let version = release.as_ref().map(|r| r.version.as_str());
                match file
                    .contents
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|b| parse_image_references(b, version))
                {
                    Ok(images) => images,
                    Err(e) => {
                        problems.push(file_problem(path, ParseErrorKind::ImageReferences(e)));
                        BTreeMap::new()
                    }
                }
            });
        warnings.extend(missing_metadata_warnings(&input));
        if input.manifests.is_empty() && input.release_manifests.is_empty() {
            problems.push(file_problem(
                "release-manifests".to_string(),
                ParseErrorKind::NoManifests,
            ));
        }
        let release_image = options
            .release_image
            .clone()
            .unwrap_or_else(|| default_release_image(release.as_ref()));
        let render = RenderConfig {
            release_image: release_image.clone(),
            cluster_profile: options.cluster_profile.clone(),
            images: images.clone(),
        };
        let mut manifests = Vec::new();
        let origin = input.origin;
        let dirs = [
            (ManifestDir::Manifests, input.manifests),
            (ManifestDir::ReleaseManifests, input.release_manifests),
        ];
        for (dir, files) in dirs {
            let parsed: Vec<FileOutcome> = files
                .into_par_iter()
                .map(|f| load_file(f, dir, &render, options.strict_templates))
                .collect();
            for outcome in parsed {
                manifests.extend(outcome.manifests);
                problems.extend(outcome.problems);
                warnings.extend(outcome.warning);
            }
        }
        if !problems.is_empty() {
            return Err(LoadError { origin, problems });
        }
        Ok(Payload {
            origin,
            layout: input.layout,
            release,
            images,
            release_image,
            manifests,
            warnings,
            created,
        })
    }

    pub fn version(&self) -> Option<&str> {
        self.release.as_ref().map(|r| r.version.as_str())
    }

    /// The capabilities a cluster running this payload knows: openshift/api's, and those the
    /// payload declares in its release-metadata.
    pub fn registry(&self) -> Registry {
        let declared = self.release.as_ref().map(|r| r.capabilities.as_slice());
        Registry::standard().with_declared(declared.unwrap_or_default())
    }

    /// The release's major version: the default of the major-version filter.
    pub fn major_version(&self) -> Option<u64> {
        self.release.as_ref().map(Release::major)
    }

    /// The cluster profiles the payload's documents name (`include.release.openshift.io/<p>`),
    /// sorted.
    pub fn annotated_profiles(&self) -> BTreeSet<String> {
        self.manifests
            .iter()
            .filter_map(|m| m.annotations.as_ref())
            .flat_map(|a| a.keys())
            .filter_map(|k| k.strip_prefix(crate::include::PROFILE_ANNOTATION_PREFIX))
            .map(str::to_string)
            .collect()
    }

    /// Every document with its verdict under `config`, in load order.
    pub fn evaluate<'a>(&'a self, config: &InclusionConfig) -> Vec<Verdict<'a>> {
        self.manifests
            .iter()
            .map(|m| (m, include(m, config)))
            .collect()
    }

    /// The feature gates a cluster of this payload has enabled, as `oc adm release extract
    /// --included --install-config` works them out offline (spec §9): the union of
    /// `status.featureGates[].enabled[].name` of the payload's FeatureGate manifests that are
    /// meant for the config operator under `profile`, for `feature_set` (`""` is `Default`),
    /// and for the payload's major version. `None` without release metadata: oc then applies no
    /// feature-gate filter at all.
    pub fn feature_gates_for(&self, feature_set: &str, profile: &str) -> Option<BTreeSet<String>> {
        let feature_set = if feature_set.is_empty() {
            "Default"
        } else {
            feature_set
        };
        let major = Some(self.major_version()?.to_string());
        let profile_key = format!("{}{profile}", crate::include::PROFILE_ANNOTATION_PREFIX);
        let for_this_cluster = |m: &Manifest| {
            let major_ok = match (
                m.annotation(crate::include::MAJOR_VERSION_ANNOTATION),
                &major,
            ) {
                (None, _) => true,
                (Some(list), Some(major)) => list.split(',').any(|v| v.trim() == major),
                (Some(_), None) => false,
            };
            m.gvk.is("config.openshift.io", "FeatureGate")
                && m.gvk.version == "v1"
                && major_ok
                && m.annotation(&profile_key) == Some("false-except-for-the-config-operator")
                && m.annotation(crate::include::FEATURE_SET_ANNOTATION) == Some(feature_set)
        };
        let gates = self
            .manifests
            .iter()
            .filter(|m| for_this_cluster(m))
            .flat_map(|m| enabled_gate_names(&m.object()))
            .collect();
        Some(gates)
    }

    /// The documents `config` includes, in load order.
    pub fn included<'a>(&'a self, config: &InclusionConfig) -> Vec<&'a Manifest> {
        self.manifests
            .iter()
            .filter(|m| include(m, config).is_ok())
            .collect()
    }
}

/// The conventional release pullspec of a version, for when none is given.
pub fn default_release_image(release: Option<&Release>) -> String {
    let tag = release.map_or("unknown", |r| r.version.as_str());
    format!("quay.io/openshift-release-dev/ocp-release:{tag}")
}

fn enabled_gate_names(feature_gate: &serde_json::Value) -> Vec<String> {
    let entries = feature_gate
        .pointer("/status/featureGates")
        .and_then(serde_json::Value::as_array);
    entries
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("enabled")?.as_array())
        .flatten()
        .filter_map(|gate| Some(gate.get("name")?.as_str()?.to_string()))
        .collect()
}

fn file_problem(path: String, kind: ParseErrorKind) -> ParseError {
    ParseError {
        path,
        document: None,
        position: None,
        kind,
    }
}

fn missing_metadata_warnings(input: &PayloadInput) -> Vec<String> {
    if input.layout == Layout::PlainDirectory {
        return vec!["plain directory of manifests: read as release-manifests/ with no release-metadata or image-references".to_string()];
    }
    let mut warnings = Vec::new();
    if input.release_metadata.is_none() {
        warnings.push("release-manifests/release-metadata is missing: the release version is unknown and the major-version filter is off".to_string());
    }
    if input.image_references.is_none() {
        warnings.push(
            "release-manifests/image-references is missing: templates see no images".to_string(),
        );
    }
    warnings
}

struct FileOutcome {
    manifests: Vec<Manifest>,
    problems: Vec<ParseError>,
    warning: Option<String>,
}

fn load_file(
    file: InputFile,
    dir: ManifestDir,
    render: &RenderConfig,
    strict_templates: bool,
) -> FileOutcome {
    let path = format!("{dir}/{}", file.name);
    let fail = |kind| FileOutcome {
        manifests: vec![],
        problems: vec![file_problem(path.clone(), kind)],
        warning: None,
    };
    let bytes = match file.contents {
        Ok(bytes) => bytes,
        Err(e) => return fail(ParseErrorKind::Unreadable(e)),
    };
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => return fail(ParseErrorKind::NotUtf8(e.utf8_error().valid_up_to())),
    };
    let text = if dir == ManifestDir::Manifests {
        match template::render(&file.name, &text, render) {
            Ok(rendered) => rendered,
            Err(e) if strict_templates => return fail(ParseErrorKind::Template(e)),
            Err(e) => {
                return FileOutcome {
                    manifests: vec![],
                    problems: vec![],
                    warning: Some(format!(
                        "Skipping manifest {}: template rendering failed (may require newer CVO): {e}",
                        file.name
                    )),
                };
            }
        }
    } else {
        text
    };
    let (manifests, problems) = parse_file(&file.name, dir, Arc::new(text));
    FileOutcome {
        manifests,
        problems,
        warning: None,
    }
}

/// Whether a file name is one the CVO reads: `.yaml`, `.yml`, `.json` (case-sensitive).
pub fn is_manifest_file_name(name: &str) -> bool {
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// A payload of `version` whose release-manifests are `files` (name, text): for tests of what
/// is computed over payloads (plans, preflights).
#[cfg(test)]
pub(crate) fn of_release_manifests(version: &str, files: &[(&str, String)]) -> Payload {
    let file = |name: &str, text: String| InputFile {
        name: name.into(),
        contents: Ok(text.into_bytes()),
    };
    let input = PayloadInput {
        origin: version.into(),
        layout: Layout::PayloadRoot,
        manifests: vec![],
        release_manifests: files.iter().map(|(n, t)| file(n, t.clone())).collect(),
        release_metadata: Some(file(
            "release-metadata",
            format!(r#"{{"kind":"cincinnati-metadata-v0","version":"{version}"}}"#),
        )),
        image_references: None,
    };
    Payload::from_input(input, &LoadOptions::default()).expect("a valid test payload")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> InputFile {
        InputFile {
            name: name.into(),
            contents: Ok(text.as_bytes().to_vec()),
        }
    }

    fn input(manifests: Vec<InputFile>, release: Vec<InputFile>) -> PayloadInput {
        PayloadInput {
            origin: "test".into(),
            layout: Layout::PayloadRoot,
            manifests,
            release_manifests: release,
            release_metadata: Some(file(
                "release-metadata",
                r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#,
            )),
            image_references: Some(file(
                "image-references",
                r#"{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"4.18.0"},"spec":{"tags":[{"name":"cvo","from":{"kind":"DockerImage","name":"quay.io/cvo@sha256:1"}}]}}"#,
            )),
        }
    }

    const DOC: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    fn doc(name: &str) -> String {
        DOC.replace("NAME", name)
    }

    #[test]
    fn manifests_dir_comes_first_and_is_templated() {
        let cvo = doc("cvo")
            + "data:\n  image: '{{.ReleaseImage}}'\n  cvo: '{{index .Images \"cvo\"}}'\n";
        let payload = Payload::from_input(
            input(
                vec![file("0000_90_cvo.yaml", &cvo)],
                vec![file("0000_03_a.yaml", &doc("a"))],
            ),
            &LoadOptions {
                release_image: Some("quay.io/r:1".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let names: Vec<&str> = payload
            .manifests
            .iter()
            .map(|m| m.id.name.as_str())
            .collect();
        assert_eq!(names, vec!["cvo", "a"]);
        let data = payload.manifests[0].object()["data"].clone();
        assert_eq!(
            data,
            serde_json::json!({"image": "quay.io/r:1", "cvo": "quay.io/cvo@sha256:1"})
        );
        assert_eq!(payload.major_version(), Some(4));
    }

    #[test]
    fn a_failing_template_skips_the_file_at_load_and_fails_render() {
        let bad = file(
            "0000_90_bad.yaml",
            &(doc("bad") + "data:\n  x: '{{index .FutureField \"k\"}}'\n"),
        );
        let payload =
            Payload::from_input(input(vec![bad.clone()], vec![]), &LoadOptions::default()).unwrap();
        assert!(payload.manifests.is_empty());
        assert!(payload.warnings[0].starts_with("Skipping manifest 0000_90_bad.yaml: template rendering failed (may require newer CVO): "));
        let strict = LoadOptions {
            strict_templates: true,
            ..Default::default()
        };
        let err = Payload::from_input(input(vec![bad], vec![]), &strict).unwrap_err();
        assert!(matches!(err.problems[0].kind, ParseErrorKind::Template(_)));
    }

    #[test]
    fn every_problem_is_reported_and_nothing_is_half_loaded() {
        let mut inp = input(
            vec![],
            vec![
                file("0000_10_a.yaml", "kind: [\n"),
                file("0000_20_b.yaml", &doc("b")),
                file("0000_30_c.yaml", "a: b\n"),
            ],
        );
        inp.release_manifests.push(InputFile {
            name: "0000_40_d.yaml".into(),
            contents: Err("permission denied".into()),
        });
        inp.image_references = Some(file(
            "image-references",
            r#"{"apiVersion":"image.openshift.io/v1","kind":"ImageStream","metadata":{"name":"4.17.0"}}"#,
        ));
        let err = Payload::from_input(inp, &LoadOptions::default()).unwrap_err();
        let paths: Vec<&str> = err.problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "release-manifests/image-references",
                "release-manifests/0000_10_a.yaml",
                "release-manifests/0000_30_c.yaml",
                "release-manifests/0000_40_d.yaml"
            ]
        );
        assert!(err.to_string().contains("4 problems"));
    }

    #[test]
    fn bad_release_metadata_is_a_problem() {
        let mut inp = input(vec![], vec![]);
        inp.release_metadata = Some(file(
            "release-metadata",
            r#"{"kind":"cincinnati-metadata-v1","version":"4.18.0"}"#,
        ));
        let err = Payload::from_input(inp, &LoadOptions::default()).unwrap_err();
        assert_eq!(
            err.problems[0].to_string(),
            r#"release-manifests/release-metadata: unrecognized Cincinnati metadata kind "cincinnati-metadata-v1""#
        );
    }

    #[test]
    fn a_payload_without_manifest_files_is_a_problem() {
        let mut inp = input(vec![], vec![]);
        inp.release_metadata = Some(file(
            "release-metadata",
            r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#,
        ));
        let err = Payload::from_input(inp, &LoadOptions::default()).unwrap_err();
        assert_eq!(
            err.problems[0].to_string(),
            "release-manifests: no manifest file (*.yaml, *.yml or *.json) in manifests/ or release-manifests/: the CVO would apply nothing"
        );
    }

    #[test]
    fn manifest_file_names() {
        assert!(is_manifest_file_name("0000_10_a.yaml"));
        assert!(is_manifest_file_name("a.json"));
        assert!(!is_manifest_file_name("0000_10_a_file"));
        assert!(!is_manifest_file_name("a.YAML"));
        assert!(!is_manifest_file_name("image-references"));
    }
}
