//! The series of upstream's cluster metrics (`pkg/cvo/metrics.go`, `Collect`), from the
//! ClusterVersion as this pass leaves it and the ClusterOperators: `cluster_version{type,
//! version, image, from_version}` (seconds since the epoch), `cluster_version_available_updates
//! {upstream, channel}`, `cluster_operator_up{name, version, reason}` and `cluster_operator_conditions
//! {name, condition, reason}`. Pure; [`super::metrics`] holds them for `/metrics`.

use crate::cluster::{ClusterOperator, ClusterVersion, ClusterVersionStatus, UpdateHistory};

/// One `cluster_version` series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VersionSeries {
    pub type_: &'static str,
    pub version: String,
    pub image: String,
    pub from_version: String,
    pub value: i64,
}

/// Every series of one scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterSeries {
    pub version: Vec<VersionSeries>,
    /// `(upstream, channel, count)`, when the cluster asks an update service or has updates.
    pub available_updates: Option<(String, String, i64)>,
    /// `(name, version, reason, up)`: up is `Available=True`; reason the `Available`
    /// condition's, or `NoAvailableCondition`.
    pub operator_up: Vec<(String, String, String, i64)>,
    /// `(name, condition, reason, 1|0)`; `Unknown` conditions are left out.
    pub operator_conditions: Vec<(String, String, String, i64)>,
    /// `cluster_version_conditional_update_condition_seconds`: each conditional update's
    /// `Recommended` condition, `(version, condition, status, reason)` and its last transition
    /// (seconds since the epoch).
    pub conditional_update_conditions: Vec<ConditionalUpdateSeries>,
}

/// One `cluster_version_conditional_update_condition_seconds` series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConditionalUpdateSeries {
    pub version: String,
    pub condition: String,
    pub status: String,
    pub reason: String,
    pub value: i64,
}

/// Upstream `collectConditionalUpdates`: the `Recommended` condition of every conditional
/// update.
fn conditional_update_conditions(status: &ClusterVersionStatus) -> Vec<ConditionalUpdateSeries> {
    (status.conditional_updates.iter())
        .flat_map(|u| {
            (u.conditions.iter())
                .filter(|c| c.type_ == "Recommended")
                .map(|c| ConditionalUpdateSeries {
                    version: u.release.version.clone().unwrap_or_default(),
                    condition: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    value: c.last_transition_time.0.as_second(),
                })
        })
        .collect()
}

/// The applied release: what `type="current"` reports.
pub struct Current<'a> {
    pub version: &'a str,
    pub image: &'a str,
    /// When the release was created (seconds); `0` when unknown, as upstream reports it.
    pub created: i64,
}

