//! Release images `cvo payload new` builds, `cvo payload info` inspects and `cvo payload mirror`
//! copies: reproducible digests, the round trip through a real registry (the extracted operator
//! binary runs, the pulled image renders as its source), several architectures in one index,
//! and a mirror between two real registries (Debian `docker-registry`, `hack/registry/up.sh`).
//!
//! The registry tests skip (with a message) when no registry can start, unless
//! `CVO_REQUIRE_REGISTRY=1`.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

use support::registry::{Registry, cvo, failure, stdout};

const BUNDLED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.18.0");
const PREVIOUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.17.0");

fn json(cmd: &mut Command) -> Value {
    serde_json::from_str(&stdout(cmd)).unwrap()
}

/// `payload new`'s line: `DIGEST NAME CREATED`.
fn built(out: &str) -> (String, String, String) {
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{out}");
    (
        fields[0].to_string(),
        fields[1].to_string(),
        fields[2].to_string(),
    )
}

/// A small executable of the running architecture, for the images whose binary is only
/// inspected.
fn small_binary() -> PathBuf {
    let path = PathBuf::from("/usr/bin/true");
    assert!(path.is_file(), "/usr/bin/true is missing");
    path
}

/// The Go name of the running architecture and of another one.
fn architectures() -> (&'static str, &'static str) {
    match std::env::consts::ARCH {
        "aarch64" => ("arm64", "amd64"),
        _ => ("amd64", "arm64"),
    }
}

/// A minimal static Linux executable for `arch` (amd64 or arm64) that exits 0: an ELF header,
/// one loadable segment and three instructions. Written out here because this machine cannot
/// build for another architecture; the image only carries it.
fn foreign_executable(arch: &str) -> Vec<u8> {
    let (machine, code): (u16, &[u8]) = match arch {
        // mov x0, #0; mov x8, #93 (exit); svc #0
        "arm64" => (
            183,
            &[
                0x00, 0x00, 0x80, 0xd2, 0xa8, 0x0b, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4,
            ],
        ),
        // mov edi, 0; mov eax, 60 (exit); syscall
        _ => (62, &[0xbf, 0, 0, 0, 0, 0xb8, 0x3c, 0, 0, 0, 0x0f, 0x05]),
    };
    let base: u64 = 0x40_0000;
    let size = (64 + 56 + code.len()) as u64;
    let mut elf = Vec::new();
    elf.extend_from_slice(b"\x7fELF\x02\x01\x01\x00");
    elf.extend_from_slice(&[0; 8]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    elf.extend_from_slice(&machine.to_le_bytes());
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&(base + 64 + 56).to_le_bytes()); // entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // program headers
    elf.extend_from_slice(&0u64.to_le_bytes()); // no section headers
    elf.extend_from_slice(&0u32.to_le_bytes());
    for half in [64u16, 56, 1, 0, 0, 0] {
        elf.extend_from_slice(&half.to_le_bytes());
    }
    elf.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    elf.extend_from_slice(&5u32.to_le_bytes()); // R+X
    for word in [0, base, base, size, size, 0x1000u64] {
        elf.extend_from_slice(&word.to_le_bytes());
    }
    elf.extend_from_slice(code);
    elf
}

