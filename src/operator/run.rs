//! The sync loop of `cvo start` (spec §4.3, §7.1): wait for the ClusterVersion `version`, then
//! every resync interval compute capabilities, filter the payload, apply it and write the
//! ClusterVersion status (server-side apply, only when it changed).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cluster::validation::{clear_invalid_fields, validate_cluster_version};
use crate::cluster::{ClusterOperator, ClusterVersion, ClusterVersionStatus};
use crate::payload::Payload;

use super::apply::{ApplyOptions, apply_graph};
use super::deletions::Deletions;
use super::desired::{
    ReleaseSources, SwitchDecision, preflight_target, requested_release, switch_decision,
    verify_version,
};
use super::metrics::Metrics;
use super::outcome::{ApplyReport, Effect, LoadFailure, PayloadLoadStep, RequestedUpdate};
pub use super::pass::SyncState;
use super::pass::{
    Observed, OperatorFacts, PassInput, PassPlan, SyncMode, accept_release, pass_status, plan_pass,
    updates_query,
};
use super::preflight_status::{Phase, Preflight, due};
use super::retrieve::{Retrieved, retrieve};
use super::task::{ClusterVersionOwner, FIELD_MANAGER};
use super::upgradeable::RiskFacts;
use crate::host::lease::{LeaderElector, LeaseConfig};
use crate::updates::AvailableUpdates;
use crate::updates::fetch::{self, FetchOptions};
use crate::updates::prometheus::{self, PrometheusOptions};
use crate::updates::rules::settled;

pub use crate::cluster::CLUSTER_VERSION_NAME;

/// What `cvo start` was given.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The payload, loaded (its `release_image` is what `status.desired.image` reports).
    pub payload: Payload,
    /// Between passes; jittered ×[1,2) unless `once`.
    pub resync_interval: Duration,
    /// One pass, then return: an error when it could not apply everything.
    pub once: bool,
    /// How long to wait for the ClusterVersion (and, with `once`, for the Lease) before giving
    /// up; `None`: for ever, as an operator in its pod does.
    pub wait_for_cluster_version: Option<Duration>,
    /// The cluster profile, the exclusion id and the always-enabled capabilities.
    pub facts: OperatorFacts,
    /// Retry bounds of each pass (ClusterOperator checking is always on).
    pub apply: ApplyOptions,
    /// How often to look for the ClusterVersion while it does not exist.
    pub poll_interval: Duration,
    /// Leader election: passes run only while this replica holds the Lease; `None`: always.
    pub lease: Option<LeaseConfig>,
    /// Where passes are recorded (capabilities, apply counts and durations, readiness).
    pub metrics: Option<Arc<Metrics>>,
    /// How release images are pulled and where they are extracted.
    pub images: crate::oci::Options,
    /// Where a release the cluster names may come from: registries (a real cluster), or local
    /// files too (tests only).
    pub release_sources: ReleaseSources,
    /// How long retrieving a requested release (pull and extract, or read) may take.
    pub payload_timeout: Duration,
    /// How long one pass may take before it is abandoned (its apply tasks are cancelled).
    pub pass_timeout: Duration,
    /// The update service used when `spec.upstream` is empty; `None`: none (`NoUpstream`).
    pub update_service: Option<String>,
    /// The preferred update service (upstream's `--update-service`): asked instead of
    /// `spec.upstream` when set.
    pub preferred_update_service: Option<String>,
    /// How the update service is reached (timeout, extra CAs). It is asked at most once per
    /// resync interval, and at once when the upstream, channel or architecture changes.
    pub update_fetch: FetchOptions,
    /// Where `PromQL` conditional update risks are evaluated, and the time one evaluation may
    /// take.
    pub prometheus: PrometheusOptions,
    /// Where Events about the ClusterVersion go; `run` records them with a recorder of its own
    /// when this is `None`, a lone `sync_once` records none.
    pub events: Option<super::events::EventRecorder>,
}

impl RunOptions {
    /// Defaults for `payload`, pulling release images with `images`: the default profile, no
    /// exclusion id, releases from registries only.
    pub fn new(payload: Payload, images: crate::oci::Options) -> Self {
        RunOptions {
            payload,
            images,
            release_sources: ReleaseSources::Registries,
            resync_interval: Duration::from_secs(180),
            once: false,
            wait_for_cluster_version: None,
            facts: OperatorFacts::default(),
            apply: ApplyOptions::default(),
            poll_interval: Duration::from_secs(1),
            lease: None,
            metrics: None,
            payload_timeout: Duration::from_secs(120),
            pass_timeout: Duration::from_secs(600),
            update_service: None,
            preferred_update_service: None,
            update_fetch: FetchOptions::default(),
            prometheus: PrometheusOptions::default(),
            events: None,
        }
    }
}

/// The outcome of one pass.
#[derive(Debug, Clone)]
pub struct PassResult {
    pub report: ApplyReport,
    pub status: ClusterVersionStatus,
    /// The status was written (it differed from the cluster's).
    pub status_written: bool,
}

/// Runs passes until `shutdown` turns true (checked between passes and while sleeping), or
/// after one pass with `once`. Waits for the ClusterVersion first. With `options.lease`, a
/// pass starts only while this replica holds the Lease (the lease is released on return).
pub async fn run(
    client: &kube::Client,
    options: &RunOptions,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let Some(lease) = options.lease.clone() else {
        return run_passes(client, options, shutdown, watch::channel(true).1).await;
    };
    let (leader_tx, leader_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);
    let elector = LeaderElector::new(client.clone(), lease);
    tracing::info!(
        identity = elector.identity(),
        "leader election: waiting for the lease"
    );
    let mut elector = tokio::spawn(elector.run(leader_tx, stop_rx));
    let result = tokio::select! {
        result = run_passes(client, options, shutdown, leader_rx) => result,
        // The elector runs until told to stop: ending first means it cannot go on.
        ended = &mut elector => {
            return match ended {
                Ok(Err(e)) => Err(e.into()),
                Ok(Ok(())) => Err(anyhow::anyhow!("leader election ended unexpectedly")),
                Err(e) => Err(anyhow::anyhow!("the leader election task failed: {e}")),
            };
        }
    };
    // Stop renewing only after the last pass, then release.
    let _ = stop_tx.send(true);
    match elector.await {
        Ok(Err(e)) => tracing::warn!(error = %e, "leader election failed"),
        Err(e) => tracing::warn!(error = %e, "the leader election task failed"),
        Ok(Ok(())) => {}
    }
    result
}

