//! The operator's metrics and probes: `/metrics` (Prometheus text), `/healthz` (the process
//! serves) and `/readyz` (a pass has completed), served by the host's HTTP server
//! ([`crate::host::serve`], `--listen`).
//!
//! Metrics:
//! * `cluster_version_capability{name}`: per known capability, 1 when enabled and 0 when not
//!   (upstream's); recomputed every pass.
//! * `cvo_apply_tasks_total{result}`: manifests per pass outcome (`done`, `skipped`,
//!   `waiting`, `error`, `incomplete`).
//! * `cvo_apply_duration_seconds`: the duration of each apply pass.
//! * upstream's `cluster_version{type,version,image,from_version}`,
//!   `cluster_version_available_updates{upstream,channel}`, `cluster_operator_up{name,version,reason}`
//!   and `cluster_operator_conditions{name,condition,reason}` ([`super::cluster_metrics`]),
//!   recomputed after every pass; the ClusterOperators' series are computed at each scrape from
//!   the operator's watch of them (as upstream's informer), once it runs;
//! * upstream's `cluster_operator_condition_transitions{name,condition}` (counted by that watch),
//!   `cluster_installer{type,version,invoker}`,
//!   `cluster_version_operator_update_retrieval_timestamp_seconds{name}` and
//!   `cluster_version_risk_conditions{condition,risk,reason}`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::capability::ClusterCapabilities;
use crate::cluster::ClusterOperator;
use crate::host::serve::Endpoints;
use crate::updates::AvailableUpdates;

