//! The ClusterVersion status the operator writes after a pass (spec §5.2, §5.3, §4.4). Pure:
//! the previous status, what the pass did and `now` in; the next status out.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::capability::{
    ClusterCapabilities, IMPLICITLY_ENABLED_CONDITION_TYPE,
    LEGACY_IMPLICITLY_ENABLED_CONDITION_TYPE, implicitly_enabled_condition,
};
use crate::cluster::{
    ClusterOperatorStatusCondition, ClusterVersionCapabilitiesStatus, ClusterVersionStatus,
    Release, UpdateHistory,
};

/// `MaxHistory`.
pub const MAX_HISTORY: usize = 100;

/// Why a pass failed: the summarized task error (spec §7.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `UpdatePayload…`, `ClusterOperatorNotAvailable`, `MultipleErrors`, …
    pub reason: String,
    /// The summarized message (the `Failing` condition's message).
    pub message: String,
    /// The one resource or operator the error is about, for `SummaryForReason`.
    pub name: Option<String>,
}

/// How far the pass got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Every task succeeded.
    pub completed: bool,
    pub done: usize,
    pub total: usize,
    pub failure: Option<Failure>,
}

/// Everything the next status depends on.
#[derive(Debug, Clone)]
pub struct StatusInput<'a> {
    pub now: Time,
    pub previous: Option<&'a ClusterVersionStatus>,
    /// `metadata.generation` of the ClusterVersion whose spec was synced.
    pub generation: Option<i64>,
    /// The release reconciled towards (`status.desired`).
    pub desired: Release,
    pub version_hash: String,
    pub capabilities: &'a ClusterCapabilities,
    /// State Reconciling (history top Completed with the desired image) before the pass.
    pub reconciling: bool,
    pub progress: Progress,
    /// `spec.channel`.
    pub channel: Option<String>,
    /// `spec.upstream`.
    pub upstream: Option<String>,
}

