//! What the Agent controller does about an Agent's ClusterDeployment reference (spec C.4), the
//! refusals of assisted-service's `BindHostInternal` and `UnbindHostInternal`, and what
//! deleting a ClusterDeployment does to the agents on it. Pure decisions over plain data: the
//! shell looks the objects up and carries the decision out.

use super::conditions::SyncError;
use super::keys::{DEPROVISION_MESSAGE, KIND_ADD_TO_EXISTING_CLUSTER_HOST, MULTI_CPU_ARCHITECTURE};
use super::state::{HostEvent, HostState, Transition, TransitionError, transition};
use super::types::{AgentDeprovisionInfo, ClusterReference, normalize_cpu_architecture};

/// The host record behind an Agent (assisted-service's DB row, keyed by InfraEnv and host id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRecord {
    pub id: String,
    pub infra_env_id: String,
    /// The cluster the host is bound to; none: unbound.
    pub cluster_id: Option<String>,
    pub state: HostState,
    /// `Host` or `AddToExistingClusterHost`.
    pub kind: String,
}

impl HostRecord {
    /// A host added to an installed cluster (day 2).
    pub fn is_day2(&self) -> bool {
        self.kind == KIND_ADD_TO_EXISTING_CLUSTER_HOST
    }
}

/// What looking up the Agent's ClusterDeployment found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterLookup<'a> {
    /// No such ClusterDeployment.
    CdMissing,
    /// The ClusterDeployment exists but no cluster is registered for it (yet).
    NotRegistered,
    /// The cluster registered for the ClusterDeployment.
    Found { cluster_id: &'a str },
}

/// What decides whether an unbind also reclaims the host (reboots an installed host into the
/// discovery image through an agent on the spoke cluster).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimContext {
    /// The image service is enabled (there is a discovery image to boot).
    pub image_service: bool,
    /// A BareMetalHost manages this agent's machine (it will reboot it instead).
    pub bare_metal_host: bool,
    /// The old cluster's API can be reached to start the reclaim agent.
    pub spoke_reachable: bool,
}

impl ReclaimContext {
    pub fn reclaim(&self) -> bool {
        self.image_service && !self.bare_metal_host && self.spoke_reachable
    }
}

/// Everything the Agent reconcile decides on.
#[derive(Clone, Copy, Debug)]
pub struct ReconcileInput<'a> {
    /// The Agent's `spec.clusterDeploymentName`.
    pub cd_ref: Option<&'a ClusterReference>,
    pub host: &'a HostRecord,
    /// The lookup of `cd_ref` (ignored without one).
    pub cluster: ClusterLookup<'a>,
    /// The ClusterDeployment of the cluster the host is bound to now, if known: where the
    /// host's old Node is, for `deprovision_info`.
    pub bound_cd: Option<&'a ClusterReference>,
    /// The host's node name on that cluster (its hostname).
    pub node_name: &'a str,
    pub reclaim: ReclaimContext,
}

/// An unbind the controller starts: UnbindHost (or ReclaimHost), then `deprovision_info` and a
/// reset `csrStatus` on the Agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unbind {
    pub reclaim: bool,
    pub deprovision_info: Option<AgentDeprovisionInfo>,
}

/// The Agent reconcile's decision (spec C.4's table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No reference and no cluster: an unbound agent; only its status is kept.
    Nothing,
    /// BindHostInternal to this cluster ([`bind_host`] says whether it may).
    Bind { cluster_id: String },
    /// The reference was cleared: unbind.
    Unbind(Unbind),
    /// The reference names another cluster: unbind first; the bind happens on a later
    /// reconcile, after the host re-registered unbound.
    Move(Unbind),
    /// A day-1 host in the middle of installation cannot be unbound. `SpecSynced=False
    /// InputError`, no requeue.
    RefuseInstalling { message: String },
    /// The referenced ClusterDeployment does not exist. `SpecSynced=False BackendError`,
    /// requeue.
    CdMissing { message: String },
    /// No cluster is registered for the ClusterDeployment. `SpecSynced=False BackendError`,
    /// requeue.
    ClusterMissing { message: String },
    /// Bound to the referenced cluster: apply the spec (approval, role, hostname, disk...).
    SpecSync,
}

