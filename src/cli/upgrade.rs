//! `cvo upgrade`: `oc adm upgrade` for a cluster `cvo start` runs. Without a target it prints
//! the update status; with `--to`, `--to-image`, `--to-latest`, `--to-multi-arch` or `--clear`
//! it merge-patches `spec.desiredUpdate` as oc does. The decisions and texts are
//! [`crate::updates::admin`]'s; this reads and writes the ClusterVersion.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use clap::Args;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::CliResult;
use super::connect::connect;
use crate::cluster::ClusterVersion;
use crate::updates::admin::{Decision, Report, UpgradeRequest, check_request, decide, summary};

#[derive(Debug, Args)]
pub struct UpgradeArgs {
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
    /// Also list the updates that are not recommended for this cluster, with their risks.
    #[arg(long)]
    pub include_not_recommended: bool,
    /// Allow an update that is supported but not recommended for this cluster.
    #[arg(long)]
    pub allow_not_recommended: bool,
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
        }
    }

    fn wants_change(&self) -> bool {
        self.to.is_some()
            || self.to_image.is_some()
            || self.to_latest
            || self.to_multi_arch
            || self.clear
    }
}

pub fn upgrade(args: UpgradeArgs) -> CliResult {
    let request = args.request();
    let warnings = check_request(&request).map_err(|e| anyhow!(e))?;
    eprint!("{warnings}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let wait = Duration::from_secs(args.connect_timeout);
        let client = connect(args.kubeconfig.as_deref(), Some(wait)).await?;
        let api: Api<ClusterVersion> = Api::all(client);
        let cv = match api.get_opt("version").await {
            Ok(Some(cv)) => cv,
            Ok(None) => {
                return Err(anyhow!(
                    "No cluster version information available - you must be connected to a cluster that cvo start runs (ClusterVersion \"version\" not found)"
                )
                .into());
            }
            Err(e) => return Err(anyhow!("cannot read ClusterVersion version: {e}").into()),
        };
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
