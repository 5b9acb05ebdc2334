//! Whose a CustomResourceDefinition is: the CVO never replaces a CRD another operator owns.
//!
//! A payload may ship CRDs of API groups other operators own: `cvo`'s agents component ships
//! minimal `clusterdeployments.hive.openshift.io` and `agentclusterinstalls.extensions.hive.openshift.io`
//! CRDs (hive's and assisted-service's) and the `agent-install.openshift.io` ones
//! (assisted-service's), so that late binding works on a cluster without them. On a hub where
//! hive and assisted-service run, applying those would replace their CRDs and prune every
//! field of every stored object that `cvo`'s schema lacks. Such a CRD is a *stand-in*: the
//! CVO applies it only where the live CRD is absent or its own, and otherwise stands down
//! (leaves the live CRD alone and says why).
//!
//! Pure, over the CRDs' JSON (the render-only build lints with it too):
//! - [`stand_in`]: which payload CRDs are stand-ins (the [`STAND_IN_ANNOTATION`], or a group
//!   of [`KNOWN_OWNERS`]);
//! - [`judge`]: whose the live CRD is, from its owner labels and annotations, the managers of
//!   its spec (`metadata.managedFields`) and schema fields the payload's lacks (unless the CVO
//!   alone manages it: then it is another version of its own).

use std::collections::BTreeSet;

use serde_json::Value;

/// On a payload CRD: the operator whose CRD of the same name this one stands in for. The CVO
/// applies it only where no other operator's CRD of that name is live; `cvo validate` asks
/// for it on every CRD of a group in [`KNOWN_OWNERS`].
pub const STAND_IN_ANNOTATION: &str = "crds.cvo.openshift.io/stand-in-for";

/// API groups whose CRDs operators outside an OpenShift release payload install (on ACM/MCE
/// hubs), and the operator. Not the payload's own groups (`metal3.io` is the baremetal
/// operator's, which the release payload ships).
pub const KNOWN_OWNERS: &[(&str, &str)] = &[
    ("hive.openshift.io", "hive"),
    ("hiveinternal.openshift.io", "hive"),
    ("extensions.hive.openshift.io", "assisted-service"),
    ("agent-install.openshift.io", "assisted-service"),
    (
        "capi-provider.agent-install.openshift.io",
        "cluster-api-provider-agent",
    ),
    ("hypershift.openshift.io", "hypershift"),
    (
        "cluster.open-cluster-management.io",
        "open-cluster-management",
    ),
];

/// The operator that owns CRDs of `group`, if [`KNOWN_OWNERS`] knows it.
pub fn known_owner(group: &str) -> Option<&'static str> {
    KNOWN_OWNERS
        .iter()
        .find(|(g, _)| *g == group)
        .map(|(_, owner)| *owner)
}

/// What a payload CRD says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StandIn {
    /// The CRD's name (`plural.group`).
    pub name: String,
    pub group: String,
    /// Whose CRD it stands in for: the annotation's value, else the known owner of its group.
    pub owner: String,
    /// It carries [`STAND_IN_ANNOTATION`] (else only its group says so).
    pub declared: bool,
}

/// The payload CRD `crd` (its JSON) is a stand-in for another operator's: it says so, or its
/// group is one of [`KNOWN_OWNERS`]. `None` for any other document.
pub fn stand_in(crd: &Value) -> Option<StandIn> {
    if !is_crd(crd) {
        return None;
    }
    let group = str_at(crd, "/spec/group").unwrap_or_default();
    let declared = annotation(crd, STAND_IN_ANNOTATION).filter(|v| !v.is_empty());
    let owner = declared.or_else(|| known_owner(group))?;
    Some(StandIn {
        name: str_at(crd, "/metadata/name").unwrap_or_default().to_owned(),
        group: group.to_owned(),
        owner: owner.to_owned(),
        declared: declared.is_some(),
    })
}

fn is_crd(doc: &Value) -> bool {
    str_at(doc, "/kind") == Some("CustomResourceDefinition")
        && str_at(doc, "/apiVersion").is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
}

