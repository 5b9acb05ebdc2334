//! The ClusterVersion status the operator writes after a pass (spec §5.2, §5.3, §4.4, §7.6),
//! as upstream's `updateClusterVersionStatus` (`pkg/cvo/status.go`). Pure: the previous status,
//! what the pass did, the ClusterOperator start times and `now` in; the next status out.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::outcome::{Effect, Failure, PayloadLoad, PayloadLoadStep, Progress};
use super::summary::{MULTIPLE_ERRORS, OperatorUpdateStartTimes, multiple_errors};
use super::update_risks::{
    UpdatesStatus, accepted_risks_message, risk_names_of, source_risks, updates_status,
};
use super::upgradeable::{RiskFacts, RiskInput, Upgradeability, upgradeability};
use crate::capability::{
    ClusterCapabilities, IMPLICITLY_ENABLED_CONDITION_TYPE,
    LEGACY_IMPLICITLY_ENABLED_CONDITION_TYPE, implicitly_enabled_condition,
};
use crate::cluster::validation::FieldError;
use crate::cluster::{
    ClusterOperatorStatusCondition, ClusterVersionCapabilitiesStatus, ClusterVersionStatus,
    Release, UpdateHistory,
};
use crate::include::ComponentOverride;
use crate::manifest::go_quote;
use crate::payload::metadata::running_architecture;
use crate::updates::AvailableUpdates;

/// `MaxHistory`.
pub const MAX_HISTORY: usize = 100;

/// Everything the next status depends on.
#[derive(Debug, Clone)]
pub struct StatusInput<'a> {
    pub now: Time,
    pub previous: Option<&'a ClusterVersionStatus>,
    /// `metadata.generation` of the ClusterVersion whose spec was synced.
    pub generation: Option<i64>,
    /// The release reconciled towards (`status.desired`): the payload being applied.
    pub desired: Release,
    pub version_hash: String,
    pub capabilities: &'a ClusterCapabilities,
    /// State Reconciling (history top Completed with the desired image) before the pass.
    pub reconciling: bool,
    pub progress: Progress,
    /// When each ClusterOperator waited on started updating, already updated with this pass
    /// ([`OperatorUpdateStartTimes::observe`]).
    pub start_times: &'a OperatorUpdateStartTimes,
    /// The last retrieval of updates from the update service; `None` before the first
    /// (`RetrievedUpdates` then stays as it was, `False` when absent).
    pub updates: Option<&'a AvailableUpdates>,
    /// `spec.overrides`: an `unmanaged` one makes the cluster not upgradeable.
    pub overrides: &'a [ComponentOverride],
    /// What the other `Upgradeable` risk sources read ([`super::upgradeable`]).
    pub risk_facts: &'a RiskFacts,
    /// Loading the requested release.
    pub payload_load: PayloadLoad,
    /// What the CVO's own checks found wrong in the spec (the `Invalid` condition).
    pub validation_errors: &'a [FieldError],
    /// The risks accepted to load `desired` (precondition warnings, forced failures) when it is
    /// a requested release: written to its history entry (`acceptedRisks`, `""` clears it).
    /// `None` for the operator's own payload, whose entry keeps what it has.
    pub accepted_risks: Option<&'a str>,
    /// Whether `desired`, a requested release, had its signatures verified: written to its
    /// history entry. `None` for the operator's own payload, whose entry keeps what it has.
    pub verified: Option<bool>,
    /// The preflight `spec.desiredUpdate` asks for (`mode: Preflight`), as far as it got: its
    /// `Preflight` condition, and its findings as risks of the update to its target. `None`:
    /// no preflight (the condition is removed).
    pub preflight: Option<&'a super::preflight_status::Preflight>,
}

/// The legacy `Upgradeable…` sub-conditions current upstream removes.
const LEGACY_UPGRADEABLE_CONDITION_TYPES: [&str; 5] = [
    "UpgradeableAdminAckRequired",
    "UpgradeableDeletesInProgress",
    "UpgradeableClusterOperators",
    "UpgradeableClusterVersionOverrides",
    "UpgradeableUpgradeInProgress",
];

/// The status to write. Conditions are first inserted in upstream's order: `Upgradeable`,
/// `ImplicitlyEnabledCapabilities`, `ReleaseAccepted`, `Available`, `Failing`, `Progressing`,
/// `RetrievedUpdates`.
pub fn next_status(input: StatusInput<'_>) -> ClusterVersionStatus {
    let previous = input.previous.cloned().unwrap_or_default();
    let now = input.now.clone();
    let completed = input.progress.completed;
    let mut history = merge_history(previous.history.clone(), &input.desired, completed, &now);
    if let (Some(verified), Some(top)) = (input.verified, history.first_mut())
        && input.desired.image.as_deref() == Some(top.image.as_str())
    {
        top.verified = verified;
    }
    let version = display_version(&input.desired);

    let mut conditions = previous.conditions.clone();
    // A pass that applied everything leaves the worker Reconciling; one that completed with
    // `Report` errors reports them with the state it started in, as upstream's last report
    // of such a pass does.
    let reconciling = input.reconciling || (completed && input.progress.failure.is_none());
    let upgradeability = upgradeability(&RiskInput {
        progressing: !reconciling,
        version: input.desired.version.as_deref().unwrap_or(""),
        overrides: input.overrides,
        facts: input.risk_facts,
    });
    set_upgradeable(&mut conditions, &now, &upgradeability);
    set_invalid(&mut conditions, &now, input.validation_errors);

    conditions.retain(|c| c.type_ != LEGACY_IMPLICITLY_ENABLED_CONDITION_TYPE);
    let implicit = implicitly_enabled_condition(&input.capabilities.implicitly_enabled);
    set(
        &mut conditions,
        &now,
        IMPLICITLY_ENABLED_CONDITION_TYPE,
        implicit.status,
        Some(implicit.reason),
        Some(implicit.message),
    );

    let (status, reason, message) = release_accepted(&input.payload_load, &input.desired);
    set(
        &mut conditions,
        &now,
        "ReleaseAccepted",
        status,
        Some(reason),
        Some(message),
    );

    if completed {
        set(
            &mut conditions,
            &now,
            "Available",
            "True",
            None,
            Some(format!("Done applying {version}")),
        );
    } else if !conditions.iter().any(|c| c.type_ == "Available") {
        set(&mut conditions, &now, "Available", "False", None, None);
    }

    let at = StatusTime {
        now: now.0,
        start_times: input.start_times,
    };
    let interpret = !reconciling && !history.is_empty();
    let outcome = Outcome::of(input.progress.failure.as_ref(), interpret, &at);
    let (status, reason, message) = outcome.failing();
    set(&mut conditions, &now, "Failing", status, reason, message);
    let invalid = !input.validation_errors.is_empty();
    let (status, reason, message) =
        outcome.progressing(&version, reconciling, invalid, &input.progress);
    set(
        &mut conditions,
        &now,
        "Progressing",
        status,
        reason,
        Some(message),
    );

    let updates = match input.updates {
        Some(updates) => {
            let (status, reason, message) = match &updates.failure {
                None => ("True", None, None),
                Some(f) => ("False", Some(f.reason()), Some(f.message())),
            };
            set(
                &mut conditions,
                &now,
                "RetrievedUpdates",
                status,
                reason,
                message,
            );
            let mut sources = source_risks(&upgradeability.risks, &updates.alerts);
            if let Some(preflight) = input.preflight {
                sources.extend(preflight.risks());
            }
            updates_status(
                updates,
                &sources,
                input.desired.version.as_deref().unwrap_or(""),
                &previous.conditional_updates,
                &previous.conditional_update_risks,
                &now,
            )
        }
        None => {
            if !conditions.iter().any(|c| c.type_ == "RetrievedUpdates") {
                set(
                    &mut conditions,
                    &now,
                    "RetrievedUpdates",
                    "False",
                    None,
                    None,
                );
            }
            UpdatesStatus {
                available: previous.available_updates,
                conditional: previous.conditional_updates,
                risks: previous.conditional_update_risks,
            }
        }
    };
    set_preflight(&mut conditions, &now, input.preflight);
    if let (Some(loaded), Some(top)) = (input.accepted_risks, history.first_mut())
        && input.desired.image.as_deref() == Some(top.image.as_str())
    {
        let names = risk_names_of(&updates.conditional, &top.image);
        let risks = accepted_risks_message(loaded, &top.image, names);
        top.accepted_risks = Some(risks).filter(|r| !r.is_empty());
    }

    let caps = input.capabilities.status();
    ClusterVersionStatus {
        desired: Some(input.desired),
        history,
        observed_generation: input.generation,
        version_hash: Some(input.version_hash),
        capabilities: Some(ClusterVersionCapabilitiesStatus {
            enabled_capabilities: caps.enabled_capabilities,
            known_capabilities: caps.known_capabilities,
        }),
        conditions,
        available_updates: updates.available,
        conditional_updates: updates.conditional,
        conditional_update_risks: updates.risks,
    }
}