/// The status to write.
pub fn next_status(input: StatusInput<'_>) -> ClusterVersionStatus {
    let previous = input.previous.cloned().unwrap_or_default();
    let now = input.now.clone();
    let completed = input.progress.completed;
    let history = merge_history(previous.history.clone(), &input.desired, completed, &now);
    // After a pass that applied everything the worker is Reconciling.
    let reconciling = input.reconciling || completed;
    let version = display_version(&input.desired);

    let mut conditions = previous.conditions.clone();
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

    match &input.progress.failure {
        None => set(&mut conditions, &now, "Failing", "False", None, None),
        Some(f) => set(
            &mut conditions,
            &now,
            "Failing",
            "True",
            Some(&f.reason),
            Some(f.message.clone()),
        ),
    }

    let (status, reason, message) = progressing(&version, reconciling, &input.progress);
    set(
        &mut conditions,
        &now,
        "Progressing",
        status,
        reason.as_deref(),
        Some(message),
    );

    let (reason, message) = retrieved_updates(input.channel.as_deref(), input.upstream.as_deref());
    if let Some(reason) = reason {
        set(
            &mut conditions,
            &now,
            "RetrievedUpdates",
            "False",
            Some(reason),
            Some(message.to_string()),
        );
    } else if !conditions.iter().any(|c| c.type_ == "RetrievedUpdates") {
        set(
            &mut conditions,
            &now,
            "RetrievedUpdates",
            "False",
            None,
            None,
        );
    }

    set(
        &mut conditions,
        &now,
        "ReleaseAccepted",
        "True",
        Some("PayloadLoaded"),
        Some(format!(
            "Payload loaded version=\"{}\" image=\"{}\" architecture=\"{}\"",
            input.desired.version.as_deref().unwrap_or(""),
            input.desired.image.as_deref().unwrap_or(""),
            input.desired.architecture.as_deref().unwrap_or(""),
        )),
    );

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
        available_updates: previous.available_updates,
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

/// The `Progressing` condition (spec §5.3).
fn progressing(
    version: &str,
    reconciling: bool,
    progress: &Progress,
) -> (&'static str, Option<String>, String) {
    match &progress.failure {
        None if reconciling => ("False", None, format!("Cluster version is {version}")),
        None if progress.total > 0 && progress.done > 0 => {
            let pct = progress.done * 100 / progress.total;
            (
                "True",
                None,
                format!(
                    "Working towards {version}: {} of {} done ({pct}% complete)",
                    progress.done, progress.total
                ),
            )
        }
        None => ("True", None, format!("Working towards {version}")),
        Some(f) if reconciling => (
            "False",
            Some(f.reason.clone()),
            format!("Error while reconciling {version}: {}", f.message),
        ),
        Some(f) => (
            "True",
            Some(f.reason.clone()),
            format!(
                "Unable to apply {version}: {}",
                summary_for_reason(&f.reason, f.name.as_deref())
            ),
        ),
    }
}

/// `SummaryForReason` (spec §5.3).
pub fn summary_for_reason(reason: &str, name: Option<&str>) -> String {
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
            "a workload has not yet successfully rolled out",
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

/// The `RetrievedUpdates` reason and message when updates cannot be retrieved; `None` when
/// they could be (this operator does not query an update service yet).
fn retrieved_updates(
    channel: Option<&str>,
    upstream: Option<&str>,
) -> (Option<&'static str>, &'static str) {
    if channel.is_none_or(str::is_empty) {
        (
            Some("NoChannel"),
            "The update channel has not been configured.",
        )
    } else if upstream.is_none_or(str::is_empty) {
        (
            Some("NoUpstream"),
            "No updateService server has been set to retrieve updates.",
        )
    } else {
        (None, "")
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
            type_: type_.to_string(),
            status: status.to_string(),
            last_transition_time: now.clone(),
            reason,
            message,
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

/// `mergeOperatorHistory` (spec §5.2): newest first, at most [`MAX_HISTORY`] entries.
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
    history.truncate(MAX_HISTORY);
    history
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::capability::Capability;

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
            channel: None,
            upstream: None,
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

    const T0: &str = "2025-01-01T00:00:00Z";
    const T1: &str = "2025-01-01T00:05:00Z";
    const T2: &str = "2025-01-01T00:10:00Z";

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
        let types: Vec<_> = first.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                "ImplicitlyEnabledCapabilities",
                "Available",
                "Failing",
                "Progressing",
                "RetrievedUpdates",
                "ReleaseAccepted"
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
        assert_eq!(
            msg(&first, "RetrievedUpdates"),
            (
                "False",
                "NoChannel",
                "The update channel has not been configured."
            )
        );
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
    fn failures() {
        let caps = ClusterCapabilities::default();
        let failure = Failure {
            reason: "ClusterOperatorNotAvailable".into(),
            message: "Cluster operator etcd is not available".into(),
            name: Some("etcd".into()),
        };
        let progress = Progress {
            failure: Some(failure),
            done: 1,
            total: 2,
            completed: false,
        };
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
        assert_eq!(
            msg(&r, "Progressing"),
            (
                "False",
                "ClusterOperatorNotAvailable",
                "Error while reconciling 4.18.0: Cluster operator etcd is not available"
            )
        );
        assert_eq!(cond(&r, "Failing").last_transition_time, t(T0));
        assert_eq!(cond(&r, "Progressing").last_transition_time, t(T1));
        // Available was never True: it stays False.
        assert_eq!(msg(&r, "Available"), ("False", "", ""));
    }

    #[test]
    fn summaries() {
        assert_eq!(
            summary_for_reason("UpdatePayloadResourceNotFound", None),
            "some resources could not be updated"
        );
        assert_eq!(
            summary_for_reason("UpdatePayloadFailed", None),
            "the update could not be applied"
        );
        assert_eq!(
            summary_for_reason("ClusterOperatorDegraded", None),
            "a cluster operator is degraded"
        );
        assert_eq!(
            summary_for_reason("NoDesiredImage", None),
            "an unknown error has occurred: NoDesiredImage"
        );
        assert_eq!(
            summary_for_reason("Odd", Some("x")),
            "x has an unknown error: Odd"
        );
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
        prev.conditions.push(ClusterOperatorStatusCondition {
            type_: "ImplicitlyEnabled".into(),
            status: "True".into(),
            last_transition_time: t(T0),
            reason: None,
            message: None,
        });
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
        let _ = BTreeSet::<Capability>::new();
    }

    #[test]
    fn retrieved_updates_reasons() {
        let caps = ClusterCapabilities::default();
        let s = next_status(StatusInput {
            channel: Some("stable-4.18".into()),
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
    }
}
