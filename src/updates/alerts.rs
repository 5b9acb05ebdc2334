//! Firing alerts as update risks: the Prometheus alerts API's answer (`GET /api/v1/alerts`)
//! read, and each alert that should give an admin pause before updating turned into what
//! upstream makes of it. The operator's `Alert` risk source (upstream `pkg/risk/alert`) makes a
//! conditional update risk of each alert name, which applies to every update; `cvo upgrade
//! recommend` (`oc adm upgrade recommend`'s `alerts` precheck) makes a condition of each alert.
//! Both write the same details. Pure: the HTTP status and body in.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Deserialize;

use super::promql::Response;

/// The risk URL of an alert without a `runbook_url` annotation.
pub const NO_RUNBOOK_URL: &str =
    "https://github.com/openshift/runbooks/tree/master/alerts?runbook=notfound";
/// The alerts API below a Prometheus base URL.
pub const ALERTS_PATH: &str = "api/v1/alerts";

/// The alerts endpoint for `base` (a Prometheus or Thanos querier base URL).
pub fn alerts_url(base: &str) -> String {
    format!("{}/{ALERTS_PATH}", base.trim_end_matches('/'))
}

/// One alert of the API's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// `pending` or `firing`.
    #[serde(default)]
    pub state: String,
    /// When the alert became active (RFC 3339).
    #[serde(default, deserialize_with = "timestamp")]
    pub active_at: Option<Timestamp>,
}

/// An RFC 3339 time (jiff's serde support is not built without the `cluster` feature).
fn timestamp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    (Option::<String>::deserialize(d)?)
        .map(|text| text.parse().map_err(serde::de::Error::custom))
        .transpose()
}

impl Alert {
    fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }

    fn annotation(&self, name: &str) -> &str {
        self.annotations.get(name).map_or("", String::as_str)
    }

    pub fn name(&self) -> &str {
        self.label("alertname")
    }

    /// The summary annotation (else the alert's name), ending with a period.
    pub fn summary(&self) -> String {
        let mut summary = match self.annotation("summary") {
            "" => self.name().to_string(),
            s => s.to_string(),
        };
        if !summary.ends_with('.') {
            summary.push('.');
        }
        summary
    }

    /// `<summary> The alert description is: <description> | <message> <runbook>`, as upstream
    /// and oc write it.
    pub fn details(&self) -> String {
        let (message, description) = (self.annotation("message"), self.annotation("description"));
        let description = match (message.is_empty(), description.is_empty()) {
            (false, false) => format!(" The alert description is: {description} | {message}"),
            (true, false) => format!(" The alert description is: {description}"),
            (false, true) => format!(" The alert description is: {message}"),
            (true, true) => " The alert has no description.".to_string(),
        };
        let runbook = match self.annotation("runbook_url") {
            "" => "<alert does not have a runbook_url annotation>",
            url => url,
        };
        format!("{}{description} {runbook}", self.summary())
    }

    /// `Namespace=<ns>, PodDisruptionBudget=<pdb>. ` before the details of the
    /// PodDisruptionBudget alerts, whose texts do not name them.
    fn with_budget(&self, details: String) -> String {
        format!(
            "Namespace={}, PodDisruptionBudget={}. {details}",
            self.label("namespace"),
            self.label("poddisruptionbudget")
        )
    }
}

/// Why the API's answer could not be used.
pub fn parse_alerts(status: u16, body: &[u8]) -> Result<Vec<Alert>, String> {
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        alerts: Vec<Alert>,
    }
    let response: Response<Data> = serde_json::from_slice(body).map_err(|e| {
        if (200..300).contains(&status) {
            format!("failed to get alerts: the answer is not the alerts API's: {e}")
        } else {
            format!("failed to get alerts: server returned HTTP status {status}")
        }
    })?;
    if response.status != "success" {
        return Err(format!(
            "failed to get alerts: {}: {}",
            response.error_type, response.error
        ));
    }
    Ok(response.data.map(|d| d.alerts).unwrap_or_default())
}

/// The alerts that are PodDisruptionBudget alerts, node alerts or image pull alerts (upstream
/// `internal.HavePullWaiting`, `internal.HaveNodes`).
const PULL_WAITING: &[&str] = &["KubeContainerWaiting"];
const NODES: &[&str] = &[
    "KubeletHealthState",
    "KubeNodeNotReady",
    "KubeNodeReadinessFlapping",
    "KubeNodeUnreachable",
];
const VIRT: &[&str] = &["VirtHandlerDaemonSetRolloutFailing", "VMCannotBeEvicted"];
const PDB_LIMIT: &str = "PodDisruptionBudgetLimit";
const PDB_AT_LIMIT: &str = "PodDisruptionBudgetAtLimit";