/// `Preflight` while a preflight is requested; removed once it is not.
fn set_preflight(
    conditions: &mut Vec<ClusterOperatorStatusCondition>,
    now: &Time,
    preflight: Option<&super::preflight_status::Preflight>,
) {
    use super::preflight_status::CONDITION;
    match preflight {
        None => conditions.retain(|c| c.type_ != CONDITION),
        Some(p) => {
            let (status, reason, message) = p.condition();
            set(
                conditions,
                now,
                CONDITION,
                status,
                Some(&reason),
                Some(message),
            );
        }
    }
}

/// `<v>` of the condition messages: the version, else the image, else `<unknown>`.
fn display_version(desired: &Release) -> String {
    [desired.version.as_deref(), desired.image.as_deref()]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
        .unwrap_or("<unknown>")
        .to_string()
}

/// `Upgradeable`: absent without risk; else `False` with the risk's name and message, or
/// `MultipleReasons`; `Unknown`/`EvaluationFailed` when a source failed and none found a risk.
/// The legacy sub-conditions are removed.
fn set_upgradeable(
    conditions: &mut Vec<ClusterOperatorStatusCondition>,
    now: &Time,
    upgradeability: &Upgradeability,
) {
    conditions.retain(|c| !LEGACY_UPGRADEABLE_CONDITION_TYPES.contains(&c.type_.as_str()));
    let (reason, message) = match upgradeability.risks.as_slice() {
        [] if upgradeability.errors.is_empty() => {
            conditions.retain(|c| c.type_ != "Upgradeable");
            return;
        }
        [] => {
            let message = upgradeability.errors.join("\n");
            set(
                conditions,
                now,
                "Upgradeable",
                "Unknown",
                Some("EvaluationFailed"),
                Some(message),
            );
            return;
        }
        [risk] => (risk_reason(&risk.name), risk.message.clone()),
        many => (
            "MultipleReasons",
            format!(
                "Cluster should not be upgraded between minor or major versions for multiple reasons:\n* {}",
                many.iter()
                    .map(|r| r.message.as_str())
                    .collect::<Vec<_>>()
                    .join("\n* ")
            ),
        ),
    };
    set(
        conditions,
        now,
        "Upgradeable",
        "False",
        Some(reason),
        Some(message),
    );
}

/// The risk's name when it is a valid condition reason
/// (`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`), else upstream's stand-in.
fn risk_reason(name: &str) -> &str {
    let valid = match name.as_bytes() {
        [first, middle @ .., last] => {
            first.is_ascii_alphabetic()
                && middle
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"_,:".contains(c))
                && (last.is_ascii_alphanumeric() || *last == b'_')
        }
        [only] => only.is_ascii_alphabetic(),
        [] => false,
    };
    if valid {
        name
    } else {
        "RiskNameNotCompatibleWithReasonProperty"
    }
}

/// `ReleaseAccepted` (upstream `setDesiredReleaseAcceptedCondition` and the messages of
/// `SyncWorker.syncPayload`).
fn release_accepted(load: &PayloadLoad, desired: &Release) -> (&'static str, &'static str, String) {
    let q = |s: &str| go_quote(s);
    let field = |s: &Option<String>| q(s.as_deref().unwrap_or(""));
    match load {
        PayloadLoad::Loaded => (
            "True",
            "PayloadLoaded",
            format!(
                "Payload loaded version={} image={} architecture={}",
                field(&desired.version),
                field(&desired.image),
                // Upstream `Update.Architecture`: the release's, else `runtime.GOARCH`.
                q(desired
                    .architecture
                    .as_deref()
                    .filter(|a| !a.is_empty())
                    .unwrap_or(running_architecture())),
            ),
        ),
        PayloadLoad::Reverted(u) => (
            "True",
            "PayloadLoaded",
            format!(
                "Payload loaded version={} image={}",
                q(&u.version),
                q(&u.image)
            ),
        ),
        PayloadLoad::Retrieving(u) => (
            "Unknown",
            "RetrievePayload",
            format!(
                "Retrieving and verifying payload version={} image={}",
                q(&u.version),
                q(&u.image)
            ),
        ),
        PayloadLoad::Failed {
            update,
            step,
            error,
        } => {
            let (v, i) = (q(&update.version), q(&update.image));
            let message = match step {
                PayloadLoadStep::RetrievePayload => {
                    format!("Retrieving payload failed version={v} image={i} failure={error}")
                }
                PayloadLoadStep::LoadPayload => {
                    format!("Loading payload failed version={v} image={i} failure={error}")
                }
                PayloadLoadStep::VerifyPayloadVersion => {
                    format!("Verifying payload failed version={v} image={i} failure={error}")
                }
                PayloadLoadStep::PreconditionChecks => {
                    format!(
                        "Preconditions failed for payload loaded version={v} image={i}: {error}"
                    )
                }
            };
            ("False", step.as_str(), message)
        }
    }
}

/// An operator other than `machine-config` is slow after this long.
const SLOW_OPERATOR: SignedDuration = SignedDuration::from_mins(30);
/// `machine-config` takes longer (it reboots the nodes).
const SLOW_MACHINE_CONFIG: SignedDuration = SignedDuration::from_mins(90);
const MACHINE_CONFIG: &str = "machine-config";
/// How long a `FailAfterInterval` error (a degraded operator) is only waited on.
const FAIL_AFTER: SignedDuration = SignedDuration::from_mins(40);

/// `now` and the operator start times the failure is read against.
struct StatusTime<'a> {
    now: Timestamp,
    start_times: &'a OperatorUpdateStartTimes,
}

impl StatusTime<'_> {
    /// Upstream `COUpdateStartTimesGet(name).Before(now.Add(-limit))`; `None` when the
    /// operator has no start time (upstream's zero time).
    fn waited_longer_than(&self, name: &str, limit: SignedDuration) -> Option<bool> {
        self.start_times
            .get(name)
            .map(|start| self.now.duration_since(start) > limit)
    }
}

/// What upstream's `convertErrorToProgressing` makes of the failure.
enum Reading {
    /// Failing; `Progressing` says this, else `SummaryForReason`.
    Failing(Option<String>),
    /// Still progressing (`skipFailure`): `Progressing` says `…, <message>`; a slow operator
    /// makes `Failing` `Unknown`.
    Waiting { message: String, slow: bool },
}

impl Reading {
    /// By the failure's effect, as upstream's switch on `UpdateEffect`.
    fn of(failure: &Failure, at: &StatusTime<'_>) -> Reading {
        match failure.effect {
            Effect::Report => Reading::Failing(Some(failure.message.clone())),
            Effect::None => waiting_on(failure, at),
            Effect::FailAfterInterval => failing_after_interval(failure, at),
            Effect::Fail => Reading::Failing(None),
        }
    }
}

/// `convertErrorToProgressingForUpdateEffectNone`: operators still updating are progress;
/// past 30 minutes (90 for `machine-config`) they are slow.
fn waiting_on(failure: &Failure, at: &StatusTime<'_>) -> Reading {
    let names = failure.operator_names();
    let mut exceeded = vec![];
    let mut machine_config = false;
    for &name in &names {
        let limit = if name == MACHINE_CONFIG {
            SLOW_MACHINE_CONFIG
        } else {
            SLOW_OPERATOR
        };
        if at.waited_longer_than(name, limit) == Some(true) {
            if name == MACHINE_CONFIG {
                machine_config = true;
            } else {
                exceeded.push(name);
            }
        }
    }
    let exceeded = exceeded.join(", ");
    let message = match (exceeded.is_empty(), machine_config) {
        (true, false) => {
            return Reading::Waiting {
                message: format!("waiting on {}", names.join(", ")),
                slow: false,
            };
        }
        (false, false) => {
            format!("waiting on {exceeded} over 30 minutes which is longer than expected")
        }
        (false, true) => format!(
            "waiting on {exceeded} over 30 minutes and machine-config over 90 minutes which is longer than expected"
        ),
        (true, true) => {
            "waiting on machine-config over 90 minutes which is longer than expected".into()
        }
    };
    Reading::Waiting {
        message,
        slow: true,
    }
}

