//! The executor of one apply pass (spec §7.2): every task of the run-level graph, in graph
//! order, applied with server-side apply as the CVO's field manager.
//!
//! The decisions are pure and live elsewhere ([`super::task`]: the action, upstream reasons,
//! owner references, the report; [`super::health`]: workload and ClusterOperator health);
//! this module drives [`Scheduler`] with tokio tasks, resolves each manifest's kind through
//! discovery (refreshed after a CRD is applied, and on a miss), and collects the
//! [`ApplyReport`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind as KubeGvk;
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use serde::de::DeserializeOwned;
use tokio::sync::RwLock;
use tokio::task::JoinSet;

use super::deletions::{DeleteDecision, DeletedResource, Deletions};
use super::outcome::{ApplyReport, Effect};
use super::stand_down::stand_down;
use super::task::{
    Action, ApplyErrorText, ClusterVersionOwner, FIELD_MANAGER, InvalidDeleteAnnotation, Outcome,
    action, applied_object, reason_for_status, report,
};
use crate::graph::{Mode, Scheduler, TaskGraph};
use crate::include::{InclusionConfig, include};
use crate::manifest::{Manifest, go_quote};
use crate::operator::health::{
    WorkloadHealthError, check_daemonset, check_deployment, check_job, deployment_state_unknown,
};

/// Why a task failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    InvalidDeleteAnnotation(#[from] InvalidDeleteAnnotation),
    /// The kind is not served, even after refreshing discovery (upstream `meta.NoKindMatchError`).
    #[error(
        "no matches for kind {} in version {}",
        go_quote(kind),
        go_quote(api_version)
    )]
    NoMatch { api_version: String, kind: String },
    #[error("CustomResourceDefinition {name} is not Established after {seconds}s")]
    NotEstablished { name: String, seconds: u64 },
    #[error("the manifest is not a JSON object")]
    NotAnObject,
    /// The object the server returned does not read as its kind.
    #[error("cannot read the applied object: {0}")]
    Unreadable(#[from] serde_json::Error),
    /// An applied Deployment, DaemonSet or Job is not healthy (spec §7.3).
    #[error(transparent)]
    Workload(#[from] WorkloadHealthError),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl ApplyError {
    /// Upstream `reasonForPayloadSyncError`: the reason and the cause appended to the message.
    pub fn reason(&self) -> (&'static str, &'static str) {
        match self {
            ApplyError::Kube(e) => reason_for(e),
            ApplyError::NoMatch { .. } => (
                "UpdatePayloadResourceTypeMissing",
                "the server does not recognize this resource, check extension API servers",
            ),
            _ => ("UpdatePayloadFailed", ""),
        }
    }

    /// Whether another attempt may help: not for errors that only depend on the manifest, nor
    /// after a CRD wait that already took its full time, nor for the workload errors upstream
    /// returns as an `UpdateError` (it fails fast on those, and retries its plain errors).
    fn retryable(&self) -> bool {
        match self {
            ApplyError::Kube(_) | ApplyError::NoMatch { .. } => true,
            ApplyError::Workload(e) => e.update_reason().is_none(),
            _ => false,
        }
    }

    /// The failed task this error makes: upstream's `UpdateError`, either the one a workload
    /// check returned as is, or `Could not update <task>[: <cause>]` around any other error.
    fn failure(&self) -> ApplyErrorText {
        if let ApplyError::Workload(e) = self
            && let Some(reason) = e.update_reason()
        {
            return ApplyErrorText {
                reason,
                cause: "",
                error: e.nested(),
                message: Some(e.to_string()),
                effect: Effect::Fail,
                name: e.name().map(str::to_string),
            };
        }
        let (reason, cause) = self.reason();
        ApplyErrorText {
            reason,
            cause,
            error: self.to_string(),
            message: None,
            effect: Effect::Fail,
            name: None,
        }
    }
}

/// [`reason_for_status`] for any kube error; errors without an API status (connection,
/// serialization) are `UpdatePayloadFailed` with no cause, as upstream's default case.
pub fn reason_for(err: &kube::Error) -> (&'static str, &'static str) {
    match err {
        kube::Error::Api(status) => reason_for_status(status),
        _ => ("UpdatePayloadFailed", ""),
    }
}

/// How one pass applies: retry and wait bounds, the sync state, the owner of what it applies.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Attempts per task for errors that may be transient (at least 1).
    pub attempts: usize,
    /// Sleep before the second attempt; doubled before each later one.
    pub retry_interval: Duration,
    /// How long to wait for an applied CRD to become Established.
    pub crd_timeout: Duration,
    /// Wait on ClusterOperator manifests (spec §5.4): pre-create the operator when absent and
    /// check its health ([`crate::operator::health`]); a healthy operator is a done task, an
    /// unhealthy one a failed task. Off: they are only reported as waited on.
    pub check_cluster_operators: bool,
    /// The Initializing state: operators are not waited on for their versions, and workloads
    /// are not checked.
    pub initializing: bool,
    /// The ClusterVersion every applied object is owned by (spec §7.3); none: owner
    /// references are left as the manifests have them.
    pub owner: Option<ClusterVersionOwner>,
    /// The operator's memory of the payload's deletions (sent once, tracked until gone);
    /// none: every pass in the Updating mode sends the DELETE again (`cvo apply`).
    pub deletions: Option<Arc<Mutex<Deletions>>>,
}

