//! Error summarization (spec §7.6), pure: upstream `summarizeTaskGraphErrors` with
//! `condenseClusterOperators` and `newMultipleError` (`pkg/cvo/sync_worker.go`) over one pass's
//! task errors; the pass as [`Progress`]; and the ClusterOperator update start times (upstream
//! `COUpdateStartTimes`, `pkg/payload/task.go`) the status needs to tell a slow operator.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::outcome::{ApplyReport, Effect, Failure, Progress, TaskError};
use crate::manifest::Manifest;

/// The reason of [`multiple_errors`].
pub const MULTIPLE_ERRORS: &str = "MultipleErrors";

/// The ClusterOperator reasons that condense, with upstream's `PluralReason` and
/// `PluralMessageFormat` (`checkOperatorHealth`, `pkg/cvo/internal/operatorstatus.go`).
const PLURALS: [(&str, &str, &str); 4] = [
    (
        "ClusterOperatorNoVersions",
        "ClusterOperatorsNoVersions",
        "Cluster operators %s do not declare expected versions",
    ),
    (
        "ClusterOperatorNotAvailable",
        "ClusterOperatorsNotAvailable",
        "Cluster operators %s are not available",
    ),
    (
        "ClusterOperatorDegraded",
        "ClusterOperatorsDegraded",
        "Cluster operators %s are degraded",
    ),
    (
        "ClusterOperatorUpdating",
        "ClusterOperatorsUpdating",
        "Cluster operators %s are updating versions",
    ),
];

fn plural(reason: &str) -> Option<(&'static str, &'static str)> {
    PLURALS
        .iter()
        .find(|(one, ..)| *one == reason)
        .map(|&(_, many, format)| (many, format))
}

impl From<&TaskError> for Failure {
    fn from(e: &TaskError) -> Self {
        Failure {
            reason: e.reason.clone(),
            message: e.message.clone(),
            name: e.name.clone().filter(|n| !n.is_empty()),
            names: vec![],
            effect: e.effect,
            errors: vec![],
        }
    }
}

/// The pass as [`Progress`] (upstream `SyncWorker.apply` and its `consistentReporter`).
///
/// Errors with effect `Report` do not fail their node: upstream collects them aside and, only
/// when nothing else failed, reports them after the pass completed. Their tasks count as done
/// (upstream increments `Done` after recording them).
pub fn progress(report: &ApplyReport, manifests: &[&Manifest]) -> Progress {
    let (reported, blocking): (Vec<&TaskError>, Vec<&TaskError>) = report
        .errors
        .iter()
        .partition(|e| e.effect == Effect::Report);
    let failure = if blocking.is_empty() {
        summarize(&reported, manifests)
    } else {
        summarize(&blocking, manifests)
    };
    Progress {
        completed: report.is_success() && report.waiting.is_empty(),
        done: report.done + reported.len(),
        total: report.total,
        failure,
    }
}

/// `summarizeTaskGraphErrors`: the errors of a pass (in task order) as one failure; `None`
/// without errors. Upstream also drops context errors (cancellation, timeout) first; a pass
/// here reports none.
pub fn summarize(errors: &[&TaskError], manifests: &[&Manifest]) -> Option<Failure> {
    let errors = errors.iter().map(|e| {
        (
            Failure::from(*e),
            is_cluster_operator_task(&e.task, manifests),
        )
    });
    let mut condensed = condense_cluster_operators(errors);
    if condensed.len() == 1 {
        return condensed.pop();
    }
    multiple_errors(condensed)
}

/// Whether the task applies a `config.openshift.io` ClusterOperator manifest (upstream checks
/// `Task.Manifest.GVK`). `task` is `<kind> "<name>" (<i> of <n>)`.
fn is_cluster_operator_task(task: &str, manifests: &[&Manifest]) -> bool {
    task_index(task)
        .and_then(|i| manifests.get(i))
        .is_some_and(|m| m.gvk.is("config.openshift.io", "ClusterOperator"))
}

/// The 0-based index of `… (<i> of <n>)`.
fn task_index(task: &str) -> Option<usize> {
    let inner = task.strip_suffix(')')?.rsplit_once('(')?.1;
    let i: usize = inner.split_once(" of ")?.0.parse().ok()?;
    i.checked_sub(1)
}

