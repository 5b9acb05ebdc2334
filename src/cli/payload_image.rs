//! `cvo payload pull|push|info`: release images in OCI image layouts and registries (and
//! `sign|verify`, in [`super::signatures`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::Subcommand;

use super::{CliResult, ImageArgs, Settings};
use crate::oci::{self, Platform};
use crate::payload::PayloadSource;

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
    /// Show what a release payload is (version, digest, architectures, manifests, channels, images), or what changed between two.
    Info(super::payload_info::InfoArgs),
    /// Build a release image (operator binary and payload layers) into an OCI image layout or a registry, as oc adm release new.
    New(Box<super::payload_new::NewArgs>),
    /// Copy a release and every image it references to another repository, digests kept, and print the ImageDigestMirrorSet.
    Mirror(super::payload_mirror::MirrorArgs),
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
    /// Also extract the operator binary, DIR/usr/bin/cvo (of a release `cvo payload new` built).
    #[arg(long)]
    pub binary: bool,
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

impl PayloadGroup {
    /// The release-image flags of the subcommand (none for signatures).
    pub fn images(&self) -> Option<&ImageArgs> {
        match &self.command {
            PayloadCommand::Pull(a) => Some(&a.images),
            PayloadCommand::Push(a) => Some(&a.images),
            PayloadCommand::Info(a) => Some(&a.images),
            PayloadCommand::New(a) => Some(&a.images),
            PayloadCommand::Mirror(a) => Some(&a.images),
            PayloadCommand::Sign(_) | PayloadCommand::Verify(_) => None,
        }
    }

    /// Whether the command writes machine-readable output (no progress bar then).
    pub fn machine_output(&self) -> bool {
        matches!(
            &self.command,
            PayloadCommand::Info(super::payload_info::InfoArgs {
                output: super::payload_info::InfoFormat::Json,
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
        PayloadCommand::Info(args) => super::payload_info::info(args, settings),
        PayloadCommand::New(args) => super::payload_new::new(*args, settings),
        PayloadCommand::Mirror(args) => super::payload_mirror::mirror(args, settings),
        PayloadCommand::Sign(args) => super::signatures::sign(args),
        PayloadCommand::Verify(args) => super::signatures::verify(args),
    }
}

/// The context's image options, for `platform` when one is given.
pub(super) fn options(settings: &Settings, platform: Option<&str>) -> anyhow::Result<oci::Options> {
    let mut options = settings.images.clone();
    if let Some(platform) = platform {
        options.platform = Platform::parse(platform).map_err(|e| anyhow!(e))?;
    }
    Ok(options)
}

/// An image source: a layout or a registry reference.
pub(super) fn image_source(text: &str) -> anyhow::Result<PayloadSource> {
    match PayloadSource::from_arg(Some(text)) {
        source @ (PayloadSource::OciLayout { .. } | PayloadSource::Registry(_)) => Ok(source),
        _ => bail!(
            "{text}: expected oci-layout:PATH[:TAG] or a registry reference (registry/repo:tag)"
        ),
    }
}

/// Loads a layout or registry image into the cache.
pub(super) fn load_image(
    source: &PayloadSource,
    options: &oci::Options,
) -> anyhow::Result<oci::Loaded> {
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
    if args.binary {
        extract_binary(&source, &options, &args.to)?;
    }
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

/// Extracts `usr/bin/cvo` of the image into `to`: the whole image is copied into a scratch
/// layout (layers are not kept in the payload cache) and its layers applied, keeping `usr/`.
fn extract_binary(source: &PayloadSource, options: &oci::Options, to: &Path) -> anyhow::Result<()> {
    use crate::oci::copy::{self, ImageSource};
    let scratch = super::payload_new::TempDir::new("cvo-payload-pull")?;
    let layout_path = scratch.path().join("layout");
    crate::oci::build::create_layout(&layout_path)?;
    let from = match source {
        PayloadSource::Registry(reference) => ImageSource::Registry(reference.clone()),
        PayloadSource::OciLayout { path, tag } => ImageSource::Layout {
            path: path.clone(),
            tag: tag.clone(),
        },
        other => bail!("{other}: not a release image"),
    };
    let top = copy::fetch(&from, &layout_path, options)?;
    crate::oci::build::tag(&layout_path, &top, "latest")?;
    let layout = oci::OciLayout::open(&layout_path)?;
    let image = oci::layout::resolve(&layout, Some("latest"), &options.platform)?;
    oci::cache::extract_under(&layout, &image, to, &options.limits, &["usr"])?;
    let binary = to.join(crate::oci::build::BINARY_PATH);
    if !binary.is_file() {
        bail!(
            "{source}: the image has no /{}: it was not built by cvo payload new",
            crate::oci::build::BINARY_PATH
        );
    }
    outln!("extracted the operator binary into {}", binary.display());
    Ok(())
}
