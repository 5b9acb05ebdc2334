//! `cvo start`'s metrics server over TLS, as upstream's `RunMetrics`: the serving certificate
//! and key are files (the Service's `service.beta.openshift.io/serving-cert-secret-name`
//! Secret, mounted), read again when they change so that a rotated certificate is served
//! without a restart; `/metrics` is only for the monitoring stack ([`super::metrics_auth`]),
//! with the cluster's client CA watched in `kube-system/extension-apiserver-authentication`.
//! `/healthz` and `/readyz` answer anyone (a kubelet's probe presents no certificate).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::metrics_auth::{ClientCa, Verdict, authorize};
use super::serve::{Endpoints, accept_each, respond, serve_http1};
use super::tls_profile::{ApiServerTls, ClusterProfile, cluster_profile, effective};
use super::tls_settings::TlsSettings;

/// Where the client CA is published (upstream's `NewDynamicCAFromConfigMapController`).
pub const CLIENT_CA_NAMESPACE: &str = "kube-system";
pub const CLIENT_CA_CONFIG_MAP: &str = "extension-apiserver-authentication";
pub const CLIENT_CA_KEY: &str = "client-ca-file";

/// How the metrics server serves TLS.
#[derive(Debug, Clone)]
pub struct TlsServing {
    /// PEM certificate chain (`tls.crt`).
    pub cert_file: PathBuf,
    /// PEM private key (`tls.key`).
    pub key_file: PathBuf,
    pub settings: TlsSettings,
    /// How often the files are read again for a rotated certificate.
    pub reload_interval: Duration,
}

/// Why the metrics server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsTlsError {
    #[error("cannot read the serving certificate {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the serving certificate {cert} and key {key} cannot be used: {reason}")]
    Invalid {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
    #[error("cannot configure TLS: {0}")]
    Config(String),
}

/// The certificate and key as last read, and the files' content they came from.
struct Served {
    files: (Vec<u8>, Vec<u8>),
    key: Arc<CertifiedKey>,
}

/// Serves whatever certificate was last read from the files.
#[derive(Clone)]
struct Reloading {
    serving: TlsServing,
    current: Arc<RwLock<Served>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl std::fmt::Debug for Reloading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloading")
            .field("cert_file", &self.serving.cert_file)
            .finish()
    }
}

fn read_files(serving: &TlsServing) -> Result<(Vec<u8>, Vec<u8>), MetricsTlsError> {
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|source| MetricsTlsError::Read {
            path: path.clone(),
            source,
        })
    };
    Ok((read(&serving.cert_file)?, read(&serving.key_file)?))
}

fn certified(
    serving: &TlsServing,
    provider: &rustls::crypto::CryptoProvider,
    files: &(Vec<u8>, Vec<u8>),
) -> Result<Arc<CertifiedKey>, MetricsTlsError> {
    use rustls::pki_types::pem::PemObject as _;
    let invalid = |reason: String| MetricsTlsError::Invalid {
        cert: serving.cert_file.clone(),
        key: serving.key_file.clone(),
        reason,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&files.0)
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(format!("the certificate is not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("the certificate file holds no certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(&files.1)
        .map_err(|e| invalid(format!("the key is not a PEM private key: {e}")))?;
    let key = CertifiedKey::from_der(chain, key, provider).map_err(|e| invalid(e.to_string()))?;
    Ok(Arc::new(key))
}

impl Reloading {
    /// Reads the files again; true when a new certificate is now served.
    fn reload(&self) -> Result<bool, MetricsTlsError> {
        let files = read_files(&self.serving)?;
        if self.current.read().unwrap_or_else(|e| e.into_inner()).files == files {
            return Ok(false);
        }
        let key = certified(&self.serving, &self.provider, &files)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Served { files, key };
        Ok(true)
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .key
                .clone(),
        )
    }
}

/// Asks every client for a certificate and checks that it holds the key (the handshake's
/// signatures), without judging the certificate: [`authorize`] does, per request, so that a
/// refusal is an HTTP status as upstream's (`tls.RequestClientCert`).
#[derive(Debug)]
struct RequestClientCert {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The ring provider restricted to `settings`' suites.
fn provider(settings: &TlsSettings) -> rustls::crypto::CryptoProvider {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(names) = settings.suites() {
        provider
            .cipher_suites
            .retain(|s| names.contains(&go_name(s.suite())));
    }
    provider
}

/// Go's name of a rustls suite.
fn go_name(suite: rustls::CipherSuite) -> &'static str {
    use rustls::CipherSuite as C;
    match suite {
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        }
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => {
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        }
        _ => "",
    }
}

