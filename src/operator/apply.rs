//! One apply pass (spec §7.2): every task of the run-level graph, in graph order, applied with
//! server-side apply as the CVO's field manager.
//!
//! Decisions are pure ([`action`], [`reason_for_status`], [`owner_references`], the workload
//! health checks of [`crate::operator::health`]); [`apply_payload`] is the I/O shell: it drives
//! [`Scheduler`] with tokio tasks, resolves each manifest's kind through discovery (refreshed
//! after a CRD is applied, and on a miss), and collects an [`ApplyReport`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{GroupVersionKind as KubeGvk, Status};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::RwLock;
use tokio::task::JoinSet;

use crate::cluster::ClusterVersion;
use crate::graph::{Mode, Scheduler, TaskGraph};
use crate::include::{InclusionConfig, include};
use crate::manifest::{CREATE_ONLY_ANNOTATION, DELETE_ANNOTATION, Manifest, go_quote};
use crate::operator::health::{
    WorkloadHealthError, check_daemonset, check_deployment, check_job, deployment_state_unknown,
};

/// The field manager of every write, as the CVO's user agent names it.
pub const FIELD_MANAGER: &str = "cluster-version-operator";

/// What applying a manifest means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Server-side apply the object (create or update).
    Apply,
    /// `release.openshift.io/create-only`: create when absent, never update.
    CreateOnly,
    /// `release.openshift.io/delete: "true"`: delete (in Updating mode), never create.
    Delete,
    /// A ClusterOperator: not desired state, the CVO waits on the operator to report it
    /// (spec §5.4). Not applied, and not done, in this increment.
    WaitClusterOperator,
}

/// What the manifest asks the CVO to do (spec §2.1, §5.4). Pure.
pub fn action(manifest: &Manifest) -> Result<Action, ApplyError> {
    if manifest.gvk.is("config.openshift.io", "ClusterOperator") {
        return Ok(Action::WaitClusterOperator);
    }
    if let Some(value) = manifest.annotation(DELETE_ANNOTATION) {
        return if value == "true" {
            Ok(Action::Delete)
        } else {
            Err(ApplyError::InvalidDeleteAnnotation(value.to_string()))
        };
    }
    match manifest.annotation(CREATE_ONLY_ANNOTATION) {
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Action::CreateOnly),
        _ => Ok(Action::Apply),
    }
}

/// Why a task failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Upstream `ValidDeleteAnnotation`.
    #[error("invalid delete annotation {} value: {}", go_quote(DELETE_ANNOTATION), go_quote(.0))]
    InvalidDeleteAnnotation(String),
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

/// Upstream `reasonForPayloadSyncError` over the apimachinery `Is*` predicates (spec §7.2):
/// a predicate matches on the status reason, or on the HTTP code when the reason is not one
/// apimachinery knows. Pure.
pub fn reason_for_status(status: &Status) -> (&'static str, &'static str) {
    let reason = status.reason.as_str();
    let code = status.code;
    let known = KNOWN_REASONS.contains(&reason);
    let is = |r: &str, c: Option<u16>| reason == r || (!known && c.is_some_and(|c| c == code));
    let unexpected_server_error = status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == "UnexpectedServerResponse")
    });
    if is("NotFound", Some(404)) || is("AlreadyExists", None) {
        (
            "UpdatePayloadResourceNotFound",
            "resource may have been deleted",
        )
    } else if is("Conflict", Some(409)) {
        (
            "UpdatePayloadResourceConflict",
            "someone else is updating this resource",
        )
    } else if is("Timeout", Some(504))
        || is("ServiceUnavailable", Some(503))
        || unexpected_server_error
    {
        (
            "UpdatePayloadClusterDown",
            "the server is down or not responding",
        )
    } else if is("InternalError", Some(500)) {
        (
            "UpdatePayloadClusterError",
            "the server is reporting an internal error",
        )
    } else if is("Invalid", Some(422)) {
        (
            "UpdatePayloadResourceInvalid",
            "the object is invalid, possibly due to local cluster configuration",
        )
    } else if is("Unauthorized", Some(401)) {
        (
            "UpdatePayloadClusterUnauthorized",
            "could not authenticate to the server",
        )
    } else if is("Forbidden", Some(403)) {
        (
            "UpdatePayloadResourceForbidden",
            "the server has forbidden updates to this resource",
        )
    } else if is("ServerTimeout", None) || is("TooManyRequests", Some(429)) {
        (
            "UpdatePayloadClusterOverloaded",
            "the server is overloaded and is not accepting updates",
        )
    } else {
        ("UpdatePayloadFailed", "")
    }
}

