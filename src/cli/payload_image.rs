//! `cvo payload pull|push|info`: release images in OCI image layouts and registries (and
//! `sign|verify`, in [`super::signatures`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::{Subcommand, ValueEnum};
use serde::Serialize;

use super::{CliResult, ImageArgs, Settings};
use crate::oci::{self, Platform};
use crate::payload::{LoadOptions, Payload, PayloadSource, read_image, read_input};

#[derive(Debug, clap::Args)]
pub struct PayloadGroup {
    #[command(subcommand)]
    pub command: PayloadCommand,
}

#[derive(Debug, Subcommand)]
pub enum PayloadCommand {
    /// Extract a release image's payload (manifests/, release-manifests/, bootstrap/) into DIR.
    Pull(PullArgs),
    /// Pack a payload directory as a release image into an OCI image layout or a registry.
    Push(PushArgs),
    /// Show what a release payload is: version, digest, architectures, manifests, channels.
    Info(InfoArgs),
    /// Sign a release image digest into a signature store directory (atomic container signature).
    Sign(super::signatures::SignArgs),
    /// Verify a release image digest against keyrings and signature stores, as a cluster does.
    Verify(super::signatures::VerifyArgs),
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The release image: oci-layout:PATH[:TAG], registry/repo:tag, registry/repo@sha256:...
    #[arg(value_name = "SRC")]
    pub source: String,
    /// Directory to write the payload into (must not exist or be empty).
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// The platform to choose in a multi-platform image (os/arch); default: the running one.
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// A payload root (manifests/, release-manifests/ with release-metadata).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Where to write: oci-layout:PATH[:TAG] or registry/repo[:TAG] (tag default: the
    /// payload's version).
    #[arg(value_name = "DEST")]
    pub dest: String,
    /// A platform to write (os/arch), repeatable; several make an image index. Default: the
    /// running one.
    #[arg(long = "platform", value_name = "OS/ARCH")]
    pub platforms: Vec<String>,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// oci-layout:PATH[:TAG], a registry reference, a payload directory, or `bundled` (the
    /// default).
    #[arg(value_name = "SRC")]
    pub source: Option<String>,
    /// The platform to choose in a multi-platform image (os/arch); default: the running one.
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// text: one field per line; json: the same fields as an object.
    #[arg(short = 'o', long, value_enum, default_value_t = InfoFormat::Text)]
    pub output: InfoFormat,
    #[command(flatten)]
    pub images: ImageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InfoFormat {
    Text,
    Json,
}

impl PayloadGroup {
    /// The release-image flags of the subcommand (none for signatures).
    pub fn images(&self) -> Option<&ImageArgs> {
        match &self.command {
            PayloadCommand::Pull(a) => Some(&a.images),
            PayloadCommand::Push(a) => Some(&a.images),
            PayloadCommand::Info(a) => Some(&a.images),
            PayloadCommand::Sign(_) | PayloadCommand::Verify(_) => None,
        }
    }