/// A server ready to serve: the TLS configuration (replaced when the cluster's TLS profile
/// changes; each connection takes the one current when it arrives) and the certificate
/// reloader.
#[derive(Clone)]
pub struct MetricsTls {
    config: Arc<RwLock<Arc<rustls::ServerConfig>>>,
    /// The settings `config` serves.
    served: Arc<RwLock<TlsSettings>>,
    reloading: Reloading,
}

/// The server configuration for `settings`, serving what `reloading` last read.
fn server_config(
    settings: &TlsSettings,
    reloading: &Reloading,
) -> Result<rustls::ServerConfig, MetricsTlsError> {
    let provider = Arc::new(provider(settings));
    let versions: &[&rustls::SupportedProtocolVersion] = if settings.tls12() {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let verifier = Arc::new(RequestClientCert {
        provider: provider.clone(),
    });
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| MetricsTlsError::Config(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(reloading.clone()));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl MetricsTls {
    /// Reads the certificate (an error when it cannot be used: upstream does not start either)
    /// and builds the TLS configuration with the flags' settings (until
    /// [`MetricsTls::serve_profile`] puts the cluster's profile under them).
    pub fn new(serving: &TlsServing) -> Result<MetricsTls, MetricsTlsError> {
        let provider = Arc::new(provider(&serving.settings));
        let files = read_files(serving)?;
        let key = certified(serving, &provider, &files)?;
        let reloading = Reloading {
            serving: serving.clone(),
            current: Arc::new(RwLock::new(Served { files, key })),
            provider,
        };
        let config = server_config(&serving.settings, &reloading)?;
        Ok(MetricsTls {
            config: Arc::new(RwLock::new(Arc::new(config))),
            served: Arc::new(RwLock::new(serving.settings.clone())),
            reloading,
        })
    }

    /// Serves `profile` (`None`: no cluster profile) with the flags' settings over it, from
    /// the next connection on; the settings now served, and whether they changed.
    pub fn serve_profile(
        &self,
        profile: Option<&ClusterProfile>,
    ) -> Result<(TlsSettings, bool), MetricsTlsError> {
        let settings = effective(profile, &self.reloading.serving.settings);
        if *self.served.read().unwrap_or_else(|e| e.into_inner()) == settings {
            return Ok((settings, false));
        }
        let config = server_config(&settings, &self.reloading)?;
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
        *self.served.write().unwrap_or_else(|e| e.into_inner()) = settings.clone();
        Ok((settings, true))
    }

    /// The configuration a connection arriving now gets.
    fn current(&self) -> Arc<rustls::ServerConfig> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The answer to a request over TLS whose peer presented `chain`.
fn respond_tls(
    endpoints: &dyn Endpoints,
    path: &str,
    chain: &[CertificateDer<'static>],
    client_ca: Option<&ClientCa>,
) -> Response<Full<Bytes>> {
    if path == "/metrics"
        && let Verdict::Refuse { status, body } = authorize(chain, client_ca, UnixTime::now())
    {
        tracing::debug!(status, reason = body.trim_end(), "metrics scrape refused");
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
        if let Ok(value) = "text/plain; charset=utf-8".parse() {
            response.headers_mut().insert("content-type", value);
        }
        return response;
    }
    respond(endpoints, path)
}

/// Serves `/metrics` (for the monitoring stack only), `/healthz` and `/readyz` over TLS on
/// `listener` until `shutdown` turns true, reading the certificate files again every
/// `reload_interval`. `client_ca` is the cluster's client CA as [`watch_client_ca`] keeps it.
pub async fn serve_tls(
    listener: TcpListener,
    endpoints: Arc<dyn Endpoints>,
    tls: MetricsTls,
    client_ca: watch::Receiver<Option<ClientCa>>,
    shutdown: watch::Receiver<bool>,
) {
    let reloading = tls.reloading.clone();
    let interval = reloading.serving.reload_interval;
    let mut stop = shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stop.changed() => return,
            }
            let reloader = reloading.clone();
            match tokio::task::spawn_blocking(move || reloader.reload()).await {
                Ok(Ok(true)) => tracing::info!(
                    cert = %reloading.serving.cert_file.display(),
                    "serving the rotated metrics certificate"
                ),
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%error, "keeping the metrics certificate served so far")
                }
                Err(error) => tracing::warn!(%error, "the certificate reload task failed"),
            }
        }
    });
    accept_each(listener, shutdown, "metrics server", move |stream| {
        let (endpoints, client_ca) = (endpoints.clone(), client_ca.clone());
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.current());
        async move {
            let stream = match acceptor.accept(stream).await {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::debug!(%error, "metrics TLS handshake failed");
                    return;
                }
            };
            let chain: Arc<[CertificateDer<'static>]> = (stream.get_ref().1.peer_certificates())
                .map(|certs| certs.iter().map(|c| c.clone().into_owned()).collect())
                .unwrap_or_default();
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let ca = client_ca.borrow().clone();
                let response =
                    respond_tls(endpoints.as_ref(), req.uri().path(), &chain, ca.as_ref());
                async move { Ok::<_, Infallible>(response) }
            });
            serve_http1(stream, service, "metrics server").await;
        }
    })
    .await
}

