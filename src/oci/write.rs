//! Packing a payload directory into an OCI image layout (`cvo payload push`).
//!
//! The layer is deterministic (sorted entries, zero times and owners), so pushing the same
//! payload twice gives the same digests and the cache serves both.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;

use super::extract::PAYLOAD_DIRS;
use super::{
    ContainerConfig, Descriptor, Digest, ImageConfig, ImageManifest, Index, MEDIA_OCI_CONFIG,
    MEDIA_OCI_INDEX, MEDIA_OCI_LAYER_GZIP, MEDIA_OCI_MANIFEST, OciError, Platform, REF_NAME,
    RELEASE_LABEL, RootFs, VERSION_ANNOTATION,
};

/// What `push` wrote.
#[derive(Debug, Clone)]
pub struct PushResult {
    /// The `index.json` entry: an image manifest, or an image index for several platforms.
    pub descriptor: Descriptor,
    pub version: String,
    pub layer: Descriptor,
}

/// Writes the payload at `payload_dir` into the layout at `layout_path` (created when
/// missing), tagged `tag`, for each platform; an existing entry with the tag is replaced.
pub fn push(
    payload_dir: &Path,
    layout_path: &Path,
    tag: &str,
    platforms: &[Platform],
) -> Result<PushResult, OciError> {
    let metadata_path = payload_dir.join("release-manifests/release-metadata");
    let metadata = fs::read(&metadata_path).map_err(|_| {
        OciError::Invalid(format!(
            "payload {}: no release-manifests/release-metadata: a release image needs its version",
            payload_dir.display()
        ))
    })?;
    let (release, _) = crate::payload::parse_release_metadata(&metadata)
        .map_err(|e| OciError::Invalid(format!("payload {}: {e}", payload_dir.display())))?;
    let version = release.version;
    let platforms = if platforms.is_empty() {
        vec![Platform::running()]
    } else {
        platforms.to_vec()
    };

    fs::create_dir_all(layout_path.join("blobs/sha256"))
        .map_err(OciError::io(format!("create {}", layout_path.display())))?;
    let (layer, diff_id) = write_layer(payload_dir, layout_path)?;
    let annotations: BTreeMap<String, String> = [
        (RELEASE_LABEL.to_string(), version.clone()),
        (VERSION_ANNOTATION.to_string(), version.clone()),
    ]
    .into();

    let mut manifests = Vec::new();
    for platform in &platforms {
        let config = ImageConfig {
            architecture: platform.architecture.clone(),
            os: platform.os.clone(),
            variant: platform.variant.clone(),
            config: ContainerConfig {
                labels: Some([(RELEASE_LABEL.to_string(), version.clone())].into()),
            },
            rootfs: Some(RootFs {
                kind: "layers".to_string(),
                diff_ids: vec![diff_id.to_string()],
            }),
        };
        let config = write_blob(layout_path, MEDIA_OCI_CONFIG, &to_json(&config)?)?;
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(MEDIA_OCI_MANIFEST.to_string()),
            config,
            layers: vec![layer.clone()],
            annotations: annotations.clone(),
        };
        let mut desc = write_blob(layout_path, MEDIA_OCI_MANIFEST, &to_json(&manifest)?)?;
        desc.platform = Some(platform.clone());
        manifests.push(desc);
    }
    let mut top = if manifests.len() == 1 {
        manifests.pop().expect("one manifest")
    } else {
        let index = Index {
            schema_version: 2,
            media_type: Some(MEDIA_OCI_INDEX.to_string()),
            manifests,
            annotations: annotations.clone(),
        };
        write_blob(layout_path, MEDIA_OCI_INDEX, &to_json(&index)?)?
    };
    top.annotations
        .insert(RELEASE_LABEL.to_string(), version.clone());

    set_tag(layout_path, &top, tag)?;
    Ok(PushResult {
        descriptor: top,
        version,
        layer,
    })
}

