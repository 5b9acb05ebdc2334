//! `cvo dt`: the DeploymentTarget component offline. `cvo dt reconcile` runs the binder, the
//! reclaimer, the provisioners and the SpaceRequest reconciler over objects read from a file
//! until nothing changes, and prints the objects as they end up.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::CliResult;
use crate::components::deployment_targets::load::load;
use crate::components::deployment_targets::model::Context;
use crate::components::deployment_targets::offline::{self, Report};

#[derive(Debug, Args)]
pub struct DtGroup {
    #[command(subcommand)]
    pub command: DtCommand,
}

#[derive(Debug, Subcommand)]
pub enum DtCommand {
    /// Bind, provision and reclaim DeploymentTargets offline: run the controllers over the
    /// objects in a file until nothing changes, and print the objects as they end up.
    #[command(after_help = RECONCILE_HELP)]
    Reconcile(ReconcileArgs),
}

// Laid out by hand: clap wraps no help text without its `wrap_help` feature.
const RECONCILE_HELP: &str = "Kinds read: DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment
(appstudio.redhat.com/v1alpha1), GitOpsDeploymentManagedEnvironment (managed-gitops.redhat.com/v1alpha1),
SpaceRequest (toolchain.dev.openshift.com/v1alpha1), Namespace, ServiceAccount, Secret (v1), RoleBinding
(rbac.authorization.k8s.io/v1). A namespaced object without a namespace is in `default`;
metadata.deletionTimestamp means being deleted. Time stands still (--now): what only time would change
stays as it is, and kubeconfigs the namespace provisioner writes hold a placeholder token.

Exit codes:
  0  a round changed nothing and no object has an error
  1  an object still has an error (each is listed on standard error, and under `errors` with -o json),
     or the rounds ran out before the objects settled (the output is then as the last round left it),
     or the input could not be read
  2  usage error";

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The objects: a YAML stream (`---`-separated documents, or a v1 List) or JSON; `-` reads
    /// standard input.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,
    /// The time the controllers see, RFC 3339 (`2024-05-01T12:00:00Z`) [default: now].
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub now: Option<Timestamp>,
    /// Give up after this many rounds (each reconciles every object once).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: u32,
    /// yaml: the resulting objects as a `---` stream; json: {"objects", "errors", "rounds",
    /// "converged"}.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DtFormat::Yaml)]
    pub output: DtFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DtFormat {
    Yaml,
    Json,
}

fn parse_time(text: &str) -> Result<Timestamp, String> {
    text.parse()
        .map_err(|e| format!("not an RFC 3339 time (like 2024-05-01T12:00:00Z): {e}"))
}

pub fn dt(group: DtGroup) -> CliResult {
    match group.command {
        DtCommand::Reconcile(args) => reconcile(args),
    }
}

fn reconcile(args: ReconcileArgs) -> CliResult {
    let (origin, text) = super::input::read_input(&args.file)?;
    let loaded = load(&text).with_context(|| origin.clone())?;
    for warning in &loaded.warnings {
        tracing::warn!("{origin}: {warning}");
    }
    let ctx = Context::at(args.now.unwrap_or_else(Timestamp::now));
    let report = offline::run(loaded.world, &ctx, args.max_rounds as usize);
    print(&report, args.output)?;
    Ok(verdict(&report))
}

fn print(report: &Report, format: DtFormat) -> anyhow::Result<()> {
    let objects: Vec<serde_json::Value> = report.world.objects().map(|o| o.to_value()).collect();
    let text = match format {
        DtFormat::Yaml => serde_saphyr::to_string_multiple(&objects)
            .context("cannot write the objects as YAML")?,
        DtFormat::Json => serde_json::to_string_pretty(&json!({
            "objects": objects,
            "errors": report.errors,
            "rounds": report.rounds,
            "converged": report.converged,
        }))?,
    };
    outln!("{}", text.trim_end());
    Ok(())
}

/// Success only when the objects settled without errors; what is wrong goes to standard error.
fn verdict(report: &Report) -> ExitCode {
    for e in &report.errors {
        let at = match e.namespace.is_empty() {
            true => e.name.clone(),
            false => format!("{}/{}", e.namespace, e.name),
        };
        eprintln!("error: {} {at}: {}", e.kind, e.message);
    }
    if !report.converged {
        eprintln!(
            "error: the objects did not settle in {} rounds (--max-rounds); the output is as the last round left them",
            report.rounds
        );
    }
    match report.converged && report.errors.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}
