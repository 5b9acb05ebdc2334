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
    /// Docker-style auth files, tried in order when there are no `credentials`, as podman reads
    /// them: `$REGISTRY_AUTH_FILE`, `${XDG_RUNTIME_DIR}/containers/auth.json`,
    /// `~/.config/containers/auth.json`, then `$DOCKER_CONFIG/config.json` or
    /// `~/.docker/config.json`, as the command line resolves them. Each may name credential
    /// helpers (`credHelpers`, `credsStore`) instead of holding the credentials.
    pub auth_files: Vec<PathBuf>,
    /// Draw a download progress bar on standard error (see
    /// [`super::progress::show_progress`]); off by default.
    pub progress: bool,
    /// The cluster's pull secret (`cvo start`), used after `credentials` and before the auth
    /// files, as a node pulling the release uses it.
    pub pull_secret: Option<PullSecret>,
}

/// A cluster's pull secret: a `kubernetes.io/dockerconfigjson` Secret whose `.dockerconfigjson`
/// holds `auths.<registry>.auth` entries.
#[derive(Clone)]
pub struct PullSecret {
    /// `namespace/name`, for messages.
    pub name: String,
    /// Its `auths` (nothing else: a cluster object never names a credential helper for
    /// `cvo` to run), or why it cannot be used.
    pub auths: Result<serde_json::Value, String>,
}

/// Never prints the credentials.
impl std::fmt::Debug for PullSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auths = match &self.auths {
            Ok(_) => Ok("<redacted>"),
            Err(e) => Err(e.as_str()),
        };
        (f.debug_struct("PullSecret").field("name", &self.name))
            .field("auths", &auths)
            .finish()
    }
}

/// The key of a `kubernetes.io/dockerconfigjson` Secret.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

impl PullSecret {
    /// The pull secret `name` from its Secret's data (`None`: the Secret does not exist). Only
    /// the `auths` object is kept; what is wrong with the Secret is kept as the reason it is
    /// not used, for the messages of the pulls that then lack credentials.
    pub fn from_secret_data(
        name: &str,
        data: Option<&std::collections::BTreeMap<String, Vec<u8>>>,
    ) -> PullSecret {
        let auths = match data {
            None => Err("it does not exist".to_string()),
            Some(data) => match data.get(DOCKER_CONFIG_JSON_KEY) {
                None => Err(format!(
                    "it has no {DOCKER_CONFIG_JSON_KEY} key (a Secret of type kubernetes.io/dockerconfigjson)"
                )),
                Some(bytes) => match serde_json::from_slice::<serde_json::Value>(bytes) {
                    Err(e) => Err(format!("its {DOCKER_CONFIG_JSON_KEY} is not JSON: {e}")),
                    Ok(config) => match config.get("auths") {
                        Some(auths) if auths.is_object() => {
                            Ok(serde_json::json!({ "auths": auths }))
                        }
                        _ => Err(format!(
                            "its {DOCKER_CONFIG_JSON_KEY} has no \"auths\" object"
                        )),
                    },
                },
            },
        };
        PullSecret {
            name: name.to_string(),
            auths,
        }
    }

    /// The user and password for `registry`: `None` when the secret has none for it or cannot
    /// be used; an error naming the secret and the entry when its entry is not valid.
    pub fn credentials(&self, registry: &str) -> Result<Option<(String, String)>, String> {
        let Ok(auths) = &self.auths else {
            return Ok(None);
        };
        match auth_entry(auths, registry) {
            Ok(Some(AuthEntry::Basic { user, password })) => Ok(Some((user, password))),
            Ok(_) => Ok(None),
            Err(e) => Err(format!("the pull secret {}: {e}", self.name)),
        }
    }

    /// What to do when a pull without credentials is refused.
    pub fn hint(&self, registry: &str) -> String {
        match &self.auths {
            Ok(_) => format!(
                "no credentials for {registry} in the pull secret {}: add an auths entry for \
                 {registry} to its {DOCKER_CONFIG_JSON_KEY}",
                self.name
            ),
            Err(reason) => format!(
                "no credentials for {registry}: the pull secret {} cannot be used: {reason}",
                self.name
            ),
        }
    }
}

