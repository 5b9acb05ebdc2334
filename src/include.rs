//! Whether the CVO manages a manifest for a given cluster configuration: upstream
//! `Manifest.Include` / `IncludeAllowUnknownCapabilities` (library-go), check for check and
//! message for message. Users and their alerts match on these messages.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::capability::Capability;
use crate::manifest::{Manifest, ManifestId};

pub const FEATURE_SET_ANNOTATION: &str = "release.openshift.io/feature-set";
pub const FEATURE_GATE_ANNOTATION: &str = "release.openshift.io/feature-gate";
pub const MAJOR_VERSION_ANNOTATION: &str = "release.openshift.io/major-version";
pub const PROFILE_ANNOTATION_PREFIX: &str = "include.release.openshift.io/";
pub const EXCLUDE_ANNOTATION_PREFIX: &str = "exclude.release.openshift.io/";
pub const DEFAULT_CLUSTER_PROFILE: &str = "self-managed-high-availability";

/// The cluster profiles this project knows. The first three are upstream's; `hypershift` is
/// what HyperShift-hosted clusters run with, and 349 documents of a current payload carry it.
pub const KNOWN_PROFILES: &[&str] = &[
    DEFAULT_CLUSTER_PROFILE,
    "single-node-developer",
    "ibm-cloud-managed",
    "hypershift",
];

/// Feature sets the `feature-set` annotation may name (`""` is spelled `Default`), byte-sorted.
pub const KNOWN_FEATURE_SETS: &[&str] = &[
    "CustomNoUpgrade",
    "Default",
    "DevPreviewNoUpgrade",
    "OKD",
    "TechPreviewNoUpgrade",
];

/// The capability filter: what the cluster knows and has enabled (`status.capabilities`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityFilter {
    #[serde(default)]
    pub known_capabilities: BTreeSet<Capability>,
    #[serde(default)]
    pub enabled_capabilities: BTreeSet<Capability>,
}

/// An entry of `spec.overrides`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentOverride {
    pub kind: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub namespace: String,
    pub name: String,
    #[serde(default)]
    pub unmanaged: bool,
}

/// Every filter is optional: `None` disables it, as upstream's nil does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InclusionConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_identifier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_feature_set: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilityFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<Vec<ComponentOverride>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_feature_gates: Option<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_version: Option<u64>,
    #[serde(default)]
    pub allow_unknown_capabilities: bool,
}

impl InclusionConfig {
    /// The filters the CVO applies when it loads a payload (spec §1.7, §2.3): everything but
    /// capabilities and overrides, which are applied per task at apply time.
    pub fn load_time(&self) -> InclusionConfig {
        InclusionConfig {
            capabilities: None,
            overrides: None,
            allow_unknown_capabilities: false,
            ..self.clone()
        }
    }

    /// The filters the CVO checks per task when it applies (spec §7.2):
    /// `Include(nil, nil, nil, &caps, overrides, gates, nil)`, unknown capabilities excluded.
    pub fn apply_time(&self) -> InclusionConfig {
        InclusionConfig {
            capabilities: self.capabilities.clone(),
            overrides: self.overrides.clone(),
            enabled_feature_gates: self.enabled_feature_gates.clone(),
            ..Default::default()
        }
    }
}

/// What a cluster is, as far as choosing its manifests goes: the values upstream passes to
/// `Include` (spec §1.7, §7.2, §9). The operator reads them from the cluster, `cvo plan` and
/// the CLI from flags and files; [`ClusterFacts::inclusion`] is the one place that turns them
/// into an [`InclusionConfig`], whose [`load_time`](InclusionConfig::load_time) and
/// [`apply_time`](InclusionConfig::apply_time) parts every caller then uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFacts {
    /// `$EXCLUDE_MANIFESTS`.
    pub exclude: Option<String>,
    /// The FeatureGate's `spec.featureSet` (`""`: Default).
    pub feature_set: String,
    /// `$CLUSTER_PROFILE` (`""`: [`DEFAULT_CLUSTER_PROFILE`]).
    pub profile: String,
    /// The enabled feature gates; `None`: not checked (upstream's nil set).
    pub feature_gates: Option<BTreeSet<String>>,
    /// Known and enabled capabilities; `None`: no capability filter.
    pub capabilities: Option<CapabilityFilter>,
    /// `spec.overrides`.
    pub overrides: Vec<ComponentOverride>,
    /// The major version of the release being loaded (its release-metadata's).
    pub major_version: Option<u64>,
}

