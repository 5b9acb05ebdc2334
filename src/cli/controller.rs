//! `cvo controller NAME`: runs one payload component's controllers (what the component's
//! Deployment in the payload runs), hosted by [`crate::host::controller`]: leader election on
//! the component's Lease, `/metrics` `/healthz` `/readyz`, Kubernetes Events, until SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand};

use super::CliResult;
use crate::components::agents::controller::{Agents, Settings as AgentSettings};
use crate::components::deployment_targets::controller::{DeploymentTargets, Settings};
use crate::components::deployment_targets::model::NamespaceProvisionerSettings;
use crate::components::edge_operator::controller::{
    EdgeAgentOperator, Settings as EdgeAgentSettings,
};
use crate::host::controller::{ControllerMetrics, HostOptions, run_component};
use crate::host::lease::LeaseConfig;
use crate::host::signal::shutdown_signal;
use crate::host::webhook::WebhookOptions;

#[derive(Debug, Args)]
pub struct ControllerGroup {
    #[command(subcommand)]
    pub component: ComponentCommand,
}

#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// DeploymentTarget provisioning (Konflux): binds DeploymentTargetClaims to
    /// DeploymentTargets, provisions and reclaims targets, projects Environments to managed
    /// environments.
    DeploymentTargets(DeploymentTargetsArgs),
    /// Agent late binding (Assisted Installer): keeps Agents' host state, binds, unbinds and
    /// moves them as their `spec.clusterDeploymentName` says, returns them to the pool when a
    /// ClusterDeployment goes, keeps InfraEnvs' status.
    Agents(AgentsArgs),
    /// The Open Horizon edge agent's operator: runs the agent (its Deployment and auto-upgrade
    /// CronJob) once its hub settings are in the ConfigMap openhorizon-agent-config and the
    /// Secret openhorizon-agent-secrets, and says in the ClusterOperator edge-agent what is
    /// missing until then.
    EdgeAgent(EdgeAgentArgs),
}

#[derive(Debug, Args)]
pub struct EdgeAgentArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// The agent image (the payload's `openhorizon-agent` image); the agent runs in --namespace.
    #[arg(long, value_name = "IMAGE")]
    pub agent_image: String,
    /// How often the settings are read again without a change (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub resync_seconds: u64,
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Where the Agent and InfraEnv admission webhooks are served over TLS (off when not
    /// given).
    #[arg(long, value_name = "ADDR")]
    pub webhook_address: Option<std::net::SocketAddr>,
    /// The names (DNS or IP) the API server reaches the webhook by, for its certificate
    /// [default: agents.NAMESPACE.svc, agents.NAMESPACE.svc.cluster.local].
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub webhook_names: Vec<String>,
    /// The ValidatingWebhookConfiguration whose CA bundle the controller keeps.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "agent-install.openshift.io"
    )]
    pub webhook_configuration: String,
    /// The image service is on: unbinding an installed host reclaims it, rebooting it into the
    /// discovery image (`reclaiming`), unless a BareMetalHost manages it (label
    /// agent-install.openshift.io/bmh) or its ClusterDeployment is gone.
    #[arg(long)]
    pub reclaim: bool,
    /// Seconds a reclaim may take (`reclaiming`, `reclaiming-rebooting`) before the host gives
    /// up and waits for a person to boot it into the discovery image
    /// (`unbinding-pending-user-action`).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub reclaim_timeout: u64,
}

/// The flags every component's controller has.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace the component runs in: its Lease lives there.
    #[arg(long, value_name = "NS", env = "POD_NAMESPACE")]
    pub namespace: String,
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9099")]
    pub metrics_address: std::net::SocketAddr,
    /// Run without leader election (a single replica).
    #[arg(long)]
    pub disable_leader_election: bool,
    /// This replica's identity in the Lease (default: the pod name, else the host name, with
    /// the process id).
    #[arg(long, value_name = "ID")]
    pub leader_identity: Option<String>,
    /// The pod this replica runs in (the downward API's `metadata.name`).
    #[arg(long, value_name = "NAME", env = "POD_NAME", hide = true)]
    pub pod_name: Option<String>,
    /// The version the component's ClusterOperator reports (the payload sets it).
    #[arg(long, value_name = "VERSION", env = "RELEASE_VERSION", default_value = env!("CARGO_PKG_VERSION"))]
    pub operator_version: String,
}

#[derive(Debug, Args)]
pub struct DeploymentTargetsArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// The API server URL the namespace provisioner writes into targets and kubeconfigs
    /// (default: the server this controller talks to).
    #[arg(long, value_name = "URL")]
    pub target_api_url: Option<String>,
    /// PEM CA bundle of --target-api-url written into kubeconfigs (default: the CA this
    /// controller trusts for its server, if any).
    #[arg(long, value_name = "FILE")]
    pub target_ca_file: Option<PathBuf>,
    /// Where the Environment admission webhook is served over TLS (off when not given).
    #[arg(long, value_name = "ADDR")]
    pub webhook_address: Option<std::net::SocketAddr>,
    /// The names (DNS or IP) the API server reaches the webhook by, for its certificate
    /// [default: deployment-targets.NAMESPACE.svc, deployment-targets.NAMESPACE.svc.cluster.local].
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub webhook_names: Vec<String>,
    /// The ValidatingWebhookConfiguration whose CA bundle the controller keeps.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "deployment-targets.appstudio.redhat.com"
    )]
    pub webhook_configuration: String,
    /// Provisioned targets get `allowInsecureSkipTLSVerify: true` (development clusters with
    /// self-signed certificates; upstream's environment variable of the same meaning).
    #[arg(long, env = "DEV_ONLY_IGNORE_SELFSIGNED_CERT_IN_DEPLOYMENT_TARGET", value_parser = clap::builder::FalseyValueParser::new())]
    pub insecure_provisioned_targets: bool,
}