// Only the registry client (feature `registry`) reads auth files.
#[cfg_attr(not(feature = "registry"), allow(dead_code))]
/// Where an auth file says a registry's credentials are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthEntry {
    /// `auths.<host>.auth`: base64 `user:password`.
    Basic { user: String, password: String },
    /// A credential helper, `docker-credential-<name>`: `credHelpers.<host>`, or `credsStore`
    /// for every registry without its own helper or `auth`.
    Helper(String),
}

// Only the registry client (feature `registry`) reads auth files.
#[cfg_attr(not(feature = "registry"), allow(dead_code))]
/// What a docker/podman auth file (`config`, already parsed) says about `registry`
/// (`host[:port]`), in docker's order: the registry's own credential helper, its `auths`
/// entry (keys may carry a scheme and a path: `https://host/v1/`), then the default
/// `credsStore`. `None` when the file says nothing about it. The error is what is wrong with
/// the file, for the caller to name it.
pub fn auth_entry(config: &serde_json::Value, registry: &str) -> Result<Option<AuthEntry>, String> {
    let host_of = |key: &str| {
        let key = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        key.split('/').next().unwrap_or(key).to_string()
    };
    let helper = |name: &serde_json::Value, field: &str| match name.as_str() {
        Some(name) if is_helper_name(name) => Ok(AuthEntry::Helper(name.to_string())),
        _ => Err(format!(
            "{field} is not a credential helper name (letters, digits, `.`, `_`, `-`): {name}"
        )),
    };
    if let Some(helpers) = config.get("credHelpers").and_then(|h| h.as_object())
        && let Some((key, name)) = helpers.iter().find(|(key, _)| host_of(key) == registry)
    {
        return helper(name, &format!("credHelpers.\"{key}\"")).map(Some);
    }
    let entry = (config.get("auths").and_then(|a| a.as_object()))
        .and_then(|auths| auths.iter().find(|(key, _)| host_of(key) == registry));
    if let Some((key, entry)) = entry
        && let Some(encoded) = entry.get("auth").and_then(|a| a.as_str())
        && !encoded.is_empty()
    {
        use base64::Engine as _;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| {
                s.split_once(':')
                    .map(|(u, p)| (u.to_string(), p.to_string()))
            });
        return match decoded {
            Some((user, password)) => Ok(Some(AuthEntry::Basic { user, password })),
            None => Err(format!("auths.\"{key}\".auth is not base64 user:password")),
        };
    }
    match config.get("credsStore") {
        Some(name) if name.as_str() != Some("") => helper(name, "credsStore").map(Some),
        _ => Ok(None),
    }
}

// Only the registry client (feature `registry`) reads auth files.
#[cfg_attr(not(feature = "registry"), allow(dead_code))]
/// A credential helper's name: it becomes part of a program name looked up on `PATH`, so no
/// path separators.
fn is_helper_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

