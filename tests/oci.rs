//! Release images as OCI image layouts: `payload push|pull|info`, `--payload oci-layout:`, the
//! cache, and hostile layouts refused without leaving anything behind.

mod support;
use support::raw_tar::raw_tar;

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};
use sha2::Digest as _;

const BUNDLED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.18.0");

fn cvo(cache: &Path) -> Command {
    let mut cmd = Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("CLUSTER_PROFILE")
        .env_remove("RUST_LOG")
        .env_remove("CVO_OCI_MAX_BYTES")
        .env_remove("CVO_OCI_MAX_ENTRIES")
        .env("CVO_CACHE_DIR", cache);
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

fn stderr_failure(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().code(1).get_output().stderr.clone()).unwrap()
}

fn cache_entries(cache: &Path) -> Vec<String> {
    match fs::read_dir(cache) {
        Ok(listing) => listing
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => vec![],
    }
}

fn push_bundled(tmp: &Path, cache: &Path, extra: &[&str]) -> String {
    let layout = tmp.join("image");
    let dest = format!("oci-layout:{}:4.18.0", layout.display());
    let mut cmd = cvo(cache);
    cmd.args(["payload", "push", BUNDLED, &dest]).args(extra);
    assert!(stdout(&mut cmd).contains("version 4.18.0"));
    dest
}

#[test]
fn push_then_pull_gives_back_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let src = push_bundled(tmp.path(), &cache, &[]);
    let out = tmp.path().join("pulled");
    stdout(
        cvo(&cache)
            .args(["payload", "pull", &src, "--to"])
            .arg(&out),
    );
    assert_eq!(
        support::tree_files(&out),
        support::tree_files(Path::new(BUNDLED))
    );
    // The image config carries the version label; the index entry the tag.
    let index: Value =
        serde_json::from_slice(&fs::read(tmp.path().join("image/index.json")).unwrap()).unwrap();
    assert_eq!(
        index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
        "4.18.0"
    );
    // Pushing again is deterministic: same digest, one index entry.
    push_bundled(tmp.path(), &cache, &[]);
    let again: Value =
        serde_json::from_slice(&fs::read(tmp.path().join("image/index.json")).unwrap()).unwrap();
    assert_eq!(index, again);
    // Pulling into a non-empty directory is refused.
    let err = stderr_failure(
        cvo(&cache)
            .args(["payload", "pull", &src, "--to"])
            .arg(&out),
    );
    assert!(err.contains("already exists and is not empty"), "{err}");
}

#[test]
fn payload_commands_read_oci_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let src = push_bundled(tmp.path(), &cache, &[]);
    let from_image = tmp.path().join("from-image");
    let from_dir = tmp.path().join("from-dir");
    stdout(
        cvo(&cache)
            .args(["render", "--payload", &src, "--output-dir"])
            .arg(&from_image),
    );
    stdout(
        cvo(&cache)
            .args(["render", "--payload", BUNDLED, "--output-dir"])
            .arg(&from_dir),
    );
    assert!(!support::tree_files(&from_image).is_empty());
    assert_eq!(
        support::tree_files(&from_image),
        support::tree_files(&from_dir)
    );
    let hash_image = stdout(cvo(&cache).args(["hash", "--payload", &src]));
    let hash_dir = stdout(cvo(&cache).args(["hash", "--payload", BUNDLED]));
    assert_eq!(hash_image, hash_dir);

    // Nothing listens on port 1: a registry reference is pulled, and the failure says from where.
    let err =
        stderr_failure(cvo(&cache).args(["render", "--payload", "docker://127.0.0.1:1/a/b:1"]));
    assert!(err.contains("pull 127.0.0.1:1/a/b:1"), "{err}");
    let missing_tag = format!("oci-layout:{}:nope", tmp.path().join("image").display());
    let err = stderr_failure(cvo(&cache).args(["hash", "--payload", &missing_tag]));
    assert!(
        err.contains("no image tagged \"nope\" (tags: 4.18.0)"),
        "{err}"
    );
}