impl ClusterFacts {
    /// The whole inclusion configuration of this cluster: load-time and apply-time filters.
    pub fn inclusion(&self) -> InclusionConfig {
        let profile = if self.profile.is_empty() {
            DEFAULT_CLUSTER_PROFILE
        } else {
            &self.profile
        };
        InclusionConfig {
            exclude_identifier: self.exclude.clone(),
            required_feature_set: Some(self.feature_set.clone()),
            profile: Some(profile.to_string()),
            capabilities: self.capabilities.clone(),
            overrides: (!self.overrides.is_empty()).then(|| self.overrides.clone()),
            enabled_feature_gates: self.feature_gates.clone(),
            major_version: self.major_version,
            allow_unknown_capabilities: false,
        }
    }
}

/// Why a manifest is excluded. `Display` is the exact upstream error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    NoAnnotations,
    ExcludedIdentifier {
        annotation: String,
    },
    FeatureSetAndGate,
    UnrecognizedFeatureSet {
        entry: String,
        value: String,
    },
    FeatureSetRequired {
        required: String,
        listed: Vec<String>,
    },
    FeatureGateMustBeDisabled(String),
    FeatureGateRequired(String),
    MajorVersionKindUnsupported,
    InvalidMajorVersion {
        excluded: bool,
        token: String,
    },
    MajorVersionOverlap(Vec<u64>),
    MajorVersionExcluded(u64),
    MajorVersionNotRequired(u64),
    ProfileValue {
        annotation: String,
        value: String,
    },
    ProfileUnset {
        annotation: String,
    },
    UnrecognizedCapabilities(Vec<Capability>),
    DisabledCapabilities(Vec<Capability>),
    Overridden,
}

impl Exclusion {
    /// A short stable name for summaries and metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Exclusion::NoAnnotations => "no-annotations",
            Exclusion::ExcludedIdentifier { .. } => "exclude-identifier",
            Exclusion::FeatureSetAndGate
            | Exclusion::UnrecognizedFeatureSet { .. }
            | Exclusion::FeatureSetRequired { .. } => "feature-set",
            Exclusion::FeatureGateMustBeDisabled(_) | Exclusion::FeatureGateRequired(_) => {
                "feature-gate"
            }
            Exclusion::MajorVersionKindUnsupported
            | Exclusion::InvalidMajorVersion { .. }
            | Exclusion::MajorVersionOverlap(_)
            | Exclusion::MajorVersionExcluded(_)
            | Exclusion::MajorVersionNotRequired(_) => "major-version",
            Exclusion::ProfileValue { .. } | Exclusion::ProfileUnset { .. } => "profile",
            Exclusion::UnrecognizedCapabilities(_) => "unknown-capability",
            Exclusion::DisabledCapabilities(_) => "disabled-capability",
            Exclusion::Overridden => "overridden",
        }
    }
}

impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exclusion::NoAnnotations => f.write_str("no annotations"),
            Exclusion::ExcludedIdentifier { annotation } => write!(f, "{annotation}=true"),
            Exclusion::FeatureSetAndGate => f.write_str(
                "both feature set and feature gate annotations are present: manifests may specify either a feature set or a feature gate, but not both",
            ),
            Exclusion::UnrecognizedFeatureSet { entry, value } => write!(
                f,
                "unrecognized value {} in {FEATURE_SET_ANNOTATION}={value}; known values are: {}",
                crate::manifest::go_quote(entry),
                KNOWN_FEATURE_SETS.join(",")
            ),
            Exclusion::FeatureSetRequired { required, listed } => write!(
                f,
                "{} is required, and {FEATURE_SET_ANNOTATION}={}",
                crate::manifest::go_quote(required),
                listed.join(",")
            ),
            Exclusion::FeatureGateMustBeDisabled(gate) => {
                write!(f, "feature gate {gate} is enabled but manifest requires it to be disabled")
            }
            Exclusion::FeatureGateRequired(gate) => write!(f, "feature gate {gate} is required but not enabled"),
            Exclusion::MajorVersionKindUnsupported => {
                f.write_str("major version filtering is only supported for feature gates and custom resources")
            }
            Exclusion::InvalidMajorVersion { excluded, token } => write!(
                f,
                "invalid {} major version {} in annotation: strconv.ParseUint: parsing {}: {}",
                if *excluded { "excluded" } else { "included" },
                crate::manifest::go_quote(token),
                crate::manifest::go_quote(token),
                parse_uint_problem(token)
            ),
            Exclusion::MajorVersionOverlap(versions) => {
                let list: Vec<String> = versions.iter().map(u64::to_string).collect();
                write!(f, "inclusion and exclusion requirements overlap: [{}]", list.join(" "))
            }
            Exclusion::MajorVersionExcluded(major) => write!(f, "major version {major} matches excluded version {major}"),
            Exclusion::MajorVersionNotRequired(major) => {
                write!(f, "major version {major} does not match any required versions")
            }
            Exclusion::ProfileValue { annotation, value } => write!(f, "unrecognized value {annotation}={value}"),
            Exclusion::ProfileUnset { annotation } => write!(f, "{annotation} unset"),
            Exclusion::UnrecognizedCapabilities(caps) => write!(f, "unrecognized capability names: {}", join(caps)),
            Exclusion::DisabledCapabilities(caps) => write!(f, "disabled capabilities: {}", join(caps)),
            Exclusion::Overridden => f.write_str("overridden"),
        }
    }
}

impl std::error::Error for Exclusion {}

fn join(caps: &[Capability]) -> String {
    caps.iter()
        .map(Capability::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Go's `strconv.ParseUint(s, 10, 64)` error kinds.
fn parse_uint_problem(token: &str) -> &'static str {
    if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
        "value out of range"
    } else {
        "invalid syntax"
    }
}

/// The first failing check, in upstream order, or `Ok` when the manifest is included.
pub fn include(manifest: &Manifest, config: &InclusionConfig) -> Result<(), Exclusion> {
    let annotations = manifest
        .annotations
        .as_ref()
        .ok_or(Exclusion::NoAnnotations)?;
    let get = |key: &str| annotations.get(key).map(String::as_str);
    if let Some(id) = &config.exclude_identifier {
        let annotation = format!("{EXCLUDE_ANNOTATION_PREFIX}{id}");
        if get(&annotation) == Some("true") {
            return Err(Exclusion::ExcludedIdentifier { annotation });
        }
    }
    if config.required_feature_set.is_some()
        && config.enabled_feature_gates.is_some()
        && get(FEATURE_SET_ANNOTATION).is_some()
        && get(FEATURE_GATE_ANNOTATION).is_some()
    {
        return Err(Exclusion::FeatureSetAndGate);
    }
    if let Some(required) = &config.required_feature_set {
        check_feature_set(required, get(FEATURE_SET_ANNOTATION))?;
    }
    if let Some(gates) = &config.enabled_feature_gates {
        check_feature_gates(gates, get(FEATURE_GATE_ANNOTATION))?;
    }
    if let Some(major) = config.major_version {
        check_major_version(manifest, major, get(MAJOR_VERSION_ANNOTATION))?;
    }
    if let Some(profile) = &config.profile {
        check_profile(profile, &get)?;
    }
    if let Some(filter) = &config.capabilities {
        check_capabilities(manifest, filter, config.allow_unknown_capabilities)?;
    }
    if let Some(overrides) = &config.overrides
        && is_overridden(&manifest.id, overrides)
    {
        return Err(Exclusion::Overridden);
    }
    Ok(())
}

fn check_feature_set(required: &str, annotation: Option<&str>) -> Result<(), Exclusion> {
    let Some(value) = annotation else {
        return Ok(());
    };
    let entries: Vec<&str> = value.split(',').collect();
    if let Some(entry) = entries.iter().find(|e| !KNOWN_FEATURE_SETS.contains(e)) {
        return Err(Exclusion::UnrecognizedFeatureSet {
            entry: entry.to_string(),
            value: value.to_string(),
        });
    }
    let required = if required.is_empty() {
        "Default"
    } else {
        required
    };
    if entries.contains(&required) {
        return Ok(());
    }
    let listed: BTreeSet<&str> = entries.into_iter().collect();
    Err(Exclusion::FeatureSetRequired {
        required: required.to_string(),
        listed: listed.into_iter().map(str::to_string).collect(),
    })
}

