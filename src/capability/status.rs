//! The effective-capability computation (`SetCapabilities`,
//! `SetFromImplicitlyEnabledCapabilities`, `GetCapabilitiesStatus`, spec §3.3)
//! and the `ImplicitlyEnabledCapabilities` condition (spec §4.4).

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize};

use super::registry::Registry;
use super::types::{Capability, CapabilitySet};

/// What the cluster asks for: `spec.capabilities` of a ClusterVersion.
/// A missing stanza (`None` at call sites) means the default baseline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilitiesSpec {
    /// Kept raw rather than as [`CapabilitySet`]: upstream turns an unknown
    /// baseline into an empty set instead of failing the sync, and an empty
    /// string means "default" (`vCurrent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_capability_set: Option<String>,
    /// Extra capabilities on top of the baseline; unknown names are kept.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub additional_enabled_capabilities: Vec<Capability>,
}

/// Go decodes `null` into a nil slice; serde's `default` alone rejects it.
fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Capability>, D::Error> {
    Ok(Option::<Vec<Capability>>::deserialize(d)?.unwrap_or_default())
}

/// The capabilities a sync works with. Go's nil sets are empty sets here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterCapabilities {
    /// Known to this binary, minus capabilities whose feature gates are off.
    pub known: BTreeSet<Capability>,
    /// Manifests for these are applied; may contain unknown names.
    pub enabled: BTreeSet<Capability>,
    /// Enabled although the spec does not ask for them (cannot be disabled).
    pub implicitly_enabled: BTreeSet<Capability>,
}

impl ClusterCapabilities {
    /// `status.capabilities` plus the implicit list, each byte-order sorted
    /// (a `BTreeSet<Capability>` iterates in byte order).
    pub fn status(&self) -> CapabilitiesStatus {
        CapabilitiesStatus {
            known_capabilities: self.known.iter().cloned().collect(),
            enabled_capabilities: self.enabled.iter().cloned().collect(),
            implicitly_enabled_capabilities: self.implicitly_enabled.iter().cloned().collect(),
        }
    }

    /// The per-task capability filter of these capabilities (known and enabled).
    pub fn filter(&self) -> crate::include::CapabilityFilter {
        crate::include::CapabilityFilter {
            known_capabilities: self.known.clone(),
            enabled_capabilities: self.enabled.clone(),
        }
    }

    /// Upstream's `ClusterCapabilities.Equal`: only `enabled` decides whether
    /// capabilities "changed" between syncs (and thus whether to re-apply).
    pub fn enabled_equal(&self, other: &Self) -> bool {
        self.enabled == other.enabled
    }
}

/// `status.capabilities` of a ClusterVersion (`enabledCapabilities`,
/// `knownCapabilities`) and the CVO's own implicit list. Empty lists are
/// omitted when serialized, like Go's `omitempty`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilitiesStatus {
    /// Byte-order sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known_capabilities: Vec<Capability>,
    /// Byte-order sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_capabilities: Vec<Capability>,
    /// Byte-order sorted; not part of the ClusterVersion API (upstream keeps
    /// it in the sync worker's status).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implicitly_enabled_capabilities: Vec<Capability>,
}

/// `SetCapabilities` (spec §3.3 steps 1–4).
///
/// `ensure_enabled` is what must stay enabled no matter what the spec says:
/// the previously enabled capabilities plus `--always-enable-capabilities`.
/// Those the spec does not request are recorded as implicitly enabled, which
/// is how "capabilities cannot be disabled" is enforced.
pub fn set_capabilities(
    registry: &Registry,
    spec: Option<&CapabilitiesSpec>,
    ensure_enabled: &[Capability],
    enabled_gates: &BTreeSet<String>,
) -> ClusterCapabilities {
    let excluded = registry.excluded_by_gates(enabled_gates);
    let mut enabled = requested(registry, spec);
    let implicitly_enabled = absorb(&mut enabled, ensure_enabled);
    ClusterCapabilities {
        known: without(registry.known().iter().cloned(), &excluded),
        enabled: without(enabled, &excluded),
        implicitly_enabled: without(implicitly_enabled, &excluded),
    }
}