pub fn controller(group: ControllerGroup) -> CliResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match group.component {
        ComponentCommand::DeploymentTargets(args) => runtime.block_on(deployment_targets(args))?,
        ComponentCommand::Agents(args) => runtime.block_on(agents(args))?,
        ComponentCommand::EdgeAgent(args) => runtime.block_on(edge_agent(args))?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn deployment_targets(args: DeploymentTargetsArgs) -> anyhow::Result<()> {
    let config = super::connect::load_config(args.host.kubeconfig.as_deref()).await?;
    let server = args.target_api_url.clone().unwrap_or_else(|| {
        config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string()
    });
    let certificate_authority_data = match &args.target_ca_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| anyhow!("cannot read --target-ca-file {}: {e}", path.display()))?,
        ),
        None => config.root_cert.as_ref().map(|certs| pem(certs)),
    };
    let client = super::connect::client_for(config, None).await?;
    let settings = Settings {
        version: args.host.operator_version.clone(),
        namespace_provisioner: NamespaceProvisionerSettings {
            server,
            certificate_authority_data,
        },
        insecure_provisioned_targets: args.insecure_provisioned_targets,
        status_interval: Duration::from_secs(30),
        webhook: args.webhook_address.map(|listen| WebhookOptions {
            listen,
            namespace: args.host.namespace.clone(),
            secret: "deployment-targets-webhook-serving-cert".into(),
            names: match args.webhook_names.is_empty() {
                true => vec![
                    format!("deployment-targets.{}.svc", args.host.namespace),
                    format!(
                        "deployment-targets.{}.svc.cluster.local",
                        args.host.namespace
                    ),
                ],
                false => args.webhook_names.clone(),
            },
            configuration: args.webhook_configuration.clone(),
        }),
    };
    let component = Arc::new(DeploymentTargets { settings });
    run_host(client, component, &args.host, "deployment-targets").await
}

async fn agents(args: AgentsArgs) -> anyhow::Result<()> {
    let client = super::connect::connect(args.host.kubeconfig.as_deref(), None).await?;
    let namespace = &args.host.namespace;
    let settings = AgentSettings {
        version: args.host.operator_version.clone(),
        status_interval: Duration::from_secs(30),
        requirements: Default::default(),
        reclaim: args.reclaim,
        reclaim_timeout: Duration::from_secs(args.reclaim_timeout),
        webhook: args.webhook_address.map(|listen| WebhookOptions {
            listen,
            namespace: namespace.clone(),
            secret: "agents-webhook-serving-cert".into(),
            names: match args.webhook_names.is_empty() {
                true => vec![
                    format!("agents.{namespace}.svc"),
                    format!("agents.{namespace}.svc.cluster.local"),
                ],
                false => args.webhook_names.clone(),
            },
            configuration: args.webhook_configuration.clone(),
        }),
    };
    let component = Arc::new(Agents::new(settings));
    run_host(client, component, &args.host, "agents").await
}

async fn edge_agent(args: EdgeAgentArgs) -> anyhow::Result<()> {
    if args.agent_image.trim().is_empty() {
        anyhow::bail!(
            "--agent-image must not be empty: the agent's image (the payload's openhorizon-agent image)"
        );
    }
    let client = super::connect::connect(args.host.kubeconfig.as_deref(), None).await?;
    let settings = EdgeAgentSettings {
        version: args.host.operator_version.clone(),
        namespace: args.host.namespace.clone(),
        agent_image: args.agent_image.clone(),
        resync: Duration::from_secs(args.resync_seconds),
    };
    let component = Arc::new(EdgeAgentOperator { settings });
    run_host(
        client,
        component,
        &args.host,
        crate::components::edge_operator::COMPONENT,
    )
    .await
}

/// Runs `component` under the host until SIGTERM.
async fn run_host<C: crate::host::controller::Component>(
    client: kube::Client,
    component: Arc<C>,
    args: &HostArgs,
    lease_name: &str,
) -> anyhow::Result<()> {
    let options = HostOptions {
        listen: args.metrics_address,
        lease: (!args.disable_leader_election).then(|| {
            let identity = (args.leader_identity.clone())
                .unwrap_or_else(|| super::start::default_identity(args.pod_name.as_deref()));
            LeaseConfig::named(&args.namespace, lease_name, identity)
        }),
    };
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("signal received; stopping the controllers");
        let _ = tx.send(true);
    });
    let metrics = Arc::new(ControllerMetrics::new());
    Ok(run_component(client, component, options, metrics, rx).await?)
}

/// DER certificates as one PEM bundle.
fn pem(certs: &[Vec<u8>]) -> String {
    use base64::Engine as _;
    let mut out = String::new();
    for der in certs {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in b64.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}
