//! Capabilities an upgrade implicitly enables (upstream `GetImplicitlyEnabledCapabilities`,
//! spec §4.2): once the CVO manages a resource it keeps managing it, so when the new payload's
//! manifest for a resource the cluster has today names a capability that is not enabled, that
//! whole capability becomes enabled.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::Capability;
use crate::include::{InclusionConfig, include};
use crate::manifest::{Manifest, ManifestId};

/// A manifest that caused a capability to be enabled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Cause {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The file of the new payload's manifest.
    pub file: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImplicitEnablement {
    /// The previous implicit set plus everything the upgrade adds.
    pub capabilities: BTreeSet<Capability>,
    /// For each capability the upgrade adds, the manifests responsible (sorted, deduplicated).
    pub causes: BTreeMap<Capability, Vec<Cause>>,
}

/// One side of an upgrade: the load-filtered manifests and the inclusion config that decides
/// which of them are applied (capabilities, feature gates, major version).
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub manifests: &'a [&'a Manifest],
    pub config: &'a InclusionConfig,
}

/// `current.config.capabilities` gives the cluster's enabled capabilities; unknown capability
/// names are tolerated on both sides, as upstream does, so that an update into a release that
/// introduces a capability works.
pub fn implicitly_enabled(
    update: Side<'_>,
    current: Side<'_>,
    previously_implicit: &BTreeSet<Capability>,
) -> ImplicitEnablement {
    let update_config = tolerant(update.config);
    let current_config = tolerant(current.config);
    let enabled_now: BTreeSet<Capability> = current
        .config
        .capabilities
        .as_ref()
        .map(|c| c.enabled_capabilities.clone())
        .unwrap_or_default();
    let by_id = index(current.manifests);
    let mut result = ImplicitEnablement {
        capabilities: previously_implicit.clone(),
        causes: BTreeMap::new(),
    };
    for u in update.manifests {
        if include(u, &update_config).is_ok() {
            continue;
        }
        for c in by_id.get(&u.id).into_iter().flatten() {
            if include(c, &current_config).is_err() {
                continue;
            }
            for cap in newly_needed(u, c, previously_implicit, &enabled_now) {
                result.capabilities.insert(cap.clone());
                result.causes.entry(cap).or_default().push(cause(u));
            }
        }
    }
    for causes in result.causes.values_mut() {
        causes.sort();
        causes.dedup();
    }
    result
}

fn tolerant(config: &InclusionConfig) -> InclusionConfig {
    InclusionConfig {
        allow_unknown_capabilities: true,
        ..config.clone()
    }
}

fn index<'a>(manifests: &[&'a Manifest]) -> HashMap<&'a ManifestId, Vec<&'a Manifest>> {
    let mut by_id: HashMap<&ManifestId, Vec<&Manifest>> = HashMap::new();
    for m in manifests {
        by_id.entry(&m.id).or_default().push(m);
    }
    by_id
}

/// caps(u) − caps(c) − previously implicit − enabled today.
fn newly_needed(
    u: &Manifest,
    c: &Manifest,
    previously_implicit: &BTreeSet<Capability>,
    enabled: &BTreeSet<Capability>,
) -> Vec<Capability> {
    let had: BTreeSet<Capability> = c.capabilities().unwrap_or_default().into_iter().collect();
    u.capabilities()
        .unwrap_or_default()
        .into_iter()
        .filter(|cap| {
            !had.contains(cap) && !previously_implicit.contains(cap) && !enabled.contains(cap)
        })
        .collect()
}