/// Why a live CRD is another operator's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// An owner label or annotation the payload's CRD does not carry (`olm.managed`,
    /// `operators.coreos.com/<package>.<namespace>`, `app.kubernetes.io/managed-by`, ...).
    Marker { key: String, value: String },
    /// A field manager other than the CVO (and other than a command-line tool) manages the
    /// spec.
    Manager(String),
    /// Schema fields the payload's CRD lacks (applying it would prune them from every stored
    /// object): their paths, e.g. `v1: spec.platform`.
    UnknownFields(Vec<String>),
    /// Versions the live CRD serves that the payload's does not.
    Versions(Vec<String>),
}

/// Whose the live CRD is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// There is none: the payload's may be created.
    Absent,
    /// The CVO's own (or identical to what it would apply): apply.
    Ours,
    /// Another operator's: stand down.
    Foreign(Foreign),
}

/// Another operator's CRD, and why `cvo` thinks so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Foreign {
    /// The CRD's name.
    pub name: String,
    /// The best guess at its owner: an OLM package, `app.kubernetes.io/managed-by`, a field
    /// manager; else the stand-in's known owner.
    pub owner: String,
    pub evidence: Vec<Evidence>,
}

impl std::fmt::Display for Foreign {
    /// `CustomResourceDefinition clusterdeployments.hive.openshift.io is hive's (fields
    /// managed by "hive-operator"; 212 schema fields ...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why: Vec<String> = self.evidence.iter().map(describe).collect();
        write!(
            f,
            "CustomResourceDefinition {} is {}'s ({})",
            self.name,
            self.owner,
            why.join("; ")
        )
    }
}

fn describe(evidence: &Evidence) -> String {
    match evidence {
        Evidence::Marker { key, value } => format!("{key}={value:?}"),
        Evidence::Manager(m) => format!("spec managed by {m:?}"),
        Evidence::UnknownFields(paths) => {
            let shown: Vec<&str> = paths.iter().take(3).map(String::as_str).collect();
            let more = match paths.len() {
                n if n > shown.len() => format!(", and {} more", n - shown.len()),
                _ => String::new(),
            };
            format!(
                "{} schema field{} this payload's lacks: {}{more}",
                paths.len(),
                if paths.len() == 1 { "" } else { "s" },
                shown.join(", ")
            )
        }
        Evidence::Versions(v) => format!("serves version {} this payload's does not", v.join(", ")),
    }
}

/// Labels and annotations an operator's installer puts on what it owns (OLM, Helm,
/// kustomize's common labels, controller-gen's generated CRDs). Keys ending in `/` are
/// prefixes.
const OWNER_MARKERS: &[&str] = &[
    "olm.managed",
    "olm.owner",
    "operators.coreos.com/",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
    "meta.helm.sh/release-name",
    "controller-gen.kubebuilder.io/version",
];

/// Field managers that are command-line tools a person runs, not operators: a CRD one of them
/// wrote is judged by its markers and schema.
fn is_tool(manager: &str) -> bool {
    manager.starts_with("kubectl") || manager == "oc" || manager.starts_with("oc-")
}

