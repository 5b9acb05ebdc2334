//! Reading an OCI image layout and choosing the image: by tag, then by platform.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::{
    Descriptor, Digest, ImageConfig, ImageManifest, Index, OciError, Platform, RELEASE_LABEL,
};

/// JSON blobs (index, manifest, config) larger than this are refused.
const MAX_JSON_BLOB: u64 = 16 << 20;
/// Image indexes nested deeper than this are refused.
const MAX_INDEX_DEPTH: usize = 4;

/// An image layout directory.
#[derive(Debug, Clone)]
pub struct OciLayout {
    root: PathBuf,
    pub index: Index,
}

impl OciLayout {
    pub fn open(root: &Path) -> Result<OciLayout, OciError> {
        let shown = root.display();
        if !root.is_dir() {
            return Err(OciError::Invalid(format!(
                "oci-layout {shown}: no such directory"
            )));
        }
        let marker = fs::read(root.join("oci-layout")).map_err(|_| {
            OciError::Invalid(format!(
                "oci-layout {shown}: no oci-layout file: not an OCI image layout"
            ))
        })?;
        let marker: serde_json::Value = serde_json::from_slice(&marker).map_err(|e| {
            OciError::Invalid(format!("oci-layout {shown}: invalid oci-layout file: {e}"))
        })?;
        if marker.get("imageLayoutVersion").and_then(|v| v.as_str()) != Some("1.0.0") {
            return Err(OciError::Invalid(format!(
                "oci-layout {shown}: unsupported imageLayoutVersion (expected \"1.0.0\")"
            )));
        }
        let index_path = root.join("index.json");
        let size = fs::metadata(&index_path)
            .map_err(|_| OciError::Invalid(format!("oci-layout {shown}: no index.json")))?
            .len();
        if size > MAX_JSON_BLOB {
            return Err(OciError::Invalid(format!(
                "oci-layout {shown}: index.json is larger than {MAX_JSON_BLOB} bytes"
            )));
        }
        let bytes = fs::read(&index_path)
            .map_err(OciError::io(format!("read {}", index_path.display())))?;
        let index: Index = serde_json::from_slice(&bytes).map_err(|e| {
            OciError::Invalid(format!("oci-layout {shown}: invalid index.json: {e}"))
        })?;
        Ok(OciLayout {
            root: root.to_path_buf(),
            index,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs").join("sha256").join(digest.hex())
    }

    /// Checks a blob's size and sha256 against its descriptor, streaming; returns its path.
    pub fn verify_blob(&self, desc: &Descriptor) -> Result<PathBuf, OciError> {
        use sha2::Digest as _;
        let digest = Digest::parse(&desc.digest)?;
        let path = self.blob_path(&digest);
        let blob_err = |reason: String| OciError::Blob {
            digest: desc.digest.clone(),
            reason,
        };
        let meta = fs::symlink_metadata(&path)
            .map_err(|_| blob_err(format!("missing from the layout ({})", path.display())))?;
        if !meta.is_file() {
            return Err(blob_err("not a regular file".to_string()));
        }
        if meta.len() != desc.size {
            return Err(blob_err(format!(
                "size mismatch: the descriptor says {} bytes, the blob has {}",
                desc.size,
                meta.len()
            )));
        }
        let mut file =
            fs::File::open(&path).map_err(OciError::io(format!("open {}", path.display())))?;
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = file
                .read(&mut buf)
                .map_err(OciError::io(format!("read {}", path.display())))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let actual = Digest::from_hasher(hasher);
        if actual != digest {
            return Err(blob_err(format!(
                "digest mismatch: the content hashes to {actual}"
            )));
        }
        Ok(path)
    }

    /// Reads a small JSON blob, verified.
    pub fn read_json<T: DeserializeOwned>(
        &self,
        desc: &Descriptor,
        what: &str,
    ) -> Result<T, OciError> {
        if desc.size > MAX_JSON_BLOB {
            return Err(OciError::Blob {
                digest: desc.digest.clone(),
                reason: format!("{what} larger than {MAX_JSON_BLOB} bytes"),
            });
        }
        let path = self.verify_blob(desc)?;
        let bytes = fs::read(&path).map_err(OciError::io(format!("read {}", path.display())))?;
        serde_json::from_slice(&bytes).map_err(|e| OciError::Blob {
            digest: desc.digest.clone(),
            reason: format!("invalid {what}: {e}"),
        })
    }
}

/// The chosen image of a layout.
#[derive(Debug, Clone)]
pub struct ResolvedImage {
    /// The image manifest's descriptor: its digest keys the cache.
    pub manifest_desc: Descriptor,
    pub manifest: ImageManifest,
    pub config: ImageConfig,
    /// Every platform the chosen reference offers (one for a single-platform image).
    pub platforms: Vec<Platform>,
    pub platform: Platform,
    /// The digest of the image index the manifest was chosen from, when there is one.
    pub list_digest: Option<String>,
}

impl ResolvedImage {
    pub fn digest(&self) -> Result<Digest, OciError> {
        Digest::parse(&self.manifest_desc.digest)
    }

    /// `config.Labels["io.openshift.release"]`, or the manifest annotation.
    pub fn version(&self) -> Option<&str> {
        self.config
            .config
            .labels
            .as_ref()
            .and_then(|l| l.get(RELEASE_LABEL))
            .or_else(|| self.manifest.annotations.get(RELEASE_LABEL))
            .map(String::as_str)
    }
}

fn tag_of(desc: &Descriptor) -> Option<&str> {
    let name = desc.ref_name()?;
    // `oc`/buildah may store a full reference (`registry/repo:tag`); skopeo stores the tag.
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') && !repo.is_empty() => Some(tag),
        _ => Some(name),
    }
}

fn tags(entries: &[Descriptor]) -> String {
    let tags: Vec<&str> = entries.iter().filter_map(tag_of).collect();
    if tags.is_empty() {
        "none".to_string()
    } else {
        tags.join(", ")
    }
}

/// Chooses the `index.json` entry: by tag; without one, the only entry, the `latest` one, or
/// (entries that are all per-platform manifests) by platform.
pub fn select_entry<'a>(
    entries: &'a [Descriptor],
    tag: Option<&str>,
    platform: &Platform,
) -> Result<&'a Descriptor, String> {
    if entries.is_empty() {
        return Err("index.json lists no images".to_string());
    }
    if let Some(tag) = tag {
        let found: Vec<&Descriptor> = entries
            .iter()
            .filter(|d| d.ref_name() == Some(tag) || tag_of(d) == Some(tag))
            .collect();
        return match found.as_slice() {
            [] => Err(format!("no image tagged {tag:?} (tags: {})", tags(entries))),
            [one] => Ok(one),
            several => select_platform(several.iter().copied(), platform),
        };
    }
    if let [one] = entries {
        return Ok(one);
    }
    let latest: Vec<&Descriptor> = entries
        .iter()
        .filter(|d| tag_of(d) == Some("latest"))
        .collect();
    match latest.as_slice() {
        [one] => return Ok(one),
        [] => {}
        several => return select_platform(several.iter().copied(), platform),
    }
    if entries
        .iter()
        .all(|d| d.platform.is_some() && !d.is_index())
    {
        return select_platform(entries.iter(), platform);
    }
    Err(format!(
        "the layout holds {} images; choose one with oci-layout:PATH:TAG (tags: {})",
        entries.len(),
        tags(entries)
    ))
}

