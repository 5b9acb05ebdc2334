//! The Agent reconcile as one pure step (spec C.4): from an Agent, its InfraEnv and the
//! ClusterDeployment it references, the Agent's next status, its ClusterDeployment-namespace
//! label, the Events to record and when to look again. The host record assisted-service keeps
//! in its database lives here in the Agent's status (`debugInfo.state`/`stateInfo`,
//! `boundClusterDeployment`), so a bind or an unbind is one status write.
//!
//! The order of a reconcile: an unbound host is refreshed first (the host monitor's pool
//! rules: `known-unbound` vs `insufficient-unbound`, or disconnected), then
//! [`binding::decide`] says what the reference asks for and BindHost/UnbindHost carry it out,
//! then a bound host is refreshed by the bound rules, then the conditions follow the state.
//! Also here: what the discovery agent's registration does to the record ([`register_host`]),
//! teardown of a deleted ClusterDeployment's agents ([`teardown_agents`]), and the InfraEnv's
//! status ([`infra_env_status`]).

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::binding::{
    self, BindRequest, Caller, ClusterFacts, ClusterLookup, Decision, HostRecord, ReclaimContext,
    ReconcileInput, Teardown,
};
use super::conditions::{HostView, SyncError, agent_conditions};
use super::keys::{ANN_CHECKED_IN_AT, KIND_HOST, LABEL_INFRAENV, ROLE_AUTO_ASSIGN};
use super::state::{Effect, HostEvent, HostState, Transition, transition};
use super::types::{
    Agent, AgentClusterInstall, AgentStatus, ClusterDeployment, ClusterReference, Condition,
    HostInventory, InfraEnv, InfraEnvStatus, LabelSelector,
};
use super::validation::{
    ClusterContext, Observation, Requirements, validate_bound, validate_unbound,
};

/// A host that has not checked in for this long is disconnected (upstream's 3 minutes).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(180);

/// How long a backend error waits before the reconcile is retried.
pub const BACKEND_RETRY: Duration = Duration::from_secs(5);

/// A cluster status `cvo` assumes when the AgentClusterInstall says none: with no installer
/// driving the cluster, an AgentClusterInstall without a state is a cluster before
/// installation whose hosts are not all there (upstream's first status).
pub const DEFAULT_CLUSTER_STATUS: &str = "insufficient";

/// Event names (upstream's event ids).
pub mod event {
    pub const HOST_STATUS_UPDATED: &str = "host_status_updated";
    pub const HOST_BIND_SUCCEEDED: &str = "host_bind_succeeded";
    pub const HOST_BIND_FAILED: &str = "host_bind_failed";
    pub const HOST_UNBIND_SUCCEEDED: &str = "host_unbind_succeeded";
    pub const HOST_UNBIND_FAILED: &str = "host_unbind_failed";
}

/// The ClusterDeployment an Agent references, as found.
#[derive(Clone, Copy, Debug)]
pub struct ClusterView<'a> {
    pub cd: &'a ClusterDeployment,
    /// Its AgentClusterInstall (`spec.clusterInstallRef`); none: no cluster registered.
    pub aci: Option<&'a AgentClusterInstall>,
}

/// What a reconcile of one Agent reads besides the Agent.
#[derive(Clone, Copy, Debug)]
pub struct AgentContext<'a> {
    /// The InfraEnv named by the Agent's `infraenvs.agent-install.openshift.io` label.
    pub infra_env: Option<&'a InfraEnv>,
    /// The ClusterDeployment `spec.clusterDeploymentName` names; none: missing (or no
    /// reference).
    pub cluster: Option<ClusterView<'a>>,
    pub now: Timestamp,
    pub requirements: Requirements,
    /// The hostnames of the other agents bound to the referenced cluster (the
    /// `hostname-unique` validation).
    pub cluster_hostnames: &'a [String],
    /// Whether an unbind of an installed host reclaims it (the image service, a
    /// BareMetalHost, the spoke cluster).
    pub reclaim: ReclaimContext,
}

/// Where an Event is recorded (spec C.6): an unbound host's on its InfraEnv, a bound host's on
/// its ClusterDeployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventScope {
    InfraEnv { namespace: String, name: String },
    ClusterDeployment(ClusterReference),
}

/// An Event to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEventRecord {
    pub scope: EventScope,
    pub warning: bool,
    /// Upstream's event name (see [`event`]).
    pub reason: &'static str,
    /// The Event's `action`: `BindHost`, `UnbindHost`, or for a status update the state
    /// reached (Events with the same object, reason and action are one series, so each
    /// state gets its own).
    pub action: String,
    pub message: String,
}

/// What the shell does after one Agent reconcile.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentPlan {
    /// The status to write (written only if it differs).
    pub status: AgentStatus,
    /// `agent-install.openshift.io/clusterdeployment-namespace`: the referenced
    /// ClusterDeployment's namespace, `""` without one.
    pub cluster_namespace_label: String,
    pub events: Vec<HostEventRecord>,
    /// When to reconcile again although nothing changes.
    pub requeue_after: Option<Duration>,
}

/// The cluster id `cvo` gives the cluster of a ClusterDeployment: `namespace/name`.
pub fn cluster_id(cd: &ClusterReference) -> String {
    cd.to_string()
}

