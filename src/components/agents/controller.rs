//! The kube-runtime shell of the agent late-binding component (`cvo controller agents`):
//! watch caches of Agents, InfraEnvs, ClusterDeployments and AgentClusterInstalls, and three
//! controllers that only observe and execute what [`super::reconcile`] decides:
//!
//! - Agents: [`reconcile_agent`]'s status (one write: state, host record, conditions), the
//!   ClusterDeployment-namespace label, the finalizer, and the Events on the InfraEnv or the
//!   ClusterDeployment (spec C.6);
//! - ClusterDeployments: a finalizer, and on deletion [`teardown_agents`] (unbind or delete);
//! - InfraEnvs: `status.agentLabelSelector` and the `ClusterDeploymentReference` condition.
//!
//! It also keeps the ClusterOperator `agent-install`. Caches lag writes: a stale write meets
//! a conflict and the reconcile is retried.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::watch;

use super::binding::{ReclaimContext, Teardown};
use super::crds::OPERATOR;
use super::keys::{
    ANN_INVENTORY_VERSION, FINALIZER_AGENT, FINALIZER_CLUSTER_DEPLOYMENT, FINALIZER_INFRAENV,
    LABEL_BMH, LABEL_CLUSTER_DEPLOYMENT_NAMESPACE, LABEL_INFRAENV,
};
use super::reconcile::{
    AgentContext, ClusterView, EventScope, HostEventRecord, INFRA_ENV_HOSTS_REMAIN,
    INVENTORY_LABELS_VERSION, InfraEnvCluster, cancel_for_teardown, infra_env_deletion,
    infra_env_name, infra_env_status, real_hostname, reconcile_agent, teardown_agents,
};
use super::types::{Agent, AgentClusterInstall, ClusterDeployment, InfraEnv};

/// The API group of AgentClusterInstall.
const ACI_GROUP: &str = "extensions.hive.openshift.io";
use super::hub::{HubView, hub_view};
use super::validation::Requirements;
use crate::host::cluster_operator::{OperatorSettings, keep_cluster_operator_with};
use crate::host::controller::{Component, ComponentError, HostHandle};
use crate::host::operator_status::Health;
use crate::host::webhook::{Admission, WebhookOptions};
use crate::operator::FIELD_MANAGER;

/// The component's settings, from `cvo controller agents`'s flags.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The version the ClusterOperator reports.
    pub version: String,
    /// How often the ClusterOperator is refreshed.
    pub status_interval: Duration,
    /// The Agent and InfraEnv admission webhooks; `None`: not served.
    pub webhook: Option<WebhookOptions>,
    /// The pool's host requirements.
    pub requirements: Requirements,
    /// The image service is on: unbinding an installed host reclaims it (reboots it into the
    /// discovery image) when no BareMetalHost manages it and its cluster is there.
    pub reclaim: bool,
    /// How long a reclaim may take before the host waits for a person
    /// (`unbinding-pending-user-action`).
    pub reclaim_timeout: Duration,
}

/// The agent component, as the host runs it.
pub struct Agents {
    pub settings: Settings,
    /// The ClusterDeployments the InfraEnv webhook reads (`spec.installed`), filled once the
    /// controllers run.
    pub cluster_deployments: Arc<std::sync::RwLock<Option<Store<ClusterDeployment>>>>,
    /// Another operator serves the API ([`super::hub`]): the webhooks judge nothing.
    pub standing_down: Arc<AtomicBool>,
}

