//! Admission webhooks a component's controller serves over TLS. The controller makes its own
//! serving certificate (a CA and a leaf for the webhook Service's DNS names, kept in a Secret
//! of its namespace so that replicas and restarts share it) and injects the CA bundle into its
//! ValidatingWebhookConfiguration, so the payload ships the configuration with an empty
//! `caBundle` and needs no certificate manager.
//!
//! rcgen makes the certificates and tokio-rustls serves them; the AdmissionReview decisions
//! are the component's (pure) and reach this server through [`Admission`].

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{Timestamp, ToSpan};
use kube::api::{Api, PostParams};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::serve::{accept_each, serve_http1};

/// The Secret annotation recording which names the certificate is for.
const ANN_NAMES: &str = "cvo.openshift.io/serving-names";
/// The Secret annotation recording when the certificate expires (RFC 3339).
const ANN_NOT_AFTER: &str = "cvo.openshift.io/serving-not-after";
/// A certificate this close to its end is replaced.
const RENEW_BEFORE_DAYS: i64 = 30;
/// How long a new certificate is valid.
const VALID_DAYS: i64 = 365;

/// A component's admission decisions: the response body for a review POSTed to `path`, or
/// `None` when nothing is served there.
pub trait Admission: Send + Sync + 'static {
    fn review(&self, path: &str, body: &[u8]) -> Option<Vec<u8>>;
}

/// Where the webhook's certificate lives and what it is for.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    pub listen: SocketAddr,
    /// The controller's namespace (the Secret's).
    pub namespace: String,
    /// The Secret holding `tls.crt`, `tls.key` and `ca.crt`.
    pub secret: String,
    /// The DNS names (and IP addresses) the API server reaches the webhook by.
    pub names: Vec<String>,
    /// The ValidatingWebhookConfiguration whose `caBundle`s are kept.
    pub configuration: String,
}

/// Why the webhook cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("cannot make the webhook's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("cannot use the webhook's certificate: {0}")]
    Tls(String),
    #[error("cannot read or write the Secret {namespace}/{name}: {source}")]
    Secret {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("cannot inject the CA bundle into ValidatingWebhookConfiguration {name}: {source}")]
    Configuration { name: String, source: kube::Error },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A serving certificate, its key and the CA that signed it (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingCertificate {
    pub certificate: String,
    pub key: String,
    pub ca: String,
}

/// Whether the Secret holds a certificate for exactly `names` that is not about to expire.
pub fn is_current(secret: &Secret, names: &[String], now: Timestamp) -> bool {
    let annotations = secret.metadata.annotations.clone().unwrap_or_default();
    let data = secret.data.clone().unwrap_or_default();
    let has_all = ["tls.crt", "tls.key", "ca.crt"]
        .iter()
        .all(|k| data.get(*k).is_some_and(|v| !v.0.is_empty()));
    let same_names = annotations.get(ANN_NAMES) == Some(&names.join(","));
    let fresh = (annotations.get(ANN_NOT_AFTER))
        .and_then(|t| t.parse::<Timestamp>().ok())
        .is_some_and(|end| end > now + (RENEW_BEFORE_DAYS * 24).hours());
    has_all && same_names && fresh
}

/// A new CA and a leaf certificate for `names`, valid for a year from `now`.
pub fn make_certificate(
    names: &[String],
    now: Timestamp,
) -> Result<(ServingCertificate, Timestamp), rcgen::Error> {
    let not_after = now + (VALID_DAYS * 24).hours();
    // rcgen's dates are `time` values; whole days (UTC) are all a serving certificate needs.
    let date = |t: Timestamp| {
        let d = t.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC).date();
        rcgen::date_time_ymd(i32::from(d.year()), d.month() as u8, d.day() as u8)
    };
    let (start, end) = (date(now - 24.hours()), date(not_after));
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    (ca_params.distinguished_name).push(rcgen::DnType::CommonName, "cvo webhook CA");
    ca_params.not_before = start;
    ca_params.not_after = end;
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate()?)?;
    let mut leaf_params = rcgen::CertificateParams::new(names.to_vec())?;
    (leaf_params.distinguished_name).push(rcgen::DnType::CommonName, names[0].as_str());
    leaf_params.not_before = start;
    leaf_params.not_after = end;
    let leaf_key = rcgen::KeyPair::generate()?;
    let leaf = leaf_params.signed_by(&leaf_key, &ca)?;
    Ok((
        ServingCertificate {
            certificate: leaf.pem(),
            key: leaf_key.serialize_pem(),
            ca: ca.pem(),
        },
        not_after,
    ))
}

/// The certificate in the Secret if it is current, else a new one written there.
pub async fn ensure_certificate(
    client: &kube::Client,
    options: &WebhookOptions,
) -> Result<ServingCertificate, WebhookError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &options.namespace);
    let secret_error = |source| WebhookError::Secret {
        namespace: options.namespace.clone(),
        name: options.secret.clone(),
        source,
    };
    let now = Timestamp::now();
    let existing = api.get_opt(&options.secret).await.map_err(secret_error)?;
    if let Some(secret) = existing
        .as_ref()
        .filter(|s| is_current(s, &options.names, now))
    {
        let data = secret.data.clone().unwrap_or_default();
        let text = |k: &str| String::from_utf8_lossy(&data[k].0).into_owned();
        return Ok(ServingCertificate {
            certificate: text("tls.crt"),
            key: text("tls.key"),
            ca: text("ca.crt"),
        });
    }
    let (serving, not_after) = make_certificate(&options.names, now)?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(options.secret.clone()),
            namespace: Some(options.namespace.clone()),
            annotations: Some(BTreeMap::from([
                (ANN_NAMES.to_string(), options.names.join(",")),
                (ANN_NOT_AFTER.to_string(), not_after.to_string()),
            ])),
            resource_version: existing.and_then(|s| s.metadata.resource_version),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            (
                "tls.crt".to_string(),
                ByteString(serving.certificate.clone().into_bytes()),
            ),
            (
                "tls.key".to_string(),
                ByteString(serving.key.clone().into_bytes()),
            ),
            (
                "ca.crt".to_string(),
                ByteString(serving.ca.clone().into_bytes()),
            ),
        ])),
        ..Secret::default()
    };
    let written = match secret.metadata.resource_version.is_some() {
        true => {
            api.replace(&options.secret, &PostParams::default(), &secret)
                .await
        }
        false => api.create(&PostParams::default(), &secret).await,
    };
    match written {
        Ok(_) => {}
        // Another replica wrote it first: use theirs, so that every replica serves one CA.
        Err(kube::Error::Api(s)) if s.code == 409 => {
            return Box::pin(ensure_certificate(client, options)).await;
        }
        Err(e) => return Err(secret_error(e)),
    }
    tracing::info!(secret = %options.secret, names = %options.names.join(","), "made a new webhook serving certificate");
    Ok(serving)
}

