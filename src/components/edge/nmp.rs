//! Node management policies (spec B.2): the schema as the exchange stores it and its validation
//! (anax's and the exchange's rules), with the seed design's form accepted and translated. Pure.
//! [`applies`] decides which NMPs apply to a node; the per-node worker is `nmp_worker`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::constraints::eval::{self, PolicySide};
use super::exchange::NodePolicy;
use super::properties::Property;

/// `agentUpgradePolicy`: the shipped `{manifest, allowDowngrade}`, plus the seed's
/// `{atLeastVersion, start, duration}` (exchange issue #537), which the exchange model ignores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentUpgradePolicy {
    pub manifest: String,
    pub allow_downgrade: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<i64>,
}

/// An NMP in the exchange's JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ManagementPolicy {
    pub owner: String,
    pub label: String,
    pub description: String,
    pub constraints: Vec<String>,
    pub properties: Vec<Property>,
    pub patterns: Vec<String>,
    pub enabled: bool,
    pub start: String,
    pub start_window: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_upgrade_policy: Option<AgentUpgradePolicy>,
    pub last_updated: String,
    pub created: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NmpError {
    /// The exchange's 400.
    #[error("you can not specify both constraints and patterns")]
    ConstraintsAndPatterns,
    /// anax's validation.
    #[error("The start time must be in RFC3339 format or set to \"now\".")]
    Start,
    #[error(
        "pattern \"*\" is the seed design's wildcard: the shipped node management policy has none; list the patterns it applies to, as org/name or name"
    )]
    PatternWildcard,
}

/// A validated policy, the warnings about what was changed, and for the seed's
/// `atLeastVersion` the upgrade manifest it stands for (to store in the CSS under
/// `agentUpgradePolicy.manifest`).
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    pub policy: ManagementPolicy,
    pub warnings: Vec<String>,
    pub seed_manifest: Option<Value>,
    /// The seed's `atLeastVersion X` as a minimum: a node at X or newer is not upgraded.
    pub seed_minimum: Option<String>,
}

/// Validates and normalises an NMP as the exchange and anax do: `start` empty is `now`, a
/// negative `startWindow` is 0, an empty `description` is the label; the seed's
/// `agentUpgradePolicy {atLeastVersion, start, duration}` becomes `start`, `startWindow` and an
/// upgrade manifest (`atLeastVersion: current` is `latest`).
pub fn validate(mut policy: ManagementPolicy) -> Result<Validated, NmpError> {
    if !policy.constraints.is_empty() && !policy.patterns.is_empty() {
        return Err(NmpError::ConstraintsAndPatterns);
    }
    if policy.patterns.iter().any(|p| p == "*") {
        return Err(NmpError::PatternWildcard);
    }
    let mut warnings = Vec::new();
    let mut seed_manifest = None;
    let mut seed_minimum = None;
    if let Some(upgrade) = policy.agent_upgrade_policy.as_mut() {
        if let Some(start) = upgrade.start.take() {
            warnings.push(format!(
                "agentUpgradePolicy.start {start:?} (seed) is the shipped top-level start"
            ));
            if policy.start.is_empty() || policy.start == "now" {
                policy.start = start;
            }
        }
        if let Some(duration) = upgrade.duration.take() {
            warnings.push(format!(
                "agentUpgradePolicy.duration {duration} (seed) is the shipped startWindow"
            ));
            if policy.start_window == 0 {
                policy.start_window = duration;
            }
        }
        if let Some(version) = upgrade.at_least_version.take() {
            // "At least X" is a minimum for the agent's software: a node below X gets the
            // highest available version from X up, a node at X or newer is left alone; the
            // config and certificate, numbered on their own, are not touched. `current` is
            // whatever the hub has last.
            let wanted = match version.as_str() {
                "current" => "latest".to_owned(),
                _ => {
                    seed_minimum = Some(version.clone());
                    format!("[{version},INFINITY)")
                }
            };
            warnings.push(format!(
                "agentUpgradePolicy.atLeastVersion (seed) is an upgrade manifest in the shipped system: store the manifest given and name it in agentUpgradePolicy.manifest (software at {wanted}, the highest available version at least the one given, for nodes below it; config and certificate untouched)"
            ));
            seed_manifest = Some(json!({
                "softwareUpgrade": {"files": ["*"], "version": wanted},
            }));
        }
    }
    if policy.start.is_empty() {
        policy.start = "now".into();
    }
    if policy.start != "now" && policy.start.parse::<jiff::Timestamp>().is_err() {
        return Err(NmpError::Start);
    }
    policy.start_window = policy.start_window.max(0);
    if policy.description.is_empty() {
        policy.description = policy.label.clone();
    }
    Ok(Validated {
        policy,
        warnings,
        seed_manifest,
        seed_minimum,
    })
}

