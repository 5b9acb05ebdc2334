//! Upgrade preview: what moving a cluster from one payload to another would do, before anything
//! is applied. The upstream CVO answers none of this ahead of time, and silently abandons
//! resources the new payload no longer manages; the plan lists them.
//!
//! Pure: both payloads are already loaded; the cluster is described by an inclusion config.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::capability::implicit::{Cause, Side, implicitly_enabled};
use crate::capability::{Capability, Condition, implicitly_enabled_condition};
use crate::include::{CapabilityFilter, InclusionConfig, include};
use crate::manifest::{CREATE_ONLY_ANNOTATION, DELETE_ANNOTATION, Manifest, ManifestId};
use crate::payload::Payload;

/// The cluster being upgraded.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Its filters today: exclude id, feature set, feature gates, profile, capabilities
    /// (known and enabled, implicitly enabled ones included), overrides. The major version of
    /// each payload comes from that payload's release metadata when it has one.
    pub config: InclusionConfig,
    /// `status.capabilities` implicitly enabled before this upgrade.
    pub implicitly_enabled: BTreeSet<Capability>,
    /// Its capabilities worked out with the new release's registry, when that declares
    /// capabilities of its own (a new `vCurrent` member is enabled by a `vCurrent` baseline);
    /// `None`: the same as today's.
    pub capabilities_after: Option<CapabilityFilter>,
}

/// A resource the plan talks about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Resource {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The file of the manifest that decides (the new payload's, except for left-behind ones).
    pub file: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Update {
    #[serde(flatten)]
    pub resource: Resource,
    /// Unified diff of the manifest, current payload to new payload.
    pub diff: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftBehind {
    #[serde(flatten)]
    pub resource: Resource,
    /// Why the new payload no longer manages it: removed, or the exclusion message.
    pub reason: String,
}

/// The `-o json` contract of `cvo plan`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub from_version: Option<String>,
    pub to_version: Option<String>,
    /// What a person should know before going ahead: a rollback.
    pub warnings: Vec<String>,
    pub implicitly_enabled_capabilities: Vec<Capability>,
    pub enabled_capabilities: Vec<Capability>,
    pub known_capabilities: Vec<Capability>,
    /// Capabilities the new release brings that the cluster does not know today (a payload
    /// declares them); `enabledCapabilities` says whether the cluster gets them.
    pub new_capabilities: Vec<Capability>,
    /// What each new capability installs, as the new release describes it.
    pub new_capability_descriptions: BTreeMap<Capability, String>,
    /// For each capability this upgrade enables implicitly, the manifests that cause it.
    pub reasons: BTreeMap<Capability, Vec<Cause>>,
    pub condition: Condition,
    pub create: Vec<Resource>,
    pub update: Vec<Update>,
    pub delete: Vec<Resource>,
    pub left_behind: Vec<LeftBehind>,
    pub unchanged: usize,
}

