//! Payload validation for CI (`cvo validate`): every problem of every file and document at
//! once, each with a stable code, a severity, a position, a message and, where one exists, the
//! fix.
//!
//! Pure core: it works on a [`ValidateInput`] (file names and bytes, plus the raw directory
//! listing) and never touches the file system, so every check is unit-testable. The engine does
//! the reading: [`crate::manifest::parse_file`] for documents, [`crate::include::include`] for
//! inclusion, [`crate::capability::Registry`] for capability names; messages that upstream has
//! are upstream's, word for word.
//!
//! Severity: an **error** is something the CVO (or `oc adm release new`, or the installer's
//! `render`) rejects, or that makes a document never apply or an update fail; a **warning** is a
//! risk a human should look at (naming, partial capabilities, leftovers, names upstream itself
//! tolerates). `cvo validate` fails on errors, and on warnings with `--deny-warnings`.
//!
//! # Codes
//!
//! | code | severity | what it checks |
//! | --- | --- | --- |
//! | `no-manifests` | error | a payload root with no manifest file in `manifests/` or `release-manifests/`: the CVO would apply nothing |
//! | `unreadable-file` | error | a manifest file cannot be read or is not UTF-8 |
//! | `ignored-file` | warning | a file the CVO never reads: not `.yaml`/`.yml`/`.json` (case-sensitive) in a manifest directory, or a manifest file at a payload root |
//! | `ignored-directory` | warning | a subdirectory of a manifest directory: the CVO does not recurse |
//! | `file-name` | warning | a name that is not `0000_<runlevel>_<component>_<name>.<ext>`: the task graph makes it a serial barrier |
//! | `template` | error | a `manifests/` template the CVO cannot render (upstream `render` fails, load skips the file) |
//! | `yaml-syntax` | error | YAML or JSON syntax, an invalid document separator |
//! | `not-a-mapping` | error | a document that is a list or a scalar |
//! | `field-type` | error | `apiVersion` or `kind` that is not a string |
//! | `missing-field` | error | no `kind` or `metadata.name` (upstream message), or no `apiVersion` (`oc adm release new` message) |
//! | `duplicate-key` | error | a key repeated in one mapping with another value: the first value is silently lost |
//! | `redundant-key` | warning | a key repeated in one mapping with the same value: nothing is lost, but strict YAML tools reject it |
//! | `duplicate-resource` | error | one resource twice in a file (the CVO rejects the file), or in two files that some cluster includes together (upstream does not notice) |
//! | `annotations-not-strings` | error | an annotation value that is not a string: the CVO then sees no annotations at all and never applies the document |
//! | `misspelled-capability` | error | a capability name this CVO does not know that is a near miss of one it knows (`Consle`, `console`): the document is excluded on every cluster |
//! | `unknown-capability` | warning | a capability name this CVO does not know and that is near none it knows: fine while openshift/api learns it |
//! | `empty-capability` | error | an empty `+`-separated part of `capability.openshift.io/name`: a name no capability can have |
//! | `feature-set-and-gate` | error | both `release.openshift.io/feature-set` and `release.openshift.io/feature-gate` |
//! | `unknown-feature-set` | error | a feature-set value that is not a known feature set |
//! | `profile-value` | warning | `include.release.openshift.io/<profile>` not `"true"` (except the FeatureGate marker `false-except-for-the-config-operator`) |
//! | `unknown-profile` | warning | `include.release.openshift.io/<profile>` for a profile no cluster runs |
//! | `no-profile` | warning | a document no known profile includes: no CVO ever applies it |
//! | `delete-value` | error | `release.openshift.io/delete` other than `"true"` (an apply error upstream) |
//! | `major-version-kind` | error | `release.openshift.io/major-version` on a kind that is not a FeatureGate or CRD |
//! | `major-version-invalid` | error | a major version that is not a number |
//! | `major-version-overlap` | error | a major version both included and excluded |
//! | `partial-capability` | warning | a component that is mostly capability C ships a document without it: it stays when C is disabled |
//! | `namespace-capability` | warning | every object in a namespace carries capability C but the Namespace does not: an empty namespace is left behind |
//! | `capability-reference` | warning | an object that needs something of capability C without carrying C: a namespaced object in a C-only namespace, a binding to a C-only role |
//! | `release-metadata` | error | `release-metadata` kind, version, JSON (upstream messages) |
//! | `release-metadata-value` | warning | `release-metadata` values upstream only logs (architecture, channels) |
//! | `capability-declaration` | error | a capability the payload declares (release-metadata `capabilities.cvo.openshift.io/declared`) that is malformed, already an openshift/api one, declared twice or undescribed |
//! | `capability-baseline` | warning | a capability the payload declares is in a baseline set and its documents run a workload: every cluster on that baseline gets it, on install and on its next update, without asking |
//! | `missing-metadata` | warning | a payload root without `release-metadata` or `image-references` (`oc adm release new` writes them) |
//! | `image-references` | error | `image-references` not a v1 ImageStream, or named other than the release version |
//! | `missing-image-tag` | error | a `{{index .Images "tag"}}` whose tag the ImageStream lacks: it renders as an empty image |
//! | `missing-image` | warning | a container image that is not in the ImageStream (nor the release image): not mirrored, not pinned |
//! | `cluster-operator-versions` | error | a ClusterOperator without `status.versions`: the CVO fails the update |
//! | `foreign-crd` | warning | a CRD of another operator's API group (hive's, assisted-service's, ...) that does not say it stands in for that operator's (`crds.cvo.openshift.io/stand-in-for`), or names another operator: where that operator runs, the CVO leaves its CRD alone and never applies this one |
//! | `preflight-check` | error | a ConfigMap annotated `release.openshift.io/preflight-check: "true"` that is not a valid preflight check (an unknown or missing data key, a risk name that is not CamelCase, both tests or none, a malformed `objects`) |

