//! The registry client's stand-in in a build without the `registry` feature (`cargo build
//! --no-default-features`): the same functions, each failing with an error that says how to
//! get a build that reaches registries. Image layouts (`oci-layout:PATH`) work without it.

use std::path::Path;

pub use super::reference::{PullSecret, RegistrySettings, is_reference};
use super::{Loaded, OciError, Options, Platform};

/// What a build with the `registry` feature says after a push.
#[derive(Debug, Clone)]
pub struct RegistryPush {
    pub reference: String,
    pub digest: String,
    pub version: String,
}

/// The callers name the reference already.
fn disabled() -> OciError {
    OciError::Invalid(
        "this cvo was built without the `registry` feature, so it cannot reach registries; \
         rebuild with default features (cargo install --path .) or use an image layout \
         (oci-layout:PATH[:TAG]) or a payload directory"
            .to_string(),
    )
}

/// Fails: no registry client in this build.
pub fn load(_reference_text: &str, _options: &Options) -> Result<Loaded, OciError> {
    Err(disabled())
}

/// Fails: no registry client in this build.
pub fn push(
    _payload_dir: &Path,
    _reference_text: &str,
    _default_tag: &str,
    _platforms: &[Platform],
    _settings: &RegistrySettings,
) -> Result<RegistryPush, OciError> {
    Err(disabled())
}

/// Fails: no registry client in this build.
pub fn push_image(
    _layout_path: &Path,
    _top: &super::Descriptor,
    _reference_text: &str,
    _settings: &RegistrySettings,
) -> Result<String, OciError> {
    Err(disabled())
}

/// Fails: no registry client in this build.
pub fn resolve(
    _reference_text: &str,
    _settings: &RegistrySettings,
) -> Result<super::Descriptor, OciError> {
    Err(disabled())
}

/// Fails: no registry client in this build.
pub fn fetch_image(
    _reference_text: &str,
    _into: &Path,
    _options: &Options,
) -> Result<super::Descriptor, OciError> {
    Err(disabled())
}

/// Fails: no registry client in this build.
pub fn image_layers(
    _reference_text: &str,
    _options: &Options,
) -> Result<(Vec<super::Descriptor>, Option<String>), OciError> {
    Err(disabled())
}