impl Agents {
    pub fn new(settings: Settings) -> Agents {
        Agents {
            settings,
            cluster_deployments: Arc::new(std::sync::RwLock::new(None)),
            standing_down: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Component for Agents {
    fn name(&self) -> &'static str {
        super::crds::COMPONENT
    }

    fn webhook(&self) -> Option<(WebhookOptions, Arc<dyn Admission>)> {
        let options = self.settings.webhook.clone()?;
        let admission = super::admission::AgentAdmission {
            cluster_deployments: self.cluster_deployments.clone(),
            standing_down: self.standing_down.clone(),
        };
        Some((options, Arc::new(admission)))
    }

    fn run(
        self: Arc<Self>,
        host: HostHandle,
        stop: watch::Receiver<bool>,
    ) -> Pin<Box<dyn Future<Output = Result<(), ComponentError>> + Send>> {
        Box::pin(async move { run(self, host, stop).await })
    }
}

/// How long a teardown whose unbind the webhook refused waits before it tries again
/// (upstream's `longerRequeueAfterOnError`).
const TEARDOWN_RETRY: Duration = Duration::from_secs(60);

/// What every reconcile shares.
struct Shared {
    client: Client,
    host: HostHandle,
    recorder: Recorder,
    agents: Store<Agent>,
    infra_envs: Store<InfraEnv>,
    cluster_deployments: Store<ClusterDeployment>,
    installs: Store<AgentClusterInstall>,
    requirements: Requirements,
    reclaim: bool,
    reclaim_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("{verb} {kind} {name}: {source}")]
    Write {
        verb: &'static str,
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
}

/// Merge-patches the object `name` of `api` and counts the write for `controller`.
async fn merge_patch<K>(
    shared: &Shared,
    controller: &'static str,
    api: &Api<K>,
    kind: &'static str,
    name: &str,
    patch: &serde_json::Value,
) -> Result<(), ReconcileError>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(write_error("patch", kind, name))?;
    (shared.host.metrics).observe_write(controller, kind, "patch");
    Ok(())
}

fn write_error(
    verb: &'static str,
    kind: &'static str,
    name: &str,
) -> impl FnOnce(kube::Error) -> ReconcileError {
    let name = name.to_owned();
    move |source| ReconcileError::Write {
        verb,
        kind,
        name,
        source,
    }
}

/// A cache of every `K`, fed by a task on `tasks`.
fn cache<K>(client: &Client, tasks: &mut Vec<tokio::task::JoinHandle<()>>) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(Api::<K>::all(client.clone()), watcher::Config::default()).default_backoff(),
    )
    .modify(|o| o.meta_mut().managed_fields = None)
    .applied_objects()
    .for_each({
        let mut log = crate::host::controller::watch_error_logger(&K::kind(&()));
        move |r| {
            log(&r);
            async {}
        }
    });
    tasks.push(tokio::spawn(stream));
    reader
}

async fn run(
    component: Arc<Agents>,
    host: HostHandle,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ComponentError> {
    let settings = component.settings.clone();
    let client = host.client.clone();
    let health = Arc::new(Mutex::new(Health::default()));
    let reported = health.clone();
    let operator = tokio::spawn(keep_cluster_operator_with(
        client.clone(),
        OperatorSettings {
            name: OPERATOR,
            subject: "Agent controllers",
            version: settings.version.clone(),
            interval: settings.status_interval,
        },
        move || lock(&reported).clone(),
        stop.clone(),
    ));
    loop {
        let view = observe_hub(&client).await;
        component
            .standing_down
            .store(view.stand_down.is_some(), Ordering::Relaxed);
        {
            let mut h = lock(&health);
            h.stood_down = view.stand_down.clone();
            h.notes = view.notes.clone();
        }
        if let Some(why) = &view.stand_down {
            tracing::warn!(%why, "standing down");
            lock(&health).running = true;
            host.metrics.set_synced();
            tokio::select! {
                _ = tokio::time::sleep(settings.status_interval) => continue,
                _ = stop.changed() => break,
            }
        }
        // The controllers run until stopped, or until another operator takes the API over.
        let (restart, restarted) = watch::channel(false);
        let watcher = tokio::spawn(watch_hub(
            client.clone(),
            health.clone(),
            settings.status_interval,
            stop.clone(),
            restart,
        ));
        run_controllers(&component, &host, health.clone(), restarted).await;
        watcher.abort();
        lock(&health).running = false;
        if *stop.borrow() {
            break;
        }
    }
    let _ = operator.await;
    Ok(())
}

fn lock(health: &Mutex<Health>) -> std::sync::MutexGuard<'_, Health> {
    health.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live CRDs of the component's, judged ([`hub_view`]). A CRD that cannot be read counts
/// as absent (logged): the controllers then run as on a cluster without it.
async fn observe_hub(client: &Client) -> HubView {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut pairs = Vec::new();
    for crd in super::crds::crds() {
        let name = crd.name_any();
        let live = match api.get_opt(&name).await {
            Ok(live) => live.and_then(|c| serde_json::to_value(c).ok()),
            Err(e) => {
                tracing::warn!(crd = %name, error = %e, "cannot read the CRD to tell whose it is");
                None
            }
        };
        pairs.push((serde_json::to_value(&crd).unwrap_or_default(), live));
    }
    hub_view(&pairs, FIELD_MANAGER)
}

/// Looks at the CRDs every `interval` while the controllers run: the notes follow, and
/// `restart` turns true once another operator serves the API (or on `stop`).
async fn watch_hub(
    client: Client,
    health: Arc<Mutex<Health>>,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
    restart: watch::Sender<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => {
                let _ = restart.send(true);
                return;
            }
        }
        let view = observe_hub(&client).await;
        if view.stand_down.is_some() {
            let _ = restart.send(true);
            return;
        }
        lock(&health).notes = view.notes;
    }
}

