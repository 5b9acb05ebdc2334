//! The component's CRDs as the payload ships them (`cvo crds --component deployment-targets`,
//! `payloads/4.18.0/release-manifests/0000_50_deployment-targets_01_*.crd.yaml`): generated
//! from [`super::types`], annotated with the component's capability and the profiles.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment,
    GitOpsDeploymentManagedEnvironment,
};
use crate::cluster::crds::for_component;

/// The capability the payload declares for this component (release-metadata
/// `capabilities.cvo.openshift.io/declared`); every document of the component carries it.
pub const CAPABILITY: &str = "DeploymentTargets";

/// The component's name: `cvo controller NAME`, `cvo crds --component NAME`, the payload's
/// file names (`0000_50_deployment-targets_*`) and its ClusterOperator.
pub const COMPONENT: &str = "deployment-targets";

/// DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment and
/// GitOpsDeploymentManagedEnvironment, in that order (the payload's file order). Not
/// SpaceRequest: codeready-toolchain ships its CRD.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let crds = [
        DeploymentTarget::crd(),
        DeploymentTargetClaim::crd(),
        DeploymentTargetClass::crd(),
        Environment::crd(),
        GitOpsDeploymentManagedEnvironment::crd(),
    ];
    for_component(crds, CAPABILITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_carries_the_capability_and_a_status_subresource() {
        let crds = crds();
        let names: Vec<_> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "deploymenttargets.appstudio.redhat.com",
                "deploymenttargetclaims.appstudio.redhat.com",
                "deploymenttargetclasses.appstudio.redhat.com",
                "environments.appstudio.redhat.com",
                "gitopsdeploymentmanagedenvironments.managed-gitops.redhat.com",
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
            assert_eq!(
                annotations
                    .get("include.release.openshift.io/self-managed-high-availability")
                    .map(String::as_str),
                Some("true")
            );
            let scope = if crd.spec.names.kind == "DeploymentTargetClass" {
                "Cluster"
            } else {
                "Namespaced"
            };
            assert_eq!(crd.spec.scope, scope, "{}", crd.spec.names.kind);
            let version = &crd.spec.versions[0];
            assert_eq!(version.name, "v1alpha1");
            assert!(version.subresources.as_ref().unwrap().status.is_some());
        }
        assert_eq!(
            crds[3].spec.names.short_names.as_deref(),
            Some(&["env".to_string()][..])
        );
    }
}