impl Default for ApplyOptions {
    /// 5 attempts 0.2 s, 0.4 s, 0.8 s, 1.6 s apart: enough for a CRD applied in a parallel node
    /// (install mode) to be served before its custom resources give up.
    fn default() -> Self {
        ApplyOptions {
            attempts: 5,
            retry_interval: Duration::from_millis(200),
            crd_timeout: Duration::from_secs(30),
            check_cluster_operators: false,
            initializing: false,
            owner: None,
            deletions: None,
        }
    }
}

/// The workload checks of spec §7.3 over the object an apply returned: Deployments, DaemonSets
/// and Jobs of their exact upstream GVKs; anything else is healthy.
fn check_workload(manifest: &Manifest, applied: &DynamicObject) -> Result<(), ApplyError> {
    let gvk = &manifest.gvk;
    match (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()) {
        ("apps", "v1", "Deployment") => {
            let deployment: Deployment = typed(applied)?;
            if deployment_state_unknown(&deployment) {
                let meta = &deployment.metadata;
                tracing::warn!(
                    "deployment {}/{} is not setting any expected conditions, and is therefore in an unknown state",
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default()
                );
            }
            Ok(check_deployment(&deployment)?)
        }
        ("apps", "v1", "DaemonSet") => Ok(check_daemonset(&typed::<DaemonSet>(applied)?)?),
        ("batch", "v1", "Job") => Ok(check_job(&typed::<Job>(applied)?)?),
        _ => Ok(()),
    }
}

fn typed<K: DeserializeOwned>(object: &DynamicObject) -> Result<K, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(object)?)
}

/// [`apply_payload_with`] with the default [`ApplyOptions`].
pub async fn apply_payload(
    client: &kube::Client,
    manifests: &[&Manifest],
    config: &InclusionConfig,
    mode: Mode,
    workers: usize,
) -> ApplyReport {
    apply_payload_with(
        client,
        manifests,
        config,
        mode,
        workers,
        &ApplyOptions::default(),
    )
    .await
}

/// One apply pass over `manifests` (already load-filtered): the task graph for `mode`, up to
/// `workers` nodes at once; a failed task aborts the rest of its node and blocks its
/// dependents. Each task is first checked against the apply-time filters of `config`
/// (capabilities, overrides, feature gates; skipped silently when excluded).
pub async fn apply_payload_with(
    client: &kube::Client,
    manifests: &[&Manifest],
    config: &InclusionConfig,
    mode: Mode,
    workers: usize,
    options: &ApplyOptions,
) -> ApplyReport {
    let graph = TaskGraph::build(manifests, mode);
    apply_graph(client, manifests, &graph, mode, config, workers, options).await
}

