//! `ClusterVersion` and `ClusterOperator` (`config.openshift.io/v1`, cluster-scoped), with the
//! fields of spec §5 and the CRDs generated from them.
//!
//! Every field the API marks optional is `Option` or a defaulted list, so objects written by a
//! real OpenShift cluster (which may carry fields this crate does not model) deserialize; unknown
//! fields are ignored.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::capability::{CapabilitiesSpec, Capability};
use crate::include::ComponentOverride;
use crate::updates::graph::ClusterCondition;

/// The cluster profiles that run a CVO of their own; upstream's CRD manifests carry these
/// include annotations, so the bundled payload's copies do too.
const PROFILE_ANNOTATIONS: &[&str] = &[
    "include.release.openshift.io/self-managed-high-availability",
    "include.release.openshift.io/single-node-developer",
];

/// `spec` of the singleton ClusterVersion `version`: what the administrator asks for.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterVersion",
    plural = "clusterversions",
    status = "ClusterVersionStatus",
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.history[?(@.state==\"Completed\")].version"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Progressing","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].status"}"#,
    printcolumn = r#"{"name":"Since","type":"date","jsonPath":".status.conditions[?(@.type==\"Progressing\")].lastTransitionTime"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionSpec {
    /// RFC4122 version-4 UUID identifying the cluster (required by the API).
    #[serde(rename = "clusterID")]
    pub cluster_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_update: Option<Update>,
    /// Update service URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// `None` means the default baseline (`vCurrent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilitiesSpec>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub overrides: Vec<ComponentOverride>,
    /// Where release signatures are read (gate `SignatureStores`): when set, these replace the
    /// stores the payload's verification ConfigMap names.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(length(max = 32))]
    pub signature_stores: Vec<SignatureStore>,
}

/// `spec.signatureStores[]`: a signature store and the CA bundle to trust for it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureStore {
    /// An `https://` URL (upstream's CRD also admits `http://`).
    pub url: String,
    /// A ConfigMap in `openshift-config` whose `ca.crt` is the PEM CA bundle for `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<ConfigMapNameReference>,
}

/// A ConfigMap by name (`openshift-config`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ConfigMapNameReference {
    pub name: String,
}

/// `spec.desiredUpdate`: the release the administrator wants.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    /// `Multi` or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// Conditional update risks the administrator accepts (gate `ClusterUpdateAcceptRisks`):
    /// a conditional update whose applying risks are all named here is `Recommended`.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(length(max = 1000))]
    pub accept_risks: Vec<AcceptRisk>,
    /// How the update is processed (gate `ClusterUpdatePreflight`): absent, a normal update;
    /// [`UPDATE_MODE_PREFLIGHT`], the target release is only checked against the cluster
    /// ([`crate::preflight`]) and nothing is applied. A string, not an enum, so that a value
    /// the CRD would refuse still reads (and is reported `Invalid`) instead of failing the whole
    /// ClusterVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Preflight"]))]
    pub mode: Option<String>,
}

/// `spec.desiredUpdate.mode` of a preflight (openshift/api `UpdateModePreflight`).
pub const UPDATE_MODE_PREFLIGHT: &str = "Preflight";

impl Update {
    /// Whether this asks for a preflight of its release rather than an update to it.
    pub fn is_preflight(&self) -> bool {
        self.mode.as_deref() == Some(UPDATE_MODE_PREFLIGHT)
    }
}

/// `spec.desiredUpdate.acceptRisks[]`: an accepted risk, by its name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AcceptRisk {
    #[schemars(length(min = 1))]
    pub name: String,
}

/// `status` of the ClusterVersion: what the CVO reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Release>,
    /// Newest first.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<UpdateHistory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<ClusterVersionCapabilitiesStatus>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<ClusterOperatorStatusCondition>,
    /// Upstream writes `null` when it has not retrieved updates yet; `None` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_updates: Option<Vec<Release>>,
    /// Updates the update service offers with risks, newest first.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditional_updates: Vec<ConditionalUpdate>,
    /// Every risk of `conditionalUpdates`, once, by name (gate `ClusterUpdateAcceptRisks`),
    /// each with its `Applies` condition: whether it applies to this cluster.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(length(max = 500))]
    pub conditional_update_risks: Vec<ConditionalUpdateRisk>,
}

