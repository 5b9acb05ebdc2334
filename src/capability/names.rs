//! Exact upstream spellings of capability and feature-gate names (spec §3.1).
//!
//! Kept as `&str` constants so that other modules (inclusion rules, CLI
//! defaults, tests) can refer to a capability without retyping its name;
//! the mixed case (`baremetal` next to `Console`) is upstream's and must not
//! be "fixed".

/// `ClusterVersionCapabilityBaremetal`.
pub const BAREMETAL: &str = "baremetal";
/// `ClusterVersionCapabilityConsole`.
pub const CONSOLE: &str = "Console";
/// `ClusterVersionCapabilityInsights`.
pub const INSIGHTS: &str = "Insights";
/// `ClusterVersionCapabilityMarketplace`; needs OLM (see [`super::validate_spec`]).
pub const MARKETPLACE: &str = "marketplace";
/// `ClusterVersionCapabilityStorage`.
pub const STORAGE: &str = "Storage";
/// `ClusterVersionCapabilityOpenShiftSamples`.
pub const OPENSHIFT_SAMPLES: &str = "openshift-samples";
/// `ClusterVersionCapabilityCSISnapshot`.
pub const CSI_SNAPSHOT: &str = "CSISnapshot";
/// `ClusterVersionCapabilityNodeTuning`.
pub const NODE_TUNING: &str = "NodeTuning";
/// `ClusterVersionCapabilityMachineAPI`.
pub const MACHINE_API: &str = "MachineAPI";
/// `ClusterVersionCapabilityBuild`.
pub const BUILD: &str = "Build";
/// `ClusterVersionCapabilityDeploymentConfig`.
pub const DEPLOYMENT_CONFIG: &str = "DeploymentConfig";
/// `ClusterVersionCapabilityImageRegistry`.
pub const IMAGE_REGISTRY: &str = "ImageRegistry";
/// `ClusterVersionCapabilityOperatorLifecycleManager`.
pub const OPERATOR_LIFECYCLE_MANAGER: &str = "OperatorLifecycleManager";
/// `ClusterVersionCapabilityOperatorLifecycleManagerV1`.
pub const OPERATOR_LIFECYCLE_MANAGER_V1: &str = "OperatorLifecycleManagerV1";
/// `ClusterVersionCapabilityCloudCredential`.
pub const CLOUD_CREDENTIAL: &str = "CloudCredential";
/// `ClusterVersionCapabilityIngress`; the standalone CVO always enables it.
pub const INGRESS: &str = "Ingress";
/// `ClusterVersionCapabilityCloudControllerManager`.
pub const CLOUD_CONTROLLER_MANAGER: &str = "CloudControllerManager";
/// `ClusterVersionCapabilityCompatibilityRequirements` (feature-gated).
pub const COMPATIBILITY_REQUIREMENTS: &str = "CompatibilityRequirements";
/// `ClusterVersionCapabilityClusterAPI` (feature-gated; needs
/// [`COMPATIBILITY_REQUIREMENTS`]).
pub const CLUSTER_API: &str = "ClusterAPI";

/// Feature gate that makes [`COMPATIBILITY_REQUIREMENTS`] available.
pub const GATE_CRD_COMPATIBILITY_REQUIREMENT_OPERATOR: &str = "CRDCompatibilityRequirementOperator";
/// Feature gate that makes both [`CLUSTER_API`] and
/// [`COMPATIBILITY_REQUIREMENTS`] available.
pub const GATE_CLUSTER_API_MACHINE_MANAGEMENT: &str = "ClusterAPIMachineManagement";
