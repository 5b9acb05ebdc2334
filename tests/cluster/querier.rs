//! `PromQL` risks evaluated where upstream evaluates them when no `--prometheus-url` is given:
//! the cluster's Thanos querier. The Service `openshift-monitoring/thanos-querier` is real (the
//! apiserver gives it its ClusterIP); this cluster has no kube-proxy, so the default target's
//! kube-proxy stand-in routes that ClusterIP:9091, and only it, to the querier's front on
//! 127.0.0.1. The front is what kube-rbac-proxy is in front of thanos-querier: HTTPS with a
//! serving certificate signed by the service CA, for bearer tokens the apiserver authenticates
//! (a real TokenReview), passing queries on to a real Prometheus that scrapes this operator.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::authentication::v1::{
    TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;

use cvo::host::serve::{bind, serve};
use cvo::operator::Metrics;
use cvo::updates::promql_target::{
    DEFAULT_SERVICE_NAME, DEFAULT_SERVICE_NAMESPACE, DEFAULT_URL, default_target,
};

use super::Ctx;
use super::prometheus_support::Prometheus;
use super::start_tests::{clean_pass, status};
use super::update_service_support::{Reply, UpdateService};
use super::upgrade_tests::{ensure_console_breaks, install_old, recommended, risky_graph};

const OPERATOR_NAMESPACE: &str = "openshift-cluster-version";
const OPERATOR_ACCOUNT: &str = "cluster-version-operator";

