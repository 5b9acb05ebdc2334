//! What wakes the sync loop between passes, and the live view the metrics read, from watches
//! of the cluster (upstream's informers):
//!
//! * the ClusterVersion `version`: a new generation (an administrator's spec change);
//! * the ClusterOperators: a change of the `operator` version, `Available` or `Degraded`
//!   ([`operator_change`], upstream `clusterOperatorEventHandler`) wakes the loop while it is
//!   updating, so the pass that finds the last operator at its target runs at once instead of
//!   after the backoff; every change of a condition's status is counted
//!   (`cluster_operator_condition_transitions`) and the operators are handed to the metrics,
//!   which compute their series at scrape time;
//! * the FeatureGate `cluster`: its feature set or enabled gates changed (upstream reloads the
//!   payload, or restarts, on those).
//!
//! Each watch re-establishes itself with backoff after the API server goes away.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::sync::{mpsc, watch};

use super::cluster_metrics::condition_transitions;
use super::metrics::Metrics;
use crate::cluster::{ClusterOperator, ClusterVersion};

/// Why the loop was woken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// The ClusterVersion's generation, as the watch saw it.
    Spec(Option<i64>),
    /// A ClusterOperator changed what the payload waits on (upstream's message).
    ClusterOperator(String),
    /// The FeatureGate `cluster` changed its feature set or enabled gates.
    FeatureGate,
}

/// Upstream's notification for a ClusterOperator that changed between two observations: its
/// `operator` version, else its `Available` or `Degraded` status; `None` for anything else.
pub fn operator_change(old: &ClusterOperator, new: &ClusterOperator) -> Option<String> {
    let name = new.metadata.name.as_deref().unwrap_or_default();
    let version = |co: &ClusterOperator| {
        (co.status.iter())
            .flat_map(|s| s.versions.iter())
            .find(|v| v.name == "operator")
            .map(|v| v.version.clone())
            .unwrap_or_default()
    };
    let (before, after) = (version(old), version(new));
    if before != after {
        return Some(format!(
            "Cluster operator {name} changed versions[name=\"operator\"] from {before:?} to {after:?}"
        ));
    }
    let status = |co: &ClusterOperator, type_: &str| {
        (co.status.iter())
            .flat_map(|s| s.conditions.iter())
            .find(|c| c.type_ == type_)
            .map_or_else(|| "Unknown".to_string(), |c| c.status.clone())
    };
    ["Available", "Degraded"].into_iter().find_map(|type_| {
        let (before, after) = (status(old, type_), status(new, type_));
        (before != after).then(|| {
            format!("Cluster operator {name} changed {type_} from {before:?} to {after:?}")
        })
    })
}

/// What of the FeatureGate `cluster` the operator acts on: `spec` and `status`.
fn feature_gate_facts(gate: &DynamicObject) -> (serde_json::Value, serde_json::Value) {
    let part = |key: &str| gate.data.get(key).cloned().unwrap_or_default();
    (part("spec"), part("status"))
}

/// Starts the watches; they stop when `shutdown` turns true. Wake-ups arrive on the returned
/// channel; the ClusterOperators go to `metrics` when given.
pub fn start(
    client: &kube::Client,
    metrics: Option<Arc<Metrics>>,
    shutdown: watch::Receiver<bool>,
) -> mpsc::UnboundedReceiver<Wake> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(cluster_version(
        client.clone(),
        tx.clone(),
        shutdown.clone(),
    ));
    tokio::spawn(cluster_operators(
        client.clone(),
        tx.clone(),
        metrics,
        shutdown.clone(),
    ));
    tokio::spawn(feature_gate(client.clone(), tx, shutdown));
    rx
}

/// Runs `stream` until shutdown, the receiver going away, or the stream ending.
async fn until_shutdown<T>(
    mut stream: futures_util::stream::BoxStream<'static, Result<watcher::Event<T>, watcher::Error>>,
    mut shutdown: watch::Receiver<bool>,
    mut handle: impl FnMut(watcher::Event<T>) -> bool,
) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        let event = tokio::select! {
            event = stream.next() => event,
            changed = shutdown.changed() => {
                if changed.is_err() { return }
                continue;
            }
        };
        match event {
            None => return,
            Some(Ok(event)) => {
                if !handle(event) {
                    return;
                }
            }
            Some(Err(error)) => tracing::debug!(%error, "watch error; retrying"),
        }
    }
}

async fn cluster_version(
    client: kube::Client,
    tx: mpsc::UnboundedSender<Wake>,
    shutdown: watch::Receiver<bool>,
) {
    let api: Api<ClusterVersion> = Api::all(client);
    let config = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        crate::cluster::CLUSTER_VERSION_NAME
    ));
    let stream = watcher(api, config).default_backoff().boxed();
    until_shutdown(stream, shutdown, |event| match event {
        watcher::Event::Apply(cv) | watcher::Event::InitApply(cv) => {
            tx.send(Wake::Spec(cv.metadata.generation)).is_ok()
        }
        _ => true,
    })
    .await
}

