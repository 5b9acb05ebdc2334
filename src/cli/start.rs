//! `cvo start`: the operator's sync loop against a cluster (spec §7.1).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use super::{CliResult, ImageArgs, PayloadArgs, Settings, load_payload};
use crate::capability::Capability;
use crate::host::metrics_tls::{
    MetricsTls, TlsServing, serve_tls, watch_client_ca, watch_tls_profile,
};
use crate::host::serve::{bind, serve};
use crate::host::signal::shutdown_signal;
use crate::host::tls_settings::TlsSettings;
use crate::include::DEFAULT_CLUSTER_PROFILE;
use crate::operator::{LeaseConfig, Metrics, OperatorFacts, RunOptions, run};
use crate::payload::{LoadOptions, PayloadSource};
use crate::updates::DEFAULT_UPDATE_SERVICE;
use crate::updates::fetch::FetchOptions;
use crate::updates::prometheus::PrometheusOptions;

#[derive(Debug, Args)]
pub struct StartArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The release image the payload came from (`status.desired.image`, `{{.ReleaseImage}}`);
    /// default: `--payload` when it is an image, else the payload version's quay.io pullspec.
    #[arg(long, value_name = "IMG")]
    pub release_image: Option<String>,
    /// Seconds between passes, jittered ×[1,2).
    #[arg(long, value_name = "SECS", default_value_t = 180)]
    pub resync_interval: u64,
    /// The cluster profile whose manifests are applied (`include.release.openshift.io/<profile>`).
    #[arg(long, value_name = "PROFILE", env = "CLUSTER_PROFILE", default_value = DEFAULT_CLUSTER_PROFILE)]
    pub cluster_profile: String,
    /// Manifests annotated `exclude.release.openshift.io/<ID>: "true"` are not applied.
    #[arg(long, value_name = "ID", env = "EXCLUDE_MANIFESTS")]
    pub exclude_manifests: Option<String>,
    /// Capabilities that are enabled whatever spec.capabilities says.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub always_enable_capabilities: Vec<String>,
    /// How long a pass waits for the release `spec.desiredUpdate.image` names to be retrieved;
    /// on expiry the retrieval goes on in the background, the current payload stays in use and
    /// `ReleaseAccepted=Unknown` (reason `RetrievePayload`) until a later pass adopts it.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub payload_timeout: u64,
    /// How long one pass may take before its remaining tasks are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub pass_timeout: u64,
    /// Run one pass, then exit: 0 when it applied everything, 1 when it could not (the server
    /// did not answer within --connect-timeout, the pass failed or timed out, a task failed).
    #[arg(long)]
    pub once: bool,
    /// With --once: how long to wait for the API server, and then for the ClusterVersion.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub connect_timeout: u64,
    /// Where `/metrics`, `/healthz` and `/readyz` are served, over HTTPS with
    /// --serving-cert-file and --serving-key-file; "" for no server (as upstream's `--listen`).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9099")]
    pub listen: String,
    /// The X.509 certificate (PEM) the metrics server presents: the metrics Service's serving
    /// certificate (`tls.crt`). Read again when it changes.
    #[arg(long, value_name = "PATH")]
    pub serving_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --serving-cert-file (`tls.key`).
    #[arg(long, value_name = "PATH")]
    pub serving_key_file: Option<PathBuf>,
    /// The lowest TLS version the metrics server accepts: VersionTLS12 or VersionTLS13
    /// (VersionTLS10 and VersionTLS11 mean TLS 1.2: nothing older is ever spoken). Overrides
    /// the cluster's TLS profile (the APIServer `cluster`'s spec.tlsSecurityProfile, honoured
    /// with spec.tlsAdherence StrictAllComponents).
    #[arg(long, value_name = "VERSION", default_value = "")]
    pub tls_min_version: String,
    /// The cipher suites the metrics server accepts, by Go's names (e.g.
    /// TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); the list restricts the TLS 1.2 suites, as Go's.
    /// Overrides the cluster's TLS profile's ciphers.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub tls_cipher_suites: Vec<String>,
    /// Development only: serve `/metrics` to anyone over plain HTTP (no certificate, no
    /// client check).
    #[arg(long, conflicts_with_all = ["serving_cert_file", "serving_key_file"])]
    pub metrics_plain_http: bool,
    /// Apply without holding the Lease `openshift-cluster-version/version` (a single replica).
    #[arg(long)]
    pub disable_leader_election: bool,
    /// This replica's identity in the Lease (default: the pod name, else the host name, with
    /// the process id).
    #[arg(long, value_name = "ID")]
    pub leader_identity: Option<String>,
    /// The pod this replica runs in (the downward API's `metadata.name`).
    #[arg(long, value_name = "NAME", env = "POD_NAME", hide = true)]
    pub pod_name: Option<String>,
    /// The preferred update service, as upstream's flag: when set, it is asked for the graph
    /// instead of the ClusterVersion's `spec.upstream`.
    #[arg(long, value_name = "URL")]
    pub update_service: Option<String>,
    /// The update service asked when neither --update-service nor `spec.upstream` is set; ""
    /// for none (`RetrievedUpdates=False`, `NoUpstream`).
    #[arg(long, value_name = "URL", default_value = DEFAULT_UPDATE_SERVICE)]
    pub default_update_service: String,
    /// How long one request to the update service may take (`RemoteFailed` after it).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub update_service_timeout: u64,
    /// PEM CA certificates trusted for the update service besides the system's roots (the
    /// cluster's trusted CA bundle).
    #[arg(long, value_name = "PATH")]
    pub update_service_ca: Option<PathBuf>,
    /// The Prometheus (or Thanos querier) HTTP API that `PromQL` conditional update risks are
    /// evaluated against (`<URL>/api/v1/query`). Default, as upstream: the cluster's Thanos
    /// querier (https://thanos-querier.openshift-monitoring.svc.cluster.local:9091 at the
    /// ClusterIP of Service openshift-monitoring/thanos-querier), trusting the service CA
    /// (/etc/tls/service-ca/service-ca.crt) with the pod's ServiceAccount token.
    #[arg(long, value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// PEM CA certificates: the only roots trusted for --prometheus-url.
    #[arg(long, value_name = "PATH", requires = "prometheus_url")]
    pub prometheus_ca: Option<PathBuf>,
    /// A file holding the bearer token sent to --prometheus-url (read at every query, so a
    /// rotated service account token is picked up).
    #[arg(long, value_name = "PATH", requires = "prometheus_url")]
    pub prometheus_token_file: Option<PathBuf>,
    /// How long evaluating the conditional update risks may take in one pass, queries included;
    /// risks left unevaluated are `EvaluationFailed` until the next pass.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub prometheus_timeout: u64,
    #[command(flatten)]
    pub images: ImageArgs,
}

