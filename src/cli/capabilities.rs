//! `cvo capabilities`: the effective capabilities of a cluster configuration.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

use super::CliResult;
use super::inclusion::{capability_list, check_capabilities};
use super::payload_commands::TableOrJson;
use crate::capability::{
    CapabilitiesSpec, Capability, CapabilitySet, Registry, implicitly_enabled_condition,
    set_capabilities, sets_json,
};

#[derive(Debug, Args)]
pub struct CapabilitiesArgs {
    #[command(subcommand)]
    pub command: Option<CapabilitiesCommand>,
    /// Baseline capability set (default vCurrent).
    #[arg(long, value_name = "SET")]
    pub baseline: Option<String>,
    /// Capabilities enabled on top of the baseline.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub additional: Option<Vec<String>>,
    /// Capabilities enabled before (status.capabilities.enabledCapabilities): they stay enabled.
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub prior: Option<Vec<String>>,
    /// Capabilities that cannot be disabled (the CVO's --always-enable-capabilities).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub always_enable: Option<Vec<String>>,
    /// Enabled feature gates (some capabilities exist only behind a gate).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub feature_gates: Option<Vec<String>>,
    /// Extra known capability names, one per line or a JSON array: for capabilities not released yet.
    #[arg(long, value_name = "FILE", global = true)]
    pub known_capabilities_file: Option<PathBuf>,
    /// Accept capability names that are neither known nor in --known-capabilities-file in
    /// --additional, --prior and --always-enable; without it they are an error.
    #[arg(long)]
    pub allow_unknown_capabilities: bool,
    /// Output format: table (default) or json.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = TableOrJson::Table, global = true)]
    pub output: TableOrJson,
}

#[derive(Debug, Subcommand)]
pub enum CapabilitiesCommand {
    /// The capability sets and their members.
    Sets,
}

pub fn capabilities(args: CapabilitiesArgs) -> CliResult {
    let registry = registry(&args)?;
    if let Some(CapabilitiesCommand::Sets) = args.command {
        return print_sets(&registry, args.output);
    }
    if let Some(baseline) = &args.baseline {
        baseline
            .parse::<CapabilitySet>()
            .map_err(|e| anyhow::anyhow!("--baseline: {e}"))?;
    }
    for (flag, values) in [
        ("--additional", &args.additional),
        ("--prior", &args.prior),
        ("--always-enable", &args.always_enable),
    ] {
        check_capabilities(
            flag,
            &capability_list(values),
            &registry,
            args.allow_unknown_capabilities,
        )?;
    }
    let spec = CapabilitiesSpec {
        baseline_capability_set: args.baseline.clone(),
        additional_enabled_capabilities: capability_list(&args.additional),
    };
    let mut ensure = capability_list(&args.prior);
    ensure.extend(capability_list(&args.always_enable));
    let gates: BTreeSet<String> = capability_list(&args.feature_gates)
        .into_iter()
        .map(|c| c.as_str().to_string())
        .collect();
    let caps = set_capabilities(&registry, Some(&spec), &ensure, &gates);
    let names = |set: &BTreeSet<Capability>| {
        set.iter()
            .map(|c| c.as_str().to_string())
            .collect::<Vec<_>>()
    };
    match args.output {
        TableOrJson::Json => {
            let out = json!({
                "knownCapabilities": names(&caps.known),
                "enabledCapabilities": names(&caps.enabled),
                "implicitlyEnabledCapabilities": names(&caps.implicitly_enabled),
            });
            outln!(
                "{}",
                serde_json::to_string_pretty(&out).map_err(anyhow::Error::from)?
            );
        }
        TableOrJson::Table => {
            outln!("{:<28} {:<8} IMPLICIT", "CAPABILITY", "ENABLED");
            for cap in &caps.known {
                let enabled = if caps.enabled.contains(cap) {
                    "yes"
                } else {
                    "no"
                };
                let implicit = if caps.implicitly_enabled.contains(cap) {
                    "yes"
                } else {
                    ""
                };
                outln!("{:<28} {enabled:<8} {implicit}", cap.as_str());
            }
            for cap in caps.enabled.difference(&caps.known) {
                outln!("{:<28} {:<8} (not a known capability)", cap.as_str(), "yes");
            }
            let condition = implicitly_enabled_condition(&caps.implicitly_enabled);
            outln!(
                "\nImplicitlyEnabledCapabilities={} {}: {}",
                condition.status,
                condition.reason,
                condition.message
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn registry(args: &CapabilitiesArgs) -> anyhow::Result<Registry> {
    let Some(path) = &args.known_capabilities_file else {
        return Ok(Registry::standard());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let names: Vec<String> = if text.trim_start().starts_with('[') {
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: expected a JSON array of capability names",
                path.display()
            )
        })?
    } else {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    Ok(Registry::standard().with_additional_known(names.into_iter().map(Capability::from)))
}

fn print_sets(registry: &Registry, output: TableOrJson) -> CliResult {
    match output {
        TableOrJson::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&sets_json(registry)).map_err(anyhow::Error::from)?
        ),
        TableOrJson::Table => {
            for set in CapabilitySet::all() {
                let members: Vec<&str> = registry
                    .set_members(*set)
                    .iter()
                    .map(Capability::as_str)
                    .collect();
                outln!("{:<9} {}", set.as_str(), members.join(", "));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
