//! What the ClusterOperator `edge-agent` says. Pure.
//!
//! As upstream's cluster-baremetal-operator does while its configuration (the Provisioning
//! resource) is missing (`WaitingForProvisioningCR`: Available=True, Progressing=False, its
//! operand not deployed), an agent waiting for its hub settings is not a failure: the operator
//! is Available and not Degraded, so a CVO pass (install or update) completes, and the message
//! says what is missing. Settings that are there but wrong are Degraded (upstream's
//! `InvalidConfiguration`), and so is an agent Deployment that fails.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::hub::{HubSettings, Unready};
use crate::cluster::ClusterOperatorStatus;
use crate::host::operator_status::{Row, operator_status};

/// What the operator found, as the ClusterOperator reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentState {
    /// Settings missing (and none wrong): the agent does not run.
    Waiting { missing: Vec<String>, fix: String },
    /// Some settings are wrong: the agent does not run.
    Invalid {
        invalid: Vec<String>,
        missing: Vec<String>,
    },
    /// An agent object the operator did not make is in the way: it stands down.
    NotOurs { objects: Vec<String> },
    /// The agent's Deployment is rolling out.
    Deploying { available: i32, wanted: i32 },
    /// The agent runs.
    Running { exchange_url: String, org: String },
    /// The agent's Deployment failed (its condition's reason and message).
    Failed { reason: String, message: String },
}

