//! The host of the payload components' controllers (`cvo controller NAME`): one process per
//! component, sharing with `cvo start` its leader election ([`super::lease`]) and its
//! metrics and probe server ([`super::serve`]). A component only says how to run its
//! controllers; the host decides when: while this replica holds the component's Lease, until
//! SIGTERM.
//!
//! Losing the Lease while leading ends the process with an error (as controller-runtime's
//! managers do): the controllers' caches and in-flight writes are not worth reasoning about
//! across a leadership gap, and the kubelet restarts the pod as a fresh candidate.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use super::lease::{LeaderElector, LeaseConfig, LeaseError};
use super::serve::{Endpoints, bind, serve};
use super::webhook::{self, Admission, WebhookError, WebhookOptions};

/// A component's controllers, as the host runs them.
pub trait Component: Send + Sync + 'static {
    /// The component's name (`cvo controller NAME`), e.g. `deployment-targets`.
    fn name(&self) -> &'static str;

    /// The admission webhook the component serves, if any. Every replica serves it, leader
    /// or not: the API server calls whichever pod the Service picks.
    fn webhook(&self) -> Option<(WebhookOptions, Arc<dyn Admission>)> {
        None
    }

    /// Runs the controllers until `stop` turns true, then returns. An error ends the process.
    fn run(
        self: Arc<Self>,
        host: HostHandle,
        stop: watch::Receiver<bool>,
    ) -> Pin<Box<dyn Future<Output = Result<(), ComponentError>> + Send>>;
}

/// What a component's controllers get from the host.
#[derive(Clone)]
pub struct HostHandle {
    pub client: kube::Client,
    pub metrics: Arc<ControllerMetrics>,
    /// Who records Kubernetes Events (`reportingController`, `reportingInstance`).
    pub reporter: kube::runtime::events::Reporter,
}

/// Why a component's controllers stopped on their own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ComponentError(pub String);

/// Why the host stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    #[error(
        "lost the Lease {0} while leading; stopping so that this replica starts over as a candidate"
    )]
    LostLeadership(String),
    #[error("controller {component}: {source}")]
    Component {
        component: &'static str,
        source: ComponentError,
    },
}

/// How the host runs a component.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    pub listen: SocketAddr,
    /// `None`: run without leader election (a single replica).
    pub lease: Option<LeaseConfig>,
}

/// Runs `component` until `shutdown` turns true (or leadership is lost, or it fails).
pub async fn run_component<C: Component>(
    client: kube::Client,
    component: Arc<C>,
    options: HostOptions,
    metrics: Arc<ControllerMetrics>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), HostError> {
    let (listener, addr) = bind(options.listen)
        .await
        .map_err(|source| HostError::Listen {
            addr: options.listen,
            source,
        })?;
    tracing::info!(%addr, component = component.name(), "serving /metrics, /healthz and /readyz");
    tokio::spawn(serve(listener, metrics.clone(), shutdown.clone()));
    if let Some((options, admission)) = component.webhook() {
        start_webhook(&client, &options, admission, shutdown.clone()).await?;
    }
    let identity = options
        .lease
        .as_ref()
        .map(|l| l.identity.clone())
        .unwrap_or_else(|| format!("{}-{}", component.name(), std::process::id()));
    let host = HostHandle {
        client: client.clone(),
        metrics: metrics.clone(),
        reporter: kube::runtime::events::Reporter {
            controller: format!("cvo-{}", component.name()),
            instance: Some(identity),
        },
    };
    let Some(lease) = options.lease else {
        metrics.set_leader(true);
        return run_until(component, host, shutdown).await;
    };
    let lease_name = format!("{}/{}", lease.namespace, lease.name);
    let (leader_tx, mut leader) = watch::channel(false);
    let elector = tokio::spawn(LeaderElector::new(client, lease).run(leader_tx, shutdown.clone()));
    metrics.set_standby();
    tracing::info!(lease = %lease_name, "leader election: waiting for the lease");
    let outcome = loop {
        if *shutdown.borrow() {
            break Ok(());
        }
        if *leader.borrow_and_update() {
            metrics.set_leader(true);
            break lead(component, host, shutdown.clone(), leader, &lease_name).await;
        }
        let mut stop = shutdown.clone();
        tokio::select! {
            changed = leader.changed() => if changed.is_err() { break Ok(()) },
            _ = stop.changed() => {},
        }
    };
    metrics.set_leader(false);
    // The elector stops on `shutdown`; on an error it has stopped already.
    if let Ok(Err(e)) = elector.await {
        return Err(e.into());
    }
    outcome
}

