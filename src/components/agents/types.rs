//! The agent API (`agent-install.openshift.io/v1beta1` Agent and InfraEnv) shaped as
//! assisted-service's `api/v1beta1` has it, JSON names included (`installation_disk_id`,
//! `deprovision_info` are snake case upstream), and the two hive objects binding reads, reduced
//! to what it needs: `hive.openshift.io/v1` ClusterDeployment and
//! `extensions.hive.openshift.io/v1beta1` AgentClusterInstall. The CRDs are generated from these
//! types ([`super::crds`]).
//!
//! Every optional field defaults, so objects written by other tools (or by hand, for
//! `cvo agent admit`) deserialize; the two fields upstream writes without `omitempty`
//! (`spec.role`, `spec.approved`) are required, as upstream's CRD has them.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::keys::{DEFAULT_CPU_ARCHITECTURE, MULTI_CPU_ARCHITECTURE};

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `ClusterReference`: a ClusterDeployment by namespace and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl ClusterReference {
    pub fn new(namespace: &str, name: &str) -> ClusterReference {
        ClusterReference {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
        }
    }
}

impl std::fmt::Display for ClusterReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// An openshift/custom-resource-status condition (Agent, InfraEnv and AgentClusterInstall
/// conditions are these, not `metav1.Condition`): reason and message are optional and there
/// is a heartbeat time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// `Agent` (namespaced): a host that booted an InfraEnv's discovery image. Without
/// `spec.clusterDeploymentName` it is in the InfraEnv's free pool; setting it binds the host,
/// clearing it unbinds, changing it moves.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "agent-install.openshift.io",
    version = "v1beta1",
    derive = "PartialEq",
    kind = "Agent",
    plural = "agents",
    namespaced,
    status = "AgentStatus",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterDeploymentName.name","description":"The name of the cluster the Agent registered to."}"#,
    printcolumn = r#"{"name":"Approved","type":"boolean","jsonPath":".spec.approved","description":"The `Approve` state of the Agent."}"#,
    printcolumn = r#"{"name":"Role","type":"string","jsonPath":".status.role","description":"The role (master/worker) of the Agent."}"#,
    printcolumn = r#"{"name":"Stage","type":"string","jsonPath":".status.progress.currentStage","description":"The HostStage of the Agent."}"#,
    printcolumn = r#"{"name":"Hostname","type":"string","jsonPath":".status.inventory.hostname","description":"The hostname of the Agent.","priority":1}"#,
    printcolumn = r#"{"name":"Requested Hostname","type":"string","jsonPath":".spec.hostname","description":"The requested hostname for the Agent.","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// The ClusterDeployment the host is (to be) bound to; none: in the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_deployment_name: Option<ClusterReference>,
    /// `master`, `worker`, `arbiter`, `auto-assign` (or `bootstrap`, internally); required.
    pub role: String,
    /// The requested hostname.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hostname: String,
    /// Day-2 workers only.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub machine_config_pool: String,
    /// Required: an unapproved host is never installed.
    pub approved: bool,
    /// The installation disk by inventory id; not together with `installation_disk_path`.
    #[serde(
        rename = "installation_disk_id",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub installation_disk_id: String,
    /// The installation disk by its by-id or by-path name.
    #[serde(
        rename = "installation_disk_path",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub installation_disk_path: String,
    /// coreos-installer arguments, a JSON list in a string.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub installer_args: String,
    /// A JSON ignition document in a string.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ignition_config_overrides: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignition_endpoint_token_reference: Option<IgnitionEndpointTokenReference>,
    #[serde(
        rename = "ignitionEndpointHTTPHeaders",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub ignition_endpoint_http_headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    /// A Secret with the host's fencing credentials (two-node clusters).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fencing_credentials_secret_ref: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct IgnitionEndpointTokenReference {
    pub namespace: String,
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bootstrap: bool,
    /// The effective role (written without `omitempty` upstream).
    #[serde(default)]
    pub role: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub inventory: HostInventory,
    #[serde(default, skip_serializing_if = "is_default")]
    pub progress: HostProgressInfo,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ntp_sources: Vec<HostNtpSources>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `state` is the host's state (see [`super::state::HostState`]), `stateInfo` its
    /// `statusInfo`.
    #[serde(default)]
    pub debug_info: DebugInfo,
    /// Validation results by category (`hardware`, `network`, `operators`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub validations_info: ValidationsInfo,
    /// The disk the installation will use.
    #[serde(
        rename = "installation_disk_id",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub installation_disk_id: String,
    /// Where the host was bound before an unbind, kept until it re-registers so that its old
    /// spoke Node can be cleaned up.
    #[serde(
        rename = "deprovision_info",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub deprovision_info: Option<AgentDeprovisionInfo>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub csr_status: CsrStatus,
    /// `Host` (day 1) or `AddToExistingClusterHost` (day 2); empty reads as `Host`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `cvo`'s own field: the ClusterDeployment the host record is bound to (assisted-service
    /// keeps this `cluster_id` in its database; `cvo` has none, so the host record lives in
    /// the Agent's status, and this field changes in the same write as the state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_cluster_deployment: Option<ClusterReference>,
    /// `cvo`'s own field (assisted-service's `status_updated_at` column): when the host's
    /// state last changed (RFC 3339). A reclaim that takes longer than the reclaim timeout
    /// from then gives up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_updated_at: Option<String>,
}

