//! The inclusion flags shared by `render`, `explain`, `graph` and `hash`, and how they become
//! an [`InclusionConfig`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Deserialize;
use serde_json::Value;

use crate::capability::{CapabilitiesSpec, Capability, CapabilitySet, Registry, set_capabilities};
use crate::include::{
    ClusterFacts, ComponentOverride, DEFAULT_CLUSTER_PROFILE, InclusionConfig, KNOWN_FEATURE_SETS,
    KNOWN_PROFILES,
};
use crate::payload::Payload;
use crate::suggest::{did_you_mean, shown_list, unknown_value};

#[derive(Debug, Clone, Default, Args)]
pub struct InclusionArgs {
    /// A JSON InclusionConfig (camelCase keys); a missing key disables that filter. Replaces
    /// every other inclusion flag.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["exclude", "feature_set", "feature_gates", "cluster_profile", "capabilities_baseline", "additional_capabilities", "major_version", "install_config", "cluster_version"])]
    pub inclusion: Option<PathBuf>,
    /// Exclude manifests annotated exclude.release.openshift.io/ID=true (the CVO's EXCLUDE_MANIFESTS).
    #[arg(long, value_name = "ID")]
    pub exclude: Option<String>,
    /// Required feature set ("" is Default; TechPreviewNoUpgrade, DevPreviewNoUpgrade, CustomNoUpgrade, OKD).
    #[arg(long, value_name = "FS")]
    pub feature_set: Option<String>,
    /// Enabled feature gates, comma-separated.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub feature_gates: Option<Vec<String>>,
    /// Cluster profile (default: $CLUSTER_PROFILE, else self-managed-high-availability).
    #[arg(long, value_name = "P", env = "CLUSTER_PROFILE")]
    pub cluster_profile: Option<String>,
    /// Baseline capability set (None, v4.11 ... v4.18, vCurrent; default vCurrent).
    #[arg(long, value_name = "SET")]
    pub capabilities_baseline: Option<String>,
    /// Capabilities enabled on top of the baseline, comma-separated.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub additional_capabilities: Option<Vec<String>>,
    /// Cluster major version for release.openshift.io/major-version (default: from release-metadata).
    #[arg(long, value_name = "N")]
    pub major_version: Option<u64>,
    /// An OpenShift install-config: its featureSet and capabilities, as `oc adm release extract --included --install-config` reads them.
    #[arg(long, value_name = "FILE")]
    pub install_config: Option<PathBuf>,
    /// A ClusterVersion manifest: spec.capabilities, spec.overrides and status.capabilities.
    #[arg(long, value_name = "FILE")]
    pub cluster_version: Option<PathBuf>,
    /// Accept capability names this cvo does not know (a newer release's) in
    /// --additional-capabilities and in --inclusion, --install-config and --cluster-version
    /// files; without it they are an error.
    #[arg(long)]
    pub allow_unknown_capabilities: bool,
}

/// The parts of an install-config that matter here.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstallConfig {
    #[serde(default)]
    feature_set: Option<String>,
    #[serde(default)]
    capabilities: Option<CapabilitiesSpec>,
}

/// What a ClusterVersion manifest contributes.
#[derive(Debug, Default)]
struct ClusterVersionInput {
    capabilities: Option<CapabilitiesSpec>,
    overrides: Vec<ComponentOverride>,
    prior_enabled: Vec<Capability>,
}

/// What the names a user gives are checked against: the capabilities this cvo knows with
/// those the payloads declare, and the cluster profiles this project knows with those the
/// payloads' documents name. One payload's, or both of an update's (`cvo plan`: a name either
/// release knows is one an administrator may plan with).
#[derive(Debug, Clone)]
pub struct ValidNames {
    registry: Registry,
    profiles: Vec<String>,
    /// The payloads, for messages (`payloads/4.18.0`, `payloads/4.17.0 or payloads/4.18.0`).
    origin: String,
}

impl ValidNames {
    /// One payload's names.
    pub fn of(payload: &Payload) -> ValidNames {
        let mut profiles: Vec<String> = KNOWN_PROFILES.iter().map(|p| p.to_string()).collect();
        for p in payload.annotated_profiles() {
            if !profiles.contains(&p) {
                profiles.push(p);
            }
        }
        ValidNames {
            registry: payload.registry(),
            profiles,
            origin: payload.origin.clone(),
        }
    }