async fn run_passes(
    client: &kube::Client,
    options: &RunOptions,
    mut shutdown: watch::Receiver<bool>,
    mut leader: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let with_events;
    let options = match options.events {
        Some(_) => options,
        None => {
            with_events = RunOptions {
                events: Some(super::events::EventRecorder::new(client.clone())),
                ..options.clone()
            };
            &with_events
        }
    };
    let mut state = SyncState::default();
    let api: Api<ClusterVersion> = Api::all(client.clone());
    let mut changes = super::watches::start(client, options.metrics.clone(), shutdown.clone());
    let deadline = (options.wait_for_cluster_version).map(|limit| (Instant::now() + limit, limit));
    let gave_up = |limit| {
        anyhow::anyhow!(
            "ClusterVersion {CLUSTER_VERSION_NAME} could not be read within {}; create it (the installer does) and check that the API server answers",
            seconds(limit)
        )
    };
    loop {
        let read = api.get_opt(CLUSTER_VERSION_NAME);
        let read = match deadline {
            Some((at, limit)) => tokio::time::timeout_at(at, read)
                .await
                .map_err(|_| gave_up(limit))?,
            None => read.await,
        };
        match read {
            Ok(Some(_)) => break,
            Ok(None) => tracing::info!("waiting for ClusterVersion {CLUSTER_VERSION_NAME}"),
            // The CRD itself may not be served yet.
            Err(kube::Error::Api(s)) if s.code == 404 => {
                tracing::info!("waiting for the ClusterVersion API")
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the ClusterVersion"),
        }
        if let Some((at, limit)) = deadline
            && Instant::now() >= at
        {
            return Err(gave_up(limit));
        }
        if sleep_or_shutdown(options.poll_interval, &mut shutdown).await {
            return Ok(());
        }
    }
    let mut consecutive_errors = 0;
    loop {
        let leading = wait_for_leadership(&mut leader, &mut shutdown);
        // A one-shot run does not wait for ever on a Lease another replica holds.
        let stopping = match options.wait_for_cluster_version.filter(|_| options.once) {
            Some(limit) => tokio::time::timeout(limit, leading).await.map_err(|_| {
                anyhow::anyhow!(
                    "another replica holds the Lease; it was not free within {}",
                    seconds(limit)
                )
            })?,
            None => leading.await,
        };
        if stopping {
            tracing::info!("shutting down");
            return Ok(());
        }
        let started = std::time::Instant::now();
        let timed =
            tokio::time::timeout(options.pass_timeout, sync_once(client, options, &mut state));
        let pass = tokio::select! {
            result = timed => result.unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "the pass did not finish within {}; its remaining tasks were cancelled",
                    seconds(options.pass_timeout)
                ))
            }),
            // As upstream cancels its context: tasks stop at their next request; every apply
            // is idempotent, so the next start simply applies again.
            () = shutdown_requested(&mut shutdown) => {
                tracing::info!("shutting down: the running pass is cancelled");
                return Ok(());
            }
        };
        let mut synced_generation = None;
        // Upstream's worker acts on operator activity unless it is reconciling.
        let mut updating = true;
        let once_failure = match &pass {
            Ok(pass) if !pass.report.is_success() => Some(anyhow::anyhow!(
                "the pass did not apply everything: {} task(s) failed, {} not attempted",
                (pass.report.errors.iter())
                    .filter(|e| e.effect != Effect::Report)
                    .count(),
                pass.report.incomplete
            )),
            Ok(_) => None,
            Err(e) => Some(anyhow::anyhow!("the pass failed: {e:#}")),
        };
        match pass {
            Ok(pass) => {
                log_pass(options, &pass, started.elapsed());
                synced_generation = pass.status.observed_generation;
                updating = (pass.status.history.first()).is_none_or(|h| h.state != "Completed");
                consecutive_errors = if pass.report.is_success() {
                    0
                } else {
                    consecutive_errors + 1
                };
            }
            // With --once the error is the run's own, reported once by the caller.
            Err(_) if options.once => {
                if let Some(metrics) = &options.metrics {
                    metrics.observe_pass_error();
                }
            }
            Err(e) => {
                tracing::error!(error = format!("{e:#}"), "pass failed");
                if let Some(metrics) = &options.metrics {
                    metrics.observe_pass_error();
                }
                consecutive_errors += 1;
            }
        }
        if options.once {
            return once_failure.map_or(Ok(()), Err);
        }
        if *shutdown.borrow() {
            return Ok(());
        }
        let interval = next_wait(options.resync_interval, consecutive_errors, jitter());
        tracing::debug!(?interval, consecutive_errors, "sleeping");
        let woken = sleep_until_change(
            interval,
            &mut shutdown,
            &mut changes,
            synced_generation,
            updating,
        );
        if woken.await {
            tracing::info!("shutting down");
            return Ok(());
        }
    }
}

fn log_pass(options: &RunOptions, pass: &PassResult, elapsed: Duration) {
    if let Some(metrics) = &options.metrics {
        metrics.observe_pass(&pass.report, elapsed);
        metrics.set_ready();
    }
    tracing::info!(
        done = pass.report.done,
        total = pass.report.total,
        skipped = pass.report.skipped,
        waiting = pass.report.waiting.len(),
        stood_down = pass.report.stood_down.len(),
        errors = pass.report.errors.len(),
        incomplete = pass.report.incomplete,
        status_written = pass.status_written,
        seconds = elapsed.as_secs_f64(),
        "pass finished"
    );
    for e in &pass.report.errors {
        tracing::warn!(task = %e.task, reason = %e.reason, message = %e.message, "task failed");
    }
}

