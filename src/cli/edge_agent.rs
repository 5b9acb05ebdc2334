//! `cvo edge agent-install`: the edge cluster agent's objects for a namespace and scope
//! (`components::edge::agent_install`), written as YAML or JSON for `kubectl apply`, or as the
//! bundled payload's files; with `--check`, the install script's coexistence rules against a
//! live cluster (the shell lists the agent Deployments, the core decides).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use super::CliResult;
use super::connect::connect;
use crate::components::edge::agent_install::{
    self, DEFAULT_AGENT_NAMESPACE, ENV_SCOPED, ExistingAgent, HubCert, InstallError,
    InstallSettings, Rbac, Scope,
};
use crate::components::edge::cluster_properties::{self, NodeFacts};
use crate::components::edge::properties::Property;

#[derive(Debug, Args)]
pub struct AgentInstallArgs {
    /// The agent namespace (the install script's --namespace).
    #[arg(long, value_name = "NS", default_value = DEFAULT_AGENT_NAMESPACE)]
    pub namespace: String,
    /// A namespace-scoped agent: it deploys services into its own namespace only.
    #[arg(long)]
    pub namespace_scoped: bool,
    /// least-privilege: a namespace-scoped agent gets a RoleBinding to `admin` in its
    /// namespace only (the design); upstream: `cluster-admin` for both scopes, as anax ships.
    #[arg(long, value_enum, default_value_t = RbacArg::LeastPrivilege)]
    pub rbac: RbacArg,
    /// The agent image (`<arch>_anax_k8s`).
    #[arg(long, value_name = "IMAGE", default_value = agent_install::DEFAULT_IMAGE)]
    pub image: String,
    /// The auto-upgrade CronJob's image; default: derived from --image as agent-install.sh
    /// does (`<arch>_anax_k8s:TAG` → `<arch>_auto-upgrade-cronjob_k8s:TAG`).
    #[arg(long, value_name = "IMAGE")]
    pub cronjob_image: Option<String>,
    /// The image of the root init container that chowns the PVC to 1000:1000 (off OpenShift).
    #[arg(long, value_name = "IMAGE", default_value = agent_install::DEFAULT_INIT_CONTAINER_IMAGE)]
    pub init_container_image: String,
    /// The organization (`HZN_ORG_ID`). Required.
    #[arg(long, value_name = "ORG", env = "HZN_ORG_ID")]
    pub org: Option<String>,
    /// The exchange URL (`HZN_EXCHANGE_URL` in the agent's configuration). Required.
    #[arg(long, value_name = "URL", env = "HZN_EXCHANGE_URL")]
    pub exchange_url: Option<String>,
    /// The CSS URL (`HZN_FSS_CSSURL`). Required.
    #[arg(long, value_name = "URL", env = "HZN_FSS_CSSURL")]
    pub css_url: Option<String>,
    /// The hub's CA certificate (PEM) for the agent's Secret; without it no Secret, as
    /// agent-install.sh without a certificate file (a hub with a publicly signed certificate).
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// The PVC's storage class (default: the cluster's default class).
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// The PVC's size.
    #[arg(long, value_name = "SIZE", default_value = "10Gi")]
    pub pvc_size: String,
    /// A docker-registry Secret in the agent namespace to pull the images with (the script's
    /// `registry-creds`, for a private registry).
    #[arg(long, value_name = "SECRET")]
    pub image_pull_secret: Option<String>,
    /// Annotate the Namespace for OpenShift's SCCs (uid 1000).
    #[arg(long)]
    pub openshift: bool,
    /// Check the coexistence rules against the cluster of --kubeconfig instead of rendering:
    /// one cluster-scoped agent per cluster, and a reinstall keeps the scope.
    #[arg(long, group = "query")]
    pub check: bool,
    /// Print the built-in node properties the agent (--namespace, --namespace-scoped) would
    /// compute on the cluster of --kubeconfig with that kubeconfig's rights, as exchange
    /// properties (anax cutil/cluster.go: the Nodes' arch, cpu and memory, the server version).
    #[arg(long, group = "query")]
    pub properties: bool,
    /// Kubeconfig for --check and --properties (default: $KUBECONFIG, ~/.kube/config, or the
    /// in-cluster config).
    #[arg(long, value_name = "PATH", requires = "query")]
    pub kubeconfig: Option<PathBuf>,
    /// Write the bundled payload's agent files (the default install: cluster-scoped, in
    /// openhorizon-agent, for OpenShift) into DIR, with --image as the pinned image.
    #[arg(long, value_name = "DIR", conflicts_with = "query")]
    pub write_payload: Option<PathBuf>,
    /// yaml: a `---` stream; json: one `v1 List`.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = AgentFormat::Yaml)]
    pub output: AgentFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RbacArg {
    LeastPrivilege,
    Upstream,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentFormat {
    Yaml,
    Json,
}

pub fn agent_install(args: AgentInstallArgs) -> CliResult {
    if let Some(dir) = &args.write_payload {
        return write_payload(dir, &args.image);
    }
    if args.check || args.properties {
        let settings = InstallSettings::new(
            &args.namespace,
            Scope::from_scoped(args.namespace_scoped),
            Rbac::LeastPrivilege,
        );
        return match args.check {
            true => check(&args, &settings),
            false => properties(&args, &settings),
        };
    }
    let settings = settings(&args)?;
    if args.rbac == RbacArg::Upstream {
        eprintln!(
            "warning: --rbac upstream: the agent's ServiceAccount is bound to cluster-admin whatever its scope, as anax's agent-install.sh does{}",
            match args.namespace_scoped {
                true => "; this namespace-scoped agent can manage every namespace",
                false => "",
            }
        );
    }
    let documents = agent_install::render(&settings).map_err(anyhow::Error::from)?;
    let text = match args.output {
        AgentFormat::Yaml => serde_saphyr::to_string_multiple(&documents)
            .context("cannot write the objects as YAML")?,
        AgentFormat::Json => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": documents});
            serde_json::to_string_pretty(&list).context("cannot write the objects as JSON")?
        }
    };
    outln!("{}", text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// The hub settings an agent cannot run without, with the variable `agent-install.sh` reads
/// each from.
const HUB_FLAGS: [(&str, &str); 3] = [
    ("--exchange-url", "HZN_EXCHANGE_URL"),
    ("--css-url", "HZN_FSS_CSSURL"),
    ("--org", "HZN_ORG_ID"),
];

/// The hub settings `args` lack (absent or empty), as `(flag, variable)`.
fn missing_hub_settings(args: &AgentInstallArgs) -> Vec<(&'static str, &'static str)> {
    let values = [&args.exchange_url, &args.css_url, &args.org];
    HUB_FLAGS
        .into_iter()
        .zip(values)
        .filter(|(_, value)| value.as_deref().is_none_or(|v| v.trim().is_empty()))
        .map(|(flag, _)| flag)
        .collect()
}

/// The usage error for missing hub settings: which, where agent-install.sh reads them, and a
/// command line that works.
fn missing_hub_message(missing: &[(&str, &str)]) -> String {
    let flags: Vec<&str> = missing.iter().map(|(flag, _)| *flag).collect();
    let variables: Vec<&str> = missing.iter().map(|(_, var)| *var).collect();
    format!(
        "the agent cannot reach its management hub without {}: give {} (or set {} in the environment, the variables anax's agent-install.sh reads, also from its agent-install.cfg), e.g. --exchange-url https://HUB/edge-exchange/v1 --css-url https://HUB/edge-css/ --org ORG",
        flags.join(", "),
        match flags.len() {
            1 => "it",
            _ => "them",
        },
        variables.join(", "),
    )
}

fn settings(args: &AgentInstallArgs) -> anyhow::Result<InstallSettings> {
    let missing = missing_hub_settings(args);
    if !missing.is_empty() {
        super::usage_error(
            &["edge", "agent-install"],
            clap::error::ErrorKind::MissingRequiredArgument,
            &missing_hub_message(&missing),
        );
    }
    let hub_cert = match &args.cert {
        Some(path) => HubCert::Pem(
            std::fs::read_to_string(path)
                .with_context(|| format!("--cert {}: cannot read", path.display()))?,
        ),
        None => HubCert::None,
    };
    let rbac = match args.rbac {
        RbacArg::LeastPrivilege => Rbac::LeastPrivilege,
        RbacArg::Upstream => Rbac::Upstream,
    };
    let cronjob_image = match &args.cronjob_image {
        Some(image) => image.clone(),
        None => agent_install::cronjob_image_for(&args.image)
            .ok_or_else(|| InstallError::CronJobImage(args.image.clone()))?,
    };
    Ok(InstallSettings {
        image: args.image.clone(),
        cronjob_image,
        init_container_image: args.init_container_image.clone(),
        org: args.org.clone().unwrap_or_default(),
        exchange_url: args.exchange_url.clone().unwrap_or_default(),
        css_url: args.css_url.clone().unwrap_or_default(),
        hub_cert,
        openshift: args.openshift,
        pvc_size: args.pvc_size.clone(),
        storage_class: args.storage_class.clone(),
        image_pull_secret: args.image_pull_secret.clone(),
        ..InstallSettings::new(
            &args.namespace,
            Scope::from_scoped(args.namespace_scoped),
            rbac,
        )
    })
}

fn write_payload(dir: &Path, image: &str) -> CliResult {
    let files = agent_install::payload_files(&agent_install::payload_settings(image))
        .map_err(anyhow::Error::from)?;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    for file in files {
        let path = dir.join(&file.name);
        std::fs::write(&path, file.text)
            .with_context(|| format!("{}: cannot write", path.display()))?;
        outln!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `query` with a client of --kubeconfig on a one-thread runtime.
fn with_client<T, F, Fut>(args: &AgentInstallArgs, query: F) -> anyhow::Result<T>
where
    F: FnOnce(kube::Client) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let client = connect(args.kubeconfig.as_deref(), Some(Duration::from_secs(10))).await?;
        query(client).await
    })
}

fn properties(args: &AgentInstallArgs, settings: &InstallSettings) -> CliResult {
    let (namespace, scope) = (settings.namespace.clone(), settings.scope);
    let properties = with_client(args, |client| async move {
        cluster_properties(&client, &namespace, scope).await
    })?;
    let text = match args.output {
        AgentFormat::Yaml => {
            serde_saphyr::to_string(&properties).context("cannot write the properties as YAML")?
        }
        AgentFormat::Json => serde_json::to_string_pretty(&properties)
            .context("cannot write the properties as JSON")?,
    };
    outln!("{}", text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// The built-in properties an agent in `namespace` with `scope` computes, read with `client`'s
/// rights as anax's agent reads them (the server version, then every Node).
pub async fn cluster_properties(
    client: &kube::Client,
    namespace: &str,
    scope: Scope,
) -> anyhow::Result<Vec<Property>> {
    // anax only warns when the version cannot be read, and leaves the property out.
    let version = match client.apiserver_version().await {
        Ok(info) => Some(info.git_version),
        Err(e) => {
            eprintln!(
                "warning: cannot read the server version ({e}): the agent publishes no openhorizon.kubernetesVersion"
            );
            None
        }
    };
    let api: Api<Node> = Api::all(client.clone());
    let nodes = api.list(&ListParams::default()).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot list the Nodes ({e}): an agent with these rights publishes {} (anax cutil/cluster.go gives up on every built-in property); grant its ServiceAccount `list` on `nodes`, as `cvo edge agent-install` does with ClusterRole {}",
            published(&cluster_properties::unreadable()),
            agent_install::node_reader_name(namespace),
        )
    })?;
    let facts: Vec<NodeFacts> = nodes.items.iter().map(node_facts).collect();
    Ok(cluster_properties::builtin_properties(
        &facts,
        version.as_deref(),
        namespace,
        scope,
    )?)
}

/// `name=value, ...` for a message.
fn published(properties: &[Property]) -> String {
    let pairs: Vec<String> = properties
        .iter()
        .map(|p| format!("{}={}", p.name, p.value.clone().unwrap_or_default()))
        .collect();
    pairs.join(", ")
}

fn node_facts(node: &Node) -> NodeFacts {
    let status = node.status.as_ref();
    let capacity = |key: &str| {
        status
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get(key))
            .map(|q| q.0.clone())
    };
    NodeFacts {
        architecture: status
            .and_then(|s| s.node_info.as_ref())
            .map(|i| i.architecture.clone())
            .unwrap_or_default(),
        cpu: capacity("cpu"),
        memory: capacity("memory"),
    }
}