fn write_executable(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The cvo binary under test without its debug information (a fifth of its size: what is
/// packed, pushed and pulled), or a copy when `strip` is missing.
fn stripped_cvo(tmp: &Path) -> PathBuf {
    let out = tmp.join("cvo");
    let exe = env!("CARGO_BIN_EXE_cvo");
    let stripped = std::process::Command::new("strip")
        .arg("-o")
        .arg(&out)
        .arg(exe)
        .status()
        .is_ok_and(|s| s.success());
    if !stripped {
        fs::copy(exe, &out).unwrap();
    }
    out
}

/// Every file under `dir`, by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                found.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    found
}

fn tag_image(info: &Value, tag: &str) -> String {
    info["references"]["spec"]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tag)
        .unwrap_or_else(|| panic!("no tag {tag}"))["from"]["name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A stored manifest of a registry (its file system), by digest.
fn registry_blob(registry: &Registry, digest: &str) -> Option<Value> {
    let hex = digest.strip_prefix("sha256:").unwrap();
    let path = registry
        .dir()
        .join("data/docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    fs::read(path)
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap())
}

/// Whether the registry's repository holds the manifest `digest`.
fn registry_has(registry: &Registry, repository: &str, digest: &str) -> bool {
    registry
        .dir()
        .join("data/docker/registry/v2/repositories")
        .join(repository)
        .join("_manifests/revisions/sha256")
        .join(digest.strip_prefix("sha256:").unwrap())
        .is_dir()
}

#[test]
fn the_same_inputs_give_the_same_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let build = |name: &str, extra: &[&str], epoch: Option<&str>| {
        let mut cmd = cvo(tmp.path());
        cmd.args(["payload", "new", "--from-dir", BUNDLED, "--operator-binary"])
            .arg(small_binary())
            .arg("--to")
            .arg(format!("oci-layout:{}", tmp.path().join(name).display()))
            .args(extra);
        if let Some(epoch) = epoch {
            cmd.env("SOURCE_DATE_EPOCH", epoch);
        }
        built(&stdout(&mut cmd))
    };
    let (first, name, created) = build("a", &[], None);
    assert_eq!(
        (name.as_str(), created.as_str()),
        ("4.18.0", "1970-01-01T00:00:00Z")
    );
    assert_eq!(build("b", &[], None).0, first, "two builds, one digest");
    let (dated, _, created) = build("c", &["--created", "2025-01-01T00:00:00Z"], None);
    assert_ne!(dated, first);
    assert_eq!(created, "2025-01-01T00:00:00Z");
    assert_eq!(
        build("d", &[], Some("1735689600")).0,
        dated,
        "SOURCE_DATE_EPOCH"
    );

    // The image: the operator image under the payload layer, with oc's labels.
    let info = json(
        cvo(tmp.path())
            .args(["payload", "info", "-o", "json"])
            .arg(format!("oci-layout:{}", tmp.path().join("b").display())),
    );
    assert_eq!(info["digest"], first.as_str());
    assert_eq!(info["version"], "4.18.0");
    assert_eq!(info["labels"]["io.openshift.release"], "4.18.0");
    let base = info["labels"]["io.openshift.release.base-image-digest"]
        .as_str()
        .unwrap();
    // An image layout has no repository: the operator image is named in the repository its
    // placeholder was, where a mirror or a push puts it.
    assert_eq!(
        tag_image(&info, "cluster-version-operator"),
        format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev@{base}")
    );
    let layout = tmp.path().join("b/blobs/sha256");
    let manifest: Value = serde_json::from_slice(
        &fs::read(layout.join(first.strip_prefix("sha256:").unwrap())).unwrap(),
    )
    .unwrap();
    let operator: Value = serde_json::from_slice(
        &fs::read(layout.join(base.strip_prefix("sha256:").unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 2);
    assert_eq!(manifest["layers"][0], operator["layers"][0]);
    assert_eq!(operator["layers"].as_array().unwrap().len(), 1);

    // Rebuilding from the release itself, with the same binary, gives the same release.
    let again = built(&stdout(
        cvo(tmp.path())
            .args(["payload", "new", "--from-release"])
            .arg(format!("oci-layout:{}", tmp.path().join("a").display()))
            .arg("--operator-binary")
            .arg(small_binary())
            .arg("--to")
            .arg(format!("oci-layout:{}", tmp.path().join("e").display())),
    ));
    assert_eq!(again.0, first, "a release rebuilt from itself is itself");
}

#[test]
fn a_new_release_from_a_release_takes_a_new_name_and_previous_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    stdout(
        cvo(tmp.path())
            .args(["payload", "new", "--from-dir", BUNDLED, "--operator-binary"])
            .arg(small_binary())
            .arg("--to")
            .arg(format!("oci-layout:{}", first.display())),
    );
    let second = tmp.path().join("second");
    let out = stdout(
        cvo(tmp.path())
            .args(["payload", "new", "--from-release"])
            .arg(format!("oci-layout:{}", first.display()))
            .args(["--name", "4.18.1", "--previous", "4.18.0,4.17.1"])
            .arg("--operator-binary")
            .arg(small_binary())
            .arg("--to")
            .arg(format!("oci-layout:{}", second.display())),
    );
    assert_eq!(built(&out).1, "4.18.1");
    let info = json(
        cvo(tmp.path())
            .args(["payload", "info", "-o", "json"])
            .arg(format!("oci-layout:{}:4.18.1", second.display())),
    );
    assert_eq!(info["version"], "4.18.1");
    assert_eq!(info["previous"], serde_json::json!(["4.17.1", "4.18.0"]));
    assert_eq!(info["references"]["metadata"]["name"], "4.18.1");
    assert_eq!(
        info["references"]["metadata"]["annotations"]["release.openshift.io/from-release"],
        format!("oci-layout:{}", first.display())
    );
    assert_eq!(
        info["channels"].as_array().unwrap().len(),
        3,
        "metadata kept"
    );

    let err = failure(
        cvo(tmp.path())
            .args(["payload", "new", "--from-dir", BUNDLED, "--name", "4.18"])
            .arg("--to")
            .arg(format!("oci-layout:{}", tmp.path().join("x").display())),
    );
    assert!(err.contains("--name must be a semantic version"), "{err}");
}

#[test]
fn mappings_and_binaries_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let to = format!("oci-layout:{}", tmp.path().join("out").display());
    let new = |extra: &[&str]| {
        let mut cmd = cvo(tmp.path());
        cmd.args(["payload", "new", "--from-dir", BUNDLED, "--to", &to])
            .args(extra);
        cmd
    };
    let err = failure(&mut new(&["--mapping", "ectd=quay.io/x/etcd:v1"]));
    assert!(
        err.contains("no image tag \"ectd\" (did you mean etcd?)"),
        "{err}"
    );
    let err = failure(&mut new(&["--mapping", "etcd"]));
    assert!(
        err.contains("all arguments must be valid SRC=DST mappings"),
        "{err}"
    );
    let err = failure(&mut new(&[
        "--mapping",
        "cluster-version-operator=quay.io/x/y:1",
    ]));
    assert!(err.contains("--operator-image"), "{err}");
    let err = failure(&mut new(&[
        "--mapping",
        "etcd=quay.io/x/etcd:v1",
        "--mapping",
        "etcd=a.io/b:c",
    ]));
    assert!(
        err.contains("each source tag may only be specified once: etcd"),
        "{err}"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = failure(&mut new(&[
        "--operator-binary",
        "/usr/bin/true",
        "--mapping",
        &format!("etcd=127.0.0.1:{port}/images/etcd:v1"),
    ]));
    assert!(
        err.contains("image-references tag \"etcd\": cannot find the digest of"),
        "{err}"
    );

    let (running, other) = architectures();
    let err = failure(&mut new(&[
        "--operator-binary",
        "/usr/bin/true",
        "--arch",
        other,
    ]));
    assert!(
        err.contains(&format!("is a binary for {running}, not {other}"))
            && err.contains(&format!("--arch {other}=PATH")),
        "{err}"
    );
    let err = failure(&mut new(&["--arch", "arm65=/usr/bin/true"]));
    assert!(
        err.contains("unknown architecture \"arm65\" (did you mean arm64?)"),
        "{err}"
    );
    let not_elf = tmp.path().join("script");
    write_executable(&not_elf, b"#!/bin/sh\nexit 0\n");
    let err = failure(new(&["--operator-binary"]).arg(&not_elf));
    assert!(err.contains("not an ELF executable"), "{err}");
    let err = failure(&mut new(&["--operator-binary", BUNDLED]));
    assert!(err.contains("not an executable file"), "{err}");
    assert!(
        !tmp.path().join("out/index.json").exists() || {
            let index = fs::read_to_string(tmp.path().join("out/index.json")).unwrap();
            !index.contains("ref.name")
        }
    );
}

#[test]
fn several_architectures_make_one_index_that_payload_info_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let (running, other) = architectures();
    let foreign = tmp.path().join(format!("cvo-{other}"));
    write_executable(&foreign, &foreign_executable(other));
    let layout = format!("oci-layout:{}", tmp.path().join("multi").display());
    let (index, _, _) = built(&stdout(
        cvo(tmp.path())
            .args(["payload", "new", "--from-dir", BUNDLED, "--to", &layout])
            .arg("--arch")
            .arg(format!("{running}=/usr/bin/true"))
            .arg("--arch")
            .arg(format!("{other}={}", foreign.display())),
    ));
    let info = |platform: &str| {
        json(
            cvo(tmp.path())
                .args(["payload", "info", &layout, "-o", "json", "--platform"])
                .arg(platform),
        )
    };
    let mine = info(&format!("linux/{running}"));
    let theirs = info(&format!("linux/{other}"));
    assert_eq!(mine["listDigest"], index.as_str());
    assert_eq!(theirs["listDigest"], index.as_str());
    assert_ne!(mine["digest"], theirs["digest"]);
    assert_eq!(theirs["architectures"], serde_json::json!([running, other]));
    assert_eq!(theirs["platform"], format!("linux/{other}"));
    // Both platforms name the one operator image index.
    assert_eq!(
        tag_image(&mine, "cluster-version-operator"),
        tag_image(&theirs, "cluster-version-operator")
    );
    let text = stdout(cvo(tmp.path()).args(["payload", "info", &layout]));
    assert!(text.contains(&format!("List Digest:   {index}")), "{text}");
    assert!(
        text.contains(&format!("Architectures: {running}, {other}")),
        "{text}"
    );

    // The other architecture's image carries its binary; a multi-architecture release says so.
    let pulled = tmp.path().join("pulled");
    stdout(
        cvo(tmp.path())
            .args(["payload", "pull", &layout, "--binary", "--platform"])
            .arg(format!("linux/{other}"))
            .arg("--to")
            .arg(&pulled),
    );
    assert_eq!(
        fs::read(pulled.join("usr/bin/cvo")).unwrap(),
        foreign_executable(other)
    );
    let metadata: Value = serde_json::from_slice(
        &fs::read(pulled.join("release-manifests/release-metadata")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        metadata["metadata"]["release.openshift.io/architecture"],
        "multi"
    );
    assert_eq!(metadata["version"], "4.18.0");
}

#[test]
fn payload_info_shows_images_and_compares_releases() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = stdout(cvo(tmp.path()).args(["payload", "info", BUNDLED, "--image-for", "etcd"]));
    assert_eq!(
        etcd.trim(),
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:635ad0dfb842c5b2f340883bb231703903ed3387311dcd0cf191f6e5fa0343a5"
    );
    let err = failure(cvo(tmp.path()).args(["payload", "info", BUNDLED, "--image-for", "ectd"]));
    assert!(
        err.contains("no image tag \"ectd\" exists in the release image"),
        "{err}"
    );
    assert!(err.contains("(did you mean etcd?)"), "{err}");
    let commits = stdout(cvo(tmp.path()).args(["payload", "info", BUNDLED, "--commits"]));
    assert!(
        commits.contains("  NAME ") && commits.contains(" REPO ") && commits.contains(" COMMIT"),
        "{commits}"
    );
    assert!(commits.contains(
        "https://github.com/openshift/cluster-etcd-operator d254b4b121caad237b065ae3d25d2a4adc946552"
    ) || commits.contains("d254b4b121caad237b065ae3d25d2a4adc946552"), "{commits}");
    let digests = stdout(cvo(tmp.path()).args(["payload", "info", BUNDLED]));
    assert!(digests.contains("\nImages:\n  NAME "), "{digests}");
    assert!(
        digests
            .contains(" sha256:635ad0dfb842c5b2f340883bb231703903ed3387311dcd0cf191f6e5fa0343a5\n")
    );
    let err = failure(cvo(tmp.path()).args(["payload", "info", BUNDLED, "--commits", "--size"]));
    assert!(
        err.contains("only one of --commits, --pullspecs, --size may be specified"),
        "{err}"
    );

    let diff = stdout(cvo(tmp.path()).args(["payload", "info", PREVIOUS, BUNDLED]));
    assert!(diff.contains("Name:  4.17.0  4.18.0"), "{diff}");
    assert!(diff.contains("Upgrade From:          Yes"), "{diff}");
    assert!(
        diff.contains("\nImages Rebuilt:\n  cluster-etcd-operator sha256:"),
        "{diff}"
    );
    assert!(
        diff.contains("\nManifests Added:\n")
            && diff.contains("  release-manifests/0000_50_deployment-targets_00_namespace.yaml\n"),
        "{diff}"
    );
    assert!(
        diff.contains(
            "Capabilities Added:\n  AgentInstall\n  DeploymentTargets\n  EdgeAgent\n  MachineAPI\n"
        ),
        "{diff}"
    );
    let as_json = json(cvo(tmp.path()).args(["payload", "info", PREVIOUS, BUNDLED, "-o", "json"]));
    assert_eq!(as_json["upgradeFrom"], true);
    assert!(
        as_json["manifestsRemoved"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().ends_with("_08_metrics-service.yaml")),
        "{as_json}"
    );
    let same = stdout(cvo(tmp.path()).args(["payload", "info", BUNDLED, BUNDLED]));
    assert!(
        !same.contains("Images Changed") && !same.contains("Manifests"),
        "{same}"
    );
}

#[test]
fn a_release_pushed_to_a_registry_runs_and_renders_as_its_source() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), None) else {
        return;
    };
    let binary = stripped_cvo(tmp.path());
    let repository = format!("{}/openshift/release", reg.addr);
    let (digest, name, _) = built(&stdout(
        cvo(tmp.path())
            .args(["payload", "new", "--from-dir", BUNDLED, "--to", &repository])
            .arg("--operator-binary")
            .arg(&binary),
    ));
    assert_eq!(name, "4.18.0");
    let by_digest = format!("{repository}@{digest}");

    // Pulled by tag: the same image; its binary is the one packed, and runs.
    let pulled = tmp.path().join("pulled");
    let out = stdout(
        cvo(tmp.path())
            .args([
                "payload",
                "pull",
                &format!("{repository}:4.18.0"),
                "--binary",
                "--to",
            ])
            .arg(&pulled),
    );
    assert!(out.contains(&digest), "{out}");
    let extracted = pulled.join("usr/bin/cvo");
    assert_eq!(fs::read(&extracted).unwrap(), fs::read(&binary).unwrap());
    let version = std::process::Command::new(&extracted)
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8(version.stdout).unwrap(),
        stdout(cvo(tmp.path()).arg("--version"))
    );

    // Every image is referenced by digest; the operator's is the release's base image, in
    // the release's repository, and shares the binary layer with it.
    let info = json(cvo(tmp.path()).args(["payload", "info", &by_digest, "-o", "json"]));
    let base = info["labels"]["io.openshift.release.base-image-digest"]
        .as_str()
        .unwrap()
        .to_string();
    let operator = format!("{repository}@{base}");
    assert_eq!(tag_image(&info, "cluster-version-operator"), operator);
    for tag in info["references"]["spec"]["tags"].as_array().unwrap() {
        assert!(
            tag["from"]["name"].as_str().unwrap().contains("@sha256:"),
            "{tag}"
        );
    }
    assert!(registry_has(&reg, "openshift/release", &base));
    let release_manifest = registry_blob(&reg, &digest).unwrap();
    let operator_manifest = registry_blob(&reg, &base).unwrap();
    assert_eq!(
        release_manifest["layers"][0],
        operator_manifest["layers"][0]
    );

    // The component controllers' Deployments run the operator image; the CVO's runs the
    // release image it is given, by digest.
    for file in [
        "0000_50_deployment-targets_06_deployment.yaml",
        "0000_50_agents_06_deployment.yaml",
    ] {
        let text = fs::read_to_string(pulled.join("release-manifests").join(file)).unwrap();
        assert!(
            text.contains(&format!("image: {operator}\n")),
            "{file}: {text}"
        );
    }
    let rendered = tmp.path().join("rendered");
    stdout(
        cvo(tmp.path())
            .args([
                "render",
                "--payload",
                &by_digest,
                "--release-image",
                &by_digest,
            ])
            .arg("--output-dir")
            .arg(&rendered),
    );
    let cvo_deployment = fs::read_to_string(
        rendered.join("manifests/0000_00_cluster-version-operator_30_deployment.yaml"),
    )
    .unwrap();
    assert!(
        cvo_deployment.contains(&format!("image: '{by_digest}'")),
        "{cvo_deployment}"
    );

    // `cvo render` of the pulled image is the source's, byte for byte, once the substitutions
    // `payload new` made are made in it: each changed image reference, and `0.0.1-snapshot`
    // in the files of release-manifests/.
    let source_info = json(cvo(tmp.path()).args(["payload", "info", BUNDLED, "-o", "json"]));
    let mut replacements = Vec::new();
    for tag in source_info["references"]["spec"]["tags"]
        .as_array()
        .unwrap()
    {
        let name = tag["name"].as_str().unwrap();
        let (from, to) = (
            tag["from"]["name"].as_str().unwrap(),
            tag_image(&info, name),
        );
        if from != to {
            replacements.push((from.to_string(), to));
        }
    }
    assert_eq!(
        replacements.len(),
        1,
        "only the operator image changes: {replacements:?}"
    );
    let render = |payload: &str, dir: &str| {
        let out = tmp.path().join(dir);
        stdout(
            cvo(tmp.path())
                // The components are opt-in: enabled, their Deployments and versioned files
                // exercise the substitutions too.
                .args(["render", "--payload", payload])
                .args([
                    "--additional-capabilities",
                    "DeploymentTargets,AgentInstall,EdgeAgent",
                    "--output-dir",
                ])
                .arg(&out),
        );
        files(&out.join("manifests"))
    };
    let from_image = render(&by_digest, "render-image");
    let from_source = render(BUNDLED, "render-source");
    assert_eq!(
        from_image.keys().collect::<Vec<_>>(),
        from_source.keys().collect::<Vec<_>>()
    );
    let release_files: Vec<String> = fs::read_dir(Path::new(BUNDLED).join("release-manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut changed = 0;
    for (file, source) in &from_source {
        let mut expected = String::from_utf8(source.clone()).unwrap();
        for (from, to) in &replacements {
            expected = expected.replace(from.as_str(), to);
        }
        if release_files.contains(file) {
            expected = expected.replace("0.0.1-snapshot", "4.18.0");
        }
        if expected.as_bytes() != source.as_slice() {
            changed += 1;
        }
        assert_eq!(
            String::from_utf8(from_image[file].clone()).unwrap(),
            expected,
            "{file}"
        );
    }
    assert!(
        changed >= 10,
        "the substitutions were exercised: {changed} files"
    );
}

/// A small payload whose image-references names three images, for the mirror.
fn small_payload(dir: &Path) {
    fs::create_dir_all(dir.join("manifests")).unwrap();
    fs::create_dir_all(dir.join("release-manifests")).unwrap();
    fs::write(
        dir.join("manifests/0000_00_cluster-version-operator_00_namespace.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-cluster-version\n",
    )
    .unwrap();
    let placeholder =
        |c: char| format!("quay.io/example/images@sha256:{}", c.to_string().repeat(64));
    fs::write(
        dir.join("release-manifests/0000_50_example_00_deployment.yaml"),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: example\n  namespace: example\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: {}\n      - name: b\n        image: {}\n      - name: c\n        image: {}\n",
            placeholder('a'),
            placeholder('b'),
            placeholder('c')
        ),
    )
    .unwrap();
    let tag = |name: &str, c: char| {
        format!(
            r#"{{"name":"{name}","annotations":{{"io.openshift.build.commit.id":"c{c}","io.openshift.build.source-location":"https://github.com/example/{name}"}},"from":{{"kind":"DockerImage","name":"{}"}}}}"#,
            placeholder(c)
        )
    };
    fs::write(
        dir.join("release-manifests/image-references"),
        format!(
            r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{{"name":"1.0.0"}},"spec":{{"tags":[{},{},{}]}}}}"#,
            tag("cluster-version-operator", 'a'),
            tag("console", 'b'),
            tag("etcd", 'c')
        ),
    )
    .unwrap();
    fs::write(
        dir.join("release-manifests/release-metadata"),
        r#"{"kind":"cincinnati-metadata-v0","version":"1.0.0","previous":[]}"#,
    )
    .unwrap();
}