    /// The names either payload knows.
    pub fn of_either(a: &Payload, b: &Payload) -> ValidNames {
        let mut names = ValidNames::of(a);
        let declared = b.release.as_ref().map(|r| r.capabilities.as_slice());
        names.registry = names.registry.with_declared(declared.unwrap_or_default());
        for p in ValidNames::of(b).profiles {
            if !names.profiles.contains(&p) {
                names.profiles.push(p);
            }
        }
        if a.origin != b.origin {
            names.origin = format!("{} or {}", a.origin, b.origin);
        }
        names
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A profile must be one this project knows or one the payloads' documents name: any
    /// other includes nothing.
    fn check_profile(&self, origin: &str, profile: &str) -> Result<()> {
        if self.profiles.iter().any(|p| p == profile) {
            return Ok(());
        }
        let valid: Vec<&str> = self.profiles.iter().map(String::as_str).collect();
        bail!(
            "{origin}: unknown cluster profile {profile:?}{}: no document of {} names it, so a cluster with it would run nothing; valid values: {}",
            did_you_mean(profile, &valid),
            self.origin,
            shown_list(&valid)
        )
    }
}

/// A cluster's inclusion config, and the `spec.capabilities` it came from (`None` with an
/// `--inclusion` file, which gives the effective capabilities only).
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    pub config: InclusionConfig,
    pub spec: Option<CapabilitiesSpec>,
}

impl InclusionArgs {
    /// The full config (load-time filters plus capabilities and overrides). Every value read
    /// from a flag or a file is checked: an unknown profile, feature set or capability is an
    /// error naming where it came from.
    pub fn config(&self, payload: &Payload) -> Result<InclusionConfig> {
        Ok(self.cluster(payload, &ValidNames::of(payload))?.config)
    }

