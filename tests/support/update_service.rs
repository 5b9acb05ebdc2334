//! A real update service on 127.0.0.1 for tests: a hyper HTTP/1 server answering every GET
//! with what the test's closure decides from the request's query (a graph document, a status,
//! or a delayed answer), recording each request's query and `Accept` header. Over HTTPS with
//! [`UpdateService::start_tls`]; as an HTTP proxy too (a proxied request names its absolute URL,
//! recorded as `host`).

// Each test binary uses its own part of it.
#![allow(dead_code)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// What the server answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with this body (`Content-Type: application/json`).
    Graph(String),
    /// This status, with a short text body.
    Status(u16),
    /// The graph, after waiting this long.
    Slow(Duration, String),
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The host of an absolute-form request (one sent to a proxy).
    pub host: Option<String>,
    pub path: String,
    pub query: String,
    pub accept: Option<String>,
    pub authorization: Option<String>,
}

type Decide = dyn Fn(&str) -> Reply + Send + Sync;

pub struct UpdateService {
    /// `http(s)://127.0.0.1:PORT/api/upgrades_info/v1/graph`.
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl UpdateService {
    /// Serves until dropped; `decide` gets the request's query.
    pub async fn start(decide: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve(decide, None).await
    }

    /// Over HTTPS with `certificate` (`url` is `https://127.0.0.1:PORT/...`).
    pub async fn start_tls(
        decide: impl Fn(&str) -> Reply + Send + Sync + 'static,
        certificate: &cvo::host::webhook::ServingCertificate,
    ) -> Self {
        let config = cvo::host::webhook::tls_config(certificate).unwrap();
        Self::serve(
            decide,
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
        )
        .await
    }

    async fn serve(
        decide: impl Fn(&str) -> Reply + Send + Sync + 'static,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Self {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let decide: Arc<Decide> = Arc::new(decide);
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let seen = seen.clone();
                    let decide = decide.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req: Request<Incoming>| {
                            let seen = seen.clone();
                            let decide = decide.clone();
                            async move { Ok::<_, Infallible>(answer(req, &seen, &*decide).await) }
                        });
                        match tls {
                            Some(tls) => {
                                let Ok(stream) = tls.accept(stream).await else {
                                    return;
                                };
                                let _ = http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                            None => {
                                let _ = http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        }
                    });
                }
            })
        };
        UpdateService {
            url: format!("{scheme}://{addr}/api/upgrades_info/v1/graph"),
            seen,
            task,
        }
    }

    /// The requests so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for UpdateService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    req: Request<Incoming>,
    seen: &Mutex<Vec<Seen>>,
    decide: &Decide,
) -> Response<Full<Bytes>> {
    let query = req.uri().query().unwrap_or_default().to_string();
    seen.lock().unwrap().push(Seen {
        host: req.uri().host().map(str::to_string),
        path: req.uri().path().to_string(),
        query: query.clone(),
        accept: (req.headers().get("accept")).and_then(|v| v.to_str().ok().map(str::to_string)),
        authorization: (req.headers().get("authorization"))
            .and_then(|v| v.to_str().ok().map(str::to_string)),
    });
    let graph = |body: String| {
        Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    match decide(&query) {
        Reply::Graph(body) => graph(body),
        Reply::Slow(wait, body) => {
            tokio::time::sleep(wait).await;
            graph(body)
        }
        Reply::Status(code) => Response::builder()
            .status(StatusCode::from_u16(code).unwrap())
            .body(Full::new(Bytes::from_static(b"bad things")))
            .unwrap(),
    }
}

/// A graph document in the update service's format: `nodes` (`version`, `payload`,
/// `metadata`), `edges` by index, and `conditionalEdges` with their risks.
pub fn graph(
    nodes: &[(&str, &str)],
    edges: &[(usize, usize)],
    conditional: serde_json::Value,
) -> String {
    let nodes: Vec<_> = nodes
        .iter()
        .map(|(version, image)| {
            serde_json::json!({
                "version": version,
                "payload": image,
                "metadata": {
                    "url": format!("https://access.redhat.com/errata/{version}"),
                    "io.openshift.upgrades.graph.release.channels": "stable-4.18,fast-4.18,candidate-4.18",
                },
            })
        })
        .collect();
    let edges: Vec<_> = edges.iter().map(|(a, b)| [a, b]).collect();
    serde_json::json!({"nodes": nodes, "edges": edges, "conditionalEdges": conditional}).to_string()
}