/// [`apply_payload_with`] over the task graph already built from `manifests` for `mode`.
pub async fn apply_graph(
    client: &kube::Client,
    manifests: &[&Manifest],
    graph: &TaskGraph,
    mode: Mode,
    config: &InclusionConfig,
    workers: usize,
    options: &ApplyOptions,
) -> ApplyReport {
    let total = manifests.len();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        resolver: Resolver::new(client.clone()),
        config: config.apply_time(),
        mode,
        options: options.clone(),
        manifests: manifests.iter().map(|m| (*m).clone()).collect(),
    });
    let mut scheduler = Scheduler::new(graph);
    let mut running = JoinSet::new();
    let mut node_of = HashMap::new();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; total];
    let workers = workers.max(1);
    loop {
        while running.len() < workers {
            let Some(node) = scheduler.next_ready() else {
                break;
            };
            let tasks = graph.nodes[node].tasks.clone();
            let ctx = ctx.clone();
            let handle = running.spawn(async move { run_node(&ctx, &tasks).await });
            node_of.insert(handle.id(), node);
        }
        let Some(joined) = running.join_next_with_id().await else {
            break;
        };
        let (id, ok) = match joined {
            Ok((id, results)) => {
                let ok = !results.iter().any(|(_, o)| o.blocks());
                for (task, outcome) in results {
                    outcomes[task] = Some(outcome);
                }
                (id, ok)
            }
            Err(e) => {
                // A panicking task: its node failed; its tasks were attempted, with no result.
                let node = node_of.get(&e.id()).copied();
                for &task in node.map_or(&[][..], |n| &graph.nodes[n].tasks) {
                    outcomes[task].get_or_insert_with(|| {
                        Outcome::Failed(ApplyErrorText {
                            reason: "UpdatePayloadFailed",
                            cause: "",
                            error: format!("apply task panicked: {e}"),
                            message: None,
                            effect: Effect::Fail,
                            name: None,
                        })
                    });
                }
                (e.id(), false)
            }
        };
        if let Some(node) = node_of.remove(&id) {
            scheduler.finish(node, ok);
        }
    }
    report(manifests, outcomes)
}

struct Ctx {
    client: kube::Client,
    resolver: Resolver,
    config: InclusionConfig,
    mode: Mode,
    options: ApplyOptions,
    manifests: Vec<Manifest>,
}

/// The tasks of one node, in order; the first failure ends the node.
async fn run_node(ctx: &Ctx, tasks: &[usize]) -> Vec<(usize, Outcome)> {
    let mut results = Vec::with_capacity(tasks.len());
    for &task in tasks {
        let outcome = run_task(ctx, &ctx.manifests[task]).await;
        let failed = outcome.blocks();
        results.push((task, outcome));
        if failed {
            break;
        }
    }
    results
}

async fn run_task(ctx: &Ctx, manifest: &Manifest) -> Outcome {
    if include(manifest, &ctx.config).is_err() {
        return Outcome::Skipped;
    }
    let result = match action(manifest) {
        Ok(Action::WaitClusterOperator) if !ctx.options.check_cluster_operators => {
            return Outcome::Waiting;
        }
        Ok(Action::WaitClusterOperator) => {
            return match wait_cluster_operator(ctx, manifest).await {
                Ok(()) => Outcome::Done,
                Err(e) => e,
            };
        }
        Ok(action) => with_retries(ctx, manifest, action).await,
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(Applied::Done) => Outcome::Done,
        Ok(Applied::StoodDown(why)) => {
            tracing::info!(manifest = %manifest.describe(), %why, "stood down");
            Outcome::StoodDown(why)
        }
        Err(e) => {
            let failure = e.failure();
            tracing::warn!(manifest = %manifest.describe(), error = %e, reason = failure.reason, "apply failed");
            Outcome::Failed(failure)
        }
    }
}

/// What a task did that did not fail.
enum Applied {
    Done,
    /// Not applied: another operator owns what it would replace ([`super::stand_down`]).
    StoodDown(String),
}

async fn with_retries(
    ctx: &Ctx,
    manifest: &Manifest,
    action: Action,
) -> Result<Applied, ApplyError> {
    let mut sleep = ctx.options.retry_interval;
    let mut attempt = 1;
    loop {
        match act(ctx, manifest, action).await {
            Err(e) if e.retryable() && attempt < ctx.options.attempts => {
                tracing::debug!(manifest = %manifest.describe(), attempt, error = %e, "retrying");
                tokio::time::sleep(sleep).await;
                sleep *= 2;
                attempt += 1;
            }
            result => return result,
        }
    }
}

