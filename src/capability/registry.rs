//! The capability registry as data: which capabilities this binary knows,
//! which set contains which, and which are hidden behind feature gates
//! (spec §3.1, §3.2, §3.3 `excludedCapabilities`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::names;
use super::types::{Capability, CapabilitySet};

/// One row of the upstream tables.
struct Entry {
    /// Exact capability name.
    name: &'static str,
    /// The earliest set that contains it. Sets are cumulative upstream
    /// (each versioned set is a superset of the previous one), so this one
    /// field describes the whole `ClusterVersionCapabilitySets` map.
    first_set: CapabilitySet,
    /// Feature gates of which at least one must be enabled for the
    /// capability to exist at all; empty means "not gated".
    gates: &'static [&'static str],
}

const fn entry(name: &'static str, first_set: CapabilitySet) -> Entry {
    Entry {
        name,
        first_set,
        gates: &[],
    }
}

const fn gated(name: &'static str, gates: &'static [&'static str]) -> Entry {
    Entry {
        name,
        first_set: CapabilitySet::VCurrent,
        gates,
    }
}

/// `KnownClusterVersionCapabilities` in declaration order. `MachineAPI`'s
/// first set is v4.11 because upstream retro-added it to v4.11–v4.13.
const STANDARD: [Entry; 19] = [
    entry(names::BAREMETAL, CapabilitySet::V4_11),
    entry(names::CONSOLE, CapabilitySet::V4_12),
    entry(names::INSIGHTS, CapabilitySet::V4_12),
    entry(names::MARKETPLACE, CapabilitySet::V4_11),
    entry(names::STORAGE, CapabilitySet::V4_12),
    entry(names::OPENSHIFT_SAMPLES, CapabilitySet::V4_11),
    entry(names::CSI_SNAPSHOT, CapabilitySet::V4_12),
    entry(names::NODE_TUNING, CapabilitySet::V4_13),
    entry(names::MACHINE_API, CapabilitySet::V4_11),
    entry(names::BUILD, CapabilitySet::V4_14),
    entry(names::DEPLOYMENT_CONFIG, CapabilitySet::V4_14),
    entry(names::IMAGE_REGISTRY, CapabilitySet::V4_14),
    entry(names::OPERATOR_LIFECYCLE_MANAGER, CapabilitySet::V4_15),
    entry(names::OPERATOR_LIFECYCLE_MANAGER_V1, CapabilitySet::V4_18),
    entry(names::CLOUD_CREDENTIAL, CapabilitySet::V4_15),
    entry(names::INGRESS, CapabilitySet::V4_16),
    entry(names::CLOUD_CONTROLLER_MANAGER, CapabilitySet::V4_16),
    gated(
        names::COMPATIBILITY_REQUIREMENTS,
        &[
            names::GATE_CRD_COMPATIBILITY_REQUIREMENT_OPERATOR,
            names::GATE_CLUSTER_API_MACHINE_MANAGEMENT,
        ],
    ),
    gated(
        names::CLUSTER_API,
        &[names::GATE_CLUSTER_API_MACHINE_MANAGEMENT],
    ),
];

/// The capabilities a CVO binary knows about.
///
/// [`Registry::standard`] mirrors the compiled-in openshift/api tables;
/// [`Registry::with_additional_known`] lets CI pretend some not-yet-released
/// names are already in the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// Declaration order.
    known: Vec<Capability>,
    /// One entry per [`CapabilitySet::all`], in that order; members in
    /// declaration order.
    sets: Vec<(CapabilitySet, Vec<Capability>)>,
    /// Gated capabilities and the gates that unlock them (any one suffices).
    gated: Vec<(Capability, Vec<String>)>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::standard()
    }
}

impl Registry {
    /// The 19 upstream capabilities, the ten sets and the two gated ones.
    pub fn standard() -> Self {
        Self {
            known: STANDARD.iter().map(|e| Capability::from(e.name)).collect(),
            sets: CapabilitySet::all()
                .iter()
                .map(|&set| (set, standard_members(set)))
                .collect(),
            gated: STANDARD
                .iter()
                .filter(|e| !e.gates.is_empty())
                .map(|e| (Capability::from(e.name), gate_names(e.gates)))
                .collect(),
        }
    }