fn reference_of(cd: &ClusterDeployment) -> ClusterReference {
    ClusterReference::new(
        cd.metadata.namespace.as_deref().unwrap_or_default(),
        cd.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// The host record an Agent's status holds; `None` for a state that is not one.
pub fn host_record(agent: &Agent) -> Option<HostRecord> {
    let status = agent.status.clone().unwrap_or_default();
    let state = status.debug_info.state.parse().ok()?;
    Some(HostRecord {
        id: agent.metadata.name.clone().unwrap_or_default(),
        infra_env_id: infra_env_name(agent).to_owned(),
        cluster_id: status.bound_cluster_deployment.as_ref().map(cluster_id),
        state,
        kind: match status.kind.as_str() {
            "" => KIND_HOST.to_owned(),
            kind => kind.to_owned(),
        },
    })
}

/// The InfraEnv an Agent booted from (its label).
pub fn infra_env_name(agent: &Agent) -> &str {
    (agent.metadata.labels.as_ref())
        .and_then(|l| l.get(LABEL_INFRAENV))
        .map(String::as_str)
        .unwrap_or_default()
}

/// When the host last checked in, if it ever did.
pub fn checked_in_at(agent: &Agent) -> Option<Timestamp> {
    (agent.metadata.annotations.as_ref())
        .and_then(|a| a.get(ANN_CHECKED_IN_AT))
        .and_then(|t| t.parse().ok())
}

fn connected(agent: &Agent, now: Timestamp) -> bool {
    checked_in_at(agent).is_some_and(|at| {
        now.duration_since(at).unsigned_abs() < CONNECTION_TIMEOUT
            || now.duration_since(at).is_negative()
    })
}

/// The reconcile of one Agent (not being deleted).
pub fn reconcile_agent(agent: &Agent, ctx: &AgentContext) -> AgentPlan {
    let before = agent.status.clone().unwrap_or_default();
    let cd_ref = agent.spec.cluster_deployment_name.as_ref();
    let mut plan = AgentPlan {
        status: before.clone(),
        cluster_namespace_label: cd_ref.map(|c| c.namespace.clone()).unwrap_or_default(),
        events: Vec::new(),
        requeue_after: None,
    };
    let Some(mut host) = host_record(agent) else {
        return plan;
    };
    if host.state == HostState::Unregistered {
        // The discovery agent has not registered yet: nothing to refresh or bind.
        return plan;
    }
    let infra_env_scope = EventScope::InfraEnv {
        namespace: agent.metadata.namespace.clone().unwrap_or_default(),
        name: host.infra_env_id.clone(),
    };
    let connected = connected(agent, ctx.now);
    let hostname = (
        before.inventory.hostname.clone(),
        agent.spec.hostname.clone(),
    );
    let mut status = before.clone();
    // The host monitor's pool rules first: a freshly registered host becomes bindable.
    if host.cluster_id.is_none() {
        refresh(&mut status, &mut host, agent, ctx, connected, false);
    }
    let cluster = ctx.cluster;
    let found_id = cluster.and_then(|v| v.aci.map(|_| cluster_id(&reference_of(v.cd))));
    let lookup = match (cluster, found_id.as_deref()) {
        (None, _) => ClusterLookup::CdMissing,
        (Some(_), None) => ClusterLookup::NotRegistered,
        (Some(_), Some(id)) => ClusterLookup::Found { cluster_id: id },
    };
    let node_name = match &hostname {
        (_, requested) if !requested.is_empty() => requested.as_str(),
        (reported, _) => reported.as_str(),
    };
    let input = ReconcileInput {
        cd_ref,
        host: &host,
        cluster: lookup,
        bound_cd: status.bound_cluster_deployment.as_ref(),
        node_name,
        reclaim: ctx.reclaim,
    };
    let decision = binding::decide(&input);
    let mut sync_error: Option<(bool, String)> = decision.sync_error().map(|e| match e {
        SyncError::Input(m) => (true, m.to_owned()),
        SyncError::Backend(m) => (false, m.to_owned()),
    });
    let mut requeue = decision.requeue();
    match &decision {
        Decision::Bind { cluster_id: id } => {
            // `decide` binds only to a cluster it found (a ClusterDeployment and its
            // AgentClusterInstall).
            let Some((view, aci)) = cluster.and_then(|v| v.aci.map(|a| (v, a))) else {
                return plan;
            };
            let cluster_status = match aci.status.as_ref().map(|s| s.debug_info.state.as_str()) {
                None | Some("") => DEFAULT_CLUSTER_STATUS,
                Some(state) => state,
            };
            let facts = ClusterFacts {
                id,
                status: cluster_status,
                cpu_architecture: &aci.spec.cpu_architecture,
                supports_arbiter: false,
                supports_fencing: false,
            };
            let infra_arch = ctx
                .infra_env
                .map(|ie| ie.spec.cpu_architecture.as_str())
                .unwrap_or_default();
            let request = BindRequest {
                host: &host,
                cluster_id: id,
                cluster: Some(&facts),
                infra_env_cpu_architecture: infra_arch,
                role: &agent.spec.role,
                fencing_credentials: !agent.spec.fencing_credentials_secret_ref.is_empty(),
            };
            match binding::bind_host(&request) {
                Ok(t) => {
                    let cd = reference_of(view.cd);
                    apply(&mut status, &t);
                    status.bound_cluster_deployment = Some(cd.clone());
                    host.state = t.to;
                    host.cluster_id = Some(id.clone());
                    plan.events.push(HostEventRecord {
                        scope: EventScope::ClusterDeployment(cd),
                        warning: false,
                        reason: event::HOST_BIND_SUCCEEDED,
                        action: "BindHost".to_owned(),
                        message: format!(
                            "Host {}: Successfully bound to cluster {id}",
                            display_name(agent, &before)
                        ),
                    });
                }
                Err(e) => {
                    requeue = !e.is_user_error();
                    let message = e.to_string();
                    if !already_reported(&before.conditions, &message) {
                        plan.events.push(HostEventRecord {
                            scope: infra_env_scope.clone(),
                            warning: true,
                            reason: event::HOST_BIND_FAILED,
                            action: "BindHost".to_owned(),
                            message: format!(
                                "Host {}: Failed to bind to cluster {id}: {message}",
                                display_name(agent, &before)
                            ),
                        });
                    }
                    sync_error = Some((e.is_user_error(), message));
                }
            }
        }
        Decision::Unbind(unbind) | Decision::Move(unbind) => {
            let infra_env_cluster = ctx
                .infra_env
                .and_then(|ie| ie.spec.cluster_ref.as_ref())
                .map(cluster_id);
            let old = status.bound_cluster_deployment.clone();
            match binding::unbind_host(
                &host,
                infra_env_cluster.as_deref(),
                unbind.reclaim,
                Caller::Controller,
            ) {
                Ok(t) => {
                    apply(&mut status, &t);
                    status.bound_cluster_deployment = None;
                    status.deprovision_info = unbind.deprovision_info.clone();
                    status.csr_status = Default::default();
                    host.state = t.to;
                    host.cluster_id = None;
                    plan.events.push(HostEventRecord {
                        scope: infra_env_scope.clone(),
                        warning: false,
                        reason: event::HOST_UNBIND_SUCCEEDED,
                        action: "UnbindHost".to_owned(),
                        message: format!(
                            "Host {}: Successfully unbound from cluster {}",
                            display_name(agent, &before),
                            old.as_ref().map(cluster_id).unwrap_or_default()
                        ),
                    });
                }
                Err(e) => {
                    requeue = !e.is_user_error();
                    let message = e.to_string();
                    if !already_reported(&before.conditions, &message) {
                        let scope = old
                            .clone()
                            .map(EventScope::ClusterDeployment)
                            .unwrap_or_else(|| infra_env_scope.clone());
                        plan.events.push(HostEventRecord {
                            scope,
                            warning: true,
                            reason: event::HOST_UNBIND_FAILED,
                            action: "UnbindHost".to_owned(),
                            message: format!(
                                "Host {}: Failed to unbind: {message}",
                                display_name(agent, &before)
                            ),
                        });
                    }
                    sync_error = Some((e.is_user_error(), message));
                }
            }
        }
        _ => {}
    }
    // The bound rules for a bound host, with the cluster-dependent validations (C.5).
    if host.cluster_id.is_some() {
        refresh(&mut status, &mut host, agent, ctx, connected, true);
    }
    status.role = match (host.cluster_id.is_some(), agent.spec.role.as_str()) {
        (true, role) if !role.is_empty() => role.to_owned(),
        _ => ROLE_AUTO_ASSIGN.to_owned(),
    };
    let sync = sync_error.as_ref().map(|(input, m)| match input {
        true => SyncError::Input(m),
        false => SyncError::Backend(m),
    });
    let view = HostView {
        state: host.state,
        status_info: &status.debug_info.state_info,
        approved: agent.spec.approved,
        validations: &status.validations_info,
    };
    status.conditions = keep_times(&before.conditions, agent_conditions(sync, Some(&view)));
    if before.debug_info.state != status.debug_info.state {
        let scope = match &status.bound_cluster_deployment {
            Some(cd) => EventScope::ClusterDeployment(cd.clone()),
            None => infra_env_scope.clone(),
        };
        plan.events.push(HostEventRecord {
            scope,
            warning: false,
            reason: event::HOST_STATUS_UPDATED,
            action: status.debug_info.state.clone(),
            message: format!(
                "Host {}: updated status from {} to {} ({})",
                display_name(agent, &status),
                before.debug_info.state,
                status.debug_info.state,
                status.debug_info.state_info
            ),
        });
    }
    plan.requeue_after = match requeue {
        true => Some(BACKEND_RETRY),
        // Look again when the host would count as disconnected.
        false => checked_in_at(agent).map(|at| {
            let silent = ctx.now.duration_since(at).unsigned_abs();
            CONNECTION_TIMEOUT.saturating_sub(silent) + Duration::from_secs(1)
        }),
    };
    plan.status = status;
    plan
}

/// The host's name in Events: its hostname, else the Agent's name (the host id).
fn display_name(agent: &Agent, status: &AgentStatus) -> String {
    match (
        agent.spec.hostname.as_str(),
        status.inventory.hostname.as_str(),
    ) {
        ("", "") => agent.metadata.name.clone().unwrap_or_default(),
        ("", reported) => reported.to_owned(),
        (requested, _) => requested.to_owned(),
    }
}

/// Whether `SpecSynced` already carries this error (so its Event is not recorded again on
/// every retry).
fn already_reported(conditions: &[Condition], message: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == super::conditions::SPEC_SYNCED && c.message.ends_with(message))
}

/// RefreshHost with the validations an unbound host runs (C.5); for a bound host also the
/// cluster-dependent ones against its cluster's AgentClusterInstall (when the reconcile has
/// it: the referenced cluster is the bound one; else only the cluster-independent ones).
fn refresh(
    status: &mut AgentStatus,
    host: &mut HostRecord,
    agent: &Agent,
    ctx: &AgentContext,
    connected: bool,
    bound: bool,
) {
    let inventory = (status.inventory != HostInventory::default()).then_some(&status.inventory);
    let observation = Observation {
        connected,
        media_connected: true,
        inventory,
        requested_hostname: &agent.spec.hostname,
    };
    let cluster = bound_cluster(status, ctx);
    let validated = match cluster.and_then(|v| v.aci) {
        Some(aci) if bound => {
            let networks: Vec<String> = (aci.spec.networking.machine_network.iter())
                .map(|n| n.cidr.clone())
                .collect();
            let context = ClusterContext {
                machine_networks: &networks,
                user_managed_networking: aci
                    .spec
                    .networking
                    .user_managed_networking
                    .unwrap_or(false),
                day2: status.kind == super::keys::KIND_ADD_TO_EXISTING_CLUSTER_HOST,
                other_hostnames: ctx.cluster_hostnames,
                role: &agent.spec.role,
            };
            validate_bound(&observation, &ctx.requirements, &context)
        }
        _ => {
            let mut validated = validate_unbound(&observation, &ctx.requirements);
            validated.facts.sufficient_for_install = bound;
            validated
        }
    };
    let facts = validated.facts;
    status.validations_info = validated.info;
    if let Ok(t) = transition(host.state, &HostEvent::Refresh(facts)) {
        apply(status, &t);
        host.state = t.to;
    }
}

/// The reconcile's cluster when it is the one the host is bound to.
fn bound_cluster<'a>(status: &AgentStatus, ctx: &AgentContext<'a>) -> Option<ClusterView<'a>> {
    let view = ctx.cluster?;
    (status.bound_cluster_deployment.as_ref() == Some(&reference_of(view.cd))).then_some(view)
}

