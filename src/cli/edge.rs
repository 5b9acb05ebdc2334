//! `cvo edge`: Open Horizon edge policies offline. `cvo edge constraints` validates a policy's
//! constraints and decides them against properties; `cvo edge version-range` validates a
//! version range and tests versions against it. Both answer as anax would, messages included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::CliResult;
use crate::components::edge::constraints::{self, eval};
use crate::components::edge::properties::{self, Property};
use crate::components::edge::version::VersionRange;

#[derive(Debug, Args)]
pub struct EdgeGroup {
    #[command(subcommand)]
    pub command: EdgeCommand,
}

#[derive(Debug, Subcommand)]
pub enum EdgeCommand {
    /// Validate constraints (the arguments are one policy's constraint array, ANDed) and, with
    /// --properties, decide whether the properties satisfy them.
    #[command(after_help = CONSTRAINTS_HELP)]
    Constraints(ConstraintsArgs),
    /// Validate a version range (`[1.0.0,2.0.0)`, `(1,2]`, or a bare version meaning
    /// `[x,INFINITY)`) and test versions against it.
    #[command(after_help = VERSION_RANGE_HELP)]
    VersionRange(VersionRangeArgs),
    /// The edge cluster agent's objects (Namespace, ServiceAccount, RBAC, Secret, ConfigMap,
    /// PVC, Deployment, Service, CronJob) for a hub, a namespace and a scope; --check tests the
    /// install script's coexistence rules against a cluster, --properties computes the agent's
    /// built-in properties there.
    AgentInstall(super::edge_agent::AgentInstallArgs),
    /// Where a service lands on a node: the namespace, or why the node cannot run it (anax's
    /// CheckClusterNamespaceCompatibility).
    Namespace(super::edge_placement::NamespaceArgs),
    /// Whether services deploy to a node: per service the arch, type, namespace and policy
    /// checks in anax's order, and the publish-time warnings, over exchange JSON files.
    Deploycheck(super::edge_deploycheck::DeploycheckArgs),
    /// Node management policies: `status` runs a node's node management worker over exchange
    /// documents and prints each applicable policy's status as the exchange holds it.
    Nmp(super::edge_nmp::NmpGroup),
    /// Agent packages (the .tar.gz agents upgrade from): write one, inspect one, verify one
    /// against its SHA-256 digest and an installed version.
    Package(super::edge_package::PackageGroup),
    /// Install a service's operator YAML as an edge cluster agent would: the final namespace,
    /// the refusal of a namespace-scoped agent, the Namespace and NetworkPolicy of a
    /// cluster-scoped one.
    Deploy(super::edge_deploy::DeployArgs),
}

// Laid out by hand: clap wraps no help text without its `wrap_help` feature.
const CONSTRAINTS_HELP: &str = "Example:
  cvo edge constraints --properties node.json 'purpose == testing && cpu >= 2' 'arch in \"amd64,arm64\"'

The properties file is the exchange's JSON: [{\"name\": \"cpu\", \"value\": 4, \"type\": \"int\"}, ...]
(type optional: string, int, float, boolean, version, list of strings); `-` reads standard input.

Exit codes:
  0  the constraints are valid (satisfied or not: see the output)
  1  a constraint is not valid, or the properties file cannot be read or is not valid
  2  usage error";

const VERSION_RANGE_HELP: &str = "Example:
  cvo edge version-range '[1.0.0,2.0.0)' 1.2.3 2.0.0

Exit codes:
  0  the range is valid and so is every VERSION
  1  the range or a VERSION is not valid (each is named on standard error)
  2  usage error";

#[derive(Debug, Args)]
pub struct ConstraintsArgs {
    /// The properties to decide the constraints against: a JSON list of exchange properties
    /// `{name, value, type?}`; `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub properties: Option<PathBuf>,
    /// text: one line; json: {"valid", "error", "satisfied", "reason"} (`error` is anax's
    /// validation message, empty when valid; `satisfied` is null without --properties or when a
    /// constraint is not valid; `reason` is anax's answer when not satisfied, else null).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
    /// The constraints, one per argument; together one constraint array (ANDed).
    #[arg(value_name = "EXPR")]
    pub constraints: Vec<String>,
}

