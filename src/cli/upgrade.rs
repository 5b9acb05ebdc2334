//! `cvo upgrade`: `oc adm upgrade` for a cluster `cvo start` runs. Without a target it prints
//! the update status; with `--to`, `--to-image`, `--to-latest`, `--to-multi-arch` or `--clear`
//! it merge-patches `spec.desiredUpdate` as oc does. `cvo upgrade status` shows the progress of
//! an update in progress (`oc adm upgrade status`, read-only); `cvo upgrade channel NAME` sets
//! `spec.channel` (`oc adm upgrade channel`); `cvo upgrade accept` manages
//! `spec.desiredUpdate.acceptRisks` (`oc adm upgrade accept`) and `cvo upgrade recommend` shows
//! the recommendations (`oc adm upgrade recommend`). The decisions and texts are
//! [`crate::updates::admin`]'s, [`crate::updates::progress`]'s, [`crate::updates::channel`]'s,
//! [`crate::updates::accept`]'s and [`crate::updates::recommendations`]'s; this reads and
//! writes the objects.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use super::CliResult;
use super::connect::connect;
use crate::cluster::{ClusterOperator, ClusterVersion};
use crate::updates::admin::{
    Decision, Report, UpgradeRequest, check_request, decide, summary, summary_json,
};
use crate::updates::channel::{ChannelDecision, decide_channel};
use crate::updates::progress::{Details, assess, render};
use crate::updates::{accept, recommendations};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct UpgradeArgs {
    #[command(subcommand)]
    pub command: Option<UpgradeCommand>,
    /// The version to update to; it must be one of the available updates.
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// A release image to update to (by digest, unless --force).
    #[arg(long, value_name = "IMAGE")]
    pub to_image: Option<String>,
    /// The latest (highest semantic version) available update.
    #[arg(long)]
    pub to_latest: bool,
    /// Move the current version to the multi-architecture release.
    #[arg(long)]
    pub to_multi_arch: bool,
    /// Cancel a requested update that has not started.
    #[arg(long)]
    pub clear: bool,
    /// Waive the cluster-side guards (signature verification, preconditions): spec.desiredUpdate.force.
    #[arg(long)]
    pub force: bool,
    /// Update to --to-image even when it is not an available update.
    #[arg(long)]
    pub allow_explicit_upgrade: bool,
    /// Update although the cluster is updating, failing or invalid.
    #[arg(long)]
    pub allow_upgrade_with_warnings: bool,
    /// The status as `text` (oc's) or `json` (see docs/install-and-operate.md); only without a target.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = StatusFormat::Text)]
    pub output: StatusFormat,
    /// Also list the updates that are not recommended for this cluster, with their risks.
    #[arg(long)]
    pub include_not_recommended: bool,
    /// Allow an update that is supported but not recommended for this cluster.
    #[arg(long)]
    pub allow_not_recommended: bool,
    /// Accept conditional update risks by name (repeatable, or comma-separated): they are added
    /// to spec.desiredUpdate.acceptRisks, and an update whose risks are all accepted is
    /// requested without --allow-not-recommended. Alone, it only records the risks.
    #[arg(long, value_name = "RISK", value_delimiter = ',')]
    pub accept: Vec<String>,
    /// Check the release of --to or --to-image against the cluster without updating
    /// (spec.desiredUpdate.mode: Preflight): the operator retrieves and verifies it, then reports
    /// what the update would do and its risks. Waits for the result (--timeout) and prints it;
    /// exits 1 when a risk applies that is not accepted, or the preflight failed.
    #[arg(long)]
    pub preflight: bool,
    /// With --preflight: how long to wait for the result (0: do not wait).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 300,
        requires = "preflight"
    )]
    pub timeout: u64,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `cvo upgrade`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum UpgradeCommand {
    /// The progress of the control plane's update (`oc adm upgrade status`): operators updated
    /// out of the total, elapsed and estimated time, the operators still updating, the
    /// update's health. Read-only.
    Status(StatusArgs),
    /// Set or clear (an empty NAME) the update channel, `spec.channel` (`oc adm upgrade
    /// channel`): a channel the current release does not list needs --allow-explicit-channel.
    Channel(ChannelArgs),
    /// Accept conditional update risks, `spec.desiredUpdate.acceptRisks` (`oc adm upgrade
    /// accept`): `RiskA,RiskB` adds them, `RiskC-` stops accepting one, --replace replaces the
    /// list, --clear empties it.
    Accept(AcceptArgs),
    /// The update recommendations (`oc adm upgrade recommend`): the cluster's concerns (Failing,
    /// an update in progress, firing alerts), then the updates by minor version; --version
    /// tells one release's issues and fails unless each is named in --accept. Read-only.
    Recommend(RecommendArgs),
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// The risks, comma-separated: `RiskA,RiskB` accepts them, `RiskC-` stops accepting RiskC.
    #[arg(value_name = "RISKS", conflicts_with = "clear")]
    pub risks: Option<String>,
    /// Replace the accepted risks with these (no `RISK-`).
    #[arg(long)]
    pub replace: bool,
    /// Accept no risk.
    #[arg(long)]
    pub clear: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// Also list the older releases of each minor version, one line each.
    #[arg(long)]
    pub show_outdated_releases: bool,
    /// One target release's issues (a semantic version).
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
    /// With --version: print only the issues not accepted.
    #[arg(long)]
    pub quiet: bool,
    /// Issue names found acceptable (comma-separated or repeated): with --version, an issue not
    /// named fails the command.
    #[arg(long, value_name = "ISSUE", value_delimiter = ',')]
    pub accept: Vec<String>,
    /// The Prometheus (or Thanos querier) HTTP API whose firing alerts the precheck reads
    /// (`<URL>/api/v1/alerts`, e.g. the route of openshift-monitoring/thanos-querier); without
    /// it the precheck fails (issue FailedToCompletePrecheck).
    #[arg(long, value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// PEM CA certificates: the only roots trusted for --prometheus-url.
    #[arg(long, value_name = "PATH", requires = "prometheus_url")]
    pub prometheus_ca: Option<PathBuf>,
    /// A file holding the bearer token sent to --prometheus-url.
    #[arg(long, value_name = "PATH", requires = "prometheus_url")]
    pub prometheus_token_file: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// `text` (oc's sections) or `json` (the assessment; see docs/install-and-operate.md for its fields).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = StatusFormat::Text)]
    pub output: StatusFormat,
    /// The sections shown in full (oc's `--details`): `operators` (the updating operators'
    /// table), `health` (each insight with its description, reference and resources), `all`;
    /// `nodes` shows nothing more (no MachineConfigPools).
    #[arg(long, value_enum, default_value_t = StatusDetails::None)]
    pub details: StatusDetails,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusDetails {
    None,
    All,
    Nodes,
    Health,
    Operators,
}

impl From<StatusDetails> for Details {
    fn from(d: StatusDetails) -> Details {
        match d {
            StatusDetails::None => Details::None,
            StatusDetails::All => Details::All,
            StatusDetails::Nodes => Details::Nodes,
            StatusDetails::Health => Details::Health,
            StatusDetails::Operators => Details::Operators,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ChannelArgs {
    /// The channel, e.g. stable-4.18; empty ("") clears it.
    #[arg(value_name = "NAME")]
    pub channel: String,
    /// Set the channel even when the current release does not list it among its channels.
    #[arg(long)]
    pub allow_explicit_channel: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Where the cluster is.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// How long to wait for the API server to answer before giving up.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub connect_timeout: u64,
}

impl UpgradeArgs {
    fn request(&self) -> UpgradeRequest {
        UpgradeRequest {
            to: self.to.clone(),
            to_image: self.to_image.clone(),
            to_latest: self.to_latest,
            to_multi_arch: self.to_multi_arch,
            clear: self.clear,
            force: self.force,
            allow_explicit_upgrade: self.allow_explicit_upgrade,
            allow_upgrade_with_warnings: self.allow_upgrade_with_warnings,
            allow_not_recommended: self.allow_not_recommended,
            accept: self.accept.clone(),
        }
    }

    fn wants_change(&self) -> bool {
        self.to.is_some()
            || self.to_image.is_some()
            || self.to_latest
            || self.to_multi_arch
            || self.clear
            || !self.accept.is_empty()
    }
}

pub fn upgrade(args: UpgradeArgs) -> CliResult {
    match args.command {
        Some(UpgradeCommand::Status(status)) => return upgrade_status(status),
        Some(UpgradeCommand::Channel(channel)) => return upgrade_channel(channel),
        Some(UpgradeCommand::Accept(accept)) => return upgrade_accept(accept),
        Some(UpgradeCommand::Recommend(recommend)) => return upgrade_recommend(recommend),
        None => {}
    }
    let request = args.request();
    if args.preflight {
        return upgrade_preflight(&args, &request);
    }
    if args.output == StatusFormat::Json && args.wants_change() {
        return Err(anyhow!("-o json shows the update status; it cannot be combined with --to, --to-image, --to-latest, --to-multi-arch, --clear or --accept").into());
    }
    let warnings = check_request(&request).map_err(|e| anyhow!(e))?;
    eprint!("{warnings}");
    runtime()?.block_on(async {
        let (api, cv) = cluster_version(&args.cluster).await?;
        if args.output == StatusFormat::Json {
            let doc = summary_json(&cv);
            let text =
                serde_json::to_string_pretty(&doc).context("cannot write the status as JSON")?;
            super::emit(&text);
            return Ok(ExitCode::SUCCESS);
        }
        if !args.wants_change() {
            print(&summary(&cv, args.include_not_recommended));
            return Ok(ExitCode::SUCCESS);
        }
        match decide(&cv, &request).map_err(|e| anyhow!(e))? {
            Decision::Nothing { report } => print(&report),
            Decision::Patch { update, report } => {
                eprint!("{}", report.err);
                let patch = json!({"spec": {"desiredUpdate": update}});
                api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| anyhow!("Unable to upgrade: {e}"))?;
                out(&report.out);
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `cvo upgrade --preflight`: merge-patches `spec.desiredUpdate` with `mode: Preflight`, then
/// waits until the operator reports the result for that spec.
fn upgrade_preflight(args: &UpgradeArgs, request: &UpgradeRequest) -> CliResult {
    use crate::updates::preflight_request::{decide_preflight, preflight_result, render};
    check_request(request).map_err(|e| anyhow!(e))?;
    runtime()?.block_on(async {
        let (api, cv) = cluster_version(&args.cluster).await?;
        let patch = decide_preflight(&cv, request).map_err(|e| anyhow!(e))?;
        let body = json!({"spec": {"desiredUpdate": patch.update}});
        const NO_MODE: &str = "this cluster's ClusterVersion CRD does not have spec.desiredUpdate.mode (openshift/api #2684, feature gate ClusterUpdatePreflight), so the request would be an update: nothing was written; update the CRD first";
        // Strict: on a CRD without the field the API server would drop `mode` silently and keep
        // the rest, which is a request to update.
        let strict = PatchParams::default().validation(kube::api::ValidationDirective::Strict);
        let written = match api.patch("version", &strict, &Patch::Merge(&body)).await {
            Ok(written) => written,
            Err(kube::Error::Api(s)) if s.message.contains("unknown field") => {
                return Err(anyhow!("{NO_MODE} ({})", s.message).into());
            }
            Err(e) => return Err(anyhow!("unable to request the preflight: {e}").into()),
        };
        if written.spec.desired_update.as_ref().is_none_or(|u| !u.is_preflight()) {
            return Err(anyhow!("{NO_MODE}").into());
        }
        if args.output == StatusFormat::Text {
            eprint!("{}", patch.out);
        }
        if args.timeout == 0 {
            return Ok(ExitCode::SUCCESS);
        }
        let generation = written.metadata.generation;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
        let result = loop {
            let cv = api
                .get("version")
                .await
                .map_err(|e| anyhow!("cannot read ClusterVersion version: {e}"))?;
            if let Some(result) = preflight_result(&cv, &patch.image, Some(&patch.version), generation)
                && !result.running()
            {
                break result;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(anyhow!(
                    "the preflight of {} did not finish within {}s; it goes on: `cvo upgrade --preflight` again (or the Preflight condition of `oc get clusterversion version -o yaml`) shows the result",
                    patch.image,
                    args.timeout
                )
                .into());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        match args.output {
            StatusFormat::Json => {
                let text = serde_json::to_string_pretty(&result)
                    .context("cannot write the preflight as JSON")?;
                super::emit(&text);
            }
            StatusFormat::Text => out(&render(&result)),
        }
        let passed = result.status == "True" && result.unaccepted().is_empty();
        Ok(if passed {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    })
}

/// `cvo upgrade status`: reads the ClusterVersion and the ClusterOperators, prints.
fn upgrade_status(args: StatusArgs) -> CliResult {
    runtime()?.block_on(async {
        let (api, cv) = cluster_version(&args.cluster).await?;
        let operators: Api<ClusterOperator> = Api::all(api.into_client());
        let operators = (operators.list(&ListParams::default()).await)
            .map_err(|e| anyhow!("cannot list ClusterOperators: {e}"))?
            .items;
        // To the second, as the objects' times are.
        let now = jiff::Timestamp::now();
        let now = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
        let progress = assess(&cv, &operators, now).map_err(|e| anyhow!(e))?;
        match args.output {
            StatusFormat::Json => {
                let text = serde_json::to_string_pretty(&progress)
                    .context("cannot write the status as JSON")?;
                super::emit(&text);
            }
            StatusFormat::Text => {
                let (text, warnings) = render(
                    &progress,
                    now,
                    std::io::stdout().is_terminal(),
                    args.details.into(),
                );
                eprint!("{warnings}");
                out(&text);
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `cvo upgrade channel NAME`: merge-patches `spec.channel` (`null` clears it).
fn upgrade_channel(args: ChannelArgs) -> CliResult {
    runtime()?.block_on(async {
        let (api, cv) = cluster_version(&args.cluster).await?;
        match decide_channel(&cv, &args.channel, args.allow_explicit_channel)
            .map_err(|e| anyhow!(e))?
        {
            ChannelDecision::Nothing { out: text } => out(&text),
            ChannelDecision::Set { channel, err } => {
                eprint!("{err}");
                let patch = json!({"spec": {"channel": channel}});
                api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| anyhow!("unable to set channel: {e}"))?;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `cvo upgrade accept`: merge-patches `spec.desiredUpdate.acceptRisks` (`null` empties it).
fn upgrade_accept(args: AcceptArgs) -> CliResult {
    let request =
        accept::parse(args.risks.as_deref(), args.replace, args.clear).map_err(|e| anyhow!(e))?;
    runtime()?.block_on(async {
        let (api, cv) = cluster_version(&args.cluster).await?;
        match accept::decide(&cv, &request) {
            accept::AcceptDecision::Unchanged { out: text, err } => {
                eprint!("{err}");
                out(&text);
            }
            accept::AcceptDecision::Patch {
                accept_risks,
                out: text,
                err,
            } => {
                eprint!("{err}");
                let patch = json!({"spec": {"desiredUpdate": {"acceptRisks": accept_risks}}});
                api.patch("version", &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| anyhow!("unable to accept risks: {e}"))?;
                out(&text);
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `cvo upgrade recommend`: reads the ClusterVersion and, for the precheck, the firing alerts.
fn upgrade_recommend(args: RecommendArgs) -> CliResult {
    let version = recommendations::check(
        args.version.as_deref(),
        args.show_outdated_releases,
        args.quiet,
    )
    .map_err(|e| anyhow!(e))?;
    let prometheus = super::start::prometheus_options_from(
        args.prometheus_url.as_ref(),
        args.prometheus_ca.as_ref(),
        args.prometheus_token_file.as_ref(),
        args.cluster.connect_timeout,
    )?;
    let request = recommendations::RecommendRequest {
        version,
        show_outdated: args.show_outdated_releases,
        quiet: args.quiet,
        accept: args.accept.iter().cloned().collect(),
    };
    runtime()?.block_on(async {
        let (_, cv) = cluster_version(&args.cluster).await?;
        let precheck = match &prometheus.url {
            None => Err("no Prometheus to read the firing alerts from: pass --prometheus-url (for example the route of openshift-monitoring/thanos-querier) with --prometheus-token-file".to_string()),
            Some(_) => crate::updates::prometheus::alerts(&prometheus)
                .await
                .map(|alerts| crate::updates::alerts::recommend_conditions(&alerts)),
        };
        let shown = recommendations::recommend(&cv, &request, precheck);
        eprint!("{}", shown.err);
        out(&shown.out);
        match shown.error {
            Some(error) => Err(anyhow!(error).into()),
            None => Ok(ExitCode::SUCCESS),
        }
    })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The ClusterVersion `version`, and the API to write it.
async fn cluster_version(
    args: &ClusterArgs,
) -> anyhow::Result<(Api<ClusterVersion>, ClusterVersion)> {
    let wait = Duration::from_secs(args.connect_timeout);
    let client = connect(args.kubeconfig.as_deref(), Some(wait)).await?;
    let api: Api<ClusterVersion> = Api::all(client);
    match api.get_opt("version").await {
        Ok(Some(cv)) => Ok((api, cv)),
        Ok(None) => Err(anyhow!(
            "No cluster version information available - you must be connected to a cluster that cvo start runs (ClusterVersion \"version\" not found)"
        )),
        Err(e) => Err(anyhow!("cannot read ClusterVersion version: {e}")),
    }
}

fn print(report: &Report) {
    eprint!("{}", report.err);
    out(&report.out);
}

/// Standard output, quiet on a closed pipe ([`super::emit`]).
fn out(text: &str) {
    if !text.is_empty() {
        super::emit(text.strip_suffix('\n').unwrap_or(text));
    }
}