/// An entry of `status.conditionalUpdates`: a release, its risks and whether it is
/// `Recommended`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionalUpdate {
    pub release: Release,
    /// The names of `risks`, sorted (gate `ClusterUpdateAcceptRisks`): entries of
    /// `status.conditionalUpdateRisks`.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(length(max = 500))]
    pub risk_names: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub risks: Vec<ConditionalUpdateRisk>,
    /// `Recommended`.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

/// A risk of a conditional update (API `ConditionalUpdateRisk`): `status.conditionalUpdateRisks`
/// and `status.conditionalUpdates[].risks`. The update service's risks
/// ([`crate::updates::graph::ConditionalUpdateRisk`]) have no conditions; the status gives each
/// its `Applies` condition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionalUpdateRisk {
    /// `Applies` (gate `ClusterUpdateAcceptRisks`): `True` (`Match`, or an alert's
    /// `Alert:firing`), `False` (`NotMatch`) or `Unknown` (`EvaluationFailed`).
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(length(max = 8))]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub url: String,
    /// A CamelCase name, unique within the status.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub matching_rules: Vec<ClusterCondition>,
}

impl From<&crate::updates::graph::ConditionalUpdateRisk> for ConditionalUpdateRisk {
    fn from(risk: &crate::updates::graph::ConditionalUpdateRisk) -> Self {
        ConditionalUpdateRisk {
            conditions: Vec::new(),
            url: risk.url.clone(),
            name: risk.name.clone(),
            message: risk.message.clone(),
            matching_rules: risk.matching_rules.clone(),
        }
    }
}

/// A release: `status.desired` and the entries of `status.availableUpdates`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub channels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
}

/// An entry of `status.history`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateHistory {
    /// `Completed` or `Partial`.
    pub state: String,
    pub started_time: Time,
    /// Unset while the update is in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub verified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_risks: Option<String>,
}

/// `status.capabilities`, both lists byte-sorted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionCapabilitiesStatus {
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub enabled_capabilities: Vec<Capability>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub known_capabilities: Vec<Capability>,
}

/// A condition of a ClusterVersion or ClusterOperator.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatusCondition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Changes only when `status` changes.
    pub last_transition_time: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ClusterOperatorStatusCondition {
    /// A condition of `type_` that took `status` at `at`, with no reason or message.
    pub fn new(type_: &str, status: &str, at: Time) -> Self {
        ClusterOperatorStatusCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            last_transition_time: at,
            reason: None,
            message: None,
        }
    }

    /// With a reason and a message.
    pub fn because(self, reason: &str, message: &str) -> Self {
        ClusterOperatorStatusCondition {
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            ..self
        }
    }
}

/// `spec` of a ClusterOperator: empty; operators only report status.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterOperator",
    plural = "clusteroperators",
    shortname = "co",
    status = "ClusterOperatorStatus",
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.versions[?(@.name==\"operator\")].version"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Progressing","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].status"}"#,
    printcolumn = r#"{"name":"Degraded","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].status"}"#,
    printcolumn = r#"{"name":"Since","type":"date","jsonPath":".status.conditions[?(@.type==\"Available\")].lastTransitionTime"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.conditions[?(@.type==\"Degraded\")].message"}"#
)]
pub struct ClusterOperatorSpec {}

/// `status` of a ClusterOperator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatus {
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<ClusterOperatorStatusCondition>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub versions: Vec<OperandVersion>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub related_objects: Vec<ObjectReference>,
}

/// An entry of a ClusterOperator's `status.versions` (`operator` is the operator's own).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct OperandVersion {
    pub name: String,
    pub version: String,
}

/// An entry of a ClusterOperator's `status.relatedObjects`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ObjectReference {
    #[serde(default)]
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