/// apimachinery `knownReasons` (`StatusReasonUnknown`, `""`, is not one of them).
const KNOWN_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// How an error weighs on the pass (upstream `UpdateEffect`, spec §5.4 and §7.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub enum Effect {
    /// Reported, never failing: the node goes on (a degraded operator while installing).
    Report,
    /// Only waiting (an operator still updating versions): not a failure unless slow.
    None,
    /// A failure only once the operator has been waited on for 40 minutes (degraded).
    FailAfterInterval,
    /// A failure.
    #[default]
    Fail,
}

/// One failed task, as upstream's `UpdateError`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskError {
    /// `manifest.task_string(i + 1, total)`, e.g. `configmap "ns/name" (5 of 10)`.
    pub task: String,
    /// `UpdatePayload…`.
    pub reason: String,
    /// `Could not update <task>[: <cause>]`.
    pub message: String,
    /// The underlying error (upstream `Nested`).
    pub error: String,
    /// How the error weighs on the pass.
    pub effect: Effect,
    /// What the error is about (upstream `Name`): the ClusterOperator's name, or a workload's
    /// `<namespace>/<name>`; used by the condensing and `SummaryForReason` of spec §7.6.
    pub name: Option<String>,
}

/// The outcome of one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    /// Applied successfully (create-only objects that exist, and deletions, count).
    pub done: usize,
    /// Manifests given (load-filtered).
    pub total: usize,
    /// Excluded at apply time (capabilities, overrides, feature gates); not done.
    pub skipped: usize,
    /// ClusterOperator manifests: waited on, not applied; not done.
    pub waiting: Vec<String>,
    /// In task order.
    pub errors: Vec<TaskError>,
    /// Never attempted: behind a failed task of their node, or in a node a failure blocked.
    pub incomplete: usize,
    /// ClusterOperators that were checked and found as the payload expects (their update
    /// start times are cleared, spec §7.6).
    pub operators_done: Vec<String>,
}

impl ApplyReport {
    pub fn is_success(&self) -> bool {
        self.errors.iter().all(|e| e.effect == Effect::Report) && self.incomplete == 0
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
        }
    }
}

/// The ClusterVersion the CVO runs for, as the owner of what it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterVersionOwner {
    pub name: String,
    pub uid: String,
}

impl ClusterVersionOwner {
    /// The owner a live ClusterVersion makes; `None` before the server gave it a uid.
    pub fn of(cv: &ClusterVersion) -> Option<Self> {
        Some(ClusterVersionOwner {
            name: cv.metadata.name.clone()?,
            uid: cv.metadata.uid.clone()?,
        })
    }
}

/// Upstream `ownerReferenceModifier`: the owner references an applied object gets, from those
/// its manifest has. Owner references other than to a ClusterVersion are the manifest author's
/// choice and win, alone; otherwise the only owner is the CVO's ClusterVersion, its controller
/// unless the manifest is create-only (upstream compares the annotation to exactly `true`
/// here, unlike the case-insensitive create-only check). Pure.
pub fn owner_references(
    manifest_refs: &[OwnerReference],
    create_only: Option<&str>,
    owner: &ClusterVersionOwner,
) -> Vec<OwnerReference> {
    let foreign: Vec<OwnerReference> = (manifest_refs.iter())
        .filter(|r| r.kind != "ClusterVersion")
        .cloned()
        .collect();
    if !foreign.is_empty() {
        return foreign;
    }
    vec![OwnerReference {
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterVersion".into(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        controller: (create_only != Some("true")).then_some(true),
        block_owner_deletion: None,
    }]
}