pub fn start(mut args: StartArgs, settings: &Settings) -> CliResult {
    // An empty $CLUSTER_PROFILE is the default profile, as upstream reads it.
    if args.cluster_profile.is_empty() {
        args.cluster_profile = DEFAULT_CLUSTER_PROFILE.to_string();
    }
    // A release image is its own release image (upstream passes the pullspec it runs from).
    let from_image = match args.payload.source() {
        PayloadSource::Registry(_) | PayloadSource::OciLayout { .. } => {
            args.payload.given().map(str::to_string)
        }
        PayloadSource::Directory(_) | PayloadSource::Bundled => None,
    };
    let options = LoadOptions {
        release_image: args.release_image.clone().or(from_image),
        cluster_profile: args.cluster_profile.clone(),
        strict_templates: false,
    };
    let metrics = Arc::new(Metrics::new());
    let ca_bundle = match &args.update_service_ca {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("cannot read --update-service-ca {}", path.display()))?,
        ),
        None => None,
    };
    let prometheus = prometheus_options(&args)?;
    let server = metrics_server(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // An operator waits for its server; a one-shot run gives up after --connect-timeout.
    let wait = args.once.then(|| Duration::from_secs(args.connect_timeout));
    // A release image is pulled as a node would pull it: through the cluster's mirror sets,
    // with its pull secret, so the cluster is reached first.
    let (client, payload) = match args.payload.source() {
        PayloadSource::Registry(_) => {
            let (client, images) = runtime.block_on(async {
                let client = super::connect::connect(args.kubeconfig.as_deref(), wait).await?;
                let images =
                    crate::cluster::pull_secret::as_a_node_pulls(&client, &settings.images).await;
                anyhow::Ok((client, images))
            })?;
            let payload = load_payload(&Settings { images }, &args.payload, &options)?;
            (Some(client), payload)
        }
        _ => (None, load_payload(settings, &args.payload, &options)?),
    };
    let options = RunOptions {
        resync_interval: Duration::from_secs(args.resync_interval),
        facts: OperatorFacts {
            profile: args.cluster_profile.clone(),
            exclude: args.exclude_manifests.clone().filter(|e| !e.is_empty()),
            always_enable: (args.always_enable_capabilities.iter())
                .filter(|c| !c.is_empty())
                .map(Capability::new)
                .collect(),
        },
        once: args.once,
        wait_for_cluster_version: args.once.then(|| Duration::from_secs(args.connect_timeout)),
        payload_timeout: Duration::from_secs(args.payload_timeout),
        pass_timeout: Duration::from_secs(args.pass_timeout),
        lease: (!args.disable_leader_election).then(|| {
            LeaseConfig::new(
                args.leader_identity
                    .clone()
                    .unwrap_or_else(|| default_identity(args.pod_name.as_deref())),
            )
        }),
        metrics: Some(metrics.clone()),
        update_service: Some(args.default_update_service.clone()).filter(|u| !u.is_empty()),
        preferred_update_service: args.update_service.clone().filter(|u| !u.is_empty()),
        update_fetch: FetchOptions {
            timeout: Duration::from_secs(args.update_service_timeout),
            ca_bundle,
            proxy: None,
        },
        prometheus,
        ..RunOptions::new(payload, settings.images.clone())
    };
    runtime.block_on(async {
        let client = match client {
            Some(client) => client,
            None => super::connect::connect(args.kubeconfig.as_deref(), wait).await?,
        };
        let (tx, rx) = tokio::sync::watch::channel(false);
        if let Some((listen, tls)) = server {
            let (listener, addr) = bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            match tls {
                Some(tls) => {
                    tracing::info!(%addr, "serving /metrics (for the monitoring stack), /healthz and /readyz over HTTPS");
                    let client_ca = watch_client_ca(client.clone(), rx.clone());
                    watch_tls_profile(client.clone(), tls.clone(), rx.clone());
                    tokio::spawn(serve_tls(listener, metrics, tls, client_ca, rx.clone()));
                }
                None => {
                    tracing::warn!(%addr, "serving /metrics, /healthz and /readyz over plain HTTP to anyone (--metrics-plain-http: development only)");
                    tokio::spawn(serve(listener, metrics, rx.clone()));
                }
            }
        }
        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!("signal received; stopping after the current pass");
            let _ = tx.send(true);
        });
        anyhow::Ok(run(&client, &options, rx).await?)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The pod's name, else the host name; with the process id, so two local processes differ.
pub(super) fn default_identity(pod_name: Option<&str>) -> String {
    let host = pod_name
        .map(str::to_string)
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "cvo".into());
    format!("{host}_{}", std::process::id())
}