const CRITICAL_IMPACT: &str = "suggesting significant cluster issues worth investigating";
const PDB_IMPACT: &str = "which might slow node drains";
const SLOW_REDISTRIBUTION: &str =
    "which may slow workload redistribution during rolling node updates";
const PRECHECK_IMPACT: &str = "suggesting issues worth investigating before updating the cluster";

/// A risk an alert makes (upstream `alertsToRisks`): named after the alert, applying (`Applies`
/// `True`, reason `Alert:<state>`) since the alert became active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRisk {
    pub name: String,
    /// The alert's summary.
    pub message: String,
    /// Its runbook, else [`NO_RUNBOOK_URL`].
    pub url: String,
    /// `Alert:firing`.
    pub reason: String,
    /// `<severity> alert <name> <state>, <impact>. <details>`; the alerts of one name joined by
    /// `; `.
    pub condition_message: String,
    /// When the earliest of its alerts became active.
    pub since: Option<Timestamp>,
}

/// Upstream `AlertConditionMessage`.
fn condition_message(alert: &Alert, impact: &str, details: &str) -> String {
    format!(
        "{} alert {} {}, {impact}. {details}",
        alert.label("severity"),
        alert.name(),
        alert.state
    )
}

/// The risks the firing alerts make, by alert name, sorted: critical alerts; the
/// PodDisruptionBudget, image pull, node and virtualization alerts whatever their severity;
/// and those labelled `openShiftUpdatePrecheck="true"`. Pending alerts and alerts without a
/// name make none.
pub fn alert_risks(alerts: &[Alert]) -> Vec<AlertRisk> {
    let mut risks: BTreeMap<String, AlertRisk> = BTreeMap::new();
    for alert in alerts {
        let name = alert.name();
        if name.is_empty() || alert.state == "pending" {
            continue;
        }
        let details = alert.details();
        let (impact, details) = if alert.label("severity") == "critical" {
            let details = if name == PDB_LIMIT {
                alert.with_budget(details)
            } else {
                details
            };
            (CRITICAL_IMPACT, details)
        } else if name == PDB_AT_LIMIT {
            (PDB_IMPACT, alert.with_budget(details))
        } else if PULL_WAITING.contains(&name) || NODES.contains(&name) || VIRT.contains(&name) {
            (SLOW_REDISTRIBUTION, details)
        } else if alert.label("openShiftUpdatePrecheck") == "true" {
            (PRECHECK_IMPACT, details)
        } else {
            continue;
        };
        let message = condition_message(alert, impact, &details);
        match risks.get_mut(name) {
            Some(risk) => {
                risk.condition_message = format!("{}; {message}", risk.condition_message);
                if let (Some(since), Some(active)) = (risk.since, alert.active_at)
                    && active < since
                {
                    risk.since = Some(active);
                }
            }
            None => {
                let url = match alert.annotation("runbook_url") {
                    "" => NO_RUNBOOK_URL.to_string(),
                    url => url.to_string(),
                };
                risks.insert(
                    name.to_string(),
                    AlertRisk {
                        name: name.to_string(),
                        message: alert.summary(),
                        url,
                        reason: format!("Alert:{}", alert.state),
                        condition_message: message,
                        since: alert.active_at,
                    },
                );
            }
        }
    }
    risks.into_values().collect()
}

/// A condition of `cvo upgrade recommend`'s alert precheck (oc's `acceptableCondition`):
/// `status` `True` when nothing of its kind fires; `False` for a firing alert, which
/// `--accept <acceptance name>` (the alert's name) accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertCondition {
    /// `recommended/<Kind>Alerts[/<alert>/<n>]`.
    pub type_: String,
    pub status: &'static str,
    pub reason: String,
    pub message: String,
    /// For `False` conditions: the name `--accept` takes.
    pub acceptance_name: Option<String>,
}

