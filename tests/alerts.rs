//! The PrometheusRule the bundled payload ships (upstream's `cluster-version-operator` alerts)
//! under `promtool test rules` (Debian's `prometheus` package ships promtool): each alert fires
//! in the situation it names, after its `for`, and stays quiet otherwise. The series carry the
//! labels a ServiceMonitor scrape gives them (`job`, `namespace`, `endpoint`). The annotations
//! (templates querying `console_url`) are left out of what is compared.
//!
//! Skipped when promtool is missing, unless `CVO_REQUIRE_PROMETHEUS=1` (`.ci/run`).

use std::process::Command;

use cvo::payload::{LoadOptions, Payload};

/// The `groups` of the payload's PrometheusRule, without annotations.
fn shipped_rules() -> serde_json::Value {
    let options = LoadOptions {
        cluster_profile: "self-managed-high-availability".into(),
        ..Default::default()
    };
    let payload = Payload::from_input(cvo::payload::source::bundled_input(), &options).unwrap();
    let rule = (payload.manifests.iter())
        .find(|m| m.gvk.kind == "PrometheusRule" && m.id.name == "cluster-version-operator")
        .expect("the payload ships the PrometheusRule cluster-version-operator");
    let mut groups = rule.object()["spec"]["groups"].clone();
    for group in groups.as_array_mut().unwrap() {
        for rule in group["rules"].as_array_mut().unwrap() {
            rule.as_object_mut().unwrap().remove("annotations");
        }
    }
    serde_json::json!({ "groups": groups })
}

/// The labels a scrape of the ServiceMonitor's endpoint gives every series.
const SCRAPED: &str = r#"job="cluster-version-operator",namespace="openshift-cluster-version",endpoint="metrics",instance="10.0.0.5:9099",service="cluster-version-operator""#;

