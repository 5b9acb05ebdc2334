//! `cvo render`, `cvo explain`, `cvo hash`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{
    CliResult, ImageArgs, InclusionArgs, PayloadArgs, PayloadFlag, Settings, load_payload,
};
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
    /// Replace DIR/manifests even when it holds files cvo render did not write (they are
    /// deleted).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    Original,
    Json,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub payload: PayloadFlag,
    /// Pullspec substituted for {{.ReleaseImage}} in manifests/ templates.
    #[arg(long, value_name = "IMG")]
    pub release_image: Option<String>,
    #[command(flatten)]
    pub inclusion: InclusionArgs,
    /// table: one aligned row per document; json: a list of documents with every field.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = TableOrJson::Table)]
    pub output: TableOrJson,
    /// Only these documents: metadata.name, file name, or kind/name. Without --payload, a first
    /// argument that is a directory or an image reference is the payload.
    #[arg(value_name = "[SRC] NAME")]
    pub names: Vec<String>,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn table_columns_fit_their_widest_cell() {
        let s = |v: [&str; 3]| v.map(String::from);
        let lines = table(
            &s(["A", "LONG HEADER", "LAST"]),
            &[
                s(["wide cell", "x", "free text of any length"]),
                s(["y", "z", ""]),
            ],
        );
        assert_eq!(
            lines,
            [
                "A           LONG HEADER   LAST",
                "wide cell   x             free text of any length",
                "y           z",
            ]
        );
        assert!(table::<2>(&[String::new(), String::new()], &[]) == [""]);
    }
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
    #[command(flatten)]
    pub images: ImageArgs,
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
    warn_unknown_release_image(&payload, args.release_image.as_deref());
    let config = args.inclusion.config(&payload)?;
    let format = match args.format {
        RenderFormat::Original => Format::Original,
        RenderFormat::Json => Format::Json,
    };
    let rendering = render_payload(&payload, &config, format).map_err(anyhow::Error::from)?;
    let target = args.output_dir.join("manifests");
    if !args.force {
        check_replaceable(&target)?;
    }
    write_rendering(&rendering, &target)?;
    print_render_summary(&payload, &rendering, &target);
    Ok(ExitCode::SUCCESS)
}

/// The file `cvo render` writes into the manifests directory to mark it as its own: a comment,
/// then the name of every file it wrote. The CVO and kubectl read only `.yaml`, `.yml` and
/// `.json` files, so it is never applied.
pub const RENDER_MARKER: &str = ".cvo-render";

fn marker_text(rendering: &Rendering) -> String {
    let mut text = String::from(
        "# Written by `cvo render`, which replaces this directory when it renders again.\n",
    );
    for file in &rendering.files {
        text.push_str(&file.name);
        text.push('\n');
    }
    text
}

/// A previous rendering may be replaced; a directory holding anything `cvo render` did not
/// write (no marker, or files the marker does not list) may not, without `--force`.
fn check_replaceable(target: &Path) -> anyhow::Result<()> {
    let entries = match fs::read_dir(target) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(anyhow::anyhow!(
                "{}: cannot read the output directory: {e}",
                target.display()
            ));
        }
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != RENDER_MARKER)
        .collect();
    names.sort();
    let (written, why) = match fs::read_to_string(target.join(RENDER_MARKER)) {
        Ok(marker) => (
            marker
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
            "cvo render did not write",
        ),
        Err(_) => (
            BTreeSet::new(),
            "it was not written by cvo render (it has no .cvo-render marker) and holds",
        ),
    };
    let foreign: Vec<&String> = names.iter().filter(|n| !written.contains(*n)).collect();
    if foreign.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 5;
    let mut list: Vec<&str> = foreign.iter().take(SHOWN).map(|n| n.as_str()).collect();
    let more = format!("and {} more", foreign.len().saturating_sub(SHOWN));
    if foreign.len() > SHOWN {
        list.push(&more);
    }
    anyhow::bail!(
        "{}: {why} {} file(s) that rendering would delete: {}; move them away, choose another --output-dir, or pass --force to replace the directory anyway",
        target.display(),
        foreign.len(),
        list.join(", ")
    )
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
    let marker = marker_text(rendering);
    let written = rendering
        .files
        .iter()
        .map(|file| (file.name.as_str(), file.contents.as_str()))
        .chain(std::iter::once((RENDER_MARKER, marker.as_str())))
        .try_for_each(|(name, contents)| {
            let path = staging.join(name);
            fs::write(&path, contents).with_context(|| format!("{}: cannot write", path.display()))
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

/// Without release metadata the release image is a placeholder; what is rendered or hashed
/// with it is not what a cluster would get.
fn warn_unknown_release_image(payload: &Payload, given: Option<&str>) {
    if given.is_none() && payload.release.is_none() {
        tracing::warn!(
            payload = %payload.origin,
            "no release-metadata, so the release image ({{{{.ReleaseImage}}}}) is the placeholder {}; pass --release-image IMG for the real one",
            payload.release_image
        );
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
    let (source, names) = args.payload.with_first_argument(&args.names);
    let payload = load_payload(
        settings,
        &source,
        &load_options(&args.inclusion, args.release_image.clone(), false),
    )?;
    let config = args.inclusion.config(&payload)?;
    let rows: Vec<Explanation> = explain_payload(&payload, &config)
        .into_iter()
        .filter(|row| names.is_empty() || names.iter().any(|n| row.matches(n)))
        .collect();
    if !names.is_empty() && rows.is_empty() {
        return Err(anyhow::anyhow!(
            "no document of {} matches {}",
            payload.origin,
            names.join(", ")
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
    let header = ["INCLUDED", "FILE#DOC", "KIND", "NAMESPACE/NAME", "REASON"].map(String::from);
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            let object = if row.namespace.is_empty() {
                row.name.clone()
            } else {
                format!("{}/{}", row.namespace, row.name)
            };
            [
                if row.included { "yes" } else { "no" }.to_string(),
                format!("{}/{}#{}", row.dir, row.file, row.index),
                row.kind.clone(),
                object,
                row.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    for line in table(&header, &cells) {
        outln!("{line}");
    }
    let included = rows.iter().filter(|r| r.included).count();
    outln!(
        "# {} {}: {} included, {} excluded",
        rows.len(),
        if rows.len() == 1 {
            "document"
        } else {
            "documents"
        },
        included,
        rows.len() - included
    );
}

/// Columns as wide as their widest cell, three spaces apart, as kubectl prints them; the last
/// column is not padded.
fn table<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> Vec<String> {
    let mut widths = [0; N];
    for row in std::iter::once(header).chain(rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    std::iter::once(header)
        .chain(rows)
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == N {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}   ", width = widths[i]));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

pub fn hash(args: HashArgs, settings: &Settings) -> CliResult {
    args.inclusion.validate()?;
    let payload = load_payload(
        settings,
        &args.payload,
        &load_options(&args.inclusion, args.release_image.clone(), false),
    )?;
    warn_unknown_release_image(&payload, args.release_image.as_deref());
    let config = args.inclusion.config(&payload)?.load_time();
    outln!("{}", crate::hash::version_hash(payload.included(&config)));
    Ok(ExitCode::SUCCESS)
}