/// oc's `alerts` precheck: a `False` condition per firing alert of a kind worth a look, then a
/// `True` one for each kind with none firing.
pub fn recommend_conditions(alerts: &[Alert]) -> Vec<AlertCondition> {
    let mut conditions = Vec::new();
    let mut seen = BTreeMap::<&str, bool>::new();
    for alert in alerts {
        let name = alert.name();
        if name.is_empty() || alert.state == "pending" {
            continue;
        }
        let details = alert.details();
        let severity = alert.label("severity");
        let (kind, impact, details) = if severity == "critical" {
            let details = if name == PDB_LIMIT {
                seen.insert("PodDisruptionBudget", true);
                alert.with_budget(details)
            } else {
                details
            };
            ("CriticalAlerts", CRITICAL_IMPACT, details)
        } else if name == PDB_AT_LIMIT {
            seen.insert("PodDisruptionBudget", true);
            (
                "PodDisruptionBudgetAlerts",
                PDB_IMPACT,
                alert.with_budget(details),
            )
        } else if PULL_WAITING.contains(&name) {
            ("PodImagePullAlerts", SLOW_REDISTRIBUTION, details)
        } else if NODES.contains(&name) {
            ("NodeAlerts", SLOW_REDISTRIBUTION, details)
        } else if alert.label("openShiftUpdatePrecheck") == "true" {
            ("UpdatePrecheckAlerts", PRECHECK_IMPACT, details)
        } else if VIRT.contains(&name) {
            ("VirtAlerts", SLOW_REDISTRIBUTION, details)
        } else {
            continue;
        };
        seen.insert(kind, true);
        conditions.push(AlertCondition {
            type_: format!("recommended/{kind}/{name}/{}", conditions.len()),
            status: "False",
            reason: format!("Alert:{}", alert.state),
            message: format!(
                "{severity} alert {name} {}, {impact}. {details}",
                alert.state
            ),
            acceptance_name: Some(name.to_string()),
        });
    }
    let quiet = [
        (
            "CriticalAlerts",
            "CriticalAlerts",
            "No critical alerts firing.",
        ),
        (
            "PodDisruptionBudget",
            "PodDisruptionBudgetAlerts",
            "No PodDisruptionBudget alerts firing.",
        ),
        (
            "PodImagePullAlerts",
            "PodImagePullAlerts",
            "No Pod container image pull alerts firing.",
        ),
        ("NodeAlerts", "NodeAlerts", "No Node alerts firing."),
        (
            "UpdatePrecheckAlerts",
            "UpdatePrecheckAlerts",
            "No alerts with the openShiftUpdatePrecheck label true are firing.",
        ),
    ];
    for (key, kind, message) in quiet {
        if !seen.contains_key(key) {
            conditions.push(AlertCondition {
                type_: format!("recommended/{kind}"),
                status: "True",
                reason: "AsExpected".into(),
                message: message.into(),
                acceptance_name: None,
            });
        }
    }
    conditions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(labels: &[(&str, &str)], annotations: &[(&str, &str)], state: &str) -> Alert {
        let map = |pairs: &[(&str, &str)]| {
            (pairs.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        Alert {
            labels: map(labels),
            annotations: map(annotations),
            state: state.into(),
            active_at: None,
        }
    }

    const FULL: &[(&str, &str)] = &[
        ("summary", "summary"),
        ("description", "description"),
        ("message", "message"),
        ("runbook_url", "http://runbook.example.com/runbooks/bbb.md"),
    ];

    #[test]
    fn budget_alerts_of_one_name_are_one_risk() {
        // Upstream's Test_alertRisk "basic case".
        let t1: Timestamp = "2026-03-04T00:41:19Z".parse().unwrap();
        let t2: Timestamp = "2026-03-04T00:38:19Z".parse().unwrap();
        let pdb = |name: &str, at| Alert {
            active_at: Some(at),
            ..alert(
                &[
                    ("alertname", "PodDisruptionBudgetAtLimit"),
                    ("severity", "severity"),
                    ("namespace", "namespace"),
                    ("poddisruptionbudget", name),
                ],
                FULL,
                "firing",
            )
        };
        let limit = Alert {
            active_at: Some(t1),
            ..alert(
                &[
                    ("alertname", "PodDisruptionBudgetLimit"),
                    ("severity", "critical"),
                    ("namespace", "namespace"),
                    ("poddisruptionbudget", "some-pdb"),
                ],
                &[
                    ("summary", "summary"),
                    ("description", "description"),
                    ("message", "message"),
                    ("runbook_url", "http://runbook.example.com/runbooks/abc.md"),
                ],
                "firing",
            )
        };
        let pending = alert(&[("alertname", "not-important")], &[], "pending");
        let risks = alert_risks(&[limit, pending, pdb("some-pdb", t1), pdb("another-pdb", t2)]);
        assert_eq!(
            risks,
            [
                AlertRisk {
                    name: "PodDisruptionBudgetAtLimit".into(),
                    message: "summary.".into(),
                    url: "http://runbook.example.com/runbooks/bbb.md".into(),
                    reason: "Alert:firing".into(),
                    condition_message: "severity alert PodDisruptionBudgetAtLimit firing, which might slow node drains. Namespace=namespace, PodDisruptionBudget=some-pdb. summary. The alert description is: description | message http://runbook.example.com/runbooks/bbb.md; severity alert PodDisruptionBudgetAtLimit firing, which might slow node drains. Namespace=namespace, PodDisruptionBudget=another-pdb. summary. The alert description is: description | message http://runbook.example.com/runbooks/bbb.md".into(),
                    since: Some(t2),
                },
                AlertRisk {
                    name: "PodDisruptionBudgetLimit".into(),
                    message: "summary.".into(),
                    url: "http://runbook.example.com/runbooks/abc.md".into(),
                    reason: "Alert:firing".into(),
                    condition_message: "critical alert PodDisruptionBudgetLimit firing, suggesting significant cluster issues worth investigating. Namespace=namespace, PodDisruptionBudget=some-pdb. summary. The alert description is: description | message http://runbook.example.com/runbooks/abc.md".into(),
                    since: Some(t1),
                },
            ]
        );
    }

    #[test]
    fn an_alerts_api_answer_is_read() {
        let body = br#"{"status":"success","data":{"alerts":[{"labels":{"alertname":"TestAlert","severity":"critical"},
            "annotations":{"summary":"Test summary","description":"Test description."},"state":"firing",
            "activeAt":"2026-03-04T00:38:19.02109776Z","value":"1e+00"},
            {"labels":{"alertname":"Watchdog","severity":"none"},"annotations":{},"state":"firing"}]}}"#;
        let alerts = parse_alerts(200, body).unwrap();
        let risks = alert_risks(&alerts);
        assert_eq!(risks.len(), 1, "{risks:?}");
        assert_eq!(risks[0].url, NO_RUNBOOK_URL);
        assert_eq!(
            risks[0].condition_message,
            "critical alert TestAlert firing, suggesting significant cluster issues worth investigating. Test summary. The alert description is: Test description. <alert does not have a runbook_url annotation>"
        );
        assert_eq!(
            risks[0].since.map(|t| t.as_second()),
            Some(
                "2026-03-04T00:38:19Z"
                    .parse::<Timestamp>()
                    .unwrap()
                    .as_second()
            )
        );
        assert_eq!(
            parse_alerts(
                200,
                br#"{"status":"error","errorType":"bad_data","error":"x"}"#
            ),
            Err("failed to get alerts: bad_data: x".into())
        );
        assert_eq!(
            parse_alerts(503, b"down"),
            Err("failed to get alerts: server returned HTTP status 503".into())
        );
        assert_eq!(
            alerts_url("https://p:9091/"),
            "https://p:9091/api/v1/alerts"
        );
    }

    #[test]
    fn kinds_and_descriptions() {
        let a = |name: &str, severity: &str, annotations: &[(&str, &str)]| {
            alert(
                &[("alertname", name), ("severity", severity)],
                annotations,
                "firing",
            )
        };
        let precheck = alert(
            &[
                ("alertname", "EtcdBackupMissing"),
                ("severity", "warning"),
                ("openShiftUpdatePrecheck", "true"),
            ],
            &[("message", "No backup.")],
            "firing",
        );
        let risks = alert_risks(&[
            a("KubeNodeNotReady", "warning", &[]),
            a("KubeContainerWaiting", "info", &[("description", "d")]),
            a("SomethingElse", "warning", &[]),
            precheck,
        ]);
        let got: Vec<_> = risks
            .iter()
            .map(|r| (r.name.as_str(), r.condition_message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "EtcdBackupMissing",
                    "warning alert EtcdBackupMissing firing, suggesting issues worth investigating before updating the cluster. EtcdBackupMissing. The alert description is: No backup. <alert does not have a runbook_url annotation>"
                ),
                (
                    "KubeContainerWaiting",
                    "info alert KubeContainerWaiting firing, which may slow workload redistribution during rolling node updates. KubeContainerWaiting. The alert description is: d <alert does not have a runbook_url annotation>"
                ),
                (
                    "KubeNodeNotReady",
                    "warning alert KubeNodeNotReady firing, which may slow workload redistribution during rolling node updates. KubeNodeNotReady. The alert has no description. <alert does not have a runbook_url annotation>"
                ),
            ]
        );
    }

    #[test]
    fn recommend_conditions_name_each_alert_then_the_quiet_kinds() {
        let firing = alert(
            &[("alertname", "KubeNodeNotReady"), ("severity", "warning")],
            &[],
            "firing",
        );
        let conditions = recommend_conditions(&[firing]);
        let got: Vec<_> = conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status, c.acceptance_name.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "recommended/NodeAlerts/KubeNodeNotReady/0",
                    "False",
                    Some("KubeNodeNotReady")
                ),
                ("recommended/CriticalAlerts", "True", None),
                ("recommended/PodDisruptionBudgetAlerts", "True", None),
                ("recommended/PodImagePullAlerts", "True", None),
                ("recommended/UpdatePrecheckAlerts", "True", None),
            ]
        );
        assert_eq!(
            conditions[0].message,
            "warning alert KubeNodeNotReady firing, which may slow workload redistribution during rolling node updates. KubeNodeNotReady. The alert has no description. <alert does not have a runbook_url annotation>"
        );
    }
}