/// How often the webhook's CA bundle is re-injected (the configuration may be created, or
/// re-applied, after the controller starts).
const CA_BUNDLE_INTERVAL: Duration = Duration::from_secs(30);

/// Starts serving a component's webhook: a certificate or port problem is an error (with
/// `failurePolicy: Fail`, a webhook that silently does not serve refuses every object it
/// validates); then keeps its CA bundle injected until `shutdown`.
async fn start_webhook(
    client: &kube::Client,
    options: &WebhookOptions,
    admission: Arc<dyn Admission>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), WebhookError> {
    let serving = webhook::ensure_certificate(client, options).await?;
    let tls = Arc::new(webhook::tls_config(&serving)?);
    let (listener, addr) = webhook::bind(options.listen).await?;
    tracing::info!(%addr, "serving the admission webhook");
    tokio::spawn(webhook::serve(listener, tls, admission, shutdown.clone()));
    let (client, configuration) = (client.clone(), options.configuration.clone());
    tokio::spawn(keep_ca_bundle(client, configuration, serving.ca, shutdown));
    Ok(())
}

async fn keep_ca_bundle(
    client: kube::Client,
    configuration: String,
    ca: String,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        match webhook::inject_ca_bundle(&client, &configuration, &ca).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(%configuration, "no ValidatingWebhookConfiguration yet; its CA bundle is injected once it exists")
            }
            Err(e) => tracing::warn!(error = %e, "cannot inject the webhook's CA bundle"),
        }
        tokio::select! {
            _ = tokio::time::sleep(CA_BUNDLE_INTERVAL) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Runs the controllers while leading: stops them on shutdown, fails on a lost Lease.
async fn lead<C: Component>(
    component: Arc<C>,
    host: HostHandle,
    mut shutdown: watch::Receiver<bool>,
    mut leader: watch::Receiver<bool>,
    lease_name: &str,
) -> Result<(), HostError> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let name = component.name();
    let mut work = tokio::spawn(component.run(host, stop_rx));
    let lost = loop {
        tokio::select! {
            finished = &mut work => return finished_result(name, finished),
            _ = shutdown.changed() => break false,
            changed = leader.changed() => {
                // On shutdown the elector steps down too: that is not a lost Lease.
                if *shutdown.borrow() {
                    break false;
                }
                if changed.is_err() || !*leader.borrow() {
                    break true;
                }
            }
        }
    };
    let _ = stop_tx.send(true);
    let finished = tokio::time::timeout(Duration::from_secs(30), &mut work).await;
    if lost {
        return Err(HostError::LostLeadership(lease_name.to_owned()));
    }
    match finished {
        Ok(finished) => finished_result(name, finished),
        Err(_) => {
            tracing::warn!(component = name, "controllers did not stop within 30s");
            Ok(())
        }
    }
}

/// Runs the controllers without leader election until `shutdown`.
async fn run_until<C: Component>(
    component: Arc<C>,
    host: HostHandle,
    shutdown: watch::Receiver<bool>,
) -> Result<(), HostError> {
    let name = component.name();
    let finished = tokio::spawn(component.run(host, shutdown)).await;
    finished_result(name, finished)
}