/// Whose the live CRD `live` is, the payload's `ours` beside it (`manager`: the CVO's field
/// manager). Any evidence makes it another operator's.
pub fn judge(ours: &Value, live: Option<&Value>, manager: &str) -> Ownership {
    let Some(live) = live else {
        return Ownership::Absent;
    };
    let name = str_at(live, "/metadata/name")
        .or_else(|| str_at(ours, "/metadata/name"))
        .unwrap_or_default()
        .to_owned();
    let mut evidence = Vec::new();
    let mut owner = None;
    for (key, value) in markers(live) {
        if marker_of(ours, &key).as_deref() == Some(value.as_str()) {
            continue;
        }
        if owner.is_none() {
            owner = owner_from_marker(&key, &value);
        }
        evidence.push(Evidence::Marker { key, value });
    }
    let managers = spec_managers(live);
    for m in &managers {
        if m != manager && !is_tool(m) {
            owner.get_or_insert_with(|| m.clone());
            evidence.push(Evidence::Manager(m.clone()));
        }
    }
    // A schema the CVO alone applied is its own, whatever its fields: another version of the
    // payload's (a field removed since, a version dropped).
    let only_ours = !managers.is_empty() && managers.iter().all(|m| m == manager);
    let (missing_versions, unknown) = schema_difference(ours, live);
    if !unknown.is_empty() && !only_ours {
        evidence.push(Evidence::UnknownFields(unknown));
    }
    if !missing_versions.is_empty() && !only_ours {
        evidence.push(Evidence::Versions(missing_versions));
    }
    if evidence.is_empty() {
        return Ownership::Ours;
    }
    let owner = owner
        .or_else(|| stand_in(ours).map(|s| s.owner))
        .unwrap_or_else(|| "another operator".to_owned());
    Ownership::Foreign(Foreign {
        name,
        owner,
        evidence,
    })
}

/// The owner markers `doc` carries, sorted by key.
fn markers(doc: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for field in ["labels", "annotations"] {
        let Some(map) = doc
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (key, value) in map {
            let matches = OWNER_MARKERS.iter().any(|m| match m.strip_suffix('/') {
                Some(_) => key.starts_with(m),
                None => key == m,
            });
            if matches {
                found.push((key.clone(), value.as_str().unwrap_or_default().to_owned()));
            }
        }
    }
    found.sort();
    found
}

fn marker_of(doc: &Value, key: &str) -> Option<String> {
    markers(doc)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// The owner a marker names: an OLM package (`operators.coreos.com/<package>.<namespace>`),
/// `app.kubernetes.io/managed-by`, `olm.owner` (a ClusterServiceVersion), a Helm release.
fn owner_from_marker(key: &str, value: &str) -> Option<String> {
    if let Some(rest) = key.strip_prefix("operators.coreos.com/") {
        let package = rest.split('.').next().unwrap_or(rest);
        return Some(package.to_owned());
    }
    match key {
        "app.kubernetes.io/managed-by" | "olm.owner" | "meta.helm.sh/release-name" => {
            Some(value.to_owned()).filter(|v| !v.is_empty())
        }
        _ => None,
    }
}

/// The managers of the live CRD's spec (entries of `metadata.managedFields` that are not of
/// a subresource and own something under `f:spec`), in order, once each.
fn spec_managers(live: &Value) -> Vec<String> {
    let mut seen = Vec::new();
    let entries = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array);
    for entry in entries.into_iter().flatten() {
        let subresource = entry.get("subresource").and_then(Value::as_str);
        if subresource.is_some_and(|s| !s.is_empty()) {
            continue;
        }
        if entry.pointer("/fieldsV1/f:spec").is_none() {
            continue;
        }
        if let Some(m) = entry.get("manager").and_then(Value::as_str)
            && !seen.iter().any(|s| s == m)
        {
            seen.push(m.to_owned());
        }
    }
    seen
}

/// The versions the live CRD serves that `ours` lacks, and the schema fields (per version both
/// have) that the live schema has and ours would prune.
fn schema_difference(ours: &Value, live: &Value) -> (Vec<String>, Vec<String>) {
    let versions = |doc: &Value| -> Vec<(String, Value)> {
        let list = doc.pointer("/spec/versions").and_then(Value::as_array);
        list.into_iter()
            .flatten()
            .filter_map(|v| {
                let name = v.get("name")?.as_str()?.to_owned();
                let schema = (v.pointer("/schema/openAPIV3Schema").cloned()).unwrap_or(Value::Null);
                Some((name, schema))
            })
            .collect()
    };
    let ours = versions(ours);
    let mut missing = Vec::new();
    let mut unknown = Vec::new();
    for (name, live_schema) in versions(live) {
        match ours.iter().find(|(n, _)| *n == name) {
            None => missing.push(name),
            Some((_, our_schema)) => {
                let mut paths = BTreeSet::new();
                lacking(our_schema, &live_schema, "", &mut paths);
                unknown.extend(paths.into_iter().map(|p| format!("{name}: {p}")));
            }
        }
    }
    (missing, unknown)
}