/// The wait before the next pass (spec §7.1): the resync interval ×[1,2) after a clean pass;
/// after failed ones `interval/16 × 2^n` (/8, /4, /2), then the interval, ×[1,1.2). Pure.
pub fn next_wait(interval: Duration, consecutive_errors: u32, jitter: f64) -> Duration {
    match consecutive_errors {
        0 => interval.mul_f64(1.0 + jitter),
        n if n >= 4 => interval.mul_f64(1.0 + 0.2 * jitter),
        n => (interval / 16 * 2u32.pow(n)).mul_f64(1.0 + 0.2 * jitter),
    }
}

/// Sleeps `duration`, or less when the ClusterVersion spec moves past `synced` (an
/// administrator's change is acted on at once, as upstream's informer does), the FeatureGate
/// changes, or, while `updating`, a ClusterOperator moves (upstream's
/// `NotifyAboutManagedResourceActivity`); true when shutdown was requested.
async fn sleep_until_change(
    duration: Duration,
    shutdown: &mut watch::Receiver<bool>,
    changes: &mut tokio::sync::mpsc::UnboundedReceiver<super::watches::Wake>,
    synced: Option<i64>,
    updating: bool,
) -> bool {
    use super::watches::Wake;
    let deadline = tokio::time::Instant::now() + duration;
    loop {
        if *shutdown.borrow() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return false,
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() { return true }
            }
            wake = changes.recv() => match wake {
                Some(Wake::Spec(generation)) if synced.is_some() && generation != synced => {
                    tracing::info!(?generation, "the ClusterVersion spec changed");
                    return false;
                }
                Some(Wake::ClusterOperator(message)) if updating => {
                    tracing::info!("{message}: syncing now");
                    return false;
                }
                Some(Wake::FeatureGate) => {
                    tracing::info!("the FeatureGate cluster changed: syncing now");
                    return false;
                }
                Some(_) => {}
                // The watch ended for good: sleep out the interval.
                None => {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    return sleep_or_shutdown(left, shutdown).await;
                }
            },
        }
    }
}

/// Resolves once shutdown is requested (never, when nobody can request it any more).
async fn shutdown_requested(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Waits until `leader` is true; true when shutdown was requested first (or the election
/// ended).
async fn wait_for_leadership(
    leader: &mut watch::Receiver<bool>,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    let mut logged = false;
    loop {
        if *shutdown.borrow() {
            return true;
        }
        if *leader.borrow_and_update() {
            return false;
        }
        if !logged {
            tracing::info!("not the leader: waiting for the lease before applying");
            logged = true;
        }
        tokio::select! {
            changed = leader.changed() => if changed.is_err() { return true },
            changed = shutdown.changed() => if changed.is_err() || *shutdown.borrow() { return true },
        }
    }
}

/// A number in [0, 1) from the clock's nanoseconds: enough to spread resyncs.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    f64::from(nanos) / 1e9
}

/// Sleeps; true when shutdown was requested (before or during the sleep).
async fn sleep_or_shutdown(duration: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    if *shutdown.borrow() {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(duration) => false,
        changed = shutdown.changed() => changed.is_err() || *shutdown.borrow(),
    }
}

/// The FeatureGate `cluster`; `None` when it (or its API) does not exist.
async fn feature_gate(
    client: &kube::Client,
) -> anyhow::Result<Option<super::feature_gates::ClusterFeatureGate>> {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "FeatureGate");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "featuregates");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    match api.get_opt("cluster").await {
        Ok(found) => {
            Ok(found.map(|fg| super::feature_gates::ClusterFeatureGate::from_object(&fg.data)))
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(e).context("cannot read FeatureGate cluster"),
    }
}

/// What a pass reads before deciding anything: the ClusterVersion (validated; upstream syncs
/// the spec with its invalid fields cleared and reports them in `Invalid`) and the feature set.
async fn observe(api: &Api<ClusterVersion>, client: &kube::Client) -> anyhow::Result<Observed> {
    let now = Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_default());
    let mut cluster_version = api
        .get(CLUSTER_VERSION_NAME)
        .await
        .context("cannot read ClusterVersion version")?;
    let validation_errors = validate_cluster_version(&cluster_version);
    for error in &validation_errors {
        tracing::warn!(%error, "the ClusterVersion is invalid; the field is ignored");
    }
    cluster_version.spec = clear_invalid_fields(&cluster_version.spec, &validation_errors);
    let feature_gate = feature_gate(client).await?;
    Ok(Observed {
        cluster_version,
        validation_errors,
        feature_set: (feature_gate.as_ref())
            .map(|g| g.feature_set.clone())
            .unwrap_or_default(),
        feature_gate,
        now,
    })
}

/// What the `Upgradeable` risk sources read from the cluster, read after a pass has applied (the
/// deletions in progress are the loop's own, added by [`pass_status`]), from `operators` (the
/// ClusterOperators listed once for this and the metrics). Errors are kept as the sources
/// report them.
async fn risk_facts(
    client: &kube::Client,
    operators: &Result<Vec<ClusterOperator>, String>,
) -> RiskFacts {
    use super::upgradeable::{
        ADMIN_ACKS, ADMIN_ACKS_NAMESPACE, ADMIN_GATES, ADMIN_GATES_NAMESPACE,
    };
    let operators = operators.as_ref().map_err(Clone::clone).map(|operators| {
        (operators.iter())
            .map(|co| {
                let name = co.metadata.name.clone().unwrap_or_default();
                let upgradeable = (co.status.iter())
                    .flat_map(|s| &s.conditions)
                    .find(|c| c.type_ == "Upgradeable")
                    .cloned();
                (name, upgradeable)
            })
            .collect()
    });
    RiskFacts {
        admin_gates: config_map_data(client, ADMIN_GATES_NAMESPACE, ADMIN_GATES).await,
        admin_acks: config_map_data(client, ADMIN_ACKS_NAMESPACE, ADMIN_ACKS).await,
        cluster_operators: operators,
        deletes_in_progress: Vec::new(),
    }
}