async fn act(ctx: &Ctx, manifest: &Manifest, action: Action) -> Result<Applied, ApplyError> {
    if matches!(action, Action::Apply | Action::CreateOnly)
        && let Some(why) = stand_down(&ctx.client, manifest, &ctx.manifests).await?
    {
        return Ok(Applied::StoodDown(why));
    }
    act_on(ctx, manifest, action).await.map(|()| Applied::Done)
}

async fn act_on(ctx: &Ctx, manifest: &Manifest, action: Action) -> Result<(), ApplyError> {
    let gvk = KubeGvk::gvk(
        &manifest.gvk.group,
        &manifest.gvk.version,
        &manifest.gvk.kind,
    );
    let (resource, caps) = ctx.resolver.resolve(&gvk).await?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Cluster => Api::all_with(ctx.client.clone(), &resource),
        // A namespaced manifest without a namespace goes where kubectl would put it.
        Scope::Namespaced if manifest.id.namespace.is_empty() => {
            Api::namespaced_with(ctx.client.clone(), "default", &resource)
        }
        Scope::Namespaced => {
            Api::namespaced_with(ctx.client.clone(), &manifest.id.namespace, &resource)
        }
    };
    let name = manifest.id.name.as_str();
    match action {
        Action::Apply => apply_and_check(ctx, &api, manifest).await,
        // An existing create-only object is not looked at any further, health included.
        Action::CreateOnly => match api.get_opt(name).await? {
            Some(_) => Ok(()),
            None => apply_and_check(ctx, &api, manifest).await,
        },
        Action::Delete if ctx.options.deletions.is_some() => {
            delete_tracked(ctx, &api, manifest).await
        }
        // Upstream only requests the deletion when updating; otherwise it observes. A missing
        // object counts as deleted.
        Action::Delete if ctx.mode == Mode::Update => {
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Action::Delete => {
            api.get_opt(name).await?;
            Ok(())
        }
        Action::WaitClusterOperator => Ok(()),
    }
}

