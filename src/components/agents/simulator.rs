//! The discovery-agent simulator (`cvo agent simulate`): N hosts that booted an InfraEnv's
//! discovery image. The real discovery agent talks to assisted-service's REST API, which
//! keeps the host in its database and mirrors it into the Agent; `cvo` has no such service,
//! so the simulator does what that service does on the agent's behalf, through the
//! Kubernetes API: it creates the Agent (in the InfraEnv's namespace, labelled with it),
//! registers the host ([`register_host`]: the state machine's RegisterHost and the
//! inventory, written to the Agent's status), checks in (the `checked-in-at` annotation), and
//! obeys the next step: in `binding`, `unbinding` and `unbinding-pending-user-action` the
//! agent is told `exit`, restarts and registers again, which completes a bind or an unbind.
//! Everything else (validations, bind, unbind) is the controller's.
//!
//! A host that runs from its installation disk runs no discovery agent: it neither checks in
//! nor obeys steps. When the controller reclaims it (`reclaiming`), the simulator plays the
//! reclaim agent assisted-service starts on the spoke cluster's node: it reports
//! RebootingForReclaim (`reclaiming-rebooting`) and reboots the host into the discovery image,
//! whose agent registers it into the pool. Starting the simulator again boots every host into the discovery image,
//! which returns an `unbinding-pending-user-action` host to the pool. A host whose Agent is
//! deleted stops.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::sync::watch;

use super::discovery::{Hardware, booted_from_disk, inventory};
use super::keys::{ANN_CHECKED_IN_AT, GROUP, LABEL_INFRAENV, VERSION};
use super::reconcile::{NextStep, next_step, rebooting_for_reclaim, register_host};
use super::state::HostState;
use super::types::{Agent, AgentSpec, ClusterReference, InfraEnv};

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimulatorOptions {
    pub namespace: String,
    pub infra_env: String,
    pub hosts: u32,
    pub hardware: Hardware,
    /// Agent names are `PREFIX-N` (N from 0), so that a restarted simulator boots the same
    /// hosts again.
    pub prefix: String,
    /// How often each host checks in.
    pub heartbeat: Duration,
    /// How often the hosts look at their next step.
    pub poll: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum SimulatorError {
    #[error(
        "InfraEnv {namespace}/{name} not found: create it first (hosts boot an InfraEnv's discovery image)"
    )]
    NoInfraEnv { namespace: String, name: String },
    #[error("cannot read InfraEnv {namespace}/{name}: {source}")]
    InfraEnv {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("cannot register host {host}: {message}")]
    Register { host: String, message: String },
}

/// One simulated host.
struct Host {
    index: u32,
    last_check_in: Instant,
    /// Its Agent has been seen in the cache (so its absence later means it was deleted).
    seen: bool,
    stopped: bool,
}