/// Every ClusterOperator, or why they cannot be listed (upstream's lister text).
async fn cluster_operators(client: &kube::Client) -> Result<Vec<ClusterOperator>, String> {
    match Api::<ClusterOperator>::all(client.clone())
        .list(&Default::default())
        .await
    {
        Ok(list) => Ok(list.items),
        Err(e) => Err(lister_error(e, "clusteroperator", "")),
    }
}

async fn config_map_data(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, String>, String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    match api.get(name).await {
        Ok(cm) => Ok(cm.data.unwrap_or_default()),
        Err(e) => Err(lister_error(e, "configmap", name)),
    }
}

/// The text upstream's informer listers give: `configmap "NAME" not found` for a missing
/// object (`errors.NewNotFound(v1.Resource("configmap"), name)`), else the server's message.
fn lister_error(error: kube::Error, resource: &str, name: &str) -> String {
    match error {
        kube::Error::Api(s) if s.code == 404 && !name.is_empty() => {
            format!("{resource} {name:?} not found")
        }
        kube::Error::Api(s) => s.message,
        other => other.to_string(),
    }
}

/// The payload of this pass: the release `spec.desiredUpdate` asks for once it is retrieved
/// and accepted, else the one applied before (spec §7.1).
async fn select_payload(
    client: &kube::Client,
    observed: &Observed,
    options: &RunOptions,
    state: &mut SyncState,
) -> Arc<Payload> {
    use super::events::{LoadOutcome, load_events};
    let cv = &observed.cluster_version;
    let first = state.current.is_none();
    let current = state
        .current
        .get_or_insert_with(|| Arc::new(options.payload.clone()))
        .clone();
    let mut events = Vec::new();
    if first {
        // Upstream's worker loads its own payload first, with the same Events.
        let startup = RequestedUpdate {
            image: current.release_image.clone(),
            version: current.version().unwrap_or_default().to_string(),
        };
        let loaded = LoadOutcome::Loaded {
            unverified: None,
            preconditions: None,
            version: current.version().unwrap_or_default(),
            architecture: architecture(&current),
        };
        events = load_events(&startup, true, &loaded);
    }
    let startup = RequestedUpdate {
        image: options.payload.release_image.clone(),
        version: String::new(),
    };
    // A preflight is not a request to move: the payload applied stays.
    let preflight = (cv.spec.desired_update.as_ref()).is_some_and(|u| u.is_preflight());
    let target = match requested_release(cv) {
        Some(target) => target,
        None if preflight => RequestedUpdate {
            image: current.release_image.clone(),
            version: String::new(),
        },
        None => startup,
    };
    let initializing = super::pass::sync_mode(cv.status.as_ref(), &current.release_image)
        == SyncMode::Initializing;
    let release = match switch_decision(target, &current.release_image, initializing) {
        SwitchDecision::Keep => {
            state.release_failure = None;
            state.release_retrieving = None;
            record_events(options, &events).await;
            return current;
        }
        SwitchDecision::IgnoreWhileInitializing => {
            tracing::info!(
                current = %current.release_image,
                "ignoring the requested release during payload initialization"
            );
            record_events(options, &events).await;
            return current;
        }
        SwitchDecision::Load(release) => release,
    };
    // A retrieval that went on in the background is not a new one.
    let starting = state.release_retrieving.as_ref() != Some(&release);
    // The operator's own payload is "local": upstream runs no preconditions for it.
    let local = release.image == options.payload.release_image;
    let force = (observed.cluster_version.spec.desired_update.as_ref()).is_some_and(|u| u.force);
    let (loaded, verified, forced_unverified) = if local {
        (Ok(Arc::new(options.payload.clone())), false, None)
    } else {
        let stores = &observed.cluster_version.spec.signature_stores;
        match retrieve_in_time(
            client,
            &release,
            &current,
            stores,
            force,
            Purpose::Update,
            options,
        )
        .await
        {
            Ok(Some(r)) => (Ok(Arc::new(r.payload)), r.verified, r.forced_unverified),
            Ok(None) => {
                tracing::info!(image = %release.image, "the requested release is still being retrieved; still applying the current payload");
                events.extend(load_events(
                    &release,
                    starting,
                    &LoadOutcome::StillRetrieving,
                ));
                record_events(options, &events).await;
                state.release_failure = None;
                state.release_retrieving = Some(release);
                return current;
            }
            Err(e) => (Err(e), false, None),
        }
    };
    let input = PassInput {
        observed,
        operator: &options.facts,
        state,
    };
    let accepted =
        loaded.and_then(|next| Ok((accept_release(&input, &current, &next, local)?, next)));
    let outcome = match &accepted {
        Ok((accepted, next)) => LoadOutcome::Loaded {
            unverified: forced_unverified.as_deref(),
            preconditions: accepted.risks.as_deref(),
            version: next.version().unwrap_or_default(),
            architecture: architecture(next),
        },
        Err(failure) => LoadOutcome::Failed(failure),
    };
    events.extend(load_events(&release, starting, &outcome));
    record_events(options, &events).await;
    match accepted {
        Ok((accepted, next)) => {
            tracing::info!(
                from = %current.release_image,
                to = %next.release_image,
                version = next.version().unwrap_or(""),
                implicitly_enabled = ?accepted.implicitly_enabled,
                accepted_risks = accepted.risks.as_deref().unwrap_or(""),
                "loaded the requested release"
            );
            let mut accepted = accepted;
            if let Some(unverified) = forced_unverified {
                accepted.risks = Some(match accepted.risks.take().filter(|r| !r.is_empty()) {
                    Some(risks) => format!("{unverified}\n{risks}"),
                    None => unverified,
                });
            }
            state.adopt(next.clone(), accepted);
            state.verified = verified;
            next
        }
        Err(failure) => {
            tracing::warn!(image = %release.image, error = %failure, "cannot use the requested release; still applying the current payload");
            state.release_retrieving = None;
            state.release_failure = Some((release, failure));
            current
        }
    }
}

