//! The update service client against a real HTTP server on 127.0.0.1 (a hyper server serving
//! graph documents in the update service's format): the request upstream sends, single- and
//! multi-architecture graphs, and each failure with the exact `RetrievedUpdates` reason and
//! message the status shows.

#[path = "support/prometheus.rs"]
mod prometheus_support;
#[path = "support/update_service.rs"]
mod update_service_support;

use std::time::Duration;

use serde_json::json;

use cvo::updates::fetch::{FetchOptions, retrieve};
use cvo::updates::{Failure, Query, Updates};
use update_service_support::{Reply, UpdateService, graph};

const ID: &str = "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61";

fn query(service: &UpdateService, version: &str, desired_arch: &str, current_arch: &str) -> Query {
    Query {
        upstream: service.url.clone(),
        cluster_id: ID.into(),
        desired_arch: desired_arch.into(),
        current_arch: current_arch.into(),
        channel: "stable-4.18".into(),
        version: version.into(),
    }
}

fn options(timeout: Duration) -> FetchOptions {
    FetchOptions {
        timeout,
        ca_bundle: None,
        proxy: None,
    }
}

async fn fetch(service: &UpdateService, version: &str) -> Result<Updates, Failure> {
    retrieve(
        &query(service, version, "amd64", "amd64"),
        &options(Duration::from_secs(10)),
    )
    .await
}

/// The condition the status shows for a failure.
fn condition(result: Result<Updates, Failure>) -> (&'static str, String) {
    let failure = result.expect_err("a failure");
    (failure.reason(), failure.message())
}

fn single_arch() -> String {
    graph(
        &[
            (
                "4.18.0",
                "quay.io/openshift-release-dev/ocp-release@sha256:00",
            ),
            (
                "4.18.1",
                "quay.io/openshift-release-dev/ocp-release@sha256:01",
            ),
            (
                "4.18.2",
                "quay.io/openshift-release-dev/ocp-release@sha256:02",
            ),
            (
                "4.18.3",
                "quay.io/openshift-release-dev/ocp-release@sha256:03",
            ),
        ],
        &[(0, 1), (0, 2), (1, 2)],
        json!([{
            "edges": [{"from": "4.18.0", "to": "4.18.3"}],
            "risks": [{
                "url": "https://issues.redhat.com/browse/OCPBUGS-1",
                "name": "ConsoleBreaks",
                "message": "The console may not load after the update.",
                "matchingRules": [{"type": "PromQL", "promql": {"promql": "group(cluster_version_capability{name=\"Console\"} == 1)"}}]
            }]
        }]),
    )
}

#[tokio::test]
async fn a_single_architecture_graph() {
    let service = UpdateService::start(|_| Reply::Graph(single_arch())).await;
    let updates = fetch(&service, "4.18.0").await.unwrap();

    let seen = service.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/api/upgrades_info/v1/graph");
    assert_eq!(
        seen[0].query,
        format!("arch=amd64&channel=stable-4.18&id={ID}&version=4.18.0")
    );
    assert_eq!(seen[0].accept.as_deref(), Some("application/json"));

    let available: Vec<_> = (updates.updates.iter())
        .map(|u| (u.version.as_str(), u.image.as_str()))
        .collect();
    assert_eq!(
        available,
        [
            (
                "4.18.2",
                "quay.io/openshift-release-dev/ocp-release@sha256:02"
            ),
            (
                "4.18.1",
                "quay.io/openshift-release-dev/ocp-release@sha256:01"
            ),
        ]
    );
    let first = &updates.updates[0];
    assert_eq!(
        first.url.as_deref(),
        Some("https://access.redhat.com/errata/4.18.2")
    );
    assert_eq!(
        first.channels,
        ["candidate-4.18", "fast-4.18", "stable-4.18"]
    );
    assert_eq!(updates.conditional.len(), 1);
    let conditional = &updates.conditional[0];
    assert_eq!(conditional.release.version, "4.18.3");
    assert_eq!(conditional.risks[0].name, "ConsoleBreaks");
    assert_eq!(conditional.risks[0].matching_rules[0].type_, "PromQL");
}