/// A payload deletion with the operator's memory ([`Deletions`]): looked at, deleted once in
/// the Updating mode, in progress until seen gone.
async fn delete_tracked(
    ctx: &Ctx,
    api: &Api<DynamicObject>,
    manifest: &Manifest,
) -> Result<(), ApplyError> {
    let Some(deletions) = &ctx.options.deletions else {
        return Ok(());
    };
    let lock = || deletions.lock().unwrap_or_else(|e| e.into_inner());
    let name = manifest.id.name.as_str();
    let resource = DeletedResource::new(&manifest.gvk.kind, &manifest.id.namespace, name);
    let exists = api.get_opt(name).await?.is_some();
    let updating = ctx.mode == Mode::Update;
    if lock().observe(resource.clone(), exists, updating) == DeleteDecision::Nothing {
        return Ok(());
    }
    match api.delete(name, &DeleteParams::default()).await {
        // Still there, being finalized: in progress until a later look finds it gone.
        Ok(deleted) if deleted.is_left() => lock().requested(resource),
        // Gone at once. Upstream would still count it in progress until its next look, which
        // made the cluster not upgradeable for a pass; it is known gone, so it is not.
        Ok(_) => {
            lock().observe(resource, false, updating);
        }
        Err(kube::Error::Api(s)) if s.is_not_found() => {
            lock().observe(resource, false, updating);
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Pre-creates the ClusterOperator of `manifest` when absent (ignoring AlreadyExists; errors
/// only logged, as upstream), then checks its health against the manifest (spec §5.4).
async fn wait_cluster_operator(ctx: &Ctx, manifest: &Manifest) -> Result<(), Outcome> {
    use crate::cluster::{ClusterOperator, ClusterOperatorSpec};
    use crate::operator::health::check_cluster_operator;
    let name = manifest.id.name.as_str();
    let failed = |reason: &'static str, cause: &'static str, error: String, message, effect| {
        Outcome::Failed(ApplyErrorText {
            reason,
            cause,
            error,
            message,
            effect,
            name: Some(name.to_string()),
        })
    };
    let expected: ClusterOperator = serde_json::from_value(manifest.object())
        .map_err(|e| failed("UpdatePayloadFailed", "", e.to_string(), None, Effect::Fail))?;
    let api: Api<ClusterOperator> = Api::all(ctx.client.clone());
    let mut live = api.get_opt(name).await;
    if matches!(live, Ok(None)) {
        let mut fresh = ClusterOperator::new(name, ClusterOperatorSpec {});
        fresh.metadata.annotations = expected.metadata.annotations.clone();
        match api.create(&Default::default(), &fresh).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.reason == "AlreadyExists" => {}
            Err(e) => tracing::warn!(operator = name, error = %e, "cannot pre-create"),
        }
        if let Some(status) = &expected.status {
            let patch = serde_json::json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                "status": {"relatedObjects": status.related_objects},
            });
            let params = PatchParams::apply(FIELD_MANAGER).force();
            if let Err(e) = api.patch_status(name, &params, &Patch::Apply(&patch)).await {
                tracing::warn!(operator = name, error = %e, "cannot set relatedObjects");
            }
        }
        live = api.get_opt(name).await;
    }
    let live = live.map_err(|e| {
        let (reason, cause) = reason_for(&e);
        failed(reason, cause, e.to_string(), None, Effect::Fail)
    })?;
    check_cluster_operator(&expected, live.as_ref(), ctx.options.initializing).map_err(|e| {
        tracing::info!(operator = name, reason = e.reason(), error = %e.nested(), "waiting");
        let effect = e.effect(ctx.options.initializing);
        failed(e.reason(), "", e.nested(), Some(e.to_string()), effect)
    })
}

/// [`apply`], then the workload health check on the object the server returned (no extra
/// read), except while initializing.
async fn apply_and_check(
    ctx: &Ctx,
    api: &Api<DynamicObject>,
    manifest: &Manifest,
) -> Result<(), ApplyError> {
    let applied = apply(ctx, api, manifest).await?;
    if ctx.options.initializing {
        return Ok(());
    }
    check_workload(manifest, &applied)
}

/// Server-side apply, forced, with the CVO's owner reference when there is an owner; a CRD is
/// then waited on until Established and discovery is refreshed so its custom resources resolve.
/// Returns the object the server returned.
async fn apply(
    ctx: &Ctx,
    api: &Api<DynamicObject>,
    manifest: &Manifest,
) -> Result<DynamicObject, ApplyError> {
    let object = applied_object(manifest, ctx.options.owner.as_ref());
    if !object.is_object() {
        return Err(ApplyError::NotAnObject);
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let applied = api
        .patch(&manifest.id.name, &params, &Patch::Apply(&object))
        .await?;
    if manifest
        .gvk
        .is("apiextensions.k8s.io", "CustomResourceDefinition")
    {
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        let name = manifest.id.name.as_str();
        let established = await_condition(crds, name, conditions::is_crd_established());
        match tokio::time::timeout(ctx.options.crd_timeout, established).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Err(ApplyError::Kube(kube::Error::Service(Box::new(e))));
            }
            Err(_) => {
                return Err(ApplyError::NotEstablished {
                    name: name.to_string(),
                    seconds: ctx.options.crd_timeout.as_secs(),
                });
            }
        }
        ctx.resolver.refresh_now().await?;
    }
    Ok(applied)
}

/// Discovery shared by the tasks of a pass: run once on first use, again after a CRD is
/// established and on a miss (at most once per generation, however many tasks missed).
struct Resolver {
    client: kube::Client,
    state: RwLock<(u64, Option<Arc<Discovery>>)>,
}

impl Resolver {
    fn new(client: kube::Client) -> Self {
        Resolver {
            client,
            state: RwLock::new((0, None)),
        }
    }

    async fn resolve(&self, gvk: &KubeGvk) -> Result<(ApiResource, ApiCapabilities), ApplyError> {
        let (generation, discovery) = self.refresh(None).await?;
        if let Some(found) = discovery.resolve_gvk(gvk) {
            return Ok(found);
        }
        let (_, discovery) = self.refresh(Some(generation)).await?;
        discovery
            .resolve_gvk(gvk)
            .ok_or_else(|| ApplyError::NoMatch {
                api_version: gvk.api_version(),
                kind: gvk.kind.clone(),
            })
    }

