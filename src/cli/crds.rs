//! `cvo crds`: the ClusterVersion and ClusterOperator CRDs, ready for `kubectl apply -f -`.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::CliResult;
use crate::cluster::crds;

#[derive(Debug, Args)]
pub struct CrdsArgs {
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
    let text = match args.output {
        CrdsFormat::Yaml => yaml()?,
        CrdsFormat::Json => json()?,
    };
    outln!("{}", text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// Both CRDs as one YAML stream, the form the payload manifests are kept in.
fn yaml() -> anyhow::Result<String> {
    serde_saphyr::to_string_multiple(&crds()).context("cannot write the CRDs as YAML")
}

fn json() -> anyhow::Result<String> {
    // A List rather than two concatenated objects: `kubectl apply -f` reads it, `jq` too.
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": crds()});
    serde_json::to_string_pretty(&list).context("cannot write the CRDs as JSON")
}