#[test]
fn a_multi_platform_index_gives_the_requested_platform() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let src = push_bundled(
        tmp.path(),
        &cache,
        &["--platform", "linux/amd64", "--platform", "linux/arm64"],
    );
    let info = |platform: &str| -> Value {
        let out = stdout(cvo(&cache).args([
            "payload",
            "info",
            &src,
            "-o",
            "json",
            "--platform",
            platform,
        ]));
        serde_json::from_str(&out).unwrap()
    };
    let amd = info("linux/amd64");
    let arm = info("linux/arm64");
    assert_eq!(arm["platform"], "linux/arm64");
    assert_eq!(amd["platform"], "linux/amd64");
    assert_ne!(amd["digest"], arm["digest"]);
    assert_eq!(arm["architectures"], json!(["amd64", "arm64"]));
    assert_eq!(arm["version"], "4.18.0");
    assert_eq!(arm["manifests"], 97);
    assert_eq!(
        arm["channels"],
        json!(["candidate-4.18", "fast-4.18", "stable-4.18"])
    );
    let err =
        stderr_failure(cvo(&cache).args(["payload", "info", &src, "--platform", "linux/s390x"]));
    assert!(
        err.contains("no image for platform linux/s390x (offered: linux/amd64, linux/arm64)"),
        "{err}"
    );
}

#[test]
fn the_cache_serves_a_second_load_without_extracting() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let src = push_bundled(tmp.path(), &cache, &[]);
    let load = || {
        let out = cvo(&cache)
            .env("RUST_LOG", "info")
            .args(["hash", "--payload", &src])
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8(out.stderr).unwrap()
    };
    assert!(load().contains("extracted release image payload"));
    let entries = cache_entries(&cache);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].starts_with("sha256-"));
    let dir = cache.join(&entries[0]);
    let before = fs::metadata(dir.join("release-manifests")).unwrap();
    assert!(!load().contains("extracted"));
    let after = fs::metadata(dir.join("release-manifests")).unwrap();
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );
    assert_eq!(cache_entries(&cache).len(), 1);
}

#[test]
fn docker_media_types_and_whiteouts_across_layers() {
    use std::io::Write as _;
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let metadata: &[u8] = br#"{"kind":"cincinnati-metadata-v0","version":"4.18.1"}"#;
    let cm = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\n";
    let first = raw_tar(&[
        ("./", tar::EntryType::Directory, b"", None),
        ("./usr/bin/cvo", tar::EntryType::Regular, b"binary", None),
        ("./release-manifests/", tar::EntryType::Directory, b"", None),
        (
            "./release-manifests/release-metadata",
            tar::EntryType::Regular,
            metadata,
            None,
        ),
        (
            "./release-manifests/0000_50_a.yaml",
            tar::EntryType::Regular,
            cm,
            None,
        ),
        (
            "./release-manifests/0000_50_b.yaml",
            tar::EntryType::Regular,
            cm,
            None,
        ),
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&first).unwrap();
    let first = gz.finish().unwrap();
    let second = raw_tar(&[(
        "release-manifests/.wh.0000_50_a.yaml",
        tar::EntryType::Regular,
        b"",
        None,
    )]);
    let layout = layout_with_layers(
        tmp.path(),
        "application/vnd.docker.distribution.manifest.v2+json",
        &[
            ("application/vnd.docker.image.rootfs.diff.tar.gzip", &first),
            ("application/vnd.docker.image.rootfs.diff.tar", &second),
        ],
    );
    let out = tmp.path().join("out");
    let src = format!("oci-layout:{}", layout.display());
    stdout(
        cvo(&cache)
            .args(["payload", "pull", &src, "--to"])
            .arg(&out),
    );
    let names: Vec<PathBuf> = support::tree_files(&out)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        names,
        vec![
            PathBuf::from("release-manifests/0000_50_b.yaml"),
            PathBuf::from("release-manifests/release-metadata"),
        ]
    );
    let info: Value = serde_json::from_str(&stdout(
        cvo(&cache).args(["payload", "info", &src, "-o", "json"]),
    ))
    .unwrap();
    assert_eq!(info["version"], "4.18.1");
    assert_eq!(info["manifests"], 1);
}

// ---- hostile layouts -------------------------------------------------------------------------

fn sha(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

fn blob(layout: &Path, media: &str, bytes: &[u8]) -> Value {
    let digest = sha(bytes);
    let dir = layout.join("blobs/sha256");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(&digest[7..]), bytes).unwrap();
    json!({"mediaType": media, "digest": digest, "size": bytes.len()})
}

