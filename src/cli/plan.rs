//! `cvo plan`: preview an upgrade between two payloads for one cluster.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;

use super::inclusion::{ClusterConfig, ValidNames, capability_list};
use super::payload_commands::TableOrJson;
use super::{CliResult, ImageArgs, InclusionArgs, PayloadArgs, Settings, load_payload};
use crate::capability::Capability;
use crate::plan::{Cluster, Plan, Resource, plan as plan_upgrade};

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The payload the cluster runs now.
    #[arg(long, value_name = "SRC")]
    pub from: String,
    /// The payload to upgrade to.
    #[arg(long, value_name = "SRC")]
    pub to: String,
    /// The cluster's implicitly enabled capabilities today (status of a live cluster).
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub implicitly_enabled: Option<Vec<String>>,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    /// Print the unified diff of each updated manifest (JSON output always carries them).
    #[arg(long)]
    pub diff: bool,
    /// table: a summary for people; json: the whole plan (see docs/release-engineering.md).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = TableOrJson::Table)]
    pub output: TableOrJson,
    #[command(flatten)]
    pub images: ImageArgs,
}

pub fn plan(args: PlanArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let options = super::payload_commands::load_options(&args.inclusion, None, false);
    let from = load_payload(settings, &PayloadArgs::named(&args.from), &options)?;
    let to = load_payload(settings, &PayloadArgs::named(&args.to), &options)?;
    // A name either release knows is one to plan with: enabling a component the new release
    // brings is what an administrator plans.
    let valid = ValidNames::of_either(&from, &to);
    args.inclusion.check_capabilities(
        "--implicitly-enabled",
        &capability_list(&args.implicitly_enabled),
        valid.registry(),
    )?;
    let ClusterConfig { mut config, spec } = args.inclusion.cluster(&from, &valid)?;
    let implicitly_enabled: BTreeSet<Capability> = capability_list(&args.implicitly_enabled)
        .into_iter()
        .collect();
    // Implicitly enabled capabilities are enabled (upstream SetFromImplicitlyEnabledCapabilities).
    if let Some(caps) = &mut config.capabilities {
        caps.enabled_capabilities
            .extend(implicitly_enabled.iter().cloned());
    }
    // The same cluster as the new release's registry sees it (what it declares).
    let capabilities_after = args.inclusion.cluster(&to, &valid)?.config.capabilities;
    let plan = plan_upgrade(
        &from,
        &to,
        &Cluster {
            config,
            implicitly_enabled,
            capabilities_after,
        },
    );
    match args.output {
        TableOrJson::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&plan).map_err(anyhow::Error::from)?
        ),
        TableOrJson::Table => {
            let additional = spec.map(|s| s.additional_enabled_capabilities);
            outln!(
                "{}",
                text(&plan, args.diff, additional.as_deref()).trim_end()
            )
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn version(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("(unknown version)")
}

fn names(caps: &[Capability]) -> String {
    if caps.is_empty() {
        "none".to_string()
    } else {
        caps.iter()
            .map(Capability::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn describe(r: &Resource) -> String {
    format!("{} ({})", r.object_name(), r.file)
}

/// The human summary; stable enough to snapshot-test. `additional`: the cluster's
/// `spec.capabilities.additionalEnabledCapabilities`, when known, for the command that enables
/// a new capability.
pub fn text(plan: &Plan, with_diffs: bool, additional: Option<&[Capability]>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Upgrade {} -> {}",
        version(&plan.from_version),
        version(&plan.to_version)
    );
    for warning in &plan.warnings {
        let _ = writeln!(out, "Warning: {warning}");
    }
    let _ = writeln!(
        out,
        "\nImplicitly enabled capabilities: {}",
        names(&plan.implicitly_enabled_capabilities)
    );
    for (cap, causes) in &plan.reasons {
        let _ = writeln!(
            out,
            "  {cap}: {} managed resource(s) move into it:",
            causes.len()
        );
        for c in causes {
            let r = Resource {
                group: c.group.clone(),
                kind: c.kind.clone(),
                namespace: c.namespace.clone(),
                name: c.name.clone(),
                file: c.file.clone(),
            };
            let _ = writeln!(out, "    {}", describe(&r));
        }
    }
    let c = &plan.condition;
    let _ = writeln!(out, "{}={} {}: {}", c.type_, c.status, c.reason, c.message);
    let _ = writeln!(
        out,
        "Enabled after the upgrade: {}",
        names(&plan.enabled_capabilities)
    );
    new_capabilities(&mut out, plan, additional);
    section(&mut out, "Create", &plan.create);
    let _ = writeln!(
        out,
        "\nUpdate ({}){}",
        plan.update.len(),
        colon(&plan.update)
    );
    for u in &plan.update {
        let _ = writeln!(out, "  {}", describe(&u.resource));
        if with_diffs {
            for line in u.diff.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    section(&mut out, "Delete", &plan.delete);
    if plan.left_behind.is_empty() {
        let _ = writeln!(out, "\nLeft behind (0)");
    } else {
        let _ = writeln!(
            out,
            "\nLeft behind ({}): managed today, not by the new payload; nothing will delete them:",
            plan.left_behind.len()
        );
    }
    for l in &plan.left_behind {
        let _ = writeln!(out, "  {}: {}", describe(&l.resource), l.reason);
    }
    let _ = writeln!(out, "\nUnchanged: {}", plan.unchanged);
    out
}

/// The capabilities the new release brings, whether the cluster gets them and what each
/// installs, and for one it does not get, the command that enables it.
fn new_capabilities(out: &mut String, plan: &Plan, additional: Option<&[Capability]>) {
    if plan.new_capabilities.is_empty() {
        return;
    }
    let enabled = |c: &Capability| plan.enabled_capabilities.contains(c);
    let states: Vec<String> = (plan.new_capabilities.iter())
        .map(|c| match enabled(c) {
            true => format!("{c} (enabled)"),
            false => format!("{c} (not enabled)"),
        })
        .collect();
    let _ = writeln!(
        out,
        "Capabilities new in {}: {}",
        version(&plan.to_version),
        states.join(", ")
    );
    for c in &plan.new_capabilities {
        if let Some(description) = plan.new_capability_descriptions.get(c) {
            let _ = writeln!(out, "  {c}: {description}");
        }
    }
    let Some(example) = plan.new_capabilities.iter().find(|c| !enabled(c)) else {
        return;
    };
    let _ = writeln!(
        out,
        "  To enable {example}: {}",
        enable_command(example, additional)
    );
}

/// The command that adds `capability` to the cluster's additionalEnabledCapabilities, keeping
/// those listed there (a merge patch replaces the whole list).
fn enable_command(capability: &Capability, additional: Option<&[Capability]>) -> String {
    let Some(additional) = additional else {
        return format!(
            "add it to spec.capabilities.additionalEnabledCapabilities of the ClusterVersion (with those listed there), or plan again with --additional-capabilities {capability}"
        );
    };
    let mut list: Vec<&str> = additional.iter().map(Capability::as_str).collect();
    if !list.contains(&capability.as_str()) {
        list.push(capability.as_str());
    }
    let patch =
        serde_json::json!({"spec": {"capabilities": {"additionalEnabledCapabilities": list}}});
    format!("oc patch clusterversion version --type merge -p '{patch}'")
}

/// A heading ends with a colon only when a list follows it.
fn colon<T>(items: &[T]) -> &'static str {
    if items.is_empty() { "" } else { ":" }
}

fn section(out: &mut String, title: &str, resources: &[Resource]) {
    let _ = writeln!(out, "\n{title} ({}){}", resources.len(), colon(resources));
    for r in resources {
        let _ = writeln!(out, "  {}", describe(r));
    }
}