fn check_feature_gates(
    enabled: &BTreeSet<String>,
    annotation: Option<&str>,
) -> Result<(), Exclusion> {
    let Some(value) = annotation else {
        return Ok(());
    };
    for requirement in value.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        match requirement.strip_prefix('-') {
            Some(gate) if enabled.contains(gate) => {
                return Err(Exclusion::FeatureGateMustBeDisabled(gate.to_string()));
            }
            Some(_) => {}
            None if !enabled.contains(requirement) => {
                return Err(Exclusion::FeatureGateRequired(requirement.to_string()));
            }
            None => {}
        }
    }
    Ok(())
}

fn check_major_version(
    manifest: &Manifest,
    major: u64,
    annotation: Option<&str>,
) -> Result<(), Exclusion> {
    let Some(value) = annotation else {
        return Ok(());
    };
    let gvk = &manifest.gvk;
    if !gvk.is("config.openshift.io", "FeatureGate")
        && !gvk.is("apiextensions.k8s.io", "CustomResourceDefinition")
    {
        return Err(Exclusion::MajorVersionKindUnsupported);
    }
    let mut included = BTreeSet::new();
    let mut excluded = BTreeSet::new();
    for requirement in value.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        let (is_excluded, token) = match requirement.strip_prefix('-') {
            Some(token) => (true, token),
            None => (false, requirement),
        };
        let version = parse_go_uint(token).ok_or_else(|| Exclusion::InvalidMajorVersion {
            excluded: is_excluded,
            token: token.to_string(),
        })?;
        if is_excluded {
            &mut excluded
        } else {
            &mut included
        }
        .insert(version);
    }
    let overlap: Vec<u64> = included.intersection(&excluded).copied().collect();
    if !overlap.is_empty() {
        Err(Exclusion::MajorVersionOverlap(overlap))
    } else if included.contains(&major) {
        Ok(())
    } else if excluded.contains(&major) {
        Err(Exclusion::MajorVersionExcluded(major))
    } else if !included.is_empty() {
        Err(Exclusion::MajorVersionNotRequired(major))
    } else {
        Ok(())
    }
}

/// `strconv.ParseUint(s, 10, 64)`: digits only, no sign.
fn parse_go_uint(token: &str) -> Option<u64> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

fn check_profile<'a>(
    profile: &str,
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(), Exclusion> {
    let annotation = format!("{PROFILE_ANNOTATION_PREFIX}{profile}");
    match get(&annotation) {
        Some("true") => Ok(()),
        Some(value) => Err(Exclusion::ProfileValue {
            value: value.to_string(),
            annotation,
        }),
        None => Err(Exclusion::ProfileUnset { annotation }),
    }
}

fn check_capabilities(
    manifest: &Manifest,
    filter: &CapabilityFilter,
    allow_unknown: bool,
) -> Result<(), Exclusion> {
    let Some(caps) = manifest.capabilities() else {
        return Ok(());
    };
    let mut unknown = Vec::new();
    let mut disabled = Vec::new();
    for cap in caps {
        if !allow_unknown && !filter.known_capabilities.contains(&cap) {
            unknown.push(cap);
        } else if !filter.enabled_capabilities.contains(&cap) {
            disabled.push(cap);
        }
    }
    if !unknown.is_empty() {
        Err(Exclusion::UnrecognizedCapabilities(unknown))
    } else if !disabled.is_empty() {
        Err(Exclusion::DisabledCapabilities(disabled))
    } else {
        Ok(())
    }
}