/// Baseline members ∪ additional capabilities.
fn requested(registry: &Registry, spec: Option<&CapabilitiesSpec>) -> BTreeSet<Capability> {
    let mut enabled: BTreeSet<Capability> =
        baseline_members(registry, spec).iter().cloned().collect();
    if let Some(spec) = spec {
        enabled.extend(spec.additional_enabled_capabilities.iter().cloned());
    }
    enabled
}

/// Members of the requested baseline: `vCurrent` when unset or empty, the
/// empty set when the name is not a known set (upstream's map lookup miss).
fn baseline_members<'r>(
    registry: &'r Registry,
    spec: Option<&CapabilitiesSpec>,
) -> &'r [Capability] {
    let name = spec
        .and_then(|s| s.baseline_capability_set.as_deref())
        .filter(|b| !b.is_empty());
    let set = match name {
        None => Some(CapabilitySet::VCurrent),
        Some(name) => name.parse().ok(),
    };
    set.map_or(&[], |set| registry.set_members(set))
}

/// Adds every `ensure_enabled` capability missing from `enabled`, returning
/// the ones that had to be added.
fn absorb(
    enabled: &mut BTreeSet<Capability>,
    ensure_enabled: &[Capability],
) -> BTreeSet<Capability> {
    let mut added = BTreeSet::new();
    for cap in ensure_enabled {
        if !enabled.contains(cap) {
            added.insert(cap.clone());
            enabled.insert(cap.clone());
        }
    }
    added
}

fn without(
    caps: impl IntoIterator<Item = Capability>,
    excluded: &BTreeSet<Capability>,
) -> BTreeSet<Capability> {
    caps.into_iter().filter(|c| !excluded.contains(c)).collect()
}

/// `SetFromImplicitlyEnabledCapabilities`: after an update's implicit
/// enablement has been computed, it replaces the implicit set and every
/// implicit capability becomes enabled.
pub fn set_from_implicitly_enabled(
    implicit: &BTreeSet<Capability>,
    mut caps: ClusterCapabilities,
) -> ClusterCapabilities {
    caps.implicitly_enabled = implicit.clone();
    caps.enabled.extend(implicit.iter().cloned());
    caps
}

/// Condition type written by the CVO.
pub const IMPLICITLY_ENABLED_CONDITION_TYPE: &str = "ImplicitlyEnabledCapabilities";
/// Legacy condition type the CVO removes whenever it writes the one above
/// (OCPBUGS-56114 cleanup).
pub const LEGACY_IMPLICITLY_ENABLED_CONDITION_TYPE: &str = "ImplicitlyEnabled";

/// A ClusterVersion status condition without timestamps (the caller owns
/// `lastTransitionTime`, which only changes when `status` changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Condition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: &'static str,
    /// `"True"` or `"False"`.
    pub status: &'static str,
    /// CamelCase reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// `setImplicitlyEnabledCapabilitiesCondition` (spec §4.4): `True` with the