impl Decision {
    /// The `SpecSynced` error this decision reports, if any.
    pub fn sync_error(&self) -> Option<SyncError<'_>> {
        match self {
            Decision::RefuseInstalling { message } => Some(SyncError::Input(message)),
            Decision::CdMissing { message } | Decision::ClusterMissing { message } => {
                Some(SyncError::Backend(message))
            }
            _ => None,
        }
    }

    /// Whether the reconcile is retried although nothing changes (a backend error).
    pub fn requeue(&self) -> bool {
        matches!(
            self,
            Decision::CdMissing { .. } | Decision::ClusterMissing { .. }
        )
    }
}

/// The Agent reconcile's table, after finalizer handling and the host lookup.
pub fn decide(input: &ReconcileInput) -> Decision {
    let host = input.host;
    let Some(cd) = input.cd_ref else {
        return match &host.cluster_id {
            None => Decision::Nothing,
            Some(_) if host.state.is_installing() && !host.is_day2() => {
                Decision::RefuseInstalling {
                    message: format!(
                        "cancelling non-day-2 host [{}] in the middle of installation is not allowed",
                        host.id
                    ),
                }
            }
            Some(_) => Decision::Unbind(unbind(input)),
        };
    };
    match input.cluster {
        ClusterLookup::CdMissing => Decision::CdMissing {
            message: format!(
                "failed to get clusterDeployment with name {name} in namespace {namespace}: clusterdeployments.hive.openshift.io \"{name}\" not found",
                name = cd.name,
                namespace = cd.namespace
            ),
        },
        ClusterLookup::NotRegistered => Decision::ClusterMissing {
            message: format!(
                "no cluster is registered for clusterDeployment with name {} in namespace {}",
                cd.name, cd.namespace
            ),
        },
        ClusterLookup::Found { cluster_id } => match host.cluster_id.as_deref() {
            None => Decision::Bind {
                cluster_id: cluster_id.to_owned(),
            },
            Some(bound) if bound != cluster_id => Decision::Move(unbind(input)),
            Some(_) => Decision::SpecSync,
        },
    }
}

fn unbind(input: &ReconcileInput) -> Unbind {
    Unbind {
        reclaim: input.reclaim.reclaim(),
        deprovision_info: input.bound_cd.map(|cd| AgentDeprovisionInfo {
            cluster_name: cd.name.clone(),
            cluster_namespace: cd.namespace.clone(),
            node_name: input.node_name.to_owned(),
            message: DEPROVISION_MESSAGE.to_owned(),
        }),
    }
}

/// The cluster statuses in which a cluster accepts new hosts (`AcceptRegistration`).
pub const ACCEPTING_STATUSES: &[&str] =
    &["insufficient", "ready", "pending-for-input", "adding-hosts"];

/// The cluster a host is to be bound to, as BindHostInternal sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterFacts<'a> {
    pub id: &'a str,
    /// The cluster status (the AgentClusterInstall's `status.debugInfo.state`).
    pub status: &'a str,
    /// Empty or `multi`: any host architecture.
    pub cpu_architecture: &'a str,
    /// The OpenShift version it installs (`4.19.0`; empty: unknown).
    pub openshift_version: &'a str,
    /// Its platform as assisted-service names it (`baremetal`, `none`, `vsphere`, ...).
    pub platform: &'a str,
    /// An installed cluster that hosts are added to (day 2).
    pub day2: bool,
}

/// The first version whose clusters may have arbiter hosts, and from which on the `none`
/// platform too (assisted-service's `MinimumVersionForArbiterClusters*`).
pub const MINIMUM_VERSION_FOR_ARBITER: &str = "4.19";
pub const MINIMUM_VERSION_FOR_ARBITER_WITH_NONE_PLATFORM: &str = "4.22";
/// The first version whose clusters may have hosts with fencing credentials (two nodes with
/// fencing).
pub const MINIMUM_VERSION_FOR_FENCING: &str = "4.20";

