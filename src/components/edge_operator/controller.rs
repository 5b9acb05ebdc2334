//! The kube shell of the edge agent's operator (`cvo controller edge-agent`): it watches the
//! hub settings (the ConfigMap `openhorizon-agent-config`, the Secret
//! `openhorizon-agent-secrets`) and the agent's Deployment and CronJob, by name, in its
//! namespace; on every change (and every resync interval) it reads them, decides with
//! [`super::hub`] and [`super::status`], applies or removes the agent ([`super::operand`]) and
//! writes the ClusterOperator `edge-agent`.
//!
//! It never touches an agent object it did not make (one `agent-install.sh` made, say): it
//! reports it and stands down.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, stream};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};

use super::hub::{self, CERTIFICATE_KEY, Found, HORIZON_KEY};
use super::operand::{agent_objects, is_ours};
use super::status::{AgentState, agent_state, next_status};
use super::{COMPONENT, OPERATOR};
use crate::cluster::ClusterOperator;
use crate::components::edge::agent_install::{CONFIG_MAP, CRON_JOB, DEPLOYMENT, SECRET};
use crate::host::cluster_operator::write_cluster_operator;
use crate::host::controller::{Component, ComponentError, HostHandle, watch_error_logger};
use crate::retry::RetryNotice;

/// The namespaced kinds this shell reads, watches and writes.
trait Namespaced:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + 'static
{
}

impl<K> Namespaced for K where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static
{
}

/// The field manager of the agent objects it applies.
const FIELD_MANAGER: &str = "cvo-edge-agent";
/// The name of its reconciles in the controller metrics.
const CONTROLLER: &str = "edge-agent";

/// `cvo controller edge-agent`'s flags.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The version the ClusterOperator reports.
    pub version: String,
    /// Where the agent runs (the payload's `openhorizon-agent`), and the operator with it.
    pub namespace: String,
    /// The agent image (the payload's `openhorizon-agent` tag).
    pub agent_image: String,
    /// How often it reconciles without a change.
    pub resync: Duration,
}

/// The operator, as the host runs it.
pub struct EdgeAgentOperator {
    pub settings: Settings,
}

impl Component for EdgeAgentOperator {
    fn name(&self) -> &'static str {
        COMPONENT
    }

    fn run(
        self: Arc<Self>,
        host: HostHandle,
        stop: watch::Receiver<bool>,
    ) -> Pin<Box<dyn Future<Output = Result<(), ComponentError>> + Send>> {
        Box::pin(async move { run(&self.settings, host, stop).await })
    }
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("{verb} {kind} {name}: {source}")]
    Api {
        verb: &'static str,
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("cannot render the agent: {0}")]
    Render(String),
}

fn api_error(
    verb: &'static str,
    kind: &'static str,
    name: &str,
) -> impl FnOnce(kube::Error) -> ReconcileError {
    let name = name.to_owned();
    move |source| ReconcileError::Api {
        verb,
        kind,
        name,
        source,
    }
}

async fn run(
    settings: &Settings,
    host: HostHandle,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ComponentError> {
    let client = host.client.clone();
    let ns = settings.namespace.as_str();
    // Any change to a watched object wakes the loop; wakes coalesce.
    let (wake, mut woken) = mpsc::channel::<()>(1);
    let watches = stream::select_all([
        changes::<ConfigMap>(&client, ns, CONFIG_MAP),
        changes::<Secret>(&client, ns, SECRET),
        changes::<Deployment>(&client, ns, DEPLOYMENT),
        changes::<CronJob>(&client, ns, CRON_JOB),
    ]);
    let watching = tokio::spawn(watches.for_each(move |()| {
        let _ = wake.try_send(());
        async {}
    }));
    let operators: Api<ClusterOperator> = Api::all(client.clone());
    let mut synced = false;
    // Each reason is logged once (and its recovery), not at every attempt.
    let mut reconciling = RetryNotice::new("reconciling the edge agent", None);
    let mut reporting = RetryNotice::new(format!("updating the ClusterOperator {OPERATOR}"), None);
    let log = |line: Option<String>| {
        if let Some(line) = line {
            tracing::warn!("{line}");
        }
    };
    loop {
        let started = Instant::now();
        let outcome = reconcile(&client, settings).await;
        let result = match &outcome {
            Ok(_) => "success",
            Err(_) => "error",
        };
        host.metrics
            .observe_reconcile(CONTROLLER, result, started.elapsed());
        match outcome {
            Ok(state) => {
                log(reconciling.succeeded());
                let status = |previous: Option<&_>, now: &_| {
                    next_status(previous, &state, &settings.version, now)
                };
                match write_cluster_operator(&operators, OPERATOR, status).await {
                    Ok(()) => {
                        log(reporting.succeeded());
                        if !synced {
                            synced = true;
                            host.metrics.set_synced();
                        }
                    }
                    Err(e) => log(reporting.failed(&e.to_string())),
                }
            }
            Err(e) => log(reconciling.failed(&e.to_string())),
        }
        let wait = match result {
            "success" => settings.resync,
            _ => settings.resync.min(Duration::from_secs(5)),
        };
        tokio::select! {
            _ = woken.recv() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => break,
        }
    }
    watching.abort();
    Ok(())
}

/// A unit item per change of the object `name` (a watch by name: RBAC may name it).
fn changes<K>(client: &Client, ns: &str, name: &str) -> stream::BoxStream<'static, ()>
where
    K: Namespaced,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut logged = watch_error_logger(&format!("{} {ns}/{name}", K::kind(&())));
    watcher(api, config)
        .default_backoff()
        .filter_map(move |event| {
            logged(&event);
            std::future::ready(event.ok().map(drop))
        })
        .boxed()
}