fn check(args: &AgentInstallArgs, settings: &InstallSettings) -> CliResult {
    let existing = with_client(args, |client| async move { list_agents(&client).await })?;
    match agent_install::check_coexistence(&existing, &settings.namespace, settings.scope) {
        Ok(()) => {
            outln!(
                "ok: a {} agent can be installed in namespace {} ({} agent(s) on the cluster)",
                settings.scope.describe(),
                settings.namespace,
                existing.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The agent Deployments in every namespace, with the scope their agent container declares.
pub async fn list_agents(client: &kube::Client) -> anyhow::Result<Vec<ExistingAgent>> {
    let api: Api<Deployment> = Api::all(client.clone());
    let params =
        ListParams::default().fields(&format!("metadata.name={}", agent_install::DEPLOYMENT));
    let list = api
        .list(&params)
        .await
        .context("cannot list the agent Deployments in all namespaces")?;
    Ok(list.items.iter().map(existing_agent).collect())
}

fn existing_agent(deployment: &Deployment) -> ExistingAgent {
    let containers = (deployment.spec.as_ref())
        .and_then(|s| s.template.spec.as_ref())
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let scoped_env = containers
        .iter()
        .filter(|c| c.name == agent_install::CONTAINER)
        .flat_map(|c| c.env.iter().flatten())
        .find(|e| e.name == ENV_SCOPED)
        .and_then(|e| e.value.clone());
    ExistingAgent {
        namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
        scoped_env,
    }
}
