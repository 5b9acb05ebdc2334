//! The ClusterOperator a payload component's controller keeps (`deployment-targets`,
//! `agent-install`), so that `cvo start` waits on the component like on any operator:
//! Available, Progressing and Degraded, and the version it runs. Pure; the host's
//! [`super::cluster_operator`] writes it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::cluster::{ClusterOperatorStatus, ClusterOperatorStatusCondition, OperandVersion};

/// What the controller knows about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// Its watch caches have synced and the controllers run.
    pub running: bool,
    /// Why it cannot run, if it cannot (e.g. a CRD is missing).
    pub failure: Option<String>,
    /// Why it does not run although it could: another operator serves its API on this
    /// cluster. Available (nothing is missing), reason [`STOOD_DOWN`].
    pub stood_down: Option<String>,
    /// What the Available message adds while it runs (another operator's CRD it uses).
    pub notes: Vec<String>,
}

/// The reason of a stood-down component's conditions.
pub const STOOD_DOWN: &str = "ServedByAnotherOperator";

/// The status to write, keeping each condition's `lastTransitionTime` while its status holds.
/// `subject` names what runs in the Available message (`DeploymentTarget controllers`).
pub fn next_status(
    previous: Option<&ClusterOperatorStatus>,
    health: &Health,
    subject: &str,
    version: &str,
    now: &Time,
) -> ClusterOperatorStatus {
    let (available, progressing, degraded) = match (&health.failure, health.running) {
        (None, _) if health.stood_down.is_some() => {
            let why = health.stood_down.clone().unwrap_or_default();
            (
                ("True", STOOD_DOWN, why),
                ("False", STOOD_DOWN, String::new()),
                ("False", STOOD_DOWN, String::new()),
            )
        }
        (Some(why), _) => (
            ("False", "ControllerFailed", why.clone()),
            ("False", "ControllerFailed", String::new()),
            ("True", "ControllerFailed", why.clone()),
        ),
        (None, false) => (
            (
                "False",
                "Starting",
                "the controllers' caches are syncing".to_string(),
            ),
            (
                "True",
                "Starting",
                "the controllers' caches are syncing".to_string(),
            ),
            ("False", "AsExpected", String::new()),
        ),
        (None, true) => (
            (
                "True",
                "AsExpected",
                std::iter::once(format!("{subject} at version {version} are running"))
                    .chain(health.notes.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            ("False", "AsExpected", String::new()),
            ("False", "AsExpected", String::new()),
        ),
    };
    let conditions = [
        Row::new("Available", available),
        Row::new("Progressing", progressing),
        Row::new("Degraded", degraded),
        Row::new("Upgradeable", ("True", "AsExpected", String::new())),
    ];
    operator_status(previous, conditions, version, now)
}

/// One condition to write: its type, status, reason and message (empty: none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub type_: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Row {
    pub fn new(
        type_: &'static str,
        (status, reason, message): (&'static str, &'static str, String),
    ) -> Row {
        Row {
            type_,
            status,
            reason,
            message,
        }
    }
}

/// A status with exactly `rows` as its conditions, each keeping its `lastTransitionTime`
/// while its status holds, and the operator at `version`; what else `previous` has (related
/// objects, extensions) stays.
pub fn operator_status(
    previous: Option<&ClusterOperatorStatus>,
    rows: impl IntoIterator<Item = Row>,
    version: &str,
    now: &Time,
) -> ClusterOperatorStatus {
    let conditions = rows
        .into_iter()
        .map(|row| {
            let since = (previous.into_iter())
                .flat_map(|p| p.conditions.iter())
                .find(|c| c.type_ == row.type_ && c.status == row.status)
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            ClusterOperatorStatusCondition {
                reason: Some(row.reason.to_string()),
                message: (!row.message.is_empty()).then_some(row.message),
                ..ClusterOperatorStatusCondition::new(row.type_, row.status, since)
            }
        })
        .collect();
    ClusterOperatorStatus {
        conditions,
        versions: vec![OperandVersion {
            name: "operator".into(),
            version: version.into(),
        }],
        ..previous.cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    fn condition<'a>(s: &'a ClusterOperatorStatus, t: &str) -> &'a ClusterOperatorStatusCondition {
        s.conditions.iter().find(|c| c.type_ == t).unwrap()
    }

    #[test]
    fn running_is_available_and_keeps_transition_times() {
        let running = Health {
            running: true,
            ..Health::default()
        };
        let first = next_status(None, &running, "X controllers", "4.18.0", &at(10));
        assert_eq!(condition(&first, "Available").status, "True");
        assert_eq!(condition(&first, "Progressing").status, "False");
        assert_eq!(condition(&first, "Degraded").status, "False");
        assert_eq!(
            condition(&first, "Available").message.as_deref(),
            Some("X controllers at version 4.18.0 are running")
        );
        assert_eq!(
            first.versions,
            vec![OperandVersion {
                name: "operator".into(),
                version: "4.18.0".into()
            }]
        );
        let again = next_status(Some(&first), &running, "X controllers", "4.18.0", &at(20));
        assert_eq!(condition(&again, "Available").last_transition_time, at(10));
        let failed = Health {
            running: false,
            failure: Some("CRD missing".into()),
            ..Health::default()
        };
        let down = next_status(Some(&again), &failed, "X controllers", "4.18.0", &at(30));
        assert_eq!(condition(&down, "Available").status, "False");
        assert_eq!(condition(&down, "Available").last_transition_time, at(30));
        assert_eq!(
            condition(&down, "Degraded").message.as_deref(),
            Some("CRD missing")
        );
    }

    #[test]
    fn starting_is_progressing() {
        let starting = Health::default();
        let s = next_status(None, &starting, "X controllers", "4.18.0", &at(1));
        assert_eq!(condition(&s, "Progressing").status, "True");
        assert_eq!(condition(&s, "Available").status, "False");
        assert_eq!(condition(&s, "Degraded").status, "False");
    }

    #[test]
    fn stood_down_is_available_and_says_why_and_notes_are_shown() {
        let down = Health {
            running: true,
            stood_down: Some("assisted-service serves it".into()),
            ..Health::default()
        };
        let s = next_status(None, &down, "X controllers", "4.18.0", &at(1));
        let available = condition(&s, "Available");
        assert_eq!(
            (available.status.as_str(), available.reason.as_deref()),
            ("True", Some(STOOD_DOWN))
        );
        assert_eq!(
            available.message.as_deref(),
            Some("assisted-service serves it")
        );
        assert_eq!(condition(&s, "Degraded").status, "False");
        assert_eq!(condition(&s, "Progressing").status, "False");
        let noted = Health {
            running: true,
            notes: vec!["hive's CRD used as it is".into()],
            ..Health::default()
        };
        let s = next_status(None, &noted, "X controllers", "4.18.0", &at(1));
        assert_eq!(
            condition(&s, "Available").message.as_deref(),
            Some("X controllers at version 4.18.0 are running; hive's CRD used as it is")
        );
    }
}
