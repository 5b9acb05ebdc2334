//! Who may read `/metrics`, as upstream's `authHandler` decides it (`pkg/cvo/metrics.go`,
//! openshift/cluster-version-operator main): a scrape must present a client certificate that
//! chains to the cluster's client CA (`kube-system/extension-apiserver-authentication`,
//! `client-ca-file`), and its common name must be the monitoring stack's Prometheus
//! (`system:serviceaccount:openshift-monitoring:prometheus-k8s`). The TLS layer only asks for
//! the certificate; the verdict is given here, so that a refused scrape gets an HTTP status
//! (401, 403) and upstream's message rather than a failed handshake.
//!
//! Pure: the chain is verified with webpki against the CA given, at the time given.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;

/// The identity allowed to scrape (upstream's `metricsAllowedClientCommonName`).
pub const MONITORING_IDENTITY: &str = "system:serviceaccount:openshift-monitoring:prometheus-k8s";

/// The cluster's client CA: what client certificates must chain to.
#[derive(Clone)]
pub struct ClientCa {
    verifier: Arc<dyn ClientCertVerifier>,
    /// How many certificates the bundle held.
    pub certificates: usize,
}

impl std::fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCa")
            .field("certificates", &self.certificates)
            .finish()
    }
}

impl ClientCa {
    /// The CA bundle `pem` (one or more certificates).
    pub fn from_pem(pem: &[u8]) -> Result<ClientCa, String> {
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("not a PEM certificate bundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("not a CA certificate: {e}"))?;
        }
        let certificates = roots.len();
        if certificates == 0 {
            return Err("no certificate in the bundle".into());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(ClientCa {
            verifier,
            certificates,
        })
    }
}

/// What a request to `/metrics` gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// The status and body upstream answers with.
    Refuse {
        status: u16,
        body: String,
    },
}

fn refuse(status: u16, message: impl Into<String>) -> Verdict {
    // Go's http.Error ends the body with a newline.
    Verdict::Refuse {
        status,
        body: message.into() + "\n",
    }
}

/// Upstream's decision for a request whose TLS peer presented `chain` (leaf first), with the
/// client CA as currently known (`None`: not loaded, a server error as upstream's).
pub fn authorize(chain: &[CertificateDer<'_>], ca: Option<&ClientCa>, now: UnixTime) -> Verdict {
    let Some((leaf, intermediates)) = chain.split_first() else {
        return refuse(401, "client certificate required");
    };
    let Some(ca) = ca else {
        return refuse(500, "internal server error");
    };
    if ca
        .verifier
        .verify_client_cert(leaf, intermediates, now)
        .is_err()
    {
        return refuse(401, "client certificate not trusted");
    }
    let common_name = common_name(leaf).unwrap_or_default();
    if common_name != MONITORING_IDENTITY {
        return refuse(403, format!("unauthorized common name: {common_name}"));
    }
    Verdict::Allow
}

/// The subject's common name of a DER certificate (the first, as Go's `Subject.CommonName`).
pub fn common_name(cert: &CertificateDer<'_>) -> Option<String> {
    use x509_cert::der::Decode as _;
    let cert = x509_cert::Certificate::from_der(cert.as_ref()).ok()?;
    let subject = &cert.tbs_certificate.subject;
    (subject.0.iter())
        .flat_map(|rdn| rdn.0.iter())
        .find(|atv| atv.oid == x509_cert::der::oid::db::rfc4519::CN)
        .and_then(|atv| atv_string(&atv.value))
}

fn atv_string(value: &x509_cert::der::Any) -> Option<String> {
    use x509_cert::der::asn1::{PrintableStringRef, Utf8StringRef};
    use x509_cert::der::{Tag, Tagged as _};
    match value.tag() {
        Tag::Utf8String => Utf8StringRef::try_from(value)
            .ok()
            .map(|s| s.as_str().to_string()),
        Tag::PrintableString => PrintableStringRef::try_from(value)
            .ok()
            .map(|s| s.as_str().to_string()),
        _ => std::str::from_utf8(value.value()).ok().map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA, and a client certificate for `cn` it signed (DER).
    fn issue(cn: &str) -> (String, CertificateDer<'static>) {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "client CA");
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let mut leaf = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name.push(rcgen::DnType::CommonName, cn);
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let leaf = leaf
            .signed_by(&rcgen::KeyPair::generate().unwrap(), &ca)
            .unwrap();
        (ca.pem(), leaf.der().clone())
    }

    #[test]
    fn only_the_monitoring_identity_from_the_client_ca_may_scrape() {
        let now = UnixTime::now();
        let (ca_pem, prometheus) = issue(MONITORING_IDENTITY);
        let ca = ClientCa::from_pem(ca_pem.as_bytes()).unwrap();
        assert_eq!(ca.certificates, 1);
        assert_eq!(
            common_name(&prometheus).as_deref(),
            Some(MONITORING_IDENTITY)
        );
        assert_eq!(
            authorize(std::slice::from_ref(&prometheus), Some(&ca), now),
            Verdict::Allow
        );
        assert_eq!(
            authorize(&[], Some(&ca), now),
            refuse(401, "client certificate required")
        );
        assert_eq!(
            authorize(std::slice::from_ref(&prometheus), None, now),
            refuse(500, "internal server error")
        );
        // Another CA's certificate for the right name.
        let (_, stranger) = issue(MONITORING_IDENTITY);
        assert_eq!(
            authorize(&[stranger], Some(&ca), now),
            refuse(401, "client certificate not trusted")
        );
        // The right CA, another identity (same CA: issue a second leaf under it).
        let (other_ca_pem, other) = issue("system:serviceaccount:default:nosy");
        let other_ca = ClientCa::from_pem(other_ca_pem.as_bytes()).unwrap();
        assert_eq!(
            authorize(&[other], Some(&other_ca), now),
            refuse(
                403,
                "unauthorized common name: system:serviceaccount:default:nosy"
            )
        );
    }

    #[test]
    fn a_bundle_must_hold_certificates() {
        assert!(ClientCa::from_pem(b"").is_err());
        assert!(ClientCa::from_pem(b"hello").is_err());
    }
}