// Only the registry client (feature `registry`) reads auth files.
#[cfg_attr(not(feature = "registry"), allow(dead_code))]
/// What a credential helper's `get` printed (`{"ServerURL", "Username", "Secret"}`), as a user
/// and password. Docker's identity tokens (`Username: "<token>"`) are OAuth refresh tokens,
/// which this client cannot exchange: an error says so.
pub fn helper_credentials(output: &str) -> Result<(String, String), String> {
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(rename = "Username")]
        username: String,
        #[serde(rename = "Secret")]
        secret: String,
    }
    let reply: Reply = serde_json::from_str(output.trim())
        .map_err(|e| format!("its answer is not {{\"Username\", \"Secret\"}} JSON: {e}"))?;
    if reply.username == "<token>" {
        return Err(
            "it holds an identity token (Username \"<token>\"), which cvo cannot use: log in \
             with a user name and password"
                .to_string(),
        );
    }
    Ok((reply.username, reply.secret))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn basic(user: &str, password: &str) -> Option<AuthEntry> {
        Some(AuthEntry::Basic {
            user: user.into(),
            password: password.into(),
        })
    }

    #[test]
    fn auth_files_are_read_in_dockers_order() {
        // "cvo:pw" and "other:pw" in base64.
        let cases = [
            (
                json!({"auths": {"r.io": {"auth": "Y3ZvOnB3"}}}),
                "r.io",
                basic("cvo", "pw"),
            ),
            (
                json!({"auths": {"https://r.io/v1/": {"auth": "Y3ZvOnB3"}}}),
                "r.io",
                basic("cvo", "pw"),
            ),
            (
                json!({"auths": {"r.io": {"auth": "Y3ZvOnB3"}}}),
                "s.io",
                None,
            ),
            // The registry's own helper wins over its auth and over the store.
            (
                json!({"credHelpers": {"r.io": "ecr-login"}, "auths": {"r.io": {"auth": "Y3ZvOnB3"}}, "credsStore": "desktop"}),
                "r.io",
                Some(AuthEntry::Helper("ecr-login".into())),
            ),
            // docker leaves an empty `auths` entry for registries whose secret is in the store.
            (
                json!({"auths": {"r.io": {}}, "credsStore": "pass"}),
                "r.io",
                Some(AuthEntry::Helper("pass".into())),
            ),
            (
                json!({"auths": {"r.io": {"auth": "b3RoZXI6cHc="}}, "credsStore": "pass"}),
                "r.io",
                basic("other", "pw"),
            ),
            (json!({"credsStore": ""}), "r.io", None),
            (json!({}), "127.0.0.1:5000", None),
        ];
        for (config, registry, want) in cases {
            assert_eq!(
                auth_entry(&config, registry),
                Ok(want),
                "{config} for {registry}"
            );
        }
    }

    #[test]
    fn bad_auth_files_are_errors_naming_the_field() {
        let err = auth_entry(&json!({"auths": {"r.io": {"auth": "!!"}}}), "r.io").unwrap_err();
        assert!(err.contains("auths.\"r.io\".auth"), "{err}");
        let err =
            auth_entry(&json!({"credHelpers": {"r.io": "../../bin/sh"}}), "r.io").unwrap_err();
        assert!(err.contains("credHelpers.\"r.io\""), "{err}");
        assert!(auth_entry(&json!({"credsStore": 3}), "r.io").is_err());
    }

    #[test]
    fn pull_secrets_give_auths_only_and_say_what_is_wrong() {
        use std::collections::BTreeMap;
        let secret = |json: &str| {
            let data =
                BTreeMap::from([(DOCKER_CONFIG_JSON_KEY.to_string(), json.as_bytes().to_vec())]);
            PullSecret::from_secret_data("openshift-config/pull-secret", Some(&data))
        };
        // "cvo:pw" in base64; the credential helpers are dropped (never run for a cluster).
        let good = secret(
            r#"{"auths": {"r.io": {"auth": "Y3ZvOnB3"}, "bad.io": {"auth": "!!"}},
                "credHelpers": {"s.io": "evil"}, "credsStore": "evil"}"#,
        );
        assert_eq!(
            good.credentials("r.io"),
            Ok(Some(("cvo".into(), "pw".into())))
        );
        assert_eq!(good.credentials("s.io"), Ok(None));
        assert_eq!(good.credentials("t.io"), Ok(None));
        let bad = good.credentials("bad.io").unwrap_err();
        assert!(
            bad.contains("the pull secret openshift-config/pull-secret: auths.\"bad.io\".auth"),
            "{bad}"
        );
        assert!(good.hint("t.io").contains("add an auths entry for t.io"));
        assert!(!format!("{good:?}").contains("Y3ZvOnB3"));

        for (secret, reason) in [
            (
                PullSecret::from_secret_data("ns/ps", None),
                "it does not exist",
            ),
            (
                PullSecret::from_secret_data("ns/ps", Some(&BTreeMap::new())),
                "it has no .dockerconfigjson key",
            ),
            (secret("{not json"), "its .dockerconfigjson is not JSON"),
            (secret(r#"{"auths": []}"#), "has no \"auths\" object"),
        ] {
            assert_eq!(secret.credentials("r.io"), Ok(None));
            let hint = secret.hint("r.io");
            assert!(
                hint.contains("cannot be used: ") && hint.contains(reason),
                "{hint}"
            );
        }
    }

    #[test]
    fn helper_answers_are_read() {
        assert_eq!(
            helper_credentials(r#"{"ServerURL":"r.io","Username":"u","Secret":"s"}"#),
            Ok(("u".into(), "s".into()))
        );
        assert!(
            helper_credentials(r#"{"Username":"<token>","Secret":"t"}"#)
                .unwrap_err()
                .contains("identity token")
        );
        assert!(helper_credentials("not json").is_err());
    }
}
