//! Building release images into an OCI image layout (`cvo payload new`), with no container
//! runtime: the layers are written directly, as `ko` and `jib` do, and everything is
//! reproducible (sorted entries, zero times and owners, a fixed `created`), so the same inputs
//! give the same digests.
//!
//! A release image is its operator image (the `cvo` binary and its entrypoint, or an image
//! given with `--operator-image`) plus one layer with `/manifests`, `/release-manifests` (and
//! `/bootstrap`), with the labels `oc adm release new` writes. Several architectures give one
//! operator image and one release image per architecture, each gathered in an image index.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::write::{new_header, set_tag, to_json, write_blob, write_layer, write_layer_with};
use super::{
    Descriptor, Digest, ImageManifest, Index, MEDIA_OCI_CONFIG, MEDIA_OCI_INDEX,
    MEDIA_OCI_MANIFEST, OciError, OciLayout, Platform, RELEASE_LABEL, VERSION_ANNOTATION,
};
use crate::release::{
    LABEL_BASE_IMAGE_DIGEST, LABEL_RELEASE, LABEL_RELEASE_OPERATOR, RELEASE_HISTORY_COMMENT,
};

/// Where the binary goes in the operator image, and its entrypoint.
pub const BINARY_PATH: &str = "usr/bin/cvo";
const PATH_ENV: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One architecture's image in a layout: its manifest (with the platform), and the manifest's
/// and config's content.
#[derive(Debug, Clone)]
pub struct PlatformImage {
    pub descriptor: Descriptor,
    pub manifest: ImageManifest,
    pub config: Value,
}

/// An image in a layout: one manifest, or an index of several.
#[derive(Debug, Clone)]
pub struct BuiltImage {
    /// The manifest or the image index.
    pub top: Descriptor,
    pub platforms: Vec<PlatformImage>,
}

impl BuiltImage {
    pub fn digest(&self) -> &str {
        &self.top.digest
    }

    /// The architecture of each platform image, in order.
    pub fn architectures(&self) -> Vec<String> {
        self.platforms
            .iter()
            .filter_map(|p| p.descriptor.platform.as_ref())
            .map(|p| p.architecture.clone())
            .collect()
    }
}

/// The operator image of `binary` for `platform`: one layer (`usr/bin/cvo`, mode 0755),
/// entrypoint `/usr/bin/cvo`, labelled `io.openshift.release.operator=true` as the CVO's image.
pub fn operator_image(
    layout: &Path,
    binary: &Path,
    platform: &Platform,
    created: &str,
    comment: &str,
) -> Result<PlatformImage, OciError> {
    let (layer, diff_id) = write_layer_with(layout, |builder| {
        for dir in ["usr/", "usr/bin/"] {
            let mut header = new_header(tar::EntryType::Directory, 0, 0o755);
            builder
                .append_data(&mut header, dir, std::io::empty())
                .map_err(OciError::io(format!("add {dir}")))?;
        }
        let file = fs::File::open(binary).map_err(OciError::io(format!(
            "read the operator binary {}",
            binary.display()
        )))?;
        let size = file
            .metadata()
            .map_err(OciError::io(format!("stat {}", binary.display())))?
            .len();
        let mut header = new_header(tar::EntryType::Regular, size, 0o755);
        builder
            .append_data(&mut header, BINARY_PATH, std::io::BufReader::new(file))
            .map_err(OciError::io(format!("add {}", binary.display())))
    })?;
    let config = json!({
        "created": created,
        "architecture": platform.architecture,
        "os": platform.os,
        "config": {
            "Env": [PATH_ENV],
            "Entrypoint": [format!("/{BINARY_PATH}")],
            "Labels": {LABEL_RELEASE_OPERATOR: "true"},
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id.to_string()]},
        "history": [{"created": created, "created_by": "cvo payload new", "comment": comment}],
    });
    let config = with_variant(config, platform);
    image(layout, platform, config, vec![layer], BTreeMap::new())
}

fn with_variant(mut config: Value, platform: &Platform) -> Value {
    if let Some(variant) = &platform.variant {
        config["variant"] = Value::String(variant.clone());
    }
    config
}

