//! A real registry (Debian `docker-registry`) on 127.0.0.1, started by `hack/registry/up.sh`
//! and stopped (its directory removed) on drop, panics included. Shared by several test
//! binaries, each using part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `cvo` with its own cache under `tmp`, a HOME without docker credentials, and none of the
/// environment that changes how it reads, builds or limits images.
pub fn cvo(tmp: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("CLUSTER_PROFILE")
        .env_remove("RUST_LOG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("DOCKER_CONFIG")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CVO_OCI_MAX_BYTES")
        .env_remove("CVO_OCI_MAX_ENTRIES")
        .env_remove("SOURCE_DATE_EPOCH")
        .env("HOME", tmp.join("home"))
        .env("CVO_CACHE_DIR", tmp.join("cache"));
    cmd
}

/// Runs the command, asserts it succeeds and returns its standard output.
pub fn stdout(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the command, asserts it exits 1 and returns its standard error.
pub fn failure(cmd: &mut assert_cmd::Command) -> String {
    String::from_utf8(cmd.assert().code(1).get_output().stderr.clone()).unwrap()
}

const HACK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/hack/registry");

/// A running registry.
pub struct Registry {
    dir: PathBuf,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Registry {
    /// Starts a registry with its state in `tmp/registry` (`auth`: `USER:PASSWORD` for basic
    /// auth). `Err` with the script's message when it cannot start.
    pub fn start(tmp: &Path, auth: Option<&str>) -> Result<Registry, String> {
        match auth {
            Some(auth) => Registry::start_with(tmp, &["--auth", auth]),
            None => Registry::start_with(tmp, &[]),
        }
    }

    /// Starts a registry with more `hack/registry/up.sh` options (`--tls`, `--auth U:P`).
    pub fn start_with(tmp: &Path, options: &[&str]) -> Result<Registry, String> {
        let dir = tmp.join("registry");
        let mut cmd = Command::new(format!("{HACK}/up.sh"));
        cmd.arg(&dir).args(options);
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run hack/registry/up.sh: {e}"))?;
        if !out.status.success() {
            let _ = Command::new(format!("{HACK}/down.sh")).arg(&dir).status();
            return Err(format!(
                "cannot start a registry (hack/registry/up.sh): {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let addr = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Registry { dir, addr })
    }

    /// Where its state is (`data/` holds the stored blobs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// With `--tls`: the `certs.d` directory holding its CA (`--cert-dir`).
    pub fn certs_d(&self) -> PathBuf {
        self.dir.join("certs.d")
    }

    /// [`Registry::start`], or `None` with a message when it cannot start and
    /// `CVO_REQUIRE_REGISTRY` is not `1` (then it panics).
    pub fn start_or_skip(tmp: &Path, auth: Option<&str>) -> Option<Registry> {
        Registry::or_skip(Registry::start(tmp, auth))
    }

    /// [`Registry::start_with`], or `None` as [`Registry::start_or_skip`].
    pub fn start_with_or_skip(tmp: &Path, options: &[&str]) -> Option<Registry> {
        Registry::or_skip(Registry::start_with(tmp, options))
    }

    fn or_skip(started: Result<Registry, String>) -> Option<Registry> {
        match started {
            Ok(registry) => Some(registry),
            Err(msg) if std::env::var("CVO_REQUIRE_REGISTRY").as_deref() == Ok("1") => {
                panic!("{msg} and CVO_REQUIRE_REGISTRY=1")
            }
            Err(msg) => {
                eprintln!("skipping: {msg}");
                None
            }
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = Command::new(format!("{HACK}/down.sh"))
            .arg(&self.dir)
            .status();
    }
}
