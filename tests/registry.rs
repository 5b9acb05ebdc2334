//! Release images in a real registry (Debian `docker-registry`, started per test by
//! `hack/registry/up.sh` on 127.0.0.1): push/pull round trips, platform choice, basic auth,
//! moved tags, and pulls by digest served from the cache once the registry is gone.
//!
//! Skips (with a message) when the registry cannot start, unless `CVO_REQUIRE_REGISTRY=1`.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use assert_cmd::Command;
use serde_json::Value;

const BUNDLED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/payloads/4.18.0");
use support::registry::{Registry, cvo, failure, stdout};

/// The digest `payload push` reports ("... as sha256:...").
fn pushed_digest(out: &str) -> String {
    out.trim().rsplit(' ').next().unwrap().to_string()
}

fn info(tmp: &Path, source: &str, extra: &[&str]) -> Value {
    let out = stdout(
        cvo(tmp)
            .args(["payload", "info", source, "-o", "json"])
            .args(extra),
    );
    serde_json::from_str(&out).unwrap()
}

#[test]
fn push_then_pull_round_trips_the_bundled_payload() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), None) else {
        return;
    };
    let reference = format!("{}/openshift/release:4.18.0", reg.addr);
    let started = Instant::now();
    let out = stdout(cvo(tmp.path()).args(["payload", "push", BUNDLED, &reference]));
    let push_time = started.elapsed();
    assert!(out.contains("version 4.18.0"), "{out}");
    let digest = pushed_digest(&out);

    let pulled = tmp.path().join("pulled");
    let started = Instant::now();
    stdout(
        cvo(tmp.path())
            .args(["payload", "pull", &format!("docker://{reference}"), "--to"])
            .arg(&pulled),
    );
    let cold = started.elapsed();
    assert_eq!(
        support::tree_files(&pulled),
        support::tree_files(Path::new(BUNDLED))
    );

    let started = Instant::now();
    let info = info(
        tmp.path(),
        &format!("{}/openshift/release@{digest}", reg.addr),
        &[],
    );
    let cached = started.elapsed();
    assert_eq!(info["digest"], digest.as_str());
    assert_eq!(info["version"], "4.18.0");
    eprintln!(
        "timings: push {push_time:?}, cold pull {cold:?}, cached load (info by digest) {cached:?}"
    );

    // The same payload under another tag: same digest, and no blob is uploaded again.
    let again = cvo(tmp.path())
        .args(["payload", "push", BUNDLED])
        .arg(format!("{}/openshift/release:again", reg.addr))
        .env("RUST_LOG", "cvo=debug")
        .assert()
        .success()
        .get_output()
        .clone();
    let (out, log) = (
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr),
    );
    assert_eq!(pushed_digest(&out), digest);
    assert_eq!(
        log.matches("the registry has the blob already").count(),
        2,
        "layer and config are skipped: {log}"
    );

    // --payload with a registry reference renders the same as the directory.
    let hash_reg = stdout(cvo(tmp.path()).args(["hash", "--payload", &reference]));
    let hash_dir = stdout(cvo(tmp.path()).args(["hash", "--payload", BUNDLED]));
    assert_eq!(hash_reg, hash_dir);
}

#[test]
fn a_multi_arch_push_gives_the_requested_platform() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), None) else {
        return;
    };
    let reference = format!("{}/openshift/release:multi", reg.addr);
    stdout(cvo(tmp.path()).args([
        "payload",
        "push",
        BUNDLED,
        &reference,
        "--platform",
        "linux/amd64",
        "--platform",
        "linux/arm64",
    ]));
    let arm = info(tmp.path(), &reference, &["--platform", "linux/arm64"]);
    assert_eq!(arm["platform"], "linux/arm64");
    assert_eq!(arm["architectures"], serde_json::json!(["amd64", "arm64"]));
    let amd = info(tmp.path(), &reference, &["--platform", "linux/amd64"]);
    assert_eq!(amd["platform"], "linux/amd64");
    assert_ne!(arm["digest"], amd["digest"]);
    let err =
        failure(cvo(tmp.path()).args(["payload", "info", &reference, "--platform", "linux/s390x"]));
    assert!(
        err.contains("no image for platform linux/s390x (offered: linux/amd64, linux/arm64)"),
        "{err}"
    );
}

