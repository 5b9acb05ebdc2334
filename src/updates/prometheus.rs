//! The shell of risk evaluation: `PromQL` rules sent to a Prometheus HTTP API
//! (`GET <url>/api/v1/query?query=...&time=...`, as upstream's client falls back to GET), with an
//! optional CA bundle (the only roots trusted, as upstream's `CAFile`) and bearer token file
//! (read at every query, as upstream's `CredentialsFile`), through the throttled
//! [`super::cache`]. One evaluation is bounded by a time budget: a pass never waits longer.
//! The firing alerts are read from the same Prometheus ([`alerts`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;
use tokio::time::Instant;

use super::alerts::{Alert, alerts_url, parse_alerts};
use super::cache::{CacheStep, MatchCache, MatchResult};
use super::fetch::cause;
use super::graph::ClusterCondition;
use super::promql::{interpret, query_url, time_parameter};
use super::retrieval::AvailableUpdates;
use super::rules::{Applies, RiskConditions, RuleMatch, RuleStep, risks_in_order};
use crate::manifest::go_quote;

/// Why a `PromQL` rule has no answer when no Prometheus is configured.
pub const NO_PROMETHEUS: &str =
    "no Prometheus to evaluate PromQL cluster conditions with (cvo start --prometheus-url)";

/// Where and how `PromQL` rules are evaluated.
#[derive(Debug, Clone)]
pub struct PrometheusOptions {
    /// The Prometheus (or Thanos querier) base URL; `None`: `PromQL` rules fail to evaluate.
    pub url: Option<String>,
    /// PEM certificates: the only roots trusted for `url`, when set.
    pub ca_bundle: Option<Vec<u8>>,
    /// PEM certificates read at each evaluation: the only roots trusted for `url` (upstream's
    /// `CAFile`, the service CA of its default target).
    pub ca_file: Option<PathBuf>,
    /// A file holding the bearer token, read at every query.
    pub token_file: Option<PathBuf>,
    /// How long one evaluation of the risks may take, queries and throttling included.
    pub budget: Duration,
    /// The Service whose ClusterIP `url` is reached at ([`super::promql_target`]).
    pub service: Option<super::promql_target::QuerierService>,
    /// Where `url`'s host was resolved to for this evaluation (the URL's host stays the TLS
    /// server name).
    pub connect_to: Option<SocketAddr>,
    /// Why `url` cannot be reached this evaluation (its Service could not be looked up).
    pub unreachable: Option<String>,
}

impl Default for PrometheusOptions {
    fn default() -> Self {
        PrometheusOptions {
            url: None,
            ca_bundle: None,
            ca_file: None,
            token_file: None,
            budget: Duration::from_secs(10),
            service: None,
            connect_to: None,
            unreachable: None,
        }
    }
}

/// Evaluates every risk of `updates.conditional` (each once) into `updates.risks`.
pub async fn evaluate(updates: &mut AvailableUpdates, options: &PrometheusOptions) {
    let deadline = Instant::now() + options.budget;
    let client = client(options);
    let url = (options.url.as_deref()).map(|url| connect_url(url, options.connect_to));
    let AvailableUpdates {
        conditional,
        cache,
        risks,
        ..
    } = updates;
    let mut conditions = RiskConditions::new();
    for risk in risks_in_order(conditional) {
        let result = match_risk(risk, cache, &client, url.as_deref(), options, deadline).await;
        tracing::info!(risk = %risk.name, result = ?result, "evaluated conditional update risk");
        conditions.insert(risk.name.clone(), Applies::from_result(risk, result));
    }
    *risks = conditions;
}

/// Evaluates one risk's matching rules through `cache` within the budget (a preflight check's
/// `PromQL`): whether it applies, as for an update service's risk.
pub async fn evaluate_risk(
    risk: &super::graph::ConditionalUpdateRisk,
    cache: &mut MatchCache,
    options: &PrometheusOptions,
) -> Applies {
    let deadline = Instant::now() + options.budget;
    let client = client(options);
    let url = (options.url.as_deref()).map(|url| connect_url(url, options.connect_to));
    let result = match_risk(risk, cache, &client, url.as_deref(), options, deadline).await;
    Applies::from_result(risk, result)
}