/// Sets `metadata.ownerReferences` of `object` per [`owner_references`]. An object whose owner
/// references do not read is left alone: the server rejects it with the precise complaint.
fn set_owner(object: &mut serde_json::Value, manifest: &Manifest, owner: &ClusterVersionOwner) {
    let Some(metadata) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) else {
        return;
    };
    let existing = match metadata.get("ownerReferences") {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(refs) => serde_json::from_value::<Vec<OwnerReference>>(refs.clone()),
    };
    let Ok(existing) = existing else {
        return;
    };
    let refs = owner_references(
        &existing,
        manifest.annotation(CREATE_ONLY_ANNOTATION),
        owner,
    );
    if let Ok(refs) = serde_json::to_value(refs) {
        metadata.insert("ownerReferences".into(), refs);
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
    let total = manifests.len();
    let graph = TaskGraph::build(manifests, mode);
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        resolver: Resolver::new(client.clone()),
        config: apply_time(config),
        mode,
        options: options.clone(),
        manifests: manifests.iter().map(|m| (*m).clone()).collect(),
    });
    let mut scheduler = Scheduler::new(&graph);
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

fn report(manifests: &[&Manifest], outcomes: Vec<Option<Outcome>>) -> ApplyReport {
    let total = manifests.len();
    let mut report = ApplyReport {
        total,
        ..Default::default()
    };
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let task = || manifests[i].task_string(i + 1, total);
        match outcome {
            None => report.incomplete += 1,
            Some(Outcome::Done) => {
                report.done += 1;
                if manifests[i]
                    .gvk
                    .is("config.openshift.io", "ClusterOperator")
                {
                    report.operators_done.push(manifests[i].id.name.clone());
                }
            }
            Some(Outcome::Skipped) => report.skipped += 1,
            Some(Outcome::Waiting) => report.waiting.push(task()),
            Some(Outcome::Failed(e)) => {
                let task = task();
                let message = if let Some(message) = e.message {
                    message
                } else if e.cause.is_empty() {
                    format!("Could not update {task}")
                } else {
                    format!("Could not update {task}: {}", e.cause)
                };
                report.errors.push(TaskError {
                    task,
                    reason: e.reason.to_string(),
                    message,
                    error: e.error,
                    effect: e.effect,
                    name: e.name,
                });
            }
        }
    }
    report
}

/// The filters upstream checks per task: `Include(nil, nil, nil, &caps, overrides, gates, nil)`.
fn apply_time(config: &InclusionConfig) -> InclusionConfig {
    InclusionConfig {
        capabilities: config.capabilities.clone(),
        overrides: config.overrides.clone(),
        enabled_feature_gates: config.enabled_feature_gates.clone(),
        allow_unknown_capabilities: config.allow_unknown_capabilities,
        ..Default::default()
    }
}

#[derive(Debug, Clone)]
enum Outcome {
    Done,
    Skipped,
    Waiting,
    Failed(ApplyErrorText),
}

#[derive(Debug, Clone)]
struct ApplyErrorText {
    reason: &'static str,
    cause: &'static str,
    error: String,
    /// Replaces `Could not update <task>[: <cause>]` (ClusterOperator health errors).
    message: Option<String>,
    effect: Effect,
    name: Option<String>,
}

impl Outcome {
    /// A failure that ends its node (a `Report` error lets the node go on, spec §7.2).
    fn blocks(&self) -> bool {
        matches!(self, Outcome::Failed(e) if e.effect != Effect::Report)
    }
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
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Outcome::Done,
        Err(e) => {
            let failure = e.failure();
            tracing::warn!(manifest = %manifest.describe(), error = %e, reason = failure.reason, "apply failed");
            Outcome::Failed(failure)
        }
    }
}

