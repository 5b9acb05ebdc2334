//! The fuzz targets of `cvo`, as plain functions over a byte buffer.
//!
//! Each `src/bin/<target>.rs` wraps one of them in afl.rs' `fuzz!` loop (built and run by
//! `hack/fuzz.sh` with `cargo afl`). Outside `afl-fuzz`, such a binary runs its function once
//! on its standard input, which reproduces a finding: `fuzz/target/release/yaml < crash`.
//! A target returns normally on any
//! input: it panics (which AFL counts as a crash) only when the library panics or breaks one
//! of the invariants checked here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::hint::black_box;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cvo::capability::{Capability, Registry};
use cvo::include::{self, CapabilityFilter, ComponentOverride, InclusionConfig};
use cvo::manifest::{self, ManifestDir};
use cvo::oci::extract::{self, Budget, Limits, PAYLOAD_DIRS};
use cvo::payload::{self, RenderConfig, template};
use cvo::yaml;

/// The YAML reader: cut the file into documents as the payload loader does, read each one
/// with go-yaml semantics, write it as Go JSON, and look for repeated keys.
pub fn fuzz_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(chunks) = yaml::split_stream(text) else {
        return;
    };
    for chunk in chunks {
        if chunk.json.is_some() {
            continue;
        }
        match yaml::parse_document_noting_repeats(chunk.text) {
            Ok((node, repeats)) => {
                let json = yaml::go_json(&node);
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(&json) {
                    panic!(
                        "go_json wrote invalid JSON ({e}): {}",
                        String::from_utf8_lossy(&json)
                    );
                }
                let duplicates = yaml::duplicate_keys(chunk.text);
                // `cvo validate` only looks for repeated keys where reading noted some.
                assert!(
                    repeats || duplicates.is_empty(),
                    "reading noted no repeated key, but duplicate_keys found {duplicates:?}"
                );
                black_box(node.into_value());
            }
            Err(e) => {
                black_box(e.to_string());
            }
        }
    }
}

/// The JSON reader: JSON document streams (the loader reads a file whose first character is
/// `{` as concatenated JSON values), release-metadata and image-references.
pub fn fuzz_json(data: &[u8]) {
    let version = match payload::parse_release_metadata(data) {
        Ok((release, _warnings)) => release.version,
        Err(e) => {
            assert!(!e.is_empty());
            "4.18.0".to_string()
        }
    };
    // image-references is JSON or YAML; its check against the release version too.
    let _ = black_box(payload::parse_image_references(data, Some(&version)));
    json_stream(data);
}

fn json_stream(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if !yaml::is_json_stream(text) {
        return;
    }
    let Ok(chunks) = yaml::split_stream(text) else {
        return;
    };
    for chunk in chunks {
        // Each chunk's text is the value's own bytes: it reads back to the same value.
        let value = chunk
            .json
            .expect("a JSON stream's chunks carry their value");
        let again: serde_json::Value = serde_json::from_str(chunk.text)
            .unwrap_or_else(|e| panic!("chunk {:?} does not read back: {e}", chunk.text));
        assert_eq!(
            again, value,
            "chunk {:?} reads back differently",
            chunk.text
        );
        let node = yaml::Node::from(value);
        black_box(yaml::go_json(&node));
    }
    let (manifests, errors) = manifest::parse_file(
        "fuzz.json",
        ManifestDir::ReleaseManifests,
        Arc::new(text.to_string()),
    );
    check_manifests(&manifests, &errors);
}

/// The Go-template subset of the CVO's own manifests, then parsing what it rendered as the
/// loader does.
pub fn fuzz_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let config = render_config();
    match template::render("fuzz.yaml", text, config) {
        Ok(rendered) => {
            if !text.contains("{{") {
                assert_eq!(rendered, text, "text without actions must render unchanged");
            }
            let (manifests, errors) =
                manifest::parse_file("fuzz.yaml", ManifestDir::Manifests, Arc::new(rendered));
            check_manifests(&manifests, &errors);
        }
        Err(e) => assert!(e.starts_with("template: fuzz.yaml:"), "{e}"),
    }
}

fn render_config() -> &'static RenderConfig {
    static CONFIG: OnceLock<RenderConfig> = OnceLock::new();
    CONFIG.get_or_init(|| RenderConfig {
        release_image: "quay.io/openshift-release-dev/ocp-release@sha256:0123".to_string(),
        cluster_profile: include::DEFAULT_CLUSTER_PROFILE.to_string(),
        images: BTreeMap::from([
            (
                "cluster-version-operator".to_string(),
                "quay.io/cvo@sha256:1".to_string(),
            ),
            ("cli".to_string(), "quay.io/cli@sha256:2".to_string()),
        ]),
    })
}

