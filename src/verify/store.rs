//! Reading signature stores (the I/O shell of [`super::release`]): HTTP(S) stores in the
//! containers/image layout, and a local directory in the same layout (for `cvo payload
//! verify` in CI; never for anything a cluster names). Each signature is offered to the
//! [`Verification`] as it arrives, so reading stops once every keyring has signed.

use std::path::Path;
use std::time::Duration;

use super::release::{MAX_SIGNATURES, Verification, signature_url};
use crate::updates::transport::{ProxySettings, client_builder};

/// Where signatures are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// `http://` or `https://`.
    Http(String),
    /// `https://`, trusting only these PEM CA certificates (a `spec.signatureStores[].ca`).
    HttpWithCa { url: String, ca_pem: Vec<u8> },
    /// A directory in the store layout (`DIR/sha256=<hex>/signature-<n>`).
    Directory(std::path::PathBuf),
}

impl std::fmt::Display for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Store::Http(url) | Store::HttpWithCa { url, .. } => f.write_str(url),
            Store::Directory(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// How long one signature request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How HTTP stores are reached: `cvo start` passes the cluster's proxy and trusted CA bundle
/// (what the update service is reached with); the default is the environment's proxy and the
/// system's roots.
#[derive(Clone, Debug, Default)]
pub struct Egress {
    /// PEM certificates trusted besides the system's roots (not by a store with its own CA).
    pub ca_bundle: Option<Vec<u8>>,
    pub proxy: Option<ProxySettings>,
}

/// Offers the signatures of `digest` in `stores` (in order) until the verification is done.
pub async fn offer_signatures(
    stores: &[Store],
    digest: &str,
    verification: &mut Verification<'_>,
    egress: &Egress,
) {
    let client = http_client(egress, None);
    for store in stores {
        let own_client = match store {
            Store::HttpWithCa { ca_pem, .. } => Some(http_client(egress, Some(ca_pem))),
            _ => None,
        };
        for n in 1..=MAX_SIGNATURES {
            let signature = match store {
                Store::Http(url) => fetch(&client, &signature_url(url, digest, n)).await,
                Store::HttpWithCa { url, .. } => {
                    let client = own_client.as_ref().unwrap_or(&client);
                    fetch(client, &signature_url(url, digest, n)).await
                }
                Store::Directory(dir) => read(dir, digest, n),
            };
            let done = match signature {
                Ok(Some(bytes)) => verification.offer(Ok(&bytes)),
                Ok(None) => break,
                Err(e) => verification.offer(Err(e)),
            };
            if done {
                return;
            }
        }
    }
}

/// A client through `egress`, trusting the system's roots and its CA bundle, or only `ca_pem`'s
/// certificates when given (a store's own CA bundle).
fn http_client(egress: &Egress, ca_pem: Option<&[u8]>) -> Result<reqwest::Client, String> {
    let trusted = match ca_pem {
        Some(_) => None,
        None => egress.ca_bundle.as_deref(),
    };
    let mut builder = client_builder(trusted, egress.proxy.as_ref())?.timeout(REQUEST_TIMEOUT);
    if let Some(pem) = ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("the store's CA bundle is not valid PEM: {e}"))?;
        builder = builder.tls_certs_only(certs);
    }
    builder
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// One signature; `None` when the store has no more (404).
async fn fetch(
    client: &Result<reqwest::Client, String>,
    url: &str,
) -> Result<Option<Vec<u8>>, String> {
    let client = client.as_ref().map_err(Clone::clone)?;
    let response =
        (client.get(url).send().await).map_err(|e| format!("GET {url}: {}", chain(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(format!("GET {url}: {status}"));
    }
    let body = (response.bytes().await).map_err(|e| format!("GET {url}: {}", chain(&e)))?;
    Ok(Some(body.to_vec()))
}

/// An error and its causes, one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

fn read(dir: &Path, digest: &str, n: u32) -> Result<Option<Vec<u8>>, String> {
    let path = dir
        .join(digest.replacen(':', "=", 1))
        .join(format!("signature-{n}"));
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}