/// Upstream's `Collect`, over `cv` (spec, metadata and this pass's status).
pub fn series(
    cv: &ClusterVersion,
    status: &ClusterVersionStatus,
    current: &Current<'_>,
    operators: &[ClusterOperator],
) -> ClusterSeries {
    let history = &status.history;
    let seconds = |t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| t.0.as_second();
    let version_of = |h: &UpdateHistory| h.version.clone().unwrap_or_default();
    let mut out = ClusterSeries::default();
    // The last completed update, and the completed one before it.
    let completed_at = history.iter().position(|h| h.state == "Completed");
    let completed = completed_at.map(|i| &history[i]);
    let completed_version = completed.map(version_of).unwrap_or_default();
    if let (Some(i), Some(done)) = (completed_at, completed) {
        let previous = (history[i + 1..].iter()).find(|h| h.state == "Completed");
        out.version.push(VersionSeries {
            type_: "completed",
            version: version_of(done),
            image: done.image.clone(),
            from_version: previous.map(version_of).unwrap_or_default(),
            value: done.completion_time.as_ref().map(seconds).unwrap_or(0),
        });
    }
    // Upstream's pair: `initial` answers which release the cluster was installed with;
    // `cluster` how old clusters at the current release are and where they started (no
    // `from_version` until one update, the install, has completed). Both are the
    // ClusterVersion's age.
    let initial = history.last();
    let created = (cv.metadata.creation_timestamp.as_ref())
        .map(seconds)
        .unwrap_or(0);
    let initial_version = initial.map(version_of).unwrap_or_default();
    out.version.push(VersionSeries {
        type_: "initial",
        version: initial_version.clone(),
        image: initial.map(|h| h.image.clone()).unwrap_or_default(),
        from_version: String::new(),
        value: created,
    });
    out.version.push(VersionSeries {
        type_: "cluster",
        version: current.version.into(),
        image: current.image.into(),
        from_version: if completed.is_some() {
            initial_version
        } else {
            String::new()
        },
        value: created,
    });
    let failing = (status.conditions.iter()).find(|c| c.type_ == "Failing");
    let failing_since = failing
        .filter(|c| c.status == "True")
        .map(|c| seconds(&c.last_transition_time).max(0));
    if let Some(update) = &cv.spec.desired_update
        && update.image.as_deref().unwrap_or_default() != current.image
    {
        let (version, image) = (
            update.version.clone().unwrap_or_default(),
            update.image.clone().unwrap_or_default(),
        );
        out.version.push(VersionSeries {
            type_: "desired",
            version: version.clone(),
            image: image.clone(),
            from_version: completed_version.clone(),
            value: most_recent(cv, status),
        });
        if let Some(since) = failing_since {
            out.version.push(VersionSeries {
                type_: "failure",
                version,
                image,
                from_version: completed_version.clone(),
                value: since,
            });
        }
    }
    if let Some(since) = failing_since {
        out.version.push(VersionSeries {
            type_: "failure",
            version: current.version.into(),
            image: current.image.into(),
            from_version: completed_version.clone(),
            value: since,
        });
    }
    if let Some(updating) = history.first().filter(|h| h.state == "Partial") {
        out.version.push(VersionSeries {
            type_: "updating",
            version: version_of(updating),
            image: updating.image.clone(),
            from_version: completed_version.clone(),
            value: seconds(&updating.started_time).max(0),
        });
    }
    // The ClusterVersion reports itself as the operator `version` (upstream: its True/False
    // conditions, Available also as `cluster_operator_up` at the completed version).
    for condition in
        (status.conditions.iter()).filter(|c| c.status == "True" || c.status == "False")
    {
        let reason = condition.reason.clone().unwrap_or_default();
        let value = i64::from(condition.status == "True");
        if condition.type_ == "Available" {
            out.operator_up.push((
                "version".into(),
                completed_version.clone(),
                reason.clone(),
                value,
            ));
        }
        out.operator_conditions
            .push(("version".into(), condition.type_.clone(), reason, value));
    }
    out.conditional_update_conditions = conditional_update_conditions(status);
    let upstream = cv.spec.upstream.clone().unwrap_or_default();
    let available = status.available_updates.as_ref().map_or(0, Vec::len);
    let retrieved =
        (status.conditions.iter()).any(|c| c.type_ == "RetrievedUpdates" && c.status == "True");
    if !upstream.is_empty() || available > 0 || retrieved {
        let upstream = match upstream.is_empty() {
            true => "<default>".to_string(),
            false => upstream,
        };
        let channel = cv.spec.channel.clone().unwrap_or_default();
        out.available_updates = Some((upstream, channel, available as i64));
    }
    out.version.push(VersionSeries {
        type_: "current",
        version: current.version.into(),
        image: current.image.into(),
        from_version: completed_version,
        value: current.created,
    });
    let (up, conditions) = operator_series(operators);
    out.operator_up.extend(up);
    out.operator_conditions.extend(conditions);
    out
}

/// `(name, version, reason, up)` of `cluster_operator_up`.
pub type OperatorUp = (String, String, String, i64);
/// `(name, condition, reason, 1|0)` of `cluster_operator_conditions`.
pub type OperatorCondition = (String, String, String, i64);

/// The ClusterOperators' `cluster_operator_up` and `cluster_operator_conditions` series, as
/// upstream's `Collect` reads them from its informer at scrape time.
pub fn operator_series(operators: &[ClusterOperator]) -> (Vec<OperatorUp>, Vec<OperatorCondition>) {
    let (mut up_series, mut condition_series) = (Vec::new(), Vec::new());
    for operator in operators {
        let name = operator.metadata.name.clone().unwrap_or_default();
        let status = operator.status.clone().unwrap_or_default();
        let version = (status.versions.iter())
            .find(|v| v.name == "operator")
            .map(|v| v.version.clone())
            .unwrap_or_default();
        let available = (status.conditions.iter()).find(|c| c.type_ == "Available");
        let reason = available.map_or("NoAvailableCondition".to_string(), |c| {
            c.reason.clone().unwrap_or_default()
        });
        let up = available.is_some_and(|c| c.status == "True");
        up_series.push((name.clone(), version, reason, i64::from(up)));
        for condition in
            (status.conditions.iter()).filter(|c| c.status == "True" || c.status == "False")
        {
            condition_series.push((
                name.clone(),
                condition.type_.clone(),
                condition.reason.clone().unwrap_or_default(),
                i64::from(condition.status == "True"),
            ));
        }
    }
    (up_series, condition_series)
}