async fn cluster_operators(
    client: kube::Client,
    tx: mpsc::UnboundedSender<Wake>,
    metrics: Option<Arc<Metrics>>,
    shutdown: watch::Receiver<bool>,
) {
    let api: Api<ClusterOperator> = Api::all(client);
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut known: BTreeMap<String, ClusterOperator> = BTreeMap::new();
    // A relist's objects, until it is done (then they replace `known`).
    let mut relisting: Option<BTreeMap<String, ClusterOperator>> = None;
    let publish = |known: &BTreeMap<String, ClusterOperator>| {
        if let Some(metrics) = &metrics {
            metrics.set_operators(known.values().cloned().collect());
        }
    };
    until_shutdown(stream, shutdown, |event| {
        let changed = |new: ClusterOperator, known: &BTreeMap<String, ClusterOperator>| {
            let name = new.metadata.name.clone().unwrap_or_default();
            if let Some(old) = known.get(&name) {
                if let Some(metrics) = &metrics {
                    metrics.count_transitions(&name, &condition_transitions(old, &new));
                }
                if let Some(message) = operator_change(old, &new) {
                    tracing::debug!("{message}");
                    return (name, new, tx.send(Wake::ClusterOperator(message)).is_ok());
                }
            }
            (name, new, true)
        };
        match event {
            watcher::Event::Init => relisting = Some(BTreeMap::new()),
            watcher::Event::InitApply(co) => {
                let (name, co, open) = changed(co, &known);
                relisting.get_or_insert_default().insert(name, co);
                return open;
            }
            watcher::Event::InitDone => {
                known = relisting.take().unwrap_or_default();
                publish(&known);
            }
            watcher::Event::Apply(co) => {
                let (name, co, open) = changed(co, &known);
                known.insert(name, co);
                publish(&known);
                return open;
            }
            watcher::Event::Delete(co) => {
                known.remove(co.metadata.name.as_deref().unwrap_or_default());
                publish(&known);
            }
        }
        true
    })
    .await
}

async fn feature_gate(
    client: kube::Client,
    tx: mpsc::UnboundedSender<Wake>,
    shutdown: watch::Receiver<bool>,
) {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "FeatureGate");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "featuregates");
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let config = watcher::Config::default().fields("metadata.name=cluster");
    let stream = watcher(api, config).default_backoff().boxed();
    let mut last = None;
    until_shutdown(stream, shutdown, |event| {
        let facts = match event {
            watcher::Event::Apply(gate) | watcher::Event::InitApply(gate) => {
                Some(feature_gate_facts(&gate))
            }
            watcher::Event::Delete(_) => None,
            // A listing without it: there is none, so one that appears is a change.
            watcher::Event::InitDone if last.is_none() => {
                last = Some(None);
                return true;
            }
            _ => return true,
        };
        // The first observation is what the first pass reads anyway.
        let first = last.is_none();
        let moved = last.as_ref() != Some(&facts);
        last = Some(facts);
        if moved && !first {
            return tx.send(Wake::FeatureGate).is_ok();
        }
        true
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterOperatorStatus, ClusterOperatorStatusCondition, OperandVersion};

    fn operator(version: &str, available: &str, degraded: Option<&str>) -> ClusterOperator {
        let mut co = ClusterOperator::new("etcd", Default::default());
        let condition = |type_: &str, status: &str| ClusterOperatorStatusCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
            reason: None,
            message: None,
        };
        let mut conditions = vec![condition("Available", available)];
        conditions.extend(degraded.map(|d| condition("Degraded", d)));
        co.status = Some(ClusterOperatorStatus {
            conditions,
            versions: vec![OperandVersion {
                name: "operator".into(),
                version: version.into(),
            }],
            ..Default::default()
        });
        co
    }

    #[test]
    fn version_available_and_degraded_changes_wake_the_loop() {
        let base = operator("4.17.0", "True", Some("False"));
        assert_eq!(operator_change(&base, &base), None);
        assert_eq!(
            operator_change(&base, &operator("4.18.0", "True", Some("False"))).as_deref(),
            Some(
                r#"Cluster operator etcd changed versions[name="operator"] from "4.17.0" to "4.18.0""#
            )
        );
        assert_eq!(
            operator_change(&base, &operator("4.17.0", "False", Some("False"))).as_deref(),
            Some(r#"Cluster operator etcd changed Available from "True" to "False""#)
        );
        assert_eq!(
            operator_change(&base, &operator("4.17.0", "True", None)).as_deref(),
            Some(r#"Cluster operator etcd changed Degraded from "False" to "Unknown""#)
        );
    }

    #[test]
    fn condition_transitions_count_each_type_that_moved() {
        let base = operator("4.17.0", "True", Some("False"));
        assert!(condition_transitions(&base, &base).is_empty());
        assert_eq!(
            condition_transitions(&base, &operator("4.18.0", "False", Some("False"))),
            ["Available"]
        );
        // A condition that went away, and one that appeared.
        assert_eq!(
            condition_transitions(&base, &operator("4.17.0", "True", None)),
            ["Degraded"]
        );
        assert_eq!(
            condition_transitions(&operator("4.17.0", "True", None), &base),
            ["Degraded"]
        );
    }
}