/// Writes a config and the manifest over `layers`.
fn image(
    layout: &Path,
    platform: &Platform,
    config: Value,
    layers: Vec<Descriptor>,
    annotations: BTreeMap<String, String>,
) -> Result<PlatformImage, OciError> {
    let config_desc = write_blob(layout, MEDIA_OCI_CONFIG, &to_json(&config)?)?;
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(MEDIA_OCI_MANIFEST.to_string()),
        config: config_desc,
        layers,
        annotations,
    };
    let mut descriptor = write_blob(layout, MEDIA_OCI_MANIFEST, &to_json(&manifest)?)?;
    descriptor.platform = Some(platform.clone());
    Ok(PlatformImage {
        descriptor,
        manifest,
        config,
    })
}

/// One image, or an index of several (one per platform).
pub fn gather(
    layout: &Path,
    platforms: Vec<PlatformImage>,
    annotations: BTreeMap<String, String>,
) -> Result<BuiltImage, OciError> {
    let top = match platforms.as_slice() {
        [one] => one.descriptor.clone(),
        _ => {
            let index = Index {
                schema_version: 2,
                media_type: Some(MEDIA_OCI_INDEX.to_string()),
                manifests: platforms.iter().map(|p| p.descriptor.clone()).collect(),
                annotations,
            };
            write_blob(layout, MEDIA_OCI_INDEX, &to_json(&index)?)?
        }
    };
    Ok(BuiltImage { top, platforms })
}

/// Reads an image that is in `layout` (its blobs there, verified): the top descriptor's
/// manifest, or each manifest of its index.
pub fn read_image(layout: &OciLayout, top: &Descriptor) -> Result<BuiltImage, OciError> {
    let descriptors: Vec<Descriptor> = if top.is_index() {
        let index: Index = layout.read_json(top, "image index")?;
        index.manifests
    } else {
        vec![top.clone()]
    };
    let mut platforms = Vec::new();
    for mut descriptor in descriptors {
        let manifest: ImageManifest = layout.read_json(&descriptor, "image manifest")?;
        let config: Value = layout.read_json(&manifest.config, "image config")?;
        for layer in &manifest.layers {
            layout.verify_blob(layer)?;
        }
        if descriptor.platform.is_none() {
            descriptor.platform = Some(Platform {
                os: config["os"].as_str().unwrap_or("linux").to_string(),
                architecture: config["architecture"]
                    .as_str()
                    .unwrap_or("amd64")
                    .to_string(),
                variant: config["variant"].as_str().map(str::to_string),
            });
        }
        platforms.push(PlatformImage {
            descriptor,
            manifest,
            config,
        });
    }
    Ok(BuiltImage {
        top: top.clone(),
        platforms,
    })
}

/// The payload layer: `manifests/`, `release-manifests/` and `bootstrap/` of `payload_dir`.
pub fn payload_layer(payload_dir: &Path, layout: &Path) -> Result<(Descriptor, Digest), OciError> {
    write_layer(payload_dir, layout)
}

/// The release image of one platform: the operator image's layers and the payload layer; the
/// config is the operator image's with oc's changes (labels `io.openshift.release` and
/// `io.openshift.release.base-image-digest` only, `created`, no container fields) and one more
/// history entry.
pub fn release_image(
    layout: &Path,
    base: &PlatformImage,
    payload: &(Descriptor, Digest),
    name: &str,
    created: &str,
) -> Result<PlatformImage, OciError> {
    let mut config = base.config.clone();
    let object = config
        .as_object_mut()
        .ok_or_else(|| OciError::Invalid("the operator image's config is not an object".into()))?;
    for field in ["container", "parent", "container_config"] {
        object.remove(field);
    }
    object.insert("created".into(), Value::String(created.to_string()));
    for (field, default) in [("os", "linux"), ("architecture", "amd64")] {
        if object
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            object.insert(field.into(), default.into());
        }
    }
    let inner = object
        .entry("config")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| {
            OciError::Invalid("the operator image's config.config is not an object".into())
        })?;
    inner.insert(
        "Labels".into(),
        json!({
            LABEL_RELEASE: name,
            LABEL_BASE_IMAGE_DIGEST: base.descriptor.digest,
        }),
    );
    let rootfs = object
        .entry("rootfs")
        .or_insert_with(|| json!({"type": "layers", "diff_ids": []}));
    match rootfs.get_mut("diff_ids").and_then(Value::as_array_mut) {
        Some(ids) => ids.push(Value::String(payload.1.to_string())),
        None => {
            return Err(OciError::Invalid(
                "the operator image's config has no rootfs.diff_ids".into(),
            ));
        }
    }
    let history = object
        .entry("history")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| OciError::Invalid("the operator image's history is not a list".into()))?;
    history.push(json!({"created": created, "comment": RELEASE_HISTORY_COMMENT}));
    let mut layers = base.manifest.layers.clone();
    layers.push(payload.0.clone());
    let platform = base
        .descriptor
        .platform
        .clone()
        .expect("platform images name their platform");
    image(layout, &platform, config, layers, release_annotations(name))
}

