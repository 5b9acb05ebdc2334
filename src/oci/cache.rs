//! The content-addressed cache of extracted payloads: `<cache>/sha256-<manifest hex>/`.
//!
//! Extraction goes into a fresh temp dir inside the cache and is renamed into place only when
//! every layer applied cleanly; a concurrent load that loses the race drops its copy.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use flate2::read::GzDecoder;

use super::extract::{self, Budget, Compression, Limits};
use super::layout::{self, OciLayout, ResolvedImage};
use super::registry::RegistrySettings;
use super::{OciError, Platform};

static EXTRACTIONS: AtomicUsize = AtomicUsize::new(0);
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many images this process has extracted (a test hook).
pub fn extraction_count() -> usize {
    EXTRACTIONS.load(Ordering::SeqCst)
}

/// How an image is loaded: where its payload is extracted, the extraction limits, the
/// platform chosen from an image index and how registries are reached. The command line builds
/// it once from its flags and environment; nothing below reads either.
#[derive(Debug, Clone)]
pub struct Options {
    pub cache_dir: PathBuf,
    pub limits: Limits,
    pub platform: Platform,
    pub registry: RegistrySettings,
    /// Where a pull by digest is tried first (the cluster's ImageDigestMirrorSets).
    pub mirrors: crate::release::digest_mirrors::DigestMirrors,
}

impl Options {
    /// Default limits, the running platform and anonymous registry access, extracting into
    /// `cache_dir`.
    pub fn new(cache_dir: PathBuf) -> Options {
        Options {
            cache_dir,
            limits: Limits::default(),
            platform: Platform::running(),
            registry: RegistrySettings::default(),
            mirrors: Default::default(),
        }
    }
}

/// An image extracted into the cache.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The payload root (`manifests/`, `release-manifests/`, `bootstrap/`).
    pub dir: PathBuf,
    pub image: ResolvedImage,
    /// False when the cache already held it.
    pub extracted: bool,
}

/// Chooses the image of a layout and makes sure its payload is in the cache.
pub fn load(layout_path: &Path, tag: Option<&str>, options: &Options) -> Result<Loaded, OciError> {
    let layout = OciLayout::open(layout_path)?;
    let image = layout::resolve(&layout, tag, &options.platform)?;
    let digest = image.digest()?;
    let dir = options.cache_dir.join(digest.dir_name());
    if dir.is_dir() {
        tracing::debug!(digest = %digest, dir = %dir.display(), "payload cache hit");
        return Ok(Loaded {
            dir,
            image,
            extracted: false,
        });
    }
    fs::create_dir_all(&options.cache_dir).map_err(OciError::io(format!(
        "create cache directory {}",
        options.cache_dir.display()
    )))?;
    let temp = options.cache_dir.join(format!(
        ".tmp-{}-{}-{}",
        digest.dir_name(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    fs::create_dir(&temp).map_err(OciError::io(format!("create {}", temp.display())))?;
    let result = extract_image(&layout, &image, &temp, &options.limits);
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&temp);
        return Err(e);
    }
    EXTRACTIONS.fetch_add(1, Ordering::SeqCst);
    if let Err(e) = fs::rename(&temp, &dir) {
        let _ = fs::remove_dir_all(&temp);
        if !dir.is_dir() {
            return Err(OciError::Io {
                context: format!("move the extracted payload to {}", dir.display()),
                source: e,
            });
        }
        // Another load won the race: its copy is the same content.
    }
    tracing::info!(digest = %digest, dir = %dir.display(), "extracted release image payload");
    Ok(Loaded {
        dir,
        image,
        extracted: true,
    })
}

fn extract_image(
    layout: &OciLayout,
    image: &ResolvedImage,
    into: &Path,
    limits: &Limits,
) -> Result<(), OciError> {
    extract_under(layout, image, into, limits, &extract::PAYLOAD_DIRS)?;
    if !into.join("release-manifests").is_dir() {
        return Err(OciError::Invalid(format!(
            "image {}: no /release-manifests/ directory: not a release image",
            image.manifest_desc.digest
        )));
    }
    Ok(())
}

/// Applies the image's layers to `into`, keeping what is under the top-level directories
/// `dirs` (with the extraction's safety rules).
pub fn extract_under(
    layout: &OciLayout,
    image: &ResolvedImage,
    into: &Path,
    limits: &Limits,
    dirs: &[&str],
) -> Result<(), OciError> {
    let mut budget = Budget::default();
    for desc in &image.manifest.layers {
        let compression =
            extract::layer_compression(&desc.media_type).map_err(|reason| OciError::Limit {
                layer: desc.digest.clone(),
                reason,
            })?;
        let path = layout.verify_blob(desc)?;
        let file =
            fs::File::open(&path).map_err(OciError::io(format!("open {}", path.display())))?;
        let file = std::io::BufReader::new(file);
        match compression {
            Compression::None => {
                extract::apply_layer_under(file, &desc.digest, into, limits, &mut budget, dirs)?
            }
            Compression::Gzip => extract::apply_layer_under(
                GzDecoder::new(file),
                &desc.digest,
                into,
                limits,
                &mut budget,
                dirs,
            )?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pushed() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let layout = tmp.path().join("image");
        let payload = Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads/4.18.0");
        crate::oci::push(&payload, &layout, "4.18.0", &[Platform::running()]).unwrap();
        (tmp, layout)
    }

    fn options(tmp: &Path) -> Options {
        Options::new(tmp.join("cache"))
    }

    #[test]
    fn a_second_load_is_served_from_the_cache() {
        let (tmp, layout) = pushed();
        let options = options(tmp.path());
        let first = load(&layout, Some("4.18.0"), &options).unwrap();
        assert!(first.extracted);
        let count = extraction_count();
        let second = load(&layout, None, &options).unwrap();
        assert!(!second.extracted);
        assert_eq!(first.dir, second.dir);
        assert!(extraction_count() >= count);
        assert!(
            second
                .dir
                .join("release-manifests/release-metadata")
                .is_file()
        );
        assert_eq!(second.image.version(), Some("4.18.0"));
    }

    #[test]
    fn concurrent_loads_agree() {
        let (tmp, layout) = pushed();
        let options = options(tmp.path());
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| load(&layout, None, &options).unwrap().dir))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(dirs.windows(2).all(|w| w[0] == w[1]));
        let entries: Vec<_> = fs::read_dir(&options.cache_dir).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temp dirs left behind");
    }
}
