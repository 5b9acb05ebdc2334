//! What the command line says about registries, and whether an argument names a registry
//! image: shared by the registry client ([`super::registry`], the `registry` feature) and the
//! stand-in a build without it has.

use std::path::PathBuf;

/// Registry access settings from the command line.
#[derive(Debug, Clone, Default)]
pub struct RegistrySettings {
    /// `--registry-username` + `--registry-password-stdin`.
    pub credentials: Option<(String, String)>,
    /// `--insecure-registry HOST[:PORT]`: plain HTTP.
    pub insecure: Vec<String>,
    /// `--cert-dir DIR`: `DIR/<host[:port]>/*.crt` are extra CA roots for that registry, as
    /// docker's and podman's `certs.d`; empty: `/etc/containers/certs.d`, `/etc/docker/certs.d`.
    pub cert_dirs: Vec<PathBuf>,
    /// Docker-style auth files (`auths.<host>.auth`), tried in order when there are no
    /// `credentials`: `$REGISTRY_AUTH_FILE`, then `$DOCKER_CONFIG/config.json` or
    /// `~/.docker/config.json`, as the command line resolves them.
    pub auth_files: Vec<PathBuf>,
    /// Draw a download progress bar on standard error (see
    /// [`super::progress::show_progress`]); off by default.
    pub progress: bool,
}

/// Whether `text` is a registry reference: `docker://…`, `…@sha256:…`, or
/// `host.domain[:port]/repo[:tag]` (a host with a `.` or `:`, or `localhost`).
pub fn is_reference(text: &str) -> bool {
    if text.starts_with("docker://") || text.contains("@sha256:") {
        return true;
    }
    if text.contains("://") {
        return false;
    }
    let Some((host, rest)) = text.split_once('/') else {
        return false;
    };
    !rest.is_empty()
        && !text.starts_with('.')
        && (host.contains('.') || host.contains(':') || host == "localhost")
        && !host.contains(['\\', ' '])
}