/// The hostname a host goes by: the requested one, else the one it reported.
pub fn real_hostname(agent: &Agent) -> &str {
    match agent.spec.hostname.as_str() {
        "" => agent
            .status
            .as_ref()
            .map(|s| s.inventory.hostname.as_str())
            .unwrap_or_default(),
        requested => requested,
    }
}

/// Teardown of a host in the middle of installation: CancelInstallation first, as upstream
/// cancels an installing cluster before it unbinds its agents, so that the unbind (which the
/// Agent webhook refuses during installation) is allowed. The status to write and its Event
/// (on the ClusterDeployment, still there until its finalizer goes); `None` when there is
/// nothing to cancel: not installing, a day-2 host (the webhook lets it go), or a state
/// without a cancel rule (`preparing-failed`).
pub fn cancel_for_teardown(agent: &Agent) -> Option<(AgentStatus, HostEventRecord)> {
    let host = host_record(agent)?;
    if !host.state.is_installing() || host.is_day2() {
        return None;
    }
    let t = match transition(host.state, &HostEvent::Cancel) {
        Ok(t) => t,
        // No cancel rule for preparing-failed upstream: its refresh returns such a host to
        // known once the cluster is no longer preparing, which a deleted cluster is not. Without
        // this the webhook (which counts it as installing) would refuse teardown's unbind and
        // the ClusterDeployment would keep its finalizer for ever.
        Err(_) if host.state == HostState::PreparingFailed => Transition {
            from: host.state,
            event: super::state::EventKind::RefreshHost,
            to: HostState::Known,
            status_info: Some(super::state::status_info::KNOWN.to_owned()),
            effects: &[],
        },
        Err(_) => return None,
    };
    let before = agent.status.clone().unwrap_or_default();
    let cd = before.bound_cluster_deployment.clone()?;
    let mut status = before.clone();
    apply(&mut status, &t);
    let record = HostEventRecord {
        scope: EventScope::ClusterDeployment(cd),
        warning: false,
        reason: event::HOST_STATUS_UPDATED,
        action: status.debug_info.state.clone(),
        message: format!(
            "Host {}: updated status from {} to {} ({})",
            display_name(agent, &before),
            before.debug_info.state,
            status.debug_info.state,
            status.debug_info.state_info
        ),
    };
    Some((status, record))
}