/// Upstream's `ValidateClusterSupportsArbiterHosts`: a day-1 cluster from 4.19 on the
/// baremetal platform, or from 4.22 also on `none`; a day-2 cluster may have been installed
/// with arbiters (upstream cannot tell, so it allows them).
pub fn cluster_supports_arbiter_hosts(cluster: &ClusterFacts) -> Result<(), String> {
    if cluster.day2 {
        return Ok(());
    }
    if !version_at_least(cluster.openshift_version, MINIMUM_VERSION_FOR_ARBITER)? {
        return Err(format!(
            "cluster's openshift version must be at least {MINIMUM_VERSION_FOR_ARBITER}"
        ));
    }
    match cluster.platform {
        "" => Err("cluster's platform must be set".into()),
        "baremetal" => Ok(()),
        "none"
            if version_at_least(
                cluster.openshift_version,
                MINIMUM_VERSION_FOR_ARBITER_WITH_NONE_PLATFORM,
            )? =>
        {
            Ok(())
        }
        _ if version_at_least(
            cluster.openshift_version,
            MINIMUM_VERSION_FOR_ARBITER_WITH_NONE_PLATFORM,
        )? =>
        {
            Err("cluster's platform must be baremetal or none".into())
        }
        _ => Err("cluster's platform must be baremetal".into()),
    }
}

/// Upstream's `ValidateClusterSupportsFencingCredentials`: a day-1 cluster from 4.20 on the
/// baremetal or `none` platform (fencing credentials do nothing on day 2, and are allowed).
pub fn cluster_supports_fencing_credentials(cluster: &ClusterFacts) -> Result<(), String> {
    if cluster.day2 {
        return Ok(());
    }
    if !version_at_least(cluster.openshift_version, MINIMUM_VERSION_FOR_FENCING)? {
        return Err(format!(
            "cluster's openshift version must be at least {MINIMUM_VERSION_FOR_FENCING}"
        ));
    }
    match cluster.platform {
        "baremetal" | "none" => Ok(()),
        _ => Err("cluster's platform must be baremetal or none".into()),
    }
}

/// Upstream's `BaseVersionGreaterOrEqual(minimum, version)`: the version without its
/// pre-release part is at least `minimum`. A version that is no version is an error
/// (hashicorp/go-version's message).
fn version_at_least(version: &str, minimum: &str) -> Result<bool, String> {
    let base = version.split('-').next().unwrap_or_default();
    let parse = |v: &str| -> Option<Vec<u64>> {
        let v = v.strip_prefix('v').unwrap_or(v);
        v.split('.').map(|p| p.parse().ok()).collect()
    };
    let (Some(have), Some(need)) = (parse(base), parse(minimum)) else {
        return Err(format!("Malformed version: {version}"));
    };
    let len = have.len().max(need.len());
    let pad = |mut v: Vec<u64>| {
        v.resize(len, 0);
        v
    };
    Ok(pad(have) >= pad(need))
}

/// assisted-service's platform name for an AgentClusterInstall's `platformType`; an empty one
/// is what assisted-service gives such a cluster: `none` with user-managed networking,
/// `baremetal` otherwise.
pub fn platform_of(platform_type: &str, user_managed_networking: bool) -> &'static str {
    match platform_type {
        "BareMetal" => "baremetal",
        "None" => "none",
        "VSphere" => "vsphere",
        "Nutanix" => "nutanix",
        "External" => "external",
        _ if user_managed_networking => "none",
        _ => "baremetal",
    }
}

/// What BindHostInternal checks.
#[derive(Clone, Copy, Debug)]
pub struct BindRequest<'a> {
    pub host: &'a HostRecord,
    /// The cluster asked for.
    pub cluster_id: &'a str,
    /// That cluster, if it exists.
    pub cluster: Option<&'a ClusterFacts<'a>>,
    /// The host's InfraEnv's `cpuArchitecture` (empty: `x86_64`).
    pub infra_env_cpu_architecture: &'a str,
    /// The Agent's `spec.role`.
    pub role: &'a str,
    /// The Agent has `spec.fencingCredentialsSecretRef`.
    pub fencing_credentials: bool,
}

