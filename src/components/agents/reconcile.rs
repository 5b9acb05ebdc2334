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
    self, AgentInfraEnv, BindError, BindRequest, Caller, ClusterFacts, ClusterLookup, Decision,
    HostRecord, ReclaimContext, ReconcileInput, Teardown, UnbindError,
};
use super::conditions::{HostView, SyncError, agent_conditions};
use super::keys::{ANN_CHECKED_IN_AT, KIND_HOST, LABEL_INFRAENV, ROLE_AUTO_ASSIGN};
use super::state::{
    Effect, HostEvent, HostState, Registration, Transition, TransitionError, transition,
};
use super::types::{
    Agent, AgentClusterInstall, AgentStatus, ClusterDeployment, ClusterReference, Condition,
    HostInventory, InfraEnv, InfraEnvStatus, LabelSelector,
};
use super::validation::{
    ClusterContext, Observation, Requirements, validate_bound, validate_unbound,
};

/// A host that has not checked in for this long is disconnected (upstream's 3 minutes).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(180);

/// How long a backend error waits before the reconcile is first retried; later retries wait
/// as long as the error has lasted, up to [`MAX_BACKOFF`].
pub const BACKEND_RETRY: Duration = Duration::from_secs(5);

/// The longest wait between retries of a lasting backend error.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// How long a reclaim may take before the host gives up on it and waits for a person
/// (`unbinding-pending-user-action`; upstream's `ReclaimTimeout`).
pub const RECLAIM_TIMEOUT: Duration = Duration::from_secs(60 * 60);

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
    /// How long a reclaim may take ([`RECLAIM_TIMEOUT`] unless configured).
    pub reclaim_timeout: Duration,
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
    /// The labels the Agent must have (the inventory's, [`inventory_labels`]; the
    /// ClusterDeployment namespace's is [`AgentPlan::cluster_namespace_label`]).
    pub labels: std::collections::BTreeMap<String, String>,
    /// Its InfraEnv approves its agents (`spec.agentApproval.autoApprove`): set
    /// `spec.approved`.
    pub approve: bool,
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
    let approve = !agent.spec.approved
        && (ctx.infra_env.and_then(|ie| ie.spec.agent_approval.as_ref()))
            .is_some_and(|a| a.auto_approve);
    let mut plan = AgentPlan {
        status: before.clone(),
        cluster_namespace_label: cd_ref.map(|c| c.namespace.clone()).unwrap_or_default(),
        events: Vec::new(),
        requeue_after: None,
        labels: inventory_labels(&before.inventory),
        approve,
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
            let networking = &aci.spec.networking;
            let facts = ClusterFacts {
                id,
                status: cluster_status,
                cpu_architecture: &aci.spec.cpu_architecture,
                openshift_version: &aci.spec.openshift_version,
                platform: binding::platform_of(
                    &aci.spec.platform_type,
                    networking.user_managed_networking.unwrap_or(false),
                ),
                day2: view.cd.spec.installed,
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
                    let message = match &e {
                        BindError::StateMachine(refused) => {
                            not_ready(refused, &HostEvent::Bind, &status)
                        }
                        other => other.to_string(),
                    };
                    if !already_reported(&before.conditions, &message) {
                        plan.events.push(HostEventRecord {
                            scope: infra_env_scope.clone(),
                            warning: true,
                            reason: event::HOST_BIND_FAILED,
                            action: "BindHost".to_owned(),
                            message: format!(
                                "Failed to bind host {} to cluster {id}: {message}",
                                host.id
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
                            "Host {}: Successfully unbound from cluster",
                            display_name(agent, &before)
                        ),
                    });
                }
                Err(e) => {
                    requeue = !e.is_user_error();
                    let message = match &e {
                        UnbindError::StateMachine(refused) => {
                            let event = match unbind.reclaim {
                                true => HostEvent::Reclaim,
                                false => HostEvent::Unbind,
                            };
                            not_ready(refused, &event, &status)
                        }
                        other => other.to_string(),
                    };
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
                                "Failed to unbind host {} to cluster: {message}",
                                host.id
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
        approved: agent.spec.approved || approve,
        validations: &status.validations_info,
    };
    status.conditions = keep_times(&before.conditions, agent_conditions(sync, Some(&view)));
    if before.debug_info.state != status.debug_info.state || status.state_updated_at.is_none() {
        status.state_updated_at = Some(ctx.now.to_string());
    }
    if before.debug_info.state != status.debug_info.state {
        let scope = match &status.bound_cluster_deployment {
            Some(cd) => EventScope::ClusterDeployment(cd.clone()),
            None => infra_env_scope.clone(),
        };
        // A reclaim that timed out: the host waits for a person (`cvo` warns; upstream's
        // severity for the state is info).
        let gave_up = matches!(
            before.debug_info.state.parse(),
            Ok(HostState::Reclaiming | HostState::ReclaimingRebooting)
        ) && host.state == HostState::UnbindingPendingUserAction;
        plan.events.push(HostEventRecord {
            scope,
            warning: gave_up || warns(host.state),
            reason: event::HOST_STATUS_UPDATED,
            action: status.debug_info.state.clone(),
            message: status_updated(&display_name(agent, &status), &before, &status),
        });
    }
    plan.requeue_after = match requeue {
        true => Some(backoff(&status.conditions, ctx.now)),
        // Look again when the host would count as disconnected, or its reclaim times out.
        false => {
            let disconnects = checked_in_at(agent).map(|at| {
                let silent = ctx.now.duration_since(at).unsigned_abs();
                CONNECTION_TIMEOUT.saturating_sub(silent) + Duration::from_secs(1)
            });
            let reclaim = reclaim_deadline(&status, ctx.now, ctx.reclaim_timeout);
            [disconnects, reclaim].into_iter().flatten().min()
        }
    };
    plan.labels = inventory_labels(&status.inventory);
    plan.status = status;
    plan
}

/// A transition the state machine refused, said so that a person knows what to do: the
/// refusal (upstream's text), the states the event runs from and the host's, and the
/// validations that fail.
fn not_ready(refused: &TransitionError, event: &HostEvent, status: &AgentStatus) -> String {
    let explained = refused.explain(event);
    let mut message = match explained.is_empty() {
        true => refused.to_string(),
        false => format!("{refused}: {explained}"),
    };
    let failing: Vec<String> = (status.validations_info.values().flatten())
        .filter(|v| v.status == "failure")
        .map(|v| format!("{} ({})", v.id, v.message))
        .collect();
    if !failing.is_empty() {
        message.push_str(&format!("; failing validations: {}", failing.join(", ")));
    }
    message
}

/// How long to wait before retrying a backend error: as long as `SpecSynced` has been
/// False (doubling the wait each time), from [`BACKEND_RETRY`] up to [`MAX_BACKOFF`].
fn backoff(conditions: &[Condition], now: Timestamp) -> Duration {
    let since = (conditions.iter())
        .find(|c| c.type_ == super::conditions::SPEC_SYNCED && c.status == "False")
        .and_then(|c| c.last_transition_time.as_deref())
        .and_then(|t| t.parse::<Timestamp>().ok());
    let lasted = since.map_or(Duration::ZERO, |t| now.duration_since(t).unsigned_abs());
    lasted.clamp(BACKEND_RETRY, MAX_BACKOFF)
}

/// When a reclaiming host's reclaim times out, from `now`; none for another state.
fn reclaim_deadline(status: &AgentStatus, now: Timestamp, timeout: Duration) -> Option<Duration> {
    let state: HostState = status.debug_info.state.parse().ok()?;
    if !matches!(
        state,
        HostState::Reclaiming | HostState::ReclaimingRebooting
    ) {
        return None;
    }
    let since: Timestamp = status.state_updated_at.as_deref()?.parse().ok()?;
    let lasted = now.duration_since(since).unsigned_abs();
    Some(timeout.saturating_sub(lasted) + Duration::from_millis(100))
}

/// Whether a reclaiming host's reclaim has taken longer than `timeout`.
fn reclaim_timed_out(status: &AgentStatus, now: Timestamp, timeout: Duration) -> bool {
    let Some(since) =
        (status.state_updated_at.as_deref()).and_then(|t| t.parse::<Timestamp>().ok())
    else {
        return false;
    };
    now.duration_since(since).unsigned_abs() >= timeout
}

/// The value of `inventory.agent-install.openshift.io/version` (upstream's annotation of the
/// inventory labels' scheme).
pub const INVENTORY_LABELS_VERSION: &str = "0.1";

/// The labels the Agent controller derives from a host's inventory (upstream's
/// `updateLabels`), so that agents can be selected by hardware: an SSD, the CPU's
/// architecture and virtualisation flag, the vendor and product, virtual or not. Values are
/// reduced to what a label value allows; one that still is not a valid value is left out.
/// None without an inventory.
pub fn inventory_labels(inventory: &HostInventory) -> std::collections::BTreeMap<String, String> {
    use super::keys::*;
    let mut labels = std::collections::BTreeMap::new();
    if *inventory == HostInventory::default() {
        return labels;
    }
    let ssd = inventory.disks.iter().any(|d| d.drive_type == "SSD");
    let virt = (inventory.cpu.flags.iter()).any(|f| f == "vmx" || f == "svm");
    let vendor = &inventory.system_vendor;
    for (key, value) in [
        (LABEL_INVENTORY_HAS_NONROTATIONAL_DISK, ssd.to_string()),
        (
            LABEL_INVENTORY_CPU_ARCHITECTURE,
            inventory.cpu.architecture.clone(),
        ),
        (LABEL_INVENTORY_CPU_VIRT_ENABLED, virt.to_string()),
        (
            LABEL_INVENTORY_HOST_MANUFACTURER,
            vendor.manufacturer.clone(),
        ),
        (
            LABEL_INVENTORY_HOST_PRODUCT_NAME,
            vendor.product_name.clone(),
        ),
        (
            LABEL_INVENTORY_HOST_IS_VIRTUAL,
            vendor.r#virtual.to_string(),
        ),
    ] {
        if let Some(value) = label_value(&value) {
            labels.insert(key.to_owned(), value);
        }
    }
    labels
}

/// Upstream's `setAgentLabel` cleaning: every character a label value cannot have is dropped;
/// `None` when what is left is still not a label value.
fn label_value(value: &str) -> Option<String> {
    let kept: String = (value.chars())
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    let edges_ok = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    let valid = kept.len() <= 63 && edges_ok(kept.chars().next()) && edges_ok(kept.chars().last());
    valid.then_some(kept)
}

/// Upstream's `host_status_updated` text: `Host NAME: updated status from FROM to TO (INFO)`
/// (`(INFO)` only with a `statusInfo`).
fn status_updated(name: &str, before: &AgentStatus, after: &AgentStatus) -> String {
    let info = match after.debug_info.state_info.as_str() {
        "" => String::new(),
        info => format!("({info})"),
    };
    format!(
        "Host {name}: updated status from {} to {} {info}",
        before.debug_info.state, after.debug_info.state
    )
}

/// The states whose `host_status_updated` upstream records as a warning (or an error):
/// `GetEventSeverityFromHostStatus`.
fn warns(state: HostState) -> bool {
    matches!(
        state,
        HostState::Disconnected
            | HostState::InstallingPendingUserAction
            | HostState::Insufficient
            | HostState::Error
    )
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
    let mut facts = validated.facts;
    facts.reclaim_timed_out = reclaim_timed_out(status, ctx.now, ctx.reclaim_timeout);
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
        warning: warns(t.to),
        reason: event::HOST_STATUS_UPDATED,
        action: status.debug_info.state.clone(),
        message: status_updated(&display_name(agent, &before), &before, &status),
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
/// InfraEnv's `clusterRef` (not late binding). Refused (error) from states without a rule, and
/// by the rules that refuse (after installation, 409; while it must boot from disk, 403).
pub fn register_host(
    status: &AgentStatus,
    bound_to: Option<&ClusterReference>,
    inventory: HostInventory,
    now: Timestamp,
) -> Result<AgentStatus, TransitionError> {
    let from: HostState = status
        .debug_info
        .state
        .parse()
        .unwrap_or(HostState::Unregistered);
    let stage = status.progress.current_stage.as_str();
    let registration = Registration {
        bound: status.bound_cluster_deployment.is_some() || bound_to.is_some(),
        in_reboot: stage == STAGE_REBOOTING,
        day2_done: status.kind == super::keys::KIND_ADD_TO_EXISTING_CLUSTER_HOST
            && stage == STAGE_DONE,
        installation_disk: installation_disk(status),
        installation_path: status.installation_disk_id.clone(),
    };
    let t = transition(from, &HostEvent::Register(registration))?;
    let mut next = status.clone();
    apply(&mut next, &t);
    if from == HostState::Unregistered {
        next.bound_cluster_deployment = bound_to.cloned();
        next.role = ROLE_AUTO_ASSIGN.to_owned();
        next.kind = KIND_HOST.to_owned();
    }
    if next.debug_info.state != status.debug_info.state || next.state_updated_at.is_none() {
        next.state_updated_at = Some(now.to_string());
    }
    next.inventory = inventory;
    Ok(next)
}

/// The install stages the registration rules read (upstream's `models.HostStage*`).
pub const STAGE_REBOOTING: &str = "Rebooting";
pub const STAGE_DONE: &str = "Done";

/// The installation disk as upstream's wrong-boot-order message names it: `<model> <serial>
/// (<name>, <id>)`, the parts the inventory has; empty without one.
fn installation_disk(status: &AgentStatus) -> String {
    let id = status.installation_disk_id.as_str();
    let Some(disk) = (status.inventory.disks.iter())
        .find(|d| !id.is_empty() && (d.id == id || d.by_id == id || d.path == id))
    else {
        return String::new();
    };
    let mut parts: Vec<String> = [&disk.model, &disk.serial]
        .into_iter()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect();
    let identifier = match disk.id.as_str() {
        "" => disk.path.as_str(),
        id => id,
    };
    parts.push(format!("({}, {identifier})", disk.name));
    parts.join(" ")
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
            let infra_env = match infra_env {
                None => AgentInfraEnv::Missing,
                Some(ie) => AgentInfraEnv::Found(ie.spec.cluster_ref.as_ref()),
            };
            let verdict = binding::teardown(
                &deleted,
                cd.spec.preserve_on_delete,
                agent.spec.cluster_deployment_name.as_ref(),
                infra_env,
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

/// The InfraEnv's condition, upstream's (`api/v1beta1/infraenv_types.go`).
pub mod infra_env_text {
    pub const IMAGE_CREATED: &str = "ImageCreated";
    pub const INFRA_ENV_AVAILABLE: &str = "InfraEnvAvailable";
    pub const INFRA_ENV_AVAILABLE_MSG: &str = "InfraEnv is available";
    pub const MISSING_CLUSTER_DEPLOYMENT: &str = "MissingClusterDeployment";
    pub const MISSING_CLUSTER_DEPLOYMENT_MSG: &str = "ClusterDeployment is missing";
    /// The condition `cvo` wrote before it had upstream's: removed where found.
    pub const LEGACY_CLUSTER_DEPLOYMENT_REFERENCE: &str = "ClusterDeploymentReference";
}

/// What looking up an InfraEnv's `spec.clusterRef` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InfraEnvCluster {
    /// No such ClusterDeployment.
    CdMissing,
    /// The ClusterDeployment, without a cluster registered for it (no AgentClusterInstall):
    /// its `spec.clusterInstallRef` name, if it has one.
    NotRegistered {
        install: Option<String>,
    },
    Found,
}

/// The InfraEnv controller: `status.agentLabelSelector` and the `ImageCreated` condition
/// (`cluster`: what its `clusterRef` found; ignored without one). `cvo` builds no discovery
/// image, so an available InfraEnv's message is upstream's without `: Image has been
/// created`.
pub fn infra_env_status(infra_env: &InfraEnv, cluster: &InfraEnvCluster) -> InfraEnvStatus {
    use infra_env_text::*;
    let mut status = infra_env.status.clone().unwrap_or_default();
    let name = infra_env.metadata.name.clone().unwrap_or_default();
    status.agent_label_selector = Some(LabelSelector {
        match_labels: [(LABEL_INFRAENV.to_owned(), name)].into(),
        ..LabelSelector::default()
    });
    let missing = |why: String| {
        (
            "Unknown",
            MISSING_CLUSTER_DEPLOYMENT,
            format!("{MISSING_CLUSTER_DEPLOYMENT_MSG}: {why}"),
        )
    };
    let (state, reason, message) = match (&infra_env.spec.cluster_ref, cluster) {
        (Some(cd), InfraEnvCluster::CdMissing) => missing(format!(
            "failed to get clusterDeployment with name {name} in namespace {namespace}: clusterdeployments.hive.openshift.io \"{name}\" not found",
            name = cd.name,
            namespace = cd.namespace
        )),
        (Some(cd), InfraEnvCluster::NotRegistered { install }) => {
            let reason = match install {
                None => "AgentClusterInstall is not defined in ClusterDeployment".to_owned(),
                Some(aci) => format!(
                    "check AgentClusterInstall conditions: name {aci} in namespace {}",
                    cd.namespace
                ),
            };
            missing(format!("cluster does not exist: {}, {reason}", cd.name))
        }
        _ => (
            "True",
            INFRA_ENV_AVAILABLE,
            INFRA_ENV_AVAILABLE_MSG.to_owned(),
        ),
    };
    let next = Condition {
        type_: IMAGE_CREATED.to_owned(),
        status: state.to_owned(),
        reason: reason.to_owned(),
        message,
        ..Condition::default()
    };
    let next = keep_times(&status.conditions, vec![next]).remove(0);
    status
        .conditions
        .retain(|c| c.type_ != IMAGE_CREATED && c.type_ != LEGACY_CLUSTER_DEPLOYMENT_REFERENCE);
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
                platform_type: String::new(),
                openshift_version: String::new(),
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
                reclaim_timeout: RECLAIM_TIMEOUT,
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
        assert_eq!(
            plan.events[0].message,
            "Failed to bind host h1 to cluster ns/c1: Cannot add hosts to an existing cluster using the original Discovery ISO."
        );
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
        // Upstream's texts (docs/events.yaml).
        assert_eq!(
            plan.events[0].message,
            "Host host-1: Successfully unbound from cluster"
        );
        assert_eq!(
            plan.events[1].message,
            "Host h1: updated status from known to unbinding (Host is waiting to be unbound from the cluster)"
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
        let fresh = register_host(&AgentStatus::default(), None, inventory(4, 16), now()).unwrap();
        assert_eq!(fresh.debug_info.state, "discovering-unbound");
        assert_eq!(fresh.inventory.cpu.count, 4);
        let bound = register_host(
            &AgentStatus::default(),
            Some(&ClusterReference::new("ns", "c1")),
            inventory(4, 16),
            now(),
        )
        .unwrap();
        assert_eq!(bound.debug_info.state, "discovering");
        let mut binding = AgentStatus::default();
        binding.debug_info.state = "binding".into();
        binding.bound_cluster_deployment = Some(ClusterReference::new("ns", "c1"));
        let again = register_host(&binding, None, inventory(4, 16), now()).unwrap();
        assert_eq!(again.debug_info.state, "discovering");
        let mut unbinding = AgentStatus::default();
        unbinding.debug_info.state = "unbinding".into();
        let again = register_host(&unbinding, None, inventory(4, 16), now()).unwrap();
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
        // preserveOnDelete and the InfraEnv gone: unbound, not deleted (upstream's
        // shouldDeleteAgentOnUnbind).
        let orphan = teardown_agents(&preserved, [(&late, None)]);
        assert_eq!(orphan[0].1, Teardown::Unbind);
    }

    #[test]
    fn infraenv_status_selector_and_image_created() {
        let s = infra_env_status(&infra_env(None), &InfraEnvCluster::Found);
        let selector = s.agent_label_selector.clone().unwrap();
        assert_eq!(
            selector
                .match_labels
                .get("infraenvs.agent-install.openshift.io"),
            Some(&"pool".to_owned())
        );
        let shown = |s: &InfraEnvStatus| {
            assert_eq!(s.conditions.len(), 1);
            let c = &s.conditions[0];
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            )
        };
        let available = (
            "ImageCreated".to_owned(),
            "True".to_owned(),
            "InfraEnvAvailable".to_owned(),
            "InfraEnv is available".to_owned(),
        );
        assert_eq!(shown(&s), available);
        let bound = infra_env(Some("c1"));
        let s = infra_env_status(&bound, &InfraEnvCluster::CdMissing);
        assert_eq!(
            shown(&s),
            (
                "ImageCreated".into(),
                "Unknown".into(),
                "MissingClusterDeployment".into(),
                "ClusterDeployment is missing: failed to get clusterDeployment with name c1 in namespace ns: clusterdeployments.hive.openshift.io \"c1\" not found".into()
            )
        );
        let s = infra_env_status(&bound, &InfraEnvCluster::NotRegistered { install: None });
        assert_eq!(
            shown(&s).3,
            "ClusterDeployment is missing: cluster does not exist: c1, AgentClusterInstall is not defined in ClusterDeployment"
        );
        let install = Some("c1-aci".to_owned());
        let s = infra_env_status(&bound, &InfraEnvCluster::NotRegistered { install });
        assert_eq!(
            shown(&s).3,
            "ClusterDeployment is missing: cluster does not exist: c1, check AgentClusterInstall conditions: name c1-aci in namespace ns"
        );
        // The condition cvo wrote before is replaced.
        let mut old = bound.clone();
        old.status = Some(InfraEnvStatus {
            conditions: vec![Condition {
                type_: "ClusterDeploymentReference".into(),
                status: "True".into(),
                ..Condition::default()
            }],
            ..InfraEnvStatus::default()
        });
        assert_eq!(
            shown(&infra_env_status(&old, &InfraEnvCluster::Found)),
            available
        );
    }

    #[test]
    fn a_host_not_ready_to_bind_says_why_and_backs_off() {
        let (c, a) = (cd("c1"), aci(""));
        let view = ClusterView {
            cd: &c,
            aci: Some(&a),
        };
        let mut small = agent(InsufficientUnbound, Some("c1"), None);
        small.status.as_mut().unwrap().inventory = inventory(1, 16);
        let plan = run(&small, Some(view), &infra_env(None));
        assert_eq!(state(&plan), "insufficient-unbound");
        let synced = condition(&plan, "SpecSynced");
        assert_eq!(synced.reason, "BackendError");
        assert_eq!(
            synced.message,
            "The Spec could not be synced due to backend error: no condition found to run transition: BindHost is allowed from known-unbound only; the host is insufficient-unbound; failing validations: has-min-cpu-cores (The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is 2, found only 1)"
        );
        assert_eq!(plan.requeue_after, Some(BACKEND_RETRY));
        // Still failing a minute later: the retry waits as long.
        let mut later = small.clone();
        let mut status = plan.status.clone();
        for cond in &mut status.conditions {
            cond.last_transition_time = Some(Timestamp::from_second(NOW - 60).unwrap().to_string());
        }
        later.status = Some(status);
        let plan = run(&later, Some(view), &infra_env(None));
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(60)));
        let mut status = plan.status.clone();
        for cond in &mut status.conditions {
            cond.last_transition_time =
                Some(Timestamp::from_second(NOW - 3600).unwrap().to_string());
        }
        later.status = Some(status);
        assert_eq!(
            run(&later, Some(view), &infra_env(None)).requeue_after,
            Some(MAX_BACKOFF)
        );
    }

    #[test]
    fn arbiter_hosts_bind_to_recent_baremetal_clusters() {
        let c = cd("c1");
        let mut old = aci("");
        old.spec.openshift_version = "4.18.0".into();
        let mut arbiter = agent(KnownUnbound, Some("c1"), None);
        arbiter.spec.role = "arbiter".into();
        let plan = run(
            &arbiter,
            Some(ClusterView {
                cd: &c,
                aci: Some(&old),
            }),
            &infra_env(None),
        );
        let synced = condition(&plan, "SpecSynced");
        assert_eq!(synced.reason, "InputError");
        assert!(
            synced
                .message
                .ends_with("Host h1 is assigned the arbiter role: cluster's openshift version must be at least 4.19"),
            "{}",
            synced.message
        );
        let mut recent = aci("");
        recent.spec.openshift_version = "4.19.2".into();
        recent.spec.platform_type = "BareMetal".into();
        let plan = run(
            &arbiter,
            Some(ClusterView {
                cd: &c,
                aci: Some(&recent),
            }),
            &infra_env(None),
        );
        assert_eq!(state(&plan), "binding");
    }

    #[test]
    fn inventory_labels_and_auto_approval() {
        let mut host = agent(KnownUnbound, None, None);
        host.spec.approved = false;
        let status = host.status.as_mut().unwrap();
        status.inventory.cpu.architecture = "x86_64".into();
        status.inventory.cpu.flags = vec!["vmx".into()];
        status.inventory.disks[0].drive_type = "SSD".into();
        status.inventory.system_vendor.manufacturer = "Dell Inc.".into();
        status.inventory.system_vendor.product_name = "PowerEdge R640 (rev 2)".into();
        let mut ie = infra_env(None);
        let plan = run(&host, None, &ie);
        assert!(!plan.approve);
        assert_eq!(
            condition(&plan, "RequirementsMet").reason,
            "AgentIsNotApproved"
        );
        let labels: Vec<(&str, &str)> = (plan.labels.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                (
                    "inventory.agent-install.openshift.io/cpu-architecture",
                    "x86_64"
                ),
                (
                    "inventory.agent-install.openshift.io/cpu-virtenabled",
                    "true"
                ),
                (
                    "inventory.agent-install.openshift.io/host-isvirtual",
                    "false"
                ),
                // "Dell Inc." cleaned is "DellInc.", which ends in a dot: no label.
                (
                    "inventory.agent-install.openshift.io/host-productname",
                    "PowerEdgeR640rev2"
                ),
                (
                    "inventory.agent-install.openshift.io/storage-hasnonrotationaldisk",
                    "true"
                ),
            ]
        );
        ie.spec.agent_approval =
            Some(crate::components::agents::types::AgentApproval { auto_approve: true });
        let plan = run(&host, None, &ie);
        assert!(plan.approve);
        assert_ne!(
            condition(&plan, "RequirementsMet").reason,
            "AgentIsNotApproved"
        );
        // No inventory, no labels.
        assert!(inventory_labels(&HostInventory::default()).is_empty());
        assert_eq!(label_value("-x-"), None);
        assert_eq!(label_value(&"a".repeat(64)), None);
    }

    #[test]
    fn a_reclaim_that_takes_too_long_waits_for_a_person() {
        let mut reclaiming = agent(Reclaiming, None, None);
        let since = Timestamp::from_second(NOW - 30).unwrap();
        reclaiming.status.as_mut().unwrap().state_updated_at = Some(since.to_string());
        let ctx = |timeout: u64| AgentContext {
            infra_env: None,
            cluster: None,
            now: now(),
            requirements: Requirements::default(),
            cluster_hostnames: &[],
            reclaim: ReclaimContext::default(),
            reclaim_timeout: Duration::from_secs(timeout),
        };
        let plan = reconcile_agent(&reclaiming, &ctx(3600));
        assert_eq!(state(&plan), "reclaiming");
        // Looked at again when the host would be disconnected, or the reclaim times out.
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(171)));
        let plan = reconcile_agent(&reclaiming, &ctx(100));
        assert_eq!(plan.requeue_after, Some(Duration::from_millis(70_100)));
        let plan = reconcile_agent(&reclaiming, &ctx(20));
        assert_eq!(state(&plan), "unbinding-pending-user-action");
        assert_eq!(
            plan.status.debug_info.state_info,
            "Host is waiting to be unbound from the cluster"
        );
        assert_eq!(plan.status.state_updated_at, Some(now().to_string()));
        let updated = &plan.events[0];
        assert_eq!(updated.reason, "host_status_updated");
        assert!(updated.warning);
        assert_eq!(
            updated.message,
            "Host h1: updated status from reclaiming to unbinding-pending-user-action (Host is waiting to be unbound from the cluster)"
        );
        let mut rebooting = reclaiming.clone();
        rebooting.status.as_mut().unwrap().debug_info.state = "reclaiming-rebooting".into();
        assert_eq!(
            state(&reconcile_agent(&rebooting, &ctx(20))),
            "unbinding-pending-user-action"
        );
    }

    #[test]
    fn registration_during_preparation_and_after_installation() {
        let mut preparing = AgentStatus::default();
        preparing.debug_info.state = "preparing-successful".into();
        preparing.bootstrap = true;
        preparing.inventory = inventory(8, 32);
        let back = register_host(&preparing, None, inventory(8, 32), now()).unwrap();
        assert_eq!(back.debug_info.state, "known");
        assert!(back.bootstrap);
        let mut installed = AgentStatus::default();
        installed.debug_info.state = "installed".into();
        let e = register_host(&installed, None, inventory(4, 16), now()).unwrap_err();
        assert_eq!(e.code(), 409);
        // Rebooting into the discovery image instead of the disk: wrong boot order.
        let mut rebooting = AgentStatus::default();
        rebooting.debug_info.state = "installing-in-progress".into();
        rebooting.progress.current_stage = "Rebooting".into();
        rebooting.inventory = inventory(4, 16);
        rebooting.inventory.disks[0].model = "QEMU".into();
        rebooting.inventory.disks[0].name = "sda".into();
        rebooting.installation_disk_id = "/dev/disk/by-id/d".into();
        let next = register_host(&rebooting, None, inventory(4, 16), now()).unwrap();
        assert_eq!(next.debug_info.state, "installing-pending-user-action");
        assert_eq!(
            next.debug_info.state_info,
            "Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk QEMU (sda, /dev/disk/by-id/d)"
        );
        let e = register_host(&next, None, inventory(4, 16), now()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Host is required to be booted from disk /dev/disk/by-id/d"
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
                reclaim_timeout: RECLAIM_TIMEOUT,
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
                    reclaim_timeout: RECLAIM_TIMEOUT,
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
        let back = register_host(&rebooting, None, inventory(4, 16), now()).unwrap();
        assert_eq!(back.debug_info.state, "discovering-unbound");
        assert!(rebooting_for_reclaim(&back).is_err());
    }
}
