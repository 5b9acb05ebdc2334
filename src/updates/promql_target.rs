//! Where `PromQL` risks are evaluated when `cvo start` is not given `--prometheus-url`: the
//! cluster's Thanos querier, as upstream's default `PromQLTarget`
//! (`pkg/clusterconditions/clusterconditions.go`): `https://thanos-querier.openshift-monitoring.
//! svc.cluster.local:9091`, reached at the ClusterIP of the Service
//! `openshift-monitoring/thanos-querier` looked up before each evaluation (the operator's pod
//! is on the host network, where service DNS may not resolve; the URL's host stays the TLS
//! server name), trusting the service CA (`/etc/tls/service-ca/service-ca.crt`) and sending the
//! operator's ServiceAccount token.
//!
//! The decisions (the ClusterIP a Service gives, the address connected to) are plain functions;
//! [`resolve`] is the shell that reads the Service.

use std::collections::BTreeMap;
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
    /// A stand-in for kube-proxy, for clusters that have none (the tests'): a connection to a
    /// `ClusterIP:port` key goes to its value instead. With a map, an address it does not name
    /// is never connected to (the evaluation fails, naming it). `None`: the ClusterIP itself.
    pub kube_proxy: Option<BTreeMap<SocketAddr, SocketAddr>>,
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
            kube_proxy: None,
        }),
        connect_to: None,
        unreachable: None,
    }
}

/// The URL's port (its scheme's default when it names none).
fn port(url: &str) -> Option<u16> {
    reqwest::Url::parse(url).ok()?.port_or_known_default()
}

/// The ClusterIP of `service` (`namespace/name` for the message), as upstream reads
/// `spec.clusterIP`: a headless or address-less Service has none.
pub fn cluster_ip(service: &Service) -> Result<IpAddr, String> {
    let ip = (service.spec.as_ref())
        .and_then(|s| s.cluster_ip.clone())
        .unwrap_or_default();
    ip.parse::<IpAddr>().map_err(|_| {
        format!(
            "the Service {}/{} has no ClusterIP ({ip:?})",
            service.metadata.namespace.as_deref().unwrap_or_default(),
            service.metadata.name.as_deref().unwrap_or_default()
        )
    })
}

/// Where the queries to `url` connect: the Service's `ip` at the URL's port (upstream's
/// `net.JoinHostPort(svc.Spec.ClusterIP, url.Port())`), through `service`'s kube-proxy
/// stand-in when it has one.
pub fn connect_address(
    service: &QuerierService,
    ip: IpAddr,
    url: &str,
) -> Result<SocketAddr, String> {
    let port = port(url).ok_or_else(|| format!("{url:?} has no port"))?;
    let cluster = SocketAddr::new(ip, port);
    match &service.kube_proxy {
        None => Ok(cluster),
        Some(routes) => routes.get(&cluster).copied().ok_or_else(|| {
            format!(
                "no route to {cluster} (the ClusterIP of {}/{}): the kube-proxy stand-in routes only {}",
                service.namespace,
                service.name,
                routes.keys().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            )
        }),
    }
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
    match found.and_then(|svc| cluster_ip(&svc)) {
        Ok(ip) => match connect_address(service, ip, url) {
            Ok(addr) => resolved.connect_to = Some(addr),
            Err(e) => resolved.unreachable = Some(e),
        },
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

    fn service(cluster_ip: Option<&str>) -> Service {
        let mut svc: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "openshift-monitoring", "name": "thanos-querier"},
            "spec": {}
        }))
        .unwrap();
        if let Some(spec) = svc.spec.as_mut() {
            spec.cluster_ip = cluster_ip.map(str::to_string);
        }
        svc
    }

    #[test]
    fn the_cluster_ip_of_a_service() {
        let cases: &[(Option<&str>, Result<&str, &str>)] = &[
            (Some("172.30.0.10"), Ok("172.30.0.10")),
            (Some("fd02::a"), Ok("fd02::a")),
            (
                Some("None"),
                Err(r#"the Service openshift-monitoring/thanos-querier has no ClusterIP ("None")"#),
            ),
            (
                None,
                Err(r#"the Service openshift-monitoring/thanos-querier has no ClusterIP ("")"#),
            ),
        ];
        for (given, want) in cases {
            let got = cluster_ip(&service(*given));
            let want = want
                .map(|ip| ip.parse::<IpAddr>().unwrap())
                .map_err(str::to_string);
            assert_eq!(got, want, "{given:?}");
        }
    }

    #[test]
    fn the_address_connected_to() {
        let querier = |routes: Option<&[(&str, &str)]>| QuerierService {
            namespace: DEFAULT_SERVICE_NAMESPACE.into(),
            name: DEFAULT_SERVICE_NAME.into(),
            kube_proxy: routes.map(|r| {
                (r.iter())
                    .map(|(from, to)| (from.parse().unwrap(), to.parse().unwrap()))
                    .collect()
            }),
        };
        let ip: IpAddr = "172.30.0.10".parse().unwrap();
        let routed: &[(&str, &str)] = &[("172.30.0.10:9091", "127.0.0.1:40000")];
        let other: &[(&str, &str)] = &[("172.30.0.11:9091", "127.0.0.1:40000")];
        type Routes<'a> = Option<&'a [(&'a str, &'a str)]>;
        let cases: &[(Routes, &str, Result<&str, &str>)] = &[
            // The URL's port at the ClusterIP, as upstream joins them.
            (None, DEFAULT_URL, Ok("172.30.0.10:9091")),
            (None, "https://querier.example", Ok("172.30.0.10:443")),
            (Some(routed), DEFAULT_URL, Ok("127.0.0.1:40000")),
            // Another Service's address, or another port: never connected to.
            (
                Some(other),
                DEFAULT_URL,
                Err(
                    "no route to 172.30.0.10:9091 (the ClusterIP of openshift-monitoring/thanos-querier): the kube-proxy stand-in routes only 172.30.0.11:9091",
                ),
            ),
            (
                Some(routed),
                "https://thanos-querier.openshift-monitoring.svc:9092",
                Err(
                    "no route to 172.30.0.10:9092 (the ClusterIP of openshift-monitoring/thanos-querier): the kube-proxy stand-in routes only 172.30.0.10:9091",
                ),
            ),
        ];
        for (routes, url, want) in cases {
            let got = connect_address(&querier(*routes), ip, url);
            let want = want
                .map(|a| a.parse::<SocketAddr>().unwrap())
                .map_err(str::to_string);
            assert_eq!(got, want, "{routes:?} {url}");
        }
    }
}