/// `convertErrorToProgressingForUpdateEffectFailAfterInterval`: progress for 40 minutes, then
/// failing. An operator without a start time has waited forever (upstream's zero time).
fn failing_after_interval(failure: &Failure, at: &StatusTime<'_>) -> Reading {
    let exceeded: Vec<&str> = failure
        .operator_names()
        .into_iter()
        .filter(|name| at.waited_longer_than(name, FAIL_AFTER) != Some(false))
        .collect();
    if exceeded.is_empty() {
        Reading::Waiting {
            message: format!(
                "waiting up to 40 minutes on {}",
                failure.name.as_deref().unwrap_or("")
            ),
            slow: false,
        }
    } else {
        Reading::Failing(Some(format!(
            "wait has exceeded 40 minutes for these operators: {}",
            exceeded.join(", ")
        )))
    }
}

/// `filterErrorForFailingCondition`: `MultipleErrors` without its `None`-effect members
/// (re-summarized; `None` when nothing is left).
fn without_waiting(failure: &Failure) -> Option<Failure> {
    if failure.reason != MULTIPLE_ERRORS || failure.errors.is_empty() {
        return Some(failure.clone());
    }
    let failing = failure
        .errors
        .iter()
        .filter(|e| e.effect != Effect::None)
        .cloned()
        .collect();
    multiple_errors(failing)
}

/// The failure as the `Failing` and `Progressing` conditions see it.
struct Outcome<'a> {
    failure: Option<&'a Failure>,
    reading: Option<Reading>,
    /// What `Failing` reports.
    failing: Option<Failure>,
}

impl<'a> Outcome<'a> {
    /// `interpret`: not reconciling and the history is not empty (upstream only then
    /// converts errors to progress and filters `MultipleErrors`).
    fn of(failure: Option<&'a Failure>, interpret: bool, at: &StatusTime<'_>) -> Self {
        let reading = failure.map(|f| {
            if interpret {
                Reading::of(f, at)
            } else {
                Reading::Failing(None)
            }
        });
        let failing = match failure {
            Some(f) if interpret => without_waiting(f),
            other => other.cloned(),
        };
        Outcome {
            failure,
            reading,
            failing,
        }
    }

    /// The `Failing` condition: status, reason, message.
    fn failing(&self) -> (&'static str, Option<&str>, Option<String>) {
        match (&self.reading, &self.failing) {
            (
                Some(Reading::Waiting {
                    message,
                    slow: true,
                }),
                Some(_),
            ) => (
                "Unknown",
                Some("SlowClusterOperator"),
                Some(message.clone()),
            ),
            (Some(Reading::Failing(_)), Some(f)) => {
                ("True", Some(f.reason.as_str()), Some(f.message.clone()))
            }
            _ => ("False", None, None),
        }
    }

    /// The `Progressing` condition: status, reason, message.
    fn progressing(
        &self,
        version: &str,
        reconciling: bool,
        invalid: bool,
        progress: &Progress,
    ) -> (&'static str, Option<&str>, String) {
        match (self.failure, &self.reading) {
            (Some(f), Some(Reading::Failing(message))) => {
                let message = message
                    .clone()
                    .unwrap_or_else(|| summary_for_reason(&f.reason, f.name.as_deref()));
                if reconciling {
                    (
                        "False",
                        Some(f.reason.as_str()),
                        format!("Error while reconciling {version}: {message}"),
                    )
                } else {
                    (
                        "True",
                        Some(f.reason.as_str()),
                        format!("Unable to apply {version}: {message}"),
                    )
                }
            }
            _ if reconciling && invalid => (
                "False",
                Some(INVALID_REASON),
                format!("Stopped at {version}: the cluster version is invalid"),
            ),
            _ if reconciling => ("False", None, format!("Cluster version is {version}")),
            _ if invalid => (
                "True",
                Some(INVALID_REASON),
                format!("Reconciling {version}: the cluster version is invalid"),
            ),
            (Some(f), Some(Reading::Waiting { message, .. })) => (
                "True",
                Some(f.reason.as_str()),
                working_towards(version, progress, Some(message)),
            ),
            _ => ("True", None, working_towards(version, progress, None)),
        }
    }
}

/// The reason of `Invalid`, and of `Progressing` while the spec is invalid.
const INVALID_REASON: &str = "InvalidClusterVersion";

/// `Invalid=True` with upstream's message while the spec has errors; removed otherwise.
fn set_invalid(
    conditions: &mut Vec<ClusterOperatorStatusCondition>,
    now: &Time,
    errors: &[FieldError],
) {
    let message = match errors {
        [] => {
            conditions.retain(|c| c.type_ != "Invalid");
            return;
        }
        [one] => format!("The cluster version is invalid: {one}"),
        many => {
            let lines: String = many.iter().map(|e| format!("* {e}\n")).collect();
            format!("The cluster version is invalid:\n{lines}")
        }
    };
    set(
        conditions,
        now,
        "Invalid",
        "True",
        Some(INVALID_REASON),
        Some(message),
    );
}

/// `Working towards <v>[: <done> of <total> done (<pct>% complete)][, <waiting>]`, the
/// percentage computed in `float32` and truncated, as upstream.
fn working_towards(version: &str, progress: &Progress, waiting: Option<&str>) -> String {
    let fraction = progress.done as f32 / progress.total as f32;
    if fraction > 0.0 {
        let pct = (fraction * 100.0).trunc();
        let done = format!(
            "Working towards {version}: {} of {} done ({pct:.0}% complete)",
            progress.done, progress.total
        );
        match waiting {
            Some(waiting) => format!("{done}, {waiting}"),
            None => done,
        }
    } else {
        match waiting {
            Some(waiting) => format!("Working towards {version}: {waiting}"),
            None => format!("Working towards {version}"),
        }
    }
}

/// `SummaryForReason` (spec §5.3, `pkg/payload/task.go`).
pub fn summary_for_reason(reason: &str, name: Option<&str>) -> String {
    let name = name.filter(|n| !n.is_empty());
    let named = |one: &str, any: &str| match name {
        Some(n) => one.replace("<n>", n),
        None => any.to_string(),
    };
    match reason {
        "UpdatePayloadResourceNotFound" | "UpdatePayloadResourceConflict" => {
            "some resources could not be updated".into()
        }
        "UpdatePayloadClusterDown" => "the control plane is down or not responding".into(),
        "UpdatePayloadClusterError" => "the control plane is reporting an internal error".into(),
        "UpdatePayloadClusterOverloaded" => {
            "the control plane is overloaded and is not accepting updates".into()
        }
        "UpdatePayloadClusterUnauthorized" => "could not authenticate to the server".into(),
        "UpdatePayloadRetrievalFailed" => "could not download the update".into(),
        "UpdatePayloadResourceForbidden" => "the server is rejecting updates".into(),
        "UpdatePayloadResourceTypeMissing" => {
            "a required extension is not available to update".into()
        }
        "UpdatePayloadResourceInvalid" => "some cluster configuration is invalid".into(),
        "UpdatePayloadIntegrity" => "the contents of the update are invalid".into(),
        "ImageVerificationFailed" => "the image may not be safe to use".into(),
        "UpgradePreconditionCheckFailed" => "it may not be safe to apply this update".into(),
        "ClusterOperatorDegraded" => named(
            "the cluster operator <n> is degraded",
            "a cluster operator is degraded",
        ),
        "ClusterOperatorNotAvailable" => named(
            "the cluster operator <n> is not available",
            "a cluster operator is not available",
        ),
        "ClusterOperatorsNotAvailable" => "some cluster operators are not available".into(),
        "ClusterOperatorNoVersions" => named(
            "the cluster operator <n> does not declare expected versions",
            "a cluster operator does not declare expected versions",
        ),
        "WorkloadNotAvailable" => named(
            "the workload <n> has not yet successfully rolled out",
            "a workload has not yet rolled out",
        ),
        "WorkloadNotProgressing" => named(
            "the workload <n> cannot roll out",
            "a workload cannot roll out",
        ),
        r if r.starts_with("UpdatePayload") => "the update could not be applied".into(),
        r => match name {
            Some(n) => format!("{n} has an unknown error: {r}"),
            None => format!("an unknown error has occurred: {r}"),
        },
    }
}

/// Sets a condition in place (appending a new type); `lastTransitionTime` changes only when
/// the status does.
fn set(
    conditions: &mut Vec<ClusterOperatorStatusCondition>,
    now: &Time,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<String>,
) {
    let reason = reason.map(str::to_string);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = now.clone();
                c.status = status.to_string();
            }
            c.reason = reason;
            c.message = message;
        }
        None => conditions.push(ClusterOperatorStatusCondition {
            reason,
            message,
            ..ClusterOperatorStatusCondition::new(type_, status, now.clone())
        }),
    }
}