fn cause(m: &Manifest) -> Cause {
    Cause {
        group: m.id.group.clone(),
        kind: m.id.kind.clone(),
        namespace: m.id.namespace.clone(),
        name: m.id.name.clone(),
        file: m.file.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::include::CapabilityFilter;
    use crate::manifest::{ManifestDir, parse_file};
    use std::sync::Arc;

    fn m(name: &str, caps: Option<&str>) -> Manifest {
        let cap = caps
            .map(|c| format!("    capability.openshift.io/name: \"{c}\"\n"))
            .unwrap_or_default();
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\n  annotations:\n{cap}    x: \"1\"\n"
        );
        parse_file("f.yaml", ManifestDir::ReleaseManifests, Arc::new(text))
            .0
            .remove(0)
    }

    fn set(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|n| Capability::from(*n)).collect()
    }

    fn config(enabled: &[&str]) -> InclusionConfig {
        InclusionConfig {
            capabilities: Some(CapabilityFilter {
                known_capabilities: set(&["A", "B", "C"]),
                enabled_capabilities: set(enabled),
            }),
            ..Default::default()
        }
    }

    fn run(
        update: &[Manifest],
        current: &[Manifest],
        enabled: &[&str],
        prior: &[&str],
    ) -> ImplicitEnablement {
        let u: Vec<&Manifest> = update.iter().collect();
        let c: Vec<&Manifest> = current.iter().collect();
        let cfg = config(enabled);
        implicitly_enabled(
            Side {
                manifests: &u,
                config: &cfg,
            },
            Side {
                manifests: &c,
                config: &cfg,
            },
            &set(prior),
        )
    }

    #[test]
    fn a_managed_resource_moving_into_a_disabled_capability_enables_it() {
        let r = run(&[m("a", Some("B"))], &[m("a", None)], &["A"], &[]);
        assert_eq!(r.capabilities, set(&["B"]));
        assert_eq!(r.causes[&Capability::from("B")][0].name, "a");
    }

    #[test]
    fn only_the_capabilities_the_resource_did_not_have() {
        let r = run(
            &[m("a", Some("A+B+C"))],
            &[m("a", Some("A+B"))],
            &["A", "B"],
            &[],
        );
        assert_eq!(r.capabilities, set(&["C"]));
    }

    #[test]
    fn nothing_when_not_applied_today_or_already_included_or_no_match() {
        // Current manifest is disabled today: not applied, so nothing to keep.
        assert!(
            run(&[m("a", Some("B+C"))], &[m("a", Some("B"))], &["A"], &[])
                .capabilities
                .is_empty()
        );
        // Update manifest is included: nothing to do.
        assert!(
            run(&[m("a", Some("A"))], &[m("a", None)], &["A"], &[])
                .capabilities
                .is_empty()
        );
        // No resource with that id today.
        assert!(
            run(&[m("a", Some("B"))], &[m("z", None)], &["A"], &[])
                .capabilities
                .is_empty()
        );
        // Empty lists keep the prior set.
        assert_eq!(run(&[], &[], &["A"], &["C"]).capabilities, set(&["C"]));
    }

    #[test]
    fn unknown_capabilities_are_returned_and_prior_ones_kept() {
        let r = run(&[m("a", Some("New"))], &[m("a", None)], &["A"], &["C"]);
        assert_eq!(r.capabilities, set(&["C", "New"]));
        assert!(!r.causes.contains_key(&Capability::from("C")));
    }

    #[test]
    fn duplicates_add_once() {
        let r = run(
            &[m("a", Some("B")), m("b", Some("B"))],
            &[m("a", None), m("b", None)],
            &[],
            &[],
        );
        assert_eq!(r.capabilities, set(&["B"]));
        assert_eq!(r.causes[&Capability::from("B")].len(), 2);
    }
}

/// Axioms 3 and 4 of the capabilities design: whatever the admin does to `spec.capabilities`
/// and whatever upgrades happen, an enabled capability stays enabled.
#[cfg(test)]
mod never_shrink {
    use super::*;
    use crate::capability::{
        CapabilitiesSpec, CapabilitySet, Registry, set_capabilities, set_from_implicitly_enabled,
    };

    use crate::manifest::{ManifestDir, parse_file};
    use proptest::prelude::*;
    use std::sync::Arc;

    const CAPS: &[&str] = &[
        "Console",
        "Insights",
        "baremetal",
        "Build",
        "OperatorLifecycleManager",
        "NotYetKnown",
    ];
    const RESOURCES: usize = 5;

