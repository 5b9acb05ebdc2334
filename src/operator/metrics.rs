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
//!   recomputed after every pass.

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
use crate::host::serve::Endpoints;

use super::cluster_metrics::ClusterSeries;
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
struct CapabilityLabels {
    name: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
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
        Metrics {
            registry,
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
        self.operator_up.clear();
        for (name, version, reason, up) in &series.operator_up {
            let labels = OperatorUpLabels {
                name: name.clone(),
                version: version.clone(),
                reason: reason.clone(),
            };
            self.operator_up.get_or_create(&labels).set(*up);
        }
        self.operator_conditions.clear();
        for (name, condition, reason, value) in &series.operator_conditions {
            let labels = OperatorConditionLabels {
                name: name.clone(),
                condition: condition.clone(),
                reason: reason.clone(),
            };
            self.operator_conditions.get_or_create(&labels).set(*value);
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