#[test]
fn mirror_copies_a_release_and_its_images_between_registries_keeping_digests() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("a")).unwrap();
    fs::create_dir_all(tmp.path().join("b")).unwrap();
    let Some(source) = Registry::start_or_skip(&tmp.path().join("a"), None) else {
        return;
    };
    let Some(mirror) = Registry::start_or_skip(&tmp.path().join("b"), None) else {
        return;
    };
    let payload = tmp.path().join("payload");
    small_payload(&payload);
    // Two component images in the source registry (one of two platforms), named by tag.
    for (image, platforms) in [
        ("etcd", &["--platform", "linux/amd64"][..]),
        (
            "console",
            &["--platform", "linux/amd64", "--platform", "linux/arm64"][..],
        ),
    ] {
        stdout(
            cvo(tmp.path())
                .args(["payload", "push"])
                .arg(&payload)
                .arg(format!("{}/images/{image}:v1", source.addr))
                .args(platforms),
        );
    }
    let mappings = tmp.path().join("mappings");
    fs::write(
        &mappings,
        format!("# the console\nconsole={}/images/console:v1\n", source.addr),
    )
    .unwrap();
    let release_repo = format!("{}/openshift/release", source.addr);
    let out = cvo(tmp.path())
        .args(["payload", "new", "--from-dir"])
        .arg(&payload)
        .args(["--to", &release_repo, "--operator-binary", "/usr/bin/true"])
        .arg("--mapping")
        .arg(format!("etcd={}/images/etcd:v1", source.addr))
        .arg("--mapping-file")
        .arg(&mappings)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains(&format!("info: etcd: {}/images/etcd:v1 is ", source.addr)),
        "{log}"
    );
    let (release, _, _) = built(&String::from_utf8(out.stdout).unwrap());
    let info = json(cvo(tmp.path()).args([
        "payload",
        "info",
        &format!("{release_repo}:1.0.0"),
        "-o",
        "json",
    ]));
    let images: Vec<(String, String)> = ["cluster-version-operator", "console", "etcd"]
        .iter()
        .map(|t| (t.to_string(), tag_image(&info, t)))
        .collect();
    assert_eq!(
        info["references"]["spec"]["tags"][1]["annotations"]["io.openshift.release.override"],
        "true"
    );
    // The manifests reference the new images.
    let pullspecs = stdout(cvo(tmp.path()).args([
        "payload",
        "info",
        &format!("{release_repo}:1.0.0"),
        "--pullspecs",
    ]));
    for (_, image) in &images {
        assert!(
            image.starts_with(&source.addr) && image.contains("@sha256:"),
            "{image}"
        );
        assert!(pullspecs.contains(image.as_str()), "{pullspecs}");
    }
    let sizes = stdout(cvo(tmp.path()).args([
        "payload",
        "info",
        &format!("{release_repo}:1.0.0"),
        "--size",
    ]));
    assert!(
        sizes.contains("  NAME ") && sizes.contains(" across "),
        "{sizes}"
    );
    assert!(!sizes.contains("Warnings"), "{sizes}");

    let to = format!("{}/mirror", mirror.addr);
    let out = stdout(cvo(tmp.path()).args([
        "payload",
        "mirror",
        "--from",
        &format!("{release_repo}:1.0.0"),
        "--to",
        &to,
    ]));
    let arch = match std::env::consts::ARCH {
        "aarch64" => "aarch64",
        _ => "x86_64",
    };
    assert!(
        out.contains(&format!("Update image:  {to}:1.0.0-{arch}\n")),
        "{out}"
    );
    for (name, image) in &images {
        let digest = image.rsplit_once('@').unwrap().1;
        assert!(registry_has(&mirror, "mirror", digest), "{name} {digest}");
        assert!(
            mirror
                .dir()
                .join(format!(
                    "data/docker/registry/v2/repositories/mirror/_manifests/tags/1.0.0-{arch}-{name}"
                ))
                .is_dir(),
            "{name}"
        );
    }
    assert!(registry_has(&mirror, "mirror", &release));
    // The console's index came with both platforms.
    let console = images[1].1.rsplit_once('@').unwrap().1;
    let index = registry_blob(&mirror, console).unwrap();
    for platform in index["manifests"].as_array().unwrap() {
        assert!(registry_has(
            &mirror,
            "mirror",
            platform["digest"].as_str().unwrap()
        ));
    }
    // The ImageDigestMirrorSet sends every source repository to the mirror.
    let idms_text = out
        .split("use the following to create an ImageDigestMirrorSet:\n\n")
        .nth(1)
        .unwrap();
    let idms: Value = serde_saphyr::from_str(idms_text).unwrap();
    assert_eq!(idms["kind"], "ImageDigestMirrorSet");
    let sources: Vec<&str> = idms["spec"]["imageDigestMirrors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["mirrors"], serde_json::json!([to]));
            m["source"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        sources,
        [
            format!("{}/images/console", source.addr),
            format!("{}/images/etcd", source.addr),
            format!("{}/openshift/release", source.addr),
        ]
    );

    // Carried in a directory: the release and its images, by digest.
    let dir = tmp.path().join("carried");
    let out = stdout(
        cvo(tmp.path())
            .args([
                "payload",
                "mirror",
                "--from",
                &format!("{release_repo}:1.0.0"),
                "--to-dir",
            ])
            .arg(&dir),
    );
    let carried = format!("oci-layout:{}:1.0.0-{arch}", dir.display());
    assert!(out.contains(&format!("Update image:  {carried}")), "{out}");

    // With the source registry gone, the mirror serves the release by the same digest...
    drop(source);
    let mirrored = format!("{to}@{release}");
    let pulled = tmp.path().join("pulled");
    stdout(
        cvo(tmp.path())
            .args(["payload", "pull", &mirrored, "--binary", "--to"])
            .arg(&pulled)
            .env("CVO_CACHE_DIR", tmp.path().join("cache2")),
    );
    assert_eq!(
        fs::read(pulled.join("usr/bin/cvo")).unwrap(),
        fs::read(small_binary()).unwrap()
    );

    // ...and the directory uploads to another repository, the same digests.
    let out = stdout(cvo(tmp.path()).args([
        "payload",
        "mirror",
        "--from",
        &carried,
        "--to",
        &format!("{}/second", mirror.addr),
    ]));
    assert!(out.contains("Success"), "{out}");
    for (_, image) in &images {
        assert!(registry_has(
            &mirror,
            "second",
            image.rsplit_once('@').unwrap().1
        ));
    }
    assert!(registry_has(&mirror, "second", &release));
}