/// The caches and the three controllers, until `stop`.
async fn run_controllers(
    component: &Arc<Agents>,
    host: &HostHandle,
    health: Arc<Mutex<Health>>,
    stop: watch::Receiver<bool>,
) {
    let settings = component.settings.clone();
    let client = host.client.clone();
    let mut tasks = Vec::new();
    let infra_envs = cache::<InfraEnv>(&client, &mut tasks);
    let cluster_deployments = cache::<ClusterDeployment>(&client, &mut tasks);
    let installs = cache::<AgentClusterInstall>(&client, &mut tasks);
    if let Ok(mut store) = component.cluster_deployments.write() {
        *store = Some(cluster_deployments.clone());
    }
    let agents_api: Api<Agent> = Api::all(client.clone());
    let agent_controller = Controller::new(agents_api, watcher::Config::default());
    let agents = agent_controller.store();
    let _ = infra_envs.wait_until_ready().await;
    let _ = cluster_deployments.wait_until_ready().await;
    let _ = installs.wait_until_ready().await;
    host.metrics.set_synced();
    lock(&health).running = true;
    tracing::info!("caches synced; reconciling");
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone(), host.reporter.clone()),
        client: client.clone(),
        host: host.clone(),
        agents: agents.clone(),
        infra_envs: infra_envs.clone(),
        cluster_deployments: cluster_deployments.clone(),
        installs: installs.clone(),
        requirements: settings.requirements,
        reclaim: settings.reclaim,
        reclaim_timeout: settings.reclaim_timeout,
    });
    let stopped = |mut stop: watch::Receiver<bool>| async move {
        let _ = stop.wait_for(|s| *s).await;
    };

    // An Agent hears about its ClusterDeployment and that cluster's AgentClusterInstall.
    let (by_cd, by_aci) = (agents.clone(), agents.clone());
    let agent_loop = agent_controller
        .watches(
            Api::<ClusterDeployment>::all(client.clone()),
            watcher::Config::default(),
            move |cd| agents_of(&by_cd, &cd.namespace().unwrap_or_default(), &cd.name_any()),
        )
        .watches(
            Api::<AgentClusterInstall>::all(client.clone()),
            watcher::Config::default(),
            move |aci| {
                let cd = aci.spec.cluster_deployment_ref.name.clone();
                agents_of(&by_aci, &aci.namespace().unwrap_or_default(), &cd)
            },
        )
        .graceful_shutdown_on(stopped(stop.clone()))
        .run(reconcile_agent_object, error_policy, shared.clone())
        .for_each(|_| async {});

    // A ClusterDeployment hears about its AgentClusterInstall (which makes it an agent
    // cluster, whose finalizer it then gets).
    let cd_loop = Controller::new(
        Api::<ClusterDeployment>::all(client.clone()),
        watcher::Config::default(),
    )
    .watches(
        Api::<AgentClusterInstall>::all(client.clone()),
        watcher::Config::default(),
        |aci| {
            let ns = aci.namespace().unwrap_or_default();
            Some(ObjectRef::new(&aci.spec.cluster_deployment_ref.name).within(&ns))
        },
    )
    .graceful_shutdown_on(stopped(stop.clone()))
    .run(reconcile_cluster_deployment, error_policy, shared.clone())
    .for_each(|_| async {});

    let ie_cds = infra_envs.clone();
    let deleting = infra_envs.clone();
    let ie_loop = Controller::new(
        Api::<InfraEnv>::all(client.clone()),
        watcher::Config::default(),
    )
    .watches(
        Api::<ClusterDeployment>::all(client.clone()),
        watcher::Config::default(),
        move |cd| {
            let (ns, name) = (cd.namespace().unwrap_or_default(), cd.name_any());
            ie_cds
                .state()
                .into_iter()
                .filter(|ie| {
                    ie.spec
                        .cluster_ref
                        .as_ref()
                        .is_some_and(|r| r.namespace == ns && r.name == name)
                })
                .map(|ie| ObjectRef::from_obj(&*ie))
                .collect::<Vec<_>>()
        },
    )
    // An InfraEnv being deleted hears about its Agents (the hosts it waits for).
    .watches(
        Api::<Agent>::all(client.clone()),
        watcher::Config::default(),
        move |agent| {
            let ns = agent.namespace().unwrap_or_default();
            let key = ObjectRef::new(infra_env_name(&agent)).within(&ns);
            (deleting.get(&key))
                .filter(|ie| ie.meta().deletion_timestamp.is_some())
                .map(|ie| ObjectRef::from_obj(&*ie))
        },
    )
    .graceful_shutdown_on(stopped(stop.clone()))
    .run(reconcile_infra_env, error_policy, shared.clone())
    .for_each(|_| async {});

    tokio::join!(agent_loop, cd_loop, ie_loop);
    for task in tasks {
        task.abort();
    }
}