/// A transition's state, `statusInfo` and effects on the status.
pub fn apply(status: &mut AgentStatus, t: &Transition) {
    status.debug_info.state = t.to.as_str().to_owned();
    if let Some(info) = &t.status_info {
        status.debug_info.state_info = info.clone();
    }
    for effect in t.effects {
        match effect {
            Effect::ClearInventory => status.inventory = HostInventory::default(),
            Effect::ClearProgress => status.progress = Default::default(),
            Effect::ClearBootstrap => status.bootstrap = false,
            Effect::ClearInstallationDisk => status.installation_disk_id.clear(),
            Effect::ResetKind => status.kind = KIND_HOST.to_owned(),
            Effect::ResetRole => status.role = ROLE_AUTO_ASSIGN.to_owned(),
            Effect::ClearNtpSources => status.ntp_sources.clear(),
            Effect::ClearClusterId => status.bound_cluster_deployment = None,
            // The rest are database columns the Agent's status does not show.
            _ => {}
        }
    }
}

/// Keeps each condition's `lastTransitionTime` while its status holds (none are set by the
/// pure mapping; the shell stamps new ones).
fn keep_times(previous: &[Condition], mut next: Vec<Condition>) -> Vec<Condition> {
    for c in &mut next {
        if let Some(p) = previous
            .iter()
            .find(|p| p.type_ == c.type_ && p.status == c.status)
        {
            c.last_transition_time = p.last_transition_time.clone();
        }
    }
    next
}

/// What the discovery agent's registration (RegisterHost) does to a host record, with the
/// inventory it then posts. `bound_to`: for a host registering the first time, the
/// InfraEnv's `clusterRef` (not late binding). Refused (error) from states without a rule.
pub fn register_host(
    status: &AgentStatus,
    bound_to: Option<&ClusterReference>,
    inventory: HostInventory,
) -> Result<AgentStatus, super::state::TransitionError> {
    let from: HostState = status
        .debug_info
        .state
        .parse()
        .unwrap_or(HostState::Unregistered);
    let bound = status.bound_cluster_deployment.is_some() || bound_to.is_some();
    let t = transition(from, &HostEvent::Register { bound })?;
    let mut next = status.clone();
    apply(&mut next, &t);
    if from == HostState::Unregistered {
        next.bound_cluster_deployment = bound_to.cloned();
        next.role = ROLE_AUTO_ASSIGN.to_owned();
        next.kind = KIND_HOST.to_owned();
    }
    next.inventory = inventory;
    Ok(next)
}

/// What the discovery agent is told to do next (its next-step instructions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextStep {
    /// Keep checking in.
    Wait,
    /// A no-op step with post-action `exit`: restart and register again (completes a bind or
    /// an unbind).
    Exit,
    /// The reclaim agent on the spoke node: report RebootingForReclaim, then reboot into the
    /// discovery image.
    RebootForReclaim,
}

/// In `binding`, `unbinding` and `unbinding-pending-user-action` the agent gets `exit`; in
/// `reclaiming-rebooting` the host is booting the discovery image, whose agent registers. In
/// `reclaiming` the reclaim agent started on the spoke cluster's node reboots it.
pub fn next_step(state: HostState) -> NextStep {
    match state {
        HostState::Binding
        | HostState::Unbinding
        | HostState::UnbindingPendingUserAction
        | HostState::ReclaimingRebooting => NextStep::Exit,
        HostState::Reclaiming => NextStep::RebootForReclaim,
        _ => NextStep::Wait,
    }
}

/// RebootingForReclaim: what the reclaim agent reports before it reboots the host into the
/// discovery image (`reclaiming` → `reclaiming-rebooting`).
pub fn rebooting_for_reclaim(
    status: &AgentStatus,
) -> Result<AgentStatus, super::state::TransitionError> {
    let from: HostState = status
        .debug_info
        .state
        .parse()
        .unwrap_or(HostState::Unregistered);
    let t = transition(from, &HostEvent::RebootingForReclaim)?;
    let mut next = status.clone();
    apply(&mut next, &t);
    Ok(next)
}

/// Deleting a ClusterDeployment: what happens to each agent (spec C.4 teardown).
pub fn teardown_agents<'a>(
    cd: &ClusterDeployment,
    agents: impl IntoIterator<Item = (&'a Agent, Option<&'a InfraEnv>)>,
) -> Vec<(&'a Agent, Teardown)> {
    let deleted = reference_of(cd);
    agents
        .into_iter()
        .map(|(agent, infra_env)| {
            let verdict = binding::teardown(
                &deleted,
                cd.spec.preserve_on_delete,
                agent.spec.cluster_deployment_name.as_ref(),
                infra_env.and_then(|ie| ie.spec.cluster_ref.as_ref()),
            );
            (agent, verdict)
        })
        .filter(|(_, t)| *t != Teardown::Keep)
        .collect()
}

/// The host states in which deleting their InfraEnv deregisters a host (its Agent is
/// deleted): the pool, the ways into it, and installed hosts. A host in any other state (bound
/// and not installed) keeps the InfraEnv, with its finalizer, until it gets there (upstream's
/// `deregisterInfraEnvWithHosts`).
pub const DEREGISTERED_WITH_INFRA_ENV: &[HostState] = &[
    HostState::InsufficientUnbound,
    HostState::DisconnectedUnbound,
    HostState::DiscoveringUnbound,
    HostState::KnownUnbound,
    HostState::Installed,
    HostState::AddedToExistingCluster,
    HostState::Unbinding,
    HostState::UnbindingPendingUserAction,
];

/// Upstream's error while an InfraEnv being deleted still has such hosts.
pub const INFRA_ENV_HOSTS_REMAIN: &str =
    "Failed to delete infraEnv, existing hosts bound and not installed";

/// What deleting an InfraEnv does to the Agents that booted it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InfraEnvDeletion<'a> {
    /// Deregistered: their Agents are deleted.
    pub delete: Vec<&'a Agent>,
    /// Bound and not installed: the InfraEnv waits for them.
    pub remaining: Vec<&'a Agent>,
}

