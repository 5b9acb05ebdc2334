//! How the update service is reached from the cluster, as upstream's CVO reaches it
//! (`pkg/cvo` `getTransport`, `getProxyConfig`, `getTLSConfig`): through the proxy of the `config.openshift.io/v1`
//! Proxy `cluster` (its `status.httpProxy`, `httpsProxy`, `noProxy`), trusting the CA bundle
//! (`ca-bundle.crt`) of the ConfigMap `trusted-ca-bundle` in `openshift-config-managed`, which
//! the platform merges from the Proxy's `spec.trustedCA`. No platform merges it in a cluster
//! `cvo start` runs, so the ConfigMap `spec.trustedCA.name` names in `openshift-config` is
//! trusted too (what upstream read before the merged bundle existed).
//!
//! The objects' data in, the settings out (pure; `src/operator/run.rs` reads the objects), and
//! [`client_builder`], the HTTP client every request that leaves the cluster is made with: the
//! update service's ([`super::fetch`]) and the signature stores' ([`crate::verify::store`]).

use std::collections::BTreeMap;

use serde_json::Value;

/// The Proxy object's name.
pub const PROXY_NAME: &str = "cluster";
/// The merged bundle upstream trusts.
pub const TRUSTED_CA_BUNDLE_NAMESPACE: &str = "openshift-config-managed";
pub const TRUSTED_CA_BUNDLE_NAME: &str = "trusted-ca-bundle";
/// Where `spec.trustedCA.name` points.
pub const USER_CA_NAMESPACE: &str = "openshift-config";
/// The key of a CA bundle ConfigMap.
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";

/// The proxies the Proxy `cluster` reports (Go's `httpproxy.Config`): empty fields are unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxySettings {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    /// Comma-separated hosts, domains and CIDRs reached directly.
    pub no_proxy: Option<String>,
}

/// The Proxy's `status` as settings; `None` without a Proxy. Upstream uses the status (what the
/// network operator validated), not the spec.
pub fn proxy_settings(proxy: Option<&Value>) -> Option<ProxySettings> {
    let status = proxy?.get("status");
    let field = |name: &str| {
        (status.and_then(|s| s.get(name)))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    Some(ProxySettings {
        http_proxy: field("httpProxy"),
        https_proxy: field("httpsProxy"),
        no_proxy: field("noProxy"),
    })
}

/// `spec.trustedCA.name` of the Proxy, when set.
pub fn trusted_ca_name(proxy: Option<&Value>) -> Option<String> {
    (proxy?.pointer("/spec/trustedCA/name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// The PEM bundle to trust besides the system's roots: `cvo start`'s own (`--update-service-ca`),
/// the merged `trusted-ca-bundle`, and the `spec.trustedCA` ConfigMap's, in that order; `None`
/// when all are empty.
pub fn ca_bundle(
    configured: Option<&[u8]>,
    managed: Option<&BTreeMap<String, String>>,
    user: Option<&BTreeMap<String, String>>,
) -> Option<Vec<u8>> {
    let from_map = |m: Option<&BTreeMap<String, String>>| {
        m.and_then(|d| d.get(CA_BUNDLE_KEY))
            .map(|pem| pem.as_bytes().to_vec())
    };
    let mut bundle = Vec::new();
    for pem in [
        configured.map(<[u8]>::to_vec),
        from_map(managed),
        from_map(user),
    ]
    .into_iter()
    .flatten()
    .filter(|pem| !pem.iter().all(u8::is_ascii_whitespace))
    {
        bundle.extend_from_slice(&pem);
        if !bundle.ends_with(b"\n") {
            bundle.push(b'\n');
        }
    }
    (!bundle.is_empty()).then_some(bundle)
}

/// A client trusting `ca_bundle` (PEM) besides the system's roots, through `proxy` (which then
/// replaces the environment's proxy variables) when given, as upstream's `getTransport`. The
/// error says which setting is not valid.
#[cfg(feature = "registry")]
pub fn client_builder(
    ca_bundle: Option<&[u8]>,
    proxy: Option<&ProxySettings>,
) -> Result<reqwest::ClientBuilder, String> {
    use crate::causes::innermost;
    crate::oci::registry::install_crypto_provider();
    let mut builder =
        reqwest::Client::builder().user_agent(concat!("cvo/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = ca_bundle {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("the CA bundle: {}", innermost(&e)))?;
        builder = builder.tls_certs_merge(certs);
    }
    let Some(proxy) = proxy else {
        return Ok(builder);
    };
    // Go's `httpproxy.Config.ProxyFunc`: `httpProxy` for `http` URLs, `httpsProxy` for `https`
    // ones, neither for the `noProxy` hosts.
    builder = builder.no_proxy();
    let no_proxy = (proxy.no_proxy.as_deref()).and_then(reqwest::NoProxy::from_string);
    let invalid =
        |which: &str, e: reqwest::Error| format!("the cluster proxy's {which}: {}", innermost(&e));
    if let Some(url) = &proxy.http_proxy {
        let p = reqwest::Proxy::http(url).map_err(|e| invalid("httpProxy", e))?;
        builder = builder.proxy(p.no_proxy(no_proxy.clone()));
    }
    if let Some(url) = &proxy.https_proxy {
        let p = reqwest::Proxy::https(url).map_err(|e| invalid("httpsProxy", e))?;
        builder = builder.proxy(p.no_proxy(no_proxy));
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_proxy_comes_from_the_status() {
        let proxy = json!({"spec": {"httpProxy": "http://spec:3128", "trustedCA": {"name": "user-ca"}},
                           "status": {"httpProxy": "http://proxy:3128", "httpsProxy": "",
                                      "noProxy": ".cluster.local,10.0.0.0/16"}});
        assert_eq!(
            proxy_settings(Some(&proxy)),
            Some(ProxySettings {
                http_proxy: Some("http://proxy:3128".into()),
                https_proxy: None,
                no_proxy: Some(".cluster.local,10.0.0.0/16".into()),
            })
        );
        assert_eq!(trusted_ca_name(Some(&proxy)).as_deref(), Some("user-ca"));
        assert_eq!(
            proxy_settings(Some(&json!({"spec": {}}))),
            Some(ProxySettings::default())
        );
        assert_eq!(
            trusted_ca_name(Some(&json!({"spec": {"trustedCA": {"name": ""}}}))),
            None
        );
        assert_eq!((proxy_settings(None), trusted_ca_name(None)), (None, None));
    }

    #[test]
    fn the_bundles_are_joined() {
        let map = |pem: &str| BTreeMap::from([(CA_BUNDLE_KEY.to_string(), pem.to_string())]);
        let (managed, user, empty) = (map("MANAGED"), map("USER\n"), map("  \n"));
        let other = BTreeMap::from([("other.crt".to_string(), "X".to_string())]);
        for (configured, managed, user, want) in [
            (None, None, None, None),
            (None, Some(&empty), Some(&other), None),
            (None, Some(&managed), None, Some("MANAGED\n")),
            (
                Some(&b"OWN"[..]),
                Some(&managed),
                Some(&user),
                Some("OWN\nMANAGED\nUSER\n"),
            ),
            (None, Some(&empty), Some(&user), Some("USER\n")),
        ] {
            assert_eq!(
                ca_bundle(configured, managed, user),
                want.map(|w| w.as_bytes().to_vec())
            );
        }
    }
}
