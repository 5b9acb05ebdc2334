//! The edge agent's hub settings, as an administrator gives them: the `horizon` key of the
//! ConfigMap `openhorizon-agent-config` (the `KEY=VALUE` lines of the hub's
//! `agent-install.cfg`: `HZN_EXCHANGE_URL`, `HZN_FSS_CSSURL`, `HZN_ORG_ID`) and the hub's CA
//! certificate in key `agent-install.crt` of the Secret `openhorizon-agent-secrets`. Pure:
//! [`read`] says what is there, what is missing and what is wrong, each by the place an
//! administrator fixes it.
//!
//! The values are those upstream's `agent-install.sh` requires before it installs a cluster
//! agent (`HZN_EXCHANGE_URL`, `HZN_FSS_CSSURL`, `HZN_ORG_ID`: its "must be specified" checks);
//! node registration (`HZN_EXCHANGE_NODE_AUTH`) is not the payload's business. The certificate
//! is required too: the agent's Deployment sets `HZN_MGMT_HUB_CERT_PATH`, and anax fails to
//! start when that file cannot be read (anax `config/collaborators.go`: "Failed to read Cert
//! File"); a hub with a publicly signed certificate takes that public CA.

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

use crate::components::edge::agent_install::{CONFIG_MAP, SECRET};

/// The ConfigMap key that holds the agent's `horizon` file.
pub const HORIZON_KEY: &str = "horizon";
/// The Secret key that holds the hub's CA certificate (PEM).
pub const CERTIFICATE_KEY: &str = "agent-install.crt";

pub const EXCHANGE_URL: &str = "HZN_EXCHANGE_URL";
pub const CSS_URL: &str = "HZN_FSS_CSSURL";
pub const ORG: &str = "HZN_ORG_ID";

/// What the operator found of one object's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<T> {
    /// The object does not exist.
    NoObject,
    /// The object exists without the key.
    NoKey,
    Value(T),
}

/// Settings complete and valid: the agent can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSettings {
    pub exchange_url: String,
    pub css_url: String,
    pub org: String,
    /// A digest of everything the agent reads (the `horizon` file and the certificate): the
    /// agent's pod template carries it, so that a change restarts the agent (its ConfigMap is
    /// mounted with `subPath`, which a running pod never sees change).
    pub digest: String,
}

/// Why the agent cannot run yet: what is missing (the administrator has not given it) and what
/// is invalid (given, but wrong). Each entry names the value and where it goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unready {
    pub missing: Vec<String>,
    pub invalid: Vec<String>,
    /// How an administrator gives them.
    pub fix: String,
}

/// The hub settings in `namespace`, from the ConfigMap's `horizon` text and the Secret's
/// certificate bytes.
pub fn read(
    namespace: &str,
    horizon: Found<&str>,
    certificate: Found<&[u8]>,
) -> Result<HubSettings, Unready> {
    let config_map = format!("ConfigMap {namespace}/{CONFIG_MAP}");
    let secret = format!("Secret {namespace}/{SECRET}");
    let mut unready = Unready {
        fix: format!(
            "set them with `oc -n {namespace} edit configmap {CONFIG_MAP}` (key {HORIZON_KEY}) and `oc -n {namespace} create secret generic {SECRET} --from-file={CERTIFICATE_KEY}=HUB-CA.crt`"
        ),
        ..Unready::default()
    };
    let text = match horizon {
        Found::NoObject => {
            unready.missing.push(format!(
                "{config_map} (its {HORIZON_KEY} key holds {EXCHANGE_URL}, {CSS_URL} and {ORG})"
            ));
            ""
        }
        Found::NoKey => {
            unready.missing.push(format!(
                "the {HORIZON_KEY} key of {config_map} ({EXCHANGE_URL}, {CSS_URL} and {ORG})"
            ));
            ""
        }
        Found::Value(text) => text,
    };
    let values = parse_horizon(text);
    let value = |key: &str| values.get(key).map(String::as_str).unwrap_or_default();
    // Without the text, the whole of it is reported missing above.
    if matches!(horizon, Found::Value(_)) {
        let empty: Vec<&str> = [EXCHANGE_URL, CSS_URL, ORG]
            .into_iter()
            .filter(|k| value(k).is_empty())
            .collect();
        if !empty.is_empty() {
            unready.missing.push(format!(
                "{} in the {HORIZON_KEY} key of {config_map}",
                and_list(&empty)
            ));
        }
    }
    for key in [EXCHANGE_URL, CSS_URL] {
        if let Err(why) = check_url(value(key)) {
            unready
                .invalid
                .push(format!("{key} {:?} in {config_map}: {why}", value(key)));
        }
    }
    if let Err(why) = check_org(value(ORG)) {
        unready
            .invalid
            .push(format!("{ORG} {:?} in {config_map}: {why}", value(ORG)));
    }
    let certificate_bytes = match certificate {
        Found::Value(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => Some(bytes),
        _ => None,
    };
    match certificate_bytes {
        Some(bytes) => {
            if let Err(why) = check_certificate(bytes) {
                unready
                    .invalid
                    .push(format!("key {CERTIFICATE_KEY} of {secret}: {why}"));
            }
        }
        None => unready.missing.push(format!(
            "the hub's CA certificate (PEM) in key {CERTIFICATE_KEY} of {secret}"
        )),
    }
    if !unready.missing.is_empty() || !unready.invalid.is_empty() {
        return Err(unready);
    }
    let mut digest = Sha256::new();
    digest.update(text.as_bytes());
    digest.update([0]);
    digest.update(certificate_bytes.unwrap_or_default());
    Ok(HubSettings {
        exchange_url: value(EXCHANGE_URL).to_string(),
        css_url: value(CSS_URL).to_string(),
        org: value(ORG).to_string(),
        digest: hex::encode(&digest.finalize()[..8]),
    })
}

/// `KEY=VALUE` lines as a shell sources `agent-install.cfg`: blank lines and `#` comments are
/// skipped, an `export ` prefix is allowed, one pair of matching quotes around a value is
/// removed, and the last assignment of a key wins.
pub fn parse_horizon(text: &str) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)));
        values.insert(
            key.trim().to_string(),
            unquoted.unwrap_or(value).to_string(),
        );
    }
    values
}