mod annotations;
mod capabilities;
mod documents;
mod files;
mod locate;
mod metadata;
mod presence;
pub mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::capability::{Capability, DeclaredCapability, Registry};
use crate::include::KNOWN_FEATURE_SETS;
use crate::manifest::{Manifest, ManifestDir};
use crate::payload::{Layout, PayloadInput};

pub use presence::Scope;

pub use crate::include::KNOWN_PROFILES;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stable finding code; see the table in the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    NoManifests,
    UnreadableFile,
    IgnoredFile,
    IgnoredDirectory,
    FileName,
    Template,
    YamlSyntax,
    NotAMapping,
    FieldType,
    MissingField,
    DuplicateKey,
    RedundantKey,
    DuplicateResource,
    AnnotationsNotStrings,
    MisspelledCapability,
    UnknownCapability,
    EmptyCapability,
    FeatureSetAndGate,
    UnknownFeatureSet,
    ProfileValue,
    UnknownProfile,
    NoProfile,
    DeleteValue,
    MajorVersionKind,
    MajorVersionInvalid,
    MajorVersionOverlap,
    PartialCapability,
    NamespaceCapability,
    CapabilityReference,
    ReleaseMetadata,
    ReleaseMetadataValue,
    CapabilityDeclaration,
    CapabilityBaseline,
    MissingMetadata,
    ImageReferences,
    MissingImageTag,
    MissingImage,
    ClusterOperatorVersions,
    ForeignCrd,
    PreflightCheck,
}