    /// The config of a cluster running `payload`, its names checked against `valid`, which
    /// may know more than `payload` (a capability only a newer release declares is then
    /// enabled but not known, as upstream keeps such a name).
    pub fn cluster(&self, payload: &Payload, valid: &ValidNames) -> Result<ClusterConfig> {
        // The capabilities this cvo knows, with those the payload declares.
        let registry = payload.registry();
        if let Some(path) = &self.inclusion {
            return Ok(ClusterConfig {
                config: self.inclusion_file(path, valid)?,
                spec: None,
            });
        }
        self.check_capabilities(
            "--additional-capabilities",
            &capability_list(&self.additional_capabilities),
            &valid.registry,
        )?;
        let install = self
            .install_config
            .as_deref()
            .map(|path| self.read_install_config(path, &valid.registry))
            .transpose()?
            .unwrap_or_default();
        let cluster_version = self
            .cluster_version
            .as_deref()
            .map(|path| self.read_cluster_version(path, &valid.registry))
            .transpose()?
            .unwrap_or_default();
        let feature_set = match &self.feature_set {
            Some(fs) => check_feature_set("--feature-set", fs)?,
            None => install.feature_set.unwrap_or_default(),
        };
        let profile = self
            .cluster_profile
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_CLUSTER_PROFILE.to_string());
        valid.check_profile(&profile_origin(&profile), &profile)?;
        let gates: Option<BTreeSet<String>> = match &self.feature_gates {
            Some(gates) => Some(
                gates
                    .iter()
                    .map(|g| g.trim().to_string())
                    .filter(|g| !g.is_empty())
                    .collect(),
            ),
            // oc derives the gates of an install-config's cluster from the payload itself.
            None if self.install_config.is_some() => {
                payload.feature_gates_for(&feature_set, &profile)
            }
            None => Some(BTreeSet::new()),
        };
        // oc applies no capability filter to an install-config without `capabilities`.
        let explicit_caps =
            self.capabilities_baseline.is_some() || self.additional_capabilities.is_some();
        let unfiltered =
            self.install_config.is_some() && install.capabilities.is_none() && !explicit_caps;
        let spec = self.capabilities_spec(install.capabilities.or(cluster_version.capabilities));
        let caps = set_capabilities(
            &registry,
            Some(&spec),
            &cluster_version.prior_enabled,
            gates.as_ref().unwrap_or(&BTreeSet::new()),
        );
        let facts = ClusterFacts {
            exclude: self.exclude.clone(),
            feature_set,
            profile,
            feature_gates: gates,
            capabilities: (!unfiltered).then(|| caps.filter()),
            overrides: cluster_version.overrides,
            major_version: self.major_version.or(payload.major_version()),
        };
        Ok(ClusterConfig {
            config: facts.inclusion(),
            spec: Some(spec),
        })
    }

    /// An `--inclusion` file, its values checked: `capabilities.knownCapabilities` declares
    /// names on top of this cvo's, so enabled ones must be among either.
    fn inclusion_file(&self, path: &Path, valid: &ValidNames) -> Result<InclusionConfig> {
        let text = read(path)?;
        let mut config: InclusionConfig = serde_json::from_str(&text).with_context(|| {
            format!("{}: not a valid InclusionConfig (JSON with camelCase keys excludeIdentifier, requiredFeatureSet, profile, capabilities, overrides, enabledFeatureGates, majorVersion, allowUnknownCapabilities)", path.display())
        })?;
        let at = |field: &str| format!("{}: {field}", path.display());
        if let Some(fs) = &config.required_feature_set {
            config.required_feature_set = Some(check_feature_set(&at("requiredFeatureSet"), fs)?);
        }
        if let Some(profile) = &config.profile {
            valid.check_profile(&at("profile"), profile)?;
        }
        if let Some(filter) = &config.capabilities {
            let known = (valid.registry.clone())
                .with_additional_known(filter.known_capabilities.iter().cloned());
            let enabled: Vec<Capability> = filter.enabled_capabilities.iter().cloned().collect();
            self.check_capabilities(&at("capabilities.enabledCapabilities"), &enabled, &known)?;
        }
        Ok(config)
    }

    /// Explicit flags win over a file's `capabilities`.
    fn capabilities_spec(&self, from_file: Option<CapabilitiesSpec>) -> CapabilitiesSpec {
        let mut spec = from_file.unwrap_or_default();
        if let Some(baseline) = &self.capabilities_baseline {
            spec.baseline_capability_set = Some(baseline.clone());
        }
        if let Some(additional) = &self.additional_capabilities {
            spec.additional_enabled_capabilities = capability_list(&Some(additional.clone()));
        }
        spec
    }

    /// Checks that need no payload, so that usage mistakes are reported before loading
    /// (capability names wait for the payload, which may declare some).
    pub fn validate(&self) -> Result<()> {
        if let Some(baseline) = &self.capabilities_baseline {
            check_baseline("--capabilities-baseline", baseline)?;
        }
        if let Some(fs) = &self.feature_set {
            check_feature_set("--feature-set", fs)?;
        }
        Ok(())
    }

    /// Capability names the user gave must be known, unless `--allow-unknown-capabilities`.
    pub(super) fn check_capabilities(
        &self,
        origin: &str,
        names: &[Capability],
        registry: &Registry,
    ) -> Result<()> {
        check_capabilities(origin, names, registry, self.allow_unknown_capabilities)
    }

    fn read_install_config(&self, path: &Path, registry: &Registry) -> Result<InstallConfig> {
        let value = read_document(path)?;
        let mut config: InstallConfig = serde_json::from_value(value)
            .with_context(|| format!("{}: not an install-config", path.display()))?;
        let at = |field: &str| format!("{}: {field}", path.display());
        if let Some(fs) = &config.feature_set {
            config.feature_set = Some(check_feature_set(&at("featureSet"), fs)?);
        }
        if let Some(spec) = &config.capabilities {
            self.check_spec(&at("capabilities"), spec, registry)?;
        }
        Ok(config)
    }

    /// A `capabilities` stanza: a known baseline, known additional capabilities.
    fn check_spec(&self, origin: &str, spec: &CapabilitiesSpec, registry: &Registry) -> Result<()> {
        if let Some(baseline) = spec.baseline_capability_set.as_deref() {
            // oc refuses an install-config whose baseline it does not know.
            check_baseline(&format!("{origin}.baselineCapabilitySet"), baseline)?;
        }
        self.check_capabilities(
            &format!("{origin}.additionalEnabledCapabilities"),
            &spec.additional_enabled_capabilities,
            registry,
        )
    }

    fn read_cluster_version(
        &self,
        path: &Path,
        registry: &Registry,
    ) -> Result<ClusterVersionInput> {
        let value = read_document(path)?;
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if kind != "ClusterVersion" || api_version != "config.openshift.io/v1" {
            bail!(
                "{}: expected a config.openshift.io/v1 ClusterVersion, found {api_version} {kind}",
                path.display()
            );
        }
        let field = |pointer: &str| value.pointer(pointer).cloned().filter(|v| !v.is_null());
        let at = |field: &str| format!("{}: {field}", path.display());
        let capabilities: Option<CapabilitiesSpec> = field("/spec/capabilities")
            .map(serde_json::from_value)
            .transpose()
            .with_context(|| at("spec.capabilities"))?;
        if let Some(spec) = &capabilities {
            self.check_spec(&at("spec.capabilities"), spec, registry)?;
        }
        let overrides: Vec<ComponentOverride> = field("/spec/overrides")
            .map(serde_json::from_value)
            .transpose()
            .with_context(|| at("spec.overrides"))?
            .unwrap_or_default();
        let prior_enabled: Vec<Capability> = field("/status/capabilities/enabledCapabilities")
            .map(serde_json::from_value)
            .transpose()
            .with_context(|| at("status.capabilities.enabledCapabilities"))?
            .unwrap_or_default();
        self.check_capabilities(
            &at("status.capabilities.enabledCapabilities"),
            &prior_enabled,
            registry,
        )?;
        Ok(ClusterVersionInput {
            capabilities,
            overrides,
            prior_enabled,
        })
    }
}