use super::cluster_metrics::{ClusterSeries, operator_series};
use super::outcome::ApplyReport;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    r#type: String,
    version: String,
    image: String,
    from_version: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpdatesLabels {
    upstream: String,
    channel: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperatorUpLabels {
    name: String,
    version: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperatorConditionLabels {
    name: String,
    condition: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionalUpdateLabels {
    version: String,
    condition: String,
    status: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    name: String,
    condition: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InstallerLabels {
    r#type: String,
    version: String,
    invoker: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RiskLabels {
    condition: String,
    risk: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CapabilityLabels {
    name: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

/// What the series computed at scrape time come from.
#[derive(Debug, Default)]
struct Live {
    /// The last pass's `cluster_operator_up` and `cluster_operator_conditions` series.
    pass_up: Vec<super::cluster_metrics::OperatorUp>,
    pass_conditions: Vec<super::cluster_metrics::OperatorCondition>,
    operators: Option<Vec<ClusterOperator>>,
    /// The last retrieval attempt seen, with what it asked, and when updates were last
    /// retrieved or the update service, channel or architecture changed.
    retrieval: Option<(std::time::Instant, crate::updates::Key, i64)>,
}

/// The operator's metrics and readiness; shared between the loop and the server.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    capability: Family<CapabilityLabels, Gauge>,
    apply_tasks: Family<ResultLabels, Counter>,
    apply_duration: Histogram,
    passes: Family<ResultLabels, Counter>,
    version: Family<VersionLabels, Gauge>,
    available_updates: Family<UpdatesLabels, Gauge>,
    operator_up: Family<OperatorUpLabels, Gauge>,
    operator_conditions: Family<OperatorConditionLabels, Gauge>,
    conditional_update_conditions: Family<ConditionalUpdateLabels, Gauge>,
    transitions: Family<TransitionLabels, Gauge>,
    installer: Family<InstallerLabels, Gauge>,
    retrieval: Family<CapabilityLabels, Gauge>,
    risk_conditions: Family<RiskLabels, Gauge>,
    /// What scrapes compute from: the last pass's series, and the ClusterOperators as the
    /// watch last saw them (`None` until it has listed them).
    live: Mutex<Live>,
    ready: AtomicBool,
    /// Serializes capability updates (clear + set) against encoding.
    lock: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let capability = Family::<CapabilityLabels, Gauge>::default();
        registry.register(
            "cluster_version_capability",
            "Report currently enabled cluster capabilities.  0 is disabled, and 1 is enabled.",
            capability.clone(),
        );
        let apply_tasks = Family::<ResultLabels, Counter>::default();
        registry.register(
            "cvo_apply_tasks",
            "Manifests handled by apply passes, by result",
            apply_tasks.clone(),
        );
        let apply_duration = Histogram::new(exponential_buckets(0.05, 2.0, 14));
        registry.register(
            "cvo_apply_duration_seconds",
            "Duration of apply passes",
            apply_duration.clone(),
        );
        let passes = Family::<ResultLabels, Counter>::default();
        registry.register(
            "cvo_sync_passes",
            "Sync passes by result: completed (everything applied), incomplete (some task failed or waits), error (no status could be written: the cluster was unreachable, a timeout)",
            passes.clone(),
        );
        // Upstream's names and help texts (`pkg/cvo/metrics.go`).
        let version = Family::<VersionLabels, Gauge>::default();
        registry.register(
            "cluster_version",
            "Reports the version of the cluster in terms of seconds since the epoch: current (the version being applied; the value is the creation date of the payload), desired, failure, completed, cluster (the creation date of the cluster version object) and updating",
            version.clone(),
        );
        let available_updates = Family::<UpdatesLabels, Gauge>::default();
        registry.register(
            "cluster_version_available_updates",
            "Report the count of available versions for an upstream and channel.",
            available_updates.clone(),
        );
        let operator_up = Family::<OperatorUpLabels, Gauge>::default();
        registry.register(
            "cluster_operator_up",
            "Reports key highlights of the active cluster operators.",
            operator_up.clone(),
        );
        let operator_conditions = Family::<OperatorConditionLabels, Gauge>::default();
        registry.register(
            "cluster_operator_conditions",
            "Report the conditions for active cluster operators. 0 is False and 1 is True.",
            operator_conditions.clone(),
        );
        let conditional_update_conditions = Family::<ConditionalUpdateLabels, Gauge>::default();
        registry.register(
            "cluster_version_conditional_update_condition_seconds",
            "Reports when the Recommended condition status on a conditional update changed to its current state.",
            conditional_update_conditions.clone(),
        );
        let transitions = Family::<TransitionLabels, Gauge>::default();
        registry.register(
            "cluster_operator_condition_transitions",
            "Reports the number of times that a condition on a cluster operator changes status",
            transitions.clone(),
        );
        let installer = Family::<InstallerLabels, Gauge>::default();
        registry.register(
            "cluster_installer",
            "Reports info about the installation process and, if applicable, the install tool. The type is either 'openshift-install', indicating that openshift-install was used to install the cluster, or 'other', indicating that an unknown process installed the cluster. The invoker is 'user' by default, but it may be overridden by a consuming tool. The version reported is that of the openshift-install that was used to generate the manifests and, if applicable, provision the infrastructure.",
            installer.clone(),
        );
        let retrieval = Family::<CapabilityLabels, Gauge>::default();
        registry.register(
            "cluster_version_operator_update_retrieval_timestamp_seconds",
            "Reports when updates were last successfully retrieved.",
            retrieval.clone(),
        );
        let risk_conditions = Family::<RiskLabels, Gauge>::default();
        registry.register(
            "cluster_version_risk_conditions",
            "Report the risk conditions for the cluster version. -1 is Unknown, 0 is False and 1 is True.",
            risk_conditions.clone(),
        );
        Metrics {
            registry,
            transitions,
            installer,
            retrieval,
            risk_conditions,
            live: Mutex::new(Live::default()),
            capability,
            apply_tasks,
            apply_duration,
            passes,
            version,
            available_updates,
            operator_up,
            operator_conditions,
            conditional_update_conditions,
            ready: AtomicBool::new(false),
            lock: Mutex::new(()),
        }
    }

    /// Replaces the capability series with `caps.known` (and enabled names that are unknown).
    pub fn set_capabilities(&self, caps: &ClusterCapabilities) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.capability.clear();
        for name in caps.known.iter().chain(caps.enabled.iter()) {
            let labels = CapabilityLabels {
                name: name.to_string(),
            };
            let enabled = caps.enabled.contains(name);
            self.capability
                .get_or_create(&labels)
                .set(i64::from(enabled));
        }
    }

    /// Replaces upstream's cluster series with this pass's.
    pub fn set_cluster(&self, series: &ClusterSeries) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.version.clear();
        for s in &series.version {
            let labels = VersionLabels {
                r#type: s.type_.into(),
                version: s.version.clone(),
                image: s.image.clone(),
                from_version: s.from_version.clone(),
            };
            self.version.get_or_create(&labels).set(s.value);
        }
        self.available_updates.clear();
        if let Some((upstream, channel, count)) = &series.available_updates {
            let labels = UpdatesLabels {
                upstream: upstream.clone(),
                channel: channel.clone(),
            };
            self.available_updates.get_or_create(&labels).set(*count);
        }
        {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            live.pass_up = series.operator_up.clone();
            live.pass_conditions = series.operator_conditions.clone();
        }
        self.conditional_update_conditions.clear();
        for s in &series.conditional_update_conditions {
            let labels = ConditionalUpdateLabels {
                version: s.version.clone(),
                condition: s.condition.clone(),
                status: s.status.clone(),
                reason: s.reason.clone(),
            };
            self.conditional_update_conditions
                .get_or_create(&labels)
                .set(s.value);
        }
    }

    /// The ClusterOperators as the watch sees them now (scrapes compute their series from these).
    pub fn set_operators(&self, operators: Vec<ClusterOperator>) {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .operators = Some(operators);
    }

    /// Counts the condition `types` of ClusterOperator `name` that changed status.
    pub fn count_transitions(&self, name: &str, types: &[String]) {
        for condition in types {
            let labels = TransitionLabels {
                name: name.to_string(),
                condition: condition.clone(),
            };
            self.transitions.get_or_create(&labels).inc();
        }
    }

    /// `cluster_installer`, as [`super::cluster_metrics::installer_series`] found it (`None`:
    /// unknown this pass, no series).
    pub fn set_installer(&self, installer: Option<(String, String, String)>) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.installer.clear();
        if let Some((type_, version, invoker)) = installer {
            let labels = InstallerLabels {
                r#type: type_,
                version,
                invoker,
            };
            self.installer.get_or_create(&labels).set(1);
        }
    }

    /// After a pass: when updates were last retrieved (upstream's `LastSyncOrConfigChange`: an
    /// attempt that succeeded, or the first one for another update service, channel or
    /// architecture, moves it to `now`), and the conditional update risks' evaluation.
    pub fn observe_updates(&self, updates: Option<&AvailableUpdates>, now: i64) {
        let Some(updates) = updates else { return };
        let timestamp = {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            let moved = match &live.retrieval {
                Some((attempted, _, _)) if *attempted == updates.attempted => None,
                Some((_, key, _)) if updates.failure.is_some() && *key == updates.key => None,
                _ => Some(now),
            };
            let at = moved
                .or(live.retrieval.as_ref().map(|r| r.2))
                .unwrap_or(now);
            live.retrieval = Some((updates.attempted, updates.key.clone(), at));
            at
        };
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let labels = CapabilityLabels {
            name: String::new(),
        };
        self.retrieval.get_or_create(&labels).set(timestamp);
        self.risk_conditions.clear();
        for (risk, reason, value) in super::cluster_metrics::risk_series(&updates.risks) {
            let labels = RiskLabels {
                condition: "Applies".into(),
                risk,
                reason,
            };
            self.risk_conditions.get_or_create(&labels).set(value);
        }
    }

    /// Refills the ClusterOperator families: the ClusterVersion's own series from the last
    /// pass, the operators' from the watch (or, before it has listed them, the last pass's).
    fn fill_operators(&self) {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let (watched_up, watched_conditions) = match &live.operators {
            Some(operators) => operator_series(operators),
            None => Default::default(),
        };
        let from_pass = |name: &str| live.operators.is_none() || name == "version";
        let up = (live.pass_up.iter())
            .filter(|s| from_pass(&s.0))
            .chain(&watched_up);
        self.operator_up.clear();
        for (name, version, reason, value) in up {
            let labels = OperatorUpLabels {
                name: name.clone(),
                version: version.clone(),
                reason: reason.clone(),
            };
            self.operator_up.get_or_create(&labels).set(*value);
        }
        let conditions = (live.pass_conditions.iter())
            .filter(|s| from_pass(&s.0))
            .chain(&watched_conditions);
        self.operator_conditions.clear();
        for (name, condition, reason, value) in conditions {
            let labels = OperatorConditionLabels {
                name: name.clone(),
                condition: condition.clone(),
                reason: reason.clone(),
            };
            self.operator_conditions.get_or_create(&labels).set(*value);
        }
    }

    /// Counts one pass's manifests by result and records its duration.
    pub fn observe_pass(&self, report: &ApplyReport, duration: Duration) {
        let counts = [
            ("done", report.done),
            ("skipped", report.skipped),
            ("waiting", report.waiting.len()),
            ("error", report.errors.len()),
            ("incomplete", report.incomplete),
        ];
        for (result, n) in counts {
            (self.apply_tasks.get_or_create(&ResultLabels { result })).inc_by(n as u64);
        }
        self.apply_duration.observe(duration.as_secs_f64());
        let result = if report.is_success() {
            "completed"
        } else {
            "incomplete"
        };
        self.passes.get_or_create(&ResultLabels { result }).inc();
    }

    /// A pass that ended in an error before its status was written.
    pub fn observe_pass_error(&self) {
        let result = "error";
        self.passes.get_or_create(&ResultLabels { result }).inc();
    }

    /// How many passes ended with `result` (`completed`, `incomplete`, `error`).
    pub fn passes(&self, result: &'static str) -> u64 {
        self.passes.get_or_create(&ResultLabels { result }).get()
    }

    /// After the first completed pass.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.fill_operators();
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Endpoints for Metrics {
    fn metrics_text(&self) -> String {
        self.encode()
    }

    fn readiness(&self) -> Result<(), String> {
        match self.is_ready() {
            true => Ok(()),
            false => Err("no pass has completed yet".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Capability;

    #[test]
    fn encodes_capabilities_and_passes() {
        let m = Metrics::new();
        let caps = ClusterCapabilities {
            known: [Capability::new("Console"), Capability::new("baremetal")].into(),
            enabled: [Capability::new("Console")].into(),
            implicitly_enabled: Default::default(),
        };
        m.set_capabilities(&caps);
        let report = ApplyReport {
            done: 3,
            total: 4,
            skipped: 1,
            ..Default::default()
        };
        m.observe_pass(&report, Duration::from_millis(20));
        let text = m.encode();
        assert!(
            text.contains(r#"cluster_version_capability{name="Console"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"cluster_version_capability{name="baremetal"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"cvo_apply_tasks_total{result="done"} 3"#),
            "{text}"
        );
        assert!(
            text.contains("cvo_apply_duration_seconds_count 1"),
            "{text}"
        );
        assert!(!m.is_ready());
        assert_eq!(m.readiness(), Err("no pass has completed yet".into()));
        m.set_ready();
        assert_eq!(m.readiness(), Ok(()));
    }
}