impl Code {
    pub const ALL: [Code; 40] = [
        Code::NoManifests,
        Code::UnreadableFile,
        Code::IgnoredFile,
        Code::IgnoredDirectory,
        Code::FileName,
        Code::Template,
        Code::YamlSyntax,
        Code::NotAMapping,
        Code::FieldType,
        Code::MissingField,
        Code::DuplicateKey,
        Code::RedundantKey,
        Code::DuplicateResource,
        Code::AnnotationsNotStrings,
        Code::MisspelledCapability,
        Code::UnknownCapability,
        Code::EmptyCapability,
        Code::FeatureSetAndGate,
        Code::UnknownFeatureSet,
        Code::ProfileValue,
        Code::UnknownProfile,
        Code::NoProfile,
        Code::DeleteValue,
        Code::MajorVersionKind,
        Code::MajorVersionInvalid,
        Code::MajorVersionOverlap,
        Code::PartialCapability,
        Code::NamespaceCapability,
        Code::CapabilityReference,
        Code::ReleaseMetadata,
        Code::ReleaseMetadataValue,
        Code::CapabilityDeclaration,
        Code::CapabilityBaseline,
        Code::MissingMetadata,
        Code::ImageReferences,
        Code::MissingImageTag,
        Code::MissingImage,
        Code::ClusterOperatorVersions,
        Code::ForeignCrd,
        Code::PreflightCheck,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::NoManifests => "no-manifests",
            Code::UnreadableFile => "unreadable-file",
            Code::IgnoredFile => "ignored-file",
            Code::IgnoredDirectory => "ignored-directory",
            Code::FileName => "file-name",
            Code::Template => "template",
            Code::YamlSyntax => "yaml-syntax",
            Code::NotAMapping => "not-a-mapping",
            Code::FieldType => "field-type",
            Code::MissingField => "missing-field",
            Code::DuplicateKey => "duplicate-key",
            Code::RedundantKey => "redundant-key",
            Code::DuplicateResource => "duplicate-resource",
            Code::AnnotationsNotStrings => "annotations-not-strings",
            Code::MisspelledCapability => "misspelled-capability",
            Code::UnknownCapability => "unknown-capability",
            Code::EmptyCapability => "empty-capability",
            Code::FeatureSetAndGate => "feature-set-and-gate",
            Code::UnknownFeatureSet => "unknown-feature-set",
            Code::ProfileValue => "profile-value",
            Code::UnknownProfile => "unknown-profile",
            Code::NoProfile => "no-profile",
            Code::DeleteValue => "delete-value",
            Code::MajorVersionKind => "major-version-kind",
            Code::MajorVersionInvalid => "major-version-invalid",
            Code::MajorVersionOverlap => "major-version-overlap",
            Code::PartialCapability => "partial-capability",
            Code::NamespaceCapability => "namespace-capability",
            Code::CapabilityReference => "capability-reference",
            Code::ReleaseMetadata => "release-metadata",
            Code::ReleaseMetadataValue => "release-metadata-value",
            Code::CapabilityDeclaration => "capability-declaration",
            Code::CapabilityBaseline => "capability-baseline",
            Code::MissingMetadata => "missing-metadata",
            Code::ImageReferences => "image-references",
            Code::MissingImageTag => "missing-image-tag",
            Code::MissingImage => "missing-image",
            Code::ClusterOperatorVersions => "cluster-operator-versions",
            Code::ForeignCrd => "foreign-crd",
            Code::PreflightCheck => "preflight-check",
        }
    }

    pub fn severity(self) -> Severity {
        match self {
            Code::IgnoredFile
            | Code::IgnoredDirectory
            | Code::FileName
            | Code::RedundantKey
            | Code::UnknownCapability
            | Code::ProfileValue
            | Code::UnknownProfile
            | Code::NoProfile
            | Code::PartialCapability
            | Code::NamespaceCapability
            | Code::CapabilityReference
            | Code::ReleaseMetadataValue
            | Code::CapabilityBaseline
            | Code::MissingMetadata
            | Code::MissingImage
            | Code::ForeignCrd => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One problem. `file` is relative to the payload root; `line` and `column` are 1-based and
/// absent when the finding is about a whole file (or one that does not exist).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub code: Code,
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl Finding {
    pub fn new(code: Code, file: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding {
            severity: code.severity(),
            code,
            file: file.into(),
            line: None,
            column: None,
            message: message.into(),
            help: None,
        }
    }

    /// Positions are 1-based; serde_json says column 0 for an error at the end of a line.
    pub fn at(mut self, line: usize, column: usize) -> Finding {
        self.line = Some(line.max(1));
        self.column = Some(column.max(1));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Finding {
        self.help = Some(help.into());
        self
    }

    fn sort_key(&self) -> (&str, usize, usize, Code, &str) {
        (
            &self.file,
            self.line.unwrap_or(0),
            self.column.unwrap_or(0),
            self.code,
            &self.message,
        )
    }
}

/// Where a listed directory entry sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListedIn {
    /// Beside `manifests/` and `release-manifests/` in a payload root.
    Root,
    /// In a directory the CVO reads (for a plain directory: the directory itself).
    Dir(ManifestDir),
}

/// One entry of a directory listing, whether or not the CVO reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub location: ListedIn,
    pub name: String,
    pub is_dir: bool,
}

/// Everything validation looks at: the files as the engine reads them, and the raw listing of
/// the directories (empty for the bundled payload, which has nothing unread).
#[derive(Debug, Clone)]
pub struct ValidateInput {
    pub payload: PayloadInput,
    pub listing: Vec<Listed>,
}

/// What to validate against.
#[derive(Debug, Clone)]
pub struct Options {
    /// The cluster configurations that checks about co-inclusion consider.
    pub scope: Scope,
    /// Capability names that are known on top of the registry's (not yet in openshift/api).
    pub extra_known_capabilities: BTreeSet<Capability>,
    /// `{{.ReleaseImage}}` for `manifests/` templates; default: from the release metadata.
    pub release_image: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scope: Scope::all(),
            extra_known_capabilities: BTreeSet::new(),
            release_image: None,
        }
    }
}