/// A payload's architecture as upstream's `PayloadLoaded` names it: the release's, else this
/// process's.
fn architecture(payload: &Payload) -> &str {
    (payload.release.as_ref())
        .and_then(|r| r.architecture.as_deref())
        .filter(|a| !a.is_empty())
        .unwrap_or(crate::payload::metadata::running_architecture())
}

async fn record_events(options: &RunOptions, events: &[super::events::ClusterVersionEvent]) {
    if let Some(recorder) = &options.events
        && !events.is_empty()
    {
        recorder.record(events).await;
    }
}

/// [`retrieve`] within `options.payload_timeout`; `None` when it is still running. The
/// retrieval runs as a task of its own: one that times out is not cancelled but goes on in the
/// background and fills the image cache, so a large release on a slow registry is adopted by a
/// later pass instead of being pulled from scratch every time. Meanwhile the status says it is
/// being retrieved (`ReleaseAccepted=Unknown`), as upstream's does.
async fn retrieve_in_time(
    client: &kube::Client,
    release: &RequestedUpdate,
    current: &Payload,
    signature_stores: &[crate::cluster::SignatureStore],
    force: bool,
    purpose: Purpose,
    options: &RunOptions,
) -> Result<Option<Retrieved>, LoadFailure> {
    // The cluster's mirror sets and pull secret, read for each retrieval as a node would pull it.
    let images = crate::cluster::pull_secret::as_a_node_pulls(client, &options.images).await;
    let release = release.clone();
    let (sources, profile) = (options.release_sources, options.facts.profile.clone());
    // The verifier the applied payload declares (upstream builds it from the payload it runs).
    let cannot = |e: String| LoadFailure {
        step: PayloadLoadStep::RetrievePayload,
        error: format!("The update cannot be verified: {e}"),
    };
    let verifier = match crate::verify::config::from_manifests(&current.manifests) {
        None => None,
        Some(Ok(mut verifier)) => {
            let cas = store_ca_config_maps(client, signature_stores).await;
            if let Some((stores, store_cas)) =
                spec_signature_stores(signature_stores, &cas).map_err(cannot)?
            {
                verifier.stores = stores;
                verifier.store_cas = store_cas;
            }
            Some(verifier)
        }
        Some(Err(e)) => return Err(cannot(e.to_string())),
    };
    let (local, egress) = match &verifier {
        Some(_) => {
            // The stores are reached as the update service is (upstream's one HTTP client).
            let fetch = cluster_fetch_options(client, &options.update_fetch).await;
            let egress = crate::verify::store::Egress {
                ca_bundle: fetch.ca_bundle,
                proxy: fetch.proxy,
            };
            (signature_config_maps(client, &release.image).await, egress)
        }
        None => Default::default(),
    };
    let image = release.image.clone();
    let retrieval = tokio::spawn(async move {
        let signatures = verifier
            .as_ref()
            .map(|verifier| super::retrieve::SignatureCheck {
                verifier,
                local_signatures: &local,
                egress: &egress,
            });
        retrieve(&release, &images, sources, &profile, signatures, force).await
    });
    match tokio::time::timeout(options.payload_timeout, retrieval).await {
        Ok(Ok(Ok(retrieved))) => {
            if purpose == Purpose::Update {
                persist_signatures(client, &image, &retrieved.signatures).await;
            }
            Ok(Some(retrieved))
        }
        Ok(Ok(Err(failure))) => Err(failure),
        Ok(Err(e)) => Err(LoadFailure {
            step: PayloadLoadStep::RetrievePayload,
            error: format!("the retrieval task failed: {e}"),
        }),
        Err(_) => Ok(None),
    }
}

/// Why a release is retrieved: a preflight writes nothing, not even the signatures it verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Update,
    Preflight,
}

/// `spec.signatureStores`, which replace the payload's stores when set (`None` when empty),
/// and the CA bundles of those with a `ca`. As the API documents it, a store whose `ca`
/// ConfigMap (in `openshift-config`, key `ca.crt`) is missing, lacks the key or holds no valid
/// PEM certificate is not honored; a store without `ca` trusts the system's roots.
fn spec_signature_stores(
    stores: &[crate::cluster::SignatureStore],
    ca_config_maps: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<Option<(Vec<String>, StoreCas)>, String> {
    if stores.is_empty() {
        return Ok(None);
    }
    let mut urls = Vec::new();
    let mut cas = BTreeMap::new();
    for (i, store) in stores.iter().enumerate() {
        if !crate::verify::config::is_http_url(&store.url) {
            return Err(format!(
                "spec.signatureStores[{i}].url {:?}: must be a valid URL with scheme http:// or https://",
                store.url
            ));
        }
        if let Some(ca) = &store.ca {
            let pem = (ca_config_maps.get(&ca.name))
                .and_then(|data| data.get(STORE_CA_KEY))
                .filter(|pem| {
                    reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                        .is_ok_and(|certs| !certs.is_empty())
                });
            let Some(pem) = pem else {
                tracing::warn!(store = %store.url, configmap = %format!("{STORE_CA_NAMESPACE}/{}", ca.name), "spec.signatureStores[{i}] is not honored: its ca ConfigMap is missing, has no {STORE_CA_KEY} or no valid PEM certificate");
                continue;
            };
            cas.insert(store.url.clone(), pem.as_bytes().to_vec());
        }
        urls.push(store.url.clone());
    }
    Ok(Some((urls, cas)))
}

/// CA bundles (PEM) by signature store URL.
type StoreCas = BTreeMap<String, Vec<u8>>;

/// Where `spec.signatureStores[].ca` ConfigMaps live, and their key.
const STORE_CA_NAMESPACE: &str = "openshift-config";
const STORE_CA_KEY: &str = "ca.crt";

/// The data of the ConfigMaps `spec.signatureStores[].ca` name, by name; a missing or unreadable
/// one is left out (its store is then not honored).
async fn store_ca_config_maps(
    client: &kube::Client,
    stores: &[crate::cluster::SignatureStore],
) -> BTreeMap<String, BTreeMap<String, String>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), STORE_CA_NAMESPACE);
    let mut found = BTreeMap::new();
    for name in stores.iter().filter_map(|s| s.ca.as_ref().map(|c| &c.name)) {
        match api.get_opt(name).await {
            Ok(Some(config_map)) => {
                found.insert(name.clone(), config_map.data.unwrap_or_default());
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, configmap = %name, "cannot read a signature store's CA ConfigMap")
            }
        }
    }
    found
}

