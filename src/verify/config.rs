//! The verification ConfigMap a payload carries (annotation
//! `release.openshift.io/verification-config-map`; the first in load order counts): which
//! keyrings must each have signed a release digest, and where signatures are. library-go's
//! `verifyconfigmap.NewFromMap`, with its messages.

use std::collections::BTreeMap;

use super::openpgp::Keyring;

/// The annotation that marks the payload's verification ConfigMap.
pub const VERIFICATION_CONFIG_MAP_ANNOTATION: &str = "release.openshift.io/verification-config-map";
/// The namespace signatures ConfigMaps live in, and their label.
pub const SIGNATURES_NAMESPACE: &str = "openshift-config-managed";
pub const SIGNATURES_LABEL: &str = "release.openshift.io/verification-signatures";

const KEY_PREFIX: &str = "verifier-public-key-";
const STORE_PREFIX: &str = "store-";

/// A verifier: every keyring must have signed a digest; signatures come from the stores.
#[derive(Clone, Debug)]
pub struct VerifierConfig {
    /// By data key (`verifier-public-key-redhat`), in key order.
    pub keyrings: BTreeMap<String, Keyring>,
    /// `store-*` URLs in key order (library-go ranges over a Go map: its order is random).
    pub stores: Vec<String>,
    /// Data keys that are neither, which upstream logs and ignores.
    pub ignored: Vec<String>,
    /// CA bundles (PEM) of stores that trust only their own (`spec.signatureStores[].ca`), by
    /// store URL; the other stores trust the system's roots.
    pub store_cas: BTreeMap<String, Vec<u8>>,
}

/// Why a verification ConfigMap cannot be used (library-go's messages; `source` names it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{origin} has an invalid key {key:?} that must be a GPG public key: {error}: {error}")]
    BadKey {
        origin: String,
        key: String,
        error: String,
    },
    #[error(
        "{origin} has an invalid key {key:?}: must be a valid URL with scheme http:// or https://"
    )]
    BadStore { origin: String, key: String },
    #[error("{origin} did not provide any signature stores to read from and cannot be used")]
    NoStores { origin: String },
    #[error(
        "{origin} did not provide any GPG public keys to verify signatures from and cannot be used"
    )]
    NoKeys { origin: String },
}

impl VerifierConfig {
    /// From a ConfigMap's `data`; `source` names it in errors (`configmap NS/NAME`).
    pub fn from_data(source: &str, data: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut keyrings = BTreeMap::new();
        let mut stores = Vec::new();
        let mut ignored = Vec::new();
        for (key, value) in data {
            if key.starts_with(KEY_PREFIX) {
                let keyring =
                    Keyring::parse(value.as_bytes()).map_err(|e| ConfigError::BadKey {
                        origin: source.into(),
                        key: key.clone(),
                        error: e.to_string(),
                    })?;
                keyrings.insert(key.clone(), keyring);
            } else if key.starts_with(STORE_PREFIX) {
                let url = value.trim();
                if !is_http_url(url) {
                    return Err(ConfigError::BadStore {
                        origin: source.into(),
                        key: key.clone(),
                    });
                }
                stores.push(url.to_owned());
            } else {
                ignored.push(key.clone());
            }
        }
        if stores.is_empty() {
            return Err(ConfigError::NoStores {
                origin: source.into(),
            });
        }
        if keyrings.is_empty() {
            return Err(ConfigError::NoKeys {
                origin: source.into(),
            });
        }
        Ok(VerifierConfig {
            store_cas: BTreeMap::new(),
            keyrings,
            stores,
            ignored,
        })
    }
}

/// An absolute `http://` or `https://` URL with a host (what Go's `url.Parse` plus the scheme
/// check accepts, and what a store can be fetched from).
pub fn is_http_url(url: &str) -> bool {
    let rest = (url.strip_prefix("https://")).or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !url.chars().any(|c| c.is_whitespace() || c.is_control())
    })
}

/// The verifier a payload declares: its first ConfigMap (in load order) with the annotation
/// `release.openshift.io/verification-config-map` (library-go's `NewFromManifests`); `None`
/// when it has none, and then releases are not verified.
pub fn from_manifests(
    manifests: &[crate::manifest::Manifest],
) -> Option<Result<VerifierConfig, ConfigError>> {
    let manifest = manifests.iter().find(|m| {
        m.gvk.kind == "ConfigMap"
            && m.gvk.group.is_empty()
            && m.annotation(VERIFICATION_CONFIG_MAP_ANNOTATION).is_some()
    })?;
    let source = format!(
        "the config map {}/{}",
        manifest.id.namespace, manifest.id.name
    );
    let value: serde_json::Value = serde_json::from_slice(&manifest.raw).unwrap_or_default();
    let data: BTreeMap<String, String> = (value.get("data").and_then(|d| d.as_object()))
        .map(|d| {
            d.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Some(VerifierConfig::from_data(&source, &data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_stores_then_keys_with_upstreams_messages() {
        let src = "configmap openshift-config-managed/release-verification";
        let data = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let err = VerifierConfig::from_data(src, &data(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "configmap openshift-config-managed/release-verification did not provide any signature stores to read from and cannot be used"
        );
        let err =
            VerifierConfig::from_data(src, &data(&[("store-a", " https://example.com/sigs ")]))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "configmap openshift-config-managed/release-verification did not provide any GPG public keys to verify signatures from and cannot be used"
        );
        let err =
            VerifierConfig::from_data(src, &data(&[("store-a", "file:///etc/sigs")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "configmap openshift-config-managed/release-verification has an invalid key \"store-a\": must be a valid URL with scheme http:// or https://"
        );
        let err = VerifierConfig::from_data(
            src,
            &data(&[("store-a", "https://x"), ("verifier-public-key-a", "junk")]),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "configmap openshift-config-managed/release-verification has an invalid key \"verifier-public-key-a\" that must be a GPG public key: "
            ),
            "{err}"
        );
    }

    #[test]
    fn store_urls_are_http_with_a_host() {
        for (url, ok) in [
            (
                "https://mirror.openshift.com/pub/openshift-v4/signatures/openshift/release",
                true,
            ),
            ("http://127.0.0.1:8080", true),
            ("https://", false),
            ("file:///x", false),
            ("ftp://x", false),
            ("https://a b", false),
        ] {
            assert_eq!(is_http_url(url), ok, "{url}");
        }
    }
}
