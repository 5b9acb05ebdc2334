//! Preflight (`spec.desiredUpdate.mode: Preflight`, openshift/api `UpdateModePreflight`): what
//! an update to a target release would do to this cluster, found before anyone commits to it.
//! No CVO upstream implements the mode yet (cluster-version-operator main 6e719331f); the API
//! says the results are reported as `status.conditionalUpdates` / `conditionalUpdateRisks`,
//! which is what the [`Report`]'s findings become.
//!
//! Pure: the current and target payloads, the cluster's capabilities (as [`crate::plan`] takes
//! them) and what the shell read from the live cluster ([`Live`]) in; a [`Report`] out. The
//! shell is [`crate::operator::preflight`].

pub mod checks;
pub mod schema;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::capability::Capability;
use crate::capability::implicit::Cause;
use crate::manifest::Manifest;
use crate::payload::Payload;
use crate::plan::{self, LeftBehind, Plan, Resource};
pub use checks::{Check, CheckError, CheckOutcome, CheckTest, ObjectsTest};

/// Where the built-in findings point administrators.
pub const CAPABILITIES_URL: &str = "https://docs.openshift.com/container-platform/latest/installing/overview/cluster-capabilities.html";
pub const STORED_VERSIONS_URL: &str = "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#upgrade-existing-objects-to-a-new-stored-version";
pub const LEFT_BEHIND_URL: &str = "https://github.com/openshift/enhancements/blob/master/enhancements/update/object-removal-manifest-annotation.md";
pub const DRY_RUN_URL: &str = "https://kubernetes.io/docs/reference/using-api/server-side-apply/";
pub const PRECONDITIONS_URL: &str = "https://docs.openshift.com/container-platform/latest/updating/preparing_for_updates/updating-cluster-prepare.html";

/// The names of the built-in findings (risk names: CamelCase, as the API wants).
pub const IMPLICITLY_ENABLED: &str = "PreflightImplicitlyEnabledCapabilities";
pub const STORED_VERSION_REMOVED: &str = "PreflightCRDStoredVersionRemoved";
pub const LEFT_BEHIND: &str = "PreflightObjectsLeftBehind";
pub const DRY_RUN_REJECTED: &str = "PreflightDryRunRejected";
pub const INVALID_CHECKS: &str = "PreflightInvalidChecks";
pub const INCOMPLETE: &str = "PreflightIncomplete";

/// What the shell read from the live cluster for one preflight.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// `status.storedVersions` of the live CRDs the target ships, by CRD name.
    pub stored_versions: BTreeMap<String, Vec<String>>,
    /// The objects stored under the target's changed CRDs, listed as [`schema::listings`]
    /// asked, checked against the target's schemas ([`schema::Checker`]).
    pub stored: schema::Checked,
    /// The target's created or changed resources that exist in the cluster and that the
    /// server-side apply dry run would change, with the fields that change
    /// ([`changed_fields`]).
    pub live_changes: Vec<(Resource, Vec<String>)>,
    /// The target's created or changed resources the API server refused in a server-side
    /// apply dry-run, with its message.
    pub dry_run_rejections: Vec<(Resource, String)>,
    /// The outcome of each of the target's checks ([`checks`]), in the target's order.
    pub checks: Vec<(Check, CheckOutcome)>,
    /// The target's check manifests that are not valid checks ([`checks::parse`]).
    pub invalid_checks: Vec<CheckError>,
    /// What could not be checked, and why (a CRD that could not be read, no API discovery for
    /// the dry run): reported, so that a preflight never passes by not looking.
    pub incomplete: Vec<String>,
    /// The update preconditions that would fail (upstream's summary line of each) and whether
    /// each blocks: the rollback and giant-hop checks (the `Upgradeable` ones are risks of
    /// their own already, the recommended-update one is what this preflight decides).
    pub preconditions: Vec<(String, String, bool)>,
}

/// One finding: a risk of the update for this cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The risk's name.
    pub name: String,
    /// For people; may hold line feeds.
    pub message: String,
    pub url: String,
}

/// A live object the update would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveChange {
    #[serde(flatten)]
    pub resource: Resource,
    /// The fields that change (`spec.replicas`, `data.key`; a list as a whole).
    pub fields: Vec<String>,
}