/// Go writes a nil slice as `null`; serde's `default` alone rejects it.
fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// The ClusterVersion and ClusterOperator CRDs, in that order, annotated for the profiles
/// that include them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        for_payload(ClusterVersion::crd(), &[]),
        for_payload(ClusterOperator::crd(), &[]),
    ]
}

/// A component's generated CRDs as its payload ships them: [`for_payload`] with the
/// component's capability (`capability.openshift.io/name`).
pub fn for_component(
    crds: impl IntoIterator<Item = CustomResourceDefinition>,
    capability: &str,
) -> Vec<CustomResourceDefinition> {
    let annotations = [("capability.openshift.io/name", capability)];
    (crds.into_iter())
        .map(|crd| for_payload(crd, &annotations))
        .collect()
}

/// A generated CRD as a payload ships it: with the include annotations of the profiles that
/// run a CVO of their own, the given further annotations (a component's capability), and no
/// descriptions.
pub fn for_payload(
    mut crd: CustomResourceDefinition,
    annotations: &[(&str, &str)],
) -> CustomResourceDefinition {
    let map = crd.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for key in PROFILE_ANNOTATIONS {
        map.insert((*key).to_string(), "true".to_string());
    }
    for (key, value) in annotations {
        map.insert((*key).to_string(), (*value).to_string());
    }
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            strip_descriptions(schema);
        }
    }
    crd
}

/// schemars turns the Rust doc comments into schema descriptions; they describe this crate's
/// types (ordering, serde quirks), not the API, so the CRDs carry none.
fn strip_descriptions(schema: &mut JSONSchemaProps) {
    schema.description = None;
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        strip_descriptions(child);
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(item)) => strip_descriptions(item),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => {
            items.iter_mut().for_each(strip_descriptions)
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_are_cluster_scoped_with_a_status_subresource() {
        let crds = crds();
        let names: Vec<_> = crds.iter().map(|c| c.metadata.name.clone()).collect();
        assert_eq!(
            names,
            [
                Some("clusterversions.config.openshift.io".to_string()),
                Some("clusteroperators.config.openshift.io".to_string())
            ]
        );
        for crd in &crds {
            assert_eq!(crd.spec.scope, "Cluster");
            let version = &crd.spec.versions[0];
            assert!(version.subresources.as_ref().unwrap().status.is_some());
        }
    }

    #[test]
    fn a_real_cluster_version_deserializes() {
        // Shape of `oc get clusterversion version -o json` on 4.18, trimmed; `availableUpdates:
        // null` and `signatureStores` (not modelled) must not fail.
        let json = serde_json::json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {
                "clusterID": "4c5a7e5c-2e4f-4d61-9d0c-6c7d7c3f2a11",
                "channel": "stable-4.18",
                "signatureStores": [],
                "capabilities": {"baselineCapabilitySet": "None",
                                 "additionalEnabledCapabilities": null}
            },
            "status": {
                "availableUpdates": null,
                "desired": {"version": "4.18.0", "image": "quay.io/x@sha256:0", "channels": null},
                "history": [{"state": "Completed", "startedTime": "2025-01-01T00:00:00Z",
                             "completionTime": null, "version": "4.18.0",
                             "image": "quay.io/x@sha256:0", "verified": false}],
                "observedGeneration": 2,
                "versionHash": "abc",
                "conditions": [{"type": "Available", "status": "True",
                                "lastTransitionTime": "2025-01-01T00:10:00Z",
                                "message": "Done applying 4.18.0"}]
            }
        });
        let cv: ClusterVersion = serde_json::from_value(json).unwrap();
        let spec_caps = cv.spec.capabilities.unwrap();
        assert_eq!(spec_caps.baseline_capability_set.as_deref(), Some("None"));
        let status = cv.status.unwrap();
        assert_eq!(status.available_updates, None);
        assert_eq!(status.history[0].completion_time, None);
        assert_eq!(status.conditions[0].type_, "Available");
    }
}
