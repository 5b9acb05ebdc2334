//! `cvo edge namespace`: the target-namespace function (`components::edge::placement`) on the
//! command line, as anax's agbot, agent and deploycheck decide it.

use std::process::ExitCode;

use anyhow::anyhow;
use clap::{Args, ValueEnum};

use super::CliResult;
use super::edge::EdgeFormat;
use crate::components::deployment_targets::dns1123;
use crate::components::edge::agent_install::Scope;
use crate::components::edge::placement::{self, NamespaceQuestion, NodeType};

#[derive(Debug, Args)]
pub struct NamespaceArgs {
    /// The node: a device (no namespace) or an edge cluster.
    #[arg(long, value_enum)]
    pub node_type: NodeTypeArg,
    /// The cluster agent's namespace (empty: openhorizon-agent).
    #[arg(long, value_name = "NS", default_value = "")]
    pub node_namespace: String,
    /// The cluster agent is namespace-scoped.
    #[arg(long)]
    pub namespace_scoped: bool,
    /// The deployment policy's `service.clusterNamespace`, or the pattern's `clusterNamespace`.
    #[arg(long, value_name = "NS", default_value = "")]
    pub deployer_namespace: String,
    /// The pattern the node runs, ORG/NAME (its `clusterNamespace` is --deployer-namespace).
    #[arg(long, value_name = "ORG/NAME")]
    pub pattern: Option<String>,
    /// The namespace the service's operator YAML declares.
    #[arg(long, value_name = "NS", default_value = "")]
    pub service_namespace: String,
    /// text: one line; json: {"compatible", "namespace", "reason"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NodeTypeArg {
    Device,
    Cluster,
}

impl From<NodeTypeArg> for NodeType {
    fn from(arg: NodeTypeArg) -> NodeType {
        match arg {
            NodeTypeArg::Device => NodeType::Device,
            NodeTypeArg::Cluster => NodeType::Cluster,
        }
    }
}

/// Exit 0 with the answer, compatible or not; 1 for a --pattern that is not ORG/NAME or a
/// namespace that is not a namespace name.
pub fn namespace(args: NamespaceArgs) -> CliResult {
    for (flag, ns) in [
        ("--node-namespace", &args.node_namespace),
        ("--deployer-namespace", &args.deployer_namespace),
        ("--service-namespace", &args.service_namespace),
    ] {
        // Empty means none; anything else lands in a cluster as a Namespace's name.
        let problems = match ns.is_empty() {
            true => Vec::new(),
            false => dns1123::label_errors(ns),
        };
        if !problems.is_empty() {
            return Err(anyhow!(
                "{flag} {ns:?} is not a namespace name: {}",
                problems.join("; ")
            )
            .into());
        }
    }
    if let Some(pattern) = &args.pattern
        && !is_pattern_id(pattern)
    {
        return Err(anyhow!(
            "--pattern {pattern:?}: a pattern is ORG/NAME, e.g. myorg/pattern-nginx"
        )
        .into());
    }
    let answer = placement::target_namespace(&NamespaceQuestion {
        node_type: args.node_type.into(),
        node_namespace: &args.node_namespace,
        node_scope: Scope::from_scoped(args.namespace_scoped),
        deployer_namespace: &args.deployer_namespace,
        pattern: args.pattern.as_deref(),
        service_namespace: &args.service_namespace,
    });
    match args.output {
        EdgeFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&answer).map_err(anyhow::Error::from)?
        ),
        EdgeFormat::Text => match (answer.compatible, answer.namespace.as_str()) {
            (true, "") => outln!("compatible (a device: no namespace)"),
            (true, ns) => outln!("compatible: namespace {ns}"),
            (false, _) => outln!("incompatible: {}", answer.reason),
        },
    }
    Ok(ExitCode::SUCCESS)
}

fn is_pattern_id(text: &str) -> bool {
    matches!(text.split_once('/'), Some((org, name)) if !org.is_empty() && !name.is_empty() && !name.contains('/'))
}
