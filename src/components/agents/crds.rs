//! The component's CRDs as the payload ships them (`cvo crds --component agents`): generated
//! from [`super::types`], annotated with the component's capability and the profiles.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::types::{Agent, AgentClusterInstall, ClusterDeployment, InfraEnv};
use crate::cluster::crds::for_component;
use crate::ownership::STAND_IN_ANNOTATION;

/// The capability the payload declares for this component; every document of the component
/// carries it.
pub const CAPABILITY: &str = "AgentInstall";

/// The component's name: `cvo controller NAME`, `cvo crds --component NAME`, the payload's
/// file names.
pub const COMPONENT: &str = "agents";

/// The ClusterOperator the controller keeps (upstream's API group's name, not the component's).
pub const OPERATOR: &str = "agent-install";

/// Agent, InfraEnv, and the minimal ClusterDeployment and AgentClusterInstall binding reads.
/// Each stands in for another operator's CRD of the same name (assisted-service's, hive's;
/// [`crate::ownership::STAND_IN_ANNOTATION`]): where that one is live, the CVO leaves it alone,
/// and where assisted-service serves `agent-install.openshift.io` the controllers stand down.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let crds = [
        Agent::crd(),
        InfraEnv::crd(),
        ClusterDeployment::crd(),
        AgentClusterInstall::crd(),
    ];
    let owners = [ASSISTED_SERVICE, ASSISTED_SERVICE, HIVE, ASSISTED_SERVICE];
    let mut crds = for_component(crds, CAPABILITY);
    for (crd, owner) in crds.iter_mut().zip(owners) {
        let annotations = crd
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(STAND_IN_ANNOTATION.to_owned(), owner.to_owned());
    }
    crds
}

/// Whose CRDs the component's stand in for.
pub const ASSISTED_SERVICE: &str = "assisted-service";
pub const HIVE: &str = "hive";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crds_carry_the_capability_printer_columns_and_status() {
        let crds = crds();
        let names: Vec<_> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "agents.agent-install.openshift.io",
                "infraenvs.agent-install.openshift.io",
                "clusterdeployments.hive.openshift.io",
                "agentclusterinstalls.extensions.hive.openshift.io",
            ]
        );
        for crd in &crds {
            let annotations = crd.metadata.annotations.as_ref().unwrap();
            assert_eq!(
                annotations
                    .get("capability.openshift.io/name")
                    .map(String::as_str),
                Some(CAPABILITY)
            );
            assert_eq!(crd.spec.scope, "Namespaced");
            let stand_in = serde_json::to_value(crd)
                .ok()
                .and_then(|v| crate::ownership::stand_in(&v));
            let stand_in = stand_in.expect("every CRD is a stand-in");
            assert!(stand_in.declared);
            assert_eq!(
                Some(stand_in.owner.as_str()),
                crate::ownership::known_owner(&stand_in.group)
            );
            let version = &crd.spec.versions[0];
            assert!(version.subresources.as_ref().unwrap().status.is_some());
        }
        let agent = &crds[0].spec.versions[0];
        assert_eq!(agent.name, "v1beta1");
        let columns: Vec<(&str, &str, Option<i32>)> = (agent.additional_printer_columns.iter())
            .flatten()
            .map(|c| (c.name.as_str(), c.json_path.as_str(), c.priority))
            .collect();
        assert_eq!(
            columns,
            [
                ("Cluster", ".spec.clusterDeploymentName.name", None),
                ("Approved", ".spec.approved", None),
                ("Role", ".status.role", None),
                ("Stage", ".status.progress.currentStage", None),
                ("Hostname", ".status.inventory.hostname", Some(1)),
                ("Requested Hostname", ".spec.hostname", Some(1)),
            ]
        );
        let schema = agent
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap();
        let spec = &schema.properties.as_ref().unwrap()["spec"];
        let required = spec.required.clone().unwrap_or_default();
        assert!(
            required.contains(&"role".to_string()) && required.contains(&"approved".to_string())
        );
        let properties = spec.properties.as_ref().unwrap();
        assert!(properties.contains_key("installation_disk_id"));
        assert!(properties.contains_key("ignitionEndpointHTTPHeaders"));
        let status = &schema.properties.as_ref().unwrap()["status"];
        let status = status.properties.as_ref().unwrap();
        assert!(status.contains_key("deprovision_info") && status.contains_key("debugInfo"));
        assert_eq!(
            crds[2].spec.names.short_names.as_deref(),
            Some(&["cd".to_string()][..])
        );
        assert_eq!(
            crds[3].spec.names.short_names.as_deref(),
            Some(&["aci".to_string()][..])
        );
    }
}