/// Upstream `clusterOperatorChanged`: the condition types of a ClusterOperator whose status
/// changed between two observations (`cluster_operator_condition_transitions` counts them): a
/// type that went away, changed status, or appeared.
pub fn condition_transitions(old: &ClusterOperator, new: &ClusterOperator) -> Vec<String> {
    let conditions = |co: &ClusterOperator| {
        (co.status.iter())
            .flat_map(|s| s.conditions.iter())
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect::<Vec<_>>()
    };
    let (old, new) = (conditions(old), conditions(new));
    let mut seen = std::collections::BTreeSet::new();
    let mut changed = Vec::new();
    for (type_, status) in &old {
        if !seen.insert(type_.clone()) {
            continue;
        }
        match new.iter().find(|(t, _)| t == type_) {
            Some((_, now)) if now == status => {}
            _ => changed.push(type_.clone()),
        }
    }
    for (type_, _) in &new {
        if seen.insert(type_.clone()) {
            changed.push(type_.clone());
        }
    }
    changed
}

/// Upstream's `cluster_installer{type, version, invoker}` from the ConfigMaps
/// `openshift-config/openshift-install` (`type="openshift-install"`) and, without it,
/// `openshift-install-manifests` (`type="other"`), each `Ok(None)` when missing: their
/// `version` and `invoker` (`<missing>` when absent); empty labels when neither exists; nothing
/// when the first could not be read for another reason.
pub fn installer_series(
    install: &Result<Option<std::collections::BTreeMap<String, String>>, String>,
    manifests: &Result<Option<std::collections::BTreeMap<String, String>>, String>,
) -> Option<(String, String, String)> {
    let labels = |type_: &str, data: &std::collections::BTreeMap<String, String>| {
        let get = |k: &str| data.get(k).cloned().unwrap_or_else(|| "<missing>".into());
        (type_.to_string(), get("version"), get("invoker"))
    };
    match (install, manifests) {
        (Ok(Some(data)), _) => Some(labels("openshift-install", data)),
        (Err(_), _) => None,
        (Ok(None), Ok(Some(data))) => Some(labels("other", data)),
        (Ok(None), Ok(None)) => Some(Default::default()),
        (Ok(None), Err(_)) => None,
    }
}

/// Upstream `collectConditionalUpdateRisks`: `cluster_version_risk_conditions{condition="Applies",
/// risk, reason}`, 1 when the risk applies, 0 when it does not, -1 when it could not be
/// evaluated; from the risks' evaluation (upstream reads it from
/// `status.conditionalUpdateRisks[].conditions`, the same evaluation).
pub fn risk_series(risks: &crate::updates::rules::RiskConditions) -> Vec<(String, String, i64)> {
    use crate::updates::rules::Applies;
    (risks.iter())
        .map(|(name, applies)| {
            let (reason, value) = match applies {
                Applies::Match => ("Match", 1),
                Applies::NotMatch => ("NotMatch", 0),
                Applies::EvaluationFailed(_) => ("EvaluationFailed", -1),
            };
            (name.clone(), reason.to_string(), value)
        })
        .collect()
}

