//! Capability consistency across documents: the risk the component-selection enhancement
//! names ("inconsistent or partial labeling will result in inconsistent or partially deployed
//! resources") and the leftovers it warns about. Each check runs per cluster configuration of
//! the scope, so documents that never meet are never compared.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::presence::{Mask, Presence};
use super::{Code, Doc, Finding, locate};
use crate::capability::DeclaredCapability;
use crate::graph::parse_run_level;
use crate::manifest::{CAPABILITY_ANNOTATION, DELETE_ANNOTATION, Manifest, ManifestId};
use crate::payload::RELEASE_METADATA;

const RBAC: &str = "rbac.authorization.k8s.io";

pub(crate) fn check(docs: &[Doc], presence: &Presence) -> Vec<Finding> {
    let caps: Vec<BTreeSet<String>> = docs.iter().map(|d| capabilities(&d.manifest)).collect();
    let index = Index::new(docs);
    let mut findings = partial_capabilities(docs, &caps, presence);
    findings.extend(namespace_leftovers(docs, &caps, &index, presence));
    findings.extend(namespace_references(docs, &caps, &index, presence));
    findings.extend(role_references(docs, &caps, &index, presence));
    findings
}

/// The kinds whose objects run containers.
const WORKLOADS: [(&str, &str); 8] = [
    ("apps", "Deployment"),
    ("apps", "DaemonSet"),
    ("apps", "StatefulSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("", "Pod"),
    ("", "ReplicationController"),
];

/// How many workloads a message names before it says how many more there are.
const NAMED_WORKLOADS: usize = 3;

/// A capability the payload declares that a baseline set includes, whose documents run a
/// workload: every cluster on that baseline runs it, a new install and an update alike, without
/// an administrator asking (the set may be meant; the warning says what it costs).
pub(crate) fn baseline_workloads(docs: &[Doc], declared: &[DeclaredCapability]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for capability in declared {
        let sets = capability.baseline_sets();
        if sets.is_empty() {
            continue;
        }
        let workloads: Vec<String> = (docs.iter())
            .filter(|d| WORKLOADS.iter().any(|(g, k)| d.manifest.gvk.is(g, k)))
            .filter(|d| d.manifest.annotation(DELETE_ANNOTATION) != Some("true"))
            .filter(|d| capabilities(&d.manifest).contains(capability.name.as_str()))
            .map(|d| format!("{} ({})", describe(&d.manifest), d.path))
            .collect();
        if workloads.is_empty() {
            continue;
        }
        let mut named = workloads[..workloads.len().min(NAMED_WORKLOADS)].join(", ");
        if workloads.len() > NAMED_WORKLOADS {
            named.push_str(&format!(" and {} more", workloads.len() - NAMED_WORKLOADS));
        }
        let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
        findings.push(
            Finding::new(
                Code::CapabilityBaseline,
                format!("release-manifests/{RELEASE_METADATA}"),
                format!(
                    "capability {:?} is in the baseline sets {} and runs {named}: every cluster on one of these baselines (vCurrent is the default) runs it, on install and on its next update, without an administrator asking for it",
                    capability.name.as_str(),
                    sets.join(", ")
                ),
            )
            .help(format!(
                "if every such cluster should run it, keep the sets; to make it opt-in, declare it with \"sets\": [] so that an administrator turns it on with spec.capabilities.additionalEnabledCapabilities: [{:?}]",
                capability.name.as_str()
            )),
        );
    }
    findings
}

/// The capability names of a document (empty names are a separate finding).
fn capabilities(m: &Manifest) -> BTreeSet<String> {
    m.capabilities()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.as_str().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// Documents by resource id, and Namespace documents and namespaced documents by namespace.
struct Index<'a> {
    by_id: HashMap<&'a ManifestId, Vec<usize>>,
    namespaces: HashMap<&'a str, Vec<usize>>,
    in_namespace: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Index<'a> {
    fn new(docs: &'a [Doc]) -> Self {
        let mut index = Index {
            by_id: HashMap::new(),
            namespaces: HashMap::new(),
            in_namespace: HashMap::new(),
        };
        for (i, doc) in docs.iter().enumerate() {
            let id = &doc.manifest.id;
            index.by_id.entry(id).or_default().push(i);
            if is_namespace(&doc.manifest) {
                index.namespaces.entry(&id.name).or_default().push(i);
            } else if !id.namespace.is_empty() {
                index.in_namespace.entry(&id.namespace).or_default().push(i);
            }
        }
        index
    }
}

fn is_namespace(m: &Manifest) -> bool {
    m.gvk.is("", "Namespace")
}

fn describe(m: &Manifest) -> String {
    if m.id.namespace.is_empty() {
        format!("{} {}", m.id.kind, m.id.name)
    } else {
        format!("{} {}/{}", m.id.kind, m.id.namespace, m.id.name)
    }
}

fn join(caps: &BTreeSet<String>) -> String {
    caps.iter().cloned().collect::<Vec<_>>().join("+")
}

fn bit(config: usize) -> Mask {
    1 << config
}

/// What a per-configuration check found about one document, merged over configurations.
struct Hit {
    mask: Mask,
    /// The first configuration's detail, for the message.
    detail: String,
}

fn record(
    hits: &mut BTreeMap<(usize, String), Hit>,
    key: (usize, String),
    config: usize,
    detail: impl FnOnce() -> String,
) {
    hits.entry(key)
        .and_modify(|h| h.mask |= bit(config))
        .or_insert_with(|| Hit {
            mask: bit(config),
            detail: detail(),
        });
}

fn profiles_note(presence: &Presence, mask: Mask) -> String {
    format!("profiles: {}", presence.profiles(mask).join(", "))
}

/// A component (the file-name component) most of whose documents carry capability C, with a
/// document that carries no capability: disabling C removes the component but not that
/// document. CRDs are exempt (upstream keeps APIs installed: deleting a CRD deletes every
/// custom resource), and so are Namespaces (see [`namespace_leftovers`]).
fn partial_capabilities(
    docs: &[Doc],
    caps: &[BTreeSet<String>],
    presence: &Presence,
) -> Vec<Finding> {
    let mut hits = BTreeMap::new();
    for members in components(docs).values() {
        for config in 0..presence.configs.len() {
            let present = present_in(members, presence, config);
            for (cap, n) in majority_capabilities(caps, &present) {
                let unlabelled = present
                    .iter()
                    .filter(|&&i| caps[i].is_empty() && !exempt_from_partial(&docs[i].manifest));
                for &i in unlabelled {
                    record(&mut hits, (i, cap.to_string()), config, || {
                        format!(
                            "{n} of its {} documents for {} carry it",
                            present.len(),
                            presence.configs[config].describe()
                        )
                    });
                }
            }
        }
    }
    hits.into_iter()
        .map(|((i, cap), hit)| partial_finding(&docs[i], &cap, &hit, presence))
        .collect()
}

/// Documents by the component of their file name (files without one are left out).
fn components(docs: &[Doc]) -> BTreeMap<&str, Vec<usize>> {
    let mut components: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, doc) in docs.iter().enumerate() {
        if let Some((_, component)) = parse_run_level(&doc.manifest.file) {
            components.entry(component).or_default().push(i);
        }
    }
    components
}

