//! The sync loop of `cvo start` (spec §4.3, §7.1): wait for the ClusterVersion `version`, then
//! every resync interval compute capabilities, filter the payload, apply it and write the
//! ClusterVersion status (server-side apply, only when it changed).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use tokio::sync::watch;

use crate::capability::{
    Capability, ClusterCapabilities, Registry, set_capabilities, set_from_implicitly_enabled,
};
use crate::cluster::{ClusterVersion, ClusterVersionStatus, Release};
use crate::graph::{Mode, TaskGraph, workers_for};
use crate::hash::version_hash;
use crate::include::{CapabilityFilter, InclusionConfig};
use crate::payload::Payload;

use super::apply::{ApplyOptions, ApplyReport, FIELD_MANAGER, apply_payload_with};
use super::lease::{LeaderElector, LeaseConfig};
use super::metrics::Metrics;
use super::status::{Failure, Progress, StatusInput, next_status};

/// The singleton's name.
pub const CLUSTER_VERSION_NAME: &str = "version";
const DEFAULT_PROFILE: &str = "self-managed-high-availability";

/// What `cvo start` was given.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The payload, loaded (its `release_image` is what `status.desired.image` reports).
    pub payload: Payload,
    /// Between passes; jittered ×[1,2) unless `once`.
    pub resync_interval: Duration,
    /// `--always-enable-capabilities`.
    pub always_enable: Vec<Capability>,
    /// One pass, then return.
    pub once: bool,
    /// `$CLUSTER_PROFILE`, else `self-managed-high-availability`.
    pub profile: String,
    /// `$EXCLUDE_MANIFESTS`.
    pub exclude: Option<String>,
    /// Retry bounds of each pass (ClusterOperator checking is always on).
    pub apply: ApplyOptions,
    /// How often to look for the ClusterVersion while it does not exist.
    pub poll_interval: Duration,
    /// Leader election: passes run only while this replica holds the Lease; `None`: always.
    pub lease: Option<LeaseConfig>,
    /// Where passes are recorded (capabilities, apply counts and durations, readiness).
    pub metrics: Option<Arc<Metrics>>,
}

impl RunOptions {
    /// Defaults for `payload`, with the profile and exclusion from the environment.
    pub fn new(payload: Payload) -> Self {
        RunOptions {
            payload,
            resync_interval: Duration::from_secs(180),
            always_enable: vec![],
            once: false,
            profile: profile_from_env(),
            exclude: std::env::var("EXCLUDE_MANIFESTS")
                .ok()
                .filter(|e| !e.is_empty()),
            apply: ApplyOptions::default(),
            poll_interval: Duration::from_secs(1),
            lease: None,
            metrics: None,
        }
    }
}

/// `$CLUSTER_PROFILE`, else `self-managed-high-availability`.
pub fn profile_from_env() -> String {
    std::env::var("CLUSTER_PROFILE")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_PROFILE.to_string())
}

/// What the loop remembers between passes.
#[derive(Debug, Clone, Default)]
pub struct SyncState {
    /// The previous pass's capabilities; `None` before the first pass (then the prior
    /// capabilities are the ClusterVersion's `status.capabilities.enabledCapabilities`).
    pub capabilities: Option<ClusterCapabilities>,
    /// Capabilities an upgrade implicitly enabled (spec §4.2); kept in memory as upstream does.
    pub upgrade_implicit: BTreeSet<Capability>,
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
    let elector = tokio::spawn(elector.run(leader_tx, stop_rx));
    let result = run_passes(client, options, shutdown, leader_rx).await;
    // Stop renewing only after the last pass, then release.
    let _ = stop_tx.send(true);
    if let Err(e) = elector.await {
        tracing::warn!(error = %e, "the leader election task failed");
    }
    result
}