/// The signatures of `image`'s digest in the signature ConfigMaps (upstream reads them before
/// the stores). A failure to list them is not fatal: the stores may still have signatures.
async fn signature_config_maps(client: &kube::Client, image: &str) -> Vec<Vec<u8>> {
    use crate::verify::config::{SIGNATURES_LABEL, SIGNATURES_NAMESPACE};
    let Some((_, digest)) = image.rsplit_once('@') else {
        return Vec::new();
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), SIGNATURES_NAMESPACE);
    let listed = api
        .list(&kube::api::ListParams::default().labels(SIGNATURES_LABEL))
        .await;
    let config_maps = match listed {
        Ok(list) => list.items,
        Err(e) => {
            tracing::info!(error = %e, namespace = SIGNATURES_NAMESPACE, "cannot list the signature ConfigMaps; using the signature stores only");
            return Vec::new();
        }
    };
    let entries = (config_maps.iter())
        .flat_map(|cm| cm.binary_data.iter().flatten())
        .map(|(key, value)| (key.as_str(), value.0.as_slice()));
    crate::verify::release::signatures_in_config_maps(digest, entries)
}

/// Writes the signatures that verified `image` into the ConfigMap `signatures-managed` of the
/// signature namespace, labelled as the signature ConfigMaps are, as upstream's verifier
/// persists the signatures it verified (library-go's `StorePersister`), so that a cluster that
/// later loses its stores still has them. Best effort: a failure is a warning.
async fn persist_signatures(client: &kube::Client, image: &str, signatures: &[Vec<u8>]) {
    use crate::verify::config::{SIGNATURES_LABEL, SIGNATURES_NAMESPACE};
    use crate::verify::release::{SIGNATURES_MANAGED_NAME, persisted_signatures};
    use k8s_openapi::ByteString;
    let Some((_, digest)) = image.rsplit_once('@') else {
        return;
    };
    if signatures.is_empty() {
        return;
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), SIGNATURES_NAMESPACE);
    let write = async {
        let existing = api.get_opt(SIGNATURES_MANAGED_NAME).await?;
        let old: BTreeMap<String, Vec<u8>> = (existing.as_ref())
            .and_then(|cm| cm.binary_data.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let data = persisted_signatures(&old, digest, signatures);
        if existing.is_some() && data == old {
            return Ok(());
        }
        let mut config_map = existing.unwrap_or_default();
        config_map.metadata.name = Some(SIGNATURES_MANAGED_NAME.to_string());
        config_map.metadata.namespace = Some(SIGNATURES_NAMESPACE.to_string());
        (config_map
            .metadata
            .labels
            .get_or_insert_with(Default::default))
        .insert(SIGNATURES_LABEL.to_string(), String::new());
        config_map.binary_data = Some(data.into_iter().map(|(k, v)| (k, ByteString(v))).collect());
        match config_map.metadata.resource_version {
            Some(_) => {
                api.replace(SIGNATURES_MANAGED_NAME, &Default::default(), &config_map)
                    .await
            }
            None => api.create(&Default::default(), &config_map).await,
        }
        .map(|_| ())
    };
    let result: Result<(), kube::Error> = write.await;
    match result {
        Ok(()) => {
            tracing::info!(%digest, configmap = %format!("{SIGNATURES_NAMESPACE}/{SIGNATURES_MANAGED_NAME}"), "saved the verified signatures")
        }
        Err(error) => {
            tracing::warn!(%error, %digest, "cannot save the verified signatures in {SIGNATURES_NAMESPACE}/{SIGNATURES_MANAGED_NAME}")
        }
    }
}

/// Upstream's cluster metrics after a pass, from its status and the ClusterOperators (when
/// they cannot be listed, the operator series are left out for this pass).
fn record_cluster_series(
    metrics: &super::Metrics,
    cv: &ClusterVersion,
    status: &ClusterVersionStatus,
    payload: &Payload,
    operators: &Result<Vec<ClusterOperator>, String>,
) {
    let operators = match operators {
        Ok(operators) => operators.as_slice(),
        Err(error) => {
            tracing::debug!(%error, "cannot list ClusterOperators for the metrics");
            &[]
        }
    };
    let current = super::cluster_metrics::Current {
        version: payload.version().unwrap_or_default(),
        image: &payload.release_image,
        created: payload.created.unwrap_or(0),
    };
    let series = super::cluster_metrics::series(cv, status, &current, operators);
    metrics.set_cluster(&series);
}

/// `cluster_installer` from the installer's ConfigMaps in `openshift-config`.
async fn installer(client: &kube::Client) -> Option<(String, String, String)> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "openshift-config");
    let read = async |name: &str| match api.get_opt(name).await {
        Ok(found) => Ok(found.map(|cm| cm.data.unwrap_or_default())),
        Err(e) => Err(e.to_string()),
    };
    let install = read("openshift-install").await;
    let manifests = match install {
        Ok(None) => read("openshift-install-manifests").await,
        _ => Ok(None),
    };
    super::cluster_metrics::installer_series(&install, &manifests)
}

/// `12s`, or `0.250s` below a second.
fn seconds(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{:.3}s", duration.as_secs_f64())
    } else {
        format!("{}s", duration.as_secs())
    }
}