#[test]
fn basic_auth_through_a_docker_config() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), Some("cvo:s3cret")) else {
        return;
    };
    let reference = format!("{}/openshift/release:4.18.0", reg.addr);
    // Anonymous push and pull fail, saying what to pass.
    let err = failure(cvo(tmp.path()).args(["payload", "push", BUNDLED, &reference]));
    assert!(err.contains("no credentials for"), "{err}");
    // Flags.
    stdout(
        cvo(tmp.path())
            .args(["payload", "push", BUNDLED, &reference])
            .args(["--registry-username", "cvo", "--registry-password-stdin"])
            .write_stdin("s3cret\n"),
    );
    let err = failure(cvo(tmp.path()).args(["payload", "info", &reference]));
    assert!(err.contains("no credentials for"), "{err}");
    assert!(err.contains(&reg.addr), "{err}");

    // $REGISTRY_AUTH_FILE.
    let auth_file = tmp.path().join("auth.json");
    let encoded = base64_encode(b"cvo:s3cret");
    fs::write(
        &auth_file,
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{encoded}"}}}}}}"#,
            reg.addr
        ),
    )
    .unwrap();
    let ok = info_with(tmp.path(), &reference, |c| {
        c.env("REGISTRY_AUTH_FILE", &auth_file);
    });
    assert_eq!(ok["version"], "4.18.0");
    // ~/.docker/config.json (a tag pull asks the registry again).
    let docker = tmp.path().join("home/.docker");
    fs::create_dir_all(&docker).unwrap();
    fs::copy(&auth_file, docker.join("config.json")).unwrap();
    let ok = info_with(tmp.path(), &reference, |_| {});
    assert_eq!(ok["version"], "4.18.0");
    // Wrong credentials fail.
    fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths": {{"http://{}": {{"auth": "{}"}}}}}}"#,
            reg.addr,
            base64_encode(b"cvo:wrong")
        ),
    )
    .unwrap();
    failure(cvo(tmp.path()).args(["payload", "info", &reference]));
}