/// Deleting `infra_env`: its Agents (same namespace, its label) are deregistered or keep it.
/// An Agent whose host never registered has no host record to keep it.
pub fn infra_env_deletion<'a>(
    infra_env: &InfraEnv,
    agents: impl IntoIterator<Item = &'a Agent>,
) -> InfraEnvDeletion<'a> {
    let name = infra_env.metadata.name.as_deref().unwrap_or_default();
    let namespace = infra_env.metadata.namespace.as_deref();
    let mut deletion = InfraEnvDeletion::default();
    for agent in agents {
        if agent.metadata.namespace.as_deref() != namespace || infra_env_name(agent) != name {
            continue;
        }
        let state = host_record(agent).map_or(HostState::Unregistered, |h| h.state);
        if state == HostState::Unregistered || DEREGISTERED_WITH_INFRA_ENV.contains(&state) {
            deletion.delete.push(agent);
        } else {
            deletion.remaining.push(agent);
        }
    }
    deletion
}

/// InfraEnv condition texts. The reasons are upstream's; the messages are `cvo`'s (upstream's
/// were not found).
pub mod infra_env_text {
    pub const CLUSTER_DEPLOYMENT_REFERENCE: &str = "ClusterDeploymentReference";
    pub const INFRA_ENV_AVAILABLE: &str = "InfraEnvAvailable";
    pub const MISSING_CLUSTER_DEPLOYMENT: &str = "MissingClusterDeployment";
    pub const LATE_BINDING_MSG: &str =
        "The InfraEnv is not bound to a cluster deployment: its hosts register unbound";
}

