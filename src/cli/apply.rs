//! `cvo apply`: one apply pass of a payload against a cluster (no loop, no status).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::connect::connect;
use super::graph::GraphMode;
use super::{CliResult, ImageArgs, InclusionArgs, PayloadArgs, Settings, load_payload};
use crate::graph::{Mode, TaskGraph, workers_for};
use crate::operator::{ApplyReport, apply_payload};

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// How long to wait for the API server to answer before giving up.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub connect_timeout: u64,
    /// update: run levels in order (16 workers); install: everything in parallel.
    #[arg(long, value_enum, default_value_t = GraphMode::Install)]
    pub mode: GraphMode,
    /// Nodes applied at once (default: the CVO's count for the mode).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    /// text: a summary line, then each task waited on or failed; json: the whole report.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ApplyFormat::Text)]
    pub output: ApplyFormat,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApplyFormat {
    Text,
    Json,
}

pub fn apply(args: ApplyArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let options = super::payload_commands::load_options(&args.inclusion, None, false);
    let payload = load_payload(settings, &args.payload, &options)?;
    let config = args.inclusion.config(&payload)?;
    let manifests = payload.included(&config.load_time());
    let mode = match args.mode {
        GraphMode::Update => Mode::Update,
        GraphMode::Install => Mode::Install,
    };
    let workers = args
        .workers
        .unwrap_or_else(|| workers_for(mode, &TaskGraph::build(&manifests, mode)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(async {
        let wait = Duration::from_secs(args.connect_timeout);
        let client = connect(args.kubeconfig.as_deref(), Some(wait)).await?;
        anyhow::Ok(apply_payload(&client, &manifests, &config, mode, workers).await)
    })?;
    match args.output {
        ApplyFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(anyhow::Error::from)?
        ),
        ApplyFormat::Text => print_text(&report),
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_text(report: &ApplyReport) {
    outln!(
        "applied {} of {} tasks; {} skipped (capabilities, overrides), {} waiting on cluster operators, {} failed, {} not attempted",
        report.done,
        report.total,
        report.skipped,
        report.waiting.len(),
        report.errors.len(),
        report.incomplete
    );
    for task in &report.waiting {
        outln!("waiting: {task}");
    }
    for task in &report.stood_down {
        outln!("stood down: {task}");
    }
    for e in &report.errors {
        outln!("error: {}: {} ({})", e.reason, e.message, e.error);
    }
}
