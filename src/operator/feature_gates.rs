//! The feature gates a pass includes manifests by, from the cluster's FeatureGate `cluster` as
//! upstream reads it (`pkg/featuregates` `ExtractEnabledGates`): the names `enabled` in the
//! `status.featureGates[]` entry of the payload's version, which the cluster's config operator
//! writes for every feature set, `CustomNoUpgrade` included. Pure.
//!
//! Where no config operator has written that entry (a cluster `cvo` installed alone), upstream
//! would have no gate enabled at all; this operator instead works the set out as the config
//! operator would: the payload's own FeatureGate manifest for the feature set (as `oc adm
//! release extract --included` does), and for `CustomNoUpgrade` the `Default` set with
//! `spec.customNoUpgrade.enabled` added and `disabled` removed.

use std::collections::{BTreeMap, BTreeSet};

use crate::payload::Payload;

/// What of the FeatureGate `cluster` decides the gates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFeatureGate {
    /// `spec.featureSet` (`""`: Default).
    pub feature_set: String,
    /// `spec.customNoUpgrade.enabled` and `.disabled`.
    pub custom_enabled: Vec<String>,
    pub custom_disabled: Vec<String>,
    /// `status.featureGates[]`: the enabled names by version.
    pub enabled_by_version: BTreeMap<String, BTreeSet<String>>,
}

const CUSTOM: &str = "CustomNoUpgrade";

impl ClusterFeatureGate {
    /// From the FeatureGate object (JSON); missing fields are empty.
    pub fn from_object(object: &serde_json::Value) -> Self {
        let names = |pointer: &str| -> Vec<String> {
            (object.pointer(pointer).and_then(|v| v.as_array()))
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        let enabled_by_version = (object.pointer("/status/featureGates"))
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let version = entry.get("version")?.as_str()?.to_string();
                let enabled = (entry.get("enabled").and_then(|e| e.as_array()))
                    .into_iter()
                    .flatten()
                    .filter_map(|g| Some(g.get("name")?.as_str()?.to_string()))
                    .collect();
                Some((version, enabled))
            })
            .collect();
        ClusterFeatureGate {
            feature_set: (object.pointer("/spec/featureSet"))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string(),
            custom_enabled: names("/spec/customNoUpgrade/enabled"),
            custom_disabled: names("/spec/customNoUpgrade/disabled"),
            enabled_by_version,
        }
    }
}

/// Where a pass's gates came from (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateSource {
    /// The FeatureGate's status for the payload's version (upstream's only source).
    ClusterStatus,
    /// Worked out from the payload and `spec` (no status entry for the version).
    Payload,
}

/// The gates enabled for `payload` on a cluster whose FeatureGate is `gate` (`None`: there is
/// none, the Default feature set), with the profile's payload FeatureGate manifests as the
/// fallback.
pub fn enabled_gates(
    gate: Option<&ClusterFeatureGate>,
    payload: &Payload,
    profile: &str,
) -> (BTreeSet<String>, GateSource) {
    let version = payload.version().unwrap_or_default();
    if let Some(enabled) = gate.and_then(|g| g.enabled_by_version.get(version)) {
        return (enabled.clone(), GateSource::ClusterStatus);
    }
    let feature_set = gate.map_or("", |g| g.feature_set.as_str());
    let from_payload = |set: &str| payload.feature_gates_for(set, profile).unwrap_or_default();
    let gates = match gate.filter(|g| g.feature_set == CUSTOM) {
        Some(custom) => {
            let mut gates = from_payload("");
            gates.extend(custom.custom_enabled.iter().cloned());
            for disabled in &custom.custom_disabled {
                gates.remove(disabled);
            }
            gates
        }
        None => from_payload(feature_set),
    };
    (gates, GateSource::Payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundled() -> Payload {
        let options = crate::payload::LoadOptions {
            cluster_profile: "self-managed-high-availability".into(),
            ..Default::default()
        };
        Payload::from_input(crate::payload::source::bundled_input(), &options).unwrap()
    }

    #[test]
    fn the_status_entry_of_the_payload_version_wins() {
        let payload = bundled();
        let gate = ClusterFeatureGate::from_object(&json!({
            "spec": {"featureSet": "TechPreviewNoUpgrade"},
            "status": {"featureGates": [
                {"version": "4.17.0", "enabled": [{"name": "Old"}]},
                {"version": "4.18.0", "enabled": [{"name": "GatewayAPIWithoutOLM"}, {"name": "B"}],
                 "disabled": [{"name": "C"}]},
            ]}
        }));
        let (gates, source) =
            enabled_gates(Some(&gate), &payload, "self-managed-high-availability");
        assert_eq!(source, GateSource::ClusterStatus);
        assert_eq!(
            gates,
            BTreeSet::from(["B".to_string(), "GatewayAPIWithoutOLM".to_string()])
        );
    }

    #[test]
    fn custom_no_upgrade_without_status_is_default_plus_and_minus_the_spec() {
        let payload = bundled();
        let profile = "self-managed-high-availability";
        let (default, source) = enabled_gates(None, &payload, profile);
        assert_eq!(source, GateSource::Payload);
        let gate = ClusterFeatureGate::from_object(&json!({
            "spec": {"featureSet": "CustomNoUpgrade",
                     "customNoUpgrade": {"enabled": ["GatewayAPIWithoutOLM"], "disabled": []}},
        }));
        assert_eq!(gate.custom_enabled, ["GatewayAPIWithoutOLM"]);
        let (custom, _) = enabled_gates(Some(&gate), &payload, profile);
        let mut expected = default.clone();
        expected.insert("GatewayAPIWithoutOLM".into());
        assert_eq!(custom, expected);
        // Disabling what it enables: back to Default.
        let gate = ClusterFeatureGate {
            custom_disabled: vec!["GatewayAPIWithoutOLM".into()],
            ..gate
        };
        assert_eq!(enabled_gates(Some(&gate), &payload, profile).0, default);
    }
}