/// The Agents that reference the ClusterDeployment `namespace/name`, or are bound to it.
fn agents_of(agents: &Store<Agent>, namespace: &str, name: &str) -> Vec<ObjectRef<Agent>> {
    let is = |r: Option<&super::types::ClusterReference>| {
        r.is_some_and(|r| r.namespace == namespace && r.name == name)
    };
    agents
        .state()
        .into_iter()
        .filter(|a| {
            is(a.spec.cluster_deployment_name.as_ref())
                || is(a
                    .status
                    .as_ref()
                    .and_then(|s| s.bound_cluster_deployment.as_ref()))
        })
        .map(|a| ObjectRef::from_obj(&*a))
        .collect()
}

fn error_policy<K>(_object: Arc<K>, error: &ReconcileError, _shared: Arc<Shared>) -> Action {
    let stale = matches!(error, ReconcileError::Write { source: kube::Error::Api(s), .. } if s.code == 409 || s.code == 404);
    match stale {
        true => Action::requeue(Duration::from_millis(200)),
        false => {
            tracing::warn!(%error, "reconcile failed");
            Action::requeue(Duration::from_secs(5))
        }
    }
}

fn has_finalizer<K: Resource>(object: &K, finalizer: &str) -> bool {
    object
        .meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// A merge patch of `metadata.finalizers` adding or removing `finalizer`, guarded by the
/// object's resourceVersion (finalizer lists are replaced whole).
fn finalizers_patch<K: Resource>(object: &K, finalizer: &str, present: bool) -> serde_json::Value {
    let mut list: Vec<String> = object.meta().finalizers.clone().unwrap_or_default();
    list.retain(|f| f != finalizer);
    if present {
        list.push(finalizer.to_owned());
    }
    json!({"metadata": {"finalizers": list, "resourceVersion": object.meta().resource_version}})
}

async fn reconcile_agent_object(
    agent: Arc<Agent>,
    shared: Arc<Shared>,
) -> Result<Action, ReconcileError> {
    observed(&shared, "agents", agent_reconcile(&agent, &shared)).await
}

/// Runs one reconcile of `controller`, counting it and its duration in the host's metrics.
async fn observed(
    shared: &Shared,
    controller: &'static str,
    reconcile: impl std::future::Future<Output = Result<Action, ReconcileError>>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let result = reconcile.await;
    let label = if result.is_ok() { "success" } else { "error" };
    (shared.host.metrics).observe_reconcile(controller, label, started.elapsed());
    result
}

async fn agent_reconcile(agent: &Agent, shared: &Shared) -> Result<Action, ReconcileError> {
    let (namespace, name) = (agent.namespace().unwrap_or_default(), agent.name_any());
    let api: Api<Agent> = Api::namespaced(shared.client.clone(), &namespace);
    if agent.meta().deletion_timestamp.is_some() {
        // Deregistering the host: nothing is kept outside the Agent.
        if has_finalizer(agent, FINALIZER_AGENT) {
            let patch = finalizers_patch(agent, FINALIZER_AGENT, false);
            merge_patch(shared, "agents", &api, "Agent", &name, &patch).await?;
        }
        return Ok(Action::await_change());
    }
    let infra_env = shared
        .infra_envs
        .get(&ObjectRef::new(infra_env_name(agent)).within(&namespace));
    let (cd, aci) = match &agent.spec.cluster_deployment_name {
        None => (None, None),
        Some(r) => {
            let cd = shared
                .cluster_deployments
                .get(&ObjectRef::new(&r.name).within(&r.namespace));
            let aci = cd.as_ref().and_then(|cd| {
                let install = cd.spec.cluster_install_ref.as_ref()?;
                shared
                    .installs
                    .get(&ObjectRef::new(&install.name).within(&r.namespace))
            });
            (cd, aci)
        }
    };
    let cluster_hostnames = match &agent.spec.cluster_deployment_name {
        None => Vec::new(),
        Some(cd) => hostnames_bound_to(&shared.agents, cd, agent),
    };
    // `cvo` cannot start a reclaim agent on a spoke cluster: the spoke counts as reachable
    // while the host's ClusterDeployment exists (`cvo agent simulate` plays the reclaim agent).
    let bound_cd = (agent.status.as_ref()).and_then(|s| s.bound_cluster_deployment.as_ref());
    let reclaim = ReclaimContext {
        image_service: shared.reclaim,
        bare_metal_host: agent.labels().contains_key(LABEL_BMH),
        spoke_reachable: bound_cd.is_some_and(|cd| {
            (shared.cluster_deployments)
                .get(&ObjectRef::new(&cd.name).within(&cd.namespace))
                .is_some()
        }),
    };
    let ctx = AgentContext {
        reclaim,
        cluster_hostnames: &cluster_hostnames,
        infra_env: infra_env.as_deref(),
        cluster: cd.as_deref().map(|cd| ClusterView {
            cd,
            aci: aci.as_deref(),
        }),
        now: Timestamp::now(),
        requirements: shared.requirements,
        reclaim_timeout: shared.reclaim_timeout,
    };
    let plan = reconcile_agent(agent, &ctx);
    let mut labels = plan.labels.clone();
    labels.insert(
        LABEL_CLUSTER_DEPLOYMENT_NAMESPACE.to_owned(),
        plan.cluster_namespace_label.clone(),
    );
    let stale: serde_json::Map<String, serde_json::Value> = (labels.iter())
        .filter(|(k, v)| agent.labels().get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let annotate = !plan.labels.is_empty()
        && agent
            .annotations()
            .get(ANN_INVENTORY_VERSION)
            .map(String::as_str)
            != Some(INVENTORY_LABELS_VERSION);
    if !has_finalizer(agent, FINALIZER_AGENT) || !stale.is_empty() || annotate || plan.approve {
        let mut patch = finalizers_patch(agent, FINALIZER_AGENT, true);
        if !stale.is_empty() {
            patch["metadata"]["labels"] = serde_json::Value::Object(stale);
        }
        if annotate {
            patch["metadata"]["annotations"] =
                json!({ANN_INVENTORY_VERSION: INVENTORY_LABELS_VERSION});
        }
        if plan.approve {
            patch["spec"] = json!({"approved": true});
        }
        merge_patch(shared, "agents", &api, "Agent", &name, &patch).await?;
        // The status is written on the next reconcile (the patch changed the object).
        return Ok(Action::requeue(Duration::from_millis(10)));
    }
    if agent.status.as_ref() != Some(&plan.status) {
        let mut next = agent.clone();
        let mut status = plan.status.clone();
        let now = Timestamp::now().to_string();
        for c in &mut status.conditions {
            if c.last_transition_time.is_none() {
                c.last_transition_time = Some(now.clone());
            }
        }
        next.status = Some(status);
        api.replace_status(&name, &PostParams::default(), &next)
            .await
            .map_err(write_error("update status of", "Agent", &name))?;
        shared
            .host
            .metrics
            .observe_write("agents", "Agent", "update-status");
    }
    for event in &plan.events {
        publish(shared, agent, event).await;
    }
    Ok(match plan.requeue_after {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

/// The hostnames of the agents other than `agent` bound to the ClusterDeployment `cd`.
fn hostnames_bound_to(
    agents: &Store<Agent>,
    cd: &super::types::ClusterReference,
    agent: &Agent,
) -> Vec<String> {
    let me = (agent.namespace(), agent.name_any());
    agents
        .state()
        .iter()
        .filter(|a| (a.namespace(), a.name_any()) != me)
        .filter(|a| {
            (a.status.as_ref()).and_then(|s| s.bound_cluster_deployment.as_ref()) == Some(cd)
        })
        .map(|a| real_hostname(a).to_owned())
        .filter(|h| !h.is_empty())
        .collect()
}

/// Records `event` (skipped when its object is gone), with the Agent as related object.
async fn publish(shared: &Shared, agent: &Agent, event: &HostEventRecord) {
    let Some(reference) = scope_reference(shared, &event.scope) else {
        return;
    };
    let kube_event = KubeEvent {
        type_: match event.warning {
            true => EventType::Warning,
            false => EventType::Normal,
        },
        reason: event.reason.to_owned(),
        note: Some(event.message.clone()),
        action: event.action.clone(),
        secondary: Some(agent.object_ref(&())),
    };
    if let Err(e) = shared.recorder.publish(&kube_event, &reference).await {
        tracing::debug!(error = %e, "cannot record an Event");
    }
}

/// The object an Event is recorded on (it must exist: an Event needs its uid).
fn scope_reference(shared: &Shared, scope: &EventScope) -> Option<ObjectReference> {
    match scope {
        EventScope::InfraEnv { namespace, name } => shared
            .infra_envs
            .get(&ObjectRef::new(name).within(namespace))
            .map(|ie| ie.object_ref(&())),
        EventScope::ClusterDeployment(cd) => shared
            .cluster_deployments
            .get(&ObjectRef::new(&cd.name).within(&cd.namespace))
            .map(|cd| cd.object_ref(&())),
    }
}

async fn reconcile_cluster_deployment(
    cd: Arc<ClusterDeployment>,
    shared: Arc<Shared>,
) -> Result<Action, ReconcileError> {
    observed(
        &shared,
        "clusterdeployments",
        cluster_deployment_reconcile(&cd, &shared),
    )
    .await
}

async fn cluster_deployment_reconcile(
    cd: &ClusterDeployment,
    shared: &Shared,
) -> Result<Action, ReconcileError> {
    let (namespace, name) = (cd.namespace().unwrap_or_default(), cd.name_any());
    let api: Api<ClusterDeployment> = Api::namespaced(shared.client.clone(), &namespace);
    let present = has_finalizer(cd, FINALIZER_CLUSTER_DEPLOYMENT);
    if cd.meta().deletion_timestamp.is_none() {
        // Only clusters installed from agents (upstream's `isSupportedPlatform`), whose
        // AgentClusterInstall exists: hive's other ClusterDeployments are not ours to hold.
        let agent_cluster = (cd.spec.cluster_install_ref.as_ref()).is_some_and(|r| {
            r.group == ACI_GROUP
                && r.kind == "AgentClusterInstall"
                && (shared.installs)
                    .get(&ObjectRef::new(&r.name).within(&namespace))
                    .is_some()
        });
        if !present && agent_cluster {
            let patch = finalizers_patch(cd, FINALIZER_CLUSTER_DEPLOYMENT, true);
            merge_patch(
                shared,
                "clusterdeployments",
                &api,
                "ClusterDeployment",
                &name,
                &patch,
            )
            .await?;
        }
        return Ok(Action::await_change());
    }
    if !present {
        return Ok(Action::await_change());
    }
    let agents = shared.agents.state();
    let infra_envs: Vec<Option<Arc<InfraEnv>>> = agents
        .iter()
        .map(|a| {
            let ns = a.namespace().unwrap_or_default();
            shared
                .infra_envs
                .get(&ObjectRef::new(infra_env_name(a)).within(&ns))
        })
        .collect();
    let pairs = agents
        .iter()
        .zip(&infra_envs)
        .map(|(a, ie)| (&**a, ie.as_deref()));
    let mut refused = false;
    for (agent, verdict) in teardown_agents(cd, pairs) {
        let (ns, agent_name) = (agent.namespace().unwrap_or_default(), agent.name_any());
        let agents_api: Api<Agent> = Api::namespaced(shared.client.clone(), &ns);
        match verdict {
            Teardown::Delete => {
                match agents_api
                    .delete(&agent_name, &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(write_error("delete", "Agent", &agent_name)(e)),
                }
                (shared.host.metrics).observe_write("clusterdeployments", "Agent", "delete");
            }
            Teardown::Unbind => {
                // An installing host is cancelled first: the webhook refuses its unbind.
                if let Some((status, event)) = cancel_for_teardown(agent) {
                    let mut next = agent.clone();
                    next.status = Some(status);
                    agents_api
                        .replace_status(&agent_name, &PostParams::default(), &next)
                        .await
                        .map_err(write_error("update status of", "Agent", &agent_name))?;
                    (shared.host.metrics).observe_write(
                        "clusterdeployments",
                        "Agent",
                        "update-status",
                    );
                    publish(shared, agent, &event).await;
                }
                let patch = json!({"spec": {"clusterDeploymentName": null}});
                let unbound = merge_patch(
                    shared,
                    "clusterdeployments",
                    &agents_api,
                    "Agent",
                    &agent_name,
                    &patch,
                )
                .await;
                match unbound {
                    Ok(()) => {}
                    // Refused by the webhook (a state without a cancel rule): not retried in
                    // a loop; the ClusterDeployment waits and looks again later. A 403 from
                    // missing RBAC is an error, not a refusal.
                    Err(ReconcileError::Write {
                        source: kube::Error::Api(s),
                        ..
                    }) if (s.code == 400 || s.code == 403)
                        && s.message.contains("denied the request") =>
                    {
                        tracing::warn!(agent = %agent_name, message = %s.message, "teardown: the unbind was refused; retrying later");
                        refused = true;
                    }
                    Err(e) => return Err(e),
                }
            }
            Teardown::Keep => {}
        }
    }
    if refused {
        return Ok(Action::requeue(TEARDOWN_RETRY));
    }
    let patch = finalizers_patch(cd, FINALIZER_CLUSTER_DEPLOYMENT, false);
    merge_patch(
        shared,
        "clusterdeployments",
        &api,
        "ClusterDeployment",
        &name,
        &patch,
    )
    .await?;
    Ok(Action::await_change())
}

async fn reconcile_infra_env(
    infra_env: Arc<InfraEnv>,
    shared: Arc<Shared>,
) -> Result<Action, ReconcileError> {
    observed(
        &shared,
        "infraenvs",
        infra_env_reconcile(&infra_env, &shared),
    )
    .await
}

/// How long an InfraEnv being deleted waits for its remaining hosts before it looks again
/// (upstream's `longerRequeueAfterOnError`; a change of one of its Agents is sooner).
const INFRA_ENV_RETRY: Duration = Duration::from_secs(60);

async fn infra_env_reconcile(
    infra_env: &InfraEnv,
    shared: &Shared,
) -> Result<Action, ReconcileError> {
    let (namespace, name) = (
        infra_env.namespace().unwrap_or_default(),
        infra_env.name_any(),
    );
    let api: Api<InfraEnv> = Api::namespaced(shared.client.clone(), &namespace);
    let present = has_finalizer(infra_env, FINALIZER_INFRAENV);
    if infra_env.meta().deletion_timestamp.is_some() {
        if !present {
            return Ok(Action::await_change());
        }
        // The API's list, not the cache: an Agent registered a moment ago must not be left
        // behind with no InfraEnv once the finalizer goes.
        let agents_api: Api<Agent> = Api::namespaced(shared.client.clone(), &namespace);
        let selector = format!("{LABEL_INFRAENV}={name}");
        let agents = (agents_api
            .list(&ListParams::default().labels(&selector))
            .await)
            .map_err(write_error("list", "Agent", &selector))?
            .items;
        let deletion = infra_env_deletion(infra_env, agents.iter());
        // Agents already being deleted (their own finalizer) need nothing more.
        let to_delete: Vec<&Agent> = (deletion.delete.iter().copied())
            .filter(|a| a.metadata.deletion_timestamp.is_none())
            .collect();
        for agent in &to_delete {
            let agent_name = agent.name_any();
            // Only the Agent as decided on: one that changed since (a host that began binding)
            // is decided again on the next look.
            let guarded = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: agent.uid(),
                    resource_version: agent.resource_version(),
                }),
                ..DeleteParams::default()
            };
            match agents_api.delete(&agent_name, &guarded).await {
                Ok(_) => (shared.host.metrics).observe_write("infraenvs", "Agent", "delete"),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    return Ok(Action::requeue(Duration::from_millis(200)));
                }
                Err(e) => return Err(write_error("delete", "Agent", &agent_name)(e)),
            }
        }
        if !to_delete.is_empty() {
            // Look again (a fresh list) before the finalizer goes.
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        if !deletion.remaining.is_empty() {
            let waiting: Vec<String> = deletion.remaining.iter().map(|a| a.name_any()).collect();
            tracing::info!(infraenv = %name, agents = ?waiting, "{INFRA_ENV_HOSTS_REMAIN}");
            return Ok(Action::requeue(INFRA_ENV_RETRY));
        }
        let patch = finalizers_patch(infra_env, FINALIZER_INFRAENV, false);
        merge_patch(shared, "infraenvs", &api, "InfraEnv", &name, &patch).await?;
        return Ok(Action::await_change());
    }
    if !present {
        let patch = finalizers_patch(infra_env, FINALIZER_INFRAENV, true);
        merge_patch(shared, "infraenvs", &api, "InfraEnv", &name, &patch).await?;
        // The status is written on the next reconcile (the patch changed the object).
        return Ok(Action::requeue(Duration::from_millis(10)));
    }
    let cluster = match &infra_env.spec.cluster_ref {
        None => InfraEnvCluster::Found,
        Some(r) => {
            let cd =
                (shared.cluster_deployments).get(&ObjectRef::new(&r.name).within(&r.namespace));
            match cd {
                None => InfraEnvCluster::CdMissing,
                Some(cd) => {
                    let install = cd.spec.cluster_install_ref.as_ref().map(|i| i.name.clone());
                    let registered = install.as_ref().is_some_and(|name| {
                        (shared.installs)
                            .get(&ObjectRef::new(name).within(&r.namespace))
                            .is_some()
                    });
                    match registered {
                        true => InfraEnvCluster::Found,
                        false => InfraEnvCluster::NotRegistered { install },
                    }
                }
            }
        }
    };
    let mut status = infra_env_status(infra_env, &cluster);
    if infra_env.status.as_ref() == Some(&status) {
        Ok(Action::await_change())
    } else {
        let now = Timestamp::now().to_string();
        for c in &mut status.conditions {
            if c.last_transition_time.is_none() {
                c.last_transition_time = Some(now.clone());
            }
        }
        let mut next = infra_env.clone();
        next.status = Some(status);
        api.replace_status(&name, &PostParams::default(), &next)
            .await
            .map(|_| Action::await_change())
            .map_err(write_error("update status of", "InfraEnv", &name))
    }
}