#[tokio::test]
async fn a_multi_architecture_graph() {
    // The service answers by `arch`: the multi graph only for `arch=multi`.
    let service = UpdateService::start(|query| {
        if query.contains("arch=multi") {
            Reply::Graph(graph(
                &[
                    ("4.18.0", "quay.io/multi@sha256:00"),
                    ("4.18.1", "quay.io/multi@sha256:01"),
                ],
                &[(0, 1)],
                json!([]),
            ))
        } else {
            Reply::Graph(single_arch())
        }
    })
    .await;
    let timeout = Duration::from_secs(10);
    let multi = retrieve(
        &query(&service, "4.18.0", "Multi", "Multi"),
        &options(timeout),
    )
    .await
    .unwrap();
    assert_eq!(multi.updates[0].image, "quay.io/multi@sha256:01");
    assert!(service.seen()[0].query.starts_with("arch=multi&"));
    // Migrating a single-architecture cluster: only its own version, as a multi release.
    let migrating = retrieve(
        &query(&service, "4.18.0", "Multi", "arm64"),
        &options(timeout),
    )
    .await
    .unwrap();
    let offered: Vec<_> = migrating.updates.iter().map(|u| u.image.as_str()).collect();
    assert_eq!(offered, ["quay.io/multi@sha256:00"]);
    assert!(migrating.conditional.is_empty());
}

#[tokio::test]
async fn a_server_error_is_response_failed() {
    let service = UpdateService::start(|_| Reply::Status(500)).await;
    assert_eq!(
        condition(fetch(&service, "4.18.0").await),
        (
            "ResponseFailed",
            "Unable to retrieve available updates: unexpected HTTP status: 500 Internal Server Error".into()
        )
    );
}

#[tokio::test]
async fn bad_json_is_response_invalid() {
    let service = UpdateService::start(|_| Reply::Graph("{\"nodes\": [".into())).await;
    let (reason, message) = condition(fetch(&service, "4.18.0").await);
    assert_eq!(reason, "ResponseInvalid");
    assert!(
        message.starts_with("Unable to retrieve available updates: EOF while parsing"),
        "{message}"
    );
}

#[tokio::test]
async fn a_missing_current_version_is_version_not_found() {
    let service = UpdateService::start(|_| Reply::Graph(single_arch())).await;
    assert_eq!(
        condition(fetch(&service, "4.17.9").await),
        (
            "VersionNotFound",
            "Unable to retrieve available updates: currently reconciling cluster version 4.17.9 not found in the \"stable-4.18\" channel".into()
        )
    );
}

#[tokio::test]
async fn a_slow_service_times_out() {
    let service =
        UpdateService::start(|_| Reply::Slow(Duration::from_secs(5), single_arch())).await;
    let q = query(&service, "4.18.0", "amd64", "amd64");
    let started = std::time::Instant::now();
    let result = retrieve(&q, &options(Duration::from_millis(300))).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let url = format!(
        "{}?arch=amd64&channel=stable-4.18&id={ID}&version=4.18.0",
        service.url
    );
    assert_eq!(
        condition(result),
        (
            "RemoteFailed",
            format!(
                "Unable to retrieve available updates: Get \"{url}\": context deadline exceeded"
            )
        )
    );
}

#[tokio::test]
async fn no_server_is_remote_failed() {
    let service = UpdateService::start(|_| Reply::Status(200)).await;
    let mut q = query(&service, "4.18.0", "amd64", "amd64");
    drop(service);
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    q.upstream = format!("http://{}/graph", listener.local_addr().unwrap());
    drop(listener);
    let (reason, message) = condition(retrieve(&q, &options(Duration::from_secs(5))).await);
    assert_eq!(reason, "RemoteFailed");
    assert!(
        message.starts_with("Unable to retrieve available updates: Get \"http://127.0.0.1:"),
        "{message}"
    );
}

#[tokio::test]
async fn checks_before_asking_send_nothing() {
    let service = UpdateService::start(|_| Reply::Graph(single_arch())).await;
    let q = Query {
        channel: String::new(),
        ..query(&service, "4.18.0", "amd64", "amd64")
    };
    assert_eq!(
        condition(retrieve(&q, &options(Duration::from_secs(5))).await),
        (
            "NoChannel",
            "The update channel has not been configured.".into()
        )
    );
    assert!(service.seen().is_empty());
}

