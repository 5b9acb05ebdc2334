//! `cvo crds`: the CustomResourceDefinitions a payload ships, ready for `kubectl apply -f -`:
//! the CVO's own (ClusterVersion, ClusterOperator) or a component's.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::CliResult;
use crate::components::{agents, deployment_targets};
use crate::suggest::unknown_value;

/// The CVO's own CRDs, the default of `--component`.
const CVO: &str = "cluster-version-operator";

/// What makes a component's CRDs.
type Generate = fn() -> Vec<CustomResourceDefinition>;

/// Every value of `--component`, with the CRDs it prints.
const COMPONENTS: &[(&str, Generate)] = &[
    (CVO, crate::cluster::crds),
    (
        deployment_targets::crds::COMPONENT,
        deployment_targets::crds::crds,
    ),
    (agents::crds::COMPONENT, agents::crds::crds),
];

#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Whose CRDs: cluster-version-operator (ClusterVersion, ClusterOperator),
    /// deployment-targets (with the DeploymentTargets capability annotation) or agents (Agent,
    /// InfraEnv, minimal ClusterDeployment and AgentClusterInstall; AgentInstall capability).
    #[arg(long, value_name = "NAME", default_value = CVO)]
    pub component: String,
    /// yaml: a `---`-separated stream; json: one `v1 List`.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = CrdsFormat::Yaml)]
    pub output: CrdsFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CrdsFormat {
    Yaml,
    Json,
}

pub fn crds_command(args: CrdsArgs) -> CliResult {
    let crds = component_crds(&args.component)?;
    let text = match args.output {
        CrdsFormat::Yaml => yaml(&crds)?,
        CrdsFormat::Json => json(&crds)?,
    };
    outln!("{}", text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// The CRDs of `component`; an unknown name is an error with the near miss and the valid names.
fn component_crds(component: &str) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    match COMPONENTS.iter().find(|(name, _)| *name == component) {
        Some((_, crds)) => Ok(crds()),
        None => {
            let valid: Vec<&str> = COMPONENTS.iter().map(|(name, _)| *name).collect();
            anyhow::bail!(
                "--component: {}",
                unknown_value("component", component, &valid)
            )
        }
    }
}

/// The CRDs as one YAML stream, the form the payload manifests are kept in.
fn yaml(crds: &[CustomResourceDefinition]) -> anyhow::Result<String> {
    serde_saphyr::to_string_multiple(crds).context("cannot write the CRDs as YAML")
}

fn json(crds: &[CustomResourceDefinition]) -> anyhow::Result<String> {
    // A List rather than concatenated objects: `kubectl apply -f` reads it, `jq` too.
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": crds});
    serde_json::to_string_pretty(&list).context("cannot write the CRDs as JSON")
}
