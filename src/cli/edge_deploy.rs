//! `cvo edge deploy`: installs a service's operator YAML as an edge cluster agent would
//! (anax `kube_operator.Install`, spec B.1). The plan is `components::edge::deploy`'s; this
//! shell reads the file and server-side applies the plan's objects, in order.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use clap::Args;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{Scope as ApiScope, pinned_kind};
use serde_json::{Value, json};

use super::CliResult;
use super::connect::connect;
use super::edge::EdgeFormat;
use crate::components::edge::agent_install::{DEFAULT_AGENT_NAMESPACE, Scope};
use crate::components::edge::deploy::{self, DeployError, Deployment};
use crate::components::edge::placement::Agent;

/// The field manager of the applies.
const FIELD_MANAGER: &str = "cvo-edge-agent";

#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The service's operator YAML (one or more documents; `-` reads standard input).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// The agreement id (names the NetworkPolicy).
    #[arg(long, value_name = "ID")]
    pub agreement: String,
    /// The namespace the agreement carries (the deployment policy's or pattern's
    /// clusterNamespace, as the agbot decided it); empty: none.
    #[arg(long, value_name = "NS", default_value = "")]
    pub agreement_namespace: String,
    /// The agent's namespace.
    #[arg(long, value_name = "NS", default_value = DEFAULT_AGENT_NAMESPACE)]
    pub agent_namespace: String,
    /// The agent is namespace-scoped: it deploys into its own namespace only.
    #[arg(long)]
    pub namespace_scoped: bool,
    /// Kubeconfig of the agent's identity (default: $KUBECONFIG, ~/.kube/config, or the
    /// in-cluster config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Print the plan without applying it (no cluster needed).
    #[arg(long)]
    pub dry_run: bool,
    /// text: a line per object; json: {"agreement", "namespace", "objects": [{"kind", "name",
    /// "namespace"}], "applied"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

pub fn deploy(args: DeployArgs) -> CliResult {
    let documents = read_documents(&args.file)?;
    let agent = Agent {
        namespace: &args.agent_namespace,
        scope: Scope::from_scoped(args.namespace_scoped),
    };
    let deployment = match deploy::plan(
        &args.agreement,
        &args.agreement_namespace,
        &documents,
        &agent,
    ) {
        Ok(deployment) => deployment,
        Err(refusal @ DeployError::Refused(_)) => {
            eprintln!("error: {refusal}");
            return Ok(ExitCode::FAILURE);
        }
        Err(e @ DeployError::BadAgreement(_)) => return Err(anyhow!("--agreement: {e}").into()),
        Err(e) => return Err(anyhow!("{}: {e}", args.file.display()).into()),
    };
    let mut ordered: Vec<Value> = (deployment.namespace_object.iter())
        .chain(&deployment.network_policy)
        .cloned()
        .collect();
    ordered.extend(deployment.objects.iter().cloned());
    let applied = match args.dry_run {
        true => ordered,
        false => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            runtime.block_on(apply(&args, &deployment, ordered))?
        }
    };
    report(&args, &deployment, &applied)?;
    Ok(ExitCode::SUCCESS)
}

/// Server-side applies each object, namespaced kinds into the final namespace; the objects as
/// applied.
async fn apply(
    args: &DeployArgs,
    deployment: &Deployment,
    objects: Vec<Value>,
) -> anyhow::Result<Vec<Value>> {
    let client = connect(args.kubeconfig.as_deref(), Some(Duration::from_secs(10))).await?;
    let mut applied = Vec::new();
    for mut object in objects {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let typed: DynamicObject = serde_json::from_value(object.clone())
            .with_context(|| format!("{kind} {name}: not a Kubernetes object"))?;
        let types = typed.types.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types)
            .with_context(|| format!("{kind} {name}: apiVersion {:?}", types.api_version))?;
        let (resource, caps) = pinned_kind(&client, &gvk).await.with_context(|| {
            format!(
                "{kind} {name}: the cluster does not serve {}",
                types.api_version
            )
        })?;
        let api: Api<DynamicObject> = match caps.scope {
            ApiScope::Cluster => Api::all_with(client.clone(), &resource),
            ApiScope::Namespaced => {
                // The agent's own NetworkPolicy carries its namespace; the operator's objects
                // go into the final one.
                if !is_network_policy(&object, deployment) {
                    object["metadata"]["namespace"] = json!(deployment.namespace);
                }
                let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
                Api::namespaced_with(client.clone(), ns, &resource)
            }
        };
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("cannot apply {kind} {name}"))?;
        applied.push(object);
    }
    Ok(applied)
}

fn is_network_policy(object: &Value, deployment: &Deployment) -> bool {
    deployment.network_policy.as_ref().is_some_and(|p| {
        p["kind"] == object["kind"] && p["metadata"]["name"] == object["metadata"]["name"]
    })
}

fn report(args: &DeployArgs, deployment: &Deployment, objects: &[Value]) -> anyhow::Result<()> {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            json!({"kind": o["kind"], "name": o["metadata"]["name"],
                   "namespace": o["metadata"]["namespace"].as_str().unwrap_or_default()})
        })
        .collect();
    match args.output {
        EdgeFormat::Json => {
            let out = json!({
                "agreement": args.agreement,
                "namespace": deployment.namespace,
                "objects": rows,
                "applied": !args.dry_run,
            });
            outln!("{}", serde_json::to_string_pretty(&out)?);
        }
        EdgeFormat::Text => {
            let verb = if args.dry_run {
                "would apply"
            } else {
                "applied"
            };
            for row in &rows {
                let ns = row["namespace"].as_str().unwrap_or_default();
                let at = if ns.is_empty() {
                    String::new()
                } else {
                    format!(" in {ns}")
                };
                outln!(
                    "{verb} {} {}{at}",
                    row["kind"].as_str().unwrap_or_default(),
                    row["name"].as_str().unwrap_or_default()
                );
            }
            outln!(
                "agreement {}: namespace {}",
                args.agreement,
                deployment.namespace
            );
        }
    }
    Ok(())
}

/// The file's documents as JSON, empty documents left out.
fn read_documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let (origin, text) = super::input::read_input(path)?;
    let parsed = super::input::documents(&text).with_context(|| origin.clone())?;
    let mut documents = Vec::new();
    for (line, value) in parsed {
        match value {
            Value::Object(_) => documents.push(value),
            _ => {
                return Err(anyhow!(
                    "{origin}: line {line}: a document that is not an object"
                ));
            }
        }
    }
    Ok(documents)
}