fn present_in(members: &[usize], presence: &Presence, config: usize) -> Vec<usize> {
    members
        .iter()
        .copied()
        .filter(|&i| presence.is_present(i, config))
        .collect()
}

/// The capabilities more than half of the documents carry, with how many carry each.
fn majority_capabilities<'c>(
    caps: &'c [BTreeSet<String>],
    docs: &[usize],
) -> Vec<(&'c str, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in docs {
        for cap in &caps[i] {
            *counts.entry(cap.as_str()).or_insert(0) += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| n * 2 > docs.len())
        .collect()
}

fn partial_finding(doc: &Doc, cap: &str, hit: &Hit, presence: &Presence) -> Finding {
    let m = &doc.manifest;
    let component = parse_run_level(&m.file).map_or("", |(_, c)| c);
    let (line, column) = locate::document_start(m);
    Finding::new(
        Code::PartialCapability,
        &*doc.path,
        format!(
            "{} carries no capability, but its component {component} is capability {cap} ({}; {}): clusters that disable {cap} keep it",
            describe(m),
            hit.detail,
            profiles_note(presence, hit.mask)
        ),
    )
    .at(line, column)
    .help(format!(
        "add {CAPABILITY_ANNOTATION}: {cap} if it is part of {cap}; if it must stay when {cap} is disabled, move it to another component's file"
    ))
}

fn exempt_from_partial(m: &Manifest) -> bool {
    is_namespace(m) || m.gvk.is("apiextensions.k8s.io", "CustomResourceDefinition")
}

