//! Finalizers, labels and annotations of the agent API (spec C.2), exactly as assisted-service
//! writes them, and the few fixed values the rest of the component compares against.

/// The API group of Agent and InfraEnv (and the prefix of most keys below).
pub const GROUP: &str = "agent-install.openshift.io";
/// The one version of the group the component serves.
pub const VERSION: &str = "v1beta1";

/// The Agent controller's finalizer: the host record is deregistered before the Agent goes.
pub const FINALIZER_AGENT: &str = "agent.agent-install.openshift.io/ai-deprovision";
/// The InfraEnv controller's finalizer: the InfraEnv waits for its hosts before it goes.
pub const FINALIZER_INFRAENV: &str = "infraenv.agent-install.openshift.io/ai-deprovision";

/// On an Agent, `"true"`: after an unbind, leave the old spoke cluster's Node, Machine and
/// BareMetalHost alone instead of cleaning them up when the host re-registers.
pub const ANN_SKIP_SPOKE_CLEANUP: &str = "agent.agent-install.openshift.io/skip-spoke-cleanup";
/// On an Agent: the host's state (`status.debugInfo.state`), for selectors and tools.
pub const ANN_STATE: &str = "agent.agent-install.openshift.io/state";
/// On an Agent: the host's effective role.
pub const ANN_ROLE: &str = "agent.agent-install.openshift.io/role";
/// On an Agent: the host's inventory as reported by the discovery agent.
pub const ANN_INVENTORY: &str = "agent.agent-install.openshift.io/inventory";
/// On an Agent: the host's validation results.
pub const ANN_VALIDATIONS_INFO: &str = "agent.agent-install.openshift.io/validations-info";
/// On an Agent: the installation stage the host reached.
pub const ANN_CURRENT_STAGE: &str = "agent.agent-install.openshift.io/current-stage";

/// On an Agent (value: the InfraEnv's name): which InfraEnv's discovery image the host booted.
/// The InfraEnv's `status.agentLabelSelector` selects on it.
pub const LABEL_INFRAENV: &str = "infraenvs.agent-install.openshift.io";
/// On an Agent: the namespace of the ClusterDeployment it is bound to, `""` when unbound, so
/// that a cluster creator can list the agents of a namespace's clusters with a selector.
pub const LABEL_CLUSTER_DEPLOYMENT_NAMESPACE: &str =
    "agent-install.openshift.io/clusterdeployment-namespace";
/// On an Agent: the BareMetalHost that manages its machine. Such a host is not reclaimed on
/// unbind (the BareMetalHost controller reboots it instead).
pub const LABEL_BMH: &str = "agent-install.openshift.io/bmh";
/// The prefix of the labels the Agent controller derives from the inventory.
pub const INVENTORY_LABEL_PREFIX: &str = "inventory.agent-install.openshift.io/";
/// On an Agent with inventory labels: the version of their scheme (`0.1`).
pub const ANN_INVENTORY_VERSION: &str = "inventory.agent-install.openshift.io/version";
/// `"true"` when the host has a non-rotational (SSD) disk.
pub const LABEL_INVENTORY_HAS_NONROTATIONAL_DISK: &str =
    "inventory.agent-install.openshift.io/storage-hasnonrotationaldisk";
/// The host's CPU architecture.
pub const LABEL_INVENTORY_CPU_ARCHITECTURE: &str =
    "inventory.agent-install.openshift.io/cpu-architecture";
/// `"true"` when the CPU has virtualisation extensions.
pub const LABEL_INVENTORY_CPU_VIRT_ENABLED: &str =
    "inventory.agent-install.openshift.io/cpu-virtenabled";
/// The system vendor's manufacturer.
pub const LABEL_INVENTORY_HOST_MANUFACTURER: &str =
    "inventory.agent-install.openshift.io/host-manufacturer";
/// The system vendor's product name.
pub const LABEL_INVENTORY_HOST_PRODUCT_NAME: &str =
    "inventory.agent-install.openshift.io/host-productname";
/// `"true"` for a virtual machine.
pub const LABEL_INVENTORY_HOST_IS_VIRTUAL: &str =
    "inventory.agent-install.openshift.io/host-isvirtual";

/// `status.kind` of a day-1 host (the default).
pub const KIND_HOST: &str = "Host";
/// `status.kind` of a day-2 host, one added to an installed cluster; only such a host may have
/// its ClusterDeployment reference unset while installing.
pub const KIND_ADD_TO_EXISTING_CLUSTER_HOST: &str = "AddToExistingClusterHost";

/// The role an unbound host is reset to.
pub const ROLE_AUTO_ASSIGN: &str = "auto-assign";

/// What an empty `cpuArchitecture` means (InfraEnv default, `+kubebuilder:default=x86_64`).
pub const DEFAULT_CPU_ARCHITECTURE: &str = "x86_64";
/// A cluster architecture that accepts hosts of any architecture.
pub const MULTI_CPU_ARCHITECTURE: &str = "multi";

/// `deprovision_info.message` while the unbound host has not re-registered yet.
pub const DEPROVISION_MESSAGE: &str = "Waiting for host to unbind to do spoke cleanup";

/// The ClusterDeployment finalizer: deleting a ClusterDeployment first returns its
/// late-binding agents to their pool (or deletes them, with `preserveOnDelete`).
pub const FINALIZER_CLUSTER_DEPLOYMENT: &str =
    "clusterdeployments.agent-install.openshift.io/ai-deprovision";

/// `cvo`'s own annotation (assisted-service keeps `checked_in_at` in its database): when the
/// discovery agent last checked in (RFC 3339). A host silent for
/// [`super::reconcile::CONNECTION_TIMEOUT`] is disconnected.
pub const ANN_CHECKED_IN_AT: &str = "agents.cvo.openshift.io/checked-in-at";
