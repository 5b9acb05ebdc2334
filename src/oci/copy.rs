//! Whole images (every platform of an index, configs, layers) copied into an image layout's
//! blobs, from a registry or from another layout, keeping every byte and so every digest:
//! what `cvo payload new --operator-image` builds on and `cvo payload mirror` carries.

use std::fs;
use std::path::{Path, PathBuf};

use super::{Descriptor, Digest, ImageManifest, Index, OciError, OciLayout, Options};

/// Where an image is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// `registry/repo:tag` or `registry/repo@sha256:…`.
    Registry(String),
    /// The `index.json` entry of a layout (by tag, or its only entry).
    Layout { path: PathBuf, tag: Option<String> },
    /// A manifest or index stored in a layout's blobs (not necessarily in its `index.json`).
    LayoutBlob { path: PathBuf, digest: String },
}

/// Copies the image into the blobs of the layout at `into`; returns its top descriptor.
pub fn fetch(source: &ImageSource, into: &Path, options: &Options) -> Result<Descriptor, OciError> {
    match source {
        ImageSource::Registry(reference) => super::registry::fetch_image(reference, into, options),
        ImageSource::Layout { path, tag } => {
            let layout = OciLayout::open(path)?;
            let entry = super::layout::select_entry(
                &layout.index.manifests,
                tag.as_deref(),
                &options.platform,
            )
            .map_err(|e| OciError::Invalid(format!("oci-layout {}: {e}", path.display())))?;
            let mut top = entry.clone();
            // A whole index is copied, not the platform chosen from a list of manifests.
            top.annotations.clear();
            top.platform = None;
            copy_tree(&layout, &top, into, 0)?;
            Ok(top)
        }
        ImageSource::LayoutBlob { path, digest } => {
            let layout = OciLayout::open(path)?;
            let top = blob_descriptor(&layout, digest)?;
            copy_tree(&layout, &top, into, 0)?;
            Ok(top)
        }
    }
}

/// The layers of an image (for an index, of its `options.platform` manifest) and its
/// config's `created`.
pub fn image_layers(
    source: &ImageSource,
    options: &Options,
) -> Result<(Vec<Descriptor>, Option<String>), OciError> {
    let (layout, mut desc) = match source {
        ImageSource::Registry(reference) => {
            return super::registry::image_layers(reference, options);
        }
        ImageSource::LayoutBlob { path, digest } => {
            let layout = OciLayout::open(path)?;
            let desc = blob_descriptor(&layout, digest)?;
            (layout, desc)
        }
        ImageSource::Layout { path, tag } => {
            let layout = OciLayout::open(path)?;
            let image = super::layout::resolve(&layout, tag.as_deref(), &options.platform)?;
            let created = created(&layout, &image.manifest)?;
            return Ok((image.manifest.layers, created));
        }
    };
    for _ in 0..4 {
        if !desc.is_index() {
            break;
        }
        let index: Index = layout.read_json(&desc, "image index")?;
        desc = super::layout::select_platform(index.manifests.iter(), &options.platform)
            .map_err(|e| OciError::Invalid(format!("image index {}: {e}", desc.digest)))?
            .clone();
    }
    let manifest: ImageManifest = layout.read_json(&desc, "image manifest")?;
    let created = created(&layout, &manifest)?;
    Ok((manifest.layers, created))
}

fn created(layout: &OciLayout, manifest: &ImageManifest) -> Result<Option<String>, OciError> {
    let config: serde_json::Value = layout.read_json(&manifest.config, "image config")?;
    Ok(config
        .get("created")
        .and_then(|c| c.as_str())
        .map(str::to_string))
}

/// The descriptor of a manifest or index in the layout's blobs.
pub fn blob_descriptor(layout: &OciLayout, digest: &str) -> Result<Descriptor, OciError> {
    let parsed = Digest::parse(digest)?;
    let path = layout.blob_path(&parsed);
    let bytes = fs::read(&path).map_err(|_| OciError::Blob {
        digest: digest.to_string(),
        reason: format!("missing from the layout {}", layout.root().display()),
    })?;
    if Digest::of(&bytes) != parsed {
        return Err(OciError::Blob {
            digest: digest.to_string(),
            reason: "digest mismatch in the layout".to_string(),
        });
    }
    Ok(Descriptor {
        media_type: super::media_type_of(&bytes)?,
        digest: digest.to_string(),
        size: bytes.len() as u64,
        platform: None,
        annotations: Default::default(),
    })
}

/// Whether the layout's blobs hold the manifest or index `digest`.
pub fn has_blob(layout: &Path, digest: &str) -> bool {
    Digest::parse(digest).is_ok_and(|d| layout.join("blobs/sha256").join(d.hex()).is_file())
}

fn copy_blob(from: &OciLayout, desc: &Descriptor, into: &Path) -> Result<(), OciError> {
    let source = from.verify_blob(desc)?;
    let target = into
        .join("blobs/sha256")
        .join(Digest::parse(&desc.digest)?.hex());
    if target.is_file() || source == target {
        return Ok(());
    }
    fs::create_dir_all(into.join("blobs/sha256"))
        .map_err(OciError::io(format!("create {}", into.display())))?;
    // A hard link costs nothing on one file system; a copy elsewhere.
    if fs::hard_link(&source, &target).is_err() {
        let temp = target.with_extension(format!("tmp-{}", std::process::id()));
        fs::copy(&source, &temp).map_err(OciError::io(format!("write {}", temp.display())))?;
        fs::rename(&temp, &target).map_err(OciError::io(format!("write {}", target.display())))?;
    }
    Ok(())
}

fn copy_tree(
    from: &OciLayout,
    desc: &Descriptor,
    into: &Path,
    depth: usize,
) -> Result<(), OciError> {
    if depth > 4 {
        return Err(OciError::Invalid("image indexes nested too deep".into()));
    }
    copy_blob(from, desc, into)?;
    if desc.is_index() {
        let index: Index = from.read_json(desc, "image index")?;
        for child in &index.manifests {
            copy_tree(from, child, into, depth + 1)?;
        }
        return Ok(());
    }
    let manifest: ImageManifest = from.read_json(desc, "image manifest")?;
    for blob in manifest.layers.iter().chain([&manifest.config]) {
        copy_blob(from, blob, into)?;
    }
    Ok(())
}