/// byte-order sorted list when anything is implicitly enabled, else `False`.
pub fn implicitly_enabled_condition(implicit: &BTreeSet<Capability>) -> Condition {
    if implicit.is_empty() {
        return Condition {
            type_: IMPLICITLY_ENABLED_CONDITION_TYPE,
            status: "False",
            reason: "AsExpected",
            message: "Capabilities match configured spec".to_owned(),
        };
    }
    let names: Vec<&str> = implicit.iter().map(Capability::as_str).collect();
    Condition {
        type_: IMPLICITLY_ENABLED_CONDITION_TYPE,
        status: "True",
        reason: "CapabilitiesImplicitlyEnabled",
        message: format!(
            "The following capabilities could not be disabled: {}",
            names.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All 19 in byte order, written out from spec §3.3.
    const ALL_SORTED: [&str; 19] = [
        "Build",
        "CSISnapshot",
        "CloudControllerManager",
        "CloudCredential",
        "ClusterAPI",
        "CompatibilityRequirements",
        "Console",
        "DeploymentConfig",
        "ImageRegistry",
        "Ingress",
        "Insights",
        "MachineAPI",
        "NodeTuning",
        "OperatorLifecycleManager",
        "OperatorLifecycleManagerV1",
        "Storage",
        "baremetal",
        "marketplace",
        "openshift-samples",
    ];

    /// The 17 ungated ones in byte order.
    const UNGATED_SORTED: [&str; 17] = [
        "Build",
        "CSISnapshot",
        "CloudControllerManager",
        "CloudCredential",
        "Console",
        "DeploymentConfig",
        "ImageRegistry",
        "Ingress",
        "Insights",
        "MachineAPI",
        "NodeTuning",
        "OperatorLifecycleManager",
        "OperatorLifecycleManagerV1",
        "Storage",
        "baremetal",
        "marketplace",
        "openshift-samples",
    ];

    const V4_11_SORTED: [&str; 4] = [
        "MachineAPI",
        "baremetal",
        "marketplace",
        "openshift-samples",
    ];

    fn caps(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|c| Capability::from(*c)).collect()
    }

    fn list(names: &[&str]) -> Vec<Capability> {
        names.iter().map(|c| Capability::from(*c)).collect()
    }

    fn gates(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|g| (*g).to_owned()).collect()
    }

    fn spec(baseline: Option<&str>, additional: &[&str]) -> CapabilitiesSpec {
        CapabilitiesSpec {
            baseline_capability_set: baseline.map(str::to_owned),
            additional_enabled_capabilities: list(additional),
        }
    }

    fn compute(s: Option<&CapabilitiesSpec>, ensure: &[&str], g: &[&str]) -> ClusterCapabilities {
        set_capabilities(&Registry::standard(), s, &list(ensure), &gates(g))
    }

    #[test]
    fn default_spec_is_vcurrent_minus_gated() {
        let empty = CapabilitiesSpec::default();
        let empty_string = spec(Some(""), &[]);
        for s in [None, Some(&empty), Some(&empty_string)] {
            let got = compute(s, &[], &[]);
            assert_eq!(got.known, caps(&UNGATED_SORTED));
            assert_eq!(got.enabled, caps(&UNGATED_SORTED));
            assert!(got.implicitly_enabled.is_empty());
        }
    }

    #[test]
    fn default_spec_with_all_gates_is_all_19_sorted() {
        let got = compute(None, &[], &["ClusterAPIMachineManagement"]);
        let status = got.status();
        let names = |v: &[Capability]| v.iter().map(|c| c.as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(names(&status.known_capabilities), ALL_SORTED);
        assert_eq!(names(&status.enabled_capabilities), ALL_SORTED);
        assert!(status.implicitly_enabled_capabilities.is_empty());
    }

    #[test]
    fn each_gate_unlocks_its_capabilities() {
        let crd = compute(None, &[], &["CRDCompatibilityRequirementOperator"]);
        let mut want: Vec<&str> = UNGATED_SORTED.to_vec();
        want.push("CompatibilityRequirements");
        assert_eq!(crd.known, caps(&want));
        assert_eq!(crd.enabled, caps(&want));
        assert!(!crd.known.contains("ClusterAPI"));

        let capi = compute(None, &[], &["ClusterAPIMachineManagement"]);
        assert_eq!(capi.known, caps(&ALL_SORTED));
    }

    #[test]
    fn gated_capabilities_are_dropped_from_every_set() {
        let s = spec(Some("None"), &["ClusterAPI", "CompatibilityRequirements"]);
        let got = compute(
            Some(&s),
            &["ClusterAPI", "CompatibilityRequirements", "Build"],
            &[],
        );
        assert_eq!(got.known, caps(&UNGATED_SORTED));
        assert_eq!(got.enabled, caps(&["Build"]));
        assert_eq!(got.implicitly_enabled, caps(&["Build"]));
    }

    // Ported from upstream TestSetCapabilities (behaviour; with today's tables).
    #[test]
    fn upstream_set_capabilities_table() {
        let cases: [(&str, CapabilitiesSpec, &[&str]); 6] = [
            ("None", spec(Some("None"), &[]), &[]),
            ("4_11", spec(Some("v4.11"), &[]), &V4_11_SORTED),
            ("vCurrent", spec(Some("vCurrent"), &[]), &UNGATED_SORTED),
            (
                "None with additional",
                spec(Some("None"), &["cap1", "cap2", "cap3"]),
                &["cap1", "cap2", "cap3"],
            ),
            (
                "4_11 with additional",
                spec(Some("v4.11"), &["cap1", "cap2", "cap3"]),
                &[
                    "MachineAPI",
                    "baremetal",
                    "marketplace",
                    "openshift-samples",
                    "cap1",
                    "cap2",
                    "cap3",
                ],
            ),
            (
                "v4.17 is v4.16",
                spec(Some("v4.17"), &[]),
                &[
                    "baremetal",
                    "Console",
                    "Insights",
                    "marketplace",
                    "Storage",
                    "openshift-samples",
                    "CSISnapshot",
                    "NodeTuning",
                    "MachineAPI",
                    "Build",
                    "DeploymentConfig",
                    "ImageRegistry",
                    "OperatorLifecycleManager",
                    "CloudCredential",
                    "Ingress",
                    "CloudControllerManager",
                ],
            ),
        ];
        for (name, s, want_enabled) in cases {
            let got = compute(Some(&s), &[], &[]);
            assert_eq!(got.known, caps(&UNGATED_SORTED), "{name}");
            assert_eq!(got.enabled, caps(want_enabled), "{name}");
            assert!(got.implicitly_enabled.is_empty(), "{name}");
        }
    }

    #[test]
    fn baseline_none_plus_additional() {
        let s = spec(Some("None"), &["baremetal", "Ingress"]);
        let got = compute(Some(&s), &[], &[]);
        assert_eq!(got.enabled, caps(&["Ingress", "baremetal"]));
        assert!(got.implicitly_enabled.is_empty());
    }

    #[test]
    fn unknown_additional_capability_is_enabled_but_not_known() {
        let s = spec(Some("v4.11"), &["cap1"]);
        let got = compute(Some(&s), &[], &[]);
        assert!(got.enabled.contains("cap1"));
        assert!(!got.known.contains("cap1"));
        let status = got.status();
        assert_eq!(
            status.enabled_capabilities,
            list(&[
                "MachineAPI",
                "baremetal",
                "cap1",
                "marketplace",
                "openshift-samples"
            ])
        );
    }

    // Ported from upstream TestSetCapabilitiesWithImplicitlyEnabled.
    #[test]
    fn ensure_enabled_is_recorded_as_implicit() {
        let s = spec(Some("v4.11"), &[]);
        let got = compute(Some(&s), &["cap1", "cap2", "cap3", "baremetal"], &[]);
        assert_eq!(got.implicitly_enabled, caps(&["cap1", "cap2", "cap3"]));
        let mut want: Vec<&str> = V4_11_SORTED.to_vec();
        want.extend(["cap1", "cap2", "cap3"]);
        assert_eq!(got.enabled, caps(&want));
    }

    #[test]
    fn always_enabled_ingress_with_baseline_none() {
        let s = spec(Some("None"), &[]);
        let got = compute(Some(&s), &["Ingress"], &[]);
        assert_eq!(got.enabled, caps(&["Ingress"]));
        assert_eq!(
            implicitly_enabled_condition(&got.implicitly_enabled).message,
            "The following capabilities could not be disabled: Ingress"
        );
    }

    #[test]
    fn unknown_baseline_yields_empty_set() {
        for bad in ["v4.99", "vcurrent", "none", " vCurrent"] {
            let s = spec(Some(bad), &["Console"]);
            let got = compute(Some(&s), &[], &[]);
            assert_eq!(got.enabled, caps(&["Console"]), "{bad}");
            assert_eq!(got.known, caps(&UNGATED_SORTED), "{bad}");
        }
    }

    #[test]
    fn additional_known_capabilities_are_known_and_in_vcurrent() {
        let reg = Registry::standard().with_additional_known([Capability::from("NewThing")]);
        let got = set_capabilities(&reg, None, &[], &gates(&[]));
        assert!(got.known.contains("NewThing"));
        assert!(got.enabled.contains("NewThing"));
        let s = spec(Some("v4.18"), &[]);
        let got = set_capabilities(&reg, Some(&s), &[], &gates(&[]));
        assert!(got.known.contains("NewThing"));
        assert!(!got.enabled.contains("NewThing"));
    }

    // Ported from upstream TestSetFromImplicitlyEnabledCapabilities.
    #[test]
    fn upstream_set_from_implicitly_enabled_table() {
        let mk = |known: &[&str], enabled: &[&str], implicit: &[&str]| ClusterCapabilities {
            known: caps(known),
            enabled: caps(enabled),
            implicitly_enabled: caps(implicit),
        };
        let five = ["cap1", "cap2", "cap3", "cap4", "cap5"];
        let cases = [
            (
                caps(&["cap2", "cap3", "cap4"]),
                mk(&five, &["cap1"], &["cap1"]),
                mk(
                    &five,
                    &["cap1", "cap2", "cap3", "cap4"],
                    &["cap2", "cap3", "cap4"],
                ),
            ),
            (
                caps(&["cap2"]),
                mk(&["cap1", "cap2"], &["cap1", "cap2"], &[]),
                mk(&["cap1", "cap2"], &["cap1", "cap2"], &["cap2"]),
            ),
            (
                caps(&[]),
                mk(&["cap1", "cap2"], &["cap1"], &["cap2"]),
                mk(&["cap1", "cap2"], &["cap1"], &[]),
            ),
        ];
        for (implicit, input, want) in cases {
            assert_eq!(set_from_implicitly_enabled(&implicit, input), want);
        }
    }

    // Ported from upstream TestGetCapabilitiesStatus.
    #[test]
    fn status_of_empty_and_single() {
        let empty = ClusterCapabilities::default().status();
        assert_eq!(empty, CapabilitiesStatus::default());
        assert_eq!(serde_json::to_string(&empty).ok().as_deref(), Some("{}"));

        let one = ClusterCapabilities {
            known: caps(&["openshift-samples"]),
            enabled: caps(&["openshift-samples"]),
            implicitly_enabled: caps(&[]),
        };
        let json = serde_json::to_value(one.status()).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({
                "knownCapabilities": ["openshift-samples"],
                "enabledCapabilities": ["openshift-samples"],
            })
        );
    }

    #[test]
    fn status_serializes_camel_case_sorted() {
        let got = compute(
            Some(&spec(Some("None"), &["baremetal"])),
            &["Storage", "Console"],
            &[],
        );
        let json = serde_json::to_value(got.status()).unwrap_or_default();
        assert_eq!(
            json["enabledCapabilities"],
            serde_json::json!(["Console", "Storage", "baremetal"])
        );
        assert_eq!(
            json["implicitlyEnabledCapabilities"],
            serde_json::json!(["Console", "Storage"])
        );
        assert_eq!(json["knownCapabilities"], serde_json::json!(UNGATED_SORTED));
    }

    #[test]
    fn enabled_equal_ignores_known_and_implicit() {
        let a = compute(None, &[], &[]);
        let b = ClusterCapabilities {
            known: BTreeSet::new(),
            implicitly_enabled: caps(&["Console"]),
            ..a.clone()
        };
        assert!(a.enabled_equal(&b));
        assert!(!a.enabled_equal(&compute(Some(&spec(Some("None"), &[])), &[], &[])));
    }

    #[test]
    fn spec_serde_matches_the_api() {
        let parsed: Option<CapabilitiesSpec> = serde_json::from_str(
            r#"{"baselineCapabilitySet":"None","additionalEnabledCapabilities":["baremetal","cap1"]}"#,
        )
        .ok();
        assert_eq!(parsed, Some(spec(Some("None"), &["baremetal", "cap1"])));
        let nulls: Option<CapabilitiesSpec> =
            serde_json::from_str(r#"{"additionalEnabledCapabilities":null}"#).ok();
        assert_eq!(nulls, Some(CapabilitiesSpec::default()));
        let empty: Option<CapabilitiesSpec> = serde_json::from_str("{}").ok();
        assert_eq!(empty, Some(CapabilitiesSpec::default()));
        let out = serde_json::to_string(&CapabilitiesSpec::default()).ok();
        assert_eq!(out.as_deref(), Some("{}"));
    }

    #[test]
    fn condition_false_text() {
        let c = implicitly_enabled_condition(&BTreeSet::new());
        assert_eq!(c.type_, "ImplicitlyEnabledCapabilities");
        assert_eq!(c.status, "False");
        assert_eq!(c.reason, "AsExpected");
        assert_eq!(c.message, "Capabilities match configured spec");
    }

    // Spec §4.4 example (upstream TestCVO_InitImplicitlyEnabledCaps): baseline
    // None + baremetal, prior status listed the 17 ungated capabilities.
    #[test]
    fn condition_true_long_example() {
        let s = spec(Some("None"), &["baremetal"]);
        let got = compute(Some(&s), &UNGATED_SORTED, &[]);
        let c = implicitly_enabled_condition(&got.implicitly_enabled);
        assert_eq!(c.type_, "ImplicitlyEnabledCapabilities");
        assert_eq!(c.status, "True");
        assert_eq!(c.reason, "CapabilitiesImplicitlyEnabled");
        assert_eq!(
            c.message,
            "The following capabilities could not be disabled: Build, CSISnapshot, \
             CloudControllerManager, CloudCredential, Console, DeploymentConfig, ImageRegistry, \
             Ingress, Insights, MachineAPI, NodeTuning, OperatorLifecycleManager, \
             OperatorLifecycleManagerV1, Storage, marketplace, openshift-samples"
        );
        assert_eq!(got.enabled, caps(&UNGATED_SORTED));
    }

    #[test]
    fn condition_serializes_with_type_key() {
        let c = implicitly_enabled_condition(&caps(&["Ingress"]));
        assert_eq!(
            serde_json::to_value(&c).unwrap_or_default(),
            serde_json::json!({
                "type": "ImplicitlyEnabledCapabilities",
                "status": "True",
                "reason": "CapabilitiesImplicitlyEnabled",
                "message": "The following capabilities could not be disabled: Ingress",
            })
        );
        assert_eq!(
            LEGACY_IMPLICITLY_ENABLED_CONDITION_TYPE,
            "ImplicitlyEnabled"
        );
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = Capability> {
        let known: Vec<Capability> = Registry::standard().known().to_vec();
        prop_oneof![
            3 => proptest::sample::select(known),
            1 => "[a-zA-Z-]{1,8}".prop_map(Capability::from),
        ]
    }

    fn baseline() -> impl Strategy<Value = Option<String>> {
        let sets: Vec<String> = CapabilitySet::all()
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        prop_oneof![
            1 => Just(None),
            1 => Just(Some(String::new())),
            4 => proptest::sample::select(sets).prop_map(Some),
            1 => "[a-zA-Z0-9.]{1,8}".prop_map(Some),
        ]
    }

    fn spec() -> impl Strategy<Value = Option<CapabilitiesSpec>> {
        let s = (baseline(), proptest::collection::vec(name(), 0..6)).prop_map(|(b, a)| {
            CapabilitiesSpec {
                baseline_capability_set: b,
                additional_enabled_capabilities: a,
            }
        });
        proptest::option::weighted(0.8, s)
    }

    fn gate_set() -> impl Strategy<Value = BTreeSet<String>> {
        let pool = vec![
            "CRDCompatibilityRequirementOperator".to_owned(),
            "ClusterAPIMachineManagement".to_owned(),
            "SomethingElse".to_owned(),
        ];
        proptest::sample::subsequence(pool, 0..=3).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        /// Capabilities never get disabled: whatever was enabled before stays
        /// enabled unless its feature gate went away.
        #[test]
        fn enabled_never_shrinks(
            s in spec(),
            prior in proptest::collection::vec(name(), 0..10),
            g in gate_set(),
        ) {
            let reg = Registry::standard();
            let got = set_capabilities(&reg, s.as_ref(), &prior, &g);
            let excluded = reg.excluded_by_gates(&g);
            for cap in &prior {
                if got.known.contains(cap) {
                    prop_assert!(got.enabled.contains(cap), "{cap} dropped");
                }
                if !excluded.contains(cap) {
                    prop_assert!(got.enabled.contains(cap), "{cap} dropped");
                }
            }
            prop_assert!(got.implicitly_enabled.is_subset(&got.enabled));
            prop_assert!(got.known.is_disjoint(&excluded));
            prop_assert!(got.enabled.is_disjoint(&excluded));
            let requested = set_capabilities(&reg, s.as_ref(), &[], &g).enabled;
            prop_assert!(got.implicitly_enabled.is_disjoint(&requested));
        }

        /// Feeding the result back as the next sync's prior set is a fixed
        /// point: the enabled set stays the same.
        #[test]
        fn resync_is_stable(s in spec(), prior in proptest::collection::vec(name(), 0..10), g in gate_set()) {
            let reg = Registry::standard();
            let first = set_capabilities(&reg, s.as_ref(), &prior, &g);
            let again: Vec<Capability> = first.enabled.iter().cloned().collect();
            let second = set_capabilities(&reg, s.as_ref(), &again, &g);
            prop_assert!(first.enabled_equal(&second));
        }
    }
}
