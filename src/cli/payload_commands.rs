//! `cvo render`, `cvo explain`, `cvo hash`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{CliResult, InclusionArgs, PayloadArgs, Settings, load_payload};
use crate::explain::{Explanation, explain as explain_payload};
use crate::include::DEFAULT_CLUSTER_PROFILE;
use crate::payload::{Layout, LoadOptions, Payload};
use crate::render::{Format, Rendering, render as render_payload};

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// Output root; documents go to DIR/manifests/.
    #[arg(long, value_name = "DIR", default_value = "_output")]
    pub output_dir: PathBuf,
    /// Pullspec substituted for {{.ReleaseImage}} (default: the ocp-release image of the payload's version).
    #[arg(long, value_name = "IMG")]
    pub release_image: Option<String>,
    /// original: documents as written; json: the CVO's raw JSON, as upstream render writes it.
    #[arg(long, value_enum, default_value_t = RenderFormat::Original)]
    pub format: RenderFormat,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    Original,
    Json,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// Pullspec substituted for {{.ReleaseImage}} in manifests/ templates.
    #[arg(long, value_name = "IMG")]
    pub release_image: Option<String>,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    #[arg(short = 'o', long = "output", value_enum, default_value_t = TableOrJson::Table)]
    pub output: TableOrJson,
    /// Only these documents: metadata.name, file name, or kind/name.
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableOrJson {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct HashArgs {
    #[command(flatten)]
    pub payload: PayloadArgs,
    /// Pullspec substituted for {{.ReleaseImage}}: part of the hashed bytes, as in the CVO.
    #[arg(long, value_name = "IMG")]
    pub release_image: Option<String>,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
}

/// Templates in manifests/ see the profile the cluster runs with.
/// Load options shared by the payload commands: templates see the cluster's profile.
pub(super) fn load_options(
    inclusion: &InclusionArgs,
    release_image: Option<String>,
    strict_templates: bool,
) -> LoadOptions {
    LoadOptions {
        release_image,
        cluster_profile: inclusion
            .cluster_profile
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_CLUSTER_PROFILE.to_string()),
        strict_templates,
    }
}

pub fn render(args: RenderArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let payload = load_payload(
        settings,
        &args.payload,
        &load_options(&args.inclusion, args.release_image.clone(), true),
    )?;
    let config = args.inclusion.config(&payload)?;
    let format = match args.format {
        RenderFormat::Original => Format::Original,
        RenderFormat::Json => Format::Json,
    };
    let rendering = render_payload(&payload, &config, format).map_err(anyhow::Error::from)?;
    let target = args.output_dir.join("manifests");
    write_rendering(&rendering, &target)?;
    print_render_summary(&payload, &rendering, &target);
    Ok(ExitCode::SUCCESS)
}

/// Writes into a fresh sibling directory and swaps it in, so a failure never leaves a
/// half-written manifests directory behind. (Writing on several threads was measured slower:
/// the file system serialises creations in one directory.)
fn write_rendering(rendering: &Rendering, target: &Path) -> anyhow::Result<()> {
    let parent = target.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent)
        .with_context(|| format!("{}: cannot create output directory", parent.display()))?;
    let staging = parent.join(format!(".manifests.{}.tmp", std::process::id()));
    let _ = remove_dir(&staging);
    fs::create_dir_all(&staging)
        .with_context(|| format!("{}: cannot create", staging.display()))?;
    let written = rendering.files.iter().try_for_each(|file| {
        let path = staging.join(&file.name);
        fs::write(&path, &file.contents)
            .with_context(|| format!("{}: cannot write", path.display()))
    });
    if let Err(e) = written {
        let _ = remove_dir(&staging);
        return Err(e);
    }
    let previous = parent.join(format!(".manifests.{}.old", std::process::id()));
    let had_previous = target.exists();
    if had_previous {
        fs::rename(target, &previous).with_context(|| {
            format!(
                "{}: cannot replace the previous rendering",
                target.display()
            )
        })?;
    }
    fs::rename(&staging, target)
        .with_context(|| format!("{}: cannot move the rendering into place", target.display()))?;
    if had_previous {
        remove_dir(&previous).with_context(|| {
            format!(
                "{}: cannot remove the previous rendering",
                previous.display()
            )
        })?;
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> std::io::Result<()> {
    fs::remove_dir_all(dir)
}

fn print_render_summary(payload: &Payload, rendering: &Rendering, target: &Path) {
    let summary = &rendering.summary;
    outln!(
        "Rendered {} ({}) into {}",
        payload.origin,
        describe_release(payload),
        target.display()
    );
    outln!("  release image: {}", payload.release_image);
    outln!("  files written: {}", rendering.files.len());
    outln!(
        "  documents kept: {} of {}",
        summary.included,
        summary.documents
    );
    for (reason, count) in &summary.excluded_by {
        outln!("  excluded ({reason}): {count}");
    }
}

fn describe_release(payload: &Payload) -> String {
    let layout = match payload.layout {
        Layout::PayloadRoot => "payload root",
        Layout::PlainDirectory => "plain directory of manifests, no release metadata",
    };
    match payload.version() {
        Some(v) => format!("version {v}, {layout}"),
        None => format!("version unknown, {layout}"),
    }
}

pub fn explain(args: ExplainArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let payload = load_payload(
        settings,
        &args.payload,
        &load_options(&args.inclusion, args.release_image.clone(), false),
    )?;
    let config = args.inclusion.config(&payload)?;
    let rows: Vec<Explanation> = explain_payload(&payload, &config)
        .into_iter()
        .filter(|row| args.names.is_empty() || args.names.iter().any(|n| row.matches(n)))
        .collect();
    if !args.names.is_empty() && rows.is_empty() {
        return Err(anyhow::anyhow!(
            "no document of {} matches {}",
            payload.origin,
            args.names.join(", ")
        )
        .into());
    }
    match args.output {
        TableOrJson::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(anyhow::Error::from)?
        ),
        TableOrJson::Table => print_explain_table(&payload, &rows),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_explain_table(payload: &Payload, rows: &[Explanation]) {
    outln!("# {} ({})", payload.origin, describe_release(payload));
    outln!(
        "{:<9} {:<70} {:<28} {:<60} REASON",
        "INCLUDED",
        "FILE#DOC",
        "KIND",
        "NAMESPACE/NAME"
    );
    for row in rows {
        let object = if row.namespace.is_empty() {
            row.name.clone()
        } else {
            format!("{}/{}", row.namespace, row.name)
        };
        outln!(
            "{:<9} {:<70} {:<28} {:<60} {}",
            if row.included { "yes" } else { "no" },
            format!("{}/{}#{}", row.dir, row.file, row.index),
            row.kind,
            object,
            row.reason.as_deref().unwrap_or("")
        );
    }
    let included = rows.iter().filter(|r| r.included).count();
    outln!(
        "# {} documents: {} included, {} excluded",
        rows.len(),
        included,
        rows.len() - included
    );
}

pub fn hash(args: HashArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let payload = load_payload(
        settings,
        &args.payload,
        &load_options(&args.inclusion, args.release_image.clone(), false),
    )?;
    let config = args.inclusion.config(&payload)?.load_time();
    outln!("{}", crate::hash::version_hash(payload.included(&config)));
    Ok(ExitCode::SUCCESS)
}