    /// A discovery that started after this call.
    async fn refresh_now(&self) -> Result<(), kube::Error> {
        let generation = self.state.read().await.0;
        self.refresh(Some(generation)).await.map(|_| ())
    }

    /// The current discovery, run anew when there is none or when it is still generation
    /// `stale` (another task may have refreshed meanwhile).
    async fn refresh(&self, stale: Option<u64>) -> Result<(u64, Arc<Discovery>), kube::Error> {
        if stale.is_none()
            && let (generation, Some(discovery)) = &*self.state.read().await
        {
            return Ok((*generation, discovery.clone()));
        }
        let mut state = self.state.write().await;
        if let (generation, Some(discovery)) = &*state
            && stale != Some(*generation)
        {
            return Ok((*generation, discovery.clone()));
        }
        let discovery = Arc::new(Discovery::new(self.client.clone()).run().await?);
        state.0 += 1;
        state.1 = Some(discovery.clone());
        Ok((state.0, discovery))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::task::tests::{cm, manifest};
    use kube::core::Status;

    #[test]
    fn an_invalid_delete_annotation_is_a_plain_failure() {
        let e = ApplyError::from(action(&cm(r#"release.openshift.io/delete: "yes""#)).unwrap_err());
        assert_eq!(e.reason(), ("UpdatePayloadFailed", ""));
        assert_eq!(
            e.to_string(),
            r#"invalid delete annotation "release.openshift.io/delete" value: "yes""#
        );
    }

    fn status(reason: &str, code: u16) -> Status {
        Status::failure("message", reason).with_code(code)
    }

    #[test]
    fn reasons_match_the_upstream_table() {
        let cases: &[(&str, u16, &str, &str)] = &[
            (
                "NotFound",
                404,
                "UpdatePayloadResourceNotFound",
                "resource may have been deleted",
            ),
            (
                "",
                404,
                "UpdatePayloadResourceNotFound",
                "resource may have been deleted",
            ),
            (
                "AlreadyExists",
                409,
                "UpdatePayloadResourceNotFound",
                "resource may have been deleted",
            ),
            (
                "Conflict",
                409,
                "UpdatePayloadResourceConflict",
                "someone else is updating this resource",
            ),
            (
                "",
                409,
                "UpdatePayloadResourceConflict",
                "someone else is updating this resource",
            ),
            (
                "Timeout",
                504,
                "UpdatePayloadClusterDown",
                "the server is down or not responding",
            ),
            (
                "ServiceUnavailable",
                503,
                "UpdatePayloadClusterDown",
                "the server is down or not responding",
            ),
            (
                "",
                503,
                "UpdatePayloadClusterDown",
                "the server is down or not responding",
            ),
            (
                "InternalError",
                500,
                "UpdatePayloadClusterError",
                "the server is reporting an internal error",
            ),
            (
                "",
                500,
                "UpdatePayloadClusterError",
                "the server is reporting an internal error",
            ),
            (
                "Invalid",
                422,
                "UpdatePayloadResourceInvalid",
                "the object is invalid, possibly due to local cluster configuration",
            ),
            (
                "Unauthorized",
                401,
                "UpdatePayloadClusterUnauthorized",
                "could not authenticate to the server",
            ),
            (
                "Forbidden",
                403,
                "UpdatePayloadResourceForbidden",
                "the server has forbidden updates to this resource",
            ),
            (
                "ServerTimeout",
                500,
                "UpdatePayloadClusterOverloaded",
                "the server is overloaded and is not accepting updates",
            ),
            (
                "TooManyRequests",
                429,
                "UpdatePayloadClusterOverloaded",
                "the server is overloaded and is not accepting updates",
            ),
            (
                "",
                429,
                "UpdatePayloadClusterOverloaded",
                "the server is overloaded and is not accepting updates",
            ),
            ("BadRequest", 400, "UpdatePayloadFailed", ""),
            ("Gone", 410, "UpdatePayloadFailed", ""),
            // A known reason wins over the code.
            ("BadRequest", 404, "UpdatePayloadFailed", ""),
            (
                "Forbidden",
                404,
                "UpdatePayloadResourceForbidden",
                "the server has forbidden updates to this resource",
            ),
            // An unknown reason falls back on the code.
            (
                "SomethingNew",
                403,
                "UpdatePayloadResourceForbidden",
                "the server has forbidden updates to this resource",
            ),
        ];
        for &(reason, code, want, cause) in cases {
            assert_eq!(
                reason_for_status(&status(reason, code)),
                (want, cause),
                "{reason:?} {code}"
            );
            let err = kube::Error::Api(Box::new(status(reason, code)));
            assert_eq!(reason_for(&err), (want, cause));
        }
        let unexpected =
            status("InternalError", 500).with_details(kube::core::response::StatusDetails {
                causes: vec![kube::core::response::StatusCause {
                    reason: "UnexpectedServerResponse".into(),
                    message: String::new(),
                    field: String::new(),
                }],
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                retry_after_seconds: 0,
            });
        assert_eq!(reason_for_status(&unexpected).0, "UpdatePayloadClusterDown");
        let no_match = ApplyError::NoMatch {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
        };
        assert_eq!(no_match.reason().0, "UpdatePayloadResourceTypeMissing");
        assert_eq!(
            no_match.to_string(),
            r#"no matches for kind "Widget" in version "example.com/v1""#
        );
    }

    fn applied(api_version: &str, kind: &str, status: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "x", "namespace": "ns"},
            "status": status,
        }))
        .expect("an object")
    }

