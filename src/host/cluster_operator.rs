//! Keeps a component's ClusterOperator current ([`super::operator_status`] decides its
//! status): created when missing, its status replaced when it changes, every `interval`
//! while the controllers run (every second while they start).

use crate::retry::RetryNotice;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;

use super::operator_status::{Health, next_status};
use crate::cluster::{ClusterOperator, ClusterOperatorStatus};

/// Which ClusterOperator, and what it says runs.
#[derive(Clone, Debug)]
pub struct OperatorSettings {
    /// The ClusterOperator's name (`deployment-targets`, `agent-install`).
    pub name: &'static str,
    /// What runs, for the Available message (`DeploymentTarget controllers`).
    pub subject: &'static str,
    /// The version reported (`status.versions[name=operator]`).
    pub version: String,
    /// How often the status is refreshed while running.
    pub interval: Duration,
}

/// Keeps the ClusterOperator's status current until `stop`; `running` turns true once the
/// controllers' caches have synced.
pub async fn keep_cluster_operator(
    client: Client,
    settings: OperatorSettings,
    running: Arc<AtomicBool>,
    stop: watch::Receiver<bool>,
) {
    let health = move || Health {
        running: running.load(Ordering::Relaxed),
        ..Health::default()
    };
    keep_cluster_operator_with(client, settings, health, stop).await
}

/// [`keep_cluster_operator`] with the whole [`Health`] (a component that stands down, or
/// notes what it uses) from `health`, read before each write.
pub async fn keep_cluster_operator_with(
    client: Client,
    settings: OperatorSettings,
    health: impl Fn() -> Health + Send,
    mut stop: watch::Receiver<bool>,
) {
    let api: Api<ClusterOperator> = Api::all(client);
    let mut notice = RetryNotice::new(
        format!("updating the ClusterOperator {}", settings.name),
        None,
    );
    loop {
        let health = health();
        let status = |previous: Option<&ClusterOperatorStatus>, now: &Time| {
            next_status(previous, &health, settings.subject, &settings.version, now)
        };
        let line = match write_cluster_operator(&api, settings.name, status).await {
            Err(e) => notice.failed(&e.to_string()),
            Ok(_) => notice.succeeded(),
        };
        if let Some(line) = line {
            tracing::warn!("{line}");
        }
        let interval = match health.running {
            true => settings.interval,
            false => Duration::from_secs(1),
        };
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Writes the ClusterOperator `name`'s status as `status` makes it from the current one (and
/// the time), creating the object when missing; no write when nothing changes.
pub async fn write_cluster_operator(
    api: &Api<ClusterOperator>,
    name: &str,
    status: impl FnOnce(Option<&ClusterOperatorStatus>, &Time) -> ClusterOperatorStatus,
) -> Result<(), kube::Error> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let mut current = match api.get_opt(name).await? {
        Some(co) => co,
        None => {
            let fresh = ClusterOperator::new(name, Default::default());
            api.create(&PostParams::default(), &fresh).await?
        }
    };
    let status = status(current.status.as_ref(), &now);
    if current.status.as_ref() == Some(&status) {
        return Ok(());
    }
    current.status = Some(status);
    api.replace_status(name, &PostParams::default(), &current)
        .await
        .map(|_| ())
}