/// Chooses the manifest for `platform` among an image index's entries.
pub fn select_platform<'a>(
    entries: impl Iterator<Item = &'a Descriptor> + Clone,
    platform: &Platform,
) -> Result<&'a Descriptor, String> {
    let mut matching = entries
        .clone()
        .filter(|d| d.platform.as_ref().is_some_and(|p| platform.matches(p)));
    match matching.next() {
        Some(found) => Ok(found),
        None => {
            let offered: Vec<String> = entries
                .filter_map(|d| d.platform.as_ref().map(|p| p.to_string()))
                .collect();
            Err(format!(
                "no image for platform {platform} (offered: {}); choose one with --platform",
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join(", ")
                }
            ))
        }
    }
}

/// Chooses and reads the image: index entry, nested image indexes, manifest and config.
pub fn resolve(
    layout: &OciLayout,
    tag: Option<&str>,
    platform: &Platform,
) -> Result<ResolvedImage, OciError> {
    let invalid =
        |msg: String| OciError::Invalid(format!("oci-layout {}: {msg}", layout.root.display()));
    let mut desc = select_entry(&layout.index.manifests, tag, platform)
        .map_err(invalid)?
        .clone();
    let list_digest = desc.is_index().then(|| desc.digest.clone());
    let mut platforms: Vec<Platform> = desc.platform.iter().cloned().collect();
    if tag.is_none() && layout.index.manifests.len() > 1 && desc.platform.is_some() {
        platforms = layout
            .index
            .manifests
            .iter()
            .filter_map(|d| d.platform.clone())
            .collect();
    }
    let mut depth = 0;
    while desc.is_index() {
        depth += 1;
        if depth > MAX_INDEX_DEPTH {
            return Err(invalid("image indexes nested too deep".to_string()));
        }
        let index: Index = layout.read_json(&desc, "image index")?;
        platforms = index
            .manifests
            .iter()
            .filter_map(|d| d.platform.clone())
            .collect();
        desc = select_platform(index.manifests.iter(), platform)
            .map_err(|e| invalid(format!("image index {}: {e}", desc.digest)))?
            .clone();
    }
    if desc.media_type != super::MEDIA_OCI_MANIFEST
        && desc.media_type != super::MEDIA_DOCKER_MANIFEST
    {
        return Err(invalid(format!(
            "{}: unsupported media type {:?} (expected an image manifest or index)",
            desc.digest, desc.media_type
        )));
    }
    let manifest: ImageManifest = layout.read_json(&desc, "image manifest")?;
    let config: ImageConfig = layout.read_json(&manifest.config, "image config")?;
    let chosen = Platform {
        os: config.os.clone(),
        architecture: config.architecture.clone(),
        variant: config.variant.clone(),
    };
    if platforms.is_empty() && !chosen.os.is_empty() {
        platforms.push(chosen.clone());
    }
    Ok(ResolvedImage {
        manifest_desc: desc,
        manifest,
        config,
        platforms,
        platform: chosen,
        list_digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oci::{MEDIA_OCI_INDEX, MEDIA_OCI_MANIFEST, REF_NAME};

    fn desc(tag: Option<&str>, platform: Option<&str>, media: &str) -> Descriptor {
        Descriptor {
            media_type: media.to_string(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 1,
            platform: platform.map(|p| Platform::parse(p).unwrap()),
            annotations: tag
                .map(|t| [(REF_NAME.to_string(), t.to_string())].into())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn selects_by_tag_only_latest_and_platform() {
        let amd = Platform::parse("linux/amd64").unwrap();
        let arm = Platform::parse("linux/arm64").unwrap();
        let a = desc(Some("4.18.0"), None, MEDIA_OCI_MANIFEST);
        let b = desc(Some("quay.io/x/y:latest"), None, MEDIA_OCI_INDEX);
        let entries = vec![a.clone(), b.clone()];
        assert_eq!(select_entry(&entries, Some("4.18.0"), &amd).unwrap(), &a);
        assert_eq!(select_entry(&entries, None, &amd).unwrap(), &b);
        assert_eq!(select_entry(&entries, Some("latest"), &amd).unwrap(), &b);
        let err = select_entry(&entries, Some("nope"), &amd).unwrap_err();
        assert!(
            err.contains("no image tagged \"nope\" (tags: 4.18.0, latest)"),
            "{err}"
        );
        assert_eq!(select_entry(&entries[..1], None, &amd).unwrap(), &a);
        let two = vec![a.clone(), desc(Some("other"), None, MEDIA_OCI_MANIFEST)];
        assert!(
            select_entry(&two, None, &amd)
                .unwrap_err()
                .contains("choose one with")
        );

        let per_platform = vec![
            desc(None, Some("linux/amd64"), MEDIA_OCI_MANIFEST),
            desc(None, Some("linux/arm64"), MEDIA_OCI_MANIFEST),
        ];
        assert_eq!(
            select_entry(&per_platform, None, &arm).unwrap(),
            &per_platform[1]
        );
        let s390 = Platform::parse("linux/s390x").unwrap();
        let err = select_platform(per_platform.iter(), &s390).unwrap_err();
        assert!(err.contains("offered: linux/amd64, linux/arm64"), "{err}");
    }
}