/// The state from the settings and the agent's Deployment as the API server has it (`None`:
/// not created yet).
pub fn agent_state(
    hub: &Result<HubSettings, Unready>,
    deployment: Option<&Deployment>,
) -> AgentState {
    let hub = match hub {
        Ok(hub) => hub,
        Err(unready) if unready.invalid.is_empty() => {
            return AgentState::Waiting {
                missing: unready.missing.clone(),
                fix: unready.fix.clone(),
            };
        }
        Err(unready) => {
            return AgentState::Invalid {
                invalid: unready.invalid.clone(),
                missing: unready.missing.clone(),
            };
        }
    };
    let status = deployment
        .and_then(|d| d.status.clone())
        .unwrap_or_default();
    let conditions = status.conditions.unwrap_or_default();
    let failed = conditions.iter().find(|c| {
        (c.type_ == "ReplicaFailure" && c.status == "True")
            || (c.type_ == "Progressing"
                && c.status == "False"
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
    });
    if let Some(c) = failed {
        return AgentState::Failed {
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        };
    }
    let wanted = deployment
        .and_then(|d| d.spec.as_ref())
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let available = status.available_replicas.unwrap_or(0);
    let generation = deployment.and_then(|d| d.metadata.generation);
    let observed = status.observed_generation;
    let updated = status.updated_replicas.unwrap_or(0);
    if available >= wanted && updated >= wanted && observed.is_some() && observed >= generation {
        AgentState::Running {
            exchange_url: hub.exchange_url.clone(),
            org: hub.org.clone(),
        }
    } else {
        AgentState::Deploying { available, wanted }
    }
}

/// The operator's status for `state`, keeping transition times and related objects of
/// `previous`.
pub fn next_status(
    previous: Option<&ClusterOperatorStatus>,
    state: &AgentState,
    version: &str,
    now: &Time,
) -> ClusterOperatorStatus {
    let quiet = |reason: &'static str| ("False", reason, String::new());
    let (available, progressing, degraded) = match state {
        AgentState::Waiting { missing, fix } => {
            let message = format!(
                "The edge agent does not run until it has its hub settings: missing {}; {fix}",
                missing.join("; ")
            );
            (
                ("True", "WaitingForHubSettings", message.clone()),
                ("False", "WaitingForHubSettings", message),
                quiet("AsExpected"),
            )
        }
        AgentState::Invalid { invalid, missing } => {
            let mut message = format!(
                "The edge agent does not run: its hub settings are invalid: {}",
                invalid.join("; ")
            );
            if !missing.is_empty() {
                message.push_str(&format!("; missing {}", missing.join("; ")));
            }
            (
                ("True", "InvalidConfiguration", String::new()),
                quiet("InvalidConfiguration"),
                ("True", "InvalidConfiguration", message),
            )
        }
        AgentState::NotOurs { objects } => {
            let message = format!(
                "{} exist(s) and this operator did not create them (an agent installed by agent-install.sh?): it leaves them alone and runs no agent of its own; delete them to let it manage the agent",
                objects.join(", ")
            );
            (
                ("True", "AgentNotManaged", message),
                quiet("AgentNotManaged"),
                quiet("AsExpected"),
            )
        }
        AgentState::Deploying { available, wanted } => (
            ("True", "Deploying", String::new()),
            (
                "True",
                "Deploying",
                format!("The edge agent is deploying: {available} of {wanted} replicas available"),
            ),
            quiet("AsExpected"),
        ),
        AgentState::Running { exchange_url, org } => (
            (
                "True",
                "AsExpected",
                format!(
                    "The edge agent at version {version} runs for organization {org} of the exchange {exchange_url}"
                ),
            ),
            quiet("AsExpected"),
            quiet("AsExpected"),
        ),
        AgentState::Failed { reason, message } => {
            let message = format!("The edge agent's Deployment failed: {reason}: {message}");
            (
                ("False", "AgentDeploymentFailed", message.clone()),
                quiet("AgentDeploymentFailed"),
                ("True", "AgentDeploymentFailed", message),
            )
        }
    };
    let rows = [
        Row::new("Available", available),
        Row::new("Progressing", progressing),
        Row::new("Degraded", degraded),
        Row::new("Upgradeable", ("True", "AsExpected", String::new())),
    ];
    operator_status(previous, rows, version, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap())
    }

    fn hub() -> HubSettings {
        HubSettings {
            exchange_url: "https://hub/v1".into(),
            css_url: "https://hub/css".into(),
            org: "org1".into(),
            digest: "d".into(),
        }
    }

    fn deployment(status: serde_json::Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "agent", "generation": 2},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": status,
        }))
        .unwrap()
    }

    fn condition(s: &ClusterOperatorStatus, t: &str) -> (String, String, String) {
        let c = s.conditions.iter().find(|c| c.type_ == t).unwrap();
        (
            c.status.clone(),
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default(),
        )
    }

    #[test]
    fn waiting_is_available_with_what_is_missing() {
        let unready = Unready {
            missing: vec!["A in X".into(), "B in Y".into()],
            invalid: vec![],
            fix: "set them".into(),
        };
        let state = agent_state(&Err(unready), None);
        let s = next_status(None, &state, "4.18.0", &at(1));
        let (status, reason, message) = condition(&s, "Available");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "WaitingForHubSettings")
        );
        assert!(
            message
                == "The edge agent does not run until it has its hub settings: missing A in X; B in Y; set them",
            "{message}"
        );
        assert_eq!(condition(&s, "Progressing").0, "False");
        assert_eq!(condition(&s, "Degraded").0, "False");
        assert_eq!(s.versions[0].version, "4.18.0");
    }

    #[test]
    fn invalid_is_degraded() {
        let unready = Unready {
            missing: vec!["C".into()],
            invalid: vec!["A is wrong".into()],
            fix: "set them".into(),
        };
        let s = next_status(None, &agent_state(&Err(unready), None), "v", &at(1));
        assert_eq!(condition(&s, "Available").0, "True");
        let (status, reason, message) = condition(&s, "Degraded");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "InvalidConfiguration")
        );
        assert_eq!(
            message,
            "The edge agent does not run: its hub settings are invalid: A is wrong; missing C"
        );
    }

    #[test]
    fn the_deployment_decides_once_configured() {
        let ok = Ok(hub());
        assert_eq!(
            agent_state(&ok, None),
            AgentState::Deploying {
                available: 0,
                wanted: 1
            }
        );
        let rolled = deployment(json!({"observedGeneration": 2, "replicas": 1,
            "updatedReplicas": 1, "availableReplicas": 1}));
        let running = agent_state(&ok, Some(&rolled));
        assert_eq!(
            running,
            AgentState::Running {
                exchange_url: "https://hub/v1".into(),
                org: "org1".into()
            }
        );
        let s = next_status(None, &running, "4.18.0", &at(1));
        assert_eq!(
            condition(&s, "Available").2,
            "The edge agent at version 4.18.0 runs for organization org1 of the exchange https://hub/v1"
        );
        // An older generation observed is still rolling out.
        let stale = deployment(json!({"observedGeneration": 1, "replicas": 1,
            "updatedReplicas": 1, "availableReplicas": 1}));
        assert!(matches!(
            agent_state(&ok, Some(&stale)),
            AgentState::Deploying { .. }
        ));
        let stuck = deployment(
            json!({"conditions": [{"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"agent-1\" has timed out progressing."}]}),
        );
        let failed = agent_state(&ok, Some(&stuck));
        let s = next_status(None, &failed, "v", &at(1));
        assert_eq!(
            condition(&s, "Degraded"),
            (
                "True".into(),
                "AgentDeploymentFailed".into(),
                "The edge agent's Deployment failed: ProgressDeadlineExceeded: ReplicaSet \"agent-1\" has timed out progressing.".into()
            )
        );
        assert_eq!(condition(&s, "Available").0, "False");
    }

    #[test]
    fn transition_times_and_related_objects_stay() {
        let waiting = AgentState::Waiting {
            missing: vec!["x".into()],
            fix: String::new(),
        };
        let mut first = next_status(None, &waiting, "v", &at(10));
        first.related_objects = vec![Default::default()];
        let again = next_status(Some(&first), &waiting, "v", &at(20));
        let available = |s: &ClusterOperatorStatus| {
            (s.conditions.iter())
                .find(|c| c.type_ == "Available")
                .unwrap()
                .last_transition_time
                .clone()
        };
        assert_eq!(available(&again), at(10));
        assert_eq!(again.related_objects.len(), 1);
        let foreign = AgentState::NotOurs {
            objects: vec!["Deployment openhorizon-agent/agent".into()],
        };
        let s = next_status(Some(&again), &foreign, "v", &at(30));
        assert_eq!(condition(&s, "Available").1, "AgentNotManaged");
        assert_eq!(available(&s), at(10), "still Available=True");
    }
}