/// The first override naming this resource decides; a cluster-scoped manifest ignores the
/// override's namespace.
pub fn is_overridden(id: &ManifestId, overrides: &[ComponentOverride]) -> bool {
    overrides
        .iter()
        .find(|o| {
            let namespace = if id.namespace.is_empty() {
                ""
            } else {
                o.namespace.as_str()
            };
            o.group == id.group
                && o.kind == id.kind
                && o.name == id.name
                && namespace == id.namespace
        })
        .is_some_and(|o| o.unmanaged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{ManifestDir, parse_file};
    use std::sync::Arc;

    fn manifest(
        api_version: &str,
        kind: &str,
        namespace: &str,
        annotations: &[(&str, &str)],
    ) -> Manifest {
        let mut text = format!("apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: x\n");
        if !namespace.is_empty() {
            text.push_str(&format!("  namespace: {namespace}\n"));
        }
        text.push_str("  annotations:\n");
        for (k, v) in annotations {
            text.push_str(&format!("    {k}: {}\n", serde_json::to_string(v).unwrap()));
        }
        if annotations.is_empty() {
            text = text.replace("  annotations:\n", "  annotations: {}\n");
        }
        let (mut m, e) = parse_file("f.yaml", ManifestDir::ReleaseManifests, Arc::new(text));
        assert!(e.is_empty(), "{e:?}");
        m.remove(0)
    }

    fn cm(annotations: &[(&str, &str)]) -> Manifest {
        manifest("v1", "ConfigMap", "ns", annotations)
    }

    fn reason(m: &Manifest, config: &InclusionConfig) -> Option<String> {
        include(m, config).err().map(|e| e.to_string())
    }

    fn caps(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|n| Capability::from(*n)).collect()
    }

    #[test]
    fn no_annotations_excludes_even_with_every_filter_off() {
        let (m, _) = parse_file(
            "f.yaml",
            ManifestDir::ReleaseManifests,
            Arc::new("apiVersion: v1\nkind: A\nmetadata:\n  name: a\n".to_string()),
        );
        assert_eq!(
            reason(&m[0], &InclusionConfig::default()).as_deref(),
            Some("no annotations")
        );
        assert_eq!(reason(&cm(&[]), &InclusionConfig::default()), None);
    }

    #[test]
    fn exclude_identifier_needs_exactly_true() {
        let config = InclusionConfig {
            exclude_identifier: Some("hosted".into()),
            ..Default::default()
        };
        assert_eq!(
            reason(
                &cm(&[("exclude.release.openshift.io/hosted", "true")]),
                &config
            )
            .as_deref(),
            Some("exclude.release.openshift.io/hosted=true")
        );
        assert_eq!(
            reason(
                &cm(&[("exclude.release.openshift.io/hosted", "True")]),
                &config
            ),
            None
        );
    }

    #[test]
    fn feature_sets() {
        let config = |fs: &str| InclusionConfig {
            required_feature_set: Some(fs.into()),
            ..Default::default()
        };
        let tp = cm(&[(
            FEATURE_SET_ANNOTATION,
            "TechPreviewNoUpgrade,DevPreviewNoUpgrade",
        )]);
        assert_eq!(
            reason(&tp, &config("")).as_deref(),
            Some(
                r#""Default" is required, and release.openshift.io/feature-set=DevPreviewNoUpgrade,TechPreviewNoUpgrade"#
            )
        );
        assert_eq!(reason(&tp, &config("TechPreviewNoUpgrade")), None);
        assert_eq!(
            reason(&cm(&[(FEATURE_SET_ANNOTATION, "Default")]), &config("")),
            None
        );
        assert_eq!(
            reason(
                &cm(&[(FEATURE_SET_ANNOTATION, "Default,Bogus")]),
                &config("")
            )
            .as_deref(),
            Some(
                r#"unrecognized value "Bogus" in release.openshift.io/feature-set=Default,Bogus; known values are: CustomNoUpgrade,Default,DevPreviewNoUpgrade,OKD,TechPreviewNoUpgrade"#
            )
        );
        // No trimming: " Default" is not a known value.
        assert!(
            reason(
                &cm(&[(FEATURE_SET_ANNOTATION, "OKD, Default")]),
                &config("")
            )
            .unwrap()
            .starts_with("unrecognized value \" Default\"")
        );
        assert_eq!(reason(&cm(&[]), &config("TechPreviewNoUpgrade")), None);
    }

    #[test]
    fn feature_gates() {
        let gates = |g: &[&str]| InclusionConfig {
            enabled_feature_gates: Some(g.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        let m = cm(&[(FEATURE_GATE_ANNOTATION, " A , -B,,")]);
        assert_eq!(reason(&m, &gates(&["A"])), None);
        assert_eq!(
            reason(&m, &gates(&[])).as_deref(),
            Some("feature gate A is required but not enabled")
        );
        assert_eq!(
            reason(&m, &gates(&["A", "B"])).as_deref(),
            Some("feature gate B is enabled but manifest requires it to be disabled")
        );
        let both = cm(&[
            (FEATURE_GATE_ANNOTATION, "A"),
            (FEATURE_SET_ANNOTATION, "Default"),
        ]);
        let config = InclusionConfig {
            required_feature_set: Some(String::new()),
            ..gates(&["A"])
        };
        assert!(
            reason(&both, &config)
                .unwrap()
                .starts_with("both feature set and feature gate annotations are present")
        );
        // Only with both filters active.
        assert_eq!(reason(&both, &gates(&["A"])), None);
    }

    #[test]
    fn major_versions() {
        let config = |m: u64| InclusionConfig {
            major_version: Some(m),
            ..Default::default()
        };
        let crd = |v: &str| {
            manifest(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                &[(MAJOR_VERSION_ANNOTATION, v)],
            )
        };
        assert_eq!(reason(&crd("4"), &config(4)), None);
        assert_eq!(
            reason(&crd("5"), &config(4)).as_deref(),
            Some("major version 4 does not match any required versions")
        );
        assert_eq!(
            reason(&crd("-4"), &config(4)).as_deref(),
            Some("major version 4 matches excluded version 4")
        );
        assert_eq!(reason(&crd("-5"), &config(4)), None);
        assert_eq!(
            reason(&crd(" 4, -4 "), &config(4)).as_deref(),
            Some("inclusion and exclusion requirements overlap: [4]")
        );
        assert_eq!(
            reason(&crd("x"), &config(4)).as_deref(),
            Some(
                r#"invalid included major version "x" in annotation: strconv.ParseUint: parsing "x": invalid syntax"#
            )
        );
        assert_eq!(
            reason(&crd("-+1"), &config(4)).as_deref(),
            Some(
                r#"invalid excluded major version "+1" in annotation: strconv.ParseUint: parsing "+1": invalid syntax"#
            )
        );
        let fg = manifest(
            "config.openshift.io/v1",
            "FeatureGate",
            "",
            &[(MAJOR_VERSION_ANNOTATION, "5")],
        );
        assert_eq!(reason(&fg, &config(5)), None);
        assert_eq!(
            reason(&cm(&[(MAJOR_VERSION_ANNOTATION, "4")]), &config(4)).as_deref(),
            Some(
                "major version filtering is only supported for feature gates and custom resources"
            )
        );
    }

    #[test]
    fn profiles() {
        let config = InclusionConfig {
            profile: Some(DEFAULT_CLUSTER_PROFILE.into()),
            ..Default::default()
        };
        let key = "include.release.openshift.io/self-managed-high-availability";
        assert_eq!(reason(&cm(&[(key, "true")]), &config), None);
        assert_eq!(
            reason(
                &cm(&[(key, "false-except-for-the-config-operator")]),
                &config
            )
            .as_deref(),
            Some(
                "unrecognized value include.release.openshift.io/self-managed-high-availability=false-except-for-the-config-operator"
            )
        );
        assert_eq!(
            reason(&cm(&[]), &config).as_deref(),
            Some("include.release.openshift.io/self-managed-high-availability unset")
        );
    }

    #[test]
    fn capabilities_unknown_reported_before_disabled() {
        let config = InclusionConfig {
            capabilities: Some(CapabilityFilter {
                known_capabilities: caps(&["A", "B"]),
                enabled_capabilities: caps(&["A"]),
            }),
            ..Default::default()
        };
        let with = |v: &str| cm(&[("capability.openshift.io/name", v)]);
        assert_eq!(reason(&with("A"), &config), None);
        assert_eq!(
            reason(&with("A+B"), &config).as_deref(),
            Some("disabled capabilities: B")
        );
        assert_eq!(
            reason(&with("B+X+Y+B"), &config).as_deref(),
            Some("unrecognized capability names: X, Y")
        );
        assert_eq!(
            reason(&with("B+B"), &config).as_deref(),
            Some("disabled capabilities: B, B")
        );
        assert_eq!(
            reason(&with("A+"), &config).as_deref(),
            Some("unrecognized capability names: ")
        );
        assert_eq!(reason(&with(""), &config), None);
        let allow = InclusionConfig {
            allow_unknown_capabilities: true,
            ..config
        };
        assert_eq!(
            reason(&with("X"), &allow).as_deref(),
            Some("disabled capabilities: X")
        );
    }

    #[test]
    fn overrides_match_id_and_ignore_namespace_for_cluster_scoped() {
        let over = |ns: &str, unmanaged: bool| InclusionConfig {
            overrides: Some(vec![ComponentOverride {
                kind: "ConfigMap".into(),
                group: "".into(),
                namespace: ns.into(),
                name: "x".into(),
                unmanaged,
            }]),
            ..Default::default()
        };
        assert_eq!(
            reason(&cm(&[]), &over("ns", true)).as_deref(),
            Some("overridden")
        );
        assert_eq!(reason(&cm(&[]), &over("other", true)), None);
        assert_eq!(reason(&cm(&[]), &over("ns", false)), None);
        let cluster_scoped = manifest("v1", "ConfigMap", "", &[]);
        assert_eq!(
            reason(&cluster_scoped, &over("whatever", true)).as_deref(),
            Some("overridden")
        );
    }

    #[test]
    fn checks_run_in_upstream_order() {
        // Profile is checked after feature sets and before capabilities.
        let m = cm(&[
            (FEATURE_SET_ANNOTATION, "TechPreviewNoUpgrade"),
            ("capability.openshift.io/name", "X"),
        ]);
        let config = InclusionConfig {
            required_feature_set: Some(String::new()),
            profile: Some(DEFAULT_CLUSTER_PROFILE.into()),
            capabilities: Some(CapabilityFilter::default()),
            ..Default::default()
        };
        assert!(
            reason(&m, &config)
                .unwrap()
                .starts_with("\"Default\" is required")
        );
        let config = InclusionConfig {
            required_feature_set: Some("TechPreviewNoUpgrade".into()),
            ..config
        };
        assert!(reason(&m, &config).unwrap().ends_with(" unset"));
    }

    #[test]
    fn inclusion_config_json_uses_camel_case_and_missing_keys_disable_filters() {
        let config: InclusionConfig = serde_json::from_str(
            r#"{"requiredFeatureSet":"","profile":"single-node-developer","capabilities":{"knownCapabilities":["A"],"enabledCapabilities":[]},"enabledFeatureGates":["G"],"majorVersion":4}"#,
        )
        .unwrap();
        assert_eq!(config.exclude_identifier, None);
        assert_eq!(config.required_feature_set.as_deref(), Some(""));
        assert_eq!(config.major_version, Some(4));
        assert!(serde_json::from_str::<InclusionConfig>(r#"{"profil":"x"}"#).is_err());
    }

    #[test]
    fn cluster_facts_make_load_and_apply_time_filters() {
        let gates: BTreeSet<String> = ["G".to_string()].into();
        let filter = CapabilityFilter::default();
        let facts = ClusterFacts {
            exclude: Some("x".into()),
            feature_set: "TechPreviewNoUpgrade".into(),
            profile: String::new(),
            feature_gates: Some(gates.clone()),
            capabilities: Some(filter.clone()),
            overrides: vec![],
            major_version: Some(4),
        };
        let config = facts.inclusion();
        assert_eq!(config.profile.as_deref(), Some(DEFAULT_CLUSTER_PROFILE));
        assert_eq!(config.overrides, None, "no overrides: upstream's nil");
        // Load time: `Include(&exclude, &featureSet, &profile, nil, nil, gates, &major)`.
        let load = config.load_time();
        assert_eq!(load.exclude_identifier.as_deref(), Some("x"));
        assert_eq!(
            load.required_feature_set.as_deref(),
            Some("TechPreviewNoUpgrade")
        );
        assert_eq!(load.major_version, Some(4));
        assert_eq!((load.capabilities, load.overrides), (None, None));
        // Apply time: `Include(nil, nil, nil, &caps, overrides, gates, nil)`.
        let apply = ClusterFacts {
            overrides: vec![ComponentOverride::default()],
            ..facts
        }
        .inclusion()
        .apply_time();
        assert_eq!(
            apply,
            InclusionConfig {
                capabilities: Some(filter),
                overrides: Some(vec![ComponentOverride::default()]),
                enabled_feature_gates: Some(gates),
                ..Default::default()
            }
        );
        let tolerant = InclusionConfig {
            allow_unknown_capabilities: true,
            ..config
        };
        assert!(!tolerant.apply_time().allow_unknown_capabilities);
    }
}
