//! `cvo payload mirror --from RELEASE (--to REPO | --to-dir DIR)`: the release and every image it
//! references copied to one repository (or an image layout), each by the same digest, and the
//! ImageDigestMirrorSet that makes a cluster pull them from there (`oc adm release mirror`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};

use super::payload_image::{image_source, options};
use super::payload_new::TempDir;
use super::{CliResult, ImageArgs, Settings};
use crate::oci::build;
use crate::oci::copy::{self, ImageSource};
use crate::oci::{Descriptor, OciLayout};
use crate::payload::PayloadSource;
use crate::release::mirror::{self, MirrorItem};
use crate::release::pullspec::Pullspec;
use crate::release::references::ImageStream;

#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    /// The release image: oci-layout:PATH[:TAG] or a registry reference.
    #[arg(long, value_name = "IMAGE")]
    pub from: String,
    /// The repository (registry/repo, no tag) to copy the release and its images to.
    #[arg(long, value_name = "REPO", required_unless_present = "to_dir")]
    pub to: Option<String>,
    /// An image layout to copy them into instead, to carry to a disconnected registry (mirror
    /// them from it with --from oci-layout:DIR:TAG).
    #[arg(long, value_name = "DIR", conflicts_with = "to")]
    pub to_dir: Option<PathBuf>,
    #[command(flatten)]
    pub images: ImageArgs,
}

pub fn mirror(args: MirrorArgs, settings: &Settings) -> CliResult {
    run(args, settings)?;
    Ok(ExitCode::SUCCESS)
}

fn run(args: MirrorArgs, settings: &Settings) -> anyhow::Result<()> {
    let options = options(settings, None)?;
    let target = match (&args.to, &args.to_dir) {
        (Some(to), None) => {
            Target::Registry(mirror::target_repository(to).map_err(|e| anyhow!(e))?)
        }
        (None, Some(dir)) => Target::Layout(dir.clone()),
        _ => bail!("give one of --to REPO and --to-dir DIR"),
    };
    let source = image_source(&args.from)?;
    let staging = TempDir::new("cvo-payload-mirror")?;
    let work = match &target {
        Target::Registry(_) => staging.path().join("layout"),
        Target::Layout(dir) => dir.clone(),
    };
    build::create_layout(&work)
        .with_context(|| format!("cannot create the image layout {}", work.display()))?;

    // The release: copied whole, then read.
    let release_source = match &source {
        PayloadSource::Registry(reference) => ImageSource::Registry(reference.clone()),
        PayloadSource::OciLayout { path, tag } => ImageSource::Layout {
            path: path.clone(),
            tag: tag.clone(),
        },
        _ => unreachable!("image_source gives images only"),
    };
    let release = copy::fetch(&release_source, &work, &options)
        .with_context(|| format!("mirror {}", args.from))?;
    let layout = OciLayout::open(&work)?;
    let read = build::read_image(&layout, &release)?;
    let architectures: Vec<String> = read.architectures();
    let extracted = {
        let probe = staging.path().join("probe");
        build::create_layout(&probe)?;
        copy::fetch(
            &ImageSource::LayoutBlob {
                path: work.clone(),
                digest: release.digest.clone(),
            },
            &probe,
            &options,
        )?;
        build::tag(&probe, &release, "release")?;
        crate::oci::load(&probe, Some("release"), &options)
            .with_context(|| format!("read the payload of {}", args.from))?
    };
    let references = std::fs::read(extracted.dir.join("release-manifests/image-references"))
        .map_err(|_| {
            anyhow!(
                "{}: the release has no release-manifests/image-references",
                args.from
            )
        })?;
    let stream = ImageStream::parse(&references).map_err(|e| anyhow!("{}: {e}", args.from))?;
    let suffix = mirror::arch_suffix(&architectures, release.is_index());
    let release_pullspec = match &source {
        PayloadSource::Registry(reference) => {
            Some(Pullspec::parse(reference).map_err(|e| anyhow!("--from: {e}"))?)
        }
        _ => None,
    };
    let plan = mirror::plan(
        &stream.clone(),
        &stream.metadata.name,
        &suffix,
        release_pullspec.as_ref(),
    )
    .map_err(|e| anyhow!(e))?;

    let shown = match &target {
        Target::Registry(repo) => repo.to_string(),
        Target::Layout(dir) => format!("oci-layout:{}", dir.display()),
    };
    eprintln!(
        "info: Mirroring {} images to {shown} ...",
        plan.images.len() + 1
    );
    for item in &plan.images {
        let from = image_location(item, &source);
        let top = copy::fetch(&from, &work, &options)
            .with_context(|| format!("mirror image {} ({})", item.name, item.source))?;
        if Some(&top.digest) != item.source.digest.as_ref() {
            bail!(
                "image {} ({}): the copy has digest {}: mirroring must keep digests",
                item.name,
                item.source,
                top.digest
            );
        }
        deliver(&target, &work, &top, &item.target_tag, &options)?;
        eprintln!(
            "info: {} {} -> {shown}:{}",
            item.name, item.source, item.target_tag
        );
    }
    deliver(&target, &work, &release, &plan.release_tag, &options)?;
    eprintln!(
        "info: release {} -> {shown}:{}",
        release.digest, plan.release_tag
    );

    match &target {
        Target::Registry(repo) => {
            let text = mirror::instructions(&plan, &repo.to_string());
            for line in text.strip_suffix('\n').unwrap_or(&text).split('\n') {
                outln!("{line}");
            }
        }
        Target::Layout(dir) => {
            let at = format!("oci-layout:{}:{}", dir.display(), plan.release_tag);
            outln!("");
            outln!("Success");
            outln!("Update image:  {at}");
            outln!("");
            outln!("To upload the images to a registry, run:");
            outln!("");
            outln!("    cvo payload mirror --from {at} --to REGISTRY/REPOSITORY");
            outln!("");
        }
    }
    Ok(())
}

enum Target {
    Registry(Pullspec),
    Layout(PathBuf),
}

/// An image of the release: from the layout the release came from when it holds it, else its
/// registry.
fn image_location(item: &MirrorItem, source: &PayloadSource) -> ImageSource {
    if let PayloadSource::OciLayout { path, .. } = source
        && let Some(digest) = &item.source.digest
        && copy::has_blob(path, digest)
    {
        return ImageSource::LayoutBlob {
            path: path.clone(),
            digest: digest.clone(),
        };
    }
    ImageSource::Registry(item.source.to_string())
}

/// Puts the image (its blobs in `work`) at `tag` of the target.
fn deliver(
    target: &Target,
    work: &Path,
    top: &Descriptor,
    tag: &str,
    options: &crate::oci::Options,
) -> anyhow::Result<()> {
    match target {
        Target::Registry(repo) => {
            let to = repo.with_tag(tag).to_string();
            crate::oci::registry::push_image(work, top, &to, &options.registry)
                .with_context(|| format!("push {} to {to}", top.digest))?;
        }
        Target::Layout(dir) => build::tag(dir, top, tag)?,
    }
    Ok(())
}