/// `status.validationsInfo`: category → results, as assisted-service's `ValidationsStatus`.
pub type ValidationsInfo = BTreeMap<String, Vec<ValidationResult>>;

/// One validation's outcome.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ValidationResult {
    pub id: String,
    /// `success`, `failure`, `pending`, `error` or `disabled`.
    pub status: String,
    pub message: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebugInfo {
    #[serde(
        rename = "eventsURL",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub events_url: String,
    #[serde(rename = "logsURL", default, skip_serializing_if = "String::is_empty")]
    pub logs_url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state_info: String,
}

/// `status.deprovision_info` (snake case upstream).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AgentDeprovisionInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrStatus {
    #[serde(
        rename = "approvedCSRs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub approved_csrs: Vec<CsrInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_approval_attempt: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrInfo {
    pub name: String,
    /// `client` or `serving`.
    #[serde(rename = "type")]
    pub type_: String,
    pub approved_at: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostProgressInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_stage: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress_stages: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub progress_info: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub installation_percentage: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_update_time: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostNtpSources {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_state: String,
}

/// `status.inventory`: what the discovery agent reported.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInventory {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_time: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hostname: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bmc_address: String,
    #[serde(
        rename = "bmcV6Address",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub bmc_v6_address: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub memory: HostMemory,
    #[serde(default, skip_serializing_if = "is_default")]
    pub cpu: HostCpu,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<HostInterface>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<HostDisk>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub boot: HostBoot,
    #[serde(default, skip_serializing_if = "is_default")]
    pub system_vendor: HostSystemVendor,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostMemory {
    #[serde(default, skip_serializing_if = "is_default")]
    pub physical_bytes: i64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub usable_bytes: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostCpu {
    #[serde(default, skip_serializing_if = "is_default")]
    pub count: i64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub clock_megahertz: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub architecture: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInterface {
    #[serde(rename = "ipV6Addresses", default)]
    pub ipv6_addresses: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_carrier: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub product: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub mtu: i64,
    #[serde(rename = "ipV4Addresses", default)]
    pub ipv4_addresses: Vec<String>,
    #[serde(
        rename = "biosDevName",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub bios_dev_name: String,
    #[serde(rename = "clientID", default, skip_serializing_if = "String::is_empty")]
    pub client_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac_address: String,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub speed_mbps: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostDisk {
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub drive_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hctl: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by_path: String,
    #[serde(rename = "byID", default, skip_serializing_if = "String::is_empty")]
    pub by_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub wwn: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub size_bytes: i64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bootable: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub smart: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub installation_eligibility: HostInstallationEligibility,
    #[serde(default, skip_serializing_if = "is_default")]
    pub io_perf: HostIoPerf,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostInstallationEligibility {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eligible: bool,
    #[serde(default)]
    pub not_eligible_reasons: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostIoPerf {
    /// 99th percentile of fsync duration in milliseconds.
    #[serde(default, skip_serializing_if = "is_default")]
    pub sync_duration_milliseconds: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostBoot {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_boot_mode: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pxe_interface: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_type: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostSystemVendor {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial_number: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub product_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manufacturer: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub r#virtual: bool,
}

/// `InfraEnv` (namespaced): a discovery image and the settings baked into it. Without
/// `spec.clusterRef` its hosts register unbound (late binding).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "agent-install.openshift.io",
    version = "v1beta1",
    derive = "PartialEq",
    kind = "InfraEnv",
    plural = "infraenvs",
    namespaced,
    status = "InfraEnvStatus",
    printcolumn = r#"{"name":"ISO Created At","type":"string","jsonPath":".status.createdTime","description":"The Discovery ISO creation time"}"#,
    printcolumn = r#"{"name":"ISO URL","type":"string","jsonPath":".status.isoDownloadURL","description":"The Discovery ISO download URL","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InfraEnvSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(
        rename = "additionalNTPSources",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub additional_ntp_sources: Vec<String>,
    #[serde(rename = "ntpSources", default, skip_serializing_if = "Vec::is_empty")]
    pub ntp_sources: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ssh_authorized_key: String,
    /// Required upstream (no `omitempty`); optional here so that an object without it still
    /// reads (the webhook does not judge it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nm_state_config_label_selector: Option<LabelSelector>,
    /// The ClusterDeployment every host of this InfraEnv is bound to; none: late binding.
    /// Immutable after creation, set or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<ClusterReference>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ignition_config_override: String,
    /// `x86_64` (empty means it), `aarch64`/`arm64`, `ppc64le`, `s390x`; immutable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_architecture: String,
    /// `DiscoveryImageAlways` or `BootOrderControl`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ipxe_script_type: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_arguments: Vec<KernelArgument>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub additional_trust_bundle: String,
    /// Not together with `clusterRef`, unless that cluster is installed.
    #[serde(
        rename = "osImageVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub os_image_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_registry_ref: Option<LocalObjectReference>,
    /// `full-iso` or `minimal-iso`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_approval: Option<AgentApproval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_discovery_delay_seconds: Option<i64>,
}

impl InfraEnvSpec {
    /// The architecture with the default filled in: what the InfraEnv boots.
    pub fn effective_cpu_architecture(&self) -> &str {
        normalize_cpu_architecture(&self.cpu_architecture)
    }
}

/// One spelling per architecture: empty is the default (`x86_64`), `aarch64` is `arm64`,
/// `amd64` is `x86_64` (assisted-service's `NormalizeCPUArchitecture`).
pub fn normalize_cpu_architecture(arch: &str) -> &str {
    match arch {
        "" | "amd64" => DEFAULT_CPU_ARCHITECTURE,
        "aarch64" => "arm64",
        "multi" | "multiarch" => MULTI_CPU_ARCHITECTURE,
        other => other,
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct LocalObjectReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub http_proxy: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub https_proxy: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub no_proxy: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct KernelArgument {
    /// `append`, `replace` or `delete`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operation: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentApproval {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_approve: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfraEnvStatus {
    #[serde(
        rename = "isoDownloadURL",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub iso_download_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<String>,
    /// `ImageCreated` and `ClusterDeploymentReference`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `infraenvs.agent-install.openshift.io=<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_label_selector: Option<LabelSelector>,
    #[serde(default)]
    pub debug_info: InfraEnvDebugInfo,
    #[serde(default)]
    pub boot_artifacts: BootArtifacts,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfraEnvDebugInfo {
    #[serde(rename = "eventsURL", default)]
    pub events_url: String,
    #[serde(
        rename = "staticNetworkDownloadURL",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub static_network_download_url: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootArtifacts {
    #[serde(default)]
    pub initrd: String,
    #[serde(default)]
    pub rootfs: String,
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub ipxe_script: String,
    #[serde(rename = "discoveryIgnitionURL", default)]
    pub discovery_ignition_url: String,
}

/// hive's `ClusterDeployment`, reduced to what binding and teardown read.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "hive.openshift.io",
    version = "v1",
    derive = "PartialEq",
    kind = "ClusterDeployment",
    plural = "clusterdeployments",
    shortname = "cd",
    namespaced,
    status = "ClusterDeploymentStatus",
    printcolumn = r#"{"name":"ClusterName","type":"string","jsonPath":".spec.clusterName"}"#,
    printcolumn = r#"{"name":"BaseDomain","type":"string","jsonPath":".spec.baseDomain"}"#,
    printcolumn = r#"{"name":"Installed","type":"boolean","jsonPath":".spec.installed"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeploymentSpec {
    pub cluster_name: String,
    pub base_domain: String,
    /// Deleting the ClusterDeployment keeps the cluster running; its late-binding agents are
    /// then deleted rather than returned to the pool (they would be re-provisioned).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_on_delete: bool,
    /// Whether the cluster has been installed (the InfraEnv webhook reads it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub installed: bool,
    /// The AgentClusterInstall that installs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_install_ref: Option<ClusterInstallLocalReference>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterInstallLocalReference {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeploymentStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The AgentClusterInstall of a ClusterDeployment: how the cluster is installed from agents.
/// Reduced to what binding reads: its architecture and its state (the cluster status that
/// decides whether it accepts hosts).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "extensions.hive.openshift.io",
    version = "v1beta1",
    derive = "PartialEq",
    kind = "AgentClusterInstall",
    plural = "agentclusterinstalls",
    shortname = "aci",
    namespaced,
    status = "AgentClusterInstallStatus",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterDeploymentRef.name"}"#,
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".status.debugInfo.state"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterInstallSpec {
    pub cluster_deployment_ref: LocalObjectReference,
    /// The cluster's CPU architecture (`x86_64` when empty, `multi` accepts any host).
    /// Upstream derives it from the release image; `cvo` has no image set to read it from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_architecture: String,
    /// The cluster's networks: what the bound hosts' cluster-dependent validations read.
    #[serde(default, skip_serializing_if = "is_default")]
    pub networking: Networking,
    /// `BareMetal`, `None`, `VSphere`, `Nutanix` or `External`; empty: assisted-service picks
    /// (`None` with user-managed networking, else `BareMetal`). Arbiter hosts and fencing
    /// credentials need BareMetal (or None, from some version on).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub platform_type: String,
    /// `cvo`'s own: the OpenShift version the cluster installs (`4.19.0`). Upstream reads it
    /// from the release image of `spec.imageSetRef`; `cvo` has no image set to read. Arbiter
    /// hosts need 4.19, fencing credentials 4.20.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub openshift_version: String,
}

/// `spec.networking` of an AgentClusterInstall, reduced to what host validations read.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    /// The networks the cluster's hosts are on (`machine-cidr-defined`,
    /// `belongs-to-machine-cidr`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<MachineNetworkEntry>,
    /// The user provides load balancing and DNS: no machine network is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_managed_networking: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct MachineNetworkEntry {
    /// An IP network in CIDR notation, e.g. `192.168.0.0/16`.
    pub cidr: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentClusterInstallStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `state` is the cluster status (`insufficient`, `ready`, `installed`, ...).
    #[serde(default, skip_serializing_if = "is_default")]
    pub debug_info: ClusterDebugInfo,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDebugInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state_info: String,
    #[serde(
        rename = "eventsURL",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub events_url: String,
    #[serde(rename = "logsURL", default, skip_serializing_if = "String::is_empty")]
    pub logs_url: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agent_json_names_are_upstreams() {
        let agent: Agent = serde_json::from_value(json!({
            "apiVersion": "agent-install.openshift.io/v1beta1",
            "kind": "Agent",
            "metadata": {"name": "a", "namespace": "pool"},
            "spec": {
                "clusterDeploymentName": {"name": "cd", "namespace": "pool"},
                "role": "worker",
                "approved": true,
                "installation_disk_id": "/dev/disk/by-id/x",
                "ignitionEndpointHTTPHeaders": {"a": "b"},
            },
            "status": {
                "debugInfo": {"state": "known", "stateInfo": "Host is ready to be installed"},
                "deprovision_info": {"cluster_name": "cd", "cluster_namespace": "pool",
                                     "node_name": "n", "message": "m"},
                "installation_disk_id": "d",
                "csrStatus": {"approvedCSRs": [{"name": "c", "type": "client", "approvedAt": "t"}]},
                "validationsInfo": {"hardware": [{"id": "has-inventory", "status": "success",
                                                  "message": "Valid inventory exists for the host"}]},
                "kind": "AddToExistingClusterHost",
            },
        }))
        .unwrap();
        assert_eq!(
            agent.spec.cluster_deployment_name,
            Some(ClusterReference::new("pool", "cd"))
        );
        assert_eq!(agent.spec.installation_disk_id, "/dev/disk/by-id/x");
        let status = agent.status.as_ref().unwrap();
        assert_eq!(status.debug_info.state, "known");
        assert_eq!(status.deprovision_info.as_ref().unwrap().node_name, "n");
        assert_eq!(status.csr_status.approved_csrs[0].type_, "client");
        let back = serde_json::to_value(&agent).unwrap();
        assert_eq!(back["spec"]["installation_disk_id"], "/dev/disk/by-id/x");
        assert_eq!(back["status"]["deprovision_info"]["cluster_name"], "cd");
        assert_eq!(
            back["status"]["debugInfo"]["stateInfo"],
            "Host is ready to be installed"
        );
        assert_eq!(back["spec"]["approved"], true);
    }

    #[test]
    fn role_and_approved_are_required() {
        let err = serde_json::from_value::<AgentSpec>(json!({"role": "worker"})).unwrap_err();
        assert!(err.to_string().contains("approved"), "{err}");
        let err = serde_json::from_value::<AgentSpec>(json!({"approved": true})).unwrap_err();
        assert!(err.to_string().contains("role"), "{err}");
    }

    #[test]
    fn infraenv_architecture_defaults_and_aliases() {
        let spec = |arch: &str| InfraEnvSpec {
            cpu_architecture: arch.to_owned(),
            ..InfraEnvSpec::default()
        };
        assert_eq!(spec("").effective_cpu_architecture(), "x86_64");
        assert_eq!(spec("aarch64").effective_cpu_architecture(), "arm64");
        assert_eq!(spec("s390x").effective_cpu_architecture(), "s390x");
        let ie: InfraEnvSpec =
            serde_json::from_value(json!({"clusterRef": {"name": "c", "namespace": "n"},
                                          "osImageVersion": "4.18"}))
            .unwrap();
        assert_eq!(ie.os_image_version, "4.18");
        assert_eq!(ie.cluster_ref, Some(ClusterReference::new("n", "c")));
    }
}
