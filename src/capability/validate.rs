//! The API server's CEL rules on `spec.capabilities` (spec §3.4), so that
//! offline tools reject what a real cluster would reject, with the same text.

use std::collections::BTreeSet;

use super::names;
use super::status::CapabilitiesSpec;
use super::types::Capability;

/// "`capability` needs `requires`", optionally only for one baseline.
struct Dependency {
    capability: &'static str,
    requires: &'static str,
    /// The rule only fires with this exact `baselineCapabilitySet`.
    only_with_baseline: Option<&'static str>,
}

/// In upstream rule order.
const RULES: [Dependency; 2] = [
    Dependency {
        capability: names::MARKETPLACE,
        requires: names::OPERATOR_LIFECYCLE_MANAGER,
        only_with_baseline: Some("None"),
    },
    Dependency {
        capability: names::CLUSTER_API,
        requires: names::COMPATIBILITY_REQUIREMENTS,
        only_with_baseline: None,
    },
];

/// Messages of every violated rule (empty = valid). `status_enabled` is the
/// cluster's current `status.capabilities.enabledCapabilities`: a dependency
/// that is already (possibly implicitly) enabled satisfies the rule.
pub fn validate_spec(
    spec: &CapabilitiesSpec,
    status_enabled: &BTreeSet<Capability>,
) -> Vec<String> {
    RULES
        .iter()
        .filter(|rule| violated(rule, spec, status_enabled))
        .map(message)
        .collect()
}

fn violated(
    rule: &Dependency,
    spec: &CapabilitiesSpec,
    status_enabled: &BTreeSet<Capability>,
) -> bool {
    let additional = &spec.additional_enabled_capabilities;
    let has = |name: &str| additional.iter().any(|c| c.as_str() == name);
    let baseline_matches = rule
        .only_with_baseline
        .is_none_or(|b| spec.baseline_capability_set.as_deref() == Some(b));
    baseline_matches
        && has(rule.capability)
        && !has(rule.requires)
        && !status_enabled.contains(rule.requires)
}

fn message(rule: &Dependency) -> String {
    format!(
        "the `{cap}` capability requires the `{req}` capability, which is neither explicitly or \
         implicitly enabled in this cluster, please enable the `{req}` capability",
        cap = rule.capability,
        req = rule.requires,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKETPLACE_MSG: &str = "the `marketplace` capability requires the `OperatorLifecycleManager` capability, which is neither explicitly or implicitly enabled in this cluster, please enable the `OperatorLifecycleManager` capability";
    const CLUSTER_API_MSG: &str = "the `ClusterAPI` capability requires the `CompatibilityRequirements` capability, which is neither explicitly or implicitly enabled in this cluster, please enable the `CompatibilityRequirements` capability";

    fn spec(baseline: Option<&str>, additional: &[&str]) -> CapabilitiesSpec {
        CapabilitiesSpec {
            baseline_capability_set: baseline.map(str::to_owned),
            additional_enabled_capabilities: additional
                .iter()
                .map(|c| Capability::from(*c))
                .collect(),
        }
    }

    fn caps(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|c| Capability::from(*c)).collect()
    }

    #[test]
    fn marketplace_without_olm_on_baseline_none() {
        let got = validate_spec(&spec(Some("None"), &["marketplace"]), &caps(&[]));
        assert_eq!(got, [MARKETPLACE_MSG]);
    }

    #[test]
    fn marketplace_satisfied_by_additional_or_status() {
        let s = spec(Some("None"), &["marketplace", "OperatorLifecycleManager"]);
        assert!(validate_spec(&s, &caps(&[])).is_empty());
        let s = spec(Some("None"), &["marketplace"]);
        assert!(validate_spec(&s, &caps(&["OperatorLifecycleManager"])).is_empty());
    }

    #[test]
    fn marketplace_rule_only_applies_to_baseline_none() {
        for baseline in [None, Some(""), Some("v4.11"), Some("vCurrent")] {
            let s = spec(baseline, &["marketplace"]);
            assert!(validate_spec(&s, &caps(&[])).is_empty(), "{baseline:?}");
        }
    }

    #[test]
    fn cluster_api_needs_compatibility_requirements() {
        for baseline in [None, Some("None"), Some("vCurrent")] {
            let s = spec(baseline, &["ClusterAPI"]);
            assert_eq!(
                validate_spec(&s, &caps(&[])),
                [CLUSTER_API_MSG],
                "{baseline:?}"
            );
        }
        let s = spec(None, &["ClusterAPI", "CompatibilityRequirements"]);
        assert!(validate_spec(&s, &caps(&[])).is_empty());
        let s = spec(None, &["ClusterAPI"]);
        assert!(validate_spec(&s, &caps(&["CompatibilityRequirements"])).is_empty());
    }

    #[test]
    fn both_rules_report_in_order() {
        let s = spec(Some("None"), &["ClusterAPI", "marketplace"]);
        assert_eq!(
            validate_spec(&s, &caps(&[])),
            [MARKETPLACE_MSG, CLUSTER_API_MSG]
        );
    }

    #[test]
    fn plain_specs_are_valid() {
        assert!(validate_spec(&CapabilitiesSpec::default(), &caps(&[])).is_empty());
        let s = spec(Some("None"), &["baremetal", "cap1"]);
        assert!(validate_spec(&s, &caps(&[])).is_empty());
    }
}