/// Walks a risk's matching rules, asking Prometheus (through `cache`) for its `PromQL` ones.
async fn match_risk(
    risk: &super::graph::ConditionalUpdateRisk,
    cache: &mut MatchCache,
    client: &Result<reqwest::Client, String>,
    url: Option<&str>,
    options: &PrometheusOptions,
    deadline: Instant,
) -> MatchResult {
    let mut rules = RuleMatch::new(&risk.matching_rules);
    loop {
        match rules.step() {
            RuleStep::Done(result) => return result,
            RuleStep::Query(rule) => {
                let answer = match (url, client) {
                    (None, _) => Err(NO_PROMETHEUS.to_string()),
                    (Some(_), Err(e)) => Err(e.clone()),
                    (Some(url), Ok(client)) => {
                        let target = Target {
                            client,
                            url,
                            options,
                            deadline,
                        };
                        through_cache(cache, rule, &target).await
                    }
                };
                rules.record(answer);
            }
        }
    }
}

/// The alerts Prometheus has (`GET <url>/api/v1/alerts`, as upstream's alert getter asks
/// them), within the evaluation budget; an error when no Prometheus is configured or it did not
/// answer.
pub async fn alerts(options: &PrometheusOptions) -> Result<Vec<Alert>, String> {
    let url = options
        .url
        .as_deref()
        .ok_or_else(|| NO_PROMETHEUS.to_string())?;
    let client = client(options)?;
    let url = alerts_url(url);
    let request = client.get(&url).timeout(options.budget);
    let request = with_token(request, options)
        .await
        .map_err(|e| format!("failed to get alerts: {e}"))?;
    let get =
        |e: &reqwest::Error| format!("failed to get alerts: Get {}: {}", go_quote(&url), cause(e));
    let response = request.send().await.map_err(|e| get(&e))?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(|e| get(&e))?;
    parse_alerts(status, &body)
}

/// What a query needs.
struct Target<'a> {
    client: &'a reqwest::Client,
    url: &'a str,
    options: &'a PrometheusOptions,
    deadline: Instant,
}

/// Upstream's cached `Match` for `rule`: throttled answers are waited out while the budget
/// allows, else they are the answer (upstream evaluates them again a second later).
async fn through_cache(
    cache: &mut MatchCache,
    rule: &ClusterCondition,
    target: &Target<'_>,
) -> MatchResult {
    loop {
        let step = match cache.begin(rule, Timestamp::now()) {
            CacheStep::Evaluate { key, rule: query } => {
                let result = send(&query, target).await;
                cache.complete(rule, &key, result, Timestamp::now())
            }
            step => step,
        };
        match step {
            CacheStep::Answer(result) => return result,
            CacheStep::Throttled { until, message } => {
                let wait = Duration::try_from(until.duration_since(Timestamp::now()))
                    .unwrap_or_default()
                    + Duration::from_millis(10);
                if Instant::now() + wait >= target.deadline {
                    return Err(message);
                }
                tokio::time::sleep(wait).await;
            }
            CacheStep::Evaluate { .. } => {}
        }
    }
}

