//! The inclusion flags shared by `render`, `explain`, `graph` and `hash`, and how they become
//! an [`InclusionConfig`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Deserialize;
use serde_json::Value;

use crate::capability::{CapabilitiesSpec, Capability, Registry, set_capabilities};
use crate::include::{ClusterFacts, ComponentOverride, DEFAULT_CLUSTER_PROFILE, InclusionConfig};
use crate::payload::Payload;

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

impl InclusionArgs {
    /// The full config (load-time filters plus capabilities and overrides).
    pub fn config(&self, payload: &Payload) -> Result<InclusionConfig> {
        if let Some(path) = &self.inclusion {
            let text = read(path)?;
            return serde_json::from_str(&text).with_context(|| {
                format!("{}: not a valid InclusionConfig (JSON with camelCase keys excludeIdentifier, requiredFeatureSet, profile, capabilities, overrides, enabledFeatureGates, majorVersion, allowUnknownCapabilities)", path.display())
            });
        }
        let install = self
            .install_config
            .as_deref()
            .map(read_install_config)
            .transpose()?
            .unwrap_or_default();
        let cluster_version = self
            .cluster_version
            .as_deref()
            .map(read_cluster_version)
            .transpose()?
            .unwrap_or_default();
        let feature_set = self
            .feature_set
            .clone()
            .or(install.feature_set)
            .unwrap_or_default();
        let profile = self
            .cluster_profile
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_CLUSTER_PROFILE.to_string());
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
            &Registry::standard(),
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
        Ok(facts.inclusion())
    }

    /// Explicit flags win over a file's `capabilities`.
    fn capabilities_spec(&self, from_file: Option<CapabilitiesSpec>) -> CapabilitiesSpec {
        let mut spec = from_file.unwrap_or_default();
        if let Some(baseline) = &self.capabilities_baseline {
            spec.baseline_capability_set = Some(baseline.clone());
        }
        if let Some(additional) = &self.additional_capabilities {
            spec.additional_enabled_capabilities = additional
                .iter()
                .map(|c| Capability::from(c.trim()))
                .collect();
        }
        spec
    }

    /// Checks that need no payload, so that usage mistakes are reported before loading.
    pub fn validate(&self) -> Result<()> {
        if let Some(baseline) = &self.capabilities_baseline {
            baseline
                .parse::<crate::capability::CapabilitySet>()
                .map_err(|e| anyhow::anyhow!("--capabilities-baseline: {e}"))?;
        }
        Ok(())
    }
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

fn read_install_config(path: &Path) -> Result<InstallConfig> {
    let value = read_document(path)?;
    let config: InstallConfig = serde_json::from_value(value)
        .with_context(|| format!("{}: not an install-config", path.display()))?;
    if let Some(spec) = &config.capabilities {
        check_baseline(path, spec)?;
    }
    Ok(config)
}

/// oc refuses an install-config whose baseline it does not know.
fn check_baseline(path: &Path, spec: &CapabilitiesSpec) -> Result<()> {
    match spec.baseline_capability_set.as_deref() {
        Some(b) if b.parse::<crate::capability::CapabilitySet>().is_err() => {
            bail!(
                "{}: unrecognized baselineCapabilitySet {b:?}",
                path.display()
            )
        }
        _ => Ok(()),
    }
}

fn read_cluster_version(path: &Path) -> Result<ClusterVersionInput> {
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
    let capabilities: Option<CapabilitiesSpec> = field("/spec/capabilities")
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{}: spec.capabilities", path.display()))?;
    let overrides: Vec<ComponentOverride> = field("/spec/overrides")
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{}: spec.overrides", path.display()))?
        .unwrap_or_default();
    let prior_enabled: Vec<Capability> = field("/status/capabilities/enabledCapabilities")
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| {
            format!(
                "{}: status.capabilities.enabledCapabilities",
                path.display()
            )
        })?
        .unwrap_or_default();
    Ok(ClusterVersionInput {
        capabilities,
        overrides,
        prior_enabled,
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