/// The client CA of `kube-system/extension-apiserver-authentication` (`client-ca-file`), kept
/// current by a watch (`None` until read, or while it is missing or unusable: scrapes are then
/// refused with a server error, as upstream's). The watch stops with `shutdown`.
pub fn watch_client_ca(
    client: kube::Client,
    mut shutdown: watch::Receiver<bool>,
) -> watch::Receiver<Option<ClientCa>> {
    use futures_util::StreamExt as _;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::{WatchStreamExt as _, watcher};
    let (tx, rx) = watch::channel(None);
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, CLIENT_CA_NAMESPACE);
    let config =
        watcher::Config::default().fields(&format!("metadata.name={CLIENT_CA_CONFIG_MAP}"));
    let mut events = watcher(api, config).default_backoff().boxed();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                _ = shutdown.changed() => return,
            };
            let Some(event) = event else { return };
            let config_map = match event {
                Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => Some(cm),
                Ok(watcher::Event::Delete(_)) => None,
                Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
                Err(error) => {
                    tracing::warn!(%error, "cannot watch the cluster's client CA");
                    continue;
                }
            };
            let pem =
                (config_map.and_then(|cm| cm.data)).and_then(|mut data| data.remove(CLIENT_CA_KEY));
            let ca = match pem.map(|pem| ClientCa::from_pem(pem.as_bytes())) {
                Some(Ok(ca)) => Some(ca),
                Some(Err(error)) => {
                    tracing::warn!(%error, configmap = %format!("{CLIENT_CA_NAMESPACE}/{CLIENT_CA_CONFIG_MAP}"), "the client CA is unusable; /metrics refuses every scrape");
                    None
                }
                None => {
                    tracing::warn!(configmap = %format!("{CLIENT_CA_NAMESPACE}/{CLIENT_CA_CONFIG_MAP}"), key = CLIENT_CA_KEY, "no client CA; /metrics refuses every scrape");
                    None
                }
            };
            if ca.is_some() {
                tracing::info!("loaded the cluster's client CA for /metrics");
            }
            if tx.send(ca).is_err() {
                return;
            }
        }
    });
    rx
}

/// The APIServer `cluster` (`config.openshift.io/v1`, `apiservers`).
const APISERVER_NAME: &str = "cluster";