/// The URL queries go to: `url`, with the port of `connect_to` when that differs (reqwest's
/// resolve override, which [`client`] uses so that the URL's host stays the TLS server name,
/// connects at the URL's port whatever the override's port; only the tests' kube-proxy stand-in
/// routes to another port).
fn connect_url(url: &str, connect_to: Option<SocketAddr>) -> String {
    let Some(addr) = connect_to else {
        return url.to_string();
    };
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.port_or_known_default() != Some(addr.port()) => {
            match parsed.set_port(Some(addr.port())) {
                Ok(()) => parsed.to_string().trim_end_matches('/').to_string(),
                Err(()) => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

fn client(options: &PrometheusOptions) -> Result<reqwest::Client, String> {
    crate::oci::registry::install_crypto_provider();
    if let Some(why) = &options.unreachable {
        return Err(why.clone());
    }
    let mut builder =
        reqwest::Client::builder().user_agent(concat!("cvo/", env!("CARGO_PKG_VERSION")));
    if let (Some(addr), Some(host)) = (
        options.connect_to,
        (options.url.as_deref())
            .and_then(|u| reqwest::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_string)),
    ) {
        builder = builder.resolve(&host, addr);
    }
    let read;
    let ca_bundle = match (&options.ca_bundle, &options.ca_file) {
        (Some(pem), _) => Some(pem),
        (None, Some(file)) => {
            read = std::fs::read(file).map_err(|e| {
                format!(
                    "creating PromQL round-tripper: unable to load specified CA cert {}: {e}",
                    file.display()
                )
            })?;
            Some(&read)
        }
        (None, None) => None,
    };
    if let Some(pem) = ca_bundle {
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
            format!(
                "creating PromQL round-tripper: the CA bundle: {}",
                cause(&e)
            )
        })?;
        builder = builder.tls_certs_only(certs);
    }
    builder
        .build()
        .map_err(|e| format!("creating PromQL client: {}", cause(&e)))
}

/// One instant query for `rule` at the current time, within what is left of the budget.
async fn send(rule: &ClusterCondition, target: &Target<'_>) -> MatchResult {
    let query = rule.promql.as_ref().map_or("", |p| p.promql.as_str());
    let now = Timestamp::now();
    let time = time_parameter(now.as_second(), now.subsec_nanosecond());
    let url = reqwest::Url::parse_with_params(
        &query_url(target.url),
        [("query", query), ("time", time.as_str())],
    )
    .map_err(|e| format!("executing PromQL query: {e}"))?;
    let timeout = target.deadline.saturating_duration_since(Instant::now());
    let request = target.client.get(url.clone()).timeout(timeout);
    let request = with_token(request, target.options)
        .await
        .map_err(|e| format!("executing PromQL query: {e}"))?;
    let get = |e: &reqwest::Error| {
        format!(
            "executing PromQL query: Get {}: {}",
            go_quote(url.as_str()),
            cause(e)
        )
    };
    let response = request.send().await.map_err(|e| get(&e))?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(|e| get(&e))?;
    interpret(status, &body)
}

/// `request` with the bearer token of `options.token_file`, read now (as upstream's
/// `CredentialsFile`, so a rotated token is picked up).
async fn with_token(
    request: reqwest::RequestBuilder,
    options: &PrometheusOptions,
) -> Result<reqwest::RequestBuilder, String> {
    let Some(file) = &options.token_file else {
        return Ok(request);
    };
    let token = tokio::fs::read_to_string(file).await.map_err(|e| {
        format!(
            "unable to read authorization credentials file {}: {e}",
            file.display()
        )
    })?;
    Ok(request.bearer_auth(token.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_go_to_the_routed_port() {
        let url = "https://thanos-querier.openshift-monitoring.svc.cluster.local:9091";
        let cases = [
            (None, url),
            // The ClusterIP at the URL's port: the URL as it is.
            (Some("172.30.0.10:9091"), url),
            (
                Some("127.0.0.1:40000"),
                "https://thanos-querier.openshift-monitoring.svc.cluster.local:40000",
            ),
            (Some("127.0.0.1:443"), "https://querier.example/prefix"),
        ];
        for (connect_to, want) in cases {
            let given = if want.ends_with("/prefix") {
                "https://querier.example/prefix"
            } else {
                url
            };
            let connect_to = connect_to.map(|a| a.parse().unwrap());
            assert_eq!(connect_url(given, connect_to), want, "{connect_to:?}");
        }
    }
}
