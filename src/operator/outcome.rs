//! What a sync pass produced, as plain data: the outcome of applying (per-task errors, the
//! report, the summarized failure and progress) and of loading a requested release. The pure
//! status, summary, health and precondition code depend on these types only, never on the
//! I/O code that produces them.

use std::fmt;

use serde::Serialize;

/// How an error weighs on the pass (upstream `UpdateEffect`, spec §5.4 and §7.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub enum Effect {
    /// Reported, never failing: the node goes on (a degraded operator while installing).
    Report,
    /// Only waiting (an operator still updating versions): not a failure unless slow.
    None,
    /// A failure only once the operator has been waited on for 40 minutes (degraded).
    FailAfterInterval,
    /// A failure.
    #[default]
    Fail,
}

/// One failed task, as upstream's `UpdateError`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskError {
    /// `manifest.task_string(i + 1, total)`, e.g. `configmap "ns/name" (5 of 10)`.
    pub task: String,
    /// `UpdatePayload…`.
    pub reason: String,
    /// `Could not update <task>[: <cause>]`.
    pub message: String,
    /// The underlying error (upstream `Nested`).
    pub error: String,
    /// How the error weighs on the pass.
    pub effect: Effect,
    /// What the error is about (upstream `Name`): the ClusterOperator's name, or a workload's
    /// `<namespace>/<name>`; used by the condensing and `SummaryForReason` of spec §7.6.
    pub name: Option<String>,
}

/// The outcome of one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    /// Applied successfully (create-only objects that exist, and deletions, count).
    pub done: usize,
    /// Manifests given (load-filtered).
    pub total: usize,
    /// Excluded at apply time (capabilities, overrides, feature gates); not done.
    pub skipped: usize,
    /// ClusterOperator manifests: waited on, not applied; not done.
    pub waiting: Vec<String>,
    /// Not applied because another operator owns what they would replace (a stand-in CRD, a
    /// webhook on its objects; [`crate::ownership`]): the task and why. Counted as done.
    pub stood_down: Vec<String>,
    /// In task order.
    pub errors: Vec<TaskError>,
    /// Never attempted: behind a failed task of their node, or in a node a failure blocked.
    pub incomplete: usize,
    /// ClusterOperators that were checked and found as the payload expects (their update
    /// start times are cleared, spec §7.6).
    pub operators_done: Vec<String>,
}

impl ApplyReport {
    pub fn is_success(&self) -> bool {
        self.errors.iter().all(|e| e.effect == Effect::Report) && self.incomplete == 0
    }
}

/// Why a pass failed: the summarized task error (upstream `UpdateError`, spec §7.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `UpdatePayload…`, `ClusterOperatorNotAvailable`, `ClusterOperatorsDegraded`,
    /// `MultipleErrors`, …
    pub reason: String,
    /// The `Failing` condition's message.
    pub message: String,
    /// What the error is about (upstream `Name`), for `SummaryForReason` and the `waiting on`
    /// messages: an operator, a workload, or condensed operators joined with `, `.
    pub name: Option<String>,
    /// The condensed operators, sorted (upstream `Names`); empty otherwise.
    pub names: Vec<String>,
    /// How the failure weighs on the status.
    pub effect: Effect,
    /// What a condensed or `MultipleErrors` failure summarizes (upstream `Nested`); the
    /// `Failing` condition leaves out the `None`-effect members of `MultipleErrors`.
    pub errors: Vec<Failure>,
}

impl Failure {
    /// A failing error about nothing in particular.
    pub fn new(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            reason: reason.into(),
            message: message.into(),
            name: None,
            names: vec![],
            effect: Effect::Fail,
            errors: vec![],
        }
    }

    /// `names`, or the one `name` (upstream's `names = []string{uErr.Name}` fallback).
    pub fn operator_names(&self) -> Vec<&str> {
        if self.names.is_empty() {
            vec![self.name.as_deref().unwrap_or("")]
        } else {
            self.names.iter().map(String::as_str).collect()
        }
    }
}

/// How far the pass got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Every task succeeded (errors with effect `Report` aside).
    pub completed: bool,
    pub done: usize,
    pub total: usize,
    pub failure: Option<Failure>,
}

/// The release `spec.desiredUpdate` asks for, as the `ReleaseAccepted` messages name it
/// (upstream `LoadPayloadStatus.Update`); `version` is empty when only an image was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestedUpdate {
    pub version: String,
    pub image: String,
}

/// The payload-load step that failed: the `ReleaseAccepted=False` reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadLoadStep {
    RetrievePayload,
    LoadPayload,
    /// The payload's version is not the requested `version`.
    VerifyPayloadVersion,
    /// A blocking precondition (upstream `precondition.Summarize`) failed.
    PreconditionChecks,
}

impl PayloadLoadStep {
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadLoadStep::RetrievePayload => "RetrievePayload",
            PayloadLoadStep::LoadPayload => "LoadPayload",
            PayloadLoadStep::VerifyPayloadVersion => "VerifyPayloadVersion",
            PayloadLoadStep::PreconditionChecks => "PreconditionChecks",
        }
    }
}

/// Where loading the requested release stands (upstream `LoadPayloadStatus`): the
/// `ReleaseAccepted` condition. Except for `Loaded`, the requested release is not the payload
/// being applied: `StatusInput::desired` stays the payload applied before, as upstream keeps
/// applying it while a new one cannot be loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PayloadLoad {
    /// `StatusInput::desired` is the requested release, loaded: `True PayloadLoaded`, with
    /// its architecture.
    #[default]
    Loaded,
    /// The request went back to the payload already loaded (after a request that could not be
    /// loaded): upstream re-points the condition at it, without the architecture.
    Reverted(RequestedUpdate),
    /// Being retrieved and verified: `Unknown RetrievePayload`.
    Retrieving(RequestedUpdate),
    /// Failed at `step`: `False <step>`. `error` is the `failure=` text; for
    /// `VerifyPayloadVersion` upstream's `release image version <a> does not match the
    /// expected upstream version <b>`.
    Failed {
        update: RequestedUpdate,
        step: PayloadLoadStep,
        error: String,
    },
}

/// Why a requested release is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    pub step: PayloadLoadStep,
    /// The `failure=` part of the upstream message.
    pub error: String,
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step.as_str(), self.error)
    }
}