/// Everything a preflight found (`cvo upgrade --preflight -o json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub from_version: Option<String>,
    pub to_version: Option<String>,
    /// Capabilities the update would enable implicitly (they cannot be disabled again), each
    /// with the target's manifests that cause it.
    pub implicitly_enabled_capabilities: BTreeMap<Capability, Vec<Cause>>,
    pub create: Vec<Resource>,
    pub update: Vec<Resource>,
    pub delete: Vec<Resource>,
    pub left_behind: Vec<LeftBehind>,
    pub unchanged: usize,
    pub findings: Vec<Finding>,
    /// The live objects the update would change (the server-side apply dry run's result
    /// against what the cluster has), with the fields that change.
    pub live_changes: Vec<LiveChange>,
    /// Evaluations of `x-kubernetes-validations` rules of the target's schemas that were not
    /// possible (functions cel-rust lacks).
    pub unevaluated_cel_rules: usize,
}

impl Report {
    /// The one-line summary of the `Preflight` condition.
    pub fn summary(&self) -> String {
        let to = self.to_version.as_deref().unwrap_or("the target release");
        let risks = match self.findings.len() {
            0 => "no risks".to_string(),
            1 => format!("1 risk ({})", self.findings[0].name),
            n => format!(
                "{n} risks ({})",
                (self.findings.iter().map(|f| f.name.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut text = format!(
            "Preflight of {to}: {risks}; it would create {}, update {}, delete {} and leave behind {} resources",
            self.create.len(),
            self.update.len(),
            self.delete.len(),
            self.left_behind.len()
        );
        if !self.live_changes.is_empty() {
            text.push_str(&format!(
                "; {} live objects would change",
                self.live_changes.len()
            ));
        }
        if self.unevaluated_cel_rules > 0 {
            text.push_str(&format!(
                "; {} evaluations of x-kubernetes-validations rules not possible",
                self.unevaluated_cel_rules
            ));
        }
        let left: Vec<&Resource> = self.left_behind.iter().map(|l| &l.resource).collect();
        let created: Vec<&Resource> = self.create.iter().collect();
        let deleted: Vec<&Resource> = self.delete.iter().collect();
        for (what, list) in [
            ("Created", created),
            ("Deleted", deleted),
            ("Left behind", left),
        ] {
            if !list.is_empty() {
                text.push_str(&format!("\n{what}: {}", names_of(&list)));
            }
        }
        if !self.live_changes.is_empty() {
            let mut changes: Vec<String> = (self.live_changes.iter().take(NAMED))
                .map(|c| format!("{} ({})", c.resource.object_name(), fields_of(&c.fields)))
                .collect();
            if self.live_changes.len() > NAMED {
                changes.push(format!("and {} more", self.live_changes.len() - NAMED));
            }
            text.push_str(&format!("\nChanged live: {}", changes.join(", ")));
        }
        text
    }
}

/// At most this many resources are named per list in the condition (the status stays small;
/// `cvo plan` lists them all).
const NAMED: usize = 20;

/// At most this many fields are named per changed object.
const FIELDS: usize = 5;

fn fields_of(fields: &[String]) -> String {
    let mut named: Vec<&str> = fields.iter().take(FIELDS).map(String::as_str).collect();
    let more = format!("and {} more", fields.len().saturating_sub(FIELDS));
    if fields.len() > FIELDS {
        named.push(&more);
    }
    named.join(", ")
}

/// The fields in which `after` (a server-side apply dry run's result) differs from `live`
/// (the object as the cluster has it), leaving out what every write changes (the
/// resourceVersion, managedFields, generation) and `status`, which an apply does not set. A
/// list that differs is one field.
pub fn changed_fields(live: &serde_json::Value, after: &serde_json::Value) -> Vec<String> {
    let mut fields = Vec::new();
    diff(live, after, "", &mut fields);
    fields
}

fn diff(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    const EVERY_WRITE: &[&str] = &[
        "status",
        "metadata.resourceVersion",
        "metadata.managedFields",
        "metadata.generation",
        "metadata.creationTimestamp",
        "metadata.uid",
    ];
    if EVERY_WRITE.contains(&path) {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (x.get(key), y.get(key)) {
                    (Some(v), Some(w)) => diff(v, w, &child, out),
                    _ if EVERY_WRITE.contains(&child.as_str()) => {}
                    _ => out.push(child),
                }
            }
        }
        _ if a != b => out.push(path.to_string()),
        _ => {}
    }
}

fn names_of(list: &[&Resource]) -> String {
    let mut names: Vec<String> = list.iter().take(NAMED).map(|r| r.object_name()).collect();
    if list.len() > NAMED {
        names.push(format!("and {} more", list.len() - NAMED));
    }
    names.join(", ")
}

/// The preflight of an update to `target` whose [`plan::plan`] is `plan` (capabilities,
/// created, updated, deleted and left-behind resources), with the findings the live facts add.
pub fn report(target: &Payload, plan: Plan, live: &Live) -> Report {
    let to = target.version().unwrap_or("the target release");
    let mut findings = Vec::new();
    if !plan.reasons.is_empty() {
        findings.push(implicitly_enabled_finding(to, &plan.reasons));
    }
    let crds = crd_manifests(target, &plan);
    if let Some(f) = stored_versions_finding(to, &crds, &live.stored_versions) {
        findings.push(f);
    }
    let stored = live.stored.clone();
    findings.extend(stored.findings);
    let mut incomplete = live.incomplete.clone();
    incomplete.extend(stored.errors);
    if !plan.left_behind.is_empty() {
        findings.push(left_behind_finding(to, &plan.left_behind));
    }
    if !live.dry_run_rejections.is_empty() {
        findings.push(dry_run_finding(to, &live.dry_run_rejections));
    }
    for (name, message, blocking) in &live.preconditions {
        let kind = if *blocking { "blocks" } else { "warns about" };
        findings.push(Finding {
            name: name.clone(),
            message: format!("The update precondition {name} {kind} an update to {to}: {message}"),
            url: PRECONDITIONS_URL.to_string(),
        });
    }
    for (check, outcome) in &live.checks {
        if let Some(f) = check.finding(outcome) {
            findings.push(f);
        }
    }
    if !live.invalid_checks.is_empty() {
        let lines: Vec<String> = live
            .invalid_checks
            .iter()
            .map(|e| format!("* {e}"))
            .collect();
        findings.push(Finding {
            name: INVALID_CHECKS.into(),
            message: format!(
                "{to} ships preflight checks that cannot be evaluated, so what they guard against is unknown:\n{}",
                lines.join("\n")
            ),
            url: PRECONDITIONS_URL.into(),
        });
    }
    if !incomplete.is_empty() {
        let lines: Vec<String> = incomplete.iter().map(|e| format!("* {e}")).collect();
        findings.push(Finding {
            name: INCOMPLETE.into(),
            message: format!(
                "Parts of the preflight of {to} could not be done, so their risks are unknown (it is evaluated again on the next resync):\n{}",
                lines.join("\n")
            ),
            url: PRECONDITIONS_URL.into(),
        });
    }
    // One finding per name (a release's check may reuse a built-in name): the first wins.
    let mut seen = BTreeSet::new();
    findings.retain(|f| seen.insert(f.name.clone()));
    Report {
        from_version: plan.from_version,
        to_version: plan.to_version,
        implicitly_enabled_capabilities: plan.reasons,
        create: plan.create,
        update: plan.update.into_iter().map(|u| u.resource).collect(),
        delete: plan.delete,
        left_behind: plan.left_behind,
        unchanged: plan.unchanged,
        findings,
        live_changes: (live.live_changes.iter())
            .map(|(resource, fields)| LiveChange {
                resource: resource.clone(),
                fields: fields.clone(),
            })
            .collect(),
        unevaluated_cel_rules: stored.unevaluated_rules,
    }
}

fn implicitly_enabled_finding(to: &str, reasons: &BTreeMap<Capability, Vec<Cause>>) -> Finding {
    let mut message = format!(
        "Updating to {to} enables capabilities implicitly; once enabled, a capability cannot be disabled again:"
    );
    for (capability, causes) in reasons {
        let causes: Vec<String> = (causes.iter())
            .map(|c| {
                let what = plan::object_name(&c.group, &c.kind, &c.namespace, &c.name);
                format!("{what} ({})", c.file)
            })
            .collect();
        message.push_str(&format!("\n* {capability}: {}", causes.join(", ")));
    }
    let names: Vec<&str> = reasons.keys().map(Capability::as_str).collect();
    message.push_str(&format!(
        "\nTo choose for yourself, add {} to spec.capabilities.additionalEnabledCapabilities before updating, or accept this risk.",
        names.join(", ")
    ));
    Finding {
        name: IMPLICITLY_ENABLED.into(),
        message,
        url: CAPABILITIES_URL.into(),
    }
}

/// The target's CustomResourceDefinitions the update creates or changes.
pub fn crd_manifests<'p>(target: &'p Payload, plan: &Plan) -> Vec<&'p Manifest> {
    (plan::changed_manifests(target, plan).into_iter())
        .filter(|m| m.gvk.is("apiextensions.k8s.io", "CustomResourceDefinition"))
        .collect()
}