    /// Adds capabilities that are not in openshift/api yet (CI's
    /// `--known-capabilities-file`), so manifests naming them are judged as
    /// if the API already had them.
    ///
    /// Each new name is appended to the known list and to `vCurrent`, because
    /// upstream always puts a new capability into `vCurrent` (`vCurrent` ==
    /// every known capability) and never into the frozen versioned sets.
    /// Names already known are ignored; the new ones are never gated.
    pub fn with_additional_known(mut self, extra: impl IntoIterator<Item = Capability>) -> Self {
        for cap in extra {
            if self.is_known(&cap) {
                continue;
            }
            if let Some((_, members)) = self.sets_entry_mut(CapabilitySet::VCurrent) {
                members.push(cap.clone());
            }
            self.known.push(cap);
        }
        self
    }

    /// Adds the capabilities a payload declares (its release-metadata's
    /// [`DECLARED_CAPABILITIES_KEY`]): each becomes known, never gated, and a member of the
    /// earliest set it names and of every later one, `vCurrent` included (sets are cumulative,
    /// as upstream's). One that names no set is in no set: only clusters that list it in
    /// `additionalEnabledCapabilities` enable it, whatever their baseline. A name already known
    /// keeps its standard definition (`cvo validate` reports the clash), and `None` holds
    /// nothing.
    pub fn with_declared(mut self, declared: &[DeclaredCapability]) -> Self {
        for d in declared {
            if self.is_known(&d.name) {
                continue;
            }
            if let Some(first) = d.first_set() {
                for (set, members) in &mut self.sets {
                    if *set >= first {
                        members.push(d.name.clone());
                    }
                }
            }
            self.known.push(d.name.clone());
        }
        self
    }

    /// Every known capability, in declaration order, gated ones included.
    pub fn known(&self) -> &[Capability] {
        &self.known
    }

    /// Members of `set` in declaration order (gated ones included; callers
    /// subtract [`Registry::excluded_by_gates`]).
    pub fn set_members(&self, set: CapabilitySet) -> &[Capability] {
        self.sets
            .iter()
            .find(|(s, _)| *s == set)
            .map_or(&[], |(_, members)| members.as_slice())
    }

    /// Gated capabilities none of whose gates is in `enabled_gates`: these
    /// are removed from Known, Enabled and ImplicitlyEnabled, as if this
    /// binary did not know them.
    pub fn excluded_by_gates(&self, enabled_gates: &BTreeSet<String>) -> BTreeSet<Capability> {
        self.gated
            .iter()
            .filter(|(_, gates)| !gates.iter().any(|g| enabled_gates.contains(g)))
            .map(|(cap, _)| cap.clone())
            .collect()
    }

    /// Whether `c` is in [`Registry::known`] (regardless of feature gates).
    pub fn is_known(&self, c: &Capability) -> bool {
        self.known.contains(c)
    }

    fn sets_entry_mut(
        &mut self,
        set: CapabilitySet,
    ) -> Option<&mut (CapabilitySet, Vec<Capability>)> {
        self.sets.iter_mut().find(|(s, _)| *s == set)
    }
}

/// The release-metadata `metadata` key under which a payload declares its own capabilities:
/// `[{"name": "DeploymentTargets", "description": "...", "sets": ["v4.18"]}]`. Upstream
/// ignores unknown metadata keys, so an upstream CVO still loads such a payload (and excludes
/// the manifests of capabilities it does not know).
pub const DECLARED_CAPABILITIES_KEY: &str = "capabilities.cvo.openshift.io/declared";

/// A capability a payload declares for the components it ships.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredCapability {
    pub name: Capability,
    /// What enabling it installs, for people.
    pub description: String,
    /// The baseline sets that include it: the earliest one named and every later one,
    /// `vCurrent` included. Empty (the default): none, so the component is opt-in.
    #[serde(default)]
    pub sets: Vec<CapabilitySet>,
}