/// Applies `plan` to the cluster.
async fn execute(
    client: &kube::Client,
    plan: &PassPlan<'_>,
    cv: &ClusterVersion,
    options: &RunOptions,
    deletions: &Arc<Mutex<Deletions>>,
) -> ApplyReport {
    let apply_options = ApplyOptions {
        check_cluster_operators: true,
        deletions: Some(deletions.clone()),
        initializing: plan.sync_mode == SyncMode::Initializing,
        owner: ClusterVersionOwner::of(cv),
        ..options.apply.clone()
    };
    tracing::info!(sync_mode = ?plan.sync_mode, image = %plan.payload.release_image, tasks = plan.manifests.len(), "starting a pass");
    apply_graph(
        client,
        &plan.manifests,
        &plan.graph,
        plan.mode,
        &plan.config,
        plan.workers,
        &apply_options,
    )
    .await
}

/// Writes `status` with server-side apply when it differs from `previous`; true when written.
async fn write_status(
    api: &Api<ClusterVersion>,
    previous: Option<&ClusterVersionStatus>,
    status: &ClusterVersionStatus,
) -> anyhow::Result<bool> {
    if previous == Some(status) {
        return Ok(false);
    }
    let patch = serde_json::json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "status": status,
    });
    api.patch_status(
        CLUSTER_VERSION_NAME,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .context("cannot write the ClusterVersion status")?;
    Ok(true)
}

/// Asks the update service for the updates from `payload` when it is due (the resync
/// interval passed, or the upstream, channel or architecture changed), and records the answer
/// in `state` for the status. Then the conditional update risks are evaluated, as upstream
/// does: after each retrieval, and while some risk could not be evaluated.
async fn refresh_updates(
    client: &kube::Client,
    observed: &Observed,
    payload: &Payload,
    options: &RunOptions,
    state: &mut SyncState,
) {
    let retrieved = retrieve_updates(client, observed, payload, options, state).await;
    let Some(updates) = state.updates.as_mut() else {
        return;
    };
    // The querier's address is looked up once for the risks and the alerts.
    let target = crate::updates::promql_target::resolve(client, &options.prometheus).await;
    if retrieved || !settled(&updates.conditional, &updates.risks) {
        prometheus::evaluate(updates, &target).await;
    }
    super::alert_risks::refresh(updates, &target).await;
    let spec = &observed.cluster_version.spec;
    updates.accepted = (spec.desired_update.iter())
        .flat_map(|u| &u.accept_risks)
        .map(|r| r.name.clone())
        .collect();
}

/// Asks the update service when it is due; true when it did.
async fn retrieve_updates(
    client: &kube::Client,
    observed: &Observed,
    payload: &Payload,
    options: &RunOptions,
    state: &mut SyncState,
) -> bool {
    let default = options.update_service.as_deref().unwrap_or_default();
    let preferred = options.preferred_update_service.as_deref();
    let (query, key) = updates_query(&observed.cluster_version, payload, preferred, default);
    let now = std::time::Instant::now();
    if !AvailableUpdates::due(state.updates.as_ref(), &key, now, options.resync_interval) {
        return false;
    }
    let fetch_options = cluster_fetch_options(client, &options.update_fetch).await;
    let result = fetch::retrieve(&query, &fetch_options).await;
    match &result {
        Ok(u) => tracing::info!(
            upstream = %key.upstream, channel = %key.channel,
            updates = u.updates.len(), conditional = u.conditional.len(),
            "retrieved available updates"
        ),
        Err(e) => {
            tracing::info!(upstream = %key.upstream, channel = %key.channel, error = %e, "cannot retrieve available updates")
        }
    }
    state.updates = Some(AvailableUpdates::record(
        state.updates.take(),
        key,
        now,
        result,
    ));
    true
}

/// `cvo start`'s update service settings with the cluster's proxy and trusted CA bundles, read
/// for each request as upstream's `getTransport` does ([`crate::updates::transport`]). A Proxy
/// API that is not installed, or a ConfigMap that does not exist, is no proxy or no bundle.
async fn cluster_fetch_options(client: &kube::Client, configured: &FetchOptions) -> FetchOptions {
    use crate::updates::transport::{
        PROXY_NAME, TRUSTED_CA_BUNDLE_NAME, TRUSTED_CA_BUNDLE_NAMESPACE, USER_CA_NAMESPACE,
        ca_bundle, proxy_settings, trusted_ca_name,
    };
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "Proxy");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "proxies");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let proxy = match api.get_opt(PROXY_NAME).await {
        Ok(found) => found.map(|p| p.data),
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(error) => {
            tracing::warn!(%error, "cannot read Proxy cluster; asking the update service without it");
            None
        }
    };
    let managed =
        config_map_data(client, TRUSTED_CA_BUNDLE_NAMESPACE, TRUSTED_CA_BUNDLE_NAME).await;
    let user = match trusted_ca_name(proxy.as_ref()) {
        Some(name) => {
            let data = config_map_data(client, USER_CA_NAMESPACE, &name).await;
            if let Err(error) = &data {
                tracing::warn!(%error, "cannot read the Proxy's trusted CA ConfigMap");
            }
            data.ok()
        }
        None => None,
    };
    FetchOptions {
        timeout: configured.timeout,
        ca_bundle: ca_bundle(
            configured.ca_bundle.as_deref(),
            managed.ok().as_ref(),
            user.as_ref(),
        ),
        proxy: proxy_settings(proxy.as_ref()).or_else(|| configured.proxy.clone()),
    }
}