async fn with_retries(ctx: &Ctx, manifest: &Manifest, action: Action) -> Result<(), ApplyError> {
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

async fn act(ctx: &Ctx, manifest: &Manifest, action: Action) -> Result<(), ApplyError> {
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
    let mut object = manifest.object();
    if !object.is_object() {
        return Err(ApplyError::NotAnObject);
    }
    if let Some(owner) = &ctx.options.owner {
        set_owner(&mut object, manifest, owner);
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
    use crate::payload::{LoadOptions, Payload, PayloadInput};

    fn manifest(annotations: &str, kind: &str, api_version: &str) -> Manifest {
        let text = format!(
            "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: x\n  namespace: ns\n  annotations: {{{annotations}}}\n"
        );
        let input = PayloadInput {
            origin: "test".into(),
            layout: crate::payload::Layout::PlainDirectory,
            manifests: vec![],
            release_manifests: vec![crate::payload::InputFile {
                name: "0000_10_a_b.yaml".into(),
                contents: Ok(text.into_bytes()),
            }],
            release_metadata: None,
            image_references: None,
        };
        let payload = Payload::from_input(input, &LoadOptions::default()).expect("loads");
        payload.manifests.into_iter().next().expect("one manifest")
    }

    fn cm(annotations: &str) -> Manifest {
        manifest(annotations, "ConfigMap", "v1")
    }

    #[test]
    fn actions_follow_the_annotations() {
        assert_eq!(action(&cm("")).unwrap(), Action::Apply);
        let create_only =
            |v: &str| action(&cm(&format!("release.openshift.io/create-only: {v:?}")));
        assert_eq!(create_only("true").unwrap(), Action::CreateOnly);
        assert_eq!(create_only("TRUE").unwrap(), Action::CreateOnly);
        assert_eq!(create_only("True").unwrap(), Action::CreateOnly);
        assert_eq!(create_only("false").unwrap(), Action::Apply);
        assert_eq!(create_only("yes").unwrap(), Action::Apply);
        let delete = |v: &str| action(&cm(&format!("release.openshift.io/delete: {v:?}")));
        assert_eq!(delete("true").unwrap(), Action::Delete);
        for bad in ["True", "false", "", "yes"] {
            let e = delete(bad).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    r#"invalid delete annotation "release.openshift.io/delete" value: "{bad}""#
                )
            );
            assert_eq!(e.reason(), ("UpdatePayloadFailed", ""));
        }
        let both =
            cm(r#"release.openshift.io/delete: "true", release.openshift.io/create-only: "true""#);
        assert_eq!(action(&both).unwrap(), Action::Delete);
        let co = manifest("", "ClusterOperator", "config.openshift.io/v1");
        assert_eq!(action(&co).unwrap(), Action::WaitClusterOperator);
        let other_group = manifest("", "ClusterOperator", "example.com/v1");
        assert_eq!(action(&other_group).unwrap(), Action::Apply);
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

    #[test]
    fn report_counts_and_messages() {
        let a = cm("");
        let manifests = [&a, &a, &a, &a, &a];
        let outcomes = vec![
            Some(Outcome::Done),
            Some(Outcome::Skipped),
            Some(Outcome::Waiting),
            Some(Outcome::Failed(ApplyErrorText {
                reason: "UpdatePayloadResourceInvalid",
                cause: "the object is invalid, possibly due to local cluster configuration",
                error: "boom".into(),
                message: None,
                effect: Effect::Fail,
                name: None,
            })),
            None,
        ];
        let r = report(&manifests, outcomes);
        assert_eq!((r.done, r.total, r.skipped, r.incomplete), (1, 5, 1, 1));
        assert_eq!(r.waiting, [r#"configmap "ns/x" (3 of 5)"#]);
        assert_eq!(
            r.errors[0].message,
            r#"Could not update configmap "ns/x" (4 of 5): the object is invalid, possibly due to local cluster configuration"#
        );
        let r = report(
            &manifests[..1],
            vec![Some(Outcome::Failed(ApplyErrorText {
                reason: "UpdatePayloadFailed",
                cause: "",
                error: "x".into(),
                message: None,
                effect: Effect::Fail,
                name: None,
            }))],
        );
        assert_eq!(
            r.errors[0].message,
            r#"Could not update configmap "ns/x" (1 of 1)"#
        );
        assert!(!r.is_success());
        let reported = report(
            &manifests[..1],
            vec![Some(Outcome::Failed(ApplyErrorText {
                reason: "ClusterOperatorDegraded",
                cause: "",
                error: "x".into(),
                message: Some("Cluster operator x is degraded".into()),
                effect: Effect::Report,
                name: Some("x".into()),
            }))],
        );
        assert!(
            reported.is_success(),
            "a Report error does not fail the pass"
        );
    }

    #[test]
    fn apply_time_keeps_only_per_task_filters() {
        let config = InclusionConfig {
            profile: Some("p".into()),
            required_feature_set: Some(String::new()),
            major_version: Some(4),
            exclude_identifier: Some("x".into()),
            overrides: Some(vec![]),
            ..Default::default()
        };
        let t = apply_time(&config);
        assert_eq!(t.profile, None);
        assert_eq!(t.required_feature_set, None);
        assert_eq!(t.major_version, None);
        assert_eq!(t.exclude_identifier, None);
        assert_eq!(t.overrides, Some(vec![]));
    }

    fn owner() -> ClusterVersionOwner {
        ClusterVersionOwner {
            name: "version".into(),
            uid: "cv-uid".into(),
        }
    }

    fn reference(kind: &str, uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: "n".into(),
            uid: uid.into(),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn owner_references_follow_the_upstream_modifier() {
        let ours = |controller| OwnerReference {
            api_version: "config.openshift.io/v1".into(),
            kind: "ClusterVersion".into(),
            name: "version".into(),
            uid: "cv-uid".into(),
            controller,
            block_owner_deletion: None,
        };
        assert_eq!(owner_references(&[], None, &owner()), [ours(Some(true))]);
        assert_eq!(owner_references(&[], Some("true"), &owner()), [ours(None)]);
        // Only exactly "true" drops the controller flag.
        for value in ["True", "TRUE", "false", ""] {
            assert_eq!(
                owner_references(&[], Some(value), &owner()),
                [ours(Some(true))],
                "{value:?}"
            );
        }
        // A stale ClusterVersion reference is replaced.
        let stale = reference("ClusterVersion", "old", Some(true));
        assert_eq!(
            owner_references(std::slice::from_ref(&stale), None, &owner()),
            [ours(Some(true))]
        );
        // Foreign references win, alone: ClusterVersion ones are dropped.
        let foreign = reference("ConfigMap", "cm", None);
        let other = reference("Deployment", "d", Some(true));
        assert_eq!(
            owner_references(&[stale, foreign.clone(), other.clone()], None, &owner()),
            [foreign, other]
        );
    }

    #[test]
    fn set_owner_edits_only_readable_metadata() {
        let m = cm("");
        let mut object = m.object();
        set_owner(&mut object, &m, &owner());
        assert_eq!(
            object["metadata"]["ownerReferences"],
            serde_json::json!([{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                                "name": "version", "uid": "cv-uid", "controller": true}])
        );
        let create_only = cm(r#"release.openshift.io/create-only: "true""#);
        let mut object = create_only.object();
        set_owner(&mut object, &create_only, &owner());
        assert_eq!(
            object["metadata"]["ownerReferences"][0].get("controller"),
            None
        );
        let mut foreign = m.object();
        let refs =
            serde_json::json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u"}]);
        foreign["metadata"]["ownerReferences"] = refs.clone();
        set_owner(&mut foreign, &m, &owner());
        assert_eq!(foreign["metadata"]["ownerReferences"], refs);
        for bad in [serde_json::json!("x"), serde_json::json!([{"kind": 3}])] {
            let mut object = m.object();
            object["metadata"]["ownerReferences"] = bad.clone();
            set_owner(&mut object, &m, &owner());
            assert_eq!(object["metadata"]["ownerReferences"], bad);
        }
        let mut no_metadata = serde_json::json!({"kind": "ConfigMap"});
        set_owner(&mut no_metadata, &m, &owner());
        assert_eq!(no_metadata, serde_json::json!({"kind": "ConfigMap"}));
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
