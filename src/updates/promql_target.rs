//! Where `PromQL` risks are evaluated when `cvo start` is not given `--prometheus-url`: the
//! cluster's Thanos querier, as upstream's default `PromQLTarget`
//! (`pkg/clusterconditions/clusterconditions.go`): `https://thanos-querier.openshift-monitoring.
//! svc.cluster.local:9091`, reached at the ClusterIP of the Service
//! `openshift-monitoring/thanos-querier` looked up before each evaluation (the operator's pod
//! is on the host network, where service DNS may not resolve; the URL's host stays the TLS
//! server name), trusting the service CA (`/etc/tls/service-ca/service-ca.crt`) and sending the
//! operator's ServiceAccount token.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Service;

use super::prometheus::PrometheusOptions;

/// Upstream's default target.
pub const DEFAULT_URL: &str = "https://thanos-querier.openshift-monitoring.svc.cluster.local:9091";
pub const DEFAULT_SERVICE_NAMESPACE: &str = "openshift-monitoring";
pub const DEFAULT_SERVICE_NAME: &str = "thanos-querier";
pub const DEFAULT_CA_FILE: &str = "/etc/tls/service-ca/service-ca.crt";
pub const DEFAULT_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// A Service whose ClusterIP is where the querier is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuerierService {
    pub namespace: String,
    pub name: String,
    /// Connect here instead of the ClusterIP. For tests on a cluster without kube-proxy, which
    /// would route the ClusterIP to the querier.
    pub route_to: Option<IpAddr>,
}

/// Upstream's default: the Thanos querier Service, its CA and the operator's token.
pub fn default_target(budget: std::time::Duration) -> PrometheusOptions {
    PrometheusOptions {
        url: Some(DEFAULT_URL.to_string()),
        ca_bundle: None,
        ca_file: Some(PathBuf::from(DEFAULT_CA_FILE)),
        token_file: Some(PathBuf::from(DEFAULT_TOKEN_FILE)),
        budget,
        service: Some(QuerierService {
            namespace: DEFAULT_SERVICE_NAMESPACE.into(),
            name: DEFAULT_SERVICE_NAME.into(),
            route_to: None,
        }),
        connect_to: None,
        unreachable: None,
    }
}

/// The URL's port (its scheme's default when it names none).
fn port(url: &str) -> Option<u16> {
    reqwest::Url::parse(url).ok()?.port_or_known_default()
}

/// `options` with the querier's address looked up (upstream `PromQL.Host`): every query of this
/// evaluation goes to the Service's ClusterIP; when it cannot be looked up, every query fails
/// with upstream's `failure determine thanos IP: ...`.
pub async fn resolve(client: &kube::Client, options: &PrometheusOptions) -> PrometheusOptions {
    let mut resolved = options.clone();
    let (Some(service), Some(url)) = (&options.service, &options.url) else {
        return resolved;
    };
    let api: kube::Api<Service> = kube::Api::namespaced(client.clone(), &service.namespace);
    let found = api.get(&service.name).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 404 => {
            format!("services {:?} not found", service.name)
        }
        other => other.to_string(),
    });
    let ip = found.and_then(|svc| {
        let ip = (svc.spec.and_then(|s| s.cluster_ip)).unwrap_or_default();
        ip.parse::<IpAddr>().map_err(|_| {
            format!(
                "the Service {}/{} has no ClusterIP ({ip:?})",
                service.namespace, service.name
            )
        })
    });
    match ip {
        Ok(ip) => {
            let ip = service.route_to.unwrap_or(ip);
            resolved.connect_to = port(url).map(|port| SocketAddr::new(ip, port));
        }
        Err(e) => resolved.unreachable = Some(format!("failure determine thanos IP: {e}")),
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_upstreams_thanos_querier() {
        let target = default_target(std::time::Duration::from_secs(10));
        assert_eq!(target.url.as_deref(), Some(DEFAULT_URL));
        assert_eq!(port(DEFAULT_URL), Some(9091));
        assert_eq!(port("https://example.com"), Some(443));
        assert_eq!(
            target.service.map(|s| (s.namespace, s.name)),
            Some(("openshift-monitoring".into(), "thanos-querier".into()))
        );
    }
}
