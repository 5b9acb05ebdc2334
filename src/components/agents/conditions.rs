//! The Agent's conditions as the Agent controller derives them from the host (assisted-service
//! `agent_controller.go`: `specSynced`, `connected`, `requirementsMet`, `validated`,
//! `installed`, `bound`), with the reasons and messages of `api/v1beta1/agent_types.go`.

use super::state::HostState::{self, *};
use super::types::{Condition, ValidationsInfo};

pub const SPEC_SYNCED: &str = "SpecSynced";
pub const CONNECTED: &str = "Connected";
pub const REQUIREMENTS_MET: &str = "RequirementsMet";
pub const VALIDATED: &str = "Validated";
pub const INSTALLED: &str = "Installed";
pub const BOUND: &str = "Bound";
pub const CLEANUP: &str = "Cleanup";

/// Condition reasons and messages (upstream's `*Reason` and `*Msg` constants). A message
/// ending in `:` is followed by a space and details.
pub mod text {
    pub const SYNC_OK: &str = "SyncOK";
    pub const SYNC_OK_MSG: &str = "The Spec has been successfully applied";
    pub const BACKEND_ERROR: &str = "BackendError";
    pub const BACKEND_ERROR_MSG: &str = "The Spec could not be synced due to backend error:";
    pub const INPUT_ERROR: &str = "InputError";
    pub const INPUT_ERROR_MSG: &str = "The Spec could not be synced due to an input error:";

    pub const CONNECTED: &str = "AgentIsConnected";
    pub const CONNECTED_MSG: &str =
        "The agent's connection to the installation service is unimpaired";
    pub const DISCONNECTED: &str = "AgentIsDisconnected";
    pub const DISCONNECTED_MSG: &str = "The agent has not contacted the installation service in some time, user action should be taken";

    pub const READY: &str = "AgentIsReady";
    pub const READY_MSG: &str = "The agent is ready to begin the installation";
    pub const NOT_READY: &str = "AgentNotReady";
    pub const NOT_READY_MSG: &str = "The agent is not ready to begin the installation";
    pub const ALREADY_INSTALLING: &str = "AgentAlreadyInstalling";
    pub const ALREADY_INSTALLING_MSG: &str = "Installation already started and is in progress";
    pub const NOT_APPROVED: &str = "AgentIsNotApproved";
    pub const NOT_APPROVED_MSG: &str = "The agent is not approved";
    pub const INSTALLATION_STOPPED: &str = "AgentInstallationStopped";
    pub const INSTALLATION_STOPPED_MSG: &str = "The agent installation stopped";

    pub const VALIDATIONS_PASSING: &str = "ValidationsPassing";
    pub const VALIDATIONS_PASSING_MSG: &str = "The agent's validations are passing";
    pub const VALIDATIONS_UNKNOWN: &str = "ValidationsUnknown";
    pub const VALIDATIONS_UNKNOWN_MSG: &str =
        "The agent's validations have not yet been calculated";
    pub const VALIDATIONS_FAILING: &str = "ValidationsFailing";
    pub const VALIDATIONS_FAILING_MSG: &str = "The agent's validations are failing:";
    pub const VALIDATIONS_USER_PENDING: &str = "ValidationsUserPending";
    pub const VALIDATIONS_USER_PENDING_MSG: &str = "The agent's validations are pending for user:";

    pub const INSTALLATION_COMPLETED: &str = "InstallationCompleted";
    pub const INSTALLATION_COMPLETED_MSG: &str = "The installation has completed:";
    pub const INSTALLATION_FAILED: &str = "InstallationFailed";
    pub const INSTALLATION_FAILED_MSG: &str = "The installation has failed:";
    pub const INSTALLATION_NOT_STARTED: &str = "InstallationNotStarted";
    pub const INSTALLATION_NOT_STARTED_MSG: &str = "The installation has not yet started";
    pub const INSTALLATION_IN_PROGRESS: &str = "InstallationInProgress";
    pub const INSTALLATION_IN_PROGRESS_MSG: &str = "The installation is in progress:";
    pub const UNKNOWN_STATUS: &str = "UnknownStatus";
    pub const UNKNOWN_STATUS_MSG: &str = "The installation status is currently not recognized:";