/// Why BindHostInternal refuses, with its HTTP status ([`BindError::code`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    #[error("Host {host} is already bound to cluster {cluster}")]
    AlreadyBound { host: String, cluster: String },
    #[error("Failed to find cluster {0}")]
    ClusterNotFound(String),
    #[error("InfraEnv's CPU architecture ({infra_env}) doesn't match the cluster ({cluster})")]
    ArchitectureMismatch { infra_env: String, cluster: String },
    #[error("Host {host} is assigned the arbiter role: {reason}")]
    ArbiterUnsupported { host: String, reason: String },
    #[error("Host {host} has fencing credentials: {reason}")]
    FencingUnsupported { host: String, reason: String },
    #[error("Cannot add hosts to an existing cluster using the original Discovery ISO.")]
    ClusterInstalled,
    #[error("Host can register only in one of the following states: [{}]", ACCEPTING_STATUSES.join(" "))]
    NotAcceptingHosts,
    #[error(transparent)]
    StateMachine(#[from] TransitionError),
}

impl BindError {
    /// The HTTP status upstream answers with.
    pub fn code(&self) -> u16 {
        match self {
            BindError::AlreadyBound { .. }
            | BindError::ClusterInstalled
            | BindError::NotAcceptingHosts => 409,
            BindError::ClusterNotFound(_)
            | BindError::ArchitectureMismatch { .. }
            | BindError::ArbiterUnsupported { .. }
            | BindError::FencingUnsupported { .. } => 400,
            BindError::StateMachine(_) => 500,
        }
    }

    /// A 4xx: the Agent's `SpecSynced` says `InputError` (else `BackendError`, requeued).
    pub fn is_user_error(&self) -> bool {
        self.code() < 500
    }
}

/// BindHostInternal's checks in its order, then the BindHost transition.
pub fn bind_host(request: &BindRequest) -> Result<Transition, BindError> {
    let host = request.host;
    if let Some(cluster) = &host.cluster_id {
        return Err(BindError::AlreadyBound {
            host: host.id.clone(),
            cluster: cluster.clone(),
        });
    }
    let cluster = request
        .cluster
        .ok_or_else(|| BindError::ClusterNotFound(request.cluster_id.to_owned()))?;
    let infra_env_arch = normalize_cpu_architecture(request.infra_env_cpu_architecture);
    let cluster_arch = cluster.cpu_architecture;
    if !cluster_arch.is_empty()
        && normalize_cpu_architecture(cluster_arch) != MULTI_CPU_ARCHITECTURE
        && normalize_cpu_architecture(cluster_arch) != infra_env_arch
    {
        return Err(BindError::ArchitectureMismatch {
            infra_env: infra_env_arch.to_owned(),
            cluster: cluster_arch.to_owned(),
        });
    }
    if request.role == "arbiter"
        && let Err(reason) = cluster_supports_arbiter_hosts(cluster)
    {
        return Err(BindError::ArbiterUnsupported {
            host: host.id.clone(),
            reason,
        });
    }
    if request.fencing_credentials
        && let Err(reason) = cluster_supports_fencing_credentials(cluster)
    {
        return Err(BindError::FencingUnsupported {
            host: host.id.clone(),
            reason,
        });
    }
    if !ACCEPTING_STATUSES.contains(&cluster.status) {
        return Err(match cluster.status {
            "installed" => BindError::ClusterInstalled,
            _ => BindError::NotAcceptingHosts,
        });
    }
    Ok(transition(host.state, &HostEvent::Bind)?)
}

/// Why UnbindHostInternal (or the REST UnbindHost) refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnbindError {
    #[error("Host {0} is already unbound")]
    AlreadyUnbound(String),
    #[error("Cannot unbind Host {host}. InfraEnv {infra_env} is bound to Cluster {cluster}")]
    InfraEnvBound {
        host: String,
        infra_env: String,
        cluster: String,
    },
    /// REST only.
    #[error("Cannot unbind Host {0} while it is in the middle of installing.")]
    Installing(String),
    #[error(transparent)]
    StateMachine(#[from] TransitionError),
}

