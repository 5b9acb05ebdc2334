//! Release images on disk: OCI image layouts (`oci-layout`, `index.json`, `blobs/sha256/`).
//!
//! * [`layout`]: reading a layout and choosing the image (tag, platform) — blobs are verified
//!   (size and sha256) before anything reads them.
//! * [`extract`]: applying layers (whiteouts included) with the safety rules: only
//!   `manifests/`, `release-manifests/` and `bootstrap/`; no absolute paths, `..`, escaping links,
//!   device files; size and entry limits.
//! * [`cache`]: the content-addressed cache of extracted payloads, keyed by manifest digest.
//! * [`write`](mod@write): packing a payload directory into a layout (`cvo payload push`).
//! * [`registry`]: pulling release images from and pushing them to registries (oci-client),
//!   through the same verification, extraction and cache.
//! * [`build`]: building release images (`cvo payload new`): the operator image and the
//!   release layer, reproducibly.
//! * [`copy`]: whole images copied into a layout, from a registry or another layout, digests
//!   kept (`cvo payload mirror`).

pub mod build;
pub mod cache;
pub mod copy;
pub mod extract;
pub mod layout;
pub mod progress;
mod reference;
#[cfg(feature = "registry")]
pub mod registry;
/// A build without the `registry` feature: registry references are still recognised (so they
/// are not mistaken for directories) but reaching one is an error that names the feature.
#[cfg(not(feature = "registry"))]
#[path = "registry_off.rs"]
pub mod registry;
pub mod write;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use cache::{Loaded, Options, load};
pub use extract::Limits;
pub use layout::{OciLayout, ResolvedImage, resolve};
pub use write::{PushResult, push};

pub const MEDIA_OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const MEDIA_OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const MEDIA_OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const MEDIA_OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub const MEDIA_DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const MEDIA_DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The tag of an `index.json` entry.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
/// The image config label (and manifest annotation) holding the release version.
pub const RELEASE_LABEL: &str = "io.openshift.release";
pub const VERSION_ANNOTATION: &str = "org.opencontainers.image.version";

/// An OCI content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    pub fn ref_name(&self) -> Option<&str> {
        self.annotations.get(REF_NAME).map(String::as_str)
    }
    pub fn is_index(&self) -> bool {
        self.media_type == MEDIA_OCI_INDEX || self.media_type == MEDIA_DOCKER_LIST
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    pub architecture: String,
    pub os: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Platform {
    /// `os/arch[/variant]`.
    pub fn parse(text: &str) -> Result<Platform, String> {
        let parts: Vec<&str> = text.split('/').collect();
        match parts.as_slice() {
            [os, arch] | [os, arch, _] if !os.is_empty() && !arch.is_empty() => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: parts
                    .get(2)
                    .filter(|v| !v.is_empty())
                    .map(|v| v.to_string()),
            }),
            _ => Err(format!(
                "invalid platform {text:?}: expected os/arch[/variant], e.g. linux/amd64"
            )),
        }
    }

    /// The platform `cvo` runs on, in OCI (Go) names.
    pub fn running() -> Platform {
        let architecture = crate::payload::metadata::running_architecture();
        Platform {
            os: std::env::consts::OS.to_string(),
            architecture: architecture.to_string(),
            variant: None,
        }
    }

    /// Whether an index entry's platform is this one (a variant is compared only when asked).
    pub fn matches(&self, other: &Platform) -> bool {
        self.os == other.os
            && self.architecture == other.architecture
            && (self.variant.is_none() || self.variant == other.variant)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}

/// An image index (`index.json`, or an image index blob).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An image manifest (OCI or Docker schema 2: the same fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The parts of an image config `cvo` reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConfig {
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub os: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default)]
    pub config: ContainerConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<RootFs>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerConfig {
    #[serde(rename = "Labels", default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootFs {
    #[serde(rename = "type")]
    pub kind: String,
    pub diff_ids: Vec<String>,
}

/// A `sha256:<64 lowercase hex>` digest: the only algorithm accepted, and validated before it
/// becomes a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

impl Digest {
    pub fn parse(text: &str) -> Result<Digest, OciError> {
        let hex = text.strip_prefix("sha256:").ok_or_else(|| {
            OciError::Invalid(format!(
                "unsupported digest {text:?}: only sha256 digests are supported"
            ))
        })?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(OciError::Invalid(format!(
                "invalid digest {text:?}: expected sha256: and 64 lowercase hex digits"
            )));
        }
        Ok(Digest {
            hex: hex.to_string(),
        })
    }

    /// From a finished sha256 hash.
    pub fn from_sha256(hash: &[u8]) -> Digest {
        Digest {
            hex: hex::encode(hash),
        }
    }

    pub fn of(bytes: &[u8]) -> Digest {
        use sha2::Digest as _;
        Digest {
            hex: hex::encode(sha2::Sha256::digest(bytes)),
        }
    }

    pub fn from_hasher(hasher: sha2::Sha256) -> Digest {
        use sha2::Digest as _;
        Digest {
            hex: hex::encode(hasher.finalize()),
        }
    }

    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// The cache directory name: `sha256-<hex>`.
    pub fn dir_name(&self) -> String {
        format!("sha256-{}", self.hex)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

/// The media type of a manifest or index from its bytes: its `mediaType`, else an index when
/// it lists `manifests`, else an OCI image manifest.
pub fn media_type_of(bytes: &[u8]) -> Result<String, OciError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| OciError::Invalid(format!("invalid manifest: {e}")))?;
    Ok(match value.get("mediaType").and_then(|m| m.as_str()) {
        Some(m) => m.to_string(),
        None if value.get("manifests").is_some() => MEDIA_OCI_INDEX.to_string(),
        None => MEDIA_OCI_MANIFEST.to_string(),
    })
}

/// Why a layout cannot be read, extracted or written.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The layout, index, manifest or config is not what it must be.
    #[error("{0}")]
    Invalid(String),
    /// A blob does not match its descriptor.
    #[error("blob {digest}: {reason}")]
    Blob { digest: String, reason: String },
    /// A layer entry the extraction refuses.
    #[error("layer {layer}: entry {entry:?}: {reason}")]
    Entry {
        layer: String,
        entry: String,
        reason: String,
    },
    /// A layer past the size or entry limits.
    #[error("layer {layer}: {reason}")]
    Limit { layer: String, reason: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl OciError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> OciError {
        let context = context.into();
        move |source| OciError::Io { context, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_validated_before_they_become_paths() {
        let good = format!("sha256:{}", "a".repeat(64));
        assert_eq!(Digest::parse(&good).unwrap().to_string(), good);
        for bad in [
            "sha512:abc".to_string(),
            format!("sha256:{}", "A".repeat(64)),
            format!("sha256:../../{}", "a".repeat(58)),
            "sha256:abc".to_string(),
        ] {
            assert!(Digest::parse(&bad).is_err(), "{bad}");
        }
        assert_eq!(
            Digest::of(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn platforms() {
        let p = Platform::parse("linux/arm64/v8").unwrap();
        assert_eq!(p.to_string(), "linux/arm64/v8");
        assert!(Platform::parse("linux").is_err());
        assert!(Platform::parse("/amd64").is_err());
        let amd = Platform::parse("linux/amd64").unwrap();
        assert!(amd.matches(&amd));
        assert!(!amd.matches(&p));
        assert!(Platform::parse("linux/arm64").unwrap().matches(&p));
    }
}