impl DeclaredCapability {
    /// The earliest set that includes it (`None` is never a member); `None`: it is opt-in.
    pub fn first_set(&self) -> Option<CapabilitySet> {
        (self.sets.iter().copied())
            .filter(|s| *s != CapabilitySet::None)
            .min()
    }

    /// The baseline sets that include it, earliest first.
    pub fn baseline_sets(&self) -> Vec<CapabilitySet> {
        let Some(first) = self.first_set() else {
            return Vec::new();
        };
        (CapabilitySet::all().iter().copied())
            .filter(|s| *s >= first)
            .collect()
    }
}

/// What is wrong with a payload's declarations, one message each (empty: fine). Names must
/// be new (not an openshift/api capability), unique, and made of letters, digits and `-`
/// (like upstream's, which manifests name in `capability.openshift.io/name`, `+`-separated);
/// a description says what the capability installs; `None` holds no capability.
pub fn check_declared(declared: &[DeclaredCapability]) -> Vec<String> {
    let standard = Registry::standard();
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for d in declared {
        let name = d.name.as_str();
        if name.is_empty()
            || !name.starts_with(|c: char| c.is_ascii_alphabetic())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            problems.push(format!(
                "capability {name:?}: a name is letters, digits and '-', starting with a letter"
            ));
        }
        if standard.is_known(&d.name) {
            problems.push(format!(
                "capability {name:?} is already an openshift/api capability; a payload declares only new ones"
            ));
        }
        if !seen.insert(name) {
            problems.push(format!("capability {name:?} is declared twice"));
        }
        if d.sets.contains(&CapabilitySet::None) {
            problems.push(format!(
                "capability {name:?} names the set None, which holds no capability; leave \"sets\" empty for a capability no baseline enables"
            ));
        }
        if d.description.trim().is_empty() {
            problems.push(format!(
                "capability {name:?} has no description: say what enabling it installs"
            ));
        }
    }
    problems
}

/// Standard members of `set`: every capability whose first set is not newer.
fn standard_members(set: CapabilitySet) -> Vec<Capability> {
    STANDARD
        .iter()
        .filter(|e| e.first_set <= set)
        .map(|e| Capability::from(e.name))
        .collect()
}

fn gate_names(gates: &[&str]) -> Vec<String> {
    gates.iter().map(|g| (*g).to_owned()).collect()
}