    pub const BOUND: &str = "Bound";
    pub const BOUND_MSG: &str = "The agent is bound to a cluster deployment";
    pub const UNBOUND: &str = "Unbound";
    pub const UNBOUND_MSG: &str = "The agent is not bound to any cluster deployment";
    pub const BINDING: &str = "Binding";
    pub const BINDING_MSG: &str = "The agent is currently binding to a cluster deployment";
    pub const UNBINDING: &str = "Unbinding";
    pub const UNBINDING_MSG: &str = "The agent is currently unbinding from a cluster deployment";
    pub const UNBINDING_PENDING_USER_ACTION: &str = "UnbindingPendingUserAction";
    pub const UNBINDING_PENDING_USER_ACTION_MSG: &str =
        "The agent is currently unbinding; Pending host reboot from infraenv image";

    pub const CLEANUP_FAILED: &str = "CleanupFailed";
}

use text::*;

fn condition(type_: &str, status: &str, reason: &str, message: String) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        ..Condition::default()
    }
}

fn with_detail(message: &str, detail: &str) -> String {
    format!("{message} {detail}")
}

/// Why a spec could not be applied: 4xx errors are the user's (`InputError`), the rest the
/// backend's (`BackendError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncError<'a> {
    Input(&'a str),
    Backend(&'a str),
}

/// `SpecSynced`: `True SyncOK`, or `False` with the error after upstream's message.
pub fn spec_synced(error: Option<SyncError>) -> Condition {
    match error {
        None => condition(SPEC_SYNCED, "True", SYNC_OK, SYNC_OK_MSG.to_owned()),
        Some(SyncError::Input(e)) => condition(
            SPEC_SYNCED,
            "False",
            INPUT_ERROR,
            with_detail(INPUT_ERROR_MSG, e),
        ),
        Some(SyncError::Backend(e)) => condition(
            SPEC_SYNCED,
            "False",
            BACKEND_ERROR,
            with_detail(BACKEND_ERROR_MSG, e),
        ),
    }
}

/// `Connected`: false only in the two disconnected states.
pub fn connected(state: HostState) -> Condition {
    match state {
        DisconnectedUnbound | Disconnected => {
            condition(CONNECTED, "False", DISCONNECTED, DISCONNECTED_MSG.into())
        }
        _ => condition(CONNECTED, "True", text::CONNECTED, CONNECTED_MSG.into()),
    }
}

/// `RequirementsMet`: a known host is ready if approved; installing and finished hosts met
/// them; binding and unbinding hosts say so.
pub fn requirements_met(state: HostState, approved: bool) -> Condition {
    let c = |status: &str, reason: &str, message: &str| {
        condition(REQUIREMENTS_MET, status, reason, message.to_owned())
    };
    match state {
        Known | KnownUnbound if approved => c("True", READY, READY_MSG),
        Known | KnownUnbound => c("False", NOT_APPROVED, NOT_APPROVED_MSG),
        Insufficient | Disconnected | InsufficientUnbound | DisconnectedUnbound
        | DiscoveringUnbound | Discovering | PendingForInput => {
            c("False", NOT_READY, NOT_READY_MSG)
        }
        PreparingForInstallation
        | PreparingSuccessful
        | Installing
        | InstallingInProgress
        | InstallingPendingUserAction => c("True", ALREADY_INSTALLING, ALREADY_INSTALLING_MSG),
        Installed | Error | AddedToExistingCluster => {
            c("True", INSTALLATION_STOPPED, INSTALLATION_STOPPED_MSG)
        }
        Binding => c("False", BINDING, BINDING_MSG),
        Unbinding | UnbindingPendingUserAction => c("False", UNBINDING, UNBINDING_MSG),
        other => condition(
            REQUIREMENTS_MET,
            "Unknown",
            UNKNOWN_STATUS,
            with_detail(UNKNOWN_STATUS_MSG, other.as_str()),
        ),
    }
}

/// `Validated`: failing (with the messages of the validations that did not pass, joined by
/// `,`) when insufficient, pending for user input, unknown before any validation ran.
pub fn validated(state: HostState, validations: &ValidationsInfo) -> Condition {
    let failures: Vec<&str> = (validations.values().flatten())
        .filter(|v| v.status != "success" && v.status != "disabled")
        .map(|v| v.message.as_str())
        .collect();
    let failures = failures.join(",");
    let c =
        |status: &str, reason: &str, message: String| condition(VALIDATED, status, reason, message);
    match state {
        Binding => c("False", BINDING, BINDING_MSG.into()),
        Unbinding | UnbindingPendingUserAction => c("False", UNBINDING, UNBINDING_MSG.into()),
        Insufficient | InsufficientUnbound => c(
            "False",
            VALIDATIONS_FAILING,
            with_detail(VALIDATIONS_FAILING_MSG, &failures),
        ),
        PendingForInput => c(
            "False",
            VALIDATIONS_USER_PENDING,
            with_detail(VALIDATIONS_USER_PENDING_MSG, &failures),
        ),
        _ if validations.is_empty() => c(
            "Unknown",
            VALIDATIONS_UNKNOWN,
            VALIDATIONS_UNKNOWN_MSG.into(),
        ),
        _ => c("True", VALIDATIONS_PASSING, VALIDATIONS_PASSING_MSG.into()),
    }
}

/// `Installed`: completed, failed, not started, in progress; binding and unbinding say so.
/// `status_info` is the host's `statusInfo`, appended where upstream appends it.
pub fn installed(state: HostState, status_info: &str) -> Condition {
    let c =
        |status: &str, reason: &str, message: String| condition(INSTALLED, status, reason, message);
    match state {
        Installed | AddedToExistingCluster => c(
            "True",
            INSTALLATION_COMPLETED,
            with_detail(INSTALLATION_COMPLETED_MSG, status_info),
        ),
        Error => c(
            "False",
            INSTALLATION_FAILED,
            with_detail(INSTALLATION_FAILED_MSG, status_info),
        ),
        Insufficient | InsufficientUnbound | Disconnected | DisconnectedUnbound | Discovering
        | DiscoveringUnbound | Known | KnownUnbound | PendingForInput => c(
            "False",
            INSTALLATION_NOT_STARTED,
            INSTALLATION_NOT_STARTED_MSG.into(),
        ),
        PreparingForInstallation
        | PreparingSuccessful
        | Installing
        | InstallingInProgress
        | InstallingPendingUserAction => c(
            "False",
            INSTALLATION_IN_PROGRESS,
            with_detail(INSTALLATION_IN_PROGRESS_MSG, status_info),
        ),
        Binding => c("False", BINDING, BINDING_MSG.into()),
        Unbinding | UnbindingPendingUserAction => c("False", UNBINDING, UNBINDING_MSG.into()),
        other => c(
            "Unknown",
            UNKNOWN_STATUS,
            with_detail(UNKNOWN_STATUS_MSG, other.as_str()),
        ),
    }
}

/// `Bound`: false while binding, unbinding, pending the reboot, or in the pool; true in every
/// other state (upstream's default, which includes `reclaiming`).
pub fn bound(state: HostState) -> Condition {
    let c = |status: &str, reason: &str, message: &str| {
        condition(BOUND, status, reason, message.to_owned())
    };
    match state {
        Binding => c("False", BINDING, BINDING_MSG),
        Unbinding => c("False", UNBINDING, UNBINDING_MSG),
        UnbindingPendingUserAction => c(
            "False",
            UNBINDING_PENDING_USER_ACTION,
            UNBINDING_PENDING_USER_ACTION_MSG,
        ),
        DisconnectedUnbound | KnownUnbound | InsufficientUnbound | DisabledUnbound
        | DiscoveringUnbound => c("False", UNBOUND, UNBOUND_MSG),
        _ => c("True", text::BOUND, BOUND_MSG),
    }
}

/// What the host says to the Agent controller's status update.
#[derive(Clone, Copy, Debug)]
pub struct HostView<'a> {
    pub state: HostState,
    pub status_info: &'a str,
    pub approved: bool,
    pub validations: &'a ValidationsInfo,
}

