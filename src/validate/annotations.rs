//! Annotation checks, one document at a time: capability names, feature sets and gates,
//! profiles, `delete`, `major-version`. Where upstream has a message for the problem (an
//! exclusion reason, an apply error), the finding uses it.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Code, Doc, Finding, KNOWN_PROFILES, locate};
use crate::capability::Capability;
use crate::include::{
    Exclusion, FEATURE_GATE_ANNOTATION, FEATURE_SET_ANNOTATION, InclusionConfig,
    KNOWN_FEATURE_SETS, MAJOR_VERSION_ANNOTATION, PROFILE_ANNOTATION_PREFIX, include,
};
use crate::manifest::{CAPABILITY_ANNOTATION, DELETE_ANNOTATION, Manifest, go_quote};
use crate::suggest::suggest;

/// The value payload FeatureGate manifests carry so that the CVO leaves them to the config
/// operator.
pub(crate) const CONFIG_OPERATOR_ONLY: &str = "false-except-for-the-config-operator";

pub(crate) fn check(
    docs: &[Doc],
    known: &BTreeSet<Capability>,
    major: Option<u64>,
) -> Vec<Finding> {
    docs.iter()
        .flat_map(|doc| check_doc(doc, known, major))
        .collect()
}

fn check_doc(doc: &Doc, known: &BTreeSet<Capability>, major: Option<u64>) -> Vec<Finding> {
    if doc.manifest.annotations.is_none() {
        return vec![no_annotations(doc)];
    }
    let mut findings = Vec::new();
    findings.extend(capabilities(doc, known));
    findings.extend(feature_set_and_gate(doc));
    findings.extend(profiles(doc));
    findings.extend(delete(doc));
    findings.extend(major_version(doc, major));
    findings.extend(foreign_crd(doc));
    findings.extend(preflight_check(doc));
    findings
}

/// A ConfigMap marked as a preflight check ([`crate::preflight::checks`]) that is not a valid
/// one: caught in CI rather than when a cluster preflights the release.
fn preflight_check(doc: &Doc) -> Option<Finding> {
    use crate::preflight::checks::{CHECK_ANNOTATION, is_check, parse};
    if !is_check(&doc.manifest) {
        return None;
    }
    let error = parse(&doc.manifest).err()?;
    Some(
        on_key(doc, Code::PreflightCheck, CHECK_ANNOTATION, error.problem)
            .help("a check is a ConfigMap with data keys risk, message, url and one of promql and objects (docs/install-and-operate.md, Preflight)"),
    )
}

/// A CRD of another operator's API group ([`crate::ownership::KNOWN_OWNERS`]) that does not
/// say it stands in for that operator's, or names another one.
fn foreign_crd(doc: &Doc) -> Option<Finding> {
    use crate::ownership::{STAND_IN_ANNOTATION, known_owner, stand_in};
    let s = stand_in(&doc.manifest.object())?;
    let owner = known_owner(&s.group)?;
    if !s.declared {
        let (line, column) = locate::document_start(&doc.manifest);
        return Some(
            Finding::new(
                Code::ForeignCrd,
                &*doc.path,
                format!(
                    "CustomResourceDefinition {} is of {}, {owner}'s API group: where {owner} runs, its CRD is live and this one must not replace it (the CVO stands down and leaves {owner}'s alone), so the component that ships it must work with {owner}'s",
                    s.name, s.group
                ),
            )
            .at(line, column)
            .help(format!(
                "say that it stands in for {owner}'s: {STAND_IN_ANNOTATION}: {owner}"
            )),
        );
    }
    (s.owner != owner).then(|| {
        let guess = match suggest(&s.owner, &[owner]) {
            Some(near) => format!(" (did you mean {near}?)"),
            None => String::new(),
        };
        on_key(
            doc,
            Code::ForeignCrd,
            STAND_IN_ANNOTATION,
            format!(
                "{STAND_IN_ANNOTATION} names {:?}{guess}, but {} is {owner}'s API group",
                s.owner, s.group
            ),
        )
        .help(format!("{STAND_IN_ANNOTATION}: {owner}"))
    })
}