#[derive(Debug, Args)]
pub struct VersionRangeArgs {
    /// The version range.
    #[arg(value_name = "EXPR")]
    pub range: String,
    /// Versions to test against the range.
    #[arg(value_name = "VERSION")]
    pub versions: Vec<String>,
    /// text: a line for the range and one per version; json: {"valid", "error", "contains"}
    /// (`contains` maps each VERSION to true, false, or null when it is not a version).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = EdgeFormat::Text)]
    pub output: EdgeFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EdgeFormat {
    Text,
    Json,
}

pub fn edge(group: EdgeGroup) -> CliResult {
    match group.command {
        EdgeCommand::Constraints(args) => constraints_command(args),
        EdgeCommand::VersionRange(args) => version_range(args),
        EdgeCommand::AgentInstall(args) => super::edge_agent::agent_install(args),
        EdgeCommand::Namespace(args) => super::edge_placement::namespace(args),
        EdgeCommand::Deploycheck(args) => super::edge_deploycheck::deploycheck(args),
        EdgeCommand::Nmp(group) => super::edge_nmp::nmp(group),
        EdgeCommand::Package(group) => super::edge_package::package(group),
        EdgeCommand::Deploy(args) => super::edge_deploy::deploy(args),
    }
}

fn constraints_command(args: ConstraintsArgs) -> CliResult {
    // The properties first: a bad file is an error whatever the constraints are.
    let properties = match &args.properties {
        Some(path) => Some(read_properties(path)?),
        None => None,
    };
    let verdict = constraints::validate(&args.constraints);
    // With properties, anax's IsSatisfiedBy: satisfied, or not with its reason.
    let answer = match (&verdict, &properties) {
        (Ok(()), Some(properties)) => Some(
            eval::evaluate(&args.constraints, properties)
                .map_err(|e| anyhow!("the constraints are valid but cannot be decided: {e}"))?,
        ),
        _ => None,
    };
    // anax's ConstraintExpression.Validate answers through its plugin registry, in its words.
    let error =
        (verdict.as_ref().err()).map(|e| constraints::registry_message(&args.constraints, e));
    match args.output {
        EdgeFormat::Json => {
            let mut out = serde_json::Map::new();
            out.insert("valid".to_owned(), json!(verdict.is_ok()));
            out.insert(
                "error".to_owned(),
                json!(error.as_deref().unwrap_or_default()),
            );
            out.insert(
                "satisfied".to_owned(),
                json!(answer.as_ref().map(Result::is_ok)),
            );
            out.insert(
                "reason".to_owned(),
                json!(answer.as_ref().and_then(|a| a.as_ref().err())),
            );
            let text =
                serde_json::to_string_pretty(&Value::Object(out)).map_err(anyhow::Error::from)?;
            outln!("{text}");
        }
        EdgeFormat::Text => match (&error, &answer) {
            (Some(error), _) => outln!("invalid: {}", error.trim_end()),
            (None, None) => outln!("valid"),
            (None, Some(Ok(()))) => outln!("valid, satisfied"),
            (None, Some(Err(reason))) => outln!("valid, not satisfied: {reason}"),
        },
    }
    Ok(match verdict {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    })
}

/// The properties file: a JSON list of exchange properties that anax would accept.
fn read_properties(path: &Path) -> anyhow::Result<Vec<Property>> {
    let (origin, text) = super::input::read_input(path)?;
    let list: Vec<Property> = serde_json::from_str(&text).with_context(|| {
        format!("{origin}: not a JSON list of properties {{\"name\", \"value\", \"type\"}}")
    })?;
    properties::validate(&list).with_context(|| format!("{origin}: invalid property"))?;
    Ok(list)
}

fn version_range(args: VersionRangeArgs) -> CliResult {
    let range = VersionRange::parse(&args.range);
    // Each VERSION: in the range, or why it is not a version (only when the range is valid).
    let mut contains: BTreeMap<&str, Option<bool>> = BTreeMap::new();
    let mut bad_versions = Vec::new();
    if let Ok(range) = &range {
        for version in &args.versions {
            match range.contains(version) {
                Ok(inside) => contains.insert(version, Some(inside)),
                Err(e) => {
                    bad_versions.push(e.to_string());
                    contains.insert(version, None)
                }
            };
        }
    }
    let error = range.as_ref().err().map(ToString::to_string);
    match args.output {
        EdgeFormat::Json => {
            let contains: serde_json::Map<String, Value> = (contains.iter())
                .map(|(v, inside)| (v.to_string(), json!(inside)))
                .collect();
            print_json(
                range.is_ok(),
                error.as_deref(),
                "contains",
                Value::Object(contains),
            )?;
        }
        EdgeFormat::Text => match &range {
            Err(e) => outln!("invalid: {e}"),
            Ok(range) => {
                outln!("valid: {range}");
                for version in &args.versions {
                    match contains.get(version.as_str()).copied().flatten() {
                        Some(true) => outln!("{version}: in"),
                        Some(false) => outln!("{version}: not in"),
                        None => outln!("{version}: not a version"),
                    }
                }
            }
        },
    }
    for message in &bad_versions {
        eprintln!("error: {message}");
    }
    Ok(match range.is_ok() && bad_versions.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// The JSON answer both commands give: `valid`, `error` (empty when valid) and their own key.
fn print_json(valid: bool, error: Option<&str>, key: &str, value: Value) -> anyhow::Result<()> {
    let mut out = serde_json::Map::new();
    out.insert("valid".to_owned(), json!(valid));
    out.insert("error".to_owned(), json!(error.unwrap_or_default()));
    out.insert(key.to_owned(), value);
    outln!("{}", serde_json::to_string_pretty(&Value::Object(out))?);
    Ok(())
}