/// The annotations of a release image's manifests and index (as `cvo payload push` writes).
pub fn release_annotations(name: &str) -> BTreeMap<String, String> {
    [
        (RELEASE_LABEL.to_string(), name.to_string()),
        (VERSION_ANNOTATION.to_string(), name.to_string()),
    ]
    .into()
}

/// Tags `top` in the layout's `index.json`.
pub fn tag(layout: &Path, top: &Descriptor, tag: &str) -> Result<(), OciError> {
    set_tag(layout, top, tag)
}

/// Creates the layout's directories, `oci-layout` and (when missing) an empty `index.json`.
pub fn create_layout(layout: &Path) -> Result<(), OciError> {
    fs::create_dir_all(layout.join("blobs/sha256"))
        .map_err(OciError::io(format!("create {}", layout.display())))?;
    super::write::write_atomic(
        &layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let index = layout.join("index.json");
    if index.is_file() {
        return Ok(());
    }
    let empty = Index {
        schema_version: 2,
        media_type: Some(MEDIA_OCI_INDEX.to_string()),
        manifests: vec![],
        annotations: BTreeMap::new(),
    };
    super::write::write_atomic(&index, &to_json(&empty)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(tmp: &Path, created: &str) -> BuiltImage {
        let layout = tmp.join("layout");
        create_layout(&layout).unwrap();
        let binary = tmp.join("cvo");
        fs::write(&binary, b"\x7fELF binary").unwrap();
        let amd = Platform::parse("linux/amd64").unwrap();
        let arm = Platform::parse("linux/arm64").unwrap();
        let operators = [
            operator_image(&layout, &binary, &amd, created, "test").unwrap(),
            operator_image(&layout, &binary, &arm, created, "test").unwrap(),
        ];
        let payload = payload_layer(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads/4.18.0"),
            &layout,
        )
        .unwrap();
        let releases = operators
            .iter()
            .map(|o| release_image(&layout, o, &payload, "4.18.0", created).unwrap())
            .collect();
        gather(&layout, releases, release_annotations("4.18.0")).unwrap()
    }

    #[test]
    fn the_same_inputs_give_the_same_digest() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = built(a.path(), "1970-01-01T00:00:00Z");
        assert_eq!(
            first.digest(),
            built(b.path(), "1970-01-01T00:00:00Z").digest()
        );
        let c = tempfile::tempdir().unwrap();
        assert_ne!(
            first.digest(),
            built(c.path(), "2025-01-01T00:00:00Z").digest()
        );
        assert!(first.top.is_index());

        let release = &first.platforms[1];
        assert_eq!(release.manifest.layers.len(), 2);
        assert_eq!(release.config["architecture"], "arm64");
        assert_eq!(release.config["config"]["Labels"][LABEL_RELEASE], "4.18.0");
        assert!(
            release.config["config"]["Labels"][LABEL_BASE_IMAGE_DIGEST]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        assert_eq!(
            release.config["config"]["Entrypoint"],
            json!(["/usr/bin/cvo"])
        );
        assert_eq!(
            release.config["rootfs"]["diff_ids"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(release.config["history"].as_array().unwrap().len(), 2);

        let layout = OciLayout::open(&a.path().join("layout")).unwrap();
        let read = read_image(&layout, &first.top).unwrap();
        assert_eq!(read.platforms.len(), 2);
        assert_eq!(read.platforms[0].config, first.platforms[0].config);
    }
}