/// The versions a CRD manifest serves.
fn served_versions(crd: &serde_json::Value) -> BTreeSet<String> {
    let versions = crd.pointer("/spec/versions").and_then(|v| v.as_array());
    (versions.into_iter().flatten())
        .filter(|v| v.get("served").and_then(|s| s.as_bool()) == Some(true))
        .filter_map(|v| Some(v.get("name")?.as_str()?.to_string()))
        .collect()
}

/// A CRD the target stops serving a version of while the live CRD's `storedVersions` still
/// lists it: objects stored in that version could no longer be read, and the API server
/// refuses the CRD update itself ("must appear in spec.versions") when the version is gone.
fn stored_versions_finding(
    to: &str,
    crds: &[&Manifest],
    stored: &BTreeMap<String, Vec<String>>,
) -> Option<Finding> {
    let mut lines = Vec::new();
    for crd in crds {
        let Some(stored) = stored.get(&crd.id.name) else {
            continue;
        };
        let served = served_versions(&crd.object());
        let dropped: Vec<&str> = (stored.iter())
            .filter(|v| !served.contains(*v))
            .map(String::as_str)
            .collect();
        if dropped.is_empty() {
            continue;
        }
        lines.push(format!(
            "* CustomResourceDefinition {} ({}): {to} no longer serves {} but status.storedVersions lists {}; migrate the stored objects to a served version ({}) and remove the others from status.storedVersions first",
            crd.id.name,
            crd.file,
            dropped.join(", "),
            stored.join(", "),
            served.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    (!lines.is_empty()).then(|| Finding {
        name: STORED_VERSION_REMOVED.into(),
        message: format!(
            "Objects stored in versions {to} stops serving would become unreadable:\n{}",
            lines.join("\n")
        ),
        url: STORED_VERSIONS_URL.into(),
    })
}

fn left_behind_finding(to: &str, left: &[LeftBehind]) -> Finding {
    let lines: Vec<String> = (left.iter())
        .map(|l| {
            format!(
                "* {} ({}): {}",
                l.resource.object_name(),
                l.resource.file,
                l.reason
            )
        })
        .collect();
    Finding {
        name: LEFT_BEHIND.into(),
        message: format!(
            "{} resources the current release manages are not managed by {to}; the update leaves them in the cluster, unmanaged:\n{}",
            left.len(),
            lines.join("\n")
        ),
        url: LEFT_BEHIND_URL.into(),
    }
}

fn dry_run_finding(to: &str, rejections: &[(Resource, String)]) -> Finding {
    let lines: Vec<String> = (rejections.iter())
        .map(|(r, why)| format!("* {} ({}): {why}", r.object_name(), r.file))
        .collect();
    Finding {
        name: DRY_RUN_REJECTED.into(),
        message: format!(
            "The API server refuses {} of {to}'s resources (server-side apply, dry run):\n{}",
            rejections.len(),
            lines.join("\n")
        ),
        url: DRY_RUN_URL.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Cluster;

    /// The preflight of `from` -> `to` on `cluster`, with `live`.
    fn report_of(from: &Payload, to: &Payload, cluster: &Cluster, live: &Live) -> Report {
        report(to, plan::plan(from, to, cluster), live)
    }
    use crate::include::{CapabilityFilter, InclusionConfig};

    fn payload(version: &str, files: &[(&str, String)]) -> Payload {
        crate::payload::of_release_manifests(version, files)
    }

    const INCLUDE: &str =
        "    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    fn cm(name: &str, extra: &str) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\n  annotations:\n{INCLUDE}{extra}data:\n  k: v\n"
        )
    }

    fn crd(versions: &[(&str, bool)]) -> String {
        let versions: String = (versions.iter())
            .map(|(v, served)| {
                format!(
                    "  - name: {v}\n    served: {served}\n    storage: {}\n",
                    *v == "v1"
                )
            })
            .collect();
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  annotations:\n{INCLUDE}spec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n{versions}"
        )
    }

    fn cluster() -> Cluster {
        let caps = |names: &[&str]| names.iter().map(|n| Capability::from(*n)).collect();
        Cluster {
            config: InclusionConfig {
                required_feature_set: Some(String::new()),
                profile: Some("self-managed-high-availability".into()),
                capabilities: Some(CapabilityFilter {
                    known_capabilities: caps(&["A", "B"]),
                    enabled_capabilities: caps(&["A"]),
                }),
                enabled_feature_gates: Some(BTreeSet::new()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn names(report: &Report) -> Vec<&str> {
        report.findings.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn a_clean_update_has_no_findings() {
        let from = payload("4.17.0", &[("0000_10_a_1.yaml", cm("x", ""))]);
        let to = payload("4.18.0", &[("0000_10_a_1.yaml", cm("x", ""))]);
        let report = report_of(&from, &to, &cluster(), &Live::default());
        assert!(report.findings.is_empty());
        assert_eq!(
            report.summary(),
            "Preflight of 4.18.0: no risks; it would create 0, update 0, delete 0 and leave behind 0 resources"
        );
    }

    #[test]
    fn every_built_in_finding() {
        let from = payload(
            "4.17.0",
            &[
                ("0000_10_a_1.yaml", cm("moves-to-b", "")),
                ("0000_10_a_2.yaml", cm("dropped", "")),
                ("0000_10_a_3.yaml", crd(&[("v1alpha1", true), ("v1", true)])),
            ],
        );
        let to = payload(
            "4.18.0",
            &[
                (
                    "0000_10_a_1.yaml",
                    cm("moves-to-b", "    capability.openshift.io/name: B\n"),
                ),
                ("0000_10_a_3.yaml", crd(&[("v1", true)])),
                ("0000_10_a_4.yaml", cm("new", "")),
            ],
        );
        let new = Resource {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "ns".into(),
            name: "new".into(),
            file: "0000_10_a_4.yaml".into(),
        };
        let live = Live {
            stored_versions: BTreeMap::from([(
                "widgets.example.com".to_string(),
                vec!["v1alpha1".to_string(), "v1".to_string()],
            )]),
            stored: Default::default(),
            live_changes: vec![],
            dry_run_rejections: vec![(new, "admission webhook said no".into())],
            checks: vec![],
            invalid_checks: vec![],
            incomplete: vec!["CustomResourceDefinition x: cannot read it: forbidden".into()],
            preconditions: vec![(
                "ClusterVersionGiantHop".into(),
                "Precondition \"ClusterVersionGiantHop\" failed because of \"MultipleMinorVersionsUpdate\": ...".into(),
                true,
            )],
        };
        let report = report_of(&from, &to, &cluster(), &live);
        assert_eq!(
            names(&report),
            [
                IMPLICITLY_ENABLED,
                STORED_VERSION_REMOVED,
                LEFT_BEHIND,
                DRY_RUN_REJECTED,
                "ClusterVersionGiantHop",
                INCOMPLETE
            ]
        );
        let message = |name: &str| {
            let f = report.findings.iter().find(|f| f.name == name).unwrap();
            f.message.clone()
        };
        assert_eq!(
            message(IMPLICITLY_ENABLED),
            "Updating to 4.18.0 enables capabilities implicitly; once enabled, a capability cannot be disabled again:\n* B: ConfigMap ns/moves-to-b (0000_10_a_1.yaml)\nTo choose for yourself, add B to spec.capabilities.additionalEnabledCapabilities before updating, or accept this risk."
        );
        assert!(
            message(STORED_VERSION_REMOVED).contains("* CustomResourceDefinition widgets.example.com (0000_10_a_3.yaml): 4.18.0 no longer serves v1alpha1 but status.storedVersions lists v1alpha1, v1; migrate the stored objects to a served version (v1)"),
            "{}",
            message(STORED_VERSION_REMOVED)
        );
        assert_eq!(
            message(LEFT_BEHIND),
            "1 resources the current release manages are not managed by 4.18.0; the update leaves them in the cluster, unmanaged:\n* ConfigMap ns/dropped (0000_10_a_2.yaml): removed from the payload"
        );
        assert!(
            message(DRY_RUN_REJECTED)
                .ends_with("* ConfigMap ns/new (0000_10_a_4.yaml): admission webhook said no")
        );
        assert!(message("ClusterVersionGiantHop").starts_with(
            "The update precondition ClusterVersionGiantHop blocks an update to 4.18.0: "
        ));
        assert_eq!(
            report.summary(),
            format!(
                "Preflight of 4.18.0: 6 risks ({IMPLICITLY_ENABLED}, {STORED_VERSION_REMOVED}, {LEFT_BEHIND}, {DRY_RUN_REJECTED}, ClusterVersionGiantHop, {INCOMPLETE}); it would create 1, update 2, delete 0 and leave behind 1 resources\nCreated: ConfigMap ns/new\nLeft behind: ConfigMap ns/dropped"
            )
        );
    }

    #[test]
    fn what_changes_live() {
        let live = serde_json::json!({
            "metadata": {"name": "x", "resourceVersion": "1", "labels": {"a": "1"}},
            "data": {"k": "v", "gone": "x"}, "spec": {"ports": [1, 2]}, "status": {"ok": true}
        });
        let after = serde_json::json!({
            "metadata": {"name": "x", "resourceVersion": "2", "labels": {"a": "2"},
                         "managedFields": [{"manager": "cvo"}]},
            "data": {"k": "v", "new": "y"}, "spec": {"ports": [1, 3]}
        });
        assert_eq!(
            changed_fields(&live, &after),
            ["data.gone", "data.new", "metadata.labels.a", "spec.ports"]
        );
        assert!(changed_fields(&live, &live).is_empty());
        let from = payload("4.17.0", &[("0000_10_a_1.yaml", cm("x", ""))]);
        let to = payload("4.18.0", &[("0000_10_a_1.yaml", cm("x", "    a: b\n"))]);
        let resource = Resource {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "ns".into(),
            name: "x".into(),
            file: "0000_10_a_1.yaml".into(),
        };
        let fields: Vec<String> = (1..=7).map(|i| format!("data.k{i}")).collect();
        let live = Live {
            live_changes: vec![(resource, fields)],
            ..Default::default()
        };
        let report = report_of(&from, &to, &cluster(), &live);
        assert_eq!(
            report.summary(),
            "Preflight of 4.18.0: no risks; it would create 0, update 1, delete 0 and leave behind 0 resources; 1 live objects would change\nChanged live: ConfigMap ns/x (data.k1, data.k2, data.k3, data.k4, data.k5, and 2 more)"
        );
    }

    #[test]
    fn a_stored_version_still_served_is_no_finding() {
        let from = payload("4.17.0", &[("0000_10_a_3.yaml", crd(&[("v1", true)]))]);
        let to = payload(
            "4.18.0",
            &[(
                "0000_10_a_3.yaml",
                crd(&[("v1alpha1", false), ("v1", true)]),
            )],
        );
        let stored = |versions: &[&str]| Live {
            stored_versions: BTreeMap::from([(
                "widgets.example.com".to_string(),
                versions.iter().map(|v| v.to_string()).collect(),
            )]),
            ..Default::default()
        };
        assert!(
            report_of(&from, &to, &cluster(), &stored(&["v1"]))
                .findings
                .is_empty()
        );
        // Listed but no longer served: still unreadable.
        let r = report_of(&from, &to, &cluster(), &stored(&["v1alpha1", "v1"]));
        assert_eq!(names(&r), [STORED_VERSION_REMOVED]);
    }
}