/// Registers the hosts, then keeps them until `stop`. `on_registered` is called once all are
/// registered.
pub async fn run(
    client: kube::Client,
    options: SimulatorOptions,
    on_registered: impl FnOnce(u32),
    mut stop: watch::Receiver<bool>,
) -> Result<(), SimulatorError> {
    let (namespace, name) = (options.namespace.clone(), options.infra_env.clone());
    let infra_envs: Api<InfraEnv> = Api::namespaced(client.clone(), &namespace);
    let infra_env = match infra_envs.get_opt(&name).await {
        Ok(Some(ie)) => ie,
        Ok(None) => return Err(SimulatorError::NoInfraEnv { namespace, name }),
        Err(source) => {
            return Err(SimulatorError::InfraEnv {
                namespace,
                name,
                source,
            });
        }
    };
    let agents: Api<Agent> = Api::namespaced(client.clone(), &namespace);
    let names: Vec<(u32, String)> = (0..options.hosts)
        .map(|i| (i, format!("{}-{i}", options.prefix)))
        .collect();
    let registered = futures_util::stream::iter(names.iter().cloned())
        .map(|(i, host)| {
            let (agents, options, infra_env) = (&agents, &options, &infra_env);
            async move {
                match boot(agents, options, &host, i, infra_env).await {
                    Ok(()) => Ok(()),
                    // The service refused the registration (e.g. a host installed from disk
                    // that booted the discovery image): that host stays as it is.
                    Err(RegisterError::Refused(state, e)) => {
                        tracing::warn!(%host, %state, error = %e, "registration refused; the host stays as it is");
                        eprintln!("warning: host {host}: RegisterHost from {state:?} refused: {e}");
                        Ok(())
                    }
                    Err(e) => Err(SimulatorError::Register {
                        host,
                        message: e.to_string(),
                    }),
                }
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    registered.into_iter().collect::<Result<Vec<()>, _>>()?;
    on_registered(options.hosts);

    let (store, writer) = reflector::store();
    let config = watcher::Config::default().labels(&format!("{LABEL_INFRAENV}={name}"));
    let feed = reflector::reflector(writer, watcher(agents.clone(), config).default_backoff())
        .applied_objects()
        .for_each(|_| async {});
    let feed = tokio::spawn(feed);
    let _ = store.wait_until_ready().await;
    let mut hosts: BTreeMap<String, Host> = names
        .into_iter()
        .map(|(index, host)| {
            let h = Host {
                index,
                last_check_in: Instant::now(),
                seen: false,
                stopped: false,
            };
            (host, h)
        })
        .collect();
    loop {
        tick(&agents, &store, &options, &mut hosts).await;
        tokio::select! {
            _ = tokio::time::sleep(options.poll) => {}
            _ = stop.changed() => break,
        }
    }
    feed.abort();
    Ok(())
}

/// The host boots the discovery image: its Agent is created if it has none, and it
/// registers (again).
async fn boot(
    agents: &Api<Agent>,
    options: &SimulatorOptions,
    host: &str,
    index: u32,
    infra_env: &InfraEnv,
) -> Result<(), RegisterError> {
    // The controller writes the new Agent too (its finalizer): a conflict is read again.
    let mut attempts = 0;
    loop {
        attempts += 1;
        match boot_once(agents, options, host, index, infra_env).await {
            Err(RegisterError::Api(e)) if is_conflict(&e) && attempts < 10 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            done => return done,
        }
    }
}

fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409)
}

async fn boot_once(
    agents: &Api<Agent>,
    options: &SimulatorOptions,
    host: &str,
    index: u32,
    infra_env: &InfraEnv,
) -> Result<(), RegisterError> {
    let cluster_ref = infra_env.spec.cluster_ref.as_ref();
    let existing = agents.get_opt(host).await?;
    let agent = match existing {
        Some(agent) => agent,
        None => {
            agents
                .create(&PostParams::default(), &new_agent(host, infra_env))
                .await?
        }
    };
    register(agents, &agent, options, index, cluster_ref).await
}

/// The Agent assisted-service creates for a host that registers the first time (its
/// `CreateAgentCR`): unapproved, bound to the InfraEnv's `clusterRef` if it has one, labelled
/// with the InfraEnv and its `spec.agentLabels`, owned by the InfraEnv.
pub fn new_agent(host: &str, infra_env: &InfraEnv) -> Agent {
    let mut agent = Agent::new(
        host,
        AgentSpec {
            cluster_deployment_name: infra_env.spec.cluster_ref.clone(),
            role: String::new(),
            approved: false,
            ..AgentSpec::default()
        },
    );
    let mut labels = infra_env.spec.agent_labels.clone();
    let name = infra_env.metadata.name.clone().unwrap_or_default();
    labels.insert(LABEL_INFRAENV.to_owned(), name.clone());
    agent.metadata.labels = Some(labels);
    agent.metadata.annotations =
        Some([(ANN_CHECKED_IN_AT.to_owned(), Timestamp::now().to_string())].into());
    if let Some(uid) = infra_env.metadata.uid.clone() {
        agent.metadata.owner_references = Some(vec![OwnerReference {
            api_version: format!("{GROUP}/{VERSION}"),
            kind: "InfraEnv".into(),
            name,
            uid,
            ..OwnerReference::default()
        }]);
    }
    agent
}

/// RegisterHost with the host's inventory, written to the Agent's status.
async fn register(
    agents: &Api<Agent>,
    agent: &Agent,
    options: &SimulatorOptions,
    index: u32,
    cluster_ref: Option<&ClusterReference>,
) -> Result<(), RegisterError> {
    let host = agent.metadata.name.clone().unwrap_or_default();
    let current = agent.status.clone().unwrap_or_default();
    let status = register_host(
        &current,
        cluster_ref,
        inventory(&host, index, options.hardware),
        Timestamp::now(),
    )
    .map_err(|e| RegisterError::Refused(current.debug_info.state.clone(), e))?;
    let mut next = agent.clone();
    next.status = Some(status);
    agents
        .replace_status(&host, &PostParams::default(), &next)
        .await?;
    Ok(check_in(agents, &host).await?)
}

/// Why a registration failed.
#[derive(Debug, thiserror::Error)]
enum RegisterError {
    #[error("RegisterHost from state {0:?}: {1}")]
    Refused(String, super::state::TransitionError),
    #[error(transparent)]
    Api(#[from] kube::Error),
}

async fn check_in(agents: &Api<Agent>, host: &str) -> Result<(), kube::Error> {
    let patch =
        json!({"metadata": {"annotations": {ANN_CHECKED_IN_AT: Timestamp::now().to_string()}}});
    agents
        .patch(host, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

/// Every host looks at its next step, and checks in when due.
async fn tick(
    agents: &Api<Agent>,
    store: &Store<Agent>,
    options: &SimulatorOptions,
    hosts: &mut BTreeMap<String, Host>,
) {
    for (name, host) in hosts.iter_mut().filter(|(_, h)| !h.stopped) {
        let Some(agent) = store.get(&ObjectRef::new(name).within(&options.namespace)) else {
            if host.seen {
                tracing::info!(host = %name, "the Agent was deleted; the host stops");
                host.stopped = true;
            }
            continue;
        };
        host.seen = true;
        let state: HostState = (agent.status.as_ref())
            .and_then(|s| s.debug_info.state.parse().ok())
            .unwrap_or(HostState::Unregistered);
        if booted_from_disk(state) {
            continue;
        }
        if next_step(state) == NextStep::RebootForReclaim {
            tracing::info!(host = %name, "reclaim agent: rebooting into the discovery image");
            let status = agent.status.clone().unwrap_or_default();
            if let Ok(next) = rebooting_for_reclaim(&status) {
                let mut rebooting = (*agent).clone();
                rebooting.status = Some(next);
                if let Err(e) = agents
                    .replace_status(name, &PostParams::default(), &rebooting)
                    .await
                {
                    tracing::debug!(host = %name, error = %e, "reclaim retried");
                }
            }
            continue;
        }
        if next_step(state) == NextStep::Exit {
            tracing::info!(host = %name, %state, "next step: exit; restarting and registering again");
            match register(agents, &agent, options, host.index, None).await {
                Ok(()) => host.last_check_in = Instant::now(),
                // A stale cache (409): the next tick reads the newer Agent.
                Err(e) => tracing::debug!(host = %name, error = %e, "registration retried"),
            }
            continue;
        }
        if host.last_check_in.elapsed() >= options.heartbeat {
            match check_in(agents, name).await {
                Ok(()) => host.last_check_in = Instant::now(),
                Err(e) => tracing::debug!(host = %name, error = %e, "check-in retried"),
            }
        }
    }
}