/// A Prometheus instant-query answer: one sample of `value`.
fn sample(value: &str) -> String {
    json!({"status": "success", "data": {"resultType": "vector",
           "result": [{"metric": {}, "value": [1_700_000_000.0, value]}]}})
    .to_string()
}

/// Conditional updates `4.18.<n>`, each with one risk `<name>` whose PromQL rule is `<query>`.
fn risky(risks: &[(&str, &str)]) -> cvo::updates::AvailableUpdates {
    use cvo::updates::{
        ClusterCondition, ConditionalUpdate, ConditionalUpdateRisk, PromQlClusterCondition, Target,
    };
    let conditional = (risks.iter().enumerate())
        .map(|(n, (name, query))| ConditionalUpdate {
            release: Target {
                version: format!("4.18.{}", n + 1),
                image: format!("quay.io/r@sha256:{n}"),
                ..Target::default()
            },
            risks: vec![ConditionalUpdateRisk {
                url: format!("https://bug/{name}"),
                name: name.to_string(),
                message: format!("{name} hurts."),
                matching_rules: vec![ClusterCondition {
                    type_: "PromQL".into(),
                    promql: Some(PromQlClusterCondition {
                        promql: query.to_string(),
                    }),
                }],
            }],
        })
        .collect();
    cvo::updates::AvailableUpdates::record(
        None,
        Default::default(),
        std::time::Instant::now(),
        Ok(Updates {
            conditional,
            ..Updates::default()
        }),
    )
}

/// PromQL rules are sent as upstream's client sends them (GET `/api/v1/query` with `query` and
/// `time`), with the bearer token from the token file, read at every query; one answer a
/// second (the second rule waits out the throttle within the budget); 1 matches, 0 does not.
#[tokio::test]
async fn promql_rules_are_queried_with_the_bearer_token() {
    use cvo::updates::prometheus::{PrometheusOptions, evaluate};
    use cvo::updates::rules::Applies;

    let server = UpdateService::start(|query| {
        Reply::Graph(sample(if query.contains("yes") { "1" } else { "0" }))
    })
    .await;
    let base = server
        .url
        .trim_end_matches("/api/upgrades_info/v1/graph")
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let options = PrometheusOptions {
        url: Some(format!("{base}/prefix/")),
        token_file: Some(token.clone()),
        budget: Duration::from_secs(5),
        ..PrometheusOptions::default()
    };
    let mut updates = risky(&[("Yes", "vector(1) # yes"), ("No", "vector(0) # no")]);
    let started = std::time::Instant::now();
    evaluate(&mut updates, &options).await;
    assert_eq!(updates.risks["Yes"], Applies::Match);
    assert_eq!(updates.risks["No"], Applies::NotMatch);
    assert!(started.elapsed() >= Duration::from_millis(900), "throttled");
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for s in &seen {
        assert_eq!(s.path, "/prefix/api/v1/query");
        assert!(
            s.query.starts_with("query=vector%28") && s.query.contains("&time="),
            "{s:?}"
        );
        assert_eq!(s.authorization.as_deref(), Some("Bearer s3cret"));
    }

    // A token file that went away: the rule fails to evaluate, saying why.
    std::fs::remove_file(&token).unwrap();
    let mut updates = risky(&[("Yes", "vector(1) # yes")]);
    evaluate(&mut updates, &options).await;
    let Applies::EvaluationFailed(message) = &updates.risks["Yes"] else {
        panic!("{:?}", updates.risks);
    };
    let want = format!(
        "Could not evaluate exposure to update risk Yes (executing PromQL query: unable to read authorization credentials file {}: ",
        token.display()
    );
    assert!(message.starts_with(&want), "{message}");
}