/// The querier's front: who each query came from (the TokenReview's user) and what it asked.
struct Front {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<(String, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The user the apiserver says `token` belongs to; `None` when it does not authenticate it.
async fn review(admin: &kube::Client, token: &str) -> anyhow::Result<Option<String>> {
    let api: Api<TokenReview> = Api::all(admin.clone());
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api.create(&PostParams::default(), &review).await?;
    let status = answer.status.unwrap_or_default();
    Ok((status.authenticated == Some(true))
        .then(|| status.user.and_then(|u| u.username))
        .flatten())
}

/// Answers `req`: 401 without a token the apiserver authenticates, else Prometheus's answer.
async fn pass_on(
    req: Request<Incoming>,
    admin: &kube::Client,
    prometheus: &str,
    seen: &Mutex<Vec<(String, String)>>,
) -> anyhow::Result<Response<Full<Bytes>>> {
    let token = (req.headers().get("authorization"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let Some(user) = review(admin, token).await? else {
        return Ok(Response::builder()
            .status(401)
            .body(Full::new(Bytes::from_static(b"Unauthorized\n")))?);
    };
    let target = format!(
        "{prometheus}{}",
        req.uri().path_and_query().map_or("", |p| p.as_str())
    );
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((user, req.uri().query().unwrap_or_default().to_string()));
    let answer = reqwest::get(&target).await?;
    let code = answer.status().as_u16();
    Ok(Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(answer.bytes().await?))?)
}

impl Front {
    async fn start(
        admin: kube::Client,
        certificate: &cvo::host::webhook::ServingCertificate,
        prometheus: String,
    ) -> anyhow::Result<Front> {
        let acceptor =
            tokio_rustls::TlsAcceptor::from(Arc::new(cvo::host::webhook::tls_config(certificate)?));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (acceptor, admin, prometheus, seen) = (
                        acceptor.clone(),
                        admin.clone(),
                        prometheus.clone(),
                        seen.clone(),
                    );
                    tokio::spawn(async move {
                        let Ok(stream) = acceptor.accept(stream).await else {
                            return;
                        };
                        let service = service_fn(move |req| {
                            let (admin, prometheus, seen) =
                                (admin.clone(), prometheus.clone(), seen.clone());
                            async move {
                                let answer = pass_on(req, &admin, &prometheus, &seen).await;
                                Ok::<_, Infallible>(answer.unwrap_or_else(|e| {
                                    let mut r =
                                        Response::new(Full::new(Bytes::from(format!("{e:#}\n"))));
                                    *r.status_mut() = hyper::StatusCode::BAD_GATEWAY;
                                    r
                                }))
                            }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        };
        Ok(Front { addr, seen, task })
    }

    fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Creates the namespace `name` unless it exists.
async fn namespace(admin: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A bound token of the operator's ServiceAccount (what the kubelet mounts into its pod).
async fn operator_token(ctx: &Ctx<'_>) -> anyhow::Result<String> {
    namespace(&ctx.admin, OPERATOR_NAMESPACE).await?;
    let api: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), OPERATOR_NAMESPACE);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": OPERATOR_ACCOUNT}}))?;
    match api.create(&PostParams::default(), &account).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api
        .create_token_request(OPERATOR_ACCOUNT, &PostParams::default(), &request)
        .await?;
    answer
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .context("the TokenRequest gave no token")
}

/// The querier's Service as the monitoring stack ships it (the apiserver picks its ClusterIP).
async fn create_querier_service(ctx: &Ctx<'_>) -> anyhow::Result<std::net::IpAddr> {
    let api: Api<Service> = Api::namespaced(ctx.admin.clone(), DEFAULT_SERVICE_NAMESPACE);
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": DEFAULT_SERVICE_NAME},
        "spec": {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": "thanos-query"},
                 "ports": [{"name": "web", "port": 9091, "targetPort": "web"}]}
    }))?;
    let created = api.create(&PostParams::default(), &service).await?;
    cvo::updates::promql_target::cluster_ip(&created).map_err(anyhow::Error::msg)
}

async fn delete_querier_service(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let api: Api<Service> = Api::namespaced(ctx.admin.clone(), DEFAULT_SERVICE_NAMESPACE);
    match api
        .delete(DEFAULT_SERVICE_NAME, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// With no `--prometheus-url`, the risks are evaluated at the Service's ClusterIP, over TLS
/// trusting only the service CA, with the operator's ServiceAccount token: before the Service
/// exists the evaluation fails with upstream's `failure determine thanos IP`; once it does,
/// the real query answers (4.18.0 `Recommended=False` for a risk that matches this cluster,
/// 4.17.1 recommended), and every query reached Prometheus as the operator's ServiceAccount.
pub async fn risks_are_evaluated_at_the_cluster_querier(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let (listener, scraped) = bind("127.0.0.1:0".parse()?).await?;
    let (stop, stopped) = watch::channel(false);
    let server = tokio::spawn(serve(listener, metrics.clone(), stopped));
    let Some(prometheus) = Prometheus::start(scraped).await? else {
        return Ok(());
    };
    let result = async {
        delete_querier_service(ctx).await?;
        namespace(&ctx.admin, DEFAULT_SERVICE_NAMESPACE).await?;
        let dir = tempfile::tempdir()?;
        let names = [
            "thanos-querier.openshift-monitoring.svc".to_string(),
            "thanos-querier.openshift-monitoring.svc.cluster.local".to_string(),
        ];
        let (certificate, _) =
            cvo::host::webhook::make_certificate(&names, k8s_openapi::jiff::Timestamp::now())?;
        let (ca_file, token_file) = (dir.path().join("service-ca.crt"), dir.path().join("token"));
        std::fs::write(&ca_file, &certificate.ca)?;
        std::fs::write(&token_file, operator_token(ctx).await?)?;
        let front = Front::start(ctx.admin.clone(), &certificate, prometheus.url.clone()).await?;

        let body = risky_graph();
        let updates = UpdateService::start(move |_| Reply::Graph(body.clone())).await;

        let (api, mut options, mut state) = install_old(ctx).await?;
        let c = &ctx.admin;
        options.metrics = Some(metrics.clone());
        // What `cvo start` runs with no --prometheus-url, with the service CA and the token
        // where this test has them instead of the pod's mounts.
        let mut target = default_target(Duration::from_secs(10));
        ensure!(target.url.as_deref() == Some(DEFAULT_URL), "{target:?}");
        target.ca_file = Some(ca_file);
        target.token_file = Some(token_file);
        options.prometheus = target;
        clean_pass(c, &options, &mut state).await?;
        prometheus
            .wait_for(r#"cluster_version_capability{name="Console"} == 1"#)
            .await?;
        let upstream = json!({"spec": {"channel": "stable-4.18", "upstream": updates.url}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&upstream))
            .await?;

        // No Service yet: nothing to connect to.
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        let (status_, reason, message) = recommended(&s, "4.18.0");
        ensure!(
            status_ == "Unknown"
                && reason == "EvaluationFailed"
                && message.starts_with(
                    "Could not evaluate exposure to update risk ConsoleBreaks (failure determine thanos IP: services \"thanos-querier\" not found)"
                ),
            "{:?}",
            recommended(&s, "4.18.0")
        );

        // The Service, and kube-proxy's part for its ClusterIP and port only.
        let cluster_ip = create_querier_service(ctx).await?;
        let routes = BTreeMap::from([(std::net::SocketAddr::new(cluster_ip, 9091), front.addr)]);
        if let Some(service) = options.prometheus.service.as_mut() {
            service.kube_proxy = Some(routes);
        }
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        ensure_console_breaks(&s)?;
        ensure!(
            recommended(&s, "4.17.1").1 == "NotExposedToRisks",
            "{:?}",
            recommended(&s, "4.17.1")
        );
        let seen = front.seen();
        let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT}");
        ensure!(
            seen.len() == 2 && seen.iter().all(|(who, _)| *who == user),
            "{seen:?}"
        );
        ensure!(
            (seen.iter()).any(|(_, q)| q.contains("Console")) && seen.iter().any(|(_, q)| q.contains("Insights")),
            "{seen:?}"
        );
        delete_querier_service(ctx).await?;
        anyhow::Ok(())
    }
    .await;
    stop.send(true)?;
    server.await?;
    drop(prometheus);
    result
}