/// A Namespace without capability C whose objects all carry C: clusters that disable C keep
/// an empty namespace, the leftover the enhancement warns about.
fn namespace_leftovers(
    docs: &[Doc],
    caps: &[BTreeSet<String>],
    index: &Index,
    presence: &Presence,
) -> Vec<Finding> {
    let mut hits = BTreeMap::new();
    for (name, namespace_docs) in &index.namespaces {
        let objects = index.in_namespace.get(name).map_or(&[][..], Vec::as_slice);
        for &ns in namespace_docs {
            for config in 0..presence.configs.len() {
                let present: Vec<usize> = objects
                    .iter()
                    .copied()
                    .filter(|&o| presence.together(ns, o) & bit(config) != 0)
                    .collect();
                let Some(common) = common_capabilities(caps, &present) else {
                    continue;
                };
                let missing: BTreeSet<String> = common.difference(&caps[ns]).cloned().collect();
                if !missing.is_empty() {
                    record(&mut hits, (ns, join(&missing)), config, || {
                        let config = presence.configs[config].describe();
                        format!("{} objects for {config}", present.len())
                    });
                }
            }
        }
    }
    hits.into_iter()
        .map(|((ns, missing), hit)| leftover_finding(&docs[ns], &missing, &hit, presence))
        .collect()
}

fn leftover_finding(namespace: &Doc, missing: &str, hit: &Hit, presence: &Presence) -> Finding {
    let m = &namespace.manifest;
    let (line, column) = locate::document_start(m);
    Finding::new(
        Code::NamespaceCapability,
        &*namespace.path,
        format!(
            "every object the payload puts in namespace {} carries capability {missing} ({}; {}), but the Namespace does not: clusters that disable {missing} keep an empty namespace",
            m.id.name,
            hit.detail,
            profiles_note(presence, hit.mask)
        ),
    )
    .at(line, column)
    .help(format!("add {CAPABILITY_ANNOTATION}: {missing} to the Namespace"))
}

/// The capabilities all the given documents carry; `None` for no documents.
fn common_capabilities(caps: &[BTreeSet<String>], docs: &[usize]) -> Option<BTreeSet<String>> {
    let (first, rest) = docs.split_first()?;
    Some(rest.iter().fold(caps[*first].clone(), |common, &i| {
        common.intersection(&caps[i]).cloned().collect()
    }))
}

/// Among `targets` present with `doc` in `config`, the first whose capabilities `doc` lacks,
/// unless another present target needs nothing `doc` lacks (then the target exists anyway).
fn unmet_target(
    doc: usize,
    targets: &[usize],
    caps: &[BTreeSet<String>],
    presence: &Presence,
    config: usize,
) -> Option<(usize, BTreeSet<String>)> {
    let present: Vec<usize> = targets
        .iter()
        .copied()
        .filter(|&t| presence.together(doc, t) & bit(config) != 0)
        .collect();
    let lacking =
        |t: usize| -> BTreeSet<String> { caps[t].difference(&caps[doc]).cloned().collect() };
    if present.is_empty() || present.iter().any(|&t| lacking(t).is_empty()) {
        return None;
    }
    let first = present[0];
    Some((first, lacking(first)))
}

/// A namespaced object in a namespace that only exists with capability C, without carrying C
/// itself: with C disabled the CVO cannot create it (namespace not found) and the sync fails.
fn namespace_references(
    docs: &[Doc],
    caps: &[BTreeSet<String>],
    index: &Index,
    presence: &Presence,
) -> Vec<Finding> {
    let mut hits: BTreeMap<(usize, String), (usize, Mask)> = BTreeMap::new();
    for (name, objects) in &index.in_namespace {
        let Some(namespace_docs) = index.namespaces.get(name) else {
            continue;
        };
        for &o in objects {
            for config in 0..presence.configs.len() {
                if let Some((ns, lacking)) = unmet_target(o, namespace_docs, caps, presence, config)
                {
                    hits.entry((o, join(&lacking))).or_insert((ns, 0)).1 |= bit(config);
                }
            }
        }
    }
    hits.into_iter()
        .map(|((o, lacking), (ns, mask))| {
            let target = &docs[ns];
            let what = format!(
                "{} does not carry capability {lacking}, but its Namespace is part of it ({}:{}; {}): clusters that disable {lacking} fail to create it (namespace not found)",
                describe(&docs[o].manifest),
                target.path,
                target.manifest.line,
                profiles_note(presence, mask)
            );
            let also = format!(", or take {lacking} off the Namespace");
            let at = locate::document_start(&docs[o].manifest);
            reference_finding(&docs[o], what, at, &lacking, &also)
        })
        .collect()
}