    #[test]
    fn workload_failures_become_upstream_update_errors() {
        let deployment = manifest("", "Deployment", "apps/v1");
        let failing = applied(
            "apps/v1",
            "Deployment",
            serde_json::json!({"unavailableReplicas": 1, "conditions": [
                {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota"}]}),
        );
        let e = check_workload(&deployment, &failing).unwrap_err();
        assert!(!e.retryable(), "an UpdateError fails fast");
        let f = e.failure();
        assert_eq!(f.reason, "WorkloadNotProgressing");
        assert_eq!(
            f.message.as_deref(),
            Some("deployment ns/x has a replica failure FailedCreate: quota")
        );
        assert_eq!(
            f.error,
            "deployment ns/x has some pods failing; unavailable replicas=1"
        );
        assert_eq!((f.effect, f.name.as_deref()), (Effect::Fail, Some("ns/x")));
        let r = report(&[&deployment], vec![Some(Outcome::Failed(f))]);
        assert_eq!(
            r.errors[0].message,
            "deployment ns/x has a replica failure FailedCreate: quota"
        );

        // Another group or version is not a Deployment upstream checks.
        let beta = manifest("", "Deployment", "apps/v1beta1");
        assert!(check_workload(&beta, &failing).is_ok());
        assert!(check_workload(&cm(""), &failing).is_ok());

        // Plain errors are retried, then wrapped as `Could not update`.
        let job = manifest("", "Job", "batch/v1");
        let failed = applied("batch/v1", "Job", serde_json::json!({"failed": 1}));
        let e = check_workload(&job, &failed).unwrap_err();
        assert!(e.retryable());
        let f = e.failure();
        assert_eq!(
            (f.reason, f.cause, f.message.as_deref()),
            ("UpdatePayloadFailed", "", None)
        );
        assert_eq!(
            f.error,
            r#"deadline exceeded, reason: "DeadlineExceeded", message: "Job was active longer than specified deadline""#
        );
        assert_eq!(f.name, None);
        let r = report(&[&job], vec![Some(Outcome::Failed(f))]);
        assert_eq!(
            r.errors[0].message,
            r#"Could not update job "ns/x" (1 of 1)"#
        );

        let ds = manifest("", "DaemonSet", "apps/v1");
        let healthy = applied("apps/v1", "DaemonSet", serde_json::json!({}));
        assert!(check_workload(&ds, &healthy).is_ok());
        // An object that does not read as its kind is an error, not a panic.
        let wrong = applied(
            "apps/v1",
            "Deployment",
            serde_json::json!({"replicas": "many"}),
        );
        let e = check_workload(&deployment, &wrong).unwrap_err();
        assert!(matches!(e, ApplyError::Unreadable(_)), "{e:?}");
        assert_eq!(e.failure().reason, "UpdatePayloadFailed");
    }
}