/// `promtool test rules` cases: (name, fires, quiet) per alert, as YAML test groups.
fn cases() -> String {
    let s = SCRAPED;
    format!(
        r#"
# ClusterVersionOperatorDown: scrapes fail (cvo down, or refused) for 10 minutes.
- interval: 1m
  input_series:
  - series: 'up{{{s}}}'
    values: '0x20'
  alert_rule_test:
  - eval_time: 9m
    alertname: ClusterVersionOperatorDown
    exp_alerts: []
  - eval_time: 15m
    alertname: ClusterVersionOperatorDown
    exp_alerts:
    - exp_labels: {{severity: critical, namespace: openshift-cluster-version}}
- interval: 1m
  input_series:
  - series: 'up{{{s}}}'
    values: '1x20'
  alert_rule_test:
  - eval_time: 15m
    alertname: ClusterVersionOperatorDown
    exp_alerts: []

# CannotRetrieveUpdates: nothing retrieved for an hour while RetrievedUpdates=False (not NoChannel).
- interval: 1m
  input_series:
  - series: 'cluster_version_operator_update_retrieval_timestamp_seconds{{{s},name=""}}'
    values: '0x80'
  - series: 'cluster_operator_conditions{{{s},name="version",condition="RetrievedUpdates",reason="RemoteFailed"}}'
    values: '0x80'
  alert_rule_test:
  - eval_time: 50m
    alertname: CannotRetrieveUpdates
    exp_alerts: []
  - eval_time: 70m
    alertname: CannotRetrieveUpdates
    exp_alerts:
    - exp_labels: {{severity: warning, namespace: openshift-cluster-version}}
- interval: 1m
  input_series:
  - series: 'cluster_version_operator_update_retrieval_timestamp_seconds{{{s},name=""}}'
    values: '0x80'
  - series: 'cluster_operator_conditions{{{s},name="version",condition="RetrievedUpdates",reason="NoChannel"}}'
    values: '0x80'
  alert_rule_test:
  - eval_time: 70m
    alertname: CannotRetrieveUpdates
    exp_alerts: []

# UpdateAvailable: the update service recommends updates.
- interval: 1m
  input_series:
  - series: 'cluster_version_available_updates{{{s},upstream="<default>",channel="stable-4.18"}}'
    values: '2x5'
  alert_rule_test:
  - eval_time: 2m
    alertname: UpdateAvailable
    exp_alerts:
    - exp_labels: {{severity: info, namespace: openshift-cluster-version, upstream: "<default>", channel: stable-4.18}}
- interval: 1m
  input_series:
  - series: 'cluster_version_available_updates{{{s},upstream="<default>",channel="stable-4.18"}}'
    values: '0x5'
  alert_rule_test:
  - eval_time: 2m
    alertname: UpdateAvailable
    exp_alerts: []

# ClusterReleaseNotAccepted: the desired release not accepted for an hour.
- interval: 1m
  input_series:
  - series: 'cluster_operator_conditions{{{s},name="version",condition="ReleaseAccepted",reason="RetrievePayload"}}'
    values: '0x80'
  alert_rule_test:
  - eval_time: 50m
    alertname: ClusterReleaseNotAccepted
    exp_alerts: []
  - eval_time: 70m
    alertname: ClusterReleaseNotAccepted
    exp_alerts:
    - exp_labels: {{severity: warning, namespace: openshift-cluster-version, name: version, reason: RetrievePayload}}
- interval: 1m
  input_series:
  - series: 'cluster_operator_conditions{{{s},name="version",condition="ReleaseAccepted",reason="PayloadLoaded"}}'
    values: '1x80'
  alert_rule_test:
  - eval_time: 70m
    alertname: ClusterReleaseNotAccepted
    exp_alerts: []

# ClusterNotUpgradeable: Upgradeable=False for an hour.
- interval: 1m
  input_series:
  - series: 'cluster_operator_conditions{{{s},name="version",condition="Upgradeable",reason="ClusterOperatorsNotUpgradeable"}}'
    values: '0x80'
  alert_rule_test:
  - eval_time: 70m
    alertname: ClusterNotUpgradeable
    exp_alerts:
    - exp_labels: {{severity: info, namespace: openshift-cluster-version, name: version, condition: Upgradeable, endpoint: metrics}}
- interval: 1m
  input_series:
  - series: 'cluster_operator_conditions{{{s},name="version",condition="Upgradeable",reason=""}}'
    values: '1x80'
  alert_rule_test:
  - eval_time: 70m
    alertname: ClusterNotUpgradeable
    exp_alerts: []

# ClusterOperatorDown: an operator not Available for 10 minutes.
- interval: 1m
  input_series:
  - series: 'cluster_operator_up{{{s},name="etcd",version="4.18.0",reason="EtcdDown"}}'
    values: '0x20'
  alert_rule_test:
  - eval_time: 9m
    alertname: ClusterOperatorDown
    exp_alerts: []
  - eval_time: 15m
    alertname: ClusterOperatorDown
    exp_alerts:
    - exp_labels: {{severity: critical, namespace: openshift-cluster-version, name: etcd, reason: EtcdDown}}
- interval: 1m
  input_series:
  - series: 'cluster_operator_up{{{s},name="etcd",version="4.18.0",reason="AsExpected"}}'
    values: '1x20'
  alert_rule_test:
  - eval_time: 15m
    alertname: ClusterOperatorDown
    exp_alerts: []

# ClusterOperatorDegraded: Degraded=True (the ClusterVersion: Failing=True) for 30 minutes.
- interval: 1m
  input_series:
  - series: 'cluster_operator_up{{{s},name="etcd",version="4.18.0",reason="AsExpected"}}'
    values: '1x40'
  - series: 'cluster_operator_conditions{{{s},name="etcd",condition="Degraded",reason="DefragFailed"}}'
    values: '1x40'
  alert_rule_test:
  - eval_time: 25m
    alertname: ClusterOperatorDegraded
    exp_alerts: []
  - eval_time: 35m
    alertname: ClusterOperatorDegraded
    exp_alerts:
    - exp_labels: {{severity: warning, namespace: openshift-cluster-version, name: etcd, reason: DefragFailed}}
- interval: 1m
  input_series:
  - series: 'cluster_operator_up{{{s},name="version",version="4.18.0",reason=""}}'
    values: '1x40'
  - series: 'cluster_operator_conditions{{{s},name="version",condition="Failing",reason="ClusterOperatorDegraded"}}'
    values: '1x40'
  alert_rule_test:
  - eval_time: 35m
    alertname: ClusterOperatorDegraded
    exp_alerts:
    - exp_labels: {{severity: warning, namespace: openshift-cluster-version, name: version, reason: ClusterOperatorDegraded}}
- interval: 1m
  input_series:
  - series: 'cluster_operator_up{{{s},name="etcd",version="4.18.0",reason="AsExpected"}}'
    values: '1x40'
  - series: 'cluster_operator_conditions{{{s},name="etcd",condition="Degraded",reason="AsExpected"}}'
    values: '0x40'
  alert_rule_test:
  - eval_time: 35m
    alertname: ClusterOperatorDegraded
    exp_alerts: []

# ClusterOperatorFlapping: Available changing more than twice in 2 minutes, for 10 minutes.
- interval: 30s
  input_series:
  - series: 'cluster_operator_up{{{s},name="etcd",version="4.18.0",reason="AsExpected"}}'
    values: '1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0'
  alert_rule_test:
  - eval_time: 5m
    alertname: ClusterOperatorFlapping
    exp_alerts: []
  - eval_time: 15m
    alertname: ClusterOperatorFlapping
    exp_alerts:
    - exp_labels: {{severity: warning, namespace: openshift-cluster-version, name: etcd}}
- interval: 30s
  input_series:
  - series: 'cluster_operator_up{{{s},name="etcd",version="4.18.0",reason="AsExpected"}}'
    values: '1x40'
  alert_rule_test:
  - eval_time: 15m
    alertname: ClusterOperatorFlapping
    exp_alerts: []

# CannotEvaluateConditionalUpdates: a conditional update's Recommended=Unknown for an hour.
- interval: 1m
  input_series:
  - series: 'cluster_version_conditional_update_condition_seconds{{{s},version="4.18.4",condition="Recommended",status="Unknown",reason="EvaluationFailed"}}'
    values: '0x80'
  alert_rule_test:
  - eval_time: 70m
    alertname: CannotEvaluateConditionalUpdates
    exp_alerts:
    - exp_labels: {{severity: warning, version: 4.18.4, condition: Recommended, status: Unknown, reason: EvaluationFailed}}
- interval: 1m
  input_series:
  - series: 'cluster_version_conditional_update_condition_seconds{{{s},version="4.18.4",condition="Recommended",status="False",reason="ConsoleBreaks"}}'
    values: '0x80'
  alert_rule_test:
  - eval_time: 70m
    alertname: CannotEvaluateConditionalUpdates
    exp_alerts: []
"#
    )
}

