//! The shell of the update service client: GET the graph (`Accept: application/json`, within
//! a timeout, with an optional extra CA bundle, through the cluster's proxy when it has one
//! (else the environment's), then the pure [`super::graph`] reads it.

use std::time::Duration;

use super::Failure;
use super::graph::{Graph, Updates, parse, updates};
use super::request::{GraphRequest, Query, graph_request};
use super::transport::ProxySettings;
use crate::manifest::go_quote;

/// The media type of the Cincinnati v1 graph API.
pub const GRAPH_MEDIA_TYPE: &str = "application/json";

/// How the update service is reached.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The whole exchange: connecting, the response and its body.
    pub timeout: Duration,
    /// PEM certificates trusted besides the system's roots.
    pub ca_bundle: Option<Vec<u8>>,
    /// The cluster's proxy (the Proxy `cluster`), which replaces the environment's.
    pub proxy: Option<ProxySettings>,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            timeout: Duration::from_secs(60),
            ca_bundle: None,
            proxy: None,
        }
    }
}

/// The updates for `query`: upstream's checks, the request, the graph and the updates from
/// the current version.
pub async fn retrieve(query: &Query, options: &FetchOptions) -> Result<Updates, Failure> {
    let request = graph_request(query)?;
    let graph = fetch_graph(&request, options).await?;
    updates(&graph, &request)
}

/// GETs the graph `request` names. Upstream's failures: `InvalidRequest` (no client for the
/// settings), `RemoteFailed` (no response; Go's `Get "<url>": <cause>`, a timeout being
/// `context deadline exceeded`), `ResponseFailed` (not 200: `unexpected HTTP status: <code>
/// <text>`; or the body could not be read), `ResponseInvalid` (not a graph document).
pub async fn fetch_graph(request: &GraphRequest, options: &FetchOptions) -> Result<Graph, Failure> {
    let client = client(options)?;
    let get = |e: &reqwest::Error| format!("Get {}: {}", go_quote(&request.url), cause(e));
    let response = client
        .get(&request.url)
        .header(reqwest::header::ACCEPT, GRAPH_MEDIA_TYPE)
        .timeout(options.timeout)
        .send()
        .await
        .map_err(|e| Failure::RemoteFailed(get(&e)))?;
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        return Err(Failure::ResponseFailed(format!(
            "unexpected HTTP status: {status}"
        )));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| Failure::ResponseFailed(cause(&e)))?;
    parse(&body)
}

fn client(options: &FetchOptions) -> Result<reqwest::Client, Failure> {
    super::transport::client_builder(options.ca_bundle.as_deref(), options.proxy.as_ref())
        .map_err(Failure::InvalidRequest)?
        .build()
        .map_err(|e| Failure::InvalidRequest(cause(&e)))
}

/// The error's innermost causes, as Go's wrapped error texts read; a timeout is Go's
/// `context deadline exceeded`.
pub(crate) fn cause(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "context deadline exceeded".into();
    }
    let mut texts = vec![];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        texts.push(s.to_string());
        source = s.source();
    }
    // reqwest's own text names the URL again; the causes say what happened.
    texts.dedup();
    texts.pop().unwrap_or_else(|| e.to_string())
}