/// Plans the upgrade of `cluster` from `from` to `to`.
pub fn plan(from: &Payload, to: &Payload, cluster: &Cluster) -> Plan {
    let load_from = load_filter(&cluster.config, from);
    let load_to = load_filter(&cluster.config, to);
    let current: Vec<&Manifest> = from.included(&load_from);
    let next: Vec<&Manifest> = to.included(&load_to);
    let caps = cluster.config.capabilities.clone().unwrap_or_default();
    let implicit = implicitly_enabled(
        Side {
            manifests: &next,
            config: &apply_filter(&cluster.config, caps.clone()),
        },
        Side {
            manifests: &current,
            config: &apply_filter(&cluster.config, caps.clone()),
        },
        &cluster.implicitly_enabled,
    );
    let with_new = cluster
        .capabilities_after
        .clone()
        .unwrap_or_else(|| caps.clone());
    let new_capabilities: Vec<Capability> = (with_new.known_capabilities)
        .difference(&caps.known_capabilities)
        .cloned()
        .collect();
    let declared = to.release.as_ref().map(|r| r.capabilities.as_slice());
    let new_capability_descriptions = (declared.unwrap_or_default().iter())
        .filter(|d| new_capabilities.contains(&d.name))
        .map(|d| (d.name.clone(), d.description.clone()))
        .collect();
    let after = CapabilityFilter {
        known_capabilities: (caps.known_capabilities.iter())
            .chain(&with_new.known_capabilities)
            .cloned()
            .collect(),
        enabled_capabilities: (caps.enabled_capabilities.iter())
            .chain(&implicit.capabilities)
            .chain(&with_new.enabled_capabilities)
            .cloned()
            .collect(),
    };
    let applied_now = applied(&current, &apply_filter(&cluster.config, caps));
    let after_config = apply_filter(&cluster.config, after.clone());
    let mut plan = Plan {
        from_version: from.version().map(str::to_string),
        to_version: to.version().map(str::to_string),
        warnings: warnings(from, to),
        implicitly_enabled_capabilities: implicit.capabilities.iter().cloned().collect(),
        enabled_capabilities: after.enabled_capabilities.iter().cloned().collect(),
        known_capabilities: after.known_capabilities.iter().cloned().collect(),
        new_capabilities,
        new_capability_descriptions,
        reasons: implicit.causes.clone(),
        condition: implicitly_enabled_condition(&implicit.capabilities),
        create: vec![],
        update: vec![],
        delete: vec![],
        left_behind: vec![],
        unchanged: 0,
    };
    let mut managed_next: BTreeSet<&ManifestId> = BTreeSet::new();
    for manifest in &next {
        if include(manifest, &after_config).is_err() {
            continue;
        }
        managed_next.insert(&manifest.id);
        classify(manifest, applied_now.get(&manifest.id).copied(), &mut plan);
    }
    // Why a resource is not managed any more: the full verdict, load-time filters included.
    let verdict_config = InclusionConfig {
        capabilities: Some(after),
        ..load_to.clone()
    };
    let verdict_config = InclusionConfig {
        overrides: cluster.config.overrides.clone(),
        ..verdict_config
    };
    plan.left_behind = left_behind(&applied_now, &managed_next, to, &verdict_config);
    let stand_ins = stand_ins(&next, &plan, to);
    plan.warnings.extend(stand_ins);
    plan
}

/// The CRDs of other operators' API groups the upgrade creates or updates
/// ([`crate::ownership::stand_in`]): on a cluster where that operator runs, the CVO does not
/// replace its CRD, and what ships this one must work with that operator's.
fn stand_ins(next: &[&Manifest], plan: &Plan, to: &Payload) -> Vec<String> {
    let version = to.version().unwrap_or("the new payload");
    let changed = |m: &Manifest| {
        let r = resource(m);
        plan.create.contains(&r) || plan.update.iter().any(|u| u.resource == r)
    };
    next.iter()
        .filter(|m| changed(m))
        .filter_map(|m| Some((m, crate::ownership::stand_in(&m.object())?)))
        .map(|(m, s)| {
            format!(
                "{version} applies CustomResourceDefinition {} ({}) of {}, {owner}'s API group: where {owner} runs, the CVO leaves {owner}'s CRD alone rather than replace it (which would prune the fields of its stored objects), and the component that ships this one must work with {owner}'s",
                s.name,
                m.file,
                s.group,
                owner = s.owner
            )
        })
        .collect()
}

/// A move to a lower version is a rollback, which the CVO refuses (spec §5 preconditions).
fn warnings(from: &Payload, to: &Payload) -> Vec<String> {
    match (&from.release, &to.release) {
        (Some(from), Some(to)) if to.semver < from.semver => vec![format!(
            "{} -> {} is a rollback, not an upgrade: the CVO refuses a desired version below the current one (precondition ClusterVersionRollback, reason LowDesiredVersion) unless desiredUpdate.force is set, and operators are not tested to run backwards",
            from.version, to.version
        )],
        _ => Vec::new(),
    }
}

/// The filters the CVO applies when it loads `payload` (spec §1.7).
fn load_filter(config: &InclusionConfig, payload: &Payload) -> InclusionConfig {
    InclusionConfig {
        major_version: payload.major_version().or(config.major_version),
        ..config.load_time()
    }
}