/// `mostRecentTimestamp`: the latest of the newest history entry's start and completion, the
/// conditions' transitions and the object's creation.
fn most_recent(cv: &ClusterVersion, status: &ClusterVersionStatus) -> i64 {
    let mut latest = 0;
    if let Some(top) = status.history.first() {
        latest = top.started_time.0.as_second();
        if let Some(done) = &top.completion_time {
            latest = latest.max(done.0.as_second());
        }
    }
    for condition in &status.conditions {
        latest = latest.max(condition.last_transition_time.0.as_second());
    }
    if let Some(created) = &cv.metadata.creation_timestamp {
        latest = latest.max(created.0.as_second());
    }
    latest.max(0)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::cluster::{
        ClusterOperatorStatus, ClusterOperatorStatusCondition, ClusterVersionSpec, OperandVersion,
        Release, Update,
    };

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    fn entry(state: &str, version: &str, started: i64, done: Option<i64>) -> UpdateHistory {
        UpdateHistory {
            state: state.into(),
            started_time: at(started),
            completion_time: done.map(at),
            version: Some(version.into()),
            image: format!("img:{version}"),
            verified: false,
            accepted_risks: None,
        }
    }

    fn condition(
        type_: &str,
        status: &str,
        at_s: i64,
        reason: &str,
    ) -> ClusterOperatorStatusCondition {
        ClusterOperatorStatusCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: at(at_s),
            reason: Some(reason.into()).filter(|r: &String| !r.is_empty()),
            message: None,
        }
    }

    #[test]
    fn an_update_in_progress_reports_upstreams_series() {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                channel: Some("stable-4.18".into()),
                desired_update: Some(Update {
                    version: Some("4.18.1".into()),
                    image: Some("img:4.18.1".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        cv.metadata.creation_timestamp = Some(at(100));
        let status = ClusterVersionStatus {
            history: vec![
                entry("Partial", "4.18.1", 500, None),
                entry("Completed", "4.18.0", 300, Some(400)),
                entry("Completed", "4.17.0", 100, Some(200)),
            ],
            conditions: vec![
                condition("Failing", "True", 550, "ClusterOperatorDegraded"),
                condition("RetrievedUpdates", "True", 50, ""),
            ],
            available_updates: Some(vec![Release::default(), Release::default()]),
            desired: None,
            ..Default::default()
        };
        let current = Current {
            version: "4.18.0",
            image: "img:4.18.0",
            created: 0,
        };
        let mut operator = ClusterOperator::new("etcd", Default::default());
        operator.status = Some(ClusterOperatorStatus {
            conditions: vec![
                condition("Available", "True", 1, "AsExpected"),
                condition("Degraded", "False", 1, ""),
                condition("Upgradeable", "Unknown", 1, "NoData"),
            ],
            versions: vec![OperandVersion {
                name: "operator".into(),
                version: "4.18.0".into(),
            }],
            ..Default::default()
        });
        let got = series(&cv, &status, &current, &[operator]);
        let v = |t: &str, version: &str, from: &str, value: i64| VersionSeries {
            type_: match t {
                "completed" => "completed",
                "cluster" => "cluster",
                "initial" => "initial",
                "desired" => "desired",
                "failure" => "failure",
                "updating" => "updating",
                _ => "current",
            },
            version: version.into(),
            image: format!("img:{version}"),
            from_version: from.into(),
            value,
        };
        assert_eq!(
            got.version,
            [
                v("completed", "4.18.0", "4.17.0", 400),
                v("initial", "4.17.0", "", 100),
                v("cluster", "4.18.0", "4.17.0", 100),
                v("desired", "4.18.1", "4.18.0", 550),
                v("failure", "4.18.1", "4.18.0", 550),
                v("failure", "4.18.0", "4.18.0", 550),
                v("updating", "4.18.1", "4.18.0", 500),
                v("current", "4.18.0", "4.18.0", 0),
            ]
        );
        assert_eq!(
            got.available_updates,
            Some(("<default>".into(), "stable-4.18".into(), 2))
        );
        assert_eq!(
            got.operator_up,
            [("etcd".into(), "4.18.0".into(), "AsExpected".into(), 1)]
        );
        assert_eq!(
            got.operator_conditions,
            [
                // The ClusterVersion as the operator `version` (no Available condition here,
                // so no `cluster_operator_up` for it).
                (
                    "version".into(),
                    "Failing".into(),
                    "ClusterOperatorDegraded".into(),
                    1
                ),
                ("version".into(), "RetrievedUpdates".into(), "".into(), 1),
                ("etcd".into(), "Available".into(), "AsExpected".into(), 1),
                ("etcd".into(), "Degraded".into(), "".into(), 0),
            ]
        );
    }

    #[test]
    fn a_settled_cluster_without_an_update_service_reports_no_available_updates() {
        let cv = ClusterVersion::new("version", ClusterVersionSpec::default());
        let status = ClusterVersionStatus {
            history: vec![entry("Completed", "4.18.0", 1, Some(2))],
            ..Default::default()
        };
        let current = Current {
            version: "4.18.0",
            image: "img:4.18.0",
            created: 0,
        };
        let got = series(&cv, &status, &current, &[]);
        let types: Vec<&str> = got.version.iter().map(|s| s.type_).collect();
        assert_eq!(types, ["completed", "initial", "cluster", "current"]);
        assert_eq!(got.available_updates, None);
    }

    #[test]
    fn recommended_conditions_of_conditional_updates() {
        use crate::cluster::ConditionalUpdate;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
        let cond = |type_: &str, status: &str, reason: &str, t: i64| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            last_transition_time: at(t),
            observed_generation: None,
        };
        let update = |version: &str, conditions| ConditionalUpdate {
            release: Release {
                version: Some(version.into()),
                ..Default::default()
            },
            risk_names: vec![],
            risks: vec![],
            conditions,
        };
        let status = ClusterVersionStatus {
            conditional_updates: vec![
                update(
                    "4.18.4",
                    vec![cond("Recommended", "False", "ConsoleBreaks", 700)],
                ),
                update(
                    "4.18.3",
                    vec![
                        cond("Other", "True", "X", 1),
                        cond("Recommended", "True", "NotExposedToRisks", 800),
                    ],
                ),
            ],
            ..Default::default()
        };
        let s = |version: &str, status: &str, reason: &str, value| ConditionalUpdateSeries {
            version: version.into(),
            condition: "Recommended".into(),
            status: status.into(),
            reason: reason.into(),
            value,
        };
        assert_eq!(
            conditional_update_conditions(&status),
            [
                s("4.18.4", "False", "ConsoleBreaks", 700),
                s("4.18.3", "True", "NotExposedToRisks", 800),
            ]
        );
    }
}