/// Writes `docker-credential-NAME` into `bin`: it answers `get` for `registry` with `user:pass`
/// (recording the server it was asked for in `bin/asked-NAME`), and "credentials not found" for
/// any other server, as docker's helpers do.
fn credential_helper(bin: &Path, name: &str, registry: &str, user: &str, pass: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    fs::create_dir_all(bin).unwrap();
    let path = bin.join(format!("docker-credential-{name}"));
    fs::write(
        &path,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 2\nread -r server\necho \"$server\" > \"$(dirname \"$0\")/asked-{name}\"\n\
             if [ \"$server\" = \"{registry}\" ]; then\n  \
             printf '{{\"ServerURL\":\"%s\",\"Username\":\"{user}\",\"Secret\":\"{pass}\"}}' \"$server\"\nelse\n  \
             echo 'credentials not found in native keychain'; exit 1\nfi\n"
        ),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn credential_helpers_and_podmans_auth_files() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), Some("cvo:s3cret")) else {
        return;
    };
    let reference = format!("{}/openshift/release:4.18.0", reg.addr);
    stdout(
        cvo(tmp.path())
            .args(["payload", "push", BUNDLED, &reference])
            .args(["--registry-username", "cvo", "--registry-password-stdin"])
            .write_stdin("s3cret\n"),
    );
    let bin = tmp.path().join("bin");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let docker = tmp.path().join("home/.docker");
    fs::create_dir_all(&docker).unwrap();

    // credHelpers: the registry's own helper, run with the registry on standard input.
    credential_helper(&bin, "cvotest", &reg.addr, "cvo", "s3cret");
    let config = format!(r#"{{"credHelpers": {{"{}": "cvotest"}}}}"#, reg.addr);
    fs::write(docker.join("config.json"), &config).unwrap();
    let ok = info_with(tmp.path(), &reference, |c| {
        c.env("PATH", &path);
    });
    assert_eq!(ok["version"], "4.18.0");
    assert_eq!(
        fs::read_to_string(bin.join("asked-cvotest"))
            .unwrap()
            .trim(),
        reg.addr
    );

    // credsStore: the default helper; one with wrong credentials is refused by the registry.
    credential_helper(&bin, "store", &reg.addr, "cvo", "wrong");
    fs::write(
        docker.join("config.json"),
        r#"{"auths": {}, "credsStore": "store"}"#,
    )
    .unwrap();
    let mut cmd = cvo(tmp.path());
    cmd.env("PATH", &path).args(["payload", "info", &reference]);
    failure(&mut cmd);

    // A helper missing from PATH is an error naming it.
    fs::write(docker.join("config.json"), r#"{"credsStore": "absent"}"#).unwrap();
    let mut cmd = cvo(tmp.path());
    cmd.env("PATH", &path).args(["payload", "info", &reference]);
    let err = failure(&mut cmd);
    assert!(err.contains("docker-credential-absent"), "{err}");

    // ${XDG_RUNTIME_DIR}/containers/auth.json (podman's login) comes before docker's config; a
    // helper without credentials for the registry there passes on to the next file.
    let runtime = tmp.path().join("run");
    fs::create_dir_all(runtime.join("containers")).unwrap();
    credential_helper(&bin, "elsewhere", "other.example:5000", "x", "y");
    fs::write(
        runtime.join("containers/auth.json"),
        r#"{"credsStore": "elsewhere"}"#,
    )
    .unwrap();
    fs::write(docker.join("config.json"), &config).unwrap();
    let ok = info_with(tmp.path(), &reference, |c| {
        c.env("PATH", &path).env("XDG_RUNTIME_DIR", &runtime);
    });
    assert_eq!(ok["version"], "4.18.0");
    assert_eq!(
        fs::read_to_string(bin.join("asked-elsewhere"))
            .unwrap()
            .trim(),
        reg.addr
    );
}

fn info_with(tmp: &Path, source: &str, f: impl FnOnce(&mut Command)) -> Value {
    let mut cmd = cvo(tmp);
    cmd.args(["payload", "info", source, "-o", "json"]);
    f(&mut cmd);
    serde_json::from_str(&stdout(&mut cmd)).unwrap()
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn a_moved_tag_is_seen_and_digests_are_served_from_the_cache_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), None) else {
        return;
    };
    let reference = format!("{}/openshift/release:moving", reg.addr);
    let first = pushed_digest(&stdout(
        cvo(tmp.path()).args(["payload", "push", BUNDLED, &reference]),
    ));
    assert_eq!(info(tmp.path(), &reference, &[])["digest"], first.as_str());

    // Another payload under the same tag.
    let changed = tmp.path().join("changed");
    copy_tree(Path::new(BUNDLED), &changed);
    fs::write(
        changed.join("release-manifests/0000_99_extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n",
    )
    .unwrap();
    let second = pushed_digest(&stdout(cvo(tmp.path()).args([
        "payload",
        "push",
        changed.to_str().unwrap(),
        &reference,
    ])));
    assert_ne!(first, second);
    let moved = info(tmp.path(), &reference, &[]);
    assert_eq!(moved["digest"], second.as_str());

    // By digest: cached, then served with the registry gone.
    let by_digest = format!("{}/openshift/release@{first}", reg.addr);
    assert_eq!(info(tmp.path(), &by_digest, &[])["digest"], first.as_str());
    drop(reg);
    let offline = info(tmp.path(), &by_digest, &[]);
    assert_eq!(offline["digest"], first.as_str());
    let pulled = tmp.path().join("offline");
    stdout(
        cvo(tmp.path())
            .args(["payload", "pull", &by_digest, "--to"])
            .arg(&pulled),
    );
    assert_eq!(
        support::tree_files(&pulled),
        support::tree_files(Path::new(BUNDLED))
    );
    // A tag needs the registry.
    let err = failure(cvo(tmp.path()).args(["payload", "info", &reference]));
    assert!(err.contains("pull "), "{err}");
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The registry's stored blobs (`data/docker/registry/v2/blobs/sha256/xx/<hex>/data`), the
/// largest first: the payload layer.
fn stored_blobs(reg: &Registry) -> Vec<PathBuf> {
    let root = reg.dir().join("data/docker/registry/v2/blobs/sha256");
    let mut blobs: Vec<PathBuf> = fs::read_dir(root)
        .unwrap()
        .flat_map(|prefix| fs::read_dir(prefix.unwrap().path()).unwrap())
        .map(|blob| blob.unwrap().path().join("data"))
        .filter(|data| data.is_file())
        .collect();
    blobs.sort_by_key(|data| std::cmp::Reverse(fs::metadata(data).unwrap().len()));
    blobs
}

/// Every file under `dir` whose name says it is a download in progress.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.extend(temp_files(&path));
            } else if path.to_string_lossy().contains(".tmp-") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_layer_the_registry_serves_altered_is_refused_and_nothing_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_or_skip(tmp.path(), None) else {
        return;
    };
    let reference = format!("{}/openshift/release:4.18.0", reg.addr);
    stdout(cvo(tmp.path()).args(["payload", "push", BUNDLED, &reference]));
    let layer = stored_blobs(&reg).remove(0);
    let original = fs::read(&layer).unwrap();

    // Same length, one byte flipped: the stream is hashed as it is written.
    let mut altered = original.clone();
    let middle = altered.len() / 2;
    altered[middle] ^= 0xff;
    fs::write(&layer, &altered).unwrap();
    let err = failure(cvo(tmp.path()).args(["payload", "info", &reference]));
    assert!(
        err.contains("digest mismatch: the content hashes to sha256:"),
        "{err}"
    );
    assert_eq!(temp_files(&tmp.path().join("cache")), Vec::<PathBuf>::new());

    // Shorter: refused on the announced length, before anything is written.
    fs::write(&layer, &original[..original.len() - 100]).unwrap();
    let err = failure(cvo(tmp.path()).args(["payload", "info", &reference]));
    assert!(err.contains("size mismatch: the descriptor says"), "{err}");
    assert_eq!(temp_files(&tmp.path().join("cache")), Vec::<PathBuf>::new());

    // Restored: the same cache pulls and extracts it.
    fs::write(&layer, &original).unwrap();
    assert_eq!(info(tmp.path(), &reference, &[])["version"], "4.18.0");
    assert_eq!(temp_files(&tmp.path().join("cache")), Vec::<PathBuf>::new());
}