/// Brings `state.preflight` up to date with the ClusterVersion: cleared when no preflight is
/// asked for; evaluated when [`due`]; otherwise kept (continuous mode re-evaluates on the
/// resync interval). `plan` is this pass's plan of the current payload.
async fn refresh_preflight(
    client: &kube::Client,
    observed: &Observed,
    current: &Arc<Payload>,
    plan: &PassPlan<'_>,
    options: &RunOptions,
    state: &mut SyncState,
) {
    let cv = &observed.cluster_version;
    let Some(target) = preflight_target(cv) else {
        state.preflight = None;
        return;
    };
    let now = std::time::Instant::now();
    if !due(
        state.preflight.as_ref(),
        &target,
        now,
        options.resync_interval,
    ) {
        return;
    }
    // A new target starts out running; a re-evaluation keeps showing the last result.
    if state.preflight.as_ref().is_none_or(|p| p.target != target) {
        state.preflight = Some(Preflight {
            target: target.clone(),
            phase: Phase::Running,
            evaluated: None,
        });
    }
    let stores = &cv.spec.signature_stores;
    let retrieved = retrieve_in_time(
        client,
        &target,
        current,
        stores,
        false,
        Purpose::Preflight,
        options,
    )
    .await;
    let loaded = retrieved.and_then(|r| {
        let Some(r) = r else { return Ok(None) };
        let requested = Some(target.version.as_str()).filter(|v| !v.is_empty());
        verify_version(requested, r.payload.version())?;
        Ok(Some(r.payload))
    });
    let phase = match loaded {
        Ok(None) => {
            tracing::info!(image = %target.image, "the preflight target is still being retrieved");
            return;
        }
        Err(failure) => {
            tracing::warn!(image = %target.image, error = %failure, "the preflight target cannot be used");
            Phase::Failed {
                reason: failure.step.as_str().to_string(),
                message: failure.error,
            }
        }
        Ok(Some(next)) => {
            let input = PassInput {
                observed,
                operator: &options.facts,
                state,
            };
            let prometheus = &options.prometheus;
            let report =
                super::preflight::evaluate(client, &input, current, &next, plan, prometheus).await;
            tracing::info!(summary = %report.summary(), "preflight evaluated");
            Phase::Completed(Box::new(report))
        }
    };
    state.preflight = Some(Preflight {
        target,
        phase,
        evaluated: Some(now),
    });
}

/// One pass: observe the cluster, choose the payload, plan, apply, write the next status.
pub async fn sync_once(
    client: &kube::Client,
    options: &RunOptions,
    state: &mut SyncState,
) -> anyhow::Result<PassResult> {
    let api: Api<ClusterVersion> = Api::all(client.clone());
    let observed = observe(&api, client).await?;
    let payload = select_payload(client, &observed, options, state).await;
    refresh_updates(client, &observed, &payload, options, state).await;
    let input = PassInput {
        observed: &observed,
        operator: &options.facts,
        state,
    };
    let plan = plan_pass(&input, &payload);
    // Fixed before anything is applied: a pass cut short has still enabled them.
    state.record_capabilities(&plan);
    if let Some(metrics) = &options.metrics {
        metrics.set_capabilities(&plan.capabilities);
    }
    let cv = &observed.cluster_version;
    let deletions = Arc::new(Mutex::new(std::mem::take(&mut state.deletions)));
    let report = execute(client, &plan, cv, options, &deletions).await;
    state.deletions = std::mem::take(&mut *deletions.lock().unwrap_or_else(|e| e.into_inner()));
    state.record_pass(&report, &observed.now);
    // After the apply, so that a slow target release never holds the current one up.
    refresh_preflight(client, &observed, &payload, &plan, options, state).await;
    // Listed once: for the risk sources and for the metrics.
    let operators = cluster_operators(client).await;
    let risk_facts = risk_facts(client, &operators).await;
    let status = pass_status(&observed, &plan, &report, state, &risk_facts);
    let status_written = write_status(&api, cv.status.as_ref(), &status).await?;
    if let Some(metrics) = &options.metrics {
        record_cluster_series(metrics, cv, &status, &payload, &operators);
        metrics.set_installer(installer(client).await);
        metrics.observe_updates(state.updates.as_ref(), Timestamp::now().as_second());
    }
    Ok(PassResult {
        report,
        status,
        status_written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_stores_with_a_ca_are_honored_only_with_a_valid_bundle() {
        use crate::cluster::SignatureStore;
        use crate::cluster::crds::ConfigMapNameReference;
        let (cert, _) = crate::host::webhook::make_certificate(
            &["localhost".to_string()],
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        let store = |url: &str, ca: Option<&str>| SignatureStore {
            url: url.into(),
            ca: ca.map(|name| ConfigMapNameReference { name: name.into() }),
        };
        let data = |key: &str, value: &str| BTreeMap::from([(key.to_string(), value.to_string())]);
        let maps = BTreeMap::from([
            ("good".to_string(), data("ca.crt", &cert.ca)),
            ("wrong-key".to_string(), data("ca-bundle.crt", &cert.ca)),
            ("not-pem".to_string(), data("ca.crt", "hello")),
        ]);
        let stores = [
            store("https://plain.example", None),
            store("https://good.example", Some("good")),
            store("https://missing.example", Some("missing")),
            store("https://wrong-key.example", Some("wrong-key")),
            store("https://not-pem.example", Some("not-pem")),
        ];
        let (urls, cas) = spec_signature_stores(&stores, &maps).unwrap().unwrap();
        assert_eq!(urls, ["https://plain.example", "https://good.example"]);
        assert_eq!(
            cas,
            BTreeMap::from([(
                "https://good.example".to_string(),
                cert.ca.as_bytes().to_vec()
            )])
        );
        assert_eq!(spec_signature_stores(&[], &maps).unwrap(), None);
        let bad = spec_signature_stores(&[store("ftp://x", None)], &maps).unwrap_err();
        assert!(
            bad.contains("must be a valid URL with scheme http:// or https://"),
            "{bad}"
        );
    }

    #[test]
    fn waits_back_off_after_failed_passes() {
        let interval = Duration::from_secs(160);
        assert_eq!(next_wait(interval, 0, 0.0), interval);
        assert_eq!(next_wait(interval, 0, 0.5), Duration::from_secs(240));
        assert_eq!(next_wait(interval, 1, 0.0), Duration::from_secs(20));
        assert_eq!(next_wait(interval, 2, 0.0), Duration::from_secs(40));
        assert_eq!(next_wait(interval, 3, 0.0), Duration::from_secs(80));
        assert_eq!(next_wait(interval, 4, 0.0), interval);
        assert_eq!(next_wait(interval, 9, 0.5), Duration::from_secs(176));
    }

    #[test]
    fn jitter_is_a_fraction() {
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
    }
}