impl UnbindError {
    /// The HTTP status upstream answers with.
    pub fn code(&self) -> u16 {
        match self {
            UnbindError::StateMachine(_) => 500,
            _ => 409,
        }
    }

    /// A 4xx: the Agent's `SpecSynced` says `InputError` (else `BackendError`, requeued).
    pub fn is_user_error(&self) -> bool {
        self.code() < 500
    }
}

/// Who asks for the unbind: the REST API refuses installing hosts itself; the Agent
/// controller relies on the webhook and its own refusal ([`decide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Rest,
    Controller,
}

/// UnbindHostInternal's checks in its order, then UnbindHost (or ReclaimHost).
/// `infra_env_cluster_id`: the cluster the host's InfraEnv is bound to (not late binding).
pub fn unbind_host(
    host: &HostRecord,
    infra_env_cluster_id: Option<&str>,
    reclaim: bool,
    caller: Caller,
) -> Result<Transition, UnbindError> {
    if host.cluster_id.is_none() {
        return Err(UnbindError::AlreadyUnbound(host.id.clone()));
    }
    if let Some(cluster) = infra_env_cluster_id {
        return Err(UnbindError::InfraEnvBound {
            host: host.id.clone(),
            infra_env: host.infra_env_id.clone(),
            cluster: cluster.to_owned(),
        });
    }
    if caller == Caller::Rest && host.state.is_installing() {
        return Err(UnbindError::Installing(host.id.clone()));
    }
    let event = if reclaim {
        HostEvent::Reclaim
    } else {
        HostEvent::Unbind
    };
    Ok(transition(host.state, &event)?)
}

/// What happens to an Agent when a ClusterDeployment is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// Not on that ClusterDeployment.
    Keep,
    /// Delete the Agent (and its host).
    Delete,
    /// Clear `spec.clusterDeploymentName`: the host returns to its InfraEnv's pool.
    Unbind,
}

/// The InfraEnv of an Agent, as teardown sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentInfraEnv<'a> {
    /// The Agent names none, or it is gone.
    Missing,
    /// Its `spec.clusterRef` (none: late binding).
    Found(Option<&'a ClusterReference>),
}