/// The property paths under `live` that `ours` does not accept. A node of ours that preserves
/// unknown fields, or takes any key (`additionalProperties`), accepts everything below it.
fn lacking(ours: &Value, live: &Value, path: &str, out: &mut BTreeSet<String>) {
    if ours.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    if let Some(items) = live.get("items") {
        let our_items = ours.get("items").unwrap_or(&Value::Null);
        lacking(our_items, items, &format!("{path}[]"), out);
    }
    let Some(properties) = live.get("properties").and_then(Value::as_object) else {
        return;
    };
    let accepts_any = ours
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false));
    let our_properties = ours.get("properties").and_then(Value::as_object);
    for (key, sub) in properties {
        // Every object has these; the API server never prunes them.
        if path.is_empty() && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let here = match path {
            "" => key.clone(),
            _ => format!("{path}.{key}"),
        };
        match our_properties.and_then(|p| p.get(key)) {
            Some(our_sub) => lacking(our_sub, sub, &here, out),
            None if accepts_any => {}
            None => {
                out.insert(here);
            }
        }
    }
}

/// The payload's stand-in CRD `ours` whose live CRD `live` is another operator's: where the
/// CVO stands down (`None` for any CRD that is no stand-in, absent, or the CVO's).
pub fn foreign_stand_in(ours: &Value, live: Option<&Value>, manager: &str) -> Option<Foreign> {
    stand_in(ours)?;
    match judge(ours, live, manager) {
        Ownership::Foreign(f) => Some(f),
        Ownership::Absent | Ownership::Ours => None,
    }
}

/// Whether the webhook configuration `webhook` has a rule on the objects of the stand-in CRD
/// `crd` (a second webhook on another operator's objects).
pub fn webhook_covers_stand_in(webhook: &Value, crd: &Value) -> bool {
    let Some(s) = stand_in(crd) else {
        return false;
    };
    let plural = str_at(crd, "/spec/names/plural").unwrap_or_default();
    webhook_covers(webhook, &s.group, plural)
}

/// Whether a rule of the webhook configuration `object` matches `plural` of `group`.
pub fn webhook_covers(object: &Value, group: &str, plural: &str) -> bool {
    let strings = |v: Option<&Value>| -> Vec<String> {
        (v.and_then(Value::as_array).into_iter().flatten())
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let webhooks = object.get("webhooks").and_then(Value::as_array);
    webhooks.into_iter().flatten().any(|w| {
        let rules = w.get("rules").and_then(Value::as_array);
        rules.into_iter().flatten().any(|r| {
            let groups = strings(r.get("apiGroups"));
            let resources = strings(r.get("resources"));
            groups.iter().any(|g| g == group || g == "*")
                && resources.iter().any(|res| {
                    let base = res.split('/').next().unwrap_or_default();
                    base == plural || base == "*"
                })
        })
    })
}

fn str_at<'a>(doc: &'a Value, pointer: &str) -> Option<&'a str> {
    doc.pointer(pointer).and_then(Value::as_str)
}