/// One evaluation never takes longer than its budget: a rule still throttled when the budget
/// is spent fails with upstream's throttling message, and is evaluated at the next pass.
#[tokio::test]
async fn evaluation_is_bounded_by_its_budget() {
    use cvo::updates::prometheus::{PrometheusOptions, evaluate};
    use cvo::updates::rules::Applies;

    let server = UpdateService::start(|_| Reply::Graph(sample("1"))).await;
    let base = server
        .url
        .trim_end_matches("/api/upgrades_info/v1/graph")
        .to_string();
    let options = PrometheusOptions {
        url: Some(base),
        budget: Duration::from_millis(300),
        ..PrometheusOptions::default()
    };
    let mut updates = risky(&[("A", "vector(1) # a"), ("B", "vector(1) # b")]);
    let started = std::time::Instant::now();
    evaluate(&mut updates, &options).await;
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(updates.risks["B"], Applies::Match, "{:?}", updates.risks);
    let Applies::EvaluationFailed(message) = &updates.risks["A"] else {
        panic!("{:?}", updates.risks);
    };
    assert!(
        message.starts_with(
            "Could not evaluate exposure to update risk A (evaluation is throttled until "
        ),
        "{message}"
    );
    // The next evaluation, a second later, answers A from Prometheus and B from the cache.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    evaluate(&mut updates, &options).await;
    assert_eq!(updates.risks["A"], Applies::Match, "{:?}", updates.risks);
    assert_eq!(updates.risks["B"], Applies::Match);
}

/// Against a real Prometheus serving HTTPS with a certificate from a CA made here: trusted only
/// through `--prometheus-ca`, and its answers read as upstream reads them (a one-sample vector
/// of 1 or 0; a scalar, an empty vector, another value or a bad query fail with upstream's
/// texts and Prometheus' own error).
#[tokio::test]
async fn promql_rules_against_a_real_prometheus_over_tls() {
    use cvo::updates::prometheus::{PrometheusOptions, evaluate};
    use cvo::updates::rules::Applies;

    let (cert, _) = cvo::host::webhook::make_certificate(
        &["localhost".to_string()],
        k8s_openapi::jiff::Timestamp::now(),
    )
    .unwrap();
    let tls = prometheus_support::Tls {
        certificate: cert.certificate,
        key: cert.key,
        ca: cert.ca.clone(),
    };
    // Nothing to scrape: the queries need no series.
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let Some(prometheus) = prometheus_support::Prometheus::start_with(nowhere, Some(&tls))
        .await
        .unwrap()
    else {
        return;
    };
    let options = PrometheusOptions {
        url: Some(prometheus.url.clone()),
        ca_bundle: Some(cert.ca.into_bytes()),
        budget: Duration::from_secs(15),
        ..PrometheusOptions::default()
    };
    let mut updates = risky(&[
        ("Matches", "vector(1)"),
        ("DoesNot", "vector(0)"),
        ("Scalar", "scalar(vector(1))"),
        ("Empty", "absent(vector(1))"),
        ("Two", "vector(2)"),
        ("Bad", "group("),
    ]);
    evaluate(&mut updates, &options).await;
    let failure = |name: &str| match &updates.risks[name] {
        Applies::EvaluationFailed(m) => m
            .strip_prefix(&format!(
                "Could not evaluate exposure to update risk {name} ("
            ))
            .and_then(|m| m.split(")\n  ").next())
            .unwrap_or(m)
            .to_string(),
        other => format!("{other:?}"),
    };
    assert_eq!(updates.risks["Matches"], Applies::Match);
    assert_eq!(updates.risks["DoesNot"], Applies::NotMatch);
    assert_eq!(
        failure("Scalar"),
        "invalid PromQL result type is scalar, not vector"
    );
    assert_eq!(
        failure("Empty"),
        "invalid PromQL result length must be one, but is 0"
    );
    assert_eq!(failure("Two"), "invalid PromQL result (must be 0 or 1): 2");
    assert!(
        failure("Bad").starts_with("executing PromQL query: bad_data: "),
        "{}",
        failure("Bad")
    );

    // Without the CA the server is not trusted.
    let untrusted = PrometheusOptions {
        ca_bundle: None,
        ..options
    };
    let mut updates = risky(&[("Matches", "vector(1)")]);
    evaluate(&mut updates, &untrusted).await;
    let message = failure_of(&updates, "Matches");
    assert!(
        message.starts_with(&format!(
            "executing PromQL query: Get \"{}/api/v1/query?query=vector%281%29&time=",
            prometheus.url
        )),
        "{message}"
    );
}

fn failure_of(updates: &cvo::updates::AvailableUpdates, name: &str) -> String {
    match &updates.risks[name] {
        cvo::updates::rules::Applies::EvaluationFailed(m) => m
            .strip_prefix(&format!(
                "Could not evaluate exposure to update risk {name} ("
            ))
            .unwrap_or(m)
            .to_string(),
        other => format!("{other:?}"),
    }
}