#[test]
fn shipped_alerts_fire_in_their_situation_and_stay_quiet_otherwise() {
    if Command::new("promtool").arg("--version").output().is_err() {
        assert_ne!(
            std::env::var("CVO_REQUIRE_PROMETHEUS").as_deref(),
            Ok("1"),
            "promtool is missing and CVO_REQUIRE_PROMETHEUS=1 (hack/install-deps.sh installs prometheus)"
        );
        eprintln!("skipping: promtool is not installed");
        return;
    }
    let rules = shipped_rules();
    let alerts: Vec<&str> = (rules["groups"].as_array().unwrap().iter())
        .flat_map(|g| g["rules"].as_array().unwrap())
        .filter_map(|r| r["alert"].as_str())
        .collect();
    assert_eq!(
        alerts,
        [
            "ClusterVersionOperatorDown",
            "CannotRetrieveUpdates",
            "UpdateAvailable",
            "ClusterReleaseNotAccepted",
            "ClusterNotUpgradeable",
            "ClusterOperatorDown",
            "ClusterOperatorDegraded",
            "ClusterOperatorFlapping",
            "CannotEvaluateConditionalUpdates",
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rules.json"), rules.to_string()).unwrap();
    let tests = format!(
        "rule_files: [rules.json]\nevaluation_interval: 30s\ntests:{}",
        cases()
    );
    std::fs::write(dir.path().join("tests.yaml"), tests).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules", "tests.yaml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