/// A layout with one image whose single (uncompressed) layer is `layer`.
fn layout_with_layer(root: &Path, layer: &[u8]) -> PathBuf {
    layout_with_layers(
        root,
        "application/vnd.oci.image.manifest.v1+json",
        &[("application/vnd.oci.image.layer.v1.tar", layer)],
    )
}

fn layout_with_layers(root: &Path, manifest_media: &str, layers: &[(&str, &[u8])]) -> PathBuf {
    let layout = root.join("hostile");
    let layers: Vec<Value> = layers
        .iter()
        .map(|(media, bytes)| blob(&layout, media, bytes))
        .collect();
    let config = blob(
        &layout,
        "application/vnd.oci.image.config.v1+json",
        br#"{"architecture":"amd64","os":"linux"}"#,
    );
    let manifest = json!({"schemaVersion": 2, "mediaType": manifest_media,
        "config": config, "layers": layers});
    let manifest = blob(
        &layout,
        manifest_media,
        &serde_json::to_vec(&manifest).unwrap(),
    );
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&json!({"schemaVersion": 2, "manifests": [manifest]})).unwrap(),
    )
    .unwrap();
    layout
}

fn refused(layout: &Path, cache: &Path, env: &[(&str, &str)], expected: &str) {
    let src = format!("oci-layout:{}", layout.display());
    let mut cmd = cvo(cache);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let err = stderr_failure(cmd.args(["hash", "--payload", &src]));
    assert!(err.contains(expected), "{err} should contain {expected:?}");
    assert!(err.contains(&format!("payload {src}")), "{err}");
    assert_eq!(
        cache_entries(cache),
        Vec::<String>::new(),
        "the cache must be left empty"
    );
}

#[test]
fn a_tampered_layer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    push_bundled(tmp.path(), &cache, &[]);
    let layout = tmp.path().join("image");
    let manifest_index: Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest_digest = manifest_index["manifests"][0]["digest"].as_str().unwrap();
    let manifest: Value = serde_json::from_slice(
        &fs::read(layout.join("blobs/sha256").join(&manifest_digest[7..])).unwrap(),
    )
    .unwrap();
    let layer_digest = manifest["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let layer_path = layout.join("blobs/sha256").join(&layer_digest[7..]);
    let mut bytes = fs::read(&layer_path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&layer_path, bytes).unwrap();
    refused(
        &layout,
        &cache,
        &[],
        &format!("blob {layer_digest}: digest mismatch: the content hashes to sha256:"),
    );
}

#[test]
fn a_traversal_entry_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let layer = raw_tar(&[
        (
            "release-manifests/a.yaml",
            tar::EntryType::Regular,
            b"a",
            None,
        ),
        (
            "release-manifests/../../../escaped",
            tar::EntryType::Regular,
            b"x",
            None,
        ),
    ]);
    let layout = layout_with_layer(tmp.path(), &layer);
    refused(
        &layout,
        &cache,
        &[],
        &format!(
            "layer {}: entry \"release-manifests/../../../escaped\": path contains \"..\"",
            sha(&layer)
        ),
    );
    assert!(!tmp.path().join("escaped").exists());
}

#[test]
fn an_escaping_symlink_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let layer = raw_tar(&[
        (
            "release-manifests/evil",
            tar::EntryType::Symlink,
            b"",
            Some("../../.."),
        ),
        (
            "release-manifests/evil/escaped",
            tar::EntryType::Regular,
            b"x",
            None,
        ),
    ]);
    let layout = layout_with_layer(tmp.path(), &layer);
    refused(
        &layout,
        &cache,
        &[],
        "entry \"release-manifests/evil\": symlink to \"../../..\" escapes the payload root",
    );
    assert!(!tmp.path().join("escaped").exists());
}

#[test]
fn an_oversize_layer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    push_bundled(tmp.path(), &cache, &[]);
    refused(
        &tmp.path().join("image"),
        &cache,
        &[("CVO_OCI_MAX_BYTES", "10000")],
        "is larger than the limit of 10000 bytes uncompressed",
    );
    refused(
        &tmp.path().join("image"),
        &cache,
        &[("CVO_OCI_MAX_ENTRIES", "5")],
        "the image has more than 5 entries",
    );
}