/// Reading documents into manifests (identity, annotations) and the inclusion rules under a
/// few configurations.
pub fn fuzz_manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (manifests, errors) = manifest::parse_file(
        "0000_50_fuzz.yaml",
        ManifestDir::ReleaseManifests,
        Arc::new(text.to_string()),
    );
    check_manifests(&manifests, &errors);
    for m in &manifests {
        for config in inclusion_configs() {
            match include::include(m, config) {
                Ok(()) => {}
                Err(exclusion) => {
                    black_box(exclusion.to_string());
                    black_box(exclusion.category());
                }
            }
            let _ = black_box(include::include(m, &config.load_time()));
        }
    }
}

/// What every parse must give: documents whose kept bytes are JSON, errors that print.
fn check_manifests(manifests: &[manifest::Manifest], errors: &[manifest::ParseError]) {
    for (i, m) in manifests.iter().enumerate() {
        black_box(m.describe());
        black_box(m.task_string(i + 1, manifests.len()));
        black_box(m.path());
        black_box(m.capabilities());
        assert!(
            m.original_text().len() <= m.file_text().len(),
            "a document's text is part of its file"
        );
        // The raw bytes kept for the object are JSON.
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&m.raw) {
            panic!(
                "manifest {} keeps raw bytes that are not JSON ({e}): {}",
                m.describe(),
                String::from_utf8_lossy(&m.raw)
            );
        }
        black_box(m.object());
    }
    for e in errors {
        black_box(e.to_string());
        black_box(e.location());
        black_box(e.help());
    }
}

fn inclusion_configs() -> &'static [InclusionConfig] {
    static CONFIGS: OnceLock<Vec<InclusionConfig>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let registry = Registry::standard();
        let known: BTreeSet<Capability> = registry.known().iter().cloned().collect();
        let enabled: BTreeSet<Capability> = known.iter().step_by(2).cloned().collect();
        let gates: BTreeSet<String> = ["GatewayAPI", "MachineAPIMigration", "Example"]
            .into_iter()
            .map(str::to_string)
            .collect();
        vec![
            // No filter at all.
            InclusionConfig::default(),
            // A default install, as loading sees it.
            InclusionConfig {
                required_feature_set: Some(String::new()),
                profile: Some(include::DEFAULT_CLUSTER_PROFILE.to_string()),
                major_version: Some(4),
                enabled_feature_gates: Some(gates.clone()),
                exclude_identifier: Some("fuzz".to_string()),
                ..InclusionConfig::default()
            },
            // Tech preview on a hosted control plane, with capabilities and overrides.
            InclusionConfig {
                required_feature_set: Some("TechPreviewNoUpgrade".to_string()),
                profile: Some("ibm-cloud-managed".to_string()),
                major_version: Some(5),
                capabilities: Some(CapabilityFilter {
                    known_capabilities: known,
                    enabled_capabilities: enabled,
                }),
                overrides: Some(vec![
                    ComponentOverride {
                        kind: "ConfigMap".to_string(),
                        group: String::new(),
                        namespace: "openshift-fuzz".to_string(),
                        name: "a".to_string(),
                        unmanaged: true,
                    },
                    ComponentOverride {
                        kind: "Namespace".to_string(),
                        group: String::new(),
                        namespace: "ignored".to_string(),
                        name: "openshift-fuzz".to_string(),
                        unmanaged: true,
                    },
                ]),
                ..InclusionConfig::default()
            },
            // Unknown capabilities allowed, nothing enabled.
            InclusionConfig {
                capabilities: Some(CapabilityFilter::default()),
                allow_unknown_capabilities: true,
                enabled_feature_gates: Some(BTreeSet::new()),
                major_version: Some(0),
                ..InclusionConfig::default()
            },
        ]
    })
}

/// OCI layer extraction: the input is one layer (tar, or tar+gzip when it starts with the gzip
/// magic) applied over a small base layer in a fresh directory; tar headers get their checksum
/// fixed first. Whatever the layer holds,
/// nothing may be written outside the root, nothing outside the payload directories, no
/// symlink may point out of the root, and no special file may appear.
pub fn fuzz_extract(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    fs::create_dir(&root).unwrap();
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), b"secret").unwrap();
    let limits = Limits {
        max_bytes: 8 << 20,
        max_entries: 2_000,
    };
    let mut budget = Budget::default();
    extract::apply_layer(base_layer(), "sha256:base", &root, &limits, &mut budget)
        .expect("the base layer applies");
    let result = if data.starts_with(&[0x1f, 0x8b]) {
        extract::apply_layer(
            flate2::read::GzDecoder::new(data),
            "sha256:fuzz",
            &root,
            &limits,
            &mut budget,
        )
    } else {
        let data = with_header_checksums(data);
        extract::apply_layer(&data[..], "sha256:fuzz", &root, &limits, &mut budget)
    };
    if let Err(e) = result {
        black_box(e.to_string());
    }
    check_outside(&outside);
    check_root(&root);
}