async fn get<K>(client: &Client, ns: &str, name: &str) -> Result<Option<K>, ReconcileError>
where
    K: Namespaced,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.get_opt(name)
        .await
        .map_err(api_error("get", kind_of::<K>(), name))
}

/// The kinds this shell reads and writes, by name for errors.
fn kind_of<K: Resource<DynamicType = ()>>() -> &'static str {
    match K::kind(&()).as_ref() {
        "ConfigMap" => "ConfigMap",
        "Secret" => "Secret",
        "Deployment" => "Deployment",
        _ => "CronJob",
    }
}

/// Server-side applies `object` as the operator.
async fn apply<K>(
    client: &Client,
    ns: &str,
    object: &serde_json::Value,
) -> Result<K, ReconcileError>
where
    K: Namespaced,
{
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(api_error("apply", kind_of::<K>(), name))
}

/// One pass: read, decide, converge the agent objects; the state to report.
async fn reconcile(client: &Client, settings: &Settings) -> Result<AgentState, ReconcileError> {
    let ns = settings.namespace.as_str();
    let config: Option<ConfigMap> = get(client, ns, CONFIG_MAP).await?;
    let secret: Option<Secret> = get(client, ns, SECRET).await?;
    let deployment: Option<Deployment> = get(client, ns, DEPLOYMENT).await?;
    let cron_job: Option<CronJob> = get(client, ns, CRON_JOB).await?;

    let horizon = match &config {
        None => Found::NoObject,
        Some(c) => match c.data.as_ref().and_then(|d| d.get(HORIZON_KEY)) {
            Some(text) => Found::Value(text.as_str()),
            None => Found::NoKey,
        },
    };
    let certificate = match &secret {
        None => Found::NoObject,
        Some(s) => match s.data.as_ref().and_then(|d| d.get(CERTIFICATE_KEY)) {
            Some(bytes) => Found::Value(bytes.0.as_slice()),
            None => Found::NoKey,
        },
    };
    let hub = hub::read(ns, horizon, certificate);

    let foreign: Vec<String> = [
        deployment
            .as_ref()
            .map(|d| (d.labels(), "Deployment", DEPLOYMENT)),
        cron_job.as_ref().map(|c| (c.labels(), "CronJob", CRON_JOB)),
    ]
    .into_iter()
    .flatten()
    .filter(|(labels, _, _)| !is_ours(Some(labels)))
    .map(|(_, kind, name)| format!("{kind} {ns}/{name}"))
    .collect();
    if !foreign.is_empty() {
        return Ok(AgentState::NotOurs { objects: foreign });
    }

    match &hub {
        Ok(ready) => {
            let objects = agent_objects(ready, ns, &settings.agent_image)
                .map_err(|e| ReconcileError::Render(e.to_string()))?;
            let mut applied = None;
            for object in &objects {
                match object["kind"].as_str() {
                    Some("Deployment") => {
                        applied = Some(apply::<Deployment>(client, ns, object).await?)
                    }
                    _ => drop(apply::<CronJob>(client, ns, object).await?),
                }
            }
            Ok(agent_state(&hub, applied.as_ref()))
        }
        Err(_) => {
            // No settings, no agent: remove the one made for earlier settings.
            if deployment.is_some() {
                delete::<Deployment>(client, ns, DEPLOYMENT).await?;
            }
            if cron_job.is_some() {
                delete::<CronJob>(client, ns, CRON_JOB).await?;
            }
            Ok(agent_state(&hub, None))
        }
    }
}

async fn delete<K>(client: &Client, ns: &str, name: &str) -> Result<(), ReconcileError>
where
    K: Namespaced,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(api_error("delete", kind_of::<K>(), name)(e)),
    }
}