/// How often the serving certificate files are read again for a rotated certificate.
const CERTIFICATE_RELOAD: Duration = Duration::from_secs(5);

/// The metrics server `args` ask for: where, and its TLS (`None`: plain HTTP); `None` for no
/// server. Checked before connecting: upstream requires the certificate unless `--listen` is
/// empty; plain HTTP is this project's development escape.
type MetricsServer = Option<(std::net::SocketAddr, Option<MetricsTls>)>;

fn metrics_server(args: &StartArgs) -> anyhow::Result<MetricsServer> {
    if args.listen.is_empty() {
        return Ok(None);
    }
    let listen: std::net::SocketAddr = args.listen.parse().map_err(|e| {
        anyhow::anyhow!(
            "--listen {:?} is not an address ({e}): give HOST:PORT, e.g. 0.0.0.0:9099, or \"\" for no metrics server",
            args.listen
        )
    })?;
    let settings = TlsSettings::parse(&args.tls_min_version, &args.tls_cipher_suites)?;
    if args.metrics_plain_http {
        return Ok(Some((listen, None)));
    }
    let (Some(cert_file), Some(key_file)) = (&args.serving_cert_file, &args.serving_key_file)
    else {
        anyhow::bail!(
            "cvo start serves /metrics over HTTPS: give --serving-cert-file and --serving-key-file (the metrics Service's serving certificate), or --listen \"\" for no metrics server (--metrics-plain-http serves plain HTTP, for development only)"
        );
    };
    let tls = MetricsTls::new(&TlsServing {
        cert_file: cert_file.clone(),
        key_file: key_file.clone(),
        settings,
        reload_interval: CERTIFICATE_RELOAD,
    })?;
    Ok(Some((listen, Some(tls))))
}

/// The Prometheus risk evaluation uses: the URL checked (an `http://` or `https://` URL with a
/// host), the CA bundle read; the token file is read at every query.
fn prometheus_options(args: &StartArgs) -> anyhow::Result<PrometheusOptions> {
    if args.prometheus_url.is_none() {
        let budget = Duration::from_secs(args.prometheus_timeout);
        return Ok(crate::updates::promql_target::default_target(budget));
    }
    prometheus_options_from(
        args.prometheus_url.as_ref(),
        args.prometheus_ca.as_ref(),
        args.prometheus_token_file.as_ref(),
        args.prometheus_timeout,
    )
}

/// [`PrometheusOptions`] from the `--prometheus-*` flags of `cvo start` and `cvo upgrade
/// recommend`, checked.
pub(super) fn prometheus_options_from(
    prometheus_url: Option<&String>,
    prometheus_ca: Option<&PathBuf>,
    prometheus_token_file: Option<&PathBuf>,
    timeout: u64,
) -> anyhow::Result<PrometheusOptions> {
    if let Some(url) = prometheus_url {
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            anyhow::anyhow!(
                "--prometheus-url {url:?} is not a URL ({e}): give the Prometheus API's base, e.g. https://thanos-querier.openshift-monitoring.svc:9091"
            )
        })?;
        anyhow::ensure!(
            matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some(),
            "--prometheus-url {url:?} must be an http:// or https:// URL with a host, e.g. https://thanos-querier.openshift-monitoring.svc:9091"
        );
    }
    let ca_bundle = match prometheus_ca {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("cannot read --prometheus-ca {}", path.display()))?,
        ),
        None => None,
    };
    if let Some(path) = prometheus_token_file {
        std::fs::metadata(path)
            .with_context(|| format!("cannot read --prometheus-token-file {}", path.display()))?;
    }
    Ok(PrometheusOptions {
        url: prometheus_url.cloned(),
        ca_bundle,
        token_file: prometheus_token_file.cloned(),
        budget: Duration::from_secs(timeout),
        ..PrometheusOptions::default()
    })
}