fn annotation<'a>(doc: &'a Value, key: &str) -> Option<&'a str> {
    doc.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CVO: &str = "cluster-version-operator";

    fn crd(name: &str, group: &str, spec_props: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": name.split('.').next(), "kind": "X"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": spec_props}}}}}]}
        })
    }

    fn managed(mut doc: Value, managers: &[(&str, Option<&str>)]) -> Value {
        let entries: Vec<Value> = managers
            .iter()
            .map(|(m, sub)| {
                let mut e = json!({"manager": m, "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
                                   "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:group": {}}}});
                if let Some(s) = sub {
                    e["subresource"] = json!(s);
                    e["fieldsV1"] = json!({"f:status": {}});
                }
                e
            })
            .collect();
        doc["metadata"]["managedFields"] = json!(entries);
        doc
    }

    fn cd(props: Value) -> Value {
        crd(
            "clusterdeployments.hive.openshift.io",
            "hive.openshift.io",
            props,
        )
    }

    #[test]
    fn stand_ins_by_group_or_annotation() {
        let ours = cd(json!({}));
        assert_eq!(
            stand_in(&ours),
            Some(StandIn {
                name: "clusterdeployments.hive.openshift.io".into(),
                group: "hive.openshift.io".into(),
                owner: "hive".into(),
                declared: false,
            })
        );
        let mut declared = crd("widgets.example.com", "example.com", json!({}));
        assert_eq!(stand_in(&declared), None);
        declared["metadata"]["annotations"] = json!({STAND_IN_ANNOTATION: "widget-operator"});
        let s = stand_in(&declared).unwrap();
        assert_eq!((s.owner.as_str(), s.declared), ("widget-operator", true));
        assert_eq!(
            stand_in(&json!({"kind": "ConfigMap", "apiVersion": "v1"})),
            None
        );
        assert_eq!(
            known_owner("agent-install.openshift.io"),
            Some("assisted-service")
        );
        assert_eq!(known_owner("config.openshift.io"), None);
    }

    #[test]
    fn absent_and_our_own() {
        let ours = cd(json!({"clusterName": {"type": "string"}}));
        assert_eq!(judge(&ours, None, CVO), Ownership::Absent);
        let live = managed(
            ours.clone(),
            &[(CVO, None), ("kube-apiserver", Some("status"))],
        );
        assert_eq!(judge(&ours, Some(&live), CVO), Ownership::Ours);
        // Applied by hand from `cvo crds`: a tool, the same schema, no markers.
        let by_hand = managed(ours.clone(), &[("kubectl-client-side-apply", None)]);
        assert_eq!(judge(&ours, Some(&by_hand), CVO), Ownership::Ours);
        // An older copy of ours with fewer fields is still ours, and so is one with a field
        // this payload dropped, as long as the CVO alone manages it.
        let older = managed(cd(json!({})), &[(CVO, None)]);
        assert_eq!(judge(&ours, Some(&older), CVO), Ownership::Ours);
        let dropped = cd(json!({"clusterName": {"type": "string"}, "gone": {"type": "string"}}));
        let dropped = managed(dropped, &[(CVO, None)]);
        assert_eq!(judge(&ours, Some(&dropped), CVO), Ownership::Ours);
    }

    #[test]
    fn another_operators_crd_by_each_sign() {
        let ours = cd(json!({"clusterName": {"type": "string"}}));
        // Fields ours lacks, nested ones included, with the path.
        let richer = cd(json!({"clusterName": {"type": "string"},
                               "platform": {"type": "object", "properties": {"aws": {"type": "object"}}},
                               "pullSecretRef": {"type": "object"}}));
        let Ownership::Foreign(f) = judge(&ours, Some(&richer), CVO) else {
            panic!("richer schema is foreign")
        };
        assert_eq!(
            f.evidence,
            [Evidence::UnknownFields(vec![
                "v1: spec.platform".into(),
                "v1: spec.pullSecretRef".into()
            ])]
        );
        assert_eq!(f.owner, "hive");
        assert_eq!(
            f.to_string(),
            "CustomResourceDefinition clusterdeployments.hive.openshift.io is hive's (2 schema fields this payload's lacks: v1: spec.platform, v1: spec.pullSecretRef)"
        );
        // Another operator's manager.
        let live = managed(ours.clone(), &[("hive-operator", None)]);
        let Ownership::Foreign(f) = judge(&ours, Some(&live), CVO) else {
            panic!("managed by hive-operator")
        };
        assert_eq!(f.owner, "hive-operator");
        assert_eq!(f.evidence, [Evidence::Manager("hive-operator".into())]);
        // OLM's labels name the package.
        let mut olm = managed(ours.clone(), &[(CVO, None)]);
        olm["metadata"]["labels"] = json!({"operators.coreos.com/assisted-service-operator.multicluster-engine": "",
                                           "unrelated": "x"});
        let Ownership::Foreign(f) = judge(&ours, Some(&olm), CVO) else {
            panic!("OLM-labelled")
        };
        assert_eq!(f.owner, "assisted-service-operator");
        // A served version ours does not have.
        let mut versions = ours.clone();
        versions["spec"]["versions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "v1alpha1", "served": true, "storage": false}));
        let Ownership::Foreign(f) = judge(&ours, Some(&versions), CVO) else {
            panic!("extra version")
        };
        assert_eq!(f.evidence, [Evidence::Versions(vec!["v1alpha1".into()])]);
    }

    #[test]
    fn markers_ours_carries_and_open_schemas_are_no_evidence() {
        let mut ours = cd(
            json!({"labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                 "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}),
        );
        ours["metadata"]["annotations"] = json!({"controller-gen.kubebuilder.io/version": "v0.1"});
        let mut live = cd(
            json!({"labels": {"type": "object", "properties": {"a": {"type": "string"}}},
                                 "raw": {"type": "object", "properties": {"deep": {"type": "string"}}}}),
        );
        live["metadata"]["annotations"] = json!({"controller-gen.kubebuilder.io/version": "v0.1"});
        assert_eq!(judge(&ours, Some(&live), CVO), Ownership::Ours);
        live["metadata"]["annotations"] =
            json!({"controller-gen.kubebuilder.io/version": "v0.23.0"});
        assert!(matches!(
            judge(&ours, Some(&live), CVO),
            Ownership::Foreign(_)
        ));
    }

    #[test]
    fn the_fields_every_object_has_are_not_counted() {
        let ours = cd(json!({}));
        let mut live = cd(json!({}));
        let props = &mut live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
        props["apiVersion"] = json!({"type": "string"});
        props["kind"] = json!({"type": "string"});
        props["metadata"] = json!({"type": "object"});
        assert_eq!(judge(&ours, Some(&live), CVO), Ownership::Ours);
    }

    #[test]
    fn array_items_are_walked_and_many_fields_are_summed_up() {
        let ours = cd(
            json!({"hosts": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}}}}}),
        );
        let live = cd(
            json!({"hosts": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "a": {}, "b": {}, "c": {}, "d": {}}}}}),
        );
        let Ownership::Foreign(f) = judge(&ours, Some(&live), CVO) else {
            panic!()
        };
        assert_eq!(
            f.to_string(),
            "CustomResourceDefinition clusterdeployments.hive.openshift.io is hive's (4 schema fields this payload's lacks: v1: spec.hosts[].a, v1: spec.hosts[].b, v1: spec.hosts[].c, and 1 more)"
        );
    }

    #[test]
    fn webhook_rules_cover_resources_and_subresources() {
        let vwc = json!({"webhooks": [{"rules": [
            {"apiGroups": ["agent-install.openshift.io"], "resources": ["agents", "infraenvs/status"]}]}]});
        assert!(webhook_covers(&vwc, "agent-install.openshift.io", "agents"));
        assert!(webhook_covers(
            &vwc,
            "agent-install.openshift.io",
            "infraenvs"
        ));
        assert!(!webhook_covers(&vwc, "hive.openshift.io", "agents"));
        assert!(!webhook_covers(
            &vwc,
            "agent-install.openshift.io",
            "nmstateconfigs"
        ));
        let any = json!({"webhooks": [{"rules": [{"apiGroups": ["*"], "resources": ["*"]}]}]});
        assert!(webhook_covers(
            &any,
            "hive.openshift.io",
            "clusterdeployments"
        ));
        assert!(!webhook_covers(
            &json!({}),
            "hive.openshift.io",
            "clusterdeployments"
        ));
    }
}