/// The input with a valid checksum in each tar header (a 512-byte block with the `ustar`
/// magic). Without CmpLog (which needs LLVM plugins and nightly), AFL cannot solve the checksum,
/// so almost every mutation of a header stopped at "checksum mismatch": with the PAX-size seed,
/// 4 minutes did not reach the overflow that `a_pax_size_record_is_the_size_counted` covers.
/// Gzip input is left as it is (its checksums are the seeds').
fn with_header_checksums(data: &[u8]) -> Vec<u8> {
    let mut data = data.to_vec();
    for block in data.chunks_exact_mut(512) {
        if &block[257..262] == b"ustar" {
            block[148..156].fill(b' ');
            let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
            block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        }
    }
    data
}

/// The lower layer every input is applied on: files, a nested directory and a symlink in each
/// payload directory, for whiteouts and replacements to act on.
fn base_layer() -> &'static [u8] {
    static LAYER: OnceLock<Vec<u8>> = OnceLock::new();
    LAYER.get_or_init(|| {
        let mut builder = tar::Builder::new(Vec::new());
        for dir in PAYLOAD_DIRS {
            append(
                &mut builder,
                &format!("{dir}/"),
                tar::EntryType::Directory,
                b"",
                None,
            );
            append(
                &mut builder,
                &format!("{dir}/a.yaml"),
                tar::EntryType::Regular,
                b"a: 1\n",
                None,
            );
            append(
                &mut builder,
                &format!("{dir}/sub/"),
                tar::EntryType::Directory,
                b"",
                None,
            );
            append(
                &mut builder,
                &format!("{dir}/sub/b.yaml"),
                tar::EntryType::Regular,
                b"b: 2\n",
                None,
            );
            append(
                &mut builder,
                &format!("{dir}/link"),
                tar::EntryType::Symlink,
                b"",
                Some("a.yaml"),
            );
        }
        builder.into_inner().expect("an in-memory tar")
    })
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    kind: tar::EntryType,
    content: &[u8],
    link: Option<&str>,
) {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_size(content.len() as u64);
    header.set_mode(if kind == tar::EntryType::Directory {
        0o755
    } else {
        0o644
    });
    if let Some(link) = link {
        header.set_link_name(link).unwrap();
    }
    builder.append_data(&mut header, path, content).unwrap();
}

fn check_outside(outside: &Path) {
    let names: Vec<_> = fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["secret"], "the layer wrote outside the root");
    let mut content = Vec::new();
    fs::File::open(outside.join("secret"))
        .unwrap()
        .read_to_end(&mut content)
        .unwrap();
    assert_eq!(
        content, b"secret",
        "the layer changed a file outside the root"
    );
}

fn check_root(root: &Path) {
    for entry in fs::read_dir(root).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            PAYLOAD_DIRS.iter().any(|d| name == *d),
            "extracted {name:?} outside the payload directories"
        );
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let meta = fs::symlink_metadata(&dir).unwrap();
        if !meta.is_dir() {
            check_entry(root, &dir, &meta);
            continue;
        }
        for entry in fs::read_dir(&dir).unwrap() {
            stack.push(entry.unwrap().path());
        }
    }
}

fn check_entry(root: &Path, path: &Path, meta: &fs::Metadata) {
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs::read_link(path).unwrap();
        let resolved = lexical(path.parent().unwrap(), &target);
        assert!(
            resolved.as_ref().is_some_and(|r| r.starts_with(root)),
            "symlink {} -> {} leaves the root",
            path.display(),
            target.display()
        );
        // Followed all the way (through other symlinks), it stays inside too.
        if let Ok(real) = fs::canonicalize(path) {
            let real_root = fs::canonicalize(root).unwrap();
            assert!(
                real.starts_with(&real_root),
                "symlink {} resolves to {} outside the root",
                path.display(),
                real.display()
            );
        }
    } else {
        assert!(kind.is_file(), "{} is a special file", path.display());
    }
}

/// `base` joined with `target` lexically (`..` pops), or `None` for an absolute target.
fn lexical(base: &Path, target: &Path) -> Option<PathBuf> {
    let mut out = base.to_path_buf();
    for part in target.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}