/// Puts `ca` into every webhook of the configuration; `false` when it does not exist (yet).
pub async fn inject_ca_bundle(
    client: &kube::Client,
    name: &str,
    ca: &str,
) -> Result<bool, WebhookError> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let error = |source| WebhookError::Configuration {
        name: name.to_owned(),
        source,
    };
    let Some(mut configuration) = api.get_opt(name).await.map_err(error)? else {
        return Ok(false);
    };
    let bundle = ByteString(ca.as_bytes().to_vec());
    let mut changed = false;
    for webhook in configuration.webhooks.iter_mut().flatten() {
        if webhook.client_config.ca_bundle.as_ref() != Some(&bundle) {
            webhook.client_config.ca_bundle = Some(bundle.clone());
            changed = true;
        }
    }
    if changed {
        api.replace(name, &PostParams::default(), &configuration)
            .await
            .map_err(error)?;
        tracing::info!(configuration = name, "injected the webhook CA bundle");
    }
    Ok(true)
}

/// The TLS server configuration for `serving`.
pub fn tls_config(serving: &ServingCertificate) -> Result<rustls::ServerConfig, WebhookError> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(serving.certificate.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| WebhookError::Tls(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(serving.key.as_bytes())
        .map_err(|e| WebhookError::Tls(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebhookError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| WebhookError::Tls(e.to_string()))
}

/// At most this many bytes in one AdmissionReview (the API server sends at most ~3 MiB
/// objects; anything larger is refused rather than buffered).
const MAX_REVIEW_BYTES: usize = 8 << 20;

/// Serves `admission` over TLS on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    admission: Arc<dyn Admission>,
    shutdown: watch::Receiver<bool>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    accept_each(listener, shutdown, "webhook server", move |stream| {
        let (acceptor, admission) = (acceptor.clone(), admission.clone());
        async move {
            let stream = match acceptor.accept(stream).await {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::debug!(error = %e, "webhook server: TLS handshake failed");
                    return;
                }
            };
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let admission = admission.clone();
                async move { Ok::<_, Infallible>(answer(admission.as_ref(), req).await) }
            });
            serve_http1(stream, service, "webhook server").await;
        }
    })
    .await
}

async fn answer(admission: &dyn Admission, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    if req.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "POST an AdmissionReview\n");
    }
    let body = match http_body_util::Limited::new(req.into_body(), MAX_REVIEW_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the body: {e}\n"),
            );
        }
    };
    match admission.review(&path, &body) {
        Some(json) => {
            let mut response = Response::new(Full::new(Bytes::from(json)));
            if let Ok(value) = "application/json".parse() {
                response.headers_mut().insert("content-type", value);
            }
            response
        }
        None => plain(StatusCode::NOT_FOUND, "no webhook here\n"),
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())));
    *response.status_mut() = status;
    response
}

/// Binds `addr`; the returned address is the bound one.
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), WebhookError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| WebhookError::Listen { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| WebhookError::Listen { addr, source })?;
    Ok((listener, local))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec![
            "deployment-targets.cvo-deployment-targets.svc".into(),
            "127.0.0.1".into(),
        ]
    }

    fn secret_for(serving: &ServingCertificate, names: &[String], not_after: Timestamp) -> Secret {
        Secret {
            metadata: ObjectMeta {
                annotations: Some(BTreeMap::from([
                    (ANN_NAMES.to_string(), names.join(",")),
                    (ANN_NOT_AFTER.to_string(), not_after.to_string()),
                ])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([
                (
                    "tls.crt".to_string(),
                    ByteString(serving.certificate.clone().into_bytes()),
                ),
                (
                    "tls.key".to_string(),
                    ByteString(serving.key.clone().into_bytes()),
                ),
                (
                    "ca.crt".to_string(),
                    ByteString(serving.ca.clone().into_bytes()),
                ),
            ])),
            ..Secret::default()
        }
    }

    #[test]
    fn a_new_certificate_serves_and_is_current_until_near_its_end() {
        let now: Timestamp = "2026-11-24T12:00:00Z".parse().unwrap();
        let (serving, not_after) = make_certificate(&names(), now).unwrap();
        assert!(
            serving
                .certificate
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(serving.ca.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(tls_config(&serving).is_ok());
        let secret = secret_for(&serving, &names(), not_after);
        assert!(is_current(&secret, &names(), now));
        assert!(
            !is_current(&secret, &names(), not_after - (10 * 24).hours()),
            "renewed 30 days before the end"
        );
        assert!(!is_current(&secret, &names()[..1], now), "other names");
        let mut empty = secret.clone();
        empty.data = None;
        assert!(!is_current(&empty, &names(), now));
    }
}