fn finished_result(
    component: &'static str,
    finished: Result<Result<(), ComponentError>, tokio::task::JoinError>,
) -> Result<(), HostError> {
    match finished {
        Ok(Ok(())) => Ok(()),
        Ok(Err(source)) => Err(HostError::Component { component, source }),
        Err(e) => Err(HostError::Component {
            component,
            source: ComponentError(format!("the controllers' task ended abnormally: {e}")),
        }),
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: &'static str,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WriteLabels {
    controller: &'static str,
    kind: &'static str,
    verb: &'static str,
}

/// The metrics of a component's controllers, and its readiness.
#[derive(Debug)]
pub struct ControllerMetrics {
    registry: Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    durations: Family<ControllerLabels, Histogram>,
    writes: Family<WriteLabels, Counter>,
    leader: Gauge,
    /// Set once this replica stands by or its controllers' caches have synced.
    ready: AtomicBool,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ControllerMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "cvo_controller_reconciles",
            "Reconciles per controller and result (success, requeue, error)",
            reconciles.clone(),
        );
        let durations = Family::<ControllerLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        registry.register(
            "cvo_controller_reconcile_duration_seconds",
            "The duration of one reconcile, writes included",
            durations.clone(),
        );
        let writes = Family::<WriteLabels, Counter>::default();
        registry.register(
            "cvo_controller_writes",
            "Writes to the API server per controller, kind and verb",
            writes.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "cvo_controller_leader",
            "1 while this replica holds the component's Lease",
            leader.clone(),
        );
        ControllerMetrics {
            registry,
            reconciles,
            durations,
            writes,
            leader,
            ready: AtomicBool::new(false),
        }
    }

    /// One reconcile of `controller` ended with `result` after `duration`.
    pub fn observe_reconcile(
        &self,
        controller: &'static str,
        result: &'static str,
        duration: Duration,
    ) {
        (self.reconciles)
            .get_or_create(&ReconcileLabels { controller, result })
            .inc();
        (self.durations)
            .get_or_create(&ControllerLabels { controller })
            .observe(duration.as_secs_f64());
    }

    /// One write of `verb` to an object of `kind` succeeded.
    pub fn observe_write(&self, controller: &'static str, kind: &'static str, verb: &'static str) {
        (self.writes)
            .get_or_create(&WriteLabels {
                controller,
                kind,
                verb,
            })
            .inc();
    }

    /// How many reconciles of `controller` ended with `result` so far.
    pub fn reconciles(&self, controller: &'static str, result: &'static str) -> u64 {
        (self.reconciles)
            .get_or_create(&ReconcileLabels { controller, result })
            .get()
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set(leading as i64);
    }

    /// A standby replica is ready: it serves, and takes over when the leader goes.
    pub fn set_standby(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// The leader is ready once its controllers' caches have synced.
    pub fn set_synced(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }
}

impl Endpoints for ControllerMetrics {
    fn metrics_text(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    fn readiness(&self) -> Result<(), String> {
        match self.ready.load(Ordering::Relaxed) {
            true => Ok(()),
            false => Err("the controllers' caches have not synced yet".into()),
        }
    }
}

/// What a component's watch stream says when it fails: the watcher backs off and retries for
/// ever, so each reason is logged once (and its recovery), not at every attempt.
pub fn watch_error_logger<T, E: std::fmt::Display>(
    kind: &str,
) -> impl FnMut(&Result<T, E>) + use<T, E> {
    let mut notice = crate::retry::RetryNotice::new(format!("watching {kind}"), None);
    move |result| {
        let line = match result {
            Err(e) => notice.failed(&e.to_string()),
            Ok(_) => notice.succeeded(),
        };
        if let Some(line) = line {
            tracing::warn!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_and_writes() {
        let m = ControllerMetrics::new();
        assert!(m.readiness().is_err());
        m.observe_reconcile("claims", "success", Duration::from_millis(3));
        m.observe_reconcile("claims", "error", Duration::from_millis(1));
        m.observe_write("claims", "DeploymentTarget", "update");
        m.set_leader(true);
        m.set_synced();
        assert_eq!(m.reconciles("claims", "success"), 1);
        let text = m.metrics_text();
        for line in [
            r#"cvo_controller_reconciles_total{controller="claims",result="error"} 1"#,
            r#"cvo_controller_writes_total{controller="claims",kind="DeploymentTarget",verb="update"} 1"#,
            "cvo_controller_leader 1",
            r#"cvo_controller_reconcile_duration_seconds_count{controller="claims"} 2"#,
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
        assert_eq!(m.readiness(), Ok(()));
    }
}
