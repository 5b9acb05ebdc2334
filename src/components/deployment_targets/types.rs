//! The API of the DeploymentTarget component (`appstudio.redhat.com/v1alpha1`), shaped as the
//! running system (managed-gitops, application-api at `18f545e`) has it, not as ADR 8 draws it:
//! `claimRef` is a plain string, annotation values are `"true"`. The CRDs are generated from
//! these types, with printer columns the original lacks. The objects the component only reads
//! or writes on behalf of others (toolchain's `SpaceRequest`, managed-gitops's
//! `GitOpsDeploymentManagedEnvironment`) are here too, reduced to the fields it uses.
//!
//! Every optional field defaults, so objects written by other tools deserialize; a claim phase
//! this crate does not know reads as no phase (only the binder writes them), a target phase is
//! kept as written (users and other tools write them, and upstream binds no target whose phase
//! is not `""` or `Available`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// `DeploymentTarget` (namespaced): a place to deploy to, with the credentials to reach it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "appstudio.redhat.com",
    version = "v1alpha1",
    derive = "PartialEq",
    kind = "DeploymentTarget",
    plural = "deploymenttargets",
    namespaced,
    status = "DeploymentTargetStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Class","type":"string","jsonPath":".spec.deploymentTargetClassName"}"#,
    printcolumn = r#"{"name":"Claim","type":"string","jsonPath":".spec.claimRef"}"#,
    printcolumn = r#"{"name":"Namespace","type":"string","priority":1,"jsonPath":".spec.kubernetesCredentials.defaultNamespace"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTargetSpec {
    /// The cluster-scoped DeploymentTargetClass this target belongs to.
    pub deployment_target_class_name: String,
    pub kubernetes_credentials: KubernetesCredentials,
    /// The name of the DeploymentTargetClaim (same namespace) this target is reserved for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub claim_ref: String,
}

/// `spec.kubernetesCredentials` of a DeploymentTarget (Go: `DeploymentTargetKubernetesClusterCredentials`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesCredentials {
    /// The namespace deployments go to.
    pub default_namespace: String,
    #[serde(rename = "apiURL")]
    pub api_url: String,
    /// A Secret in the target's namespace holding a kubeconfig (`kubeconfig` key).
    pub cluster_credentials_secret: String,
    /// Required in the API (no `omitempty` upstream), so always written and always read.
    #[serde(rename = "allowInsecureSkipTLSVerify")]
    pub allow_insecure_skip_tls_verify: bool,
}