/// The filters the CVO applies per task (spec §7.2), with `capabilities`.
fn apply_filter(config: &InclusionConfig, capabilities: CapabilityFilter) -> InclusionConfig {
    InclusionConfig {
        capabilities: Some(capabilities),
        ..config.apply_time()
    }
}

/// What the current payload has the cluster manage, by resource (the last manifest of an id
/// wins, as the later apply does). Deletions are not managed resources.
fn applied<'a>(
    manifests: &[&'a Manifest],
    config: &InclusionConfig,
) -> HashMap<&'a ManifestId, &'a Manifest> {
    manifests
        .iter()
        .filter(|m| !is_deletion(m) && include(m, config).is_ok())
        .map(|m| (&m.id, *m))
        .collect()
}

fn is_deletion(manifest: &Manifest) -> bool {
    manifest.annotation(DELETE_ANNOTATION) == Some("true")
}

fn classify(manifest: &Manifest, before: Option<&Manifest>, plan: &mut Plan) {
    let resource = resource(manifest);
    match before {
        _ if is_deletion(manifest) => plan.delete.push(resource),
        None => plan.create.push(resource),
        Some(old) if old.raw == manifest.raw => plan.unchanged += 1,
        // The CVO never updates a create-only resource once it exists.
        Some(_)
            if manifest
                .annotation(CREATE_ONLY_ANNOTATION)
                .is_some_and(|v| v.eq_ignore_ascii_case("true")) =>
        {
            plan.unchanged += 1
        }
        Some(old) => plan.update.push(Update {
            diff: diff(old, manifest),
            resource,
        }),
    }
}

fn left_behind(
    applied_now: &HashMap<&ManifestId, &Manifest>,
    managed_next: &BTreeSet<&ManifestId>,
    to: &Payload,
    config: &InclusionConfig,
) -> Vec<LeftBehind> {
    let mut left: Vec<LeftBehind> = applied_now
        .iter()
        .filter(|(id, _)| !managed_next.contains(*id))
        .map(|(id, old)| LeftBehind {
            resource: resource(old),
            reason: why_not_managed(id, to, config),
        })
        .collect();
    left.sort_by(|a, b| a.resource.cmp(&b.resource));
    left
}

/// The new payload's own exclusion message for the resource (the first variant's, when several
/// files hold it), or that it was removed.
fn why_not_managed(id: &ManifestId, to: &Payload, config: &InclusionConfig) -> String {
    match to.manifests.iter().find(|m| &m.id == id) {
        None => "removed from the payload".to_string(),
        Some(m) => match include(m, config) {
            Err(e) => format!("excluded: {e}"),
            Ok(()) => "managed".to_string(),
        },
    }
}

fn resource(manifest: &Manifest) -> Resource {
    Resource::of(manifest)
}

impl Resource {
    /// The resource `manifest` describes, from its file.
    pub fn of(manifest: &Manifest) -> Resource {
        Resource {
            group: manifest.id.group.clone(),
            kind: manifest.id.kind.clone(),
            namespace: manifest.id.namespace.clone(),
            name: manifest.id.name.clone(),
            file: manifest.file.to_string(),
        }
    }

    /// `Kind[.group] [namespace/]name`, as people name it ([`object_name`]).
    pub fn object_name(&self) -> String {
        object_name(&self.group, &self.kind, &self.namespace, &self.name)
    }
}

/// `Kind[.group] [namespace/]name`: how the plan and the preflight name an object to people.
pub fn object_name(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    let kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}

/// The manifests of `to` that `plan` creates or updates, in payload order.
pub fn changed_manifests<'p>(to: &'p Payload, plan: &Plan) -> Vec<&'p Manifest> {
    let changed: BTreeSet<&Resource> = (plan.create.iter())
        .chain(plan.update.iter().map(|u| &u.resource))
        .collect();
    (to.manifests.iter())
        .filter(|m| changed.contains(&Resource::of(m)))
        .collect()
}