/// Serves the cluster's TLS profile on `tls` as the APIServer `cluster` sets it, kept current
/// by a watch (upstream's `ProfileManager`): a profile that cannot be used keeps the settings
/// served so far; an APIServer that is missing, or does not ask components to adhere, leaves
/// the flags' settings alone. The watch stops with `shutdown`.
pub fn watch_tls_profile(
    client: kube::Client,
    tls: MetricsTls,
    mut shutdown: watch::Receiver<bool>,
) {
    use futures_util::StreamExt as _;
    use kube::api::DynamicObject;
    use kube::core::GroupVersionKind;
    use kube::discovery::ApiResource;
    use kube::runtime::{WatchStreamExt as _, watcher};
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "APIServer");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "apiservers");
    let api: kube::Api<DynamicObject> = kube::Api::all_with(client, &resource);
    let config = watcher::Config::default().fields(&format!("metadata.name={APISERVER_NAME}"));
    let mut events = watcher(api, config).default_backoff().boxed();
    tokio::spawn(async move {
        // What the last observation asked for; `Some(None)`: no APIServer.
        let mut last: Option<Option<ApiServerTls>> = None;
        let mut seen_in_list = false;
        let mut reported_error = false;
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                _ = shutdown.changed() => return,
            };
            let Some(event) = event else { return };
            let observed = match event {
                Ok(watcher::Event::Apply(object)) => Some(object),
                Ok(watcher::Event::InitApply(object)) => {
                    seen_in_list = true;
                    Some(object)
                }
                Ok(watcher::Event::Init) => {
                    seen_in_list = false;
                    continue;
                }
                Ok(watcher::Event::InitDone) if seen_in_list => continue,
                Ok(watcher::Event::InitDone | watcher::Event::Delete(_)) => None,
                Err(error) => {
                    if !reported_error {
                        tracing::info!(%error, "cannot watch the APIServer cluster for its TLS profile; serving the flags' TLS settings");
                        reported_error = true;
                    }
                    continue;
                }
            };
            let spec = match observed
                .map(|o| serde_json::from_value::<ApiServerTls>(o.data["spec"].clone()))
            {
                Some(Ok(spec)) => Some(spec),
                None => None,
                Some(Err(error)) => {
                    tracing::warn!(%error, "the APIServer cluster's TLS settings cannot be read; keeping the TLS settings served so far");
                    continue;
                }
            };
            if last.as_ref() == Some(&spec) {
                continue;
            }
            last = Some(spec.clone());
            let profile = match cluster_profile(spec.as_ref()) {
                Ok(profile) => profile,
                Err(error) => {
                    tracing::warn!(%error, "the cluster's TLS profile cannot be used; keeping the TLS settings served so far");
                    continue;
                }
            };
            if let Some(p) = profile.as_ref().filter(|p| !p.ignored_ciphers.is_empty()) {
                tracing::info!(profile = p.name, ciphers = ?p.ignored_ciphers, "the TLS profile names cipher suites this build does not implement; they are left out");
            }
            match tls.serve_profile(profile.as_ref()) {
                Ok((settings, true)) => tracing::info!(
                    profile = profile.as_ref().map_or("none", |p| p.name),
                    min_version = ?settings.min_version,
                    cipher_suites = ?settings.suites(),
                    "metrics server TLS settings changed"
                ),
                Ok((_, false)) => {}
                Err(error) => tracing::warn!(%error, "keeping the TLS settings served so far"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_are_restricted_by_their_go_names() {
        let all = provider(&TlsSettings::default());
        assert_eq!(all.cipher_suites.len(), 9);
        assert!(
            all.cipher_suites
                .iter()
                .all(|s| !go_name(s.suite()).is_empty())
        );
        let settings =
            TlsSettings::parse("", &["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string()]).unwrap();
        let names: Vec<&str> = (provider(&settings).cipher_suites.iter())
            .map(|s| go_name(s.suite()))
            .collect();
        assert_eq!(
            names,
            [
                "TLS_AES_256_GCM_SHA384",
                "TLS_AES_128_GCM_SHA256",
                "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            ]
        );
    }
}