/// The fix for a missing capability; `also` names the other way out, if there is one.
fn reference_finding(
    doc: &Doc,
    message: String,
    at: (usize, usize),
    lacking: &str,
    also: &str,
) -> Finding {
    Finding::new(Code::CapabilityReference, &*doc.path, message)
        .at(at.0, at.1)
        .help(format!(
            "add {lacking} to its {CAPABILITY_ANNOTATION} (names are joined by `+`){also}"
        ))
}

/// A RoleBinding or ClusterRoleBinding whose role only exists with capability C, without
/// carrying C itself: with C disabled it grants nothing and is left behind.
fn role_references(
    docs: &[Doc],
    caps: &[BTreeSet<String>],
    index: &Index,
    presence: &Presence,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (b, doc) in docs.iter().enumerate() {
        let Some(role) = binding_role(&doc.manifest) else {
            continue;
        };
        let Some(targets) = index.by_id.get(&role) else {
            continue;
        };
        let mut hit: Option<(usize, BTreeSet<String>, Mask)> = None;
        for config in 0..presence.configs.len() {
            if let Some((t, lacking)) = unmet_target(b, targets, caps, presence, config) {
                hit.get_or_insert((t, lacking, 0)).2 |= bit(config);
            }
        }
        if let Some((t, lacking, mask)) = hit {
            let lacking = join(&lacking);
            let what = format!(
                "{} binds {} {}, which is part of capability {lacking} ({}:{}; {}), but does not carry {lacking} itself: clusters that disable {lacking} keep a binding to nothing",
                describe(&doc.manifest),
                role.kind,
                role.name,
                docs[t].path,
                docs[t].manifest.line,
                profiles_note(presence, mask)
            );
            let at = locate::key(&doc.manifest, "roleRef");
            findings.push(reference_finding(doc, what, at, &lacking, ""));
        }
    }
    findings
}