/// Deleting `deleted` (upstream's `unbindAgents` with `shouldDeleteAgentOnUnbind`): an Agent
/// referencing it is deleted when its InfraEnv is bound to it, or when its InfraEnv is a
/// late-binding pool and the ClusterDeployment has `preserveOnDelete` (the cluster keeps
/// running, so its hosts must not be re-provisioned); otherwise, its InfraEnv missing or
/// bound elsewhere included, it is unbound. Agents referencing another ClusterDeployment are
/// kept.
pub fn teardown(
    deleted: &ClusterReference,
    preserve_on_delete: bool,
    agent_cd: Option<&ClusterReference>,
    infra_env: AgentInfraEnv,
) -> Teardown {
    if agent_cd != Some(deleted) {
        return Teardown::Keep;
    }
    match infra_env {
        AgentInfraEnv::Found(Some(bound)) if bound == deleted => Teardown::Delete,
        AgentInfraEnv::Found(None) if preserve_on_delete => Teardown::Delete,
        _ => Teardown::Unbind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HostState::*;

    fn host(cluster: Option<&str>, state: HostState) -> HostRecord {
        HostRecord {
            id: "h1".into(),
            infra_env_id: "ie1".into(),
            cluster_id: cluster.map(str::to_owned),
            state,
            kind: "Host".into(),
        }
    }

    fn day2(mut h: HostRecord) -> HostRecord {
        h.kind = KIND_ADD_TO_EXISTING_CLUSTER_HOST.into();
        h
    }

    fn input<'a>(
        cd_ref: Option<&'a ClusterReference>,
        host: &'a HostRecord,
        cluster: ClusterLookup<'a>,
        bound_cd: Option<&'a ClusterReference>,
    ) -> ReconcileInput<'a> {
        ReconcileInput {
            cd_ref,
            host,
            cluster,
            bound_cd,
            node_name: "worker-0",
            reclaim: ReclaimContext::default(),
        }
    }

    #[test]
    fn the_reconcile_table() {
        let cd = ClusterReference::new("team", "prod");
        let old = ClusterReference::new("team", "old");
        let found = ClusterLookup::Found { cluster_id: "c1" };
        let unbound = host(None, KnownUnbound);
        let bound = host(Some("c1"), Known);
        let elsewhere = host(Some("c0"), Known);
        let installing = host(Some("c1"), InstallingInProgress);
        let installing_day2 = day2(host(Some("c1"), Installing));

        assert_eq!(
            decide(&input(None, &unbound, found, None)),
            Decision::Nothing
        );
        assert_eq!(
            decide(&input(None, &installing, found, Some(&cd))),
            Decision::RefuseInstalling {
                message:
                    "cancelling non-day-2 host [h1] in the middle of installation is not allowed"
                        .into()
            }
        );
        let want_unbind = Unbind {
            reclaim: false,
            deprovision_info: Some(AgentDeprovisionInfo {
                cluster_name: "prod".into(),
                cluster_namespace: "team".into(),
                node_name: "worker-0".into(),
                message: "Waiting for host to unbind to do spoke cleanup".into(),
            }),
        };
        assert_eq!(
            decide(&input(None, &installing_day2, found, Some(&cd))),
            Decision::Unbind(want_unbind.clone())
        );
        assert_eq!(
            decide(&input(None, &bound, found, Some(&cd))),
            Decision::Unbind(want_unbind)
        );
        let missing = decide(&input(Some(&cd), &unbound, ClusterLookup::CdMissing, None));
        assert_eq!(
            missing,
            Decision::CdMissing {
                message: "failed to get clusterDeployment with name prod in namespace team: clusterdeployments.hive.openshift.io \"prod\" not found".into()
            }
        );
        assert!(missing.requeue());
        assert!(matches!(missing.sync_error(), Some(SyncError::Backend(_))));
        assert!(matches!(
            decide(&input(
                Some(&cd),
                &unbound,
                ClusterLookup::NotRegistered,
                None
            )),
            Decision::ClusterMissing { .. }
        ));
        assert_eq!(
            decide(&input(Some(&cd), &unbound, found, None)),
            Decision::Bind {
                cluster_id: "c1".into()
            }
        );
        let moved = decide(&input(Some(&cd), &elsewhere, found, Some(&old)));
        match &moved {
            Decision::Move(u) => {
                assert_eq!(u.deprovision_info.as_ref().unwrap().cluster_name, "old");
            }
            other => panic!("{other:?}"),
        }
        assert!(!moved.requeue() && moved.sync_error().is_none());
        assert_eq!(
            decide(&input(Some(&cd), &bound, found, None)),
            Decision::SpecSync
        );
        let refused = decide(&input(None, &installing, found, None));
        assert!(!refused.requeue());
        assert!(matches!(refused.sync_error(), Some(SyncError::Input(_))));
    }

    #[test]
    fn reclaim_needs_the_image_service_no_bmh_and_the_spoke() {
        let all = ReclaimContext {
            image_service: true,
            bare_metal_host: false,
            spoke_reachable: true,
        };
        assert!(all.reclaim());
        assert!(
            !ReclaimContext {
                bare_metal_host: true,
                ..all
            }
            .reclaim()
        );
        assert!(
            !ReclaimContext {
                spoke_reachable: false,
                ..all
            }
            .reclaim()
        );
        assert!(
            !ReclaimContext {
                image_service: false,
                ..all
            }
            .reclaim()
        );
        let bound = host(Some("c1"), Installed);
        let mut i = input(None, &bound, ClusterLookup::CdMissing, None);
        i.reclaim = all;
        assert_eq!(
            decide(&i),
            Decision::Unbind(Unbind {
                reclaim: true,
                deprovision_info: None
            })
        );
    }

    fn ready_cluster() -> ClusterFacts<'static> {
        ClusterFacts {
            id: "c1",
            status: "ready",
            cpu_architecture: "x86_64",
            openshift_version: "4.18.0",
            platform: "baremetal",
            day2: false,
        }
    }

    fn bind<'a>(host: &'a HostRecord, cluster: Option<&'a ClusterFacts<'a>>) -> BindRequest<'a> {
        BindRequest {
            host,
            cluster_id: "c1",
            cluster,
            infra_env_cpu_architecture: "",
            role: "auto-assign",
            fencing_credentials: false,
        }
    }

    #[test]
    fn bind_host_refusals_in_upstreams_order() {
        let cluster = ready_cluster();
        let free = host(None, KnownUnbound);
        let t = bind_host(&bind(&free, Some(&cluster))).unwrap();
        assert_eq!(t.to, Binding);

        let taken = host(Some("c0"), Known);
        let e = bind_host(&bind(&taken, Some(&cluster))).unwrap_err();
        assert_eq!(e.to_string(), "Host h1 is already bound to cluster c0");
        assert_eq!(e.code(), 409);

        let e = bind_host(&bind(&free, None)).unwrap_err();
        assert_eq!(e.to_string(), "Failed to find cluster c1");
        assert_eq!(e.code(), 400);

        let arm = ClusterFacts {
            cpu_architecture: "arm64",
            ..cluster
        };
        let e = bind_host(&bind(&free, Some(&arm))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "InfraEnv's CPU architecture (x86_64) doesn't match the cluster (arm64)"
        );
        assert_eq!(e.code(), 400);
        let mut arm_infra = bind(&free, Some(&arm));
        arm_infra.infra_env_cpu_architecture = "aarch64";
        assert!(bind_host(&arm_infra).is_ok());
        for any in ["", "multi"] {
            let c = ClusterFacts {
                cpu_architecture: any,
                ..cluster
            };
            assert!(bind_host(&bind(&free, Some(&c))).is_ok(), "{any:?}");
        }

        let mut arbiter = bind(&free, Some(&cluster));
        arbiter.role = "arbiter";
        let e = bind_host(&arbiter).unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.to_string(),
            "Host h1 is assigned the arbiter role: cluster's openshift version must be at least 4.19"
        );
        let mut fencing = bind(&free, Some(&cluster));
        fencing.fencing_credentials = true;
        let e = bind_host(&fencing).unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.to_string(),
            "Host h1 has fencing credentials: cluster's openshift version must be at least 4.20"
        );
        let recent = ClusterFacts {
            openshift_version: "4.20.3",
            ..cluster
        };
        let mut arbiter = bind(&free, Some(&recent));
        arbiter.role = "arbiter";
        arbiter.fencing_credentials = true;
        assert_eq!(bind_host(&arbiter).unwrap().to, Binding);

        let installed = ClusterFacts {
            status: "installed",
            ..cluster
        };
        let e = bind_host(&bind(&free, Some(&installed))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Cannot add hosts to an existing cluster using the original Discovery ISO."
        );
        assert_eq!(e.code(), 409);
        let installing = ClusterFacts {
            status: "installing",
            ..cluster
        };
        let e = bind_host(&bind(&free, Some(&installing))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Host can register only in one of the following states: [insufficient ready pending-for-input adding-hosts]"
        );

        let insufficient = host(None, InsufficientUnbound);
        let e = bind_host(&bind(&insufficient, Some(&cluster))).unwrap_err();
        assert_eq!(e.code(), 500);
        assert!(!e.is_user_error());
        assert_eq!(e.to_string(), "no condition found to run transition");
    }

    #[test]
    fn unbind_host_refusals() {
        let e =
            unbind_host(&host(None, KnownUnbound), None, false, Caller::Controller).unwrap_err();
        assert_eq!(e.to_string(), "Host h1 is already unbound");
        assert_eq!(e.code(), 409);
        let e = unbind_host(
            &host(Some("c1"), Known),
            Some("c1"),
            false,
            Caller::Controller,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Cannot unbind Host h1. InfraEnv ie1 is bound to Cluster c1"
        );
        let installing = host(Some("c1"), Installing);
        let e = unbind_host(&installing, None, false, Caller::Rest).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Cannot unbind Host h1 while it is in the middle of installing."
        );
        let t = unbind_host(&installing, None, false, Caller::Controller).unwrap();
        assert_eq!(t.to, UnbindingPendingUserAction);
        let t = unbind_host(&host(Some("c1"), Installed), None, true, Caller::Rest).unwrap();
        assert_eq!(t.to, Reclaiming);
        let e = unbind_host(&host(Some("c1"), Resetting), None, false, Caller::Rest).unwrap_err();
        assert_eq!(e.code(), 500);
    }

    #[test]
    fn teardown_of_a_cluster_deployment() {
        use AgentInfraEnv::{Found, Missing};
        let cd = ClusterReference::new("team", "prod");
        let other = ClusterReference::new("team", "dev");
        let t = |preserve, agent, ie| teardown(&cd, preserve, agent, ie);
        assert_eq!(t(false, Some(&cd), Found(Some(&cd))), Teardown::Delete);
        assert_eq!(t(true, Some(&cd), Found(Some(&cd))), Teardown::Delete);
        assert_eq!(t(false, Some(&cd), Found(None)), Teardown::Unbind);
        assert_eq!(t(true, Some(&cd), Found(None)), Teardown::Delete);
        // preserveOnDelete deletes only late-binding agents: one whose InfraEnv is gone or
        // bound elsewhere is unbound.
        assert_eq!(t(true, Some(&cd), Missing), Teardown::Unbind);
        assert_eq!(t(true, Some(&cd), Found(Some(&other))), Teardown::Unbind);
        assert_eq!(t(true, Some(&other), Found(None)), Teardown::Keep);
        assert_eq!(t(false, None, Found(None)), Teardown::Keep);
        assert_eq!(t(false, None, Found(Some(&cd))), Teardown::Keep);
    }

    #[test]
    fn arbiter_and_fencing_support_as_upstream_judges_it() {
        let at = |version: &'static str, platform: &'static str| ClusterFacts {
            openshift_version: version,
            platform,
            ..ready_cluster()
        };
        let arbiter = |c: ClusterFacts| cluster_supports_arbiter_hosts(&c);
        let fencing = |c: ClusterFacts| cluster_supports_fencing_credentials(&c);
        assert_eq!(arbiter(at("4.19.0", "baremetal")), Ok(()));
        assert_eq!(arbiter(at("4.19.0-rc.2", "baremetal")), Ok(()));
        assert_eq!(
            arbiter(at("4.18.9", "baremetal")),
            Err("cluster's openshift version must be at least 4.19".into())
        );
        assert_eq!(
            arbiter(at("4.21.0", "none")),
            Err("cluster's platform must be baremetal".into())
        );
        assert_eq!(arbiter(at("4.22.0", "none")), Ok(()));
        assert_eq!(
            arbiter(at("4.22.0", "vsphere")),
            Err("cluster's platform must be baremetal or none".into())
        );
        assert_eq!(
            arbiter(at("4.19.0", "")),
            Err("cluster's platform must be set".into())
        );
        assert_eq!(
            arbiter(at("", "baremetal")),
            Err("Malformed version: ".into())
        );
        let day2 = ClusterFacts {
            day2: true,
            ..at("4.12.0", "vsphere")
        };
        assert_eq!(arbiter(day2), Ok(()));
        assert_eq!(fencing(day2), Ok(()));
        assert_eq!(fencing(at("4.20.0", "none")), Ok(()));
        assert_eq!(
            fencing(at("4.20.0", "nutanix")),
            Err("cluster's platform must be baremetal or none".into())
        );
        assert_eq!(
            fencing(at("4.19.0", "baremetal")),
            Err("cluster's openshift version must be at least 4.20".into())
        );
        assert_eq!(platform_of("", true), "none");
        assert_eq!(platform_of("", false), "baremetal");
        assert_eq!(platform_of("VSphere", false), "vsphere");
    }
}