/// TLS by default: a registry serving HTTPS on 127.0.0.1 with a throwaway CA is reached over
/// TLS once its CA is in a `certs.d` folder (`--cert-dir`), loopback or not; without it the
/// plain-HTTP attempt fails with a hint, and a file that is not PEM is named.
#[test]
fn a_tls_registry_is_trusted_through_cert_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(reg) = Registry::start_with_or_skip(tmp.path(), &["--tls"]) else {
        return;
    };
    let certs_d = reg.certs_d();
    let certs = certs_d.to_str().unwrap();
    let reference = format!("{}/openshift/release:4.18.0", reg.addr);
    let out = stdout(
        cvo(tmp.path())
            .args(["payload", "push", BUNDLED, &reference])
            .args(["--cert-dir", certs]),
    );
    assert!(out.contains("version 4.18.0"), "{out}");
    let info = info(tmp.path(), &reference, &["--cert-dir", certs]);
    assert_eq!(info["version"], "4.18.0");

    let other = tmp.path().join("empty-certs.d");
    fs::create_dir_all(&other).unwrap();
    let err = failure(
        cvo(tmp.path())
            .args(["payload", "info", &reference])
            .args(["--cert-dir", other.to_str().unwrap(), "--cache-dir"])
            .arg(tmp.path().join("cold")),
    );
    assert!(err.contains(&format!("{} speaks TLS", reg.addr)), "{err}");

    let bad = tmp.path().join("bad-certs.d");
    fs::create_dir_all(bad.join(&reg.addr)).unwrap();
    fs::write(bad.join(&reg.addr).join("ca.crt"), "not a certificate").unwrap();
    let err = failure(
        cvo(tmp.path())
            .args(["payload", "info", &reference])
            .args(["--cert-dir", bad.to_str().unwrap(), "--cache-dir"])
            .arg(tmp.path().join("cold2")),
    );
    assert!(err.contains("ca.crt: not a PEM certificate"), "{err}");
}