    #[derive(Debug, Clone)]
    enum Step {
        /// The admin sets spec.capabilities.
        Spec {
            baseline: usize,
            additional: Vec<usize>,
        },
        /// An upgrade to a payload where resource i carries these capabilities (empty: none).
        Upgrade(Vec<Vec<usize>>),
    }

    fn step() -> impl Strategy<Value = Step> {
        let caps = || proptest::collection::vec(0..CAPS.len(), 0..3);
        prop_oneof![
            (0..CapabilitySet::all().len(), caps()).prop_map(|(baseline, additional)| Step::Spec {
                baseline,
                additional
            }),
            proptest::collection::vec(caps(), RESOURCES).prop_map(Step::Upgrade),
        ]
    }

    fn payload(annotations: &[Vec<usize>]) -> Vec<Manifest> {
        annotations
            .iter()
            .enumerate()
            .map(|(i, caps)| {
                let names: Vec<&str> = caps.iter().map(|&c| CAPS[c]).collect();
                let cap = if names.is_empty() { String::new() } else { format!("    capability.openshift.io/name: \"{}\"\n", names.join("+")) };
                let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r{i}\n  namespace: ns\n  annotations:\n{cap}    a: \"b\"\n");
                parse_file("f.yaml", ManifestDir::ReleaseManifests, Arc::new(text)).0.remove(0)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn enabled_capabilities_never_shrink(baseline in 0..CapabilitySet::all().len(), initial in proptest::collection::vec(proptest::collection::vec(0..CAPS.len(), 0..3), RESOURCES), steps in proptest::collection::vec(step(), 1..12)) {
            let registry = Registry::standard();
            let gates = BTreeSet::new();
            let mut spec = CapabilitiesSpec {
                baseline_capability_set: Some(CapabilitySet::all()[baseline].as_str().to_string()),
                additional_enabled_capabilities: vec![],
            };
            let mut current = payload(&initial);
            let mut caps = set_capabilities(&registry, Some(&spec), &[], &gates);
            for step in steps {
                let before = caps.enabled.clone();
                let prior: Vec<Capability> = caps.enabled.iter().cloned().collect();
                match step {
                    Step::Spec { baseline, additional } => {
                        spec = CapabilitiesSpec {
                            baseline_capability_set: Some(CapabilitySet::all()[baseline].as_str().to_string()),
                            additional_enabled_capabilities: additional.iter().map(|&c| Capability::from(CAPS[c])).collect(),
                        };
                        caps = set_capabilities(&registry, Some(&spec), &prior, &gates);
                    }
                    Step::Upgrade(annotations) => {
                        let next = payload(&annotations);
                        let config = InclusionConfig {
                            capabilities: Some(caps.filter()),
                            ..Default::default()
                        };
                        let (u, c): (Vec<&Manifest>, Vec<&Manifest>) = (next.iter().collect(), current.iter().collect());
                        let implicit = implicitly_enabled(Side { manifests: &u, config: &config }, Side { manifests: &c, config: &config }, &caps.implicitly_enabled);
                        caps = set_from_implicitly_enabled(&implicit.capabilities, set_capabilities(&registry, Some(&spec), &prior, &gates));
                        // Axiom 4: a resource applied before the upgrade is still applied after it
                        // (for capabilities this CVO knows; unknown ones are never applied).
                        let after = InclusionConfig {
                            capabilities: Some(caps.filter()),
                            ..Default::default()
                        };
                        for (old, new) in current.iter().zip(&next) {
                            let known = new.capabilities().unwrap_or_default().iter().all(|c| registry.is_known(c));
                            if known && include(old, &config).is_ok() {
                                prop_assert!(include(new, &after).is_ok(), "{} stopped being applied", new.id.name);
                            }
                        }
                        current = next;
                    }
                }
                prop_assert!(caps.enabled.is_superset(&before), "lost {:?}", before.difference(&caps.enabled).collect::<Vec<_>>());
            }
        }
    }
}