/// An http or https URL with a host (an empty value is missing, not invalid).
fn check_url(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    let url = reqwest::Url::parse(value).map_err(|e| format!("not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("the scheme is {}, not http or https", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("it names no host".into());
    }
    Ok(())
}

/// An exchange organization is one path segment of the exchange's API.
fn check_org(value: &str) -> Result<(), String> {
    match value.chars().find(|c| c.is_whitespace() || *c == '/') {
        Some(c) => Err(format!(
            "an organization id has no {}",
            if c == '/' { "'/'" } else { "white space" }
        )),
        None => Ok(()),
    }
}

/// At least one PEM certificate, each one a certificate a TLS client can trust.
fn check_certificate(bytes: &[u8]) -> Result<(), String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let mut store = rustls::RootCertStore::empty();
    let mut count = 0;
    for (index, der) in CertificateDer::pem_slice_iter(bytes).enumerate() {
        let der = der.map_err(|e| format!("certificate {} is not valid PEM: {e}", index + 1))?;
        store
            .add(der)
            .map_err(|e| format!("certificate {} cannot be used as a CA: {e}", index + 1))?;
        count += 1;
    }
    match count {
        0 => Err("no PEM certificate (-----BEGIN CERTIFICATE-----) in it".into()),
        _ => Ok(()),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "openhorizon-agent";
    const COMPLETE: &str = "HZN_EXCHANGE_URL=http://hub.example.com:3090/v1\nHZN_FSS_CSSURL=http://hub.example.com:9443/\nHZN_ORG_ID=myorg\n";

    /// A self-signed CA, made once.
    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["hub.example.com".into()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn the_payload_default_is_missing_everything() {
        let payload = "HZN_EXCHANGE_URL=\nHZN_FSS_CSSURL=\nHZN_ORG_ID=\nHZN_MGMT_HUB_CERT_PATH=/etc/default/cert/agent-install.crt\nHZN_AGENT_PORT=8510\n";
        let got = read(NS, Found::Value(payload), Found::NoObject).unwrap_err();
        assert_eq!(
            got.missing,
            [
                "HZN_EXCHANGE_URL, HZN_FSS_CSSURL and HZN_ORG_ID in the horizon key of ConfigMap openhorizon-agent/openhorizon-agent-config",
                "the hub's CA certificate (PEM) in key agent-install.crt of Secret openhorizon-agent/openhorizon-agent-secrets",
            ]
        );
        assert!(got.invalid.is_empty());
        let got = read("edge", Found::NoObject, Found::NoObject).unwrap_err();
        assert_eq!(
            got.fix,
            "set them with `oc -n edge edit configmap openhorizon-agent-config` (key horizon) and `oc -n edge create secret generic openhorizon-agent-secrets --from-file=agent-install.crt=HUB-CA.crt`"
        );
    }

    #[test]
    fn missing_objects_and_keys_are_named() {
        let ca = ca_pem();
        let ca = Found::Value(ca.as_bytes());
        let got = read(NS, Found::NoObject, ca).unwrap_err();
        assert_eq!(
            got.missing,
            [
                "ConfigMap openhorizon-agent/openhorizon-agent-config (its horizon key holds HZN_EXCHANGE_URL, HZN_FSS_CSSURL and HZN_ORG_ID)"
            ]
        );
        let got = read(NS, Found::NoKey, ca).unwrap_err();
        assert_eq!(
            got.missing,
            [
                "the horizon key of ConfigMap openhorizon-agent/openhorizon-agent-config (HZN_EXCHANGE_URL, HZN_FSS_CSSURL and HZN_ORG_ID)"
            ]
        );
        let only_org = "HZN_EXCHANGE_URL=http://a\nHZN_FSS_CSSURL=http://b\n";
        let got = read(NS, Found::Value(only_org), ca).unwrap_err();
        assert_eq!(
            got.missing,
            [
                "HZN_ORG_ID in the horizon key of ConfigMap openhorizon-agent/openhorizon-agent-config"
            ]
        );
        // A Secret without the key, or with white space only, has no certificate.
        for certificate in [Found::NoKey, Found::Value(&b" \n"[..])] {
            let got = read(NS, Found::Value(COMPLETE), certificate).unwrap_err();
            assert_eq!(
                got.missing,
                [
                    "the hub's CA certificate (PEM) in key agent-install.crt of Secret openhorizon-agent/openhorizon-agent-secrets"
                ]
            );
        }
    }

    #[test]
    fn complete_settings_and_their_digest() {
        let ca = ca_pem();
        let hub = read(NS, Found::Value(COMPLETE), Found::Value(ca.as_bytes())).unwrap();
        assert_eq!(hub.exchange_url, "http://hub.example.com:3090/v1");
        assert_eq!(hub.css_url, "http://hub.example.com:9443/");
        assert_eq!(hub.org, "myorg");
        assert_eq!(hub.digest.len(), 16);
        // Another certificate or another file is another digest: the agent restarts.
        let other = ca_pem();
        let again = read(NS, Found::Value(COMPLETE), Found::Value(other.as_bytes())).unwrap();
        assert_ne!(hub.digest, again.digest);
        let https = COMPLETE.replace("http://", "https://");
        let again = read(NS, Found::Value(&https), Found::Value(ca.as_bytes())).unwrap();
        assert_ne!(hub.digest, again.digest);
    }

    #[test]
    fn wrong_values_are_invalid_with_the_reason() {
        let text = "HZN_EXCHANGE_URL=htps://hub/v1\nHZN_FSS_CSSURL=hub:9443\nHZN_ORG_ID=my org\n";
        let got = read(NS, Found::Value(text), Found::Value(b"not a certificate")).unwrap_err();
        assert!(got.missing.is_empty(), "{got:?}");
        assert_eq!(
            got.invalid,
            [
                "HZN_EXCHANGE_URL \"htps://hub/v1\" in ConfigMap openhorizon-agent/openhorizon-agent-config: the scheme is htps, not http or https",
                "HZN_FSS_CSSURL \"hub:9443\" in ConfigMap openhorizon-agent/openhorizon-agent-config: the scheme is hub, not http or https",
                "HZN_ORG_ID \"my org\" in ConfigMap openhorizon-agent/openhorizon-agent-config: an organization id has no white space",
                "key agent-install.crt of Secret openhorizon-agent/openhorizon-agent-secrets: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
            ]
        );
        let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let got = read(NS, Found::Value(COMPLETE), Found::Value(garbage.as_bytes())).unwrap_err();
        assert!(
            got.invalid[0].starts_with("key agent-install.crt of Secret openhorizon-agent/openhorizon-agent-secrets: certificate 1 cannot be used as a CA: "),
            "{got:?}"
        );
    }

    #[test]
    fn horizon_lines_as_a_shell_reads_them() {
        let text = "# hub\n\nexport HZN_ORG_ID=\"org-a\"\nHZN_EXCHANGE_URL = 'http://x'\nNOT A PAIR\nHZN_ORG_ID=org-b\n";
        let values = parse_horizon(text);
        assert_eq!(values["HZN_ORG_ID"], "org-b");
        assert_eq!(values["HZN_EXCHANGE_URL"], "http://x");
        assert_eq!(values.len(), 2);
    }
}