/// Makes `top` the layout's entry tagged `tag` (replacing one with that tag), creating the
/// layout's `oci-layout` and `index.json` when missing.
pub(super) fn set_tag(layout_path: &Path, top: &Descriptor, tag: &str) -> Result<(), OciError> {
    let mut top = top.clone();
    top.annotations
        .insert(REF_NAME.to_string(), tag.to_string());
    let index_path = layout_path.join("index.json");
    let mut index = match fs::read(&index_path) {
        Ok(bytes) => serde_json::from_slice::<Index>(&bytes).map_err(|e| {
            OciError::Invalid(format!(
                "oci-layout {}: invalid index.json: {e}",
                layout_path.display()
            ))
        })?,
        Err(_) => Index {
            schema_version: 2,
            media_type: Some(MEDIA_OCI_INDEX.to_string()),
            manifests: vec![],
            annotations: BTreeMap::new(),
        },
    };
    index.manifests.retain(|d| d.ref_name() != Some(tag));
    index.manifests.push(top.clone());
    write_atomic(
        &layout_path.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    write_atomic(&index_path, &to_json(&index)?)
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, OciError> {
    serde_json::to_vec(value).map_err(|e| OciError::Invalid(format!("encode JSON: {e}")))
}

pub(super) fn write_blob(
    layout: &Path,
    media_type: &str,
    bytes: &[u8],
) -> Result<Descriptor, OciError> {
    let digest = Digest::of(bytes);
    let path = layout.join("blobs/sha256").join(digest.hex());
    if !path.is_file() {
        write_atomic(&path, bytes)?;
    }
    Ok(Descriptor {
        media_type: media_type.to_string(),
        digest: digest.to_string(),
        size: bytes.len() as u64,
        platform: None,
        annotations: BTreeMap::new(),
    })
}

pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OciError> {
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    fs::write(&temp, bytes).map_err(OciError::io(format!("write {}", temp.display())))?;
    fs::rename(&temp, path).map_err(OciError::io(format!("write {}", path.display())))
}

/// Writes the payload layer (the tar of the payload directories, sorted, with zero times and
/// owners, gzip-compressed). Returns its descriptor and the uncompressed digest (the diff id).
pub(super) fn write_layer(root: &Path, layout: &Path) -> Result<(Descriptor, Digest), OciError> {
    write_layer_with(layout, |builder| append_payload(builder, root))
}

/// The tar builder a layer is written through: tar, hashed (the diff id), gzip, hashed (the
/// digest), file.
pub(super) type LayerBuilder =
    tar::Builder<HashingWriter<GzEncoder<HashingWriter<std::io::BufWriter<fs::File>>>>>;

/// Writes a layer blob whose entries `fill` adds, straight to the layout while hashing both
/// forms, so memory does not grow with the layer. Returns its descriptor and diff id.
pub(super) fn write_layer_with(
    layout: &Path,
    fill: impl FnOnce(&mut LayerBuilder) -> Result<(), OciError>,
) -> Result<(Descriptor, Digest), OciError> {
    let temp = layout
        .join("blobs/sha256")
        .join(format!("layer.tmp-{}", std::process::id()));
    let file =
        fs::File::create(&temp).map_err(OciError::io(format!("write {}", temp.display())))?;
    let written = (|| {
        let compressed = HashingWriter::new(std::io::BufWriter::new(file));
        let gz = GzEncoder::new(compressed, flate2::Compression::default());
        let mut builder = tar::Builder::new(HashingWriter::new(gz));
        builder.follow_symlinks(false);
        fill(&mut builder)?;
        let tar = builder
            .into_inner()
            .map_err(OciError::io("build the layer"))?;
        let (gz, diff_id, _) = tar.finish();
        let compressed = gz.finish().map_err(OciError::io("compress the layer"))?;
        let (file, digest, size) = compressed.finish();
        let file = file
            .into_inner()
            .map_err(|e| OciError::io(format!("write {}", temp.display()))(e.into_error()))?;
        file.sync_all()
            .map_err(OciError::io(format!("write {}", temp.display())))?;
        Ok((digest, size, diff_id))
    })();
    let (digest, size, diff_id) = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
    };
    let path = layout.join("blobs/sha256").join(digest.hex());
    fs::rename(&temp, &path).map_err(OciError::io(format!("write {}", path.display())))?;
    let layer = Descriptor {
        media_type: MEDIA_OCI_LAYER_GZIP.to_string(),
        digest: digest.to_string(),
        size,
        platform: None,
        annotations: BTreeMap::new(),
    };
    Ok((layer, diff_id))
}

/// A writer that hashes (sha256) and counts what passes through it. Written by hand: a few
/// lines, where a crate would add a dependency for one adaptor.
pub(super) struct HashingWriter<W> {
    inner: W,
    hasher: sha2::Sha256,
    size: u64,
}

impl<W: std::io::Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        use sha2::Digest as _;
        HashingWriter {
            inner,
            hasher: sha2::Sha256::new(),
            size: 0,
        }
    }

    fn finish(self) -> (W, Digest, u64) {
        use sha2::Digest as _;
        let digest = Digest::from_sha256(&self.hasher.finalize());
        (self.inner, digest, self.size)
    }
}

impl<W: std::io::Write> std::io::Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest as _;
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Adds `manifests/`, `release-manifests/` (and `bootstrap/`) of `root` to the layer.
fn append_payload<W: std::io::Write>(
    builder: &mut tar::Builder<W>,
    root: &Path,
) -> Result<(), OciError> {
    builder.follow_symlinks(false);
    let mut found = false;
    for dir in PAYLOAD_DIRS {
        let path = root.join(dir);
        if path.is_dir() {
            found = true;
            append_tree(builder, &path, dir)?;
        }
    }
    if !found {
        return Err(OciError::Invalid(format!(
            "payload {}: no manifests/ or release-manifests/ directory",
            root.display()
        )));
    }
    Ok(())
}

fn append_tree<W: std::io::Write>(
    builder: &mut tar::Builder<W>,
    dir: &Path,
    name: &str,
) -> Result<(), OciError> {
    let mut header = new_header(tar::EntryType::Directory, 0, 0o755);
    builder
        .append_data(&mut header, format!("{name}/"), std::io::empty())
        .map_err(OciError::io(format!("add {name}/")))?;
    let mut children: Vec<(String, PathBuf)> = fs::read_dir(dir)
        .map_err(OciError::io(format!("list {}", dir.display())))?
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    children.sort();
    for (child, path) in children {
        let entry = format!("{name}/{child}");
        let meta = fs::symlink_metadata(&path)
            .map_err(OciError::io(format!("stat {}", path.display())))?;
        if meta.is_dir() {
            append_tree(builder, &path, &entry)?;
        } else if meta.file_type().is_symlink() {
            let target =
                fs::read_link(&path).map_err(OciError::io(format!("read {}", path.display())))?;
            let mut header = new_header(tar::EntryType::Symlink, 0, 0o777);
            builder
                .append_link(&mut header, &entry, &target)
                .map_err(OciError::io(format!("add {entry}")))?;
        } else if meta.is_file() {
            let bytes =
                fs::read(&path).map_err(OciError::io(format!("read {}", path.display())))?;
            let mut header = new_header(tar::EntryType::Regular, bytes.len() as u64, 0o644);
            builder
                .append_data(&mut header, &entry, bytes.as_slice())
                .map_err(OciError::io(format!("add {entry}")))?;
        }
    }
    Ok(())
}

pub(super) fn new_header(kind: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}