/// The InfraEnv controller: `status.agentLabelSelector` and the `ClusterDeploymentReference`
/// condition (`cd_exists`: the `clusterRef`'s ClusterDeployment exists).
pub fn infra_env_status(infra_env: &InfraEnv, cd_exists: bool) -> InfraEnvStatus {
    use infra_env_text::*;
    let mut status = infra_env.status.clone().unwrap_or_default();
    let name = infra_env.metadata.name.clone().unwrap_or_default();
    status.agent_label_selector = Some(LabelSelector {
        match_labels: [(LABEL_INFRAENV.to_owned(), name)].into(),
        ..LabelSelector::default()
    });
    let (state, reason, message) = match &infra_env.spec.cluster_ref {
        None => ("True", INFRA_ENV_AVAILABLE, LATE_BINDING_MSG.to_owned()),
        Some(cd) if cd_exists => (
            "True",
            INFRA_ENV_AVAILABLE,
            format!("The InfraEnv is bound to cluster deployment {cd}"),
        ),
        Some(cd) => (
            "False",
            MISSING_CLUSTER_DEPLOYMENT,
            format!("The cluster deployment {cd} referenced by the InfraEnv does not exist"),
        ),
    };
    let next = Condition {
        type_: CLUSTER_DEPLOYMENT_REFERENCE.to_owned(),
        status: state.to_owned(),
        reason: reason.to_owned(),
        message,
        ..Condition::default()
    };
    let next = keep_times(&status.conditions, vec![next]).remove(0);
    status
        .conditions
        .retain(|c| c.type_ != CLUSTER_DEPLOYMENT_REFERENCE);
    status.conditions.push(next);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::agents::types::{
        AgentClusterInstallSpec, AgentSpec, ClusterDeploymentSpec, HostCpu, HostDisk,
        HostInstallationEligibility, HostInterface, HostMemory, InfraEnvSpec, LocalObjectReference,
        MachineNetworkEntry, Networking,
    };
    use HostState::*;

    const NOW: i64 = 1_800_000_000;

    fn now() -> Timestamp {
        Timestamp::from_second(NOW).unwrap()
    }

    fn inventory(cores: i64, memory_gib: i64) -> HostInventory {
        HostInventory {
            hostname: "host-1".into(),
            cpu: HostCpu {
                count: cores,
                ..HostCpu::default()
            },
            memory: HostMemory {
                physical_bytes: memory_gib << 30,
                usable_bytes: memory_gib << 30,
            },
            disks: vec![HostDisk {
                id: "/dev/disk/by-id/d".into(),
                drive_type: "HDD".into(),
                size_bytes: 200_000_000_000,
                installation_eligibility: HostInstallationEligibility {
                    eligible: true,
                    ..Default::default()
                },
                ..HostDisk::default()
            }],
            interfaces: vec![HostInterface {
                name: "eth0".into(),
                ipv4_addresses: vec!["192.168.3.4/16".into()],
                ..HostInterface::default()
            }],
            ..HostInventory::default()
        }
    }

    fn agent(state: HostState, cd: Option<&str>, bound: Option<&str>) -> Agent {
        let mut a = Agent::new(
            "h1",
            AgentSpec {
                cluster_deployment_name: cd.map(|n| ClusterReference::new("ns", n)),
                role: String::new(),
                approved: true,
                ..AgentSpec::default()
            },
        );
        a.metadata.namespace = Some("ns".into());
        a.metadata.labels = Some([(LABEL_INFRAENV.to_owned(), "pool".to_owned())].into());
        a.metadata.annotations = Some(
            [(
                ANN_CHECKED_IN_AT.to_owned(),
                Timestamp::from_second(NOW - 10).unwrap().to_string(),
            )]
            .into(),
        );
        let mut status = AgentStatus::default();
        status.debug_info.state = state.as_str().into();
        status.inventory = inventory(4, 16);
        status.bound_cluster_deployment = bound.map(|n| ClusterReference::new("ns", n));
        a.status = Some(status);
        a
    }

    fn cd(name: &str) -> ClusterDeployment {
        let mut cd = ClusterDeployment::new(
            name,
            ClusterDeploymentSpec {
                cluster_name: name.into(),
                base_domain: "example.com".into(),
                ..ClusterDeploymentSpec::default()
            },
        );
        cd.metadata.namespace = Some("ns".into());
        cd
    }

    fn aci(state: &str) -> AgentClusterInstall {
        let mut aci = AgentClusterInstall::new(
            "aci",
            AgentClusterInstallSpec {
                cluster_deployment_ref: LocalObjectReference { name: "c1".into() },
                cpu_architecture: String::new(),
                networking: Networking {
                    machine_network: vec![MachineNetworkEntry {
                        cidr: "192.168.0.0/16".into(),
                    }],
                    user_managed_networking: None,
                },
            },
        );
        let mut status = crate::components::agents::types::AgentClusterInstallStatus::default();
        status.debug_info.state = state.into();
        aci.status = Some(status);
        aci
    }

    fn infra_env(cluster_ref: Option<&str>) -> InfraEnv {
        let mut ie = InfraEnv::new(
            "pool",
            InfraEnvSpec {
                cluster_ref: cluster_ref.map(|n| ClusterReference::new("ns", n)),
                ..InfraEnvSpec::default()
            },
        );
        ie.metadata.namespace = Some("ns".into());
        ie
    }

    fn run(agent: &Agent, cluster: Option<ClusterView>, ie: &InfraEnv) -> AgentPlan {
        reconcile_agent(
            agent,
            &AgentContext {
                infra_env: Some(ie),
                cluster,
                now: now(),
                requirements: Requirements::default(),
                cluster_hostnames: &[],
                reclaim: ReclaimContext::default(),
            },
        )
    }

    fn state(plan: &AgentPlan) -> &str {
        &plan.status.debug_info.state
    }

    fn reasons(plan: &AgentPlan) -> Vec<&str> {
        plan.events.iter().map(|e| e.reason).collect()
    }

    fn condition<'a>(plan: &'a AgentPlan, type_: &str) -> &'a Condition {
        plan.status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap()
    }

    #[test]
    fn a_registered_pool_host_becomes_known_unbound_on_its_infraenv() {
        let plan = run(
            &agent(DiscoveringUnbound, None, None),
            None,
            &infra_env(None),
        );
        assert_eq!(state(&plan), "known-unbound");
        assert_eq!(
            plan.status.debug_info.state_info,
            "Host is ready to be bound to a cluster"
        );
        assert_eq!(reasons(&plan), ["host_status_updated"]);
        assert!(
            matches!(plan.events[0].scope, EventScope::InfraEnv { ref name, .. } if name == "pool")
        );
        assert_eq!(condition(&plan, "Bound").reason, "Unbound");
        // Only cluster-independent validations show.
        let ids: Vec<&str> = (plan.status.validations_info.values().flatten())
            .map(|v| v.id.as_str())
            .collect();
        assert!(ids.contains(&"has-min-cpu-cores"), "{ids:?}");
        assert!(!ids.contains(&"belongs-to-majority-group"), "{ids:?}");
        assert_eq!(plan.cluster_namespace_label, "");
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(171)));
    }

    #[test]
    fn a_small_host_is_insufficient_unbound_and_a_silent_one_disconnected() {
        let mut small = agent(DiscoveringUnbound, None, None);
        small.status.as_mut().unwrap().inventory = inventory(1, 4);
        let plan = run(&small, None, &infra_env(None));
        assert_eq!(state(&plan), "insufficient-unbound");
        let mut silent = agent(KnownUnbound, None, None);
        silent.metadata.annotations = None;
        assert_eq!(
            state(&run(&silent, None, &infra_env(None))),
            "disconnected-unbound"
        );
    }

    #[test]
    fn bind_goes_to_binding_with_events_on_the_cluster_deployment() {
        let (c, a) = (cd("c1"), aci(""));
        let view = ClusterView {
            cd: &c,
            aci: Some(&a),
        };
        let plan = run(
            &agent(KnownUnbound, Some("c1"), None),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "binding");
        assert_eq!(
            plan.status.bound_cluster_deployment,
            Some(ClusterReference::new("ns", "c1"))
        );
        assert_eq!(plan.status.inventory, HostInventory::default());
        assert_eq!(
            reasons(&plan),
            ["host_bind_succeeded", "host_status_updated"]
        );
        for e in &plan.events {
            assert_eq!(
                e.scope,
                EventScope::ClusterDeployment(ClusterReference::new("ns", "c1"))
            );
        }
        assert_eq!(condition(&plan, "Bound").reason, "Binding");
        assert_eq!(plan.cluster_namespace_label, "ns");
        // A freshly registered host is refreshed and bound in the same reconcile.
        let plan = run(
            &agent(DiscoveringUnbound, Some("c1"), None),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "binding");
    }

    #[test]
    fn bind_refusals_are_spec_synced_errors() {
        let (c, a) = (cd("c1"), aci("installed"));
        let view = ClusterView {
            cd: &c,
            aci: Some(&a),
        };
        let plan = run(
            &agent(KnownUnbound, Some("c1"), None),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "known-unbound");
        let synced = condition(&plan, "SpecSynced");
        assert_eq!(
            (synced.status.as_str(), synced.reason.as_str()),
            ("False", "InputError")
        );
        assert!(synced.message.ends_with(
            "Cannot add hosts to an existing cluster using the original Discovery ISO."
        ));
        assert_eq!(reasons(&plan), ["host_bind_failed"]);
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(171)));
        // Reported once: the retry does not record it again.
        let mut again = agent(KnownUnbound, Some("c1"), None);
        again.status = Some(plan.status.clone());
        again.status.as_mut().unwrap().debug_info.state = "known-unbound".into();
        assert!(reasons(&run(&again, Some(view), &infra_env(None))).is_empty());
        // Missing ClusterDeployment: a backend error, retried.
        let plan = run(
            &agent(KnownUnbound, Some("c1"), None),
            None,
            &infra_env(None),
        );
        assert_eq!(condition(&plan, "SpecSynced").reason, "BackendError");
        assert_eq!(plan.requeue_after, Some(BACKEND_RETRY));
        // No AgentClusterInstall: no cluster registered.
        let plan = run(
            &agent(KnownUnbound, Some("c1"), None),
            Some(ClusterView { cd: &c, aci: None }),
            &infra_env(None),
        );
        assert_eq!(condition(&plan, "SpecSynced").reason, "BackendError");
    }

    #[test]
    fn re_registered_bound_host_becomes_known() {
        let (c, a) = (cd("c1"), aci(""));
        let view = ClusterView {
            cd: &c,
            aci: Some(&a),
        };
        let plan = run(
            &agent(Discovering, Some("c1"), Some("c1")),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "known");
        assert_eq!(condition(&plan, "Bound").reason, "Bound");
        assert_eq!(condition(&plan, "SpecSynced").reason, "SyncOK");
        assert_eq!(
            plan.events[0].scope,
            EventScope::ClusterDeployment(ClusterReference::new("ns", "c1"))
        );
    }

    #[test]
    fn unbind_and_move_return_the_host_with_events_on_the_infraenv() {
        let plan = run(&agent(Known, None, Some("c1")), None, &infra_env(None));
        assert_eq!(state(&plan), "unbinding");
        assert_eq!(plan.status.bound_cluster_deployment, None);
        assert_eq!(plan.status.role, "auto-assign");
        let info = plan.status.deprovision_info.as_ref().unwrap();
        assert_eq!(
            (info.cluster_name.as_str(), info.node_name.as_str()),
            ("c1", "host-1")
        );
        assert_eq!(
            reasons(&plan),
            ["host_unbind_succeeded", "host_status_updated"]
        );
        assert!(
            plan.events
                .iter()
                .all(|e| matches!(e.scope, EventScope::InfraEnv { .. }))
        );
        // Installed: pending user action.
        let plan = run(&agent(Installed, None, Some("c1")), None, &infra_env(None));
        assert_eq!(state(&plan), "unbinding-pending-user-action");
        assert_eq!(
            condition(&plan, "Bound").reason,
            "UnbindingPendingUserAction"
        );
        // Move: unbind first.
        let (c2, a) = (cd("c2"), aci(""));
        let view = ClusterView {
            cd: &c2,
            aci: Some(&a),
        };
        let plan = run(
            &agent(Known, Some("c2"), Some("c1")),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "unbinding");
        assert_eq!(plan.cluster_namespace_label, "ns");
    }

    #[test]
    fn installing_day1_host_cannot_be_unbound_but_day2_can() {
        let plan = run(&agent(Installing, None, Some("c1")), None, &infra_env(None));
        assert_eq!(state(&plan), "installing");
        let synced = condition(&plan, "SpecSynced");
        assert_eq!(synced.reason, "InputError");
        assert!(synced.message.ends_with(
            "cancelling non-day-2 host [h1] in the middle of installation is not allowed"
        ));
        assert!(plan.events.is_empty());
        let mut day2 = agent(Installing, None, Some("c1"));
        day2.status.as_mut().unwrap().kind = "AddToExistingClusterHost".into();
        let plan = run(&day2, None, &infra_env(None));
        assert_eq!(state(&plan), "unbinding-pending-user-action");
        assert_eq!(plan.status.kind, "Host");
    }

    #[test]
    fn infraenv_bound_to_a_cluster_refuses_unbind() {
        let plan = run(
            &agent(Known, None, Some("c1")),
            None,
            &infra_env(Some("c1")),
        );
        assert_eq!(state(&plan), "known");
        assert!(
            condition(&plan, "SpecSynced")
                .message
                .ends_with("Cannot unbind Host h1. InfraEnv pool is bound to Cluster ns/c1")
        );
        assert_eq!(reasons(&plan), ["host_unbind_failed"]);
    }

    #[test]
    fn registration_and_next_steps() {
        let fresh = register_host(&AgentStatus::default(), None, inventory(4, 16)).unwrap();
        assert_eq!(fresh.debug_info.state, "discovering-unbound");
        assert_eq!(fresh.inventory.cpu.count, 4);
        let bound = register_host(
            &AgentStatus::default(),
            Some(&ClusterReference::new("ns", "c1")),
            inventory(4, 16),
        )
        .unwrap();
        assert_eq!(bound.debug_info.state, "discovering");
        let mut binding = AgentStatus::default();
        binding.debug_info.state = "binding".into();
        binding.bound_cluster_deployment = Some(ClusterReference::new("ns", "c1"));
        let again = register_host(&binding, None, inventory(4, 16)).unwrap();
        assert_eq!(again.debug_info.state, "discovering");
        let mut unbinding = AgentStatus::default();
        unbinding.debug_info.state = "unbinding".into();
        let again = register_host(&unbinding, None, inventory(4, 16)).unwrap();
        assert_eq!(again.debug_info.state, "discovering-unbound");
        for s in HostState::ALL {
            let want = matches!(
                s,
                Binding | Unbinding | UnbindingPendingUserAction | ReclaimingRebooting
            );
            assert_eq!(next_step(*s) == NextStep::Exit, want, "{s:?}");
            assert_eq!(
                next_step(*s) == NextStep::RebootForReclaim,
                *s == Reclaiming,
                "{s:?}"
            );
        }
    }

    #[test]
    fn teardown_unbinds_or_deletes() {
        let c1 = cd("c1");
        let mut preserved = cd("c1");
        preserved.spec.preserve_on_delete = true;
        let (late, other) = (
            agent(Known, Some("c1"), Some("c1")),
            agent(Known, Some("c2"), None),
        );
        let (ie, ie_bound) = (infra_env(None), infra_env(Some("c1")));
        let verdicts = |cd: &ClusterDeployment| -> Vec<Teardown> {
            teardown_agents(cd, [(&late, Some(&ie)), (&other, Some(&ie))])
                .into_iter()
                .map(|(_, t)| t)
                .collect()
        };
        assert_eq!(verdicts(&c1), [Teardown::Unbind]);
        assert_eq!(verdicts(&preserved), [Teardown::Delete]);
        let owned = teardown_agents(&c1, [(&late, Some(&ie_bound))]);
        assert_eq!(owned[0].1, Teardown::Delete);
    }

    #[test]
    fn infraenv_status_selector_and_reference() {
        let s = infra_env_status(&infra_env(None), false);
        let selector = s.agent_label_selector.unwrap();
        assert_eq!(
            selector
                .match_labels
                .get("infraenvs.agent-install.openshift.io"),
            Some(&"pool".to_owned())
        );
        assert_eq!(s.conditions[0].reason, "InfraEnvAvailable");
        let s = infra_env_status(&infra_env(Some("c1")), false);
        assert_eq!(
            (
                s.conditions[0].status.as_str(),
                s.conditions[0].reason.as_str()
            ),
            ("False", "MissingClusterDeployment")
        );
    }

    #[test]
    fn a_bound_host_shows_its_cluster_dependent_validations() {
        let (c, a) = (cd("c1"), aci(""));
        let view = ClusterView {
            cd: &c,
            aci: Some(&a),
        };
        let plan = run(
            &agent(Discovering, Some("c1"), Some("c1")),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "known");
        let ids: Vec<&str> = (plan.status.validations_info.values().flatten())
            .map(|v| v.id.as_str())
            .collect();
        for id in [
            "machine-cidr-defined",
            "belongs-to-machine-cidr",
            "hostname-unique",
            "has-cpu-cores-for-role",
        ] {
            assert!(ids.contains(&id), "{id} missing: {ids:?}");
        }
        assert_eq!(condition(&plan, "Validated").reason, "ValidationsPassing");
        assert_eq!(condition(&plan, "RequirementsMet").reason, "AgentIsReady");

        // Another network: insufficient, the failure in statusInfo and the conditions.
        let mut elsewhere = aci("");
        elsewhere.spec.networking.machine_network[0].cidr = "10.0.0.0/24".into();
        let view = ClusterView {
            cd: &c,
            aci: Some(&elsewhere),
        };
        let plan = run(
            &agent(Known, Some("c1"), Some("c1")),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "insufficient");
        let message = "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks";
        assert_eq!(
            plan.status.debug_info.state_info,
            format!("Host cannot be installed due to following failing validation(s): {message}")
        );
        let validated = condition(&plan, "Validated");
        assert_eq!(
            (validated.status.as_str(), validated.reason.as_str()),
            ("False", "ValidationsFailing")
        );
        assert!(validated.message.contains(message), "{}", validated.message);
        assert_eq!(condition(&plan, "RequirementsMet").reason, "AgentNotReady");

        // No machine network: pending for input.
        let mut undefined = aci("");
        undefined.spec.networking.machine_network.clear();
        let view = ClusterView {
            cd: &c,
            aci: Some(&undefined),
        };
        let plan = run(
            &agent(Known, Some("c1"), Some("c1")),
            Some(view),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "pending-for-input");
        assert!(
            plan.status
                .debug_info
                .state_info
                .starts_with("Waiting for user input: Machine Network CIDR is undefined")
        );
        assert_eq!(
            condition(&plan, "Validated").reason,
            "ValidationsUserPending"
        );

        // A taken hostname.
        let view = ClusterView {
            cd: &c,
            aci: Some(&a),
        };
        let taken = ["host-1".to_owned()];
        let plan = reconcile_agent(
            &agent(Known, Some("c1"), Some("c1")),
            &AgentContext {
                infra_env: None,
                cluster: Some(view),
                now: now(),
                requirements: Requirements::default(),
                cluster_hostnames: &taken,
                reclaim: ReclaimContext::default(),
            },
        );
        assert_eq!(state(&plan), "insufficient");
        assert!(
            plan.status
                .debug_info
                .state_info
                .ends_with("Hostname host-1 is not unique in cluster")
        );
    }

    #[test]
    fn teardown_cancels_an_installing_host_first() {
        let installing = agent(InstallingInProgress, Some("c1"), Some("c1"));
        let (status, record) = cancel_for_teardown(&installing).unwrap();
        assert_eq!(status.debug_info.state, "cancelled");
        assert_eq!(
            status.debug_info.state_info,
            "installation was canceled by user"
        );
        assert_eq!(
            record.scope,
            EventScope::ClusterDeployment(ClusterReference::new("ns", "c1"))
        );
        assert_eq!(record.reason, "host_status_updated");
        assert_eq!(
            record.message,
            "Host host-1: updated status from installing-in-progress to cancelled (installation was canceled by user)"
        );
        // The cancelled host unbinds: pending a reboot into the discovery image.
        let mut cancelled = agent(Cancelled, None, Some("c1"));
        cancelled.status = Some(status);
        let plan = run(&cancelled, None, &infra_env(None));
        assert_eq!(state(&plan), "unbinding-pending-user-action");
        // Nothing to cancel: before installation, day 2.
        assert!(cancel_for_teardown(&agent(Known, Some("c1"), Some("c1"))).is_none());
        let mut day2 = agent(Installing, Some("c1"), Some("c1"));
        day2.status.as_mut().unwrap().kind = "AddToExistingClusterHost".into();
        assert!(cancel_for_teardown(&day2).is_none());
        // preparing-failed has no cancel rule: it goes back to known, so the unbind passes.
        let failed = agent(PreparingFailed, Some("c1"), Some("c1"));
        let (status, _) = cancel_for_teardown(&failed).unwrap();
        assert_eq!(status.debug_info.state, "known");
        let mut known = agent(Known, None, Some("c1"));
        known.status = Some(status);
        let plan = run(&known, None, &infra_env(None));
        assert_ne!(state(&plan), "preparing-failed");
    }

    #[test]
    fn deleting_an_infraenv_deregisters_pool_and_installed_hosts_and_waits_for_the_rest() {
        let ie = infra_env(None);
        let named = |name: &str, state: HostState| {
            let mut a = agent(state, None, None);
            a.metadata.name = Some(name.into());
            a
        };
        let pool = named("pool", KnownUnbound);
        let installed = named("installed", Installed);
        let pending = named("pending", UnbindingPendingUserAction);
        let fresh = named("fresh", Unregistered);
        let bound = named("bound", Known);
        let installing = named("installing", InstallingInProgress);
        let mut other_ie = named("other", KnownUnbound);
        other_ie.metadata.labels = Some([(LABEL_INFRAENV.to_owned(), "else".to_owned())].into());
        let mut other_ns = named("elsewhere", KnownUnbound);
        other_ns.metadata.namespace = Some("other".into());
        let all = [
            &pool,
            &installed,
            &pending,
            &fresh,
            &bound,
            &installing,
            &other_ie,
            &other_ns,
        ];
        let d = infra_env_deletion(&ie, all);
        let names = |v: &[&Agent]| -> Vec<String> {
            v.iter().map(|a| a.metadata.name.clone().unwrap()).collect()
        };
        assert_eq!(names(&d.delete), ["pool", "installed", "pending", "fresh"]);
        assert_eq!(names(&d.remaining), ["bound", "installing"]);
        let d = infra_env_deletion(&ie, [&pool]);
        assert!(d.remaining.is_empty());
    }

    #[test]
    fn reclaim_reboots_an_installed_host_into_the_pool() {
        let all = ReclaimContext {
            image_service: true,
            bare_metal_host: false,
            spoke_reachable: true,
        };
        let reclaiming = |reclaim: ReclaimContext| {
            reconcile_agent(
                &agent(Installed, None, Some("c1")),
                &AgentContext {
                    infra_env: Some(&infra_env(None)),
                    cluster: None,
                    now: now(),
                    requirements: Requirements::default(),
                    cluster_hostnames: &[],
                    reclaim,
                },
            )
        };
        let plan = reclaiming(all);
        assert_eq!(state(&plan), "reclaiming");
        assert_eq!(
            plan.status.debug_info.state_info,
            "Host is waiting to be unbound from the cluster"
        );
        assert_eq!(plan.status.bound_cluster_deployment, None);
        assert_eq!(
            reasons(&plan),
            ["host_unbind_succeeded", "host_status_updated"]
        );
        // Without the image service, or with a BareMetalHost: pending user action.
        for no in [
            ReclaimContext {
                image_service: false,
                ..all
            },
            ReclaimContext {
                bare_metal_host: true,
                ..all
            },
        ] {
            assert_eq!(state(&reclaiming(no)), "unbinding-pending-user-action");
        }
        // The reclaim agent reboots it; the discovery agent registers it into the pool.
        let rebooting = rebooting_for_reclaim(&plan.status).unwrap();
        assert_eq!(rebooting.debug_info.state, "reclaiming-rebooting");
        assert_eq!(
            rebooting.debug_info.state_info,
            "Host is rebooting into the discovery image"
        );
        let back = register_host(&rebooting, None, inventory(4, 16)).unwrap();
        assert_eq!(back.debug_info.state, "discovering-unbound");
        assert!(rebooting_for_reclaim(&back).is_err());
    }
}