/// `condenseClusterOperators`: ClusterOperator errors sharing a reason become one; the other
/// errors keep their order and come first, then one error per reason, reasons sorted.
///
/// Deliberate difference: only the reasons upstream gives a plural form (`checkOperatorHealth`'s)
/// condense. Upstream would also merge, say, two `UpdatePayloadResourceNotFound` errors of
/// ClusterOperator tasks, into an error with an empty reason and the message
/// `%!(EXTRA string=…)` (an empty format); those pass through unchanged here.
fn condense_cluster_operators(errors: impl IntoIterator<Item = (Failure, bool)>) -> Vec<Failure> {
    let mut condensed = vec![];
    // A BTreeMap orders the reasons bytewise, as Go's sort.Strings.
    let mut by_reason: BTreeMap<String, Vec<Failure>> = BTreeMap::new();
    for (failure, cluster_operator) in errors {
        if cluster_operator && plural(&failure.reason).is_some() {
            by_reason
                .entry(failure.reason.clone())
                .or_default()
                .push(failure);
        } else {
            condensed.push(failure);
        }
    }
    condensed.extend(by_reason.into_values().map(condense));
    condensed
}

/// One reason's ClusterOperator errors as one: names sorted and joined with `, `, the most
/// severe effect (`Report` < `None` < `FailAfterInterval` < `Fail`, as upstream's switch).
fn condense(mut group: Vec<Failure>) -> Failure {
    if group.len() == 1 {
        return group.remove(0);
    }
    let (reason, format) = plural(&group[0].reason).expect("only plural reasons are grouped");
    let mut names: Vec<String> = group.iter().filter_map(|f| f.name.clone()).collect();
    names.sort();
    let name = names.join(", ");
    Failure {
        reason: reason.to_string(),
        message: format.replacen("%s", &name, 1),
        name: (!name.is_empty()).then_some(name),
        names,
        effect: group
            .iter()
            .map(|f| f.effect)
            .max()
            .unwrap_or(Effect::Report),
        errors: group,
    }
}

/// `newMultipleError`: `None` for no error, the error itself for one, else `MultipleErrors`
/// with the sorted unique messages. Upstream leaves its effect unset, which every consumer
/// treats as `Fail`.
pub fn multiple_errors(mut errors: Vec<Failure>) -> Option<Failure> {
    if errors.len() <= 1 {
        return errors.pop();
    }
    let mut messages: Vec<&str> = errors.iter().map(|f| f.message.as_str()).collect();
    messages.sort_unstable();
    messages.dedup();
    let message = format!(
        "Multiple errors are preventing progress:\n* {}",
        messages.join("\n* ")
    );
    Some(Failure {
        reason: MULTIPLE_ERRORS.to_string(),
        message,
        name: None,
        names: vec![],
        effect: Effect::Fail,
        errors,
    })
}

/// When the CVO started waiting on each ClusterOperator (upstream `COUpdateStartTimes`): kept
/// across passes of one payload, so the status can tell an operator that is slow (30 minutes,
/// 90 for `machine-config`) or degraded for too long (40 minutes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorUpdateStartTimes {
    started: BTreeMap<String, Timestamp>,
}

impl OperatorUpdateStartTimes {
    /// No start time.
    pub const fn new() -> Self {
        OperatorUpdateStartTimes {
            started: BTreeMap::new(),
        }
    }

    /// Upstream `InitCOUpdateStartTimes`, on the first attempt at a payload: forget them all.
    pub fn clear(&mut self) {
        self.started.clear();
    }

    /// Upstream `COUpdateStartTimesAt`: `at` unless `name` already has a time.
    pub fn ensure(&mut self, name: &str, at: Timestamp) {
        self.started.entry(name.to_string()).or_insert(at);
    }

    /// Upstream `COUpdateStartTimesRemove`.
    pub fn remove(&mut self, name: &str) {
        self.started.remove(name);
    }

    /// Upstream `COUpdateStartTimesGet`; `None` where upstream returns the zero time.
    pub fn get(&self, name: &str) -> Option<Timestamp> {
        self.started.get(name).copied()
    }

    /// After a pass: an operator waited on (a ClusterOperator task that failed) keeps the time
    /// it was first waited on, `now` if new; an operator found as expected is forgotten, so
    /// its next update is timed from its own start (upstream's builder ensures the time
    /// before each check and removes it on success).
    pub fn observe(&mut self, report: &ApplyReport, now: &Time) {
        for e in &report.errors {
            if let Some(name) = e.name.as_deref().filter(|_| names_operator(&e.task)) {
                self.ensure(name, now.0);
            }
        }
        for name in &report.operators_done {
            self.remove(name);
        }
    }
}