/// Where the profile came from, for messages: the flag, or the environment variable clap read
/// it from.
fn profile_origin(profile: &str) -> String {
    match std::env::var("CLUSTER_PROFILE") {
        Ok(env) if env == profile => "$CLUSTER_PROFILE".to_string(),
        _ => "--cluster-profile".to_string(),
    }
}

/// A feature set as the CVO spells it (`""` for Default, which is also accepted by name).
fn check_feature_set(origin: &str, value: &str) -> Result<String> {
    match value {
        "" | "Default" => Ok(String::new()),
        v if KNOWN_FEATURE_SETS.contains(&v) => Ok(v.to_string()),
        v => bail!(
            "{origin}: {} (Default is also written \"\")",
            unknown_value("feature set", v, KNOWN_FEATURE_SETS)
        ),
    }
}

fn check_baseline(origin: &str, value: &str) -> Result<()> {
    value
        .parse::<CapabilitySet>()
        .map(drop)
        .map_err(|e| anyhow::anyhow!("{origin}: {e}"))
}

/// Every unknown name at once, then the valid ones and the way out for a newer release's.
pub(super) fn check_capabilities(
    origin: &str,
    names: &[Capability],
    registry: &Registry,
    allow_unknown: bool,
) -> Result<()> {
    if allow_unknown {
        return Ok(());
    }
    let valid: Vec<&str> = registry.known().iter().map(Capability::as_str).collect();
    let unknown: Vec<String> = names
        .iter()
        .filter(|c| !registry.is_known(c))
        .map(|c| format!("{:?}{}", c.as_str(), did_you_mean(c.as_str(), &valid)))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    bail!(
        "{origin}: unknown capability {}; valid values: {}. For a capability a newer release knows, pass --allow-unknown-capabilities",
        unknown.join(", "),
        shown_list(&valid)
    )
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))
}

/// A YAML or JSON file as a JSON value, with Go's YAML semantics.
fn read_document(path: &Path) -> Result<Value> {
    let text = read(path)?;
    crate::yaml::parse_value(&text).map_err(|e| {
        let at = e
            .position
            .map(|p| format!(":{}:{}", p.line, p.column))
            .unwrap_or_default();
        anyhow::anyhow!("{}{at}: {}", path.display(), e.message)
    })
}

/// Comma-separated flag values into capabilities.
pub fn capability_list(values: &Option<Vec<String>>) -> Vec<Capability> {
    values
        .iter()
        .flatten()
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .map(Capability::from)
        .collect()
}
