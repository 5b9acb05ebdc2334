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
use kube::api::{Api, ListParams};

use super::CliResult;
use super::connect::connect;
use crate::components::edge::agent_install::{
    self, DEFAULT_AGENT_NAMESPACE, ENV_SCOPED, ExistingAgent, InstallSettings, Rbac, Scope,
};

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
    /// The agent image.
    #[arg(
        long,
        value_name = "IMAGE",
        default_value = "docker.io/openhorizon/amd64_anax_k8s:latest"
    )]
    pub image: String,
    /// The organization (`HZN_ORG_ID`).
    #[arg(long, value_name = "ORG", default_value = "myorg")]
    pub org: String,
    /// The exchange URL (`HZN_EXCHANGE_URL` in the agent's configuration).
    #[arg(long, value_name = "URL", default_value = "")]
    pub exchange_url: String,
    /// The CSS URL (`HZN_FSS_CSSURL`).
    #[arg(long, value_name = "URL", default_value = "")]
    pub css_url: String,
    /// The hub's CA certificate (PEM) for the agent's Secret.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// Annotate the Namespace for OpenShift's SCCs (uid 1000).
    #[arg(long)]
    pub openshift: bool,
    /// Check the coexistence rules against the cluster of --kubeconfig instead of rendering:
    /// one cluster-scoped agent per cluster, and a reinstall keeps the scope.
    #[arg(long)]
    pub check: bool,
    /// Kubeconfig for --check (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config).
    #[arg(long, value_name = "PATH", requires = "check")]
    pub kubeconfig: Option<PathBuf>,
    /// Write the bundled payload's agent files (the default install: cluster-scoped, in
    /// openhorizon-agent, for OpenShift) into DIR, with --image as the pinned image.
    #[arg(long, value_name = "DIR", conflicts_with = "check")]
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
    let settings = settings(&args)?;
    if args.check {
        return check(&args, &settings);
    }
    if let Some(dir) = &args.write_payload {
        return write_payload(dir, &args.image);
    }
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

fn settings(args: &AgentInstallArgs) -> anyhow::Result<InstallSettings> {
    let cert = match &args.cert {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("--cert {}: cannot read", path.display()))?,
        None => String::new(),
    };
    let rbac = match args.rbac {
        RbacArg::LeastPrivilege => Rbac::LeastPrivilege,
        RbacArg::Upstream => Rbac::Upstream,
    };
    Ok(InstallSettings {
        image: args.image.clone(),
        org: args.org.clone(),
        exchange_url: args.exchange_url.clone(),
        css_url: args.css_url.clone(),
        cert,
        openshift: args.openshift,
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

fn check(args: &AgentInstallArgs, settings: &InstallSettings) -> CliResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let existing = runtime.block_on(async {
        let client = connect(args.kubeconfig.as_deref(), Some(Duration::from_secs(10))).await?;
        list_agents(&client).await
    })?;
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