/// `mergeEqualVersions`: whether the top entry is the desired release; fills in what it lacks.
fn merge_equal(entry: &mut UpdateHistory, desired: &Release) -> bool {
    let image = desired.image.as_deref().unwrap_or("");
    let version = desired.version.as_deref().unwrap_or("");
    let entry_version = entry.version.as_deref().unwrap_or("");
    if !image.is_empty() && entry.image == image {
        if entry_version.is_empty() && !version.is_empty() {
            entry.version = Some(version.to_string());
            return true;
        }
        return version.is_empty() || entry_version == version;
    }
    if !version.is_empty() && entry_version == version {
        if entry.image.is_empty() {
            entry.image = image.to_string();
            return true;
        }
        return entry.image == image;
    }
    false
}

/// `mergeOperatorHistory` (spec §5.2): newest first, at most [`MAX_HISTORY`] entries (upstream
/// main's weighted prune, [`super::history`]).
pub fn merge_history(
    mut history: Vec<UpdateHistory>,
    desired: &Release,
    completed: bool,
    now: &Time,
) -> Vec<UpdateHistory> {
    if desired.image.as_deref().is_none_or(str::is_empty) {
        return history;
    }
    let matched = history
        .first_mut()
        .is_some_and(|top| merge_equal(top, desired));
    if matched {
        let top = &mut history[0];
        if completed {
            top.state = "Completed".into();
            if top.completion_time.is_none() {
                top.completion_time = Some(now.clone());
            }
        }
    } else {
        if let Some(top) = history.first_mut()
            && top.completion_time.is_none()
        {
            top.completion_time = Some(now.clone());
        }
        history.insert(
            0,
            UpdateHistory {
                state: if completed { "Completed" } else { "Partial" }.into(),
                started_time: now.clone(),
                completion_time: completed.then(|| now.clone()),
                version: desired.version.clone(),
                image: desired.image.clone().unwrap_or_default(),
                verified: false,
                accepted_risks: None,
            },
        );
    }
    super::history::prune(&mut history, MAX_HISTORY);
    history
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::capability::Capability;
    use crate::operator::outcome::RequestedUpdate;
    use crate::operator::upgradeable::UpgradeRisk;
    use crate::updates::rules::Applies;
    use crate::updates::{ClusterCondition, Failure as NoUpdates, Key, PromQlClusterCondition};
    use crate::updates::{ConditionalUpdateRisk, Target};

    static NO_START_TIMES: OperatorUpdateStartTimes = OperatorUpdateStartTimes::new();
    static NO_CAPABILITIES: ClusterCapabilities = ClusterCapabilities {
        known: BTreeSet::new(),
        enabled: BTreeSet::new(),
        implicitly_enabled: BTreeSet::new(),
    };

    static HEALTHY: RiskFacts = RiskFacts::HEALTHY;

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn desired(version: &str, image: &str) -> Release {
        Release {
            version: Some(version.into()),
            image: Some(image.into()),
            architecture: Some("amd64".into()),
            ..Default::default()
        }
    }

    fn input<'a>(
        previous: Option<&'a ClusterVersionStatus>,
        caps: &'a ClusterCapabilities,
        now: &str,
        progress: Progress,
    ) -> StatusInput<'a> {
        StatusInput {
            now: t(now),
            previous,
            generation: Some(3),
            desired: desired("4.18.0", "img@sha256:1"),
            version_hash: "hash".into(),
            capabilities: caps,
            reconciling: false,
            progress,
            start_times: &NO_START_TIMES,
            updates: None,
            overrides: &[],
            risk_facts: &HEALTHY,
            payload_load: PayloadLoad::Loaded,
            validation_errors: &[],
            accepted_risks: None,
            verified: None,
            preflight: None,
        }
    }

    fn cond<'a>(s: &'a ClusterVersionStatus, type_: &str) -> &'a ClusterOperatorStatusCondition {
        s.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    fn msg<'a>(s: &'a ClusterVersionStatus, type_: &str) -> (&'a str, &'a str, &'a str) {
        let c = cond(s, type_);
        (
            c.status.as_str(),
            c.reason.as_deref().unwrap_or(""),
            c.message.as_deref().unwrap_or(""),
        )
    }

    fn types(s: &ClusterVersionStatus) -> Vec<&str> {
        s.conditions.iter().map(|c| c.type_.as_str()).collect()
    }

    const T0: &str = "2025-01-01T00:00:00Z";
    const T1: &str = "2025-01-01T00:05:00Z";
    const T2: &str = "2025-01-01T00:10:00Z";

    #[test]
    fn an_invalid_spec_is_reported_as_upstream_does() {
        use crate::cluster::validation::FieldError;
        let caps = ClusterCapabilities::default();
        let one = [FieldError {
            field: "spec.desiredUpdate.version",
            value: Some("4.0.4".into()),
            detail: "when image is empty the update must be an available update",
            unsupported: false,
        }];
        let two = [
            FieldError {
                field: "spec.upstream",
                value: Some("#%GG".into()),
                detail: "must be a valid URL or empty",
                unsupported: false,
            },
            FieldError {
                field: "spec.clusterID",
                value: Some("not-valid-cluster-id".into()),
                detail: "must be an RFC4122-variant UUID",
                unsupported: false,
            },
        ];
        let done = Progress {
            completed: true,
            done: 7,
            total: 7,
            failure: None,
        };
        let mut reconciling = input(None, &caps, T0, done.clone());
        reconciling.reconciling = true;
        reconciling.validation_errors = &one;
        let s = next_status(reconciling);
        assert_eq!(
            msg(&s, "Invalid"),
            (
                "True",
                "InvalidClusterVersion",
                r#"The cluster version is invalid: spec.desiredUpdate.version: Invalid value: "4.0.4": when image is empty the update must be an available update"#
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "False",
                "InvalidClusterVersion",
                "Stopped at 4.18.0: the cluster version is invalid"
            )
        );
        assert_eq!(types(&s)[0], "Invalid");

        let mut updating = input(Some(&s), &caps, T1, Progress::default());
        updating.validation_errors = &two;
        let s = next_status(updating);
        assert_eq!(
            msg(&s, "Invalid").2,
            "The cluster version is invalid:\n* spec.upstream: Invalid value: \"#%GG\": must be a valid URL or empty\n* spec.clusterID: Invalid value: \"not-valid-cluster-id\": must be an RFC4122-variant UUID\n"
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "InvalidClusterVersion",
                "Reconciling 4.18.0: the cluster version is invalid"
            )
        );

        let s = next_status(input(Some(&s), &caps, T2, done));
        assert!(!types(&s).contains(&"Invalid"), "removed once valid");
    }

    #[test]
    fn installing_then_done() {
        let caps = ClusterCapabilities::default();
        let first = next_status(input(
            None,
            &caps,
            T0,
            Progress {
                done: 3,
                total: 7,
                ..Default::default()
            },
        ));
        // Upstream's order of first insertion (ReleaseAccepted before Available). Installing
        // is an update in progress (`ClusterVersionUpdating`).
        assert_eq!(
            types(&first),
            [
                "Upgradeable",
                "ImplicitlyEnabledCapabilities",
                "ReleaseAccepted",
                "Available",
                "Failing",
                "Progressing",
                "RetrievedUpdates",
            ]
        );
        assert_eq!(
            msg(&first, "ImplicitlyEnabledCapabilities"),
            ("False", "AsExpected", "Capabilities match configured spec")
        );
        assert_eq!(msg(&first, "Available"), ("False", "", ""));
        assert_eq!(msg(&first, "Failing"), ("False", "", ""));
        assert_eq!(
            msg(&first, "Progressing"),
            (
                "True",
                "",
                "Working towards 4.18.0: 3 of 7 done (42% complete)"
            )
        );
        // Before the first retrieval: defaulted to False.
        assert_eq!(msg(&first, "RetrievedUpdates"), ("False", "", ""));
        assert_eq!(
            msg(&first, "ReleaseAccepted"),
            (
                "True",
                "PayloadLoaded",
                "Payload loaded version=\"4.18.0\" image=\"img@sha256:1\" architecture=\"amd64\""
            )
        );
        assert_eq!(first.history.len(), 1);
        assert_eq!(first.history[0].state, "Partial");
        assert_eq!(first.history[0].started_time, t(T0));
        assert_eq!(first.history[0].completion_time, None);
        assert_eq!(first.observed_generation, Some(3));
        assert_eq!(first.version_hash.as_deref(), Some("hash"));

        let done = next_status(input(
            Some(&first),
            &caps,
            T1,
            Progress {
                completed: true,
                done: 7,
                total: 7,
                failure: None,
            },
        ));
        assert_eq!(
            msg(&done, "Available"),
            ("True", "", "Done applying 4.18.0")
        );
        assert_eq!(
            msg(&done, "Progressing"),
            ("False", "", "Cluster version is 4.18.0")
        );
        assert_eq!(done.history.len(), 1);
        assert_eq!(done.history[0].state, "Completed");
        assert_eq!(done.history[0].started_time, t(T0));
        assert_eq!(done.history[0].completion_time, Some(t(T1)));
        // Transitions: Available and Progressing changed status, Failing did not.
        assert_eq!(cond(&done, "Available").last_transition_time, t(T1));
        assert_eq!(cond(&done, "Progressing").last_transition_time, t(T1));
        assert_eq!(cond(&done, "Failing").last_transition_time, t(T0));

        // A later reconcile pass: nothing changes but the status-less fields.
        let again = next_status(StatusInput {
            reconciling: true,
            ..input(
                Some(&done),
                &caps,
                T2,
                Progress {
                    completed: true,
                    done: 7,
                    total: 7,
                    failure: None,
                },
            )
        });
        assert_eq!(again, done);
    }

    #[test]
    fn progress_without_done_tasks() {
        let caps = ClusterCapabilities::default();
        let s = next_status(input(None, &caps, T0, Progress::default()));
        assert_eq!(
            msg(&s, "Progressing"),
            ("True", "", "Working towards 4.18.0")
        );
    }

    #[test]
    fn percentage_is_truncated_float32() {
        let caps = ClusterCapabilities::default();
        let at = |done, total| {
            let s = next_status(input(
                None,
                &caps,
                T0,
                Progress {
                    done,
                    total,
                    ..Default::default()
                },
            ));
            cond(&s, "Progressing").message.clone().unwrap()
        };
        assert_eq!(
            at(2, 3),
            "Working towards 4.18.0: 2 of 3 done (66% complete)"
        );
        // float32(53)/float32(100)*100 is 52.999996: upstream says 52, not 53.
        assert_eq!(
            at(53, 100),
            "Working towards 4.18.0: 53 of 100 done (52% complete)"
        );
        assert_eq!(
            at(863, 863),
            "Working towards 4.18.0: 863 of 863 done (100% complete)"
        );
    }

    fn operator_failure(reason: &str, message: &str, name: &str, effect: Effect) -> Failure {
        Failure {
            name: Some(name.into()),
            effect,
            ..Failure::new(reason, message)
        }
    }

    fn failing_progress(failure: Failure) -> Progress {
        Progress {
            failure: Some(failure),
            done: 3,
            total: 7,
            completed: false,
        }
    }

    #[test]
    fn failures() {
        let caps = ClusterCapabilities::default();
        let failure = operator_failure(
            "ClusterOperatorNotAvailable",
            "Cluster operator etcd is not available",
            "etcd",
            Effect::Fail,
        );
        let progress = failing_progress(failure);
        let s = next_status(input(None, &caps, T0, progress.clone()));
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "ClusterOperatorNotAvailable",
                "Cluster operator etcd is not available"
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorNotAvailable",
                "Unable to apply 4.18.0: the cluster operator etcd is not available"
            )
        );
        let r = next_status(StatusInput {
            reconciling: true,
            ..input(Some(&s), &caps, T1, progress)
        });
        // Upstream summarizes the reason here too (SummaryForReason), not the error message.
        assert_eq!(
            msg(&r, "Progressing"),
            (
                "False",
                "ClusterOperatorNotAvailable",
                "Error while reconciling 4.18.0: the cluster operator etcd is not available"
            )
        );
        assert_eq!(cond(&r, "Failing").last_transition_time, t(T0));
        assert_eq!(cond(&r, "Progressing").last_transition_time, t(T1));
        // Available was never True: it stays False.
        assert_eq!(msg(&r, "Available"), ("False", "", ""));
    }

    /// The status after a failing pass at `now`, with operators started at `starts`.
    fn status_at(
        failure: Failure,
        now: &str,
        starts: &[(&str, &str)],
        reconciling: bool,
    ) -> ClusterVersionStatus {
        let mut times = OperatorUpdateStartTimes::default();
        for (name, at) in starts {
            times.ensure(name, t(at).0);
        }
        next_status(StatusInput {
            start_times: &times,
            reconciling,
            ..input(None, &NO_CAPABILITIES, now, failing_progress(failure))
        })
    }

    fn updating(name: &str) -> Failure {
        operator_failure(
            "ClusterOperatorUpdating",
            &format!("Cluster operator {name} is updating versions"),
            name,
            Effect::None,
        )
    }

    #[test]
    fn updating_operators_are_progress() {
        let s = status_at(updating("etcd"), T1, &[("etcd", T0)], false);
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorUpdating",
                "Working towards 4.18.0: 3 of 7 done (42% complete), waiting on etcd"
            )
        );
        // Without done tasks: upstream's `Working towards <v>: <message>`.
        let s = next_status(input(
            None,
            &NO_CAPABILITIES,
            T1,
            Progress {
                failure: Some(updating("etcd")),
                ..Default::default()
            },
        ));
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorUpdating",
                "Working towards 4.18.0: waiting on etcd"
            )
        );
    }

    #[test]
    fn condensed_updating_operators_are_named() {
        let failure = Failure {
            name: Some("a, b".into()),
            names: vec!["a".into(), "b".into()],
            effect: Effect::None,
            ..Failure::new(
                "ClusterOperatorsUpdating",
                "Cluster operators a, b are updating versions",
            )
        };
        let s = status_at(failure, T1, &[("a", T0), ("b", T0)], false);
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorsUpdating",
                "Working towards 4.18.0: 3 of 7 done (42% complete), waiting on a, b"
            )
        );
    }

    #[test]
    fn an_operator_updating_for_31_minutes_is_slow() {
        let s = status_at(
            updating("etcd"),
            "2025-01-01T00:31:00Z",
            &[("etcd", T0)],
            false,
        );
        assert_eq!(
            msg(&s, "Failing"),
            (
                "Unknown",
                "SlowClusterOperator",
                "waiting on etcd over 30 minutes which is longer than expected"
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorUpdating",
                "Working towards 4.18.0: 3 of 7 done (42% complete), waiting on etcd over 30 minutes which is longer than expected"
            )
        );
        // Exactly 30 minutes is not yet slow; no start time is never slow.
        let s = status_at(
            updating("etcd"),
            "2025-01-01T00:30:00Z",
            &[("etcd", T0)],
            false,
        );
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));
        let s = status_at(updating("etcd"), "2025-01-01T05:00:00Z", &[], false);
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));
    }

    #[test]
    fn machine_config_is_slow_after_90_minutes() {
        let mc = updating("machine-config");
        let s = status_at(
            mc.clone(),
            "2025-01-01T00:31:00Z",
            &[("machine-config", T0)],
            false,
        );
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));
        let s = status_at(mc, "2025-01-01T01:31:00Z", &[("machine-config", T0)], false);
        assert_eq!(
            msg(&s, "Failing"),
            (
                "Unknown",
                "SlowClusterOperator",
                "waiting on machine-config over 90 minutes which is longer than expected"
            )
        );
        assert_eq!(
            msg(&s, "Progressing").2,
            "Working towards 4.18.0: 3 of 7 done (42% complete), waiting on machine-config over 90 minutes which is longer than expected"
        );
        let both = Failure {
            name: Some("etcd, machine-config".into()),
            names: vec!["etcd".into(), "machine-config".into()],
            effect: Effect::None,
            ..Failure::new("ClusterOperatorsUpdating", "m")
        };
        let s = status_at(
            both,
            "2025-01-01T01:31:00Z",
            &[("etcd", T0), ("machine-config", T0)],
            false,
        );
        assert_eq!(
            msg(&s, "Failing"),
            (
                "Unknown",
                "SlowClusterOperator",
                "waiting on etcd over 30 minutes and machine-config over 90 minutes which is longer than expected"
            )
        );
    }

    #[test]
    fn updating_while_reconciling_fails() {
        let s = status_at(updating("etcd"), T1, &[("etcd", T0)], true);
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "ClusterOperatorUpdating",
                "Cluster operator etcd is updating versions"
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "False",
                "ClusterOperatorUpdating",
                "Error while reconciling 4.18.0: etcd has an unknown error: ClusterOperatorUpdating"
            )
        );
    }

    fn degraded(effect: Effect) -> Failure {
        operator_failure(
            "ClusterOperatorDegraded",
            "Cluster operator etcd is degraded",
            "etcd",
            effect,
        )
    }

    #[test]
    fn degraded_fails_after_40_minutes() {
        let d = degraded(Effect::FailAfterInterval);
        let s = status_at(d.clone(), "2025-01-01T00:39:00Z", &[("etcd", T0)], false);
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorDegraded",
                "Working towards 4.18.0: 3 of 7 done (42% complete), waiting up to 40 minutes on etcd"
            )
        );
        let s = status_at(d.clone(), "2025-01-01T00:41:00Z", &[("etcd", T0)], false);
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "ClusterOperatorDegraded",
                "Cluster operator etcd is degraded"
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorDegraded",
                "Unable to apply 4.18.0: wait has exceeded 40 minutes for these operators: etcd"
            )
        );
        // Upstream reads a missing start time as the zero time: waited forever.
        let s = status_at(d, T1, &[], false);
        assert_eq!(msg(&s, "Failing").0, "True");
    }

    #[test]
    fn reported_errors_fail() {
        // Upstream's UpdateEffectReport: the node goes on, the error still shows in Failing
        // and Progressing says its message.
        let s = status_at(degraded(Effect::Report), T1, &[], false);
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "ClusterOperatorDegraded",
                "Cluster operator etcd is degraded"
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorDegraded",
                "Unable to apply 4.18.0: Cluster operator etcd is degraded"
            )
        );
        // A pass that completed with only reported errors: done, still reporting them.
        let s = next_status(input(
            None,
            &NO_CAPABILITIES,
            T1,
            Progress {
                completed: true,
                done: 7,
                total: 7,
                failure: Some(degraded(Effect::Report)),
            },
        ));
        assert_eq!(s.history[0].state, "Completed");
        assert_eq!(msg(&s, "Available"), ("True", "", "Done applying 4.18.0"));
        assert_eq!(msg(&s, "Failing").0, "True");
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "ClusterOperatorDegraded",
                "Unable to apply 4.18.0: Cluster operator etcd is degraded"
            )
        );
    }

    fn multiple(errors: Vec<Failure>) -> Failure {
        multiple_errors(errors).unwrap()
    }

    #[test]
    fn waiting_members_of_multiple_errors_do_not_fail() {
        let not_available = operator_failure(
            "ClusterOperatorNotAvailable",
            "Cluster operator A is not available",
            "A",
            Effect::Fail,
        );
        let b_updating = updating("B");
        let c_degraded = operator_failure(
            "ClusterOperatorDegraded",
            "Cluster operator C is degraded",
            "C",
            Effect::FailAfterInterval,
        );

        let m = multiple(vec![not_available.clone(), b_updating.clone()]);
        let s = status_at(m.clone(), T1, &[], false);
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "ClusterOperatorNotAvailable",
                "Cluster operator A is not available"
            )
        );
        assert_eq!(
            msg(&s, "Progressing"),
            (
                "True",
                "MultipleErrors",
                "Unable to apply 4.18.0: an unknown error has occurred: MultipleErrors"
            )
        );
        // Reconciling: nothing is filtered.
        let s = status_at(m, T1, &[], true);
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "MultipleErrors",
                "Multiple errors are preventing progress:\n* Cluster operator A is not available\n* Cluster operator B is updating versions"
            )
        );

        let s = status_at(
            multiple(vec![b_updating.clone(), updating("D")]),
            T1,
            &[],
            false,
        );
        assert_eq!(msg(&s, "Failing"), ("False", "", ""));

        let s = status_at(
            multiple(vec![not_available, b_updating, c_degraded]),
            T1,
            &[],
            false,
        );
        assert_eq!(
            msg(&s, "Failing"),
            (
                "True",
                "MultipleErrors",
                "Multiple errors are preventing progress:\n* Cluster operator A is not available\n* Cluster operator C is degraded"
            )
        );
    }

    #[test]
    fn summaries() {
        let rows: [(&str, Option<&str>, &str); 28] = [
            (
                "UpdatePayloadResourceNotFound",
                None,
                "some resources could not be updated",
            ),
            (
                "UpdatePayloadResourceConflict",
                None,
                "some resources could not be updated",
            ),
            (
                "UpdatePayloadClusterDown",
                None,
                "the control plane is down or not responding",
            ),
            (
                "UpdatePayloadClusterError",
                None,
                "the control plane is reporting an internal error",
            ),
            (
                "UpdatePayloadClusterOverloaded",
                None,
                "the control plane is overloaded and is not accepting updates",
            ),
            (
                "UpdatePayloadClusterUnauthorized",
                None,
                "could not authenticate to the server",
            ),
            (
                "UpdatePayloadRetrievalFailed",
                None,
                "could not download the update",
            ),
            (
                "UpdatePayloadResourceForbidden",
                None,
                "the server is rejecting updates",
            ),
            (
                "UpdatePayloadResourceTypeMissing",
                None,
                "a required extension is not available to update",
            ),
            (
                "UpdatePayloadResourceInvalid",
                None,
                "some cluster configuration is invalid",
            ),
            (
                "UpdatePayloadIntegrity",
                None,
                "the contents of the update are invalid",
            ),
            (
                "ImageVerificationFailed",
                None,
                "the image may not be safe to use",
            ),
            (
                "UpgradePreconditionCheckFailed",
                None,
                "it may not be safe to apply this update",
            ),
            (
                "ClusterOperatorDegraded",
                Some("x"),
                "the cluster operator x is degraded",
            ),
            (
                "ClusterOperatorDegraded",
                None,
                "a cluster operator is degraded",
            ),
            (
                "ClusterOperatorNotAvailable",
                Some("x"),
                "the cluster operator x is not available",
            ),
            (
                "ClusterOperatorNotAvailable",
                Some(""),
                "a cluster operator is not available",
            ),
            (
                "ClusterOperatorsNotAvailable",
                Some("x, y"),
                "some cluster operators are not available",
            ),
            (
                "ClusterOperatorNoVersions",
                Some("x"),
                "the cluster operator x does not declare expected versions",
            ),
            (
                "ClusterOperatorNoVersions",
                None,
                "a cluster operator does not declare expected versions",
            ),
            (
                "WorkloadNotAvailable",
                Some("ns/d"),
                "the workload ns/d has not yet successfully rolled out",
            ),
            (
                "WorkloadNotAvailable",
                None,
                "a workload has not yet rolled out",
            ),
            (
                "WorkloadNotProgressing",
                Some("ns/d"),
                "the workload ns/d cannot roll out",
            ),
            ("WorkloadNotProgressing", None, "a workload cannot roll out"),
            (
                "UpdatePayloadFailed",
                None,
                "the update could not be applied",
            ),
            (
                "NoDesiredImage",
                None,
                "an unknown error has occurred: NoDesiredImage",
            ),
            ("Odd", Some("x"), "x has an unknown error: Odd"),
            (
                "ClusterOperatorsDegraded",
                Some("x, y"),
                "x, y has an unknown error: ClusterOperatorsDegraded",
            ),
        ];
        for (reason, name, want) in rows {
            assert_eq!(summary_for_reason(reason, name), want, "{reason} {name:?}");
        }
    }

    #[test]
    fn implicitly_enabled_and_capabilities() {
        let caps = ClusterCapabilities {
            known: ["baremetal", "Console", "Build"]
                .map(Capability::new)
                .into_iter()
                .collect(),
            enabled: [Capability::new("Console")].into_iter().collect(),
            implicitly_enabled: [Capability::new("Console")].into_iter().collect(),
        };
        let mut prev = ClusterVersionStatus::default();
        prev.conditions.push(condition("ImplicitlyEnabled", "True"));
        let s = next_status(input(Some(&prev), &caps, T1, Progress::default()));
        assert!(s.conditions.iter().all(|c| c.type_ != "ImplicitlyEnabled"));
        assert_eq!(
            msg(&s, "ImplicitlyEnabledCapabilities"),
            (
                "True",
                "CapabilitiesImplicitlyEnabled",
                "The following capabilities could not be disabled: Console"
            )
        );
        let c = s.capabilities.unwrap();
        let known: Vec<_> = c.known_capabilities.iter().map(|c| c.as_str()).collect();
        assert_eq!(known, ["Build", "Console", "baremetal"]);
        assert_eq!(c.enabled_capabilities, [Capability::new("Console")]);
    }

    fn retrieved(failure: Option<NoUpdates>) -> AvailableUpdates {
        let target = |v: &str| Target {
            version: v.into(),
            image: format!("img@{v}"),
            ..Target::default()
        };
        let risk = |name: &str, rule: &str| ConditionalUpdateRisk {
            url: "https://bug".into(),
            name: name.into(),
            message: "Hurts.".into(),
            matching_rules: vec![ClusterCondition {
                type_: rule.into(),
                promql: (rule == "PromQL").then(|| PromQlClusterCondition {
                    promql: "group(up)".into(),
                }),
            }],
        };
        AvailableUpdates {
            key: Key::default(),
            attempted: std::time::Instant::now(),
            updates: vec![target("4.18.2"), target("4.18.1")],
            conditional: vec![
                crate::updates::ConditionalUpdate {
                    release: target("4.18.4"),
                    risks: vec![risk("Everyone", "Always")],
                },
                crate::updates::ConditionalUpdate {
                    release: target("4.18.3"),
                    risks: vec![risk("Query", "PromQL")],
                },
            ],
            failure,
            risks: [
                ("Everyone".to_string(), Applies::Match),
                (
                    "Query".to_string(),
                    Applies::EvaluationFailed("Query failed".into()),
                ),
            ]
            .into(),
            cache: Default::default(),
            accepted: Default::default(),
            alerts: Default::default(),
        }
    }

    #[test]
    fn retrieved_updates_reasons() {
        let caps = ClusterCapabilities::default();
        let failed = AvailableUpdates {
            updates: vec![],
            conditional: vec![],
            ..retrieved(Some(NoUpdates::NoUpstream))
        };
        let s = next_status(StatusInput {
            updates: Some(&failed),
            ..input(None, &caps, T0, Progress::default())
        });
        assert_eq!(
            msg(&s, "RetrievedUpdates"),
            (
                "False",
                "NoUpstream",
                "No updateService server has been set to retrieve updates."
            )
        );
        assert_eq!(s.available_updates, None);
        assert!(s.conditional_updates.is_empty());
    }

    #[test]
    fn retrieved_updates_and_conditional_updates() {
        let caps = ClusterCapabilities::default();
        let ok = retrieved(None);
        let s = next_status(StatusInput {
            updates: Some(&ok),
            ..input(None, &caps, T0, Progress::default())
        });
        assert_eq!(msg(&s, "RetrievedUpdates"), ("True", "", ""));
        let versions: Vec<_> = (s.available_updates.iter().flatten())
            .map(|r| r.version.as_deref().unwrap())
            .collect();
        assert_eq!(versions, ["4.18.2", "4.18.1"]);
        let recommended: Vec<_> = (s.conditional_updates.iter())
            .map(|c| {
                let r = &c.conditions[0];
                (
                    c.release.version.as_deref().unwrap(),
                    r.type_.as_str(),
                    r.status.as_str(),
                    r.reason.as_str(),
                    r.message.as_str(),
                )
            })
            .collect();
        assert_eq!(
            recommended,
            [
                (
                    "4.18.4",
                    "Recommended",
                    "False",
                    "Everyone",
                    "Hurts. https://bug"
                ),
                (
                    "4.18.3",
                    "Recommended",
                    "Unknown",
                    "EvaluationFailed",
                    "Query failed"
                ),
            ]
        );
        assert_eq!(s.conditional_updates[0].risks[0].name, "Everyone");

        // Accepting the risk that applies recommends the update, which joins availableUpdates.
        let mut accepting = retrieved(None);
        accepting.accepted.insert("Everyone".into());
        let accepted = next_status(StatusInput {
            updates: Some(&accepting),
            ..input(None, &caps, T0, Progress::default())
        });
        let r = &accepted.conditional_updates[0].conditions[0];
        assert_eq!(
            (r.status.as_str(), r.reason.as_str()),
            ("True", "AllExposedRisksAccepted")
        );
        let versions: Vec<_> = (accepted.available_updates.iter().flatten())
            .map(|r| r.version.as_deref().unwrap())
            .collect();
        assert_eq!(versions, ["4.18.4", "4.18.2", "4.18.1"]);

        // A later failure: False with upstream's message; the transition times of unchanged
        // Recommended conditions are kept.
        let later = retrieved(Some(NoUpdates::RemoteFailed("Get \"u\": down".into())));
        let again = next_status(StatusInput {
            updates: Some(&later),
            ..input(Some(&s), &caps, T1, Progress::default())
        });
        assert_eq!(
            msg(&again, "RetrievedUpdates"),
            (
                "False",
                "RemoteFailed",
                "Unable to retrieve available updates: Get \"u\": down"
            )
        );
        assert_eq!(
            again.conditional_updates[0].conditions[0].last_transition_time,
            t(T0)
        );
    }

    fn condition(type_: &str, status: &str) -> ClusterOperatorStatusCondition {
        ClusterOperatorStatusCondition::new(type_, status, t(T0))
    }

    fn override_(unmanaged: bool) -> ComponentOverride {
        ComponentOverride {
            kind: "Deployment".into(),
            group: "apps".into(),
            namespace: "ns".into(),
            name: "d".into(),
            unmanaged,
        }
    }

    #[test]
    fn unmanaged_overrides_are_not_upgradeable() {
        let overrides = [override_(false), override_(true)];
        let s = next_status(StatusInput {
            overrides: &overrides,
            reconciling: true,
            ..input(None, &NO_CAPABILITIES, T0, Progress::default())
        });
        assert_eq!(
            msg(&s, "Upgradeable"),
            (
                "False",
                "ClusterVersionOverrides",
                "Disabling ownership via cluster version overrides prevents updates between minor or major versions. Please remove overrides before requesting a minor or major version update."
            )
        );
        assert_eq!(
            types(&s),
            [
                "Upgradeable",
                "ImplicitlyEnabledCapabilities",
                "ReleaseAccepted",
                "Available",
                "Failing",
                "Progressing",
                "RetrievedUpdates",
            ]
        );
    }

    #[test]
    fn no_risk_no_upgradeable_condition() {
        let mut prev = ClusterVersionStatus::default();
        for type_ in ["Upgradeable", "Invalid"]
            .into_iter()
            .chain(LEGACY_UPGRADEABLE_CONDITION_TYPES)
        {
            prev.conditions.push(condition(type_, "False"));
        }
        let overrides = [override_(false)];
        let s = next_status(StatusInput {
            overrides: &overrides,
            reconciling: true,
            ..input(Some(&prev), &NO_CAPABILITIES, T1, Progress::default())
        });
        assert!(
            !types(&s)
                .iter()
                .any(|t| t.starts_with("Upgradeable") || *t == "Invalid"),
            "{:?}",
            types(&s)
        );
    }

    #[test]
    fn several_risks_are_multiple_reasons() {
        let risk = |name: &str, message: &str| UpgradeRisk {
            name: name.into(),
            message: message.into(),
            url: String::new(),
            joins_updates: true,
        };
        let risks = |risks: Vec<UpgradeRisk>| Upgradeability {
            risks,
            errors: vec![],
        };
        let mut conditions = vec![];
        set_upgradeable(
            &mut conditions,
            &t(T0),
            &risks(vec![risk("RiskA", "MessageA"), risk("RiskB", "MessageB")]),
        );
        assert_eq!(conditions[0].reason.as_deref(), Some("MultipleReasons"));
        assert_eq!(
            conditions[0].message.as_deref(),
            Some(
                "Cluster should not be upgraded between minor or major versions for multiple reasons:\n* MessageA\n* MessageB"
            )
        );
        set_upgradeable(
            &mut conditions,
            &t(T1),
            &risks(vec![risk("not a reason", "M")]),
        );
        assert_eq!(
            conditions[0].reason.as_deref(),
            Some("RiskNameNotCompatibleWithReasonProperty")
        );
        assert_eq!(conditions[0].message.as_deref(), Some("M"));
        assert_eq!(conditions[0].last_transition_time, t(T0), "still False");
        let failed = Upgradeability {
            risks: vec![],
            errors: vec!["first".into(), "second".into()],
        };
        set_upgradeable(&mut conditions, &t(T1), &failed);
        assert_eq!(
            (
                conditions[0].status.as_str(),
                conditions[0].reason.as_deref(),
                conditions[0].message.as_deref()
            ),
            ("Unknown", Some("EvaluationFailed"), Some("first\nsecond"))
        );
        assert_eq!(risk_reason("A"), "A");
        assert_eq!(risk_reason("Risk_1,b:C"), "Risk_1,b:C");
        assert_eq!(
            risk_reason("Risk:"),
            "RiskNameNotCompatibleWithReasonProperty"
        );
        assert_eq!(
            risk_reason("1Risk"),
            "RiskNameNotCompatibleWithReasonProperty"
        );
        assert_eq!(risk_reason(""), "RiskNameNotCompatibleWithReasonProperty");
    }

    fn requested() -> RequestedUpdate {
        RequestedUpdate {
            version: "4.19.0".into(),
            image: "img@sha256:2".into(),
        }
    }

    fn accepted(load: PayloadLoad) -> ClusterVersionStatus {
        next_status(StatusInput {
            payload_load: load,
            ..input(None, &NO_CAPABILITIES, T0, Progress::default())
        })
    }

    #[test]
    fn release_accepted_follows_the_payload_load() {
        let s = accepted(PayloadLoad::Reverted(RequestedUpdate {
            version: String::new(),
            image: "img@sha256:1".into(),
        }));
        assert_eq!(
            msg(&s, "ReleaseAccepted"),
            (
                "True",
                "PayloadLoaded",
                "Payload loaded version=\"\" image=\"img@sha256:1\""
            )
        );
        let s = accepted(PayloadLoad::Retrieving(requested()));
        assert_eq!(
            msg(&s, "ReleaseAccepted"),
            (
                "Unknown",
                "RetrievePayload",
                "Retrieving and verifying payload version=\"4.19.0\" image=\"img@sha256:2\""
            )
        );
        // The payload being applied stays the previous one.
        assert_eq!(s.desired.unwrap().image.as_deref(), Some("img@sha256:1"));
    }

    #[test]
    fn release_accepted_failures_name_the_step() {
        let failed = |step, error: &str| {
            accepted(PayloadLoad::Failed {
                update: requested(),
                step,
                error: error.into(),
            })
        };
        let cases = [
            (
                PayloadLoadStep::RetrievePayload,
                "pull: unauthorized",
                "Retrieving payload failed version=\"4.19.0\" image=\"img@sha256:2\" failure=pull: unauthorized",
            ),
            (
                PayloadLoadStep::LoadPayload,
                "bad release-metadata",
                "Loading payload failed version=\"4.19.0\" image=\"img@sha256:2\" failure=bad release-metadata",
            ),
            (
                PayloadLoadStep::VerifyPayloadVersion,
                "release image version 4.19.1 does not match the expected upstream version 4.19.0",
                "Verifying payload failed version=\"4.19.0\" image=\"img@sha256:2\" failure=release image version 4.19.1 does not match the expected upstream version 4.19.0",
            ),
            (
                PayloadLoadStep::PreconditionChecks,
                "Precondition \"EtcdRecentBackup\" failed because of \"X\": y",
                "Preconditions failed for payload loaded version=\"4.19.0\" image=\"img@sha256:2\": Precondition \"EtcdRecentBackup\" failed because of \"X\": y",
            ),
        ];
        for (step, error, want) in cases {
            let s = failed(step, error);
            assert_eq!(msg(&s, "ReleaseAccepted"), ("False", step.as_str(), want));
            assert_eq!(
                s.desired.as_ref().unwrap().version.as_deref(),
                Some("4.18.0")
            );
        }
    }

    #[test]
    fn release_accepted_transitions_only_on_status_change() {
        let retrieving = accepted(PayloadLoad::Retrieving(requested()));
        let failed = next_status(StatusInput {
            payload_load: PayloadLoad::Failed {
                update: requested(),
                step: PayloadLoadStep::RetrievePayload,
                error: "e".into(),
            },
            ..input(Some(&retrieving), &NO_CAPABILITIES, T1, Progress::default())
        });
        assert_eq!(cond(&failed, "ReleaseAccepted").last_transition_time, t(T1));
        let again = next_status(StatusInput {
            payload_load: PayloadLoad::Failed {
                update: requested(),
                step: PayloadLoadStep::LoadPayload,
                error: "e".into(),
            },
            ..input(Some(&failed), &NO_CAPABILITIES, T2, Progress::default())
        });
        assert_eq!(msg(&again, "ReleaseAccepted").1, "LoadPayload");
        assert_eq!(cond(&again, "ReleaseAccepted").last_transition_time, t(T1));
    }

    fn entry(state: &str, version: &str, image: &str, completed: Option<&str>) -> UpdateHistory {
        UpdateHistory {
            state: state.into(),
            started_time: t(T0),
            completion_time: completed.map(t),
            version: Some(version.into()),
            image: image.into(),
            verified: false,
            accepted_risks: None,
        }
    }

    #[test]
    fn history_update_supersedes_the_top_entry() {
        let old = vec![entry("Completed", "4.17.0", "img@sha256:0", Some(T0))];
        let h = merge_history(
            old.clone(),
            &desired("4.18.0", "img@sha256:1"),
            false,
            &t(T1),
        );
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].state, "Partial");
        assert_eq!(h[0].version.as_deref(), Some("4.18.0"));
        assert_eq!(h[0].started_time, t(T1));
        assert_eq!(h[1], old[0]);

        let partial = vec![entry("Partial", "4.17.0", "img@sha256:0", None)];
        let h = merge_history(partial, &desired("4.18.0", "img@sha256:1"), true, &t(T1));
        assert_eq!(h[1].completion_time, Some(t(T1)), "superseded gets a time");
        assert_eq!(h[0].state, "Completed");
        assert_eq!(h[0].completion_time, Some(t(T1)));
    }

    #[test]
    fn history_merges_equal_versions() {
        // Same image, missing version: filled in.
        let mut e = entry("Partial", "", "img@sha256:1", None);
        e.version = None;
        let h = merge_history(vec![e], &desired("4.18.0", "img@sha256:1"), false, &t(T1));
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].version.as_deref(), Some("4.18.0"));
        // Same version, empty image: filled in.
        let h = merge_history(
            vec![entry("Partial", "4.18.0", "", None)],
            &desired("4.18.0", "img@sha256:1"),
            false,
            &t(T1),
        );
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].image, "img@sha256:1");
        // No desired image: untouched.
        let h = merge_history(vec![], &Release::default(), true, &t(T1));
        assert!(h.is_empty());
    }

    #[test]
    fn history_is_capped() {
        let many: Vec<_> = (0..MAX_HISTORY)
            .map(|i| entry("Completed", &format!("4.0.{i}"), "x", Some(T0)))
            .collect();
        let h = merge_history(many, &desired("4.18.0", "img@sha256:1"), false, &t(T1));
        assert_eq!(h.len(), MAX_HISTORY);
        assert_eq!(h[0].version.as_deref(), Some("4.18.0"));
        // The oldest entry, the install, is kept; its newer neighbour goes.
        assert_eq!(h[MAX_HISTORY - 1].version.as_deref(), Some("4.0.99"));
        assert_eq!(h[MAX_HISTORY - 2].version.as_deref(), Some("4.0.97"));

        // The entry at the limit is kept even when partial (upstream's weighted prune); the
        // oldest completed one of the same minor after it is the least informative.
        let mut partial: Vec<_> = (0..MAX_HISTORY)
            .map(|i| entry("Completed", &format!("4.0.{i}"), "x", Some(T0)))
            .collect();
        partial[MAX_HISTORY - 1].state = "Partial".into();
        let h = merge_history(partial, &desired("4.18.0", "img@sha256:1"), false, &t(T1));
        assert_eq!(h.len(), MAX_HISTORY);
        assert_eq!(h[MAX_HISTORY - 1].version.as_deref(), Some("4.0.99"));
        assert_eq!(h[MAX_HISTORY - 2].version.as_deref(), Some("4.0.98"));
        assert_eq!(h[MAX_HISTORY - 3].version.as_deref(), Some("4.0.96"));
    }

    #[test]
    fn a_release_without_architecture_is_accepted_for_the_running_one() {
        let caps = ClusterCapabilities::default();
        let multi = next_status(StatusInput {
            desired: Release {
                architecture: Some("Multi".into()),
                ..desired("4.18.0", "img@sha256:1")
            },
            ..input(None, &caps, T0, Progress::default())
        });
        assert!(
            msg(&multi, "ReleaseAccepted")
                .2
                .ends_with(r#"architecture="Multi""#),
            "{:?}",
            msg(&multi, "ReleaseAccepted")
        );
        let none = next_status(StatusInput {
            desired: Release {
                architecture: None,
                ..desired("4.18.0", "img@sha256:1")
            },
            ..input(None, &caps, T0, Progress::default())
        });
        let want = format!(r#"architecture="{}""#, running_architecture());
        assert!(msg(&none, "ReleaseAccepted").2.ends_with(&want));
        assert_ne!(running_architecture(), "x86_64", "Go's names, not Rust's");
        // The status keeps the release as its metadata has it.
        assert_eq!(none.desired.as_ref().unwrap().architecture, None);
    }
}