/// A unified diff of the two documents as written.
fn diff(old: &Manifest, new: &Manifest) -> String {
    similar::TextDiff::from_lines(old.original_text(), new.original_text())
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("current/{}", old.path()),
            &format!("new/{}", new.path()),
        )
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::include::ComponentOverride;

    fn payload(version: &str, files: &[(&str, String)]) -> Payload {
        crate::payload::of_release_manifests(version, files)
    }

    #[test]
    fn a_lower_version_is_a_rollback() {
        let cases = [
            ("4.17.0", "4.18.0", false),
            ("4.18.0", "4.18.0", false),
            ("4.18.0", "4.17.0", true),
            ("4.18.1", "4.18.0", true),
            ("4.18.0", "4.18.0-rc.1", true),
        ];
        let files = [("0000_10_a_x.yaml", cm("a", "", "1"))];
        for (from, to, rollback) in cases {
            let plan = plan(
                &payload(from, &files),
                &payload(to, &files),
                &Cluster::default(),
            );
            assert_eq!(plan.warnings.len(), usize::from(rollback), "{from} -> {to}");
        }
        let plan = plan(
            &payload("4.18.0", &files),
            &payload("4.17.0", &files),
            &Cluster::default(),
        );
        assert!(plan.warnings[0].starts_with("4.18.0 -> 4.17.0 is a rollback, not an upgrade"));
    }

    /// A ConfigMap with optional extra annotations and data.
    fn cm(name: &str, annotations: &str, data: &str) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n{annotations}data:\n  k: {data}\n"
        )
    }

    fn caps(names: &[&str]) -> BTreeSet<Capability> {
        names.iter().map(|n| Capability::from(*n)).collect()
    }

    fn cluster(enabled: &[&str]) -> Cluster {
        Cluster {
            config: InclusionConfig {
                required_feature_set: Some(String::new()),
                profile: Some("self-managed-high-availability".into()),
                capabilities: Some(CapabilityFilter {
                    known_capabilities: caps(&["A", "B", "C"]),
                    enabled_capabilities: caps(enabled),
                }),
                enabled_feature_gates: Some(BTreeSet::new()),
                ..Default::default()
            },
            implicitly_enabled: BTreeSet::new(),
            capabilities_after: None,
        }
    }

    fn names(resources: &[Resource]) -> Vec<&str> {
        resources.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn every_category() {
        let from = payload(
            "4.14.0",
            &[
                ("0000_10_a_1.yaml", cm("same", "", "v")),
                ("0000_10_a_2.yaml", cm("changed", "", "old")),
                ("0000_10_a_3.yaml", cm("removed", "", "v")),
                ("0000_10_a_4.yaml", cm("to-be-deleted", "", "v")),
                ("0000_10_a_5.yaml", cm("moves-to-b", "", "v")),
                ("0000_10_a_6.yaml", cm("goes-tech-preview", "", "v")),
            ],
        );
        let to = payload(
            "4.15.0",
            &[
                ("0000_10_a_1.yaml", cm("same", "", "v")),
                ("0000_10_a_2.yaml", cm("changed", "", "new")),
                (
                    "0000_10_a_4.yaml",
                    cm(
                        "to-be-deleted",
                        "    release.openshift.io/delete: \"true\"\n",
                        "v",
                    ),
                ),
                (
                    "0000_10_a_5.yaml",
                    cm("moves-to-b", "    capability.openshift.io/name: B\n", "v"),
                ),
                (
                    "0000_10_a_6.yaml",
                    cm(
                        "goes-tech-preview",
                        "    release.openshift.io/feature-set: TechPreviewNoUpgrade\n",
                        "v",
                    ),
                ),
                ("0000_10_a_7.yaml", cm("brand-new", "", "v")),
                (
                    "0000_10_a_8.yaml",
                    cm("new-in-c", "    capability.openshift.io/name: C\n", "v"),
                ),
            ],
        );
        let plan = plan(&from, &to, &cluster(&["A"]));
        assert_eq!(
            plan.implicitly_enabled_capabilities,
            vec![Capability::from("B")]
        );
        assert_eq!(plan.reasons[&Capability::from("B")][0].name, "moves-to-b");
        assert_eq!(
            plan.enabled_capabilities,
            vec![Capability::from("A"), Capability::from("B")]
        );
        assert_eq!(
            plan.condition.message,
            "The following capabilities could not be disabled: B"
        );
        assert_eq!(names(&plan.create), vec!["brand-new"]);
        assert_eq!(
            plan.update
                .iter()
                .map(|u| u.resource.name.as_str())
                .collect::<Vec<_>>(),
            vec!["changed", "moves-to-b"]
        );
        assert!(
            plan.update[0].diff.contains("-  k: old\n+  k: new\n"),
            "{}",
            plan.update[0].diff
        );
        assert!(plan.update[0].diff.starts_with("--- current/release-manifests/0000_10_a_2.yaml\n+++ new/release-manifests/0000_10_a_2.yaml\n"));
        assert_eq!(names(&plan.delete), vec!["to-be-deleted"]);
        let left: Vec<(&str, &str)> = plan
            .left_behind
            .iter()
            .map(|l| (l.resource.name.as_str(), l.reason.as_str()))
            .collect();
        assert_eq!(
            left,
            vec![
                (
                    "goes-tech-preview",
                    "excluded: \"Default\" is required, and release.openshift.io/feature-set=TechPreviewNoUpgrade"
                ),
                ("removed", "removed from the payload"),
            ]
        );
        assert_eq!(plan.unchanged, 1);
    }

    #[test]
    fn prior_implicit_capabilities_are_kept_and_overrides_respected() {
        let from = payload("4.14.0", &[("0000_10_a_1.yaml", cm("x", "", "v"))]);
        let to = payload("4.15.0", &[("0000_10_a_1.yaml", cm("x", "", "changed"))]);
        let mut c = cluster(&["A", "C"]);
        c.implicitly_enabled = caps(&["C"]);
        c.config.overrides = Some(vec![ComponentOverride {
            kind: "ConfigMap".into(),
            group: "".into(),
            namespace: "ns".into(),
            name: "x".into(),
            unmanaged: true,
        }]);
        let plan = plan(&from, &to, &c);
        assert_eq!(
            plan.implicitly_enabled_capabilities,
            vec![Capability::from("C")]
        );
        assert!(plan.reasons.is_empty());
        // An unmanaged resource is neither updated nor left behind: the CVO does not touch it.
        assert!(plan.update.is_empty() && plan.left_behind.is_empty() && plan.create.is_empty());
    }

    /// A capability the new release declares is new to the cluster; enabled or not, it is named.
    #[test]
    fn capabilities_new_in_the_release_are_listed() {
        let from = payload("4.14.0", &[("0000_10_a_1.yaml", cm("x", "", "v"))]);
        let to = payload("4.15.0", &[("0000_10_a_1.yaml", cm("x", "", "v"))]);
        assert!(
            plan(&from, &to, &cluster(&["A"]))
                .new_capabilities
                .is_empty()
        );
        for (enabled_after, enabled) in [(&["A", "D"][..], true), (&["A"][..], false)] {
            let mut c = cluster(&["A"]);
            c.capabilities_after = Some(CapabilityFilter {
                known_capabilities: caps(&["A", "B", "C", "D"]),
                enabled_capabilities: caps(enabled_after),
            });
            let plan = plan(&from, &to, &c);
            assert_eq!(plan.new_capabilities, vec![Capability::from("D")]);
            assert_eq!(
                plan.enabled_capabilities.contains(&Capability::from("D")),
                enabled
            );
        }
    }

    #[test]
    fn create_only_resources_are_not_updated() {
        let from = payload(
            "4.14.0",
            &[(
                "0000_10_a_1.yaml",
                cm("x", "    release.openshift.io/create-only: \"true\"\n", "a"),
            )],
        );
        let to = payload(
            "4.15.0",
            &[(
                "0000_10_a_1.yaml",
                cm("x", "    release.openshift.io/create-only: \"TRUE\"\n", "b"),
            )],
        );
        let plan = plan(&from, &to, &cluster(&[]));
        assert!(plan.update.is_empty());
        assert_eq!(plan.unchanged, 1);
    }
}