async fn run_passes(
    client: &kube::Client,
    options: &RunOptions,
    mut shutdown: watch::Receiver<bool>,
    mut leader: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let mut state = SyncState::default();
    let api: Api<ClusterVersion> = Api::all(client.clone());
    loop {
        match api.get_opt(CLUSTER_VERSION_NAME).await {
            Ok(Some(_)) => break,
            Ok(None) => tracing::info!("waiting for ClusterVersion {CLUSTER_VERSION_NAME}"),
            // The CRD itself may not be served yet.
            Err(kube::Error::Api(s)) if s.code == 404 => {
                tracing::info!("waiting for the ClusterVersion API")
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the ClusterVersion"),
        }
        if sleep_or_shutdown(options.poll_interval, &mut shutdown).await {
            return Ok(());
        }
    }
    loop {
        if wait_for_leadership(&mut leader, &mut shutdown).await {
            tracing::info!("shutting down");
            return Ok(());
        }
        let started = std::time::Instant::now();
        match sync_once(client, options, &mut state).await {
            Ok(pass) => {
                let elapsed = started.elapsed();
                if let Some(metrics) = &options.metrics {
                    metrics.observe_pass(&pass.report, elapsed);
                    metrics.set_ready();
                }
                tracing::info!(
                    done = pass.report.done,
                    total = pass.report.total,
                    skipped = pass.report.skipped,
                    waiting = pass.report.waiting.len(),
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
            Err(e) => tracing::error!(error = format!("{e:#}"), "pass failed"),
        }
        if options.once || *shutdown.borrow() {
            return Ok(());
        }
        let interval = options.resync_interval.mul_f64(1.0 + jitter());
        tracing::debug!(?interval, "sleeping");
        if sleep_or_shutdown(interval, &mut shutdown).await {
            tracing::info!("shutting down");
            return Ok(());
        }
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

/// The sync states of spec §7.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    Initializing,
    Updating,
    Reconciling,
}

/// No Completed history ⇒ Initializing; the top entry Completed with the desired image ⇒
/// Reconciling; else Updating. Pure.
pub fn sync_mode(status: Option<&ClusterVersionStatus>, image: &str) -> SyncMode {
    let history = status.map(|s| s.history.as_slice()).unwrap_or_default();
    if !history.iter().any(|h| h.state == "Completed") {
        SyncMode::Initializing
    } else if history[0].state == "Completed" && history[0].image == image {
        SyncMode::Reconciling
    } else {
        SyncMode::Updating
    }
}

/// `spec.featureSet` of the FeatureGate `cluster`; `""` when it (or its API) does not exist.
async fn feature_set(client: &kube::Client) -> anyhow::Result<String> {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "FeatureGate");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "featuregates");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    match api.get_opt("cluster").await {
        Ok(found) => Ok(found
            .and_then(|fg| {
                fg.data
                    .pointer("/spec/featureSet")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(String::new()),
        Err(e) => Err(e).context("cannot read FeatureGate cluster"),
    }
}

/// One pass: read the ClusterVersion, compute capabilities, apply, write the status.
pub async fn sync_once(
    client: &kube::Client,
    options: &RunOptions,
    state: &mut SyncState,
) -> anyhow::Result<PassResult> {
    let now = || Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_default());
    let api: Api<ClusterVersion> = Api::all(client.clone());
    let cv = api
        .get(CLUSTER_VERSION_NAME)
        .await
        .context("cannot read ClusterVersion version")?;
    let payload = &options.payload;
    let feature_set = feature_set(client).await?;
    let gates = payload
        .feature_gates_for(&feature_set, &options.profile)
        .unwrap_or_default();

    // Capabilities (spec §4.3).
    let prior: Vec<Capability> = match &state.capabilities {
        Some(caps) => caps.enabled.iter().cloned().collect(),
        None => cv
            .status
            .as_ref()
            .and_then(|s| s.capabilities.as_ref())
            .map(|c| c.enabled_capabilities.clone())
            .unwrap_or_default(),
    };
    let mut ensure = prior;
    ensure.extend(options.always_enable.iter().cloned());
    let caps = set_capabilities(
        &Registry::standard(),
        cv.spec.capabilities.as_ref(),
        &ensure,
        &gates,
    );
    let implicit: BTreeSet<Capability> = caps
        .implicitly_enabled
        .union(&state.upgrade_implicit)
        .cloned()
        .collect();
    let caps = set_from_implicitly_enabled(&implicit, caps);
    state.capabilities = Some(caps.clone());
    if let Some(metrics) = &options.metrics {
        metrics.set_capabilities(&caps);
    }

    // Load-time filter, then the apply-time filters of the pass.
    let load = InclusionConfig {
        exclude_identifier: options.exclude.clone(),
        required_feature_set: Some(feature_set.clone()),
        profile: Some(options.profile.clone()),
        enabled_feature_gates: Some(gates.clone()),
        major_version: payload.major_version(),
        ..Default::default()
    };
    let manifests = payload.included(&load);
    let config = InclusionConfig {
        capabilities: Some(CapabilityFilter {
            known_capabilities: caps.known.clone(),
            enabled_capabilities: caps.enabled.clone(),
        }),
        overrides: Some(cv.spec.overrides.clone()),
        ..load
    };

    let image = payload.release_image.clone();
    let sync_mode = sync_mode(cv.status.as_ref(), &image);
    let mode = match sync_mode {
        SyncMode::Initializing => Mode::Install,
        SyncMode::Updating | SyncMode::Reconciling => Mode::Update,
    };
    let workers = workers_for(mode, &TaskGraph::build(&manifests, mode));
    let apply_options = ApplyOptions {
        check_cluster_operators: true,
        initializing: sync_mode == SyncMode::Initializing,
        ..options.apply.clone()
    };
    tracing::info!(?sync_mode, image = %image, tasks = manifests.len(), "starting a pass");
    let report =
        apply_payload_with(client, &manifests, &config, mode, workers, &apply_options).await;

    let release = payload.release.as_ref();
    let desired = Release {
        version: release.map(|r| r.version.clone()),
        image: Some(image),
        url: release.and_then(|r| r.url.clone()),
        channels: release.map(|r| r.channels.clone()).unwrap_or_default(),
        architecture: release.and_then(|r| r.architecture.clone()),
    };
    let status = next_status(StatusInput {
        now: now(),
        previous: cv.status.as_ref(),
        generation: cv.metadata.generation,
        desired,
        version_hash: version_hash(manifests.iter().copied()),
        capabilities: &caps,
        reconciling: sync_mode == SyncMode::Reconciling,
        progress: progress(&report, &manifests),
        channel: cv.spec.channel.clone(),
        upstream: cv.spec.upstream.clone(),
    });
    let status_written = cv.status.as_ref() != Some(&status);
    if status_written {
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
    }
    Ok(PassResult {
        report,
        status,
        status_written,
    })
}

/// The pass as [`Progress`]: errors summarized as spec §7.6 (without ClusterOperator
/// condensing); operators still updating versions do not fail the pass, they only keep it
/// from completing.
pub fn progress(report: &ApplyReport, manifests: &[&crate::manifest::Manifest]) -> Progress {
    let failing: Vec<_> = report
        .errors
        .iter()
        .filter(|e| e.reason != "ClusterOperatorUpdating")
        .collect();
    let failure = match failing.as_slice() {
        [] => None,
        [one] => Some(Failure {
            reason: one.reason.clone(),
            message: one.message.clone(),
            name: task_index(&one.task)
                .and_then(|i| manifests.get(i))
                .map(|m| m.id.name.clone()),
        }),
        many => {
            let messages: BTreeSet<&str> = many.iter().map(|e| e.message.as_str()).collect();
            Some(Failure {
                reason: "MultipleErrors".into(),
                message: format!(
                    "Multiple errors are preventing progress:\n* {}",
                    messages.into_iter().collect::<Vec<_>>().join("\n* ")
                ),
                name: None,
            })
        }
    };
    Progress {
        completed: report.is_success() && report.waiting.is_empty(),
        done: report.done,
        total: report.total,
        failure,
    }
}

/// The 0-based index of `… (<i> of <n>)`.
fn task_index(task: &str) -> Option<usize> {
    let inner = task.strip_suffix(')')?.rsplit_once('(')?.1;
    let i: usize = inner.split_once(" of ")?.0.parse().ok()?;
    i.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::UpdateHistory;

    fn entry(state: &str, image: &str) -> UpdateHistory {
        UpdateHistory {
            state: state.into(),
            started_time: Time(Timestamp::UNIX_EPOCH),
            completion_time: None,
            version: None,
            image: image.into(),
            verified: false,
            accepted_risks: None,
        }
    }

    #[test]
    fn sync_modes() {
        assert_eq!(sync_mode(None, "a"), SyncMode::Initializing);
        let mut s = ClusterVersionStatus {
            history: vec![entry("Partial", "a")],
            ..Default::default()
        };
        assert_eq!(sync_mode(Some(&s), "a"), SyncMode::Initializing);
        s.history = vec![entry("Completed", "a")];
        assert_eq!(sync_mode(Some(&s), "a"), SyncMode::Reconciling);
        assert_eq!(sync_mode(Some(&s), "b"), SyncMode::Updating);
        s.history = vec![entry("Partial", "b"), entry("Completed", "a")];
        assert_eq!(sync_mode(Some(&s), "b"), SyncMode::Updating);
    }

    #[test]
    fn task_indices() {
        assert_eq!(task_index("clusteroperator \"etcd\" (5 of 10)"), Some(4));
        assert_eq!(task_index("x"), None);
    }

    #[test]
    fn jitter_is_a_fraction() {
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
    }
}
