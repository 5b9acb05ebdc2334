//! Whether the component runs on this cluster: on a hub where assisted-service serves
//! `agent-install.openshift.io` (its Agent or InfraEnv CRD is live and is not the one the
//! payload ships), the controllers and webhooks stand down: a second controller and webhook on
//! the same Agents would fight assisted-service's. hive's ClusterDeployment CRD (or
//! assisted-service's AgentClusterInstall CRD) alone does not stop it: the controllers read
//! the few fields they need from the live objects. Pure: the shell reads the live CRDs.

use serde_json::Value;

use super::keys::GROUP;
use crate::ownership::{Foreign, Ownership, judge};

/// What the live CRDs say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HubView {
    /// Why the controllers and webhooks do not run, if they do not.
    pub stand_down: Option<String>,
    /// Other operators' CRDs the controllers use as they are.
    pub notes: Vec<String>,
}

/// The component's view of the cluster: `crds` pairs each CRD the payload ships (its JSON)
/// with the live one of that name; `manager` is the CVO's field manager.
pub fn hub_view(crds: &[(Value, Option<Value>)], manager: &str) -> HubView {
    let foreign: Vec<Foreign> = crds
        .iter()
        .filter_map(|(ours, live)| match judge(ours, live.as_ref(), manager) {
            Ownership::Foreign(f) => Some(f),
            Ownership::Absent | Ownership::Ours => None,
        })
        .collect();
    let serves_group = |f: &Foreign| f.name.ends_with(&format!(".{GROUP}"));
    let stand_down = foreign.iter().find(|f| serves_group(f)).map(|f| {
        format!(
            "another operator serves {GROUP}: {f}. The Agent controllers and webhooks do not run; the CVO does not apply their webhook configuration"
        )
    });
    let notes = match stand_down {
        Some(_) => Vec::new(),
        None => (foreign.iter())
            .map(|f| format!("{f}: used as it is"))
            .collect(),
    };
    HubView { stand_down, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::agents::crds::crds;
    use serde_json::json;

    const CVO: &str = "cluster-version-operator";

    fn ours() -> Vec<Value> {
        crds()
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect()
    }

    fn managed_by(mut crd: Value, manager: &str) -> Value {
        crd["metadata"]["managedFields"] = json!([{"manager": manager, "operation": "Update",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]);
        crd
    }

    #[test]
    fn runs_on_its_own_crds_or_none() {
        let pairs: Vec<(Value, Option<Value>)> = ours()
            .into_iter()
            .map(|c| (c.clone(), Some(managed_by(c, CVO))))
            .collect();
        assert_eq!(hub_view(&pairs, CVO), HubView::default());
        let none: Vec<(Value, Option<Value>)> = ours().into_iter().map(|c| (c, None)).collect();
        assert_eq!(hub_view(&none, CVO), HubView::default());
    }

    #[test]
    fn hives_cluster_deployments_are_used_as_they_are() {
        let pairs: Vec<(Value, Option<Value>)> = ours()
            .into_iter()
            .map(|c| {
                let name = c["metadata"]["name"].as_str().unwrap().to_owned();
                let manager = match name.as_str() {
                    "clusterdeployments.hive.openshift.io" => "hive-operator",
                    _ => CVO,
                };
                (c.clone(), Some(managed_by(c, manager)))
            })
            .collect();
        let view = hub_view(&pairs, CVO);
        assert_eq!(view.stand_down, None);
        assert_eq!(
            view.notes,
            [
                "CustomResourceDefinition clusterdeployments.hive.openshift.io is hive-operator's (spec managed by \"hive-operator\"): used as it is"
            ]
        );
    }

    #[test]
    fn stands_down_where_assisted_service_serves_the_group() {
        let pairs: Vec<(Value, Option<Value>)> = ours()
            .into_iter()
            .map(|c| (c.clone(), Some(managed_by(c, "assisted-service-operator"))))
            .collect();
        let view = hub_view(&pairs, CVO);
        let why = view.stand_down.unwrap();
        assert!(
            why.starts_with("another operator serves agent-install.openshift.io: CustomResourceDefinition agents.agent-install.openshift.io is assisted-service-operator's (spec managed by \"assisted-service-operator\")."),
            "{why}"
        );
        assert!(view.notes.is_empty());
    }
}
