//! The content-addressed cache of extracted payloads: `<cache>/sha256-<manifest hex>/`.
//!
//! Extraction goes into a fresh temp dir inside the cache and is renamed into place only when
//! every layer applied cleanly; a concurrent load that loses the race drops its copy.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use flate2::read::GzDecoder;

use super::extract::{self, Budget, Compression, Limits};
use super::layout::{self, OciLayout, ResolvedImage};
use super::{OciError, Platform};

static CACHE_DIR: OnceLock<PathBuf> = OnceLock::new();
static EXTRACTIONS: AtomicUsize = AtomicUsize::new(0);
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Sets the process-wide cache directory (`--cache-dir`); the first call wins.
pub fn set_cache_dir(dir: PathBuf) {
    let _ = CACHE_DIR.set(dir);
}

/// How many images this process has extracted (a test hook).
pub fn extraction_count() -> usize {
    EXTRACTIONS.load(Ordering::SeqCst)
}

/// How an image is loaded.
#[derive(Debug, Clone)]
pub struct Options {
    pub cache_dir: PathBuf,
    pub limits: Limits,
    pub platform: Platform,
}

impl Options {
    /// `--cache-dir`, else `$XDG_CACHE_HOME/cvo/payloads`, else `~/.cache/cvo/payloads`; limits
    /// from `CVO_OCI_MAX_BYTES` / `CVO_OCI_MAX_ENTRIES`; the running platform.
    pub fn from_env() -> Options {
        let cache_dir = CACHE_DIR.get().cloned().unwrap_or_else(|| {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .filter(|v| !v.is_empty())
                        .map(|h| PathBuf::from(h).join(".cache"))
                })
                .unwrap_or_else(std::env::temp_dir);
            base.join("cvo").join("payloads")
        });
        let number = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        let defaults = Limits::default();
        Options {
            cache_dir,
            limits: Limits {
                max_bytes: number("CVO_OCI_MAX_BYTES", defaults.max_bytes),
                max_entries: number("CVO_OCI_MAX_ENTRIES", defaults.max_entries),
            },
            platform: Platform::running(),
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
                extract::apply_layer(file, &desc.digest, into, limits, &mut budget)?
            }
            Compression::Gzip => extract::apply_layer(
                GzDecoder::new(file),
                &desc.digest,
                into,
                limits,
                &mut budget,
            )?,
        }
    }
    if !into.join("release-manifests").is_dir() {
        return Err(OciError::Invalid(format!(
            "image {}: no /release-manifests/ directory: not a release image",
            image.manifest_desc.digest
        )));
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
        Options {
            cache_dir: tmp.join("cache"),
            limits: Limits::default(),
            platform: Platform::running(),
        }
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