impl KubernetesCredentials {
    /// Upstream's "does not have cluster credentials": every field at its zero value.
    pub fn is_empty(&self) -> bool {
        *self == KubernetesCredentials::default()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTargetStatus {
    #[serde(
        default,
        deserialize_with = "target_phase",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub phase: Option<TargetPhase>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `DeploymentTarget.status.phase`. No phase (`""`) counts as `Available` for matching; a
/// phase of no known name is kept as written ([`TargetPhase::Other`]) and, as upstream's
/// `doesDTMatchDTC` has it, never matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetPhase {
    /// Not yet available for binding (never written by a controller, as upstream).
    Pending,
    Available,
    Bound,
    /// Its claim was deleted; external resources were not freed (or are being freed).
    Released,
    /// Freeing external resources did not finish in time.
    Failed,
    /// A phase no controller writes (another tool's, or a typo), as written.
    Other(String),
}

impl TargetPhase {
    /// The phase as `status.phase` holds it.
    pub fn as_str(&self) -> &str {
        match self {
            TargetPhase::Pending => "Pending",
            TargetPhase::Available => "Available",
            TargetPhase::Bound => "Bound",
            TargetPhase::Released => "Released",
            TargetPhase::Failed => "Failed",
            TargetPhase::Other(other) => other,
        }
    }

    /// The phase written as `text` (`""` is no phase).
    pub fn parse(text: &str) -> Option<TargetPhase> {
        Some(match text {
            "" => return None,
            "Pending" => TargetPhase::Pending,
            "Available" => TargetPhase::Available,
            "Bound" => TargetPhase::Bound,
            "Released" => TargetPhase::Released,
            "Failed" => TargetPhase::Failed,
            other => TargetPhase::Other(other.to_owned()),
        })
    }
}

impl std::fmt::Display for TargetPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TargetPhase {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// `DeploymentTargetClaim` (namespaced): a request for a DeploymentTarget of a class.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "appstudio.redhat.com",
    version = "v1alpha1",
    derive = "PartialEq",
    kind = "DeploymentTargetClaim",
    plural = "deploymenttargetclaims",
    namespaced,
    status = "DeploymentTargetClaimStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Class","type":"string","jsonPath":".spec.deploymentTargetClassName"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".spec.targetName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTargetClaimSpec {
    /// Required by the CRD, but `""` is a state the binder handles (no dynamic provisioning).
    pub deployment_target_class_name: String,
    /// The DeploymentTarget this claim asks for by name (PVC `volumeName`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTargetClaimStatus {
    #[serde(
        default,
        deserialize_with = "lenient_phase",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub phase: Option<ClaimPhase>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `DeploymentTargetClaim.status.phase`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ClaimPhase {
    Pending,
    Bound,
    /// Its bound target no longer exists.
    Lost,
}

/// `DeploymentTargetClass` (cluster-scoped): how targets of a class are provisioned and reclaimed.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "appstudio.redhat.com",
    version = "v1alpha1",
    derive = "PartialEq",
    kind = "DeploymentTargetClass",
    plural = "deploymenttargetclasses",
    status = "DeploymentTargetClassStatus",
    printcolumn = r#"{"name":"Provisioner","type":"string","jsonPath":".spec.provisioner"}"#,
    printcolumn = r#"{"name":"Reclaim","type":"string","jsonPath":".spec.reclaimPolicy"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTargetClassSpec {
    /// e.g. `appstudio.redhat.com/namespace` or `appstudio.redhat.com/devsandbox`.
    pub provisioner: String,
    /// What the provisioner is told (upstream defines none). The CRD keeps whatever is written
    /// here, so that a parameter the provisioner does not know is reported on the class
    /// ([`super::parameters`]) instead of being pruned away by the API server unseen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<ClassParameters>,
    /// `Delete` or `Retain`; kept as written so that another value is reported, not refused
    /// at load ([`ReclaimPolicy::parse`]).
    pub reclaim_policy: String,
}

/// `spec.parameters` as written: any object (the CRD preserves unknown fields in it); each
/// provisioner reads and checks its own ([`super::parameters`]).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(transparent)]
pub struct ClassParameters(pub serde_json::Map<String, serde_json::Value>);

impl JsonSchema for ClassParameters {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ClassParameters".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "Parameters of the class's provisioner (see its documentation); one it does not know is an error on the class.",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

/// The class's `ErrorOccurred` condition: whether its parameters are valid for its provisioner
/// (upstream's class has an empty status).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeploymentTargetClassStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `DeploymentTargetClass.spec.reclaimPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimPolicy {
    /// Delete the target (and what its provisioner made) when its claim goes.
    Delete,
    /// Keep the target, `Released`.
    Retain,
}

impl ReclaimPolicy {
    pub fn parse(value: &str) -> Option<ReclaimPolicy> {
        match value {
            "Delete" => Some(ReclaimPolicy::Delete),
            "Retain" => Some(ReclaimPolicy::Retain),
            _ => None,
        }
    }
}

impl DeploymentTargetClass {
    pub fn reclaim_policy(&self) -> Option<ReclaimPolicy> {
        ReclaimPolicy::parse(&self.spec.reclaim_policy)
    }
}

/// `Environment` (namespaced, short name `env`): a deployment destination, possibly backed by
/// a DeploymentTargetClaim.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "appstudio.redhat.com",
    version = "v1alpha1",
    derive = "PartialEq",
    kind = "Environment",
    plural = "environments",
    shortname = "env",
    namespaced,
    status = "EnvironmentStatus",
    printcolumn = r#"{"name":"Claim","type":"string","jsonPath":".spec.configuration.target.deploymentTargetClaim.claimName"}"#,
    printcolumn = r#"{"name":"Reconciled","type":"string","jsonPath":".status.conditions[?(@.type==\"Reconciled\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSpec {
    /// Deprecated (`POC`, `Non-POC`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    pub display_name: String,
    /// `Manual` or `AppStudioAutomated`.
    pub deployment_strategy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_environment: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<EnvironmentConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstable_configuration_fields: Option<UnstableEnvironmentConfiguration>,
}

impl Environment {
    /// `GetDeploymentTargetClaimName()`: the claim backing this environment, or `""`.
    pub fn claim_name(&self) -> &str {
        (self.spec.configuration.as_ref())
            .and_then(|c| c.target.as_ref())
            .map(|t| t.deployment_target_claim.claim_name.as_str())
            .unwrap_or("")
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentConfiguration {
    /// Upstream's CRD requires it; ours does not (Go clients write `null` for an empty list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVarPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<EnvironmentTarget>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct EnvVarPair {
    pub name: String,
    pub value: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentTarget {
    pub deployment_target_claim: DeploymentTargetClaimConfig,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTargetClaimConfig {
    pub claim_name: String,
}

/// `spec.unstableConfigurationFields`: credentials given directly instead of through a claim.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnstableEnvironmentConfiguration {
    /// `Kubernetes` or `OpenShift`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_type: Option<String>,
    #[serde(default)]
    pub kubernetes_credentials: EnvironmentCredentials,
}

/// Go: `KubernetesClusterCredentials` (of an Environment).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentCredentials {
    pub target_namespace: String,
    #[serde(rename = "apiURL")]
    pub api_url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ingress_domain: String,
    pub cluster_credentials_secret: String,
    #[serde(rename = "allowInsecureSkipTLSVerify")]
    pub allow_insecure_skip_tls_verify: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster_resources: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct EnvironmentStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// managed-gitops's `GitOpsDeploymentManagedEnvironment`: the cluster Argo CD deploys to, which
/// the Environment controller keeps in step with the Environment (its CRD ships too).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "managed-gitops.redhat.com",
    version = "v1alpha1",
    derive = "PartialEq",
    kind = "GitOpsDeploymentManagedEnvironment",
    plural = "gitopsdeploymentmanagedenvironments",
    namespaced,
    status = "ManagedEnvironmentStatus",
    printcolumn = r#"{"name":"API URL","type":"string","jsonPath":".spec.apiURL"}"#,
    printcolumn = r#"{"name":"Secret","type":"string","jsonPath":".spec.credentialsSecret"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedEnvironmentSpec {
    #[serde(rename = "apiURL")]
    pub api_url: String,
    pub credentials_secret: String,
    #[serde(rename = "allowInsecureSkipTLSVerify")]
    pub allow_insecure_skip_tls_verify: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub create_new_service_account: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster_resources: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ManagedEnvironmentStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// codeready-toolchain's `SpaceRequest` (`toolchain.dev.openshift.com/v1alpha1`), the
/// devsandbox provisioner's request; not shipped (the toolchain owns its CRD).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "toolchain.dev.openshift.com",
    version = "v1alpha1",
    derive = "PartialEq",
    kind = "SpaceRequest",
    plural = "spacerequests",
    namespaced,
    status = "SpaceRequestStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct SpaceRequestSpec {
    pub tier_name: String,
    #[serde(default)]
    pub target_cluster_roles: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpaceRequestStatus {
    #[serde(
        rename = "targetClusterURL",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub target_cluster_url: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_access: Vec<NamespaceAccess>,
    /// toolchain conditions (`type`, `status`, `reason`, `message`, `lastTransitionTime`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ToolchainCondition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceAccess {
    pub name: String,
    #[serde(default)]
    pub secret_ref: String,
}

/// A toolchain condition: unlike `metav1.Condition`, reason and message are optional.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolchainCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// A target's phase as written; `""` is none, a name no controller writes is kept.
fn target_phase<'de, D>(deserializer: D) -> Result<Option<TargetPhase>, D::Error>
where
    D: Deserializer<'de>,
{
    let raw = Option::<String>::deserialize(deserializer)?;
    Ok(raw.as_deref().and_then(TargetPhase::parse))
}

/// A phase as written; `""` or a value this crate does not know reads as none.
fn lenient_phase<'de, D, P>(deserializer: D) -> Result<Option<P>, D::Error>
where
    D: Deserializer<'de>,
    P: serde::de::DeserializeOwned,
{
    let raw = Option::<String>::deserialize(deserializer)?;
    Ok(raw
        .filter(|s| !s.is_empty())
        .and_then(|s| serde_json::from_value(serde_json::Value::String(s)).ok()))
}