/// Whether a task string (`Manifest::task_string`: lower-case kind, quoted name) is a
/// ClusterOperator's.
fn names_operator(task: &str) -> bool {
    task.starts_with("clusteroperator \"")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::manifest::{ManifestDir, parse_file};

    fn manifest(kind: &str, api_version: &str, name: &str) -> Manifest {
        let text = format!("apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n");
        let (mut manifests, errors) = parse_file(
            "0000_10_a.yaml",
            ManifestDir::ReleaseManifests,
            Arc::new(text),
        );
        assert!(errors.is_empty(), "{errors:?}");
        manifests.remove(0)
    }

    /// Manifests 1..=3 are ClusterOperators a, b, c; 4 a ConfigMap.
    fn manifests() -> Vec<Manifest> {
        let co = |n| manifest("ClusterOperator", "config.openshift.io/v1", n);
        vec![co("a"), co("b"), co("c"), manifest("ConfigMap", "v1", "cm")]
    }

    fn co_error(i: usize, reason: &str, effect: Effect) -> TaskError {
        let name = ["a", "b", "c"][i - 1];
        let what = match reason {
            "ClusterOperatorNotAvailable" => "is not available",
            "ClusterOperatorDegraded" => "is degraded",
            "ClusterOperatorUpdating" => "is updating versions",
            _ => "does not declare expected versions",
        };
        TaskError {
            task: format!("clusteroperator \"{name}\" ({i} of 4)"),
            reason: reason.into(),
            message: format!("Cluster operator {name} {what}"),
            error: String::new(),
            effect,
            name: Some(name.into()),
        }
    }

    fn cm_error() -> TaskError {
        TaskError {
            task: "configmap \"cm\" (4 of 4)".into(),
            reason: "UpdatePayloadResourceConflict".into(),
            message:
                "Could not update configmap \"cm\" (4 of 4): someone else is updating this resource"
                    .into(),
            error: String::new(),
            effect: Effect::Fail,
            name: None,
        }
    }

    fn summarize_all(errors: &[TaskError]) -> Option<Failure> {
        let owned = manifests();
        let manifests: Vec<&Manifest> = owned.iter().collect();
        let errors: Vec<&TaskError> = errors.iter().collect();
        summarize(&errors, &manifests)
    }

    #[test]
    fn no_error_no_failure() {
        assert_eq!(summarize_all(&[]), None);
    }

    #[test]
    fn one_error_is_itself() {
        let e = co_error(1, "ClusterOperatorNotAvailable", Effect::Fail);
        assert_eq!(
            summarize_all(std::slice::from_ref(&e)),
            Some(Failure::from(&e))
        );
    }

    #[test]
    fn two_operators_not_available_condense() {
        let f = summarize_all(&[
            co_error(2, "ClusterOperatorNotAvailable", Effect::Fail),
            co_error(1, "ClusterOperatorNotAvailable", Effect::Fail),
        ])
        .unwrap();
        assert_eq!(f.reason, "ClusterOperatorsNotAvailable");
        assert_eq!(f.message, "Cluster operators a, b are not available");
        assert_eq!(f.name.as_deref(), Some("a, b"));
        assert_eq!(f.names, ["a", "b"]);
        assert_eq!(f.effect, Effect::Fail);
        assert_eq!(f.errors.len(), 2);
    }

    #[test]
    fn each_plural_form() {
        let cases = [
            (
                "ClusterOperatorDegraded",
                "ClusterOperatorsDegraded",
                "Cluster operators a, b are degraded",
            ),
            (
                "ClusterOperatorUpdating",
                "ClusterOperatorsUpdating",
                "Cluster operators a, b are updating versions",
            ),
            (
                "ClusterOperatorNoVersions",
                "ClusterOperatorsNoVersions",
                "Cluster operators a, b do not declare expected versions",
            ),
        ];
        for (one, many, message) in cases {
            let f = summarize_all(&[
                co_error(1, one, Effect::Fail),
                co_error(2, one, Effect::Fail),
            ])
            .unwrap();
            assert_eq!((f.reason.as_str(), f.message.as_str()), (many, message));
        }
    }

    #[test]
    fn condensed_effect_is_the_most_severe() {
        let degraded = |i, effect| co_error(i, "ClusterOperatorDegraded", effect);
        let effect = |errors: &[TaskError]| summarize_all(errors).unwrap().effect;
        // Upstream's Test_condenseClusterOperators cases.
        assert_eq!(
            effect(&[
                degraded(2, Effect::Fail),
                degraded(1, Effect::None),
                degraded(3, Effect::FailAfterInterval)
            ]),
            Effect::Fail
        );
        assert_eq!(
            effect(&[
                degraded(1, Effect::None),
                degraded(3, Effect::FailAfterInterval)
            ]),
            Effect::FailAfterInterval
        );
        assert_eq!(
            effect(&[degraded(1, Effect::Report), degraded(2, Effect::None)]),
            Effect::None
        );
        assert_eq!(
            effect(&[degraded(1, Effect::Report), degraded(2, Effect::Report)]),
            Effect::Report
        );
    }

    #[test]
    fn condensing_keeps_other_errors_first_then_sorted_reasons() {
        let owned = manifests();
        let manifests: Vec<&Manifest> = owned.iter().collect();
        let input = [
            co_error(2, "ClusterOperatorUpdating", Effect::None),
            co_error(1, "ClusterOperatorNotAvailable", Effect::Fail),
            cm_error(),
        ];
        let classified = input.iter().map(|e| {
            (
                Failure::from(e),
                is_cluster_operator_task(&e.task, &manifests),
            )
        });
        let reasons: Vec<String> = condense_cluster_operators(classified)
            .into_iter()
            .map(|f| f.reason)
            .collect();
        assert_eq!(
            reasons,
            [
                "UpdatePayloadResourceConflict",
                "ClusterOperatorNotAvailable",
                "ClusterOperatorUpdating"
            ]
        );
    }

    #[test]
    fn an_operator_reason_on_another_kind_does_not_condense() {
        let mut e = co_error(1, "ClusterOperatorDegraded", Effect::Fail);
        e.task = "configmap \"cm\" (4 of 4)".into();
        let f = summarize_all(&[e, co_error(2, "ClusterOperatorDegraded", Effect::Fail)]).unwrap();
        assert_eq!(f.reason, "MultipleErrors");
    }

    #[test]
    fn several_errors_are_multiple_errors() {
        let f = summarize_all(&[
            co_error(2, "ClusterOperatorUpdating", Effect::None),
            cm_error(),
            co_error(1, "ClusterOperatorNotAvailable", Effect::Fail),
        ])
        .unwrap();
        assert_eq!(f.reason, "MultipleErrors");
        assert_eq!(
            f.message,
            "Multiple errors are preventing progress:\n\
             * Cluster operator a is not available\n\
             * Cluster operator b is updating versions\n\
             * Could not update configmap \"cm\" (4 of 4): someone else is updating this resource"
        );
        assert_eq!(f.effect, Effect::Fail);
        assert_eq!(f.name, None);
        let effects: Vec<Effect> = f.errors.iter().map(|e| e.effect).collect();
        assert_eq!(effects, [Effect::Fail, Effect::Fail, Effect::None]);
    }

    #[test]
    fn multiple_errors_messages_are_unique() {
        let f = Failure::new("X", "same");
        let m = multiple_errors(vec![f.clone(), f.clone()]).unwrap();
        assert_eq!(
            m.message,
            "Multiple errors are preventing progress:\n* same"
        );
        assert_eq!(multiple_errors(vec![f.clone()]), Some(f));
        assert_eq!(multiple_errors(vec![]), None);
    }

    fn report(errors: Vec<TaskError>) -> ApplyReport {
        ApplyReport {
            done: 1,
            total: 4,
            errors,
            ..Default::default()
        }
    }

    fn progress_of(report: &ApplyReport) -> Progress {
        let owned = manifests();
        let manifests: Vec<&Manifest> = owned.iter().collect();
        progress(report, &manifests)
    }

    #[test]
    fn progress_of_a_clean_pass() {
        let p = progress_of(&ApplyReport {
            done: 4,
            total: 4,
            ..Default::default()
        });
        assert_eq!(
            p,
            Progress {
                completed: true,
                done: 4,
                total: 4,
                failure: None
            }
        );
        let p = progress_of(&ApplyReport {
            waiting: vec!["clusteroperator \"a\" (1 of 4)".into()],
            ..Default::default()
        });
        assert!(
            !p.completed,
            "operators only waited on keep the pass from completing"
        );
    }

    #[test]
    fn reported_errors_count_only_when_nothing_else_failed() {
        let degraded = co_error(1, "ClusterOperatorDegraded", Effect::Report);
        let p = progress_of(&report(vec![degraded.clone()]));
        assert!(p.completed);
        assert_eq!(p.done, 2, "a reported task is done");
        assert_eq!(p.failure, Some(Failure::from(&degraded)));

        let p = progress_of(&report(vec![degraded, cm_error()]));
        assert!(!p.completed);
        assert_eq!(p.failure, Some(Failure::from(&cm_error())));
    }

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    #[test]
    fn start_times_are_kept_until_the_operator_is_done() {
        let mut times = OperatorUpdateStartTimes::default();
        let waiting = ApplyReport {
            errors: vec![
                co_error(1, "ClusterOperatorUpdating", Effect::None),
                cm_error(),
            ],
            ..Default::default()
        };
        times.observe(&waiting, &t("2025-01-01T00:00:00Z"));
        times.observe(&waiting, &t("2025-01-01T00:10:00Z"));
        assert_eq!(times.get("a"), Some(t("2025-01-01T00:00:00Z").0));
        assert_eq!(times.get("cm"), None);
        times.observe(
            &ApplyReport {
                operators_done: vec!["a".into()],
                ..Default::default()
            },
            &t("2025-01-01T00:20:00Z"),
        );
        assert_eq!(times.get("a"), None);
        times.ensure("b", t("2025-01-01T00:00:00Z").0);
        times.clear();
        assert_eq!(times, OperatorUpdateStartTimes::default());
    }
}