    /// Whether the command writes machine-readable output (no progress bar then).
    pub fn machine_output(&self) -> bool {
        matches!(
            &self.command,
            PayloadCommand::Info(InfoArgs {
                output: InfoFormat::Json,
                ..
            }) | PayloadCommand::Verify(super::signatures::VerifyArgs {
                output: super::signatures::VerifyFormat::Json,
                ..
            })
        )
    }
}

pub fn payload(group: PayloadGroup, settings: &Settings) -> CliResult {
    match group.command {
        PayloadCommand::Pull(args) => pull(args, settings),
        PayloadCommand::Push(args) => push(args, settings),
        PayloadCommand::Info(args) => info(args, settings),
        PayloadCommand::Sign(args) => super::signatures::sign(args),
        PayloadCommand::Verify(args) => super::signatures::verify(args),
    }
}

/// The context's image options, for `platform` when one is given.
fn options(settings: &Settings, platform: Option<&str>) -> anyhow::Result<oci::Options> {
    let mut options = settings.images.clone();
    if let Some(platform) = platform {
        options.platform = Platform::parse(platform).map_err(|e| anyhow!(e))?;
    }
    Ok(options)
}

/// An image source: a layout or a registry reference.
fn image_source(text: &str) -> anyhow::Result<PayloadSource> {
    match PayloadSource::from_arg(Some(text)) {
        source @ (PayloadSource::OciLayout { .. } | PayloadSource::Registry(_)) => Ok(source),
        _ => bail!(
            "{text}: expected oci-layout:PATH[:TAG] or a registry reference (registry/repo:tag)"
        ),
    }
}

/// Loads a layout or registry image into the cache.
fn load_image(source: &PayloadSource, options: &oci::Options) -> anyhow::Result<oci::Loaded> {
    match source {
        PayloadSource::OciLayout { path, tag } => oci::load(path, tag.as_deref(), options),
        PayloadSource::Registry(reference) => oci::registry::load(reference, options),
        other => bail!("{other}: not a release image"),
    }
    .with_context(|| format!("payload {source}"))
}

fn pull(args: PullArgs, settings: &Settings) -> CliResult {
    let source = image_source(&args.source)?;
    let options = options(settings, args.platform.as_deref())?;
    let loaded = load_image(&source, &options)?;
    if args.to.exists()
        && fs::read_dir(&args.to)
            .with_context(|| format!("list {}", args.to.display()))?
            .next()
            .is_some()
    {
        return Err(anyhow!(
            "{}: already exists and is not empty; pull into a new directory",
            args.to.display()
        )
        .into());
    }
    copy_tree(&loaded.dir, &args.to)?;
    outln!(
        "pulled {} ({}, {}) into {}",
        args.source,
        loaded.image.manifest_desc.digest,
        loaded.image.platform,
        args.to.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("list {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path())?, &target)
                .with_context(|| format!("create {}", target.display()))?;
        } else {
            fs::copy(entry.path(), &target)
                .with_context(|| format!("write {}", target.display()))?;
        }
    }
    Ok(())
}

fn push(args: PushArgs, settings: &Settings) -> CliResult {
    let (path, tag) = match image_source(&args.dest)? {
        PayloadSource::OciLayout { path, tag } => (Some(path), tag),
        _ => (None, None),
    };
    let platforms = args
        .platforms
        .iter()
        .map(|p| Platform::parse(p).map_err(|e| anyhow!(e)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let tag = match tag {
        Some(tag) => tag,
        None => {
            let bytes = fs::read(args.dir.join("release-manifests/release-metadata"))
                .with_context(|| {
                    format!(
                        "payload {}: no release-manifests/release-metadata",
                        args.dir.display()
                    )
                })?;
            crate::payload::parse_release_metadata(&bytes)
                .map_err(|e| anyhow!("payload {}: {e}", args.dir.display()))?
                .0
                .version
        }
    };
    let Some(path) = path else {
        let pushed = oci::registry::push(
            &args.dir,
            &args.dest,
            &tag,
            &platforms,
            &settings.images.registry,
        )
        .with_context(|| format!("push {} to {}", args.dir.display(), args.dest))?;
        outln!(
            "pushed {} (version {}) to {} as {}",
            args.dir.display(),
            pushed.version,
            pushed.reference,
            pushed.digest
        );
        return Ok(ExitCode::SUCCESS);
    };
    let pushed = oci::push(&args.dir, &path, &tag, &platforms)
        .with_context(|| format!("push {} to {}", args.dir.display(), args.dest))?;
    outln!(
        "pushed {} (version {}) to oci-layout:{}:{tag} as {}",
        args.dir.display(),
        pushed.version,
        path.display(),
        pushed.descriptor.digest
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Info {
    source: String,
    version: Option<String>,
    /// The image manifest digest (`None` for a directory or the bundled payload).
    digest: Option<String>,
    /// The platform the image was chosen for.
    platform: Option<String>,
    /// Every platform the image offers.
    architectures: Vec<String>,
    manifests: usize,
    channels: Vec<String>,
    url: Option<String>,
    previous: Vec<String>,
}

fn info(args: InfoArgs, settings: &Settings) -> CliResult {
    let source = PayloadSource::from_arg(args.source.as_deref());
    let options = options(settings, args.platform.as_deref())?;
    let (input, image) = match &source {
        PayloadSource::OciLayout { .. } | PayloadSource::Registry(_) => {
            let loaded = load_image(&source, &options)?;
            let input = read_image(&source, &loaded).map_err(anyhow::Error::from)?;
            (input, Some(loaded.image))
        }
        other => (
            read_input(other, &options).map_err(anyhow::Error::from)?,
            None,
        ),
    };
    let payload = Payload::from_input(input, &LoadOptions::default())?;
    let release = payload.release.as_ref();
    let info = Info {
        source: source.to_string(),
        version: release
            .map(|r| r.version.clone())
            .or_else(|| image.as_ref().and_then(|i| i.version().map(str::to_string))),
        digest: image.as_ref().map(|i| i.manifest_desc.digest.clone()),
        platform: image.as_ref().map(|i| i.platform.to_string()),
        architectures: match &image {
            Some(image) => image
                .platforms
                .iter()
                .map(|p| p.architecture.clone())
                .collect(),
            None => release
                .and_then(|r| r.architecture.clone())
                .into_iter()
                .collect(),
        },
        manifests: payload.manifests.len(),
        channels: release.map(|r| r.channels.clone()).unwrap_or_default(),
        url: release.and_then(|r| r.url.clone()),
        previous: release.map(|r| r.previous.clone()).unwrap_or_default(),
    };
    match args.output {
        InfoFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&info).map_err(anyhow::Error::from)?
        ),
        InfoFormat::Text => {
            let none = || "-".to_string();
            outln!(
                "Name:          {}",
                info.version.clone().unwrap_or_else(none)
            );
            outln!("Source:        {}", info.source);
            outln!(
                "Digest:        {}",
                info.digest.clone().unwrap_or_else(none)
            );
            if let Some(platform) = &info.platform {
                outln!("OS/Arch:       {platform}");
            }
            outln!(
                "Architectures: {}",
                if info.architectures.is_empty() {
                    none()
                } else {
                    info.architectures.join(", ")
                }
            );
            outln!("Manifests:     {}", info.manifests);
            outln!("");
            outln!("Release Metadata:");
            outln!("  Version:  {}", info.version.clone().unwrap_or_else(none));
            outln!(
                "  Upgrades: {}",
                if info.previous.is_empty() {
                    "<none>".to_string()
                } else {
                    info.previous.join(", ")
                }
            );
            if let Some(url) = &info.url {
                outln!("  Metadata:");
                outln!("    url: {url}");
            }
            outln!(
                "  Channels: {}",
                if info.channels.is_empty() {
                    "<none>".to_string()
                } else {
                    info.channels.join(", ")
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