/// The outcome: findings in file and position order, and what was looked at.
#[derive(Debug, Clone)]
pub struct Report {
    pub origin: String,
    pub findings: Vec<Finding>,
    /// Every file checked (relative paths, in load order), for reports that list passes too.
    pub files: Vec<String>,
    pub documents: usize,
    /// File texts by relative path (rendered for templates), for source snippets.
    pub sources: BTreeMap<String, Arc<String>>,
}

impl Report {
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// Whether CI should pass: no errors, and no warnings either when they are denied.
    pub fn passes(&self, deny_warnings: bool) -> bool {
        self.count(Severity::Error) == 0 && (!deny_warnings || self.count(Severity::Warning) == 0)
    }

    /// How many findings each code has, for summaries and tests.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for finding in &self.findings {
            *counts.entry(finding.code.as_str()).or_insert(0) += 1;
        }
        counts
    }
}

/// The path of a payload file relative to the payload root. A plain directory is read as
/// `release-manifests/`, but its files sit at its top.
pub fn relative_path(layout: Layout, dir: ManifestDir, name: &str) -> String {
    match layout {
        Layout::PlainDirectory => name.to_string(),
        Layout::PayloadRoot => format!("{dir}/{name}"),
    }
}

/// A parsed document with the path it is reported under.
pub(crate) struct Doc {
    pub manifest: Manifest,
    pub path: Arc<str>,
}

/// Runs every check.
pub fn validate(input: &ValidateInput, options: &Options) -> Report {
    let layout = input.payload.layout;
    let mut findings = Vec::new();
    let meta = metadata::check_files(&input.payload);
    findings.extend(meta.findings.iter().cloned());
    findings.extend(files::check_listing(layout, &input.listing));
    let release_image = options
        .release_image
        .clone()
        .unwrap_or_else(|| crate::payload::default_release_image(meta.release.as_ref()));
    let parsed = documents::parse_all(&input.payload, &meta, &release_image);
    findings.extend(parsed.findings);
    if input.payload.manifests.is_empty() && input.payload.release_manifests.is_empty() {
        let problem = crate::manifest::ParseErrorKind::NoManifests;
        findings.push(
            Finding::new(Code::NoManifests, "release-manifests", problem.to_string())
                .help(problem.help()),
        );
    }
    let docs = parsed.docs;
    let declared = meta.release.as_ref().map(|r| r.capabilities.as_slice());
    let known = known_capabilities(options, declared.unwrap_or_default());
    let major = options
        .scope
        .major_version
        .or(meta.release.as_ref().map(|r| r.major()));
    let presence = presence::Presence::compute(&docs, &options.scope, major);
    findings.extend(annotations::check(&docs, &known, major));
    findings.extend(documents::cross_file_duplicates(&docs, &presence));
    findings.extend(capabilities::check(&docs, &presence));
    findings.extend(capabilities::baseline_workloads(
        &docs,
        declared.unwrap_or_default(),
    ));
    findings.extend(metadata::check_documents(&docs, &meta, &release_image));
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    findings.dedup();
    Report {
        origin: input.payload.origin.clone(),
        findings,
        files: parsed.files,
        documents: docs.len(),
        sources: parsed.sources,
    }
}

fn known_capabilities(options: &Options, declared: &[DeclaredCapability]) -> BTreeSet<Capability> {
    Registry::standard()
        .with_declared(declared)
        .known()
        .iter()
        .cloned()
        .chain(options.extra_known_capabilities.iter().cloned())
        .collect()
}

