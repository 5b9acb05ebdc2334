//! `cvo edge deploycheck`: deploycheck for one node (`components::edge::deploycheck`) over
//! exchange documents read from files in the exchange's JSON.

use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{ArgGroup, Args};
use serde::de::DeserializeOwned;

use super::CliResult;
use super::edge::EdgeFormat;
use crate::components::edge::deploycheck::{self, Deployer};
use crate::components::edge::exchange::{self, NodePolicy, Pattern, Service};
use crate::components::edge::fields::Doc;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("deployer").required(true).args(["policy", "pattern"])))]
pub struct DeploycheckArgs {
    /// The node (`hzn exchange node list -l`, or the exchange's `/nodes/{id}` answer).
    #[arg(long, value_name = "FILE")]
    pub node: PathBuf,
    /// The node policy (`/nodes/{id}/policy`); none: no properties and no constraints.
    #[arg(long, value_name = "FILE")]
    pub node_policy: Option<PathBuf>,
    /// The deployment policy (`/business/policies/{name}`).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The pattern (`/patterns/{name}`).
    #[arg(long, value_name = "FILE")]
    pub pattern: Option<PathBuf>,
    /// The service definitions (`/services/{id}`), one file each.
    #[arg(long, value_name = "FILE", required = true, num_args = 1..)]
    pub service: Vec<PathBuf>,
    /// text: a line per service, then the warnings; json: {"compatible", "services", "warnings"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

pub(super) fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))
}

/// An exchange document read as `doc`; the fields anax does not know are named on standard
/// error, a near miss of a known one is an error.
pub(super) fn document<T: DeserializeOwned>(
    path: &Path,
    doc: Doc,
    key: &'static str,
) -> anyhow::Result<(Option<String>, T)> {
    let read =
        exchange::one(&read(path)?, doc, key).with_context(|| format!("{}", path.display()))?;
    warn_fields(path, &read.warnings);
    Ok((read.id, read.value))
}

pub(super) fn warn_fields(path: &Path, warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {}: {w}", path.display());
    }
}

/// The node file, read as [`document`] reads.
pub(super) fn node(path: &Path) -> anyhow::Result<(Option<String>, exchange::Node)> {
    let read = exchange::node(&read(path)?).with_context(|| format!("{}", path.display()))?;
    warn_fields(path, &read.warnings);
    Ok((read.id, read.value))
}

/// Exit 0 with the report, compatible or not; 1 for a file that cannot be read or is not the
/// document it should be.
pub fn deploycheck(args: DeploycheckArgs) -> CliResult {
    let (node_id, node) = node(&args.node)?;
    let node_policy: NodePolicy = match &args.node_policy {
        Some(path) => document::<NodePolicy>(path, Doc::NodePolicy, "nodePolicy")?.1,
        None => NodePolicy::default(),
    };
    let deployer = match (&args.policy, &args.pattern) {
        (Some(path), _) => {
            Deployer::Policy(document(path, Doc::DeploymentPolicy, "businessPolicy")?.1)
        }
        (None, Some(path)) => {
            let (id, pattern) = document::<Pattern>(path, Doc::Pattern, "patterns")?;
            let id = id
                .or_else(|| Some(node.pattern.clone()).filter(|p| !p.is_empty()))
                .unwrap_or_else(|| {
                    path.file_stem()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                });
            Deployer::Pattern(pattern, id)
        }
        (None, None) => return Err(anyhow::anyhow!("give --policy FILE or --pattern FILE").into()),
    };
    let mut services = Vec::new();
    for path in &args.service {
        let (id, mut service) = document::<Service>(path, Doc::Service, "services")?;
        // The exchange keeps the org in the id (`org/url_version_arch`), not in the object.
        if let Some((org, _)) = id.as_deref().and_then(|id| id.split_once('/'))
            && service.org.is_empty()
        {
            service.org = org.to_owned();
        }
        services.push(service);
    }
    let report = deploycheck::deploycheck(&node, &node_policy, &deployer, &services);
    match args.output {
        EdgeFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(anyhow::Error::from)?
        ),
        EdgeFormat::Text => {
            let node_name = node_id.unwrap_or(node.name);
            for s in &report.services {
                match s.compatible {
                    true if s.namespace.is_empty() => {
                        outln!("{}: compatible with node {node_name}", s.service)
                    }
                    true => outln!(
                        "{}: compatible with node {node_name}, namespace {}",
                        s.service,
                        s.namespace
                    ),
                    false => outln!(
                        "{}: incompatible ({}): {}",
                        s.service,
                        s.failed_check,
                        s.reason
                    ),
                }
            }
            for w in &report.warnings {
                outln!("warning: {w}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