/// Every condition upstream's `updateStatus` sets, in its order: `SpecSynced`, then (with a
/// host) `Connected`, `RequirementsMet`, `Validated`, `Installed`, `Bound`.
pub fn agent_conditions(sync: Option<SyncError>, host: Option<&HostView>) -> Vec<Condition> {
    let mut conditions = vec![spec_synced(sync)];
    if let Some(h) = host {
        conditions.extend([
            connected(h.state),
            requirements_met(h.state, h.approved),
            validated(h.state, h.validations),
            installed(h.state, h.status_info),
            bound(h.state),
        ]);
    }
    conditions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::agents::types::ValidationResult;

    fn reason(c: &Condition) -> (&str, &str) {
        (c.status.as_str(), c.reason.as_str())
    }

    #[test]
    fn bound_over_every_state() {
        for state in HostState::ALL {
            let c = bound(*state);
            assert_eq!(c.type_, "Bound");
            let want = match state {
                Binding => ("False", "Binding"),
                Unbinding => ("False", "Unbinding"),
                UnbindingPendingUserAction => ("False", "UnbindingPendingUserAction"),
                DiscoveringUnbound | KnownUnbound | InsufficientUnbound | DisconnectedUnbound
                | DisabledUnbound => ("False", "Unbound"),
                _ => ("True", "Bound"),
            };
            assert_eq!(reason(&c), want, "{state}");
        }
        assert_eq!(
            bound(Known).message,
            "The agent is bound to a cluster deployment"
        );
        assert_eq!(
            bound(UnbindingPendingUserAction).message,
            "The agent is currently unbinding; Pending host reboot from infraenv image"
        );
    }

    #[test]
    fn requirements_met_needs_approval() {
        assert_eq!(
            reason(&requirements_met(KnownUnbound, true)),
            ("True", "AgentIsReady")
        );
        assert_eq!(
            reason(&requirements_met(KnownUnbound, false)),
            ("False", "AgentIsNotApproved")
        );
        assert_eq!(
            reason(&requirements_met(InsufficientUnbound, true)),
            ("False", "AgentNotReady")
        );
        assert_eq!(
            reason(&requirements_met(InstallingInProgress, true)),
            ("True", "AgentAlreadyInstalling")
        );
        assert_eq!(
            reason(&requirements_met(Installed, true)),
            ("True", "AgentInstallationStopped")
        );
        let unknown = requirements_met(Reclaiming, true);
        assert_eq!(reason(&unknown), ("Unknown", "UnknownStatus"));
        assert_eq!(
            unknown.message,
            "The installation status is currently not recognized: reclaiming"
        );
    }

    #[test]
    fn validated_lists_what_does_not_pass() {
        let mut info = ValidationsInfo::new();
        info.insert(
            "hardware".into(),
            vec![
                ValidationResult {
                    id: "has-min-cpu-cores".into(),
                    status: "failure".into(),
                    message: "few cores".into(),
                },
                ValidationResult {
                    id: "has-inventory".into(),
                    status: "success".into(),
                    message: "ok".into(),
                },
                ValidationResult {
                    id: "has-min-memory".into(),
                    status: "pending".into(),
                    message: "Missing inventory".into(),
                },
            ],
        );
        let c = validated(InsufficientUnbound, &info);
        assert_eq!(reason(&c), ("False", "ValidationsFailing"));
        assert_eq!(
            c.message,
            "The agent's validations are failing: few cores,Missing inventory"
        );
        assert_eq!(
            reason(&validated(KnownUnbound, &info)),
            ("True", "ValidationsPassing")
        );
        assert_eq!(
            reason(&validated(KnownUnbound, &ValidationsInfo::new())),
            ("Unknown", "ValidationsUnknown")
        );
        assert_eq!(reason(&validated(Binding, &info)), ("False", "Binding"));
    }

    #[test]
    fn installed_and_connected() {
        let c = installed(Installed, "Done");
        assert_eq!(reason(&c), ("True", "InstallationCompleted"));
        assert_eq!(c.message, "The installation has completed: Done");
        assert_eq!(
            reason(&installed(KnownUnbound, "")),
            ("False", "InstallationNotStarted")
        );
        assert_eq!(
            reason(&installed(UnbindingPendingUserAction, "")),
            ("False", "Unbinding")
        );
        assert_eq!(
            reason(&connected(DisconnectedUnbound)),
            ("False", "AgentIsDisconnected")
        );
        assert_eq!(reason(&connected(Known)), ("True", "AgentIsConnected"));
    }

    #[test]
    fn spec_synced_and_the_full_set() {
        let c = spec_synced(Some(SyncError::Input(
            "cancelling non-day-2 host [h] in the middle of installation is not allowed",
        )));
        assert_eq!(reason(&c), ("False", "InputError"));
        assert_eq!(
            c.message,
            "The Spec could not be synced due to an input error: cancelling non-day-2 host [h] in the middle of installation is not allowed"
        );
        let info = ValidationsInfo::new();
        let view = HostView {
            state: Binding,
            status_info: "Host is waiting to be bound to the cluster",
            approved: true,
            validations: &info,
        };
        let all = agent_conditions(None, Some(&view));
        let types: Vec<&str> = all.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                "SpecSynced",
                "Connected",
                "RequirementsMet",
                "Validated",
                "Installed",
                "Bound"
            ]
        );
        assert_eq!(agent_conditions(None, None).len(), 1);
    }
}