/// Every feature set a cluster can run with, Default (`""`) first as the most common.
pub fn all_feature_sets() -> Vec<String> {
    let others = KNOWN_FEATURE_SETS.iter().filter(|fs| **fs != "Default");
    std::iter::once("")
        .chain(others.copied())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in the module documentation is the reference users read: it must list every
    /// code with its real severity, and nothing else.
    #[test]
    fn the_documented_table_matches_the_codes() {
        let source = include_str!("mod.rs");
        let rows: Vec<(String, String)> = source
            .lines()
            .filter_map(|l| l.strip_prefix("//! | `"))
            .map(|rest| {
                let (code, rest) = rest.split_once("` | ").unwrap();
                let severity = rest.split(" |").next().unwrap();
                (code.to_string(), severity.to_string())
            })
            .collect();
        let codes: Vec<(String, String)> = Code::ALL
            .iter()
            .map(|c| (c.as_str().to_string(), c.severity().to_string()))
            .collect();
        assert_eq!(rows, codes);
    }

    mod never_panics {
        use proptest::prelude::*;

        use super::super::*;
        use crate::payload::InputFile;

        /// Fragments that make YAML of every shape: manifests, broken syntax, odd keys,
        /// flow collections, quotes left open, multi-byte text.
        fn text() -> impl Strategy<Value = String> {
            let fixed = prop::sample::select(vec![
                "apiVersion: v1\n",
                "kind: Namespace\n",
                "kind: ConfigMap\n",
                "metadata:\n",
                "  name: a\n",
                "  namespace: a\n",
                "  annotations:\n",
                "    include.release.openshift.io/self-managed-high-availability: \"true\"\n",
                "    capability.openshift.io/name: Console+\n",
                "    release.openshift.io/major-version: \"-4,x\"\n",
                "    release.openshift.io/delete: no\n",
                "spec:\n  containers:\n  - image: x\n",
                "---\n",
                "- ",
                "{\"a\": ",
                "'",
                "\"\\",
                "é: ü\n",
                "\t",
                "  ",
                "{{ index .Images \"x\" }}",
            ])
            .prop_map(String::from);
            let piece = prop_oneof![8 => fixed, 1 => "[a-z:\\[\\]{},'\" \n-]{0,6}"];
            prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
        }

        fn file(dir_files: Vec<(u8, String)>) -> Vec<InputFile> {
            dir_files
                .into_iter()
                .enumerate()
                .map(|(i, (kind, text))| InputFile {
                    name: match kind % 3 {
                        0 => format!("0000_10_a_{i}.yaml"),
                        1 => format!("x{i}.json"),
                        _ => format!("0000_20_b-c_{i}.yml"),
                    },
                    contents: Ok(text.into_bytes()),
                })
                .collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            #[test]
            fn on_any_input(
                manifests in prop::collection::vec((any::<u8>(), text()), 0..3),
                release in prop::collection::vec((any::<u8>(), text()), 0..5),
                metadata in prop::option::of(text()),
            ) {
                let input = ValidateInput {
                    payload: PayloadInput {
                        origin: "p".into(),
                        layout: Layout::PayloadRoot,
                        manifests: file(manifests),
                        release_manifests: file(release),
                        release_metadata: metadata.clone().map(|t| InputFile {
                            name: "release-metadata".into(),
                            contents: Ok(t.into_bytes()),
                        }),
                        image_references: metadata.map(|t| InputFile {
                            name: "image-references".into(),
                            contents: Ok(t.into_bytes()),
                        }),
                    },
                    listing: vec![],
                };
                let r = validate(&input, &Options::default());
                for f in &r.findings {
                    prop_assert!(f.line.is_none() || f.line >= Some(1));
                    prop_assert!(f.column.is_none() || f.column >= Some(1));
                }
                let _ = (report::text(&r, "b", true), report::json(&r, ""), report::junit(&r, "", false), report::github(&r, "", false));
            }
        }
    }

    #[test]
    fn findings_serialize_as_documented() {
        let finding = Finding::new(Code::DeleteValue, "release-manifests/a.yaml", "m")
            .at(3, 5)
            .help("h");
        assert_eq!(
            serde_json::to_string(&finding).unwrap(),
            r#"{"severity":"error","code":"delete-value","file":"release-manifests/a.yaml","line":3,"column":5,"message":"m","help":"h"}"#
        );
    }
}