/// `{"None": [], "v4.11": [...], ..., "vCurrent": [...]}` with members in
/// declaration order, for `cvo capabilities` style output. Gated capabilities
/// are listed (the table is static; gates apply per cluster).
pub fn sets_json(registry: &Registry) -> Value {
    let mut map = Map::new();
    for &set in CapabilitySet::all() {
        let members = registry
            .set_members(set)
            .iter()
            .map(|c| Value::String(c.as_str().to_owned()))
            .collect();
        map.insert(set.as_str().to_owned(), Value::Array(members));
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected lists written out from spec §3.1/§3.2, not derived from the
    /// table above.
    const KNOWN: [&str; 19] = [
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
        "OperatorLifecycleManagerV1",
        "CloudCredential",
        "Ingress",
        "CloudControllerManager",
        "CompatibilityRequirements",
        "ClusterAPI",
    ];

    const V4_11: &[&str] = &[
        "baremetal",
        "marketplace",
        "openshift-samples",
        "MachineAPI",
    ];
    const V4_12: &[&str] = &[
        "baremetal",
        "Console",
        "Insights",
        "marketplace",
        "Storage",
        "openshift-samples",
        "CSISnapshot",
        "MachineAPI",
    ];
    const V4_13: &[&str] = &[
        "baremetal",
        "Console",
        "Insights",
        "marketplace",
        "Storage",
        "openshift-samples",
        "CSISnapshot",
        "NodeTuning",
        "MachineAPI",
    ];
    const V4_14: &[&str] = &[
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
    ];
    const V4_15: &[&str] = &[
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
    ];
    const V4_16: &[&str] = &[
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
    ];
    const V4_18: &[&str] = &[
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
        "OperatorLifecycleManagerV1",
        "CloudCredential",
        "Ingress",
        "CloudControllerManager",
    ];
    const V_CURRENT: &[&str] = &[
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
        "OperatorLifecycleManagerV1",
        "CloudCredential",
        "Ingress",
        "CloudControllerManager",
        "CompatibilityRequirements",
        "ClusterAPI",
    ];

    fn strs(caps: &[Capability]) -> Vec<&str> {
        caps.iter().map(Capability::as_str).collect()
    }

    fn gates(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|g| (*g).to_owned()).collect()
    }

    fn caps(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|c| Capability::from(*c)).collect()
    }

    #[test]
    fn known_is_the_19_in_declaration_order() {
        let reg = Registry::standard();
        assert_eq!(strs(reg.known()), KNOWN);
        assert!(KNOWN.iter().all(|c| reg.is_known(&Capability::from(*c))));
        assert!(!reg.is_known(&Capability::from("cap1")));
        assert!(!reg.is_known(&Capability::from("Baremetal")));
    }

    #[test]
    fn every_set_has_exact_members_in_declaration_order() {
        let reg = Registry::standard();
        let expected: [(CapabilitySet, &[&str]); 10] = [
            (CapabilitySet::None, &[]),
            (CapabilitySet::V4_11, V4_11),
            (CapabilitySet::V4_12, V4_12),
            (CapabilitySet::V4_13, V4_13),
            (CapabilitySet::V4_14, V4_14),
            (CapabilitySet::V4_15, V4_15),
            (CapabilitySet::V4_16, V4_16),
            (CapabilitySet::V4_17, V4_16),
            (CapabilitySet::V4_18, V4_18),
            (CapabilitySet::VCurrent, V_CURRENT),
        ];
        for (set, members) in expected {
            assert_eq!(strs(reg.set_members(set)), members, "set {set}");
        }
    }

    #[test]
    fn gated_capabilities_are_excluded_without_their_gates() {
        let reg = Registry::standard();
        let both = caps(&["ClusterAPI", "CompatibilityRequirements"]);
        assert_eq!(reg.excluded_by_gates(&gates(&[])), both);
        assert_eq!(reg.excluded_by_gates(&gates(&["SomeOtherGate"])), both);
        // Gate names are case-sensitive.
        assert_eq!(
            reg.excluded_by_gates(&gates(&["clusterapimachinemanagement"])),
            both
        );
    }

    #[test]
    fn crd_compatibility_gate_unlocks_only_compatibility_requirements() {
        let reg = Registry::standard();
        let got = reg.excluded_by_gates(&gates(&["CRDCompatibilityRequirementOperator"]));
        assert_eq!(got, caps(&["ClusterAPI"]));
    }

    #[test]
    fn cluster_api_gate_unlocks_both() {
        let reg = Registry::standard();
        assert!(
            reg.excluded_by_gates(&gates(&["ClusterAPIMachineManagement"]))
                .is_empty()
        );
        let all = gates(&[
            "ClusterAPIMachineManagement",
            "CRDCompatibilityRequirementOperator",
        ]);
        assert!(reg.excluded_by_gates(&all).is_empty());
    }

    #[test]
    fn additional_known_joins_known_and_vcurrent_only() {
        let reg = Registry::standard().with_additional_known([
            Capability::from("NewThing"),
            Capability::from("Console"),
            Capability::from("NewThing"),
            Capability::from("another"),
        ]);
        let mut want_known = KNOWN.to_vec();
        want_known.extend(["NewThing", "another"]);
        assert_eq!(strs(reg.known()), want_known);
        let mut want_current = V_CURRENT.to_vec();
        want_current.extend(["NewThing", "another"]);
        assert_eq!(strs(reg.set_members(CapabilitySet::VCurrent)), want_current);
        assert_eq!(strs(reg.set_members(CapabilitySet::V4_18)), V4_18);
        assert!(reg.is_known(&Capability::from("another")));
        assert_eq!(reg.excluded_by_gates(&gates(&[])).len(), 2);
    }

    #[test]
    fn sets_json_lists_every_set() {
        let got = sets_json(&Registry::standard());
        let want = serde_json::json!({
            "None": [],
            "v4.11": V4_11,
            "v4.12": V4_12,
            "v4.13": V4_13,
            "v4.14": V4_14,
            "v4.15": V4_15,
            "v4.16": V4_16,
            "v4.17": V4_16,
            "v4.18": V4_18,
            "vCurrent": V_CURRENT,
        });
        assert_eq!(got, want);
        let keys: Vec<&String> = got
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            [
                "None", "v4.11", "v4.12", "v4.13", "v4.14", "v4.15", "v4.16", "v4.17", "v4.18",
                "vCurrent"
            ]
        );
    }

    #[test]
    fn declared_capabilities_join_the_sets_from_the_first_named() {
        let widgets = DeclaredCapability {
            name: Capability::from("Widgets"),
            description: "widgets".into(),
            sets: vec![CapabilitySet::V4_18],
        };
        let clash = DeclaredCapability {
            name: Capability::from("Console"),
            description: "again".into(),
            sets: vec![CapabilitySet::None],
        };
        let registry = Registry::standard().with_declared(&[widgets.clone(), clash.clone()]);
        assert!(registry.is_known(&widgets.name));
        assert_eq!(
            registry.known().len(),
            Registry::standard().known().len() + 1
        );
        for (set, member) in [
            (CapabilitySet::None, false),
            (CapabilitySet::V4_17, false),
            (CapabilitySet::V4_18, true),
            (CapabilitySet::VCurrent, true),
        ] {
            assert_eq!(
                registry.set_members(set).contains(&widgets.name),
                member,
                "{set}"
            );
        }
        // A clash keeps the standard definition.
        assert!(
            !registry
                .set_members(CapabilitySet::None)
                .contains(&clash.name)
        );
        assert_eq!(
            check_declared(std::slice::from_ref(&widgets)),
            Vec::<String>::new()
        );
        let problems = check_declared(&[
            widgets.clone(),
            widgets,
            clash,
            DeclaredCapability {
                name: Capability::from("9lives"),
                description: String::new(),
                sets: vec![],
            },
        ]);
        // Twice, already openshift/api's, in None, a bad name, no description.
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(
            problems.contains(&"capability \"Console\" names the set None, which holds no capability; leave \"sets\" empty for a capability no baseline enables".to_string()),
            "{problems:#?}"
        );
    }

    /// No set named: known, in no baseline set, not even vCurrent, so only
    /// additionalEnabledCapabilities turns it on. Sets are cumulative from the earliest named.
    #[test]
    fn declared_capabilities_without_sets_are_opt_in() {
        let declare = |name: &str, sets: Vec<CapabilitySet>| DeclaredCapability {
            name: Capability::from(name),
            description: "d".into(),
            sets,
        };
        let opt_in = declare("OptIn", vec![]);
        let early = declare("Early", vec![CapabilitySet::V4_18, CapabilitySet::V4_15]);
        let current = declare("Current", vec![CapabilitySet::VCurrent]);
        let registry =
            Registry::standard().with_declared(&[opt_in.clone(), early.clone(), current.clone()]);
        assert!(registry.is_known(&opt_in.name));
        let member = |set, c: &DeclaredCapability| registry.set_members(set).contains(&c.name);
        for &set in CapabilitySet::all() {
            assert!(!member(set, &opt_in), "{set}");
            assert_eq!(member(set, &early), set >= CapabilitySet::V4_15, "{set}");
            assert_eq!(
                member(set, &current),
                set == CapabilitySet::VCurrent,
                "{set}"
            );
        }
        assert_eq!(opt_in.first_set(), None);
        assert!(opt_in.baseline_sets().is_empty());
        assert_eq!(
            early.baseline_sets(),
            [
                CapabilitySet::V4_15,
                CapabilitySet::V4_16,
                CapabilitySet::V4_17,
                CapabilitySet::V4_18,
                CapabilitySet::VCurrent
            ]
        );
    }
}