/// The id of the role a RoleBinding's or ClusterRoleBinding's `roleRef` names (a Role in the
/// binding's namespace, or a ClusterRole); `None` for any other document.
fn binding_role(binding: &Manifest) -> Option<ManifestId> {
    if binding.gvk.group != RBAC
        || !matches!(
            binding.id.kind.as_str(),
            "RoleBinding" | "ClusterRoleBinding"
        )
    {
        return None;
    }
    let object = binding.object();
    let reference = object.get("roleRef")?;
    let kind = reference.get("kind").and_then(Value::as_str)?;
    let name = reference.get("name").and_then(Value::as_str)?;
    let namespace = match kind {
        "Role" => binding.id.namespace.clone(),
        "ClusterRole" => String::new(),
        _ => return None,
    };
    Some(ManifestId {
        group: RBAC.to_string(),
        kind: kind.to_string(),
        namespace,
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::documents::tests::docs_of;
    use crate::validate::presence::Scope;

    fn object(kind: &str, namespace: &str, name: &str, cap: &str, extra: &str) -> String {
        let (api, kind) = kind.split_once(' ').unwrap();
        let mut text = format!("apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n");
        if !namespace.is_empty() {
            text.push_str(&format!("  namespace: {namespace}\n"));
        }
        text.push_str("  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n");
        if !cap.is_empty() {
            text.push_str(&format!("    capability.openshift.io/name: {cap}\n"));
        }
        text + extra
    }

    const NS: &str = "v1 Namespace";
    const CM: &str = "v1 ConfigMap";
    const CRD: &str = "apiextensions.k8s.io/v1 CustomResourceDefinition";

    fn run(files: &[(&str, String)]) -> Vec<Finding> {
        let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        let docs = docs_of(&files);
        let presence = Presence::compute(&docs, &Scope::all(), None);
        check(&docs, &presence)
    }

    fn codes(found: &[Finding]) -> Vec<(Code, &str)> {
        found.iter().map(|f| (f.code, f.file.as_str())).collect()
    }

    #[test]
    fn a_consistently_labelled_component_is_fine() {
        let found = run(&[
            (
                "0000_50_console_00_ns.yaml",
                object(NS, "", "openshift-console", "Console", ""),
            ),
            (
                "0000_50_console_01_cm.yaml",
                object(CM, "openshift-console", "a", "Console", ""),
            ),
            (
                "0000_50_console_02_crd.yaml",
                object(CRD, "", "consoles.x", "", ""),
            ),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_mostly_capability_component_with_an_unlabelled_document() {
        let found = run(&[
            (
                "0000_50_console_01_a.yaml",
                object(CM, "x", "a", "Console", ""),
            ),
            (
                "0000_50_console_02_b.yaml",
                object(CM, "x", "b", "Console", ""),
            ),
            ("0000_50_console_03_c.yaml", object(CM, "x", "c", "", "")),
            ("0000_50_other_01_d.yaml", object(CM, "x", "d", "", "")),
        ]);
        assert_eq!(
            codes(&found),
            vec![(
                Code::PartialCapability,
                "release-manifests/0000_50_console_03_c.yaml"
            )]
        );
        assert_eq!(
            found[0].message,
            "ConfigMap x/c carries no capability, but its component console is capability Console (2 of its 3 documents for profile self-managed-high-availability, feature set Default carry it; profiles: self-managed-high-availability): clusters that disable Console keep it"
        );
        assert_eq!((found[0].line, found[0].column), (Some(1), Some(1)));
    }

    #[test]
    fn a_namespace_left_empty_when_its_capability_is_disabled() {
        let found = run(&[
            ("0000_50_a_00_ns.yaml", object(NS, "", "ns", "", "")),
            ("0000_50_b_01_a.yaml", object(CM, "ns", "a", "Insights", "")),
            (
                "0000_50_c_01_b.yaml",
                object(CM, "ns", "b", "Insights+Console", ""),
            ),
        ]);
        assert_eq!(
            codes(&found),
            vec![(
                Code::NamespaceCapability,
                "release-manifests/0000_50_a_00_ns.yaml"
            )]
        );
        assert!(found[0].message.starts_with(
            "every object the payload puts in namespace ns carries capability Insights (2 objects for profile self-managed-high-availability"
        ));
        assert_eq!(
            found[0].help.as_deref(),
            Some("add capability.openshift.io/name: Insights to the Namespace")
        );
    }

    #[test]
    fn an_object_in_a_capability_namespace_without_the_capability() {
        let found = run(&[
            (
                "0000_50_a_00_ns.yaml",
                object(NS, "", "ns", "marketplace", ""),
            ),
            (
                "0000_50_b_01_a.yaml",
                object(CM, "ns", "a", "marketplace", ""),
            ),
            (
                "0000_50_c_01_b.yaml",
                object(CM, "ns", "b", "OperatorLifecycleManager", ""),
            ),
        ]);
        assert_eq!(
            codes(&found),
            vec![(
                Code::CapabilityReference,
                "release-manifests/0000_50_c_01_b.yaml"
            )]
        );
        assert!(found[0].message.starts_with(
            "ConfigMap ns/b does not carry capability marketplace, but its Namespace is part of it (release-manifests/0000_50_a_00_ns.yaml:1;"
        ), "{}", found[0].message);
        // Another Namespace manifest without the capability makes the namespace exist anyway.
        let found = run(&[
            (
                "0000_50_a_00_ns.yaml",
                object(NS, "", "ns", "marketplace", ""),
            ),
            (
                "0000_50_b_00_ns.yaml",
                object(
                    NS,
                    "",
                    "ns",
                    "",
                    "    release.openshift.io/feature-set: TechPreviewNoUpgrade\n",
                ),
            ),
            ("0000_50_c_01_b.yaml", object(CM, "ns", "b", "", "")),
        ]);
        let refs: Vec<&Finding> = found
            .iter()
            .filter(|f| f.code == Code::CapabilityReference)
            .collect();
        assert_eq!(
            refs.len(),
            1,
            "still unmet outside TechPreviewNoUpgrade: {found:?}"
        );
    }

    #[test]
    fn a_binding_to_a_capability_role() {
        let role = object(
            "rbac.authorization.k8s.io/v1 ClusterRole",
            "",
            "r",
            "Console",
            "",
        );
        let binding = |cap: &str| {
            object(
                "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
                "",
                "b",
                cap,
                "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: r\n",
            )
        };
        let found = run(&[
            ("0000_50_a_01_r.yaml", role.clone()),
            ("0000_50_b_01_b.yaml", binding("")),
        ]);
        assert_eq!(
            codes(&found),
            vec![(
                Code::CapabilityReference,
                "release-manifests/0000_50_b_01_b.yaml"
            )]
        );
        assert_eq!((found[0].line, found[0].column), (Some(7), Some(1)));
        assert!(
            run(&[
                ("0000_50_a_01_r.yaml", role),
                ("0000_50_b_01_b.yaml", binding("Console"))
            ])
            .is_empty()
        );
    }
}