/// A finding about annotation `key` of the document, positioned on the key.
fn on_key(doc: &Doc, code: Code, key: &str, message: impl Into<String>) -> Finding {
    let (line, column) = locate::key(&doc.manifest, key);
    Finding::new(code, &*doc.path, message).at(line, column)
}

/// No annotations as the CVO reads them: either there are none, or one value is not a string
/// and the CVO drops them all (apimachinery's `NestedNullCoercingStringMap`).
fn no_annotations(doc: &Doc) -> Finding {
    let object = doc.manifest.object();
    let not_string = object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .and_then(|map| map.iter().find(|(_, v)| !v.is_string() && !v.is_null()));
    match not_string {
        Some((key, value)) => on_key(
            doc,
            Code::AnnotationsNotStrings,
            key,
            format!(
                "annotation {key} is {}, not a string: the CVO then sees no annotations at all (\"no annotations\") and never applies this document",
                json_type(value)
            ),
        )
        .help(format!("quote the value: {key}: \"{}\"", unquoted(value))),
        None => {
            let (line, column) = locate::document_start(&doc.manifest);
            Finding::new(
                Code::NoProfile,
                &*doc.path,
                "document has no annotations: the CVO never applies it (\"no annotations\")",
            )
            .at(line, column)
            .help(profile_help())
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
        Value::Null | Value::String(_) => "a string",
    }
}

fn unquoted(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn profile_help() -> String {
    format!(
        "add {PROFILE_ANNOTATION_PREFIX}<profile>: \"true\" for each profile that needs it ({}); if another tool applies it, it does not belong in the payload",
        KNOWN_PROFILES.join(", ")
    )
}

fn capabilities(doc: &Doc, known: &BTreeSet<Capability>) -> Vec<Finding> {
    let Some(value) = doc.manifest.annotation(CAPABILITY_ANNOTATION) else {
        return Vec::new();
    };
    if value.is_empty() {
        return Vec::new();
    }
    let parts: Vec<&str> = value.split('+').collect();
    let mut findings = Vec::new();
    if parts.iter().any(|p| p.is_empty()) {
        findings.push(
            on_key(
                doc,
                Code::EmptyCapability,
                CAPABILITY_ANNOTATION,
                format!(
                    "{CAPABILITY_ANNOTATION}={value} has an empty capability name: the CVO reports \"unrecognized capability names: \" and never applies this document"
                ),
            )
            .help("remove the extra `+`: names are joined by a single `+` with nothing around them"),
        );
    }
    let mut seen = BTreeSet::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        if known.contains(part) || !seen.insert(part) {
            continue;
        }
        findings.push(unknown_capability(doc, part, known));
    }
    findings
}

/// Upstream tolerates unknown names on purpose: a component annotates its manifests before
/// openshift/api learns the name, and presubmit CI then shows the capability disabled. A near
/// miss of a known name is not such a name but a typo that excludes the document everywhere.
fn unknown_capability(doc: &Doc, name: &str, known: &BTreeSet<Capability>) -> Finding {
    let candidates: Vec<&str> = known.iter().map(Capability::as_str).collect();
    let (line, column) = locate::value_part(&doc.manifest, CAPABILITY_ANNOTATION, name);
    let message = format!("unrecognized capability names: {name}");
    let finding = match suggest(name, &candidates) {
        Some(near) => Finding::new(
            Code::MisspelledCapability,
            &*doc.path,
            format!("{message}: a near miss of {near}, so the CVO excludes this document on every cluster"),
        )
        .help(format!(
            "did you mean {near}? Names are case-sensitive. If {name} really is a new capability, declare it in capabilities.knownCapabilities of an --inclusion file"
        )),
        None => Finding::new(Code::UnknownCapability, &*doc.path, message).help(format!(
            "fine while the capability is being introduced (the CVO excludes the document until openshift/api knows the name); known capabilities: {}",
            candidates.join(", ")
        )),
    };
    finding.at(line, column)
}

fn feature_set_and_gate(doc: &Doc) -> Vec<Finding> {
    let m = &doc.manifest;
    let mut findings = Vec::new();
    let set = m.annotation(FEATURE_SET_ANNOTATION);
    if set.is_some() && m.annotation(FEATURE_GATE_ANNOTATION).is_some() {
        findings.push(
            on_key(
                doc,
                Code::FeatureSetAndGate,
                FEATURE_GATE_ANNOTATION,
                Exclusion::FeatureSetAndGate.to_string(),
            )
            .help("keep one of the two: the CVO excludes the document on every cluster"),
        );
    }
    if let Some(value) = set {
        findings.extend(unknown_feature_set(doc, value));
    }
    findings
}

/// Upstream's check, entry by entry, untrimmed: any unknown entry means never included.
fn unknown_feature_set(doc: &Doc, value: &str) -> Option<Finding> {
    let entry = value.split(',').find(|e| !KNOWN_FEATURE_SETS.contains(e))?;
    let message = Exclusion::UnrecognizedFeatureSet {
        entry: entry.to_string(),
        value: value.to_string(),
    }
    .to_string();
    let help = match suggest(entry.trim(), KNOWN_FEATURE_SETS) {
        Some(s) => format!("did you mean {s}? Entries are separated by a bare comma, no spaces"),
        None => "the CVO excludes this document on every cluster".to_string(),
    };
    Some(
        on_key(
            doc,
            Code::UnknownFeatureSet,
            FEATURE_SET_ANNOTATION,
            message,
        )
        .help(help),
    )
}

fn profiles(doc: &Doc) -> Vec<Finding> {
    let m = &doc.manifest;
    let Some(annotations) = &m.annotations else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    let mut included = false;
    let mut config_operator_only = false;
    for (key, value) in annotations {
        let Some(profile) = key.strip_prefix(PROFILE_ANNOTATION_PREFIX) else {
            continue;
        };
        let known = KNOWN_PROFILES.contains(&profile);
        if !known {
            findings.push(unknown_profile(doc, key, profile));
        }
        if value == "true" {
            included |= known;
        } else if value == CONFIG_OPERATOR_ONLY && is_feature_gate(m) {
            config_operator_only = true;
        } else {
            findings.push(profile_value(doc, key, value));
        }
    }
    if !included && !config_operator_only {
        findings.push(no_profile(doc));
    }
    findings
}

fn is_feature_gate(m: &Manifest) -> bool {
    m.gvk.is("config.openshift.io", "FeatureGate")
}

fn unknown_profile(doc: &Doc, key: &str, profile: &str) -> Finding {
    let help = match suggest(profile, KNOWN_PROFILES) {
        Some(s) => format!("did you mean {PROFILE_ANNOTATION_PREFIX}{s}?"),
        None => format!("known profiles: {}", KNOWN_PROFILES.join(", ")),
    };
    on_key(
        doc,
        Code::UnknownProfile,
        key,
        format!("{key}: no cluster runs with profile {profile}"),
    )
    .help(help)
}

fn profile_value(doc: &Doc, key: &str, value: &str) -> Finding {
    let message = Exclusion::ProfileValue {
        annotation: key.to_string(),
        value: value.to_string(),
    }
    .to_string();
    on_key(doc, Code::ProfileValue, key, message).help(format!(
        "only \"true\" includes the document; any other value is the same as leaving {key} out"
    ))
}

fn no_profile(doc: &Doc) -> Finding {
    let (line, column) = locate::key(&doc.manifest, "annotations");
    Finding::new(
        Code::NoProfile,
        &*doc.path,
        format!(
            "no known cluster profile includes this document (no {PROFILE_ANNOTATION_PREFIX}<profile>: \"true\" for {}): no CVO applies it",
            KNOWN_PROFILES.join(", ")
        ),
    )
    .at(line, column)
    .help(profile_help())
}

/// Upstream's apply error: the CVO fails this task on every sync.
fn delete(doc: &Doc) -> Option<Finding> {
    let value = doc.manifest.annotation(DELETE_ANNOTATION)?;
    (value != "true").then(|| {
        on_key(
            doc,
            Code::DeleteValue,
            DELETE_ANNOTATION,
            format!(
                "invalid delete annotation {} value: {}",
                go_quote(DELETE_ANNOTATION),
                go_quote(value)
            ),
        )
        .help(format!(
            "set {DELETE_ANNOTATION}: \"true\" to have the CVO delete the resource, or remove the annotation"
        ))
    })
}

/// The engine's own major-version check: the annotation's problems do not depend on the
/// cluster's major version, only whether it matches does.
fn major_version(doc: &Doc, major: Option<u64>) -> Option<Finding> {
    doc.manifest.annotation(MAJOR_VERSION_ANNOTATION)?;
    let config = InclusionConfig {
        major_version: Some(major.unwrap_or(0)),
        ..Default::default()
    };
    let exclusion = include(&doc.manifest, &config).err()?;
    let (code, help) = match exclusion {
        Exclusion::MajorVersionKindUnsupported => (
            Code::MajorVersionKind,
            "only FeatureGate (config.openshift.io) and CustomResourceDefinition manifests may carry it: the CVO excludes this document on every cluster",
        ),
        Exclusion::InvalidMajorVersion { .. } => (
            Code::MajorVersionInvalid,
            "use comma-separated major versions, `N` to include or `-N` to exclude, e.g. \"4,5\" or \"-4\"",
        ),
        Exclusion::MajorVersionOverlap(_) => (
            Code::MajorVersionOverlap,
            "a version cannot be both required and excluded: remove one of the two",
        ),
        _ => return None,
    };
    Some(on_key(doc, code, MAJOR_VERSION_ANNOTATION, exclusion.to_string()).help(help))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Registry;
    use crate::validate::documents::tests::docs_of;

    fn known() -> BTreeSet<Capability> {
        Registry::standard().known().iter().cloned().collect()
    }

    const SMHA: &str = "include.release.openshift.io/self-managed-high-availability";

    fn doc_with(kind: &str, annotations: &[(&str, &str)]) -> String {
        let mut text = format!("apiVersion: {kind}\nmetadata:\n  name: a\n  annotations:\n");
        for (k, v) in annotations {
            text.push_str(&format!("    {k}: {v}\n"));
        }
        text
    }

    /// (code, line, column, message, help) of the findings for one document.
    fn found(
        kind: &str,
        annotations: &[(&str, &str)],
    ) -> Vec<(Code, usize, usize, String, String)> {
        let docs = docs_of(&[("0000_10_a_x.yaml", &doc_with(kind, annotations))]);
        check(&docs, &known(), Some(4))
            .into_iter()
            .map(|f| {
                (
                    f.code,
                    f.line.unwrap(),
                    f.column.unwrap(),
                    f.message,
                    f.help.unwrap_or_default(),
                )
            })
            .collect()
    }

    const CM: &str = "v1\nkind: ConfigMap";
    const CRD: &str = "apiextensions.k8s.io/v1\nkind: CustomResourceDefinition";
    const FG: &str = "config.openshift.io/v1\nkind: FeatureGate";

    fn codes(kind: &str, annotations: &[(&str, &str)]) -> Vec<Code> {
        found(kind, annotations).into_iter().map(|f| f.0).collect()
    }

    #[test]
    fn a_well_annotated_document_has_no_findings() {
        let good = [
            (SMHA, "\"true\""),
            (CAPABILITY_ANNOTATION, "Console+Insights"),
            (FEATURE_SET_ANNOTATION, "Default,TechPreviewNoUpgrade"),
            (DELETE_ANNOTATION, "\"true\""),
        ];
        assert!(found(CM, &good).is_empty(), "{:?}", found(CM, &good));
        assert!(
            found(
                CRD,
                &[(SMHA, "\"true\""), (MAJOR_VERSION_ANNOTATION, "\"4,-5\"")]
            )
            .is_empty()
        );
    }

    #[test]
    fn unknown_capabilities_suggest_a_known_name() {
        let got = found(
            CM,
            &[(SMHA, "\"true\""), (CAPABILITY_ANNOTATION, "console+Foo")],
        );
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].0, got[0].1, got[0].2, got[0].3.as_str()),
            (
                Code::MisspelledCapability,
                7,
                35,
                "unrecognized capability names: console: a near miss of Console, so the CVO excludes this document on every cluster"
            )
        );
        assert!(
            got[0]
                .4
                .starts_with("did you mean Console? Names are case-sensitive."),
            "{}",
            got[0].4
        );
        assert_eq!(
            (got[1].0, got[1].1, got[1].2),
            (Code::UnknownCapability, 7, 43)
        );
        assert!(
            got[1]
                .4
                .starts_with("fine while the capability is being introduced")
        );
        // Near misses of every kind are errors; a new name is a warning; positions are on
        // the name inside the value, quoted or not.
        let cases: &[(&str, Code, usize)] = &[
            ("MachinAPI", Code::MisspelledCapability, 35),
            ("CONSOLE", Code::MisspelledCapability, 35),
            ("Consle", Code::MisspelledCapability, 35),
            ("\"Console+Insight\"", Code::MisspelledCapability, 44),
            ("Insights+Networking", Code::UnknownCapability, 44),
            ("Networking", Code::UnknownCapability, 35),
        ];
        for (value, code, column) in cases {
            let got = found(CM, &[(SMHA, "\"true\""), (CAPABILITY_ANNOTATION, value)]);
            assert_eq!(
                got.iter().map(|g| (g.0, g.1, g.2)).collect::<Vec<_>>(),
                vec![(*code, 7, *column)],
                "{value}"
            );
            assert_eq!(
                code.severity() == crate::validate::Severity::Error,
                *code == Code::MisspelledCapability
            );
        }
        // A name inside a longer one is not where it is written.
        let got = found(
            CM,
            &[
                (SMHA, "\"true\""),
                (CAPABILITY_ANNOTATION, "Networking2+Networking"),
            ],
        );
        assert_eq!(
            got.iter().map(|g| (g.3.as_str(), g.2)).collect::<Vec<_>>(),
            vec![
                ("unrecognized capability names: Networking2", 35),
                ("unrecognized capability names: Networking", 47)
            ]
        );
    }

    #[test]
    fn empty_capability_parts() {
        assert_eq!(
            codes(
                CM,
                &[(SMHA, "\"true\""), (CAPABILITY_ANNOTATION, "Console+")]
            ),
            vec![Code::EmptyCapability]
        );
        assert_eq!(
            codes(
                CM,
                &[
                    (SMHA, "\"true\""),
                    (CAPABILITY_ANNOTATION, "\"+Console++Insights\"")
                ]
            ),
            vec![Code::EmptyCapability]
        );
        assert!(codes(CM, &[(SMHA, "\"true\""), (CAPABILITY_ANNOTATION, "\"\"")]).is_empty());
    }

    #[test]
    fn feature_sets_and_gates() {
        let got = found(
            CM,
            &[
                (SMHA, "\"true\""),
                (FEATURE_SET_ANNOTATION, "\"Default, TechPreview\""),
                (FEATURE_GATE_ANNOTATION, "G"),
            ],
        );
        assert_eq!(got[0].0, Code::FeatureSetAndGate);
        assert_eq!(got[0].1, 8);
        assert!(
            got[0]
                .3
                .starts_with("both feature set and feature gate annotations are present")
        );
        assert_eq!(got[1].0, Code::UnknownFeatureSet);
        assert_eq!(got[1].1, 7);
        assert_eq!(
            got[1].3,
            r#"unrecognized value " TechPreview" in release.openshift.io/feature-set=Default, TechPreview; known values are: CustomNoUpgrade,Default,DevPreviewNoUpgrade,OKD,TechPreviewNoUpgrade"#
        );
        assert!(got[1].4.starts_with("did you mean TechPreviewNoUpgrade?"));
    }

    #[test]
    fn profiles_values_unknown_names_and_none_at_all() {
        let got = found(CM, &[(SMHA, "\"True\"")]);
        assert_eq!(
            got.iter().map(|g| (g.0, g.3.as_str())).collect::<Vec<_>>(),
            vec![
                (
                    Code::ProfileValue,
                    "unrecognized value include.release.openshift.io/self-managed-high-availability=True"
                ),
                (
                    Code::NoProfile,
                    "no known cluster profile includes this document (no include.release.openshift.io/<profile>: \"true\" for self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift): no CVO applies it"
                )
            ]
        );
        assert_eq!((got[1].1, got[1].2), (5, 3));
        let got = found(
            CM,
            &[("include.release.openshift.io/single-node", "\"true\"")],
        );
        assert_eq!(got[0].0, Code::UnknownProfile);
        assert_eq!(
            got[0].4,
            "did you mean include.release.openshift.io/single-node-developer?"
        );
        assert_eq!(got[1].0, Code::NoProfile);
        // The FeatureGate marker is fine on FeatureGates only.
        let marker = [(SMHA, CONFIG_OPERATOR_ONLY)];
        assert!(codes(FG, &marker).is_empty());
        assert_eq!(
            codes(CM, &marker),
            vec![Code::ProfileValue, Code::NoProfile]
        );
        assert!(
            codes(
                CM,
                &[("include.release.openshift.io/hypershift", "\"true\"")]
            )
            .is_empty()
        );
    }

    /// A document's position is its first line of YAML, not a comment or a separator above it.
    #[test]
    fn document_positions_skip_comments() {
        let docs = docs_of(&[(
            "0000_10_a_x.yaml",
            "# Copyright\n\n# more\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# second\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
        )]);
        let got: Vec<(Code, Option<usize>, Option<usize>)> = check(&docs, &known(), None)
            .into_iter()
            .map(|f| (f.code, f.line, f.column))
            .collect();
        assert_eq!(
            got,
            vec![
                (Code::NoProfile, Some(4), Some(1)),
                (Code::NoProfile, Some(10), Some(1))
            ]
        );
    }

    #[test]
    fn no_annotations_and_non_string_annotations() {
        let docs = docs_of(&[(
            "0000_10_a_x.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        )]);
        let got = check(&docs, &known(), None);
        assert_eq!(got[0].code, Code::NoProfile);
        assert_eq!(
            got[0].message,
            "document has no annotations: the CVO never applies it (\"no annotations\")"
        );
        let got = found(CM, &[("a", "\"x\""), (SMHA, "true")]);
        assert_eq!(got.len(), 1);
        assert_eq!(
            (
                got[0].0,
                got[0].1,
                got[0].2,
                got[0].3.as_str(),
                got[0].4.as_str()
            ),
            (
                Code::AnnotationsNotStrings,
                7,
                5,
                "annotation include.release.openshift.io/self-managed-high-availability is a boolean, not a string: the CVO then sees no annotations at all (\"no annotations\") and never applies this document",
                "quote the value: include.release.openshift.io/self-managed-high-availability: \"true\""
            )
        );
    }

    #[test]
    fn delete_needs_exactly_true() {
        let got = found(CM, &[(SMHA, "\"true\""), (DELETE_ANNOTATION, "\"yes\"")]);
        assert_eq!(
            (got[0].0, got[0].1, got[0].3.as_str()),
            (
                Code::DeleteValue,
                7,
                r#"invalid delete annotation "release.openshift.io/delete" value: "yes""#
            )
        );
    }

    #[test]
    fn major_versions() {
        let with =
            |kind: &str, v: &str| codes(kind, &[(SMHA, "\"true\""), (MAJOR_VERSION_ANNOTATION, v)]);
        assert_eq!(with(CM, "\"4\""), vec![Code::MajorVersionKind]);
        assert_eq!(with(CRD, "\"4,x\""), vec![Code::MajorVersionInvalid]);
        assert_eq!(with(CRD, "\"4,-4\""), vec![Code::MajorVersionOverlap]);
        assert!(with(FG, "\"5\"").is_empty(), "a mismatch is not a problem");
        let got = found(
            CRD,
            &[(SMHA, "\"true\""), (MAJOR_VERSION_ANNOTATION, "\"x\"")],
        );
        assert_eq!(
            got[0].3,
            r#"invalid included major version "x" in annotation: strconv.ParseUint: parsing "x": invalid syntax"#
        );
    }

    #[test]
    fn preflight_checks_are_validated() {
        let check = |data: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\n  annotations:\n    {SMHA}: \"true\"\n    release.openshift.io/preflight-check: \"true\"\ndata:\n{data}"
            )
        };
        let run = |text: String| {
            let docs = docs_of(&[("0000_90_x_preflight.yaml", &text)]);
            check_docs(&docs)
        };
        let good = "  risk: R\n  message: m\n  url: https://x\n  promql: '1'\n";
        assert!(run(check(good)).is_empty());
        let got = run(check(
            "  risk: R\n  message: m\n  url: https://x\n  promq: '1'\n",
        ));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].code, Code::PreflightCheck);
        assert_eq!(got[0].severity, crate::validate::Severity::Error);
        assert!(
            got[0]
                .message
                .starts_with("unknown data key \"promq\" (did you mean promql?)"),
            "{}",
            got[0].message
        );
    }

    fn check_docs(docs: &[Doc]) -> Vec<Finding> {
        check(docs, &known(), Some(4))
    }

    #[test]
    fn a_crd_of_another_operators_group_says_it_stands_in() {
        let crd = |annotation: Option<&str>| {
            let extra = annotation
                .map(|v| format!("    crds.cvo.openshift.io/stand-in-for: {v}\n"))
                .unwrap_or_default();
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: clusterdeployments.hive.openshift.io\n  annotations:\n    {SMHA}: \"true\"\n{extra}spec:\n  group: hive.openshift.io\n"
            )
        };
        let run = |text: String| {
            let docs = docs_of(&[("0000_50_agents_01_cd.crd.yaml", &text)]);
            check(&docs, &known(), Some(4))
        };
        let got = run(crd(None));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].code, Code::ForeignCrd);
        assert_eq!(got[0].severity, crate::validate::Severity::Warning);
        assert!(
            got[0].message.starts_with("CustomResourceDefinition clusterdeployments.hive.openshift.io is of hive.openshift.io, hive's API group: where hive runs, its CRD is live and this one must not replace it"),
            "{}",
            got[0].message
        );
        assert_eq!(
            got[0].help.as_deref(),
            Some("say that it stands in for hive's: crds.cvo.openshift.io/stand-in-for: hive")
        );
        assert!(run(crd(Some("hive"))).is_empty());
        let got = run(crd(Some("hvie")));
        assert_eq!(
            (got[0].message.as_str(), got[0].line),
            (
                "crds.cvo.openshift.io/stand-in-for names \"hvie\" (did you mean hive?), but hive.openshift.io is hive's API group",
                Some(7)
            )
        );
    }
}