/// Whether an NMP applies to a node (anax `nodemanagement.VerifyCompatible`). A pattern node,
/// or an NMP that lists patterns: the NMP's patterns hold the node's `org/name` or its bare name
/// (no wildcard). Otherwise a policy node: no node policy, no match; else bidirectional
/// compatibility of the NMP with the node policy's management view (top-level properties
/// overlaid by `management.properties`; `management.constraints` if any, else the top level's).
pub fn applies(
    node_policy: Option<&NodePolicy>,
    node_pattern: &str,
    nmp: &ManagementPolicy,
) -> bool {
    if !node_pattern.is_empty() || !nmp.patterns.is_empty() {
        let bare = node_pattern
            .split_once('/')
            .map_or(node_pattern, |(_, name)| name);
        return !node_pattern.is_empty()
            && nmp.patterns.iter().any(|p| p == node_pattern || p == bare);
    }
    let Some(node_policy) = node_policy else {
        return false;
    };
    let node = node_policy.section(&node_policy.management);
    let producer = PolicySide {
        properties: node.properties,
        constraints: node.constraints,
    };
    let consumer = PolicySide {
        properties: nmp.properties.clone(),
        constraints: nmp.constraints.clone(),
    };
    eval::are_compatible(&producer, &consumer).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applicability() {
        let node_policy: NodePolicy = serde_json::from_str(
            r#"{"properties": [{"name": "purpose", "value": "edge"}, {"name": "ring", "value": 1}],
                "constraints": ["team == a"],
                "management": {"properties": [{"name": "ring", "value": 2}]}}"#,
        )
        .unwrap();
        let pattern_nmp = nmp(r#"{"patterns": ["org/web", "db"]}"#);
        let policy_nmp = |c: &str, props: &str| {
            nmp(&format!(
                r#"{{"constraints": [{c:?}], "properties": {props}}}"#
            ))
        };
        let team_a = r#"[{"name": "team", "value": "a"}]"#;
        let cases = [
            // Patterns: full id or bare name; no match across kinds.
            (None, "org/web", &pattern_nmp, true),
            (None, "other/db", &pattern_nmp, true),
            (None, "org/api", &pattern_nmp, false),
            (Some(&node_policy), "", &pattern_nmp, false),
            (
                Some(&node_policy),
                "org/web",
                &policy_nmp("ring == 2", team_a),
                false,
            ),
            // Policy nodes: both directions, the management overlay.
            (
                Some(&node_policy),
                "",
                &policy_nmp("ring == 2", team_a),
                true,
            ),
            (
                Some(&node_policy),
                "",
                &policy_nmp("ring == 1", team_a),
                false,
            ),
            (
                Some(&node_policy),
                "",
                &policy_nmp("purpose == edge", "[]"),
                false,
            ),
            (None, "", &policy_nmp("ring == 2", team_a), false),
        ];
        for (policy, pattern, nmp, want) in cases {
            assert_eq!(applies(policy, pattern, nmp), want, "{pattern} {nmp:?}");
        }
        // management.constraints replace the top level's.
        let mut managed = node_policy.clone();
        managed.management.constraints = vec!["ok == true".into()];
        let ok = nmp(r#"{"constraints": [], "properties": [{"name": "ok", "value": true}]}"#);
        assert!(applies(Some(&managed), "", &ok));
        assert!(!applies(Some(&node_policy), "", &ok));
    }

    fn nmp(text: &str) -> ManagementPolicy {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_shipped_rules() {
        let cases: &[(&str, Result<(), NmpError>)] = &[
            (r#"{"label": "a", "constraints": ["x == 1"]}"#, Ok(())),
            (r#"{"patterns": ["org/p", "p"]}"#, Ok(())),
            (
                r#"{"constraints": ["x == 1"], "patterns": ["p"]}"#,
                Err(NmpError::ConstraintsAndPatterns),
            ),
            (r#"{"patterns": ["*"]}"#, Err(NmpError::PatternWildcard)),
            (r#"{"start": "2026-01-02T03:04:05Z"}"#, Ok(())),
            (r#"{"start": "2026-01-02T03:04:05+02:00"}"#, Ok(())),
            (r#"{"start": "2026-01-02 03:04:05"}"#, Err(NmpError::Start)),
            (r#"{"start": "tomorrow"}"#, Err(NmpError::Start)),
            (r#"{"start": "NOW"}"#, Err(NmpError::Start)),
        ];
        for (text, want) in cases {
            assert_eq!(validate(nmp(text)).map(|_| ()), *want, "{text}");
        }
        let v = validate(nmp(r#"{"label": "l", "startWindow": -5}"#)).unwrap();
        assert_eq!(v.policy.start, "now");
        assert_eq!(v.policy.start_window, 0);
        assert_eq!(v.policy.description, "l");
        assert!(v.warnings.is_empty() && v.seed_manifest.is_none());
        assert_eq!(
            NmpError::PatternWildcard.to_string(),
            "pattern \"*\" is the seed design's wildcard: the shipped node management policy has none; list the patterns it applies to, as org/name or name"
        );
    }

    #[test]
    fn the_seed_upgrade_policy_is_translated() {
        let v = validate(nmp(
            r#"{"label": "up", "patterns": ["org/p"], "enabled": true,
                "agentUpgradePolicy": {"atLeastVersion": "current", "start": "2026-03-01T00:00:00Z", "duration": 3600}}"#,
        ))
        .unwrap();
        assert_eq!(v.policy.start, "2026-03-01T00:00:00Z");
        assert_eq!(v.policy.start_window, 3600);
        let upgrade = v.policy.agent_upgrade_policy.as_ref().unwrap();
        assert_eq!(upgrade, &AgentUpgradePolicy::default());
        assert_eq!(
            v.seed_manifest.unwrap()["softwareUpgrade"]["version"],
            "latest"
        );
        assert_eq!(v.warnings.len(), 3, "{:?}", v.warnings);
        // At least a version: the range from it up, said in the warning.
        let v = validate(nmp(
            r#"{"patterns": ["p"], "agentUpgradePolicy": {"atLeastVersion": "2.30.0"}}"#,
        ))
        .unwrap();
        assert_eq!(
            v.seed_manifest.unwrap()["softwareUpgrade"]["version"],
            "[2.30.0,INFINITY)"
        );
        assert!(
            v.warnings[0].contains("at [2.30.0,INFINITY)"),
            "{:?}",
            v.warnings
        );
        // The seed's start is validated like the shipped one.
        let bad = nmp(r#"{"agentUpgradePolicy": {"start": "soon"}}"#);
        assert_eq!(validate(bad), Err(NmpError::Start));
        // The shipped fields win over the seed's.
        let both = nmp(r#"{"start": "2026-01-01T00:00:00Z", "startWindow": 60,
            "agentUpgradePolicy": {"manifest": "m", "start": "2027-01-01T00:00:00Z", "duration": 5}}"#);
        let v = validate(both).unwrap();
        assert_eq!(
            (v.policy.start.as_str(), v.policy.start_window),
            ("2026-01-01T00:00:00Z", 60)
        );
        assert_eq!(v.policy.agent_upgrade_policy.unwrap().manifest, "m");
    }
}
