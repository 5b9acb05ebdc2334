//! How far the control plane's update has got, as `oc adm upgrade status` tells it
//! (`openshift/oc` `pkg/cli/admin/upgrade/status`: `controlplane.go`, `health.go`,
//! `status.go`): ClusterOperators updated out of the platform's, the elapsed time from the
//! current history entry, oc's estimate of the time remaining (from the previous completed
//! update's duration, or the progress curve once there is progress to extrapolate), the
//! operators still updating, and the update's health insights.
//!
//! Pure: the ClusterVersion, the ClusterOperators and `now` in; [`Progress`] (the `-o json`
//! document) and its text out. `cvo upgrade status` (`src/cli/upgrade.rs`) reads the objects.

use jiff::Timestamp;
use serde::Serialize;

use crate::cluster::{ClusterOperator, ClusterOperatorStatusCondition, ClusterVersion};

/// Why there is no status to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgressError {
    #[error(
        "no cluster operator information available - you must be connected to a cluster that cvo start runs (no ClusterOperators found)"
    )]
    NoOperators,
    #[error("no current Progressing info, see `oc describe clusterversion` for more details.")]
    NoProgressing,
}

/// `cvo upgrade status -o json`: the whole assessment. Durations are whole seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// `false` when the ClusterVersion is not `Progressing=True`.
    pub updating: bool,
    /// The ClusterVersion's `Progressing` condition.
    pub progressing: ClusterOperatorStatusCondition,
    /// The ClusterVersion's `Failing` condition, if it has one.
    pub failing: Option<ClusterOperatorStatusCondition>,
    /// Only while updating.
    pub control_plane: Option<ControlPlane>,
    /// Most severe first, then newest first (oc's order); empty when not updating.
    pub health: Vec<Insight>,
}

/// oc's `controlPlaneStatusDisplayData`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlane {
    /// `Progressing`, `Progressing - Slow`, `Stalled` or `Completed`.
    pub assessment: String,
    pub target_version: String,
    pub previous_version: String,
    /// The previous history entry is `Partial`.
    pub previous_partial: bool,
    /// The history has only this entry: the cluster is being installed.
    pub new_install: bool,
    /// ClusterOperators updated out of the total, 0–100.
    pub completion_percent: f64,
    pub started_time: Option<Timestamp>,
    /// When the update completed (the history entry's), else `now`: the end of the duration.
    pub completion_time: Option<Timestamp>,
    pub duration_seconds: i64,
    /// oc's estimate; negative when the update takes longer than estimated; `null` once
    /// completed (or when the estimate is exactly zero, as oc hides it then).
    pub estimated_remaining_seconds: Option<i64>,
    /// The elapsed time plus the estimate, to the minute.
    pub estimated_duration_seconds: Option<i64>,
    pub operators: OperatorCounts,
    /// The platform ClusterOperators not at the target version, by name.
    pub not_updated: Vec<HeldOperator>,
}

/// The platform ClusterOperators (those with an `include.` or `exclude.release.openshift.io/`
/// annotation), counted as oc counts them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorCounts {
    pub total: usize,
    /// `status.versions[name=operator]` is the target version.
    pub updated: usize,
    /// Not updated and `Progressing=True`.
    pub updating: usize,
    /// Not updated and `Progressing=False`.
    pub waiting: usize,
    pub healthy: usize,
    /// Not `Available=True`.
    pub unavailable: usize,
    /// Available but `Degraded=True`.
    pub degraded: usize,
}

/// A platform ClusterOperator not yet at the target version, with the conditions that say why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldOperator {
    pub name: String,
    /// Its `status.versions[name=operator]`, if any.
    pub version: Option<String>,
    pub available: Option<ClusterOperatorStatusCondition>,
    pub progressing: Option<ClusterOperatorStatusCondition>,
    pub degraded: Option<ClusterOperatorStatusCondition>,
}

/// oc's `updateInsight`: something the admin should know about the update.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Insight {
    /// When it started; `None` when it cannot be told.
    pub since: Option<Timestamp>,
    /// `Info`, `Warning` or `Error`.
    pub level: Level,
    /// `None`, `API Availability` or `Update Stalled`.
    pub impact: String,
    pub message: String,
    pub description: String,
    pub reference: String,
    /// The objects it is about (`clusteroperators.config.openshift.io`, name), shown by
    /// `--details health`.
    #[serde(skip)]
    pub resources: Vec<(String, String)>,
}

/// `--details`: which sections are shown in full (oc's `--details`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Details {
    #[default]
    None,
    All,
    /// The nodes of each pool (no pools here: as `None`).
    Nodes,
    Health,
    Operators,
}

impl Details {
    fn shows(self, section: Details) -> bool {
        self == Details::All || self == section
    }
}

const CLUSTER_OPERATORS: &str = "clusteroperators.config.openshift.io";
const CLUSTER_VERSIONS: &str = "clusterversions.config.openshift.io";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    Info,
    Warning,
    Error,
}

const MINUTE: i64 = 60;
const UNAVAILABLE_WARNING: i64 = 5 * MINUTE;
const UNAVAILABLE_ERROR: i64 = 20 * MINUTE;
const DEGRADED_WARNING: i64 = 5 * MINUTE;
const DEGRADED_ERROR: i64 = 40 * MINUTE;
const DEGRADED_RUNBOOK: &str = "https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDegraded.md";
const DOWN_RUNBOOK: &str = "https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDown.md";
const HISTORY_DOCS: &str = "https://docs.openshift.com/container-platform/latest/updating/troubleshooting_updates/gathering-data-cluster-update.html#gathering-clusterversion-history-cli_troubleshooting_updates";

/// The assessment at `now` (oc's `Run` and `assessControlPlaneStatus`).
pub fn assess(
    cv: &ClusterVersion,
    operators: &[ClusterOperator],
    now: Timestamp,
) -> Result<Progress, ProgressError> {
    if operators.is_empty() {
        return Err(ProgressError::NoOperators);
    }
    let progressing = cv_condition(cv, "Progressing").ok_or(ProgressError::NoProgressing)?;
    let failing = cv_condition(cv, "Failing").cloned();
    let updating = progressing.status == "True";
    let mut progress = Progress {
        updating,
        progressing: progressing.clone(),
        failing,
        control_plane: None,
        health: vec![],
    };
    if updating {
        let (control_plane, insights) = control_plane(cv, operators, now);
        progress.control_plane = Some(control_plane);
        progress.health = sorted_health(insights, &progress, now);
    }
    Ok(progress)
}

/// The per-operator part of oc's assessment, and the insights it raises.
struct Tally {
    counts: OperatorCounts,
    not_updated: Vec<HeldOperator>,
    last_observed_progress: Option<Timestamp>,
    mco_started_updating: Option<Timestamp>,
    insights: Vec<Insight>,
}

fn tally(operators: &[ClusterOperator], target: &str, now: Timestamp) -> Tally {
    let mut t = Tally {
        counts: OperatorCounts::default(),
        not_updated: vec![],
        last_observed_progress: None,
        mco_started_updating: None,
        insights: vec![],
    };
    for operator in operators.iter().filter(|o| is_platform_operator(o)) {
        let name = operator.metadata.name.clone().unwrap_or_default();
        let status = operator.status.clone().unwrap_or_default();
        let find = |type_: &str| status.conditions.iter().find(|c| c.type_ == type_).cloned();
        let (available, progressing, degraded) =
            (find("Available"), find("Progressing"), find("Degraded"));
        let version = (status.versions.iter())
            .find(|v| v.name == "operator")
            .map(|v| v.version.clone());
        let updated = version.as_deref() == Some(target);
        t.counts.total += 1;
        t.counts.updated += usize::from(updated);
        if let Some(p) = &progressing {
            let at = p.last_transition_time.0;
            t.last_observed_progress = Some(t.last_observed_progress.map_or(at, |l| l.max(at)));
            if !updated && p.status == "True" {
                t.counts.updating += 1;
                if name == "machine-config" {
                    t.mco_started_updating = Some(at);
                }
            }
            if !updated && p.status == "False" {
                t.counts.waiting += 1;
            }
        }
        if available.as_ref().is_none_or(|a| a.status != "True") {
            t.counts.unavailable += 1;
        } else if degraded.as_ref().is_some_and(|d| d.status == "True") {
            t.counts.degraded += 1;
        }
        t.insights.extend(operator_insights(
            &name,
            available.as_ref(),
            degraded.as_ref(),
            now,
        ));
        if !updated {
            t.not_updated.push(HeldOperator {
                name,
                version,
                available,
                progressing,
                degraded,
            });
        }
    }
    t.counts.healthy = t.counts.total - t.counts.unavailable - t.counts.degraded;
    t.not_updated.sort_by(|a, b| a.name.cmp(&b.name));
    t
}

/// oc's `assessControlPlaneStatus`.
fn control_plane(
    cv: &ClusterVersion,
    operators: &[ClusterOperator],
    now: Timestamp,
) -> (ControlPlane, Vec<Insight>) {
    let status = cv.status.clone().unwrap_or_default();
    let target = status.desired.and_then(|d| d.version).unwrap_or_default();
    let mut tally = tally(operators, &target, now);
    let counts = &tally.counts;
    let completed = counts.updated == counts.total;
    // When the machine-config operator is the last one, its start is the last progress: the
    // daemonset operators flip Progressing while nodes reboot.
    if tally.mco_started_updating.is_some() && counts.total - counts.updated == 1 {
        tally.last_observed_progress = tally.mco_started_updating;
    }
    let current = status.history.first();
    let started = current.map(|h| h.started_time.0);
    let completion_time = current.map(|h| match (&h.state[..], &h.completion_time) {
        ("Completed", Some(done)) => done.0,
        _ => now,
    });
    let mut updating_for = 0;
    let mut to_last_observed_progress = 0;
    if let (Some(started), Some(end)) = (started, completion_time) {
        let last = (tally.last_observed_progress)
            .filter(|l| *l > started)
            .unwrap_or(now);
        to_last_observed_progress = seconds_between(started, last);
        updating_for = seconds_between(started, end);
    }
    let duration_seconds = if updating_for > 10 * MINUTE {
        round_to(updating_for, MINUTE)
    } else {
        updating_for
    };
    let co_completion = if counts.total == 0 {
        1.0
    } else {
        counts.updated as f64 / counts.total as f64
    };
    let mut assessment = if completed {
        "Completed"
    } else {
        "Progressing"
    };
    let (mut remaining, mut estimated_duration) = (None, None);
    if !completed {
        let baseline = baseline_duration(&status.history);
        let estimate = estimate_completion(
            baseline,
            to_last_observed_progress,
            updating_for,
            co_completion,
        );
        if estimate < -10 * MINUTE {
            assessment = "Stalled";
        } else if estimate < 0 {
            assessment = "Progressing - Slow";
        }
        // oc's template hides a zero estimate.
        if estimate != 0 {
            remaining = Some(estimate);
            estimated_duration = Some(truncate_to(updating_for.saturating_add(estimate), MINUTE));
        }
    }
    // The ClusterVersion's own first, as oc lists it.
    let mut insights: Vec<Insight> = failing_insight(cv, now).into_iter().collect();
    insights.extend(tally.insights);
    let history = &status.history;
    let previous = history.get(1);
    let previous_partial = previous.is_some_and(|p| p.state == "Partial");
    let version_of = |h: Option<&crate::cluster::UpdateHistory>| {
        h.and_then(|h| h.version.clone())
            .unwrap_or_else(|| "unknown".into())
    };
    let target_version = version_of(current);
    let previous_version = version_of(previous);
    if !completed && previous_partial {
        let last_complete = (history.iter().skip(2))
            .find(|h| h.state == "Completed")
            .map(|h| version_of(Some(h)))
            .unwrap_or_else(|| "unknown".into());
        insights.push(Insight {
            since: started,
            level: Level::Warning,
            impact: "None".into(),
            message: format!("Previous update to {previous_version} never completed, last complete update was {last_complete}"),
            description: format!("Current update to {target_version} was initiated while the previous update to version {previous_version} was still in progress"),
            reference: HISTORY_DOCS.into(),
            resources: vec![(CLUSTER_VERSIONS.into(), cv.metadata.name.clone().unwrap_or_default())],
        });
    }
    let control_plane = ControlPlane {
        assessment: assessment.into(),
        target_version,
        previous_version,
        previous_partial,
        new_install: history.len() == 1,
        completion_percent: co_completion * 100.0,
        started_time: started,
        completion_time,
        duration_seconds,
        estimated_remaining_seconds: remaining,
        estimated_duration_seconds: estimated_duration,
        operators: tally.counts,
        not_updated: tally.not_updated,
    };
    (control_plane, insights)
}

fn is_platform_operator(operator: &ClusterOperator) -> bool {
    (operator.metadata.annotations.iter().flatten()).any(|(key, _)| {
        key.starts_with("exclude.release.openshift.io/")
            || key.starts_with("include.release.openshift.io/")
    })
}

/// oc's `coInsights`: unavailable for 5 minutes is a warning, 20 an error; degraded for 5 a
/// warning, 40 an error.
fn operator_insights(
    name: &str,
    available: Option<&ClusterOperatorStatusCondition>,
    degraded: Option<&ClusterOperatorStatusCondition>,
    now: Timestamp,
) -> Vec<Insight> {
    let mut insights = vec![];
    let mut insight =
        |c: &ClusterOperatorStatusCondition, what: &str, (warn, error), reference: &str| {
            let since = c.last_transition_time.0;
            let lasted = seconds_between(since, now);
            if lasted <= warn {
                return;
            }
            let message = c.message.clone().filter(|m| !m.is_empty());
            insights.push(Insight {
                since: Some(since),
                level: if lasted > error {
                    Level::Error
                } else {
                    Level::Warning
                },
                impact: "API Availability".into(),
                message: format!(
                    "Cluster Operator {name} is {what} ({})",
                    c.reason.as_deref().unwrap_or("")
                ),
                description: message.unwrap_or_else(|| "<no message>".into()),
                reference: reference.into(),
                resources: vec![(CLUSTER_OPERATORS.into(), name.into())],
            });
        };
    if let Some(c) = available.filter(|c| c.status == "False") {
        insight(
            c,
            "unavailable",
            (UNAVAILABLE_WARNING, UNAVAILABLE_ERROR),
            DOWN_RUNBOOK,
        );
    }
    if let Some(c) = degraded.filter(|c| c.status == "True") {
        insight(
            c,
            "degraded",
            (DEGRADED_WARNING, DEGRADED_ERROR),
            DEGRADED_RUNBOOK,
        );
    }
    insights
}

/// The ClusterVersion's own: no `Failing` condition, or one that is not `False`.
fn failing_insight(cv: &ClusterVersion, now: Timestamp) -> Option<Insight> {
    let name = cv.metadata.name.clone().unwrap_or_default();
    let (since, message, description) = match cv_condition(cv, "Failing") {
        None => (
            now,
            format!("Cluster Version {name} has no Failing condition"),
            "Current status of Cluster Version reconciliation is unclear.  See 'oc -n openshift-cluster-version logs -l k8s-app=cluster-version-operator --tail -1' to debug.".to_string(),
        ),
        Some(c) if c.status != "False" => (
            c.last_transition_time.0,
            format!(
                "Cluster Version {name} is failing to proceed with the update ({})",
                c.reason.as_deref().unwrap_or("")
            ),
            c.message.clone().unwrap_or_default(),
        ),
        Some(_) => return None,
    };
    Some(Insight {
        since: Some(since),
        level: Level::Warning,
        impact: "Update Stalled".into(),
        message,
        description,
        reference: DEGRADED_RUNBOOK.into(),
        resources: vec![(CLUSTER_VERSIONS.into(), name)],
    })
}

/// What the health says when there is nothing to say (oc main's text).
const PROCEEDING_WELL: &str = "Update is proceeding well";

/// oc's `assessUpdateInsights`: the most severe first, newest first within a level; "Update
/// is proceeding well" when there is nothing to say.
fn sorted_health(mut insights: Vec<Insight>, progress: &Progress, now: Timestamp) -> Vec<Insight> {
    insights.sort_by_key(|i| std::cmp::Reverse(i.since));
    insights.sort_by_key(|i| std::cmp::Reverse(i.level));
    if insights.is_empty() {
        let started = (progress.control_plane.as_ref()).and_then(|c| c.started_time);
        insights.push(Insight {
            since: Some(started.unwrap_or(now)),
            level: Level::Info,
            impact: "None".into(),
            message: PROCEEDING_WELL.into(),
            description: String::new(),
            reference: String::new(),
            resources: vec![],
        });
    }
    insights
}

/// oc's `baselineDuration`: the duration of the newest completed update between the current
/// entry and the install (the last entry); an hour without one.
fn baseline_duration(history: &[crate::cluster::UpdateHistory]) -> i64 {
    if history.len() < 3 {
        return 60 * MINUTE;
    }
    (history[1..history.len() - 1].iter())
        .find(|h| h.state == "Completed")
        .and_then(|h| {
            let done = h.completion_time.as_ref()?;
            Some(seconds_between(h.started_time.0, done.0))
        })
        .unwrap_or(60 * MINUTE)
}

/// oc's `estimateCompletion`: extrapolated from the progress so far once it has lasted five
/// minutes, else the baseline; 20% pessimistic (or optimistic when already late).
fn estimate_completion(
    baseline: i64,
    to_last_observed_progress: i64,
    updating_for: i64,
    co_completion: f64,
) -> i64 {
    if co_completion >= 1.0 {
        return 0;
    }
    let timewise = timewise_complete(co_completion);
    let total = if co_completion > 0.0 && timewise > 0.0 && to_last_observed_progress > 5 * MINUTE {
        to_last_observed_progress as f64 / timewise
    } else {
        baseline as f64
    };
    let remaining = total - updating_for as f64;
    let overestimate = if remaining < 0.0 { 1.0 / 1.2 } else { 1.2 };
    // Go converts the float to whole seconds toward zero, as `as` does; bounded to ten years
    // (a timewise share near zero would otherwise give i64::MAX, which later sums overflow).
    const TEN_YEARS: f64 = 10.0 * 365.0 * 86_400.0;
    let estimate = (remaining * overestimate).clamp(-TEN_YEARS, TEN_YEARS) as i64;
    if estimate > 10 * MINUTE {
        round_to(estimate, MINUTE)
    } else {
        estimate
    }
}

/// oc's `timewiseComplete`: the share of the update's time that has passed when this share of
/// operators is updated (a typical cluster reaches 97% of operators in 67% of the time), three
/// polynomials fitted by oc's authors.
fn timewise_complete(x: f64) -> f64 {
    let (x2, x3, x4) = (x.powi(2), x.powi(3), x.powi(4));
    if x < 0.25 {
        -0.03078788 + 2.62886 * x - 3.823954 * x2
    } else if x < 0.9 {
        0.1851215 + 1.64994 * x - 4.676898 * x2 + 5.451824 * x3 - 2.125286 * x4
    } else {
        25053.32 - 107394.3 * x + 172527.2 * x2 - 123107.0 * x3 + 32921.81 * x4
    }
}

fn cv_condition<'a>(
    cv: &'a ClusterVersion,
    type_: &str,
) -> Option<&'a ClusterOperatorStatusCondition> {
    (cv.status.as_ref()?.conditions.iter()).find(|c| c.type_ == type_)
}

fn seconds_between(from: Timestamp, to: Timestamp) -> i64 {
    to.as_second() - from.as_second()
}

/// Go's `Duration.Round`: to the nearest multiple, halves away from zero.
fn round_to(seconds: i64, unit: i64) -> i64 {
    let rounded = seconds.saturating_abs().saturating_add(unit / 2) / unit * unit;
    rounded * seconds.signum()
}

/// Go's `Duration.Truncate`: toward zero.
fn truncate_to(seconds: i64, unit: i64) -> i64 {
    seconds / unit * unit
}

/// Go's `Duration.String` for whole seconds: `1h2m3s`, `4m0s`, `5s`, `0s`.
pub fn go_duration(seconds: i64) -> String {
    let sign = if seconds < 0 { "-" } else { "" };
    let s = seconds.unsigned_abs();
    let (h, m, s) = (s / 3600, s % 3600 / 60, s % 60);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, _) => format!("{sign}{m}m{s}s"),
        _ => format!("{sign}{h}h{m}m{s}s"),
    }
}

/// oc's `shortDuration`: `now`, `3h`, `2m`, `1h59m`, `45s`.
pub fn short_duration(seconds: i64) -> String {
    let long = go_duration(seconds);
    if long == "0s" {
        "now".into()
    } else if let Some(hours) = long.strip_suffix("h0m0s") {
        format!("{hours}h")
    } else if let Some(minutes) = long.strip_suffix("0s").filter(|l| l.ends_with('m')) {
        minutes.into()
    } else {
        long
    }
}

/// oc's `vagueUnder`: an estimate under ten minutes is `<10m`; one more than ten minutes
/// overdue is not an estimate any more.
fn vague_under(remaining: i64, estimated_duration: i64) -> String {
    if remaining < -10 * MINUTE {
        format!(
            "N/A; estimate duration was {}",
            short_duration(estimated_duration)
        )
    } else if remaining < 10 * MINUTE {
        format!("<{}", short_duration(10 * MINUTE))
    } else {
        short_duration(remaining)
    }
}

/// The text for standard output and the warnings for standard error. `terminal`: standard
/// output is a terminal, so the completion gets a progress bar.
/// `details`: the sections shown in full (`--details`).
pub fn render(
    progress: &Progress,
    now: Timestamp,
    terminal: bool,
    details: Details,
) -> (String, String) {
    let mut err = String::new();
    let Some(cp) = progress
        .control_plane
        .as_ref()
        .filter(|_| progress.updating)
    else {
        return ("The cluster is not updating.\n".into(), err);
    };
    let started = cp
        .started_time
        .unwrap_or(progress.progressing.last_transition_time.0);
    let mut out = format!(
        "An update is in progress for {}: {}\n",
        go_duration(seconds_between(started, now)),
        progress.progressing.message.as_deref().unwrap_or("")
    );
    match &progress.failing {
        Some(c) if c.status != "False" => out.push_str(&format!(
            "\n{}={}:\n\n  Reason: {}\n  Message: {}\n\n",
            c.type_,
            c.status,
            c.reason.as_deref().unwrap_or(""),
            c.message.as_deref().unwrap_or("").replace('\n', "\n  ")
        )),
        Some(_) => {}
        None => err.push_str("warning: No current Failing info, see `oc describe clusterversion` for more details.\n"),
    }
    out.push('\n');
    out.push_str(&control_plane_text(cp, now, terminal, details));
    out.push('\n');
    out.push_str(&health_text(&progress.health, now, details));
    (out, err)
}

fn control_plane_text(
    cp: &ControlPlane,
    now: Timestamp,
    terminal: bool,
    details: Details,
) -> String {
    let ops = &cp.operators;
    if ops.updated == ops.total {
        let at = cp
            .completion_time
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        return format!(
            "= Control Plane =\nUpdate to {} successfully completed at {} (duration: {})\n",
            cp.target_version,
            at.unwrap_or_default(),
            short_duration(cp.duration_seconds)
        );
    }
    let target = if cp.new_install {
        format!("{} (a new install)", cp.target_version)
    } else if cp.previous_partial {
        format!(
            "{} (from incomplete {})",
            cp.target_version, cp.previous_version
        )
    } else {
        format!("{} (from {})", cp.target_version, cp.previous_version)
    };
    let updating: Vec<&HeldOperator> = (cp.not_updated.iter())
        .filter(|o| o.progressing.as_ref().is_some_and(|p| p.status == "True"))
        .collect();
    let mut out = format!(
        "= Control Plane =\nAssessment:      {}\nTarget Version:  {target}\n",
        cp.assessment
    );
    if !updating.is_empty() {
        let names: Vec<&str> = updating.iter().map(|o| o.name.as_str()).collect();
        out.push_str(&format!("Updating:        {}\n", names.join(", ")));
    }
    out.push_str(&format!(
        "Completion:      {:.0}% ({} operators updated, {} updating, {} waiting)\n",
        cp.completion_percent, ops.updated, ops.updating, ops.waiting
    ));
    if terminal {
        out.push_str(&format!(
            "                 {}\n",
            bar(ops.updated, ops.total)
        ));
    }
    let estimate = match (
        cp.estimated_remaining_seconds,
        cp.estimated_duration_seconds,
    ) {
        (Some(remaining), Some(duration)) => format!(
            " (Est. Time Remaining: {})",
            vague_under(remaining, duration)
        ),
        _ => String::new(),
    };
    out.push_str(&format!(
        "Duration:        {}{estimate}\nOperator Health: {}\n",
        short_duration(cp.duration_seconds),
        health_summary(ops)
    ));
    if details.shows(Details::Operators) && !updating.is_empty() {
        out.push_str("\nUpdating Cluster Operators\n");
        let mut rows = vec![
            ["NAME", "SINCE", "REASON", "MESSAGE"]
                .map(String::from)
                .to_vec(),
        ];
        for o in updating {
            let p = o
                .progressing
                .as_ref()
                .expect("filtered on Progressing=True");
            let reason = (p.reason.clone().filter(|r| !r.is_empty())).unwrap_or_else(|| "-".into());
            let message = p.message.clone().unwrap_or_default();
            let mut lines = message.split('\n');
            rows.push(vec![
                o.name.clone(),
                short_duration(seconds_between(p.last_transition_time.0, now)),
                ellipsis(&reason, 20),
                lines.next().unwrap_or("").to_string(),
            ]);
            // oc writes a message's further lines under the first.
            for line in lines {
                rows.push(vec![
                    String::new(),
                    String::new(),
                    String::new(),
                    line.to_string(),
                ]);
            }
        }
        out.push_str(&table(&rows));
    }
    out
}

/// `[##########..........] 1/2`: operators updated of the total, 30 cells wide.
fn bar(done: usize, total: usize) -> String {
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled)
    )
}

/// oc's `StatusSummary`.
fn health_summary(ops: &OperatorCounts) -> String {
    let mut parts = vec![format!("{} Healthy", ops.healthy)];
    if ops.unavailable > 0 {
        parts.push(format!("{} Unavailable", ops.unavailable));
    }
    if ops.degraded > 0 {
        parts.push(format!("{} Available but degraded", ops.degraded));
    }
    parts.join(", ")
}

/// oc's `ellipsis`: at most `max` characters, the last three `...` when cut.
fn ellipsis(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep: String = s.chars().take(max.max(3) - 3).collect();
    format!("{keep}...")
}

fn since(insight: &Insight, now: Timestamp) -> String {
    (insight.since).map_or("-".into(), |s| short_duration(seconds_between(s, now)))
}

fn health_text(insights: &[Insight], now: Timestamp, details: Details) -> String {
    // Nothing to say is never detailed (oc's `assessUpdateInsights`).
    let standing_in = insights.len() == 1 && insights[0].message == PROCEEDING_WELL;
    if details.shows(Details::Health) && !standing_in {
        return format!("= Update Health =\n{}", health_details(insights, now));
    }
    let mut rows = vec![
        ["SINCE", "LEVEL", "IMPACT", "MESSAGE"]
            .map(String::from)
            .to_vec(),
    ];
    for i in insights {
        rows.push(vec![
            since(i, now),
            format!("{:?}", i.level),
            i.impact.clone(),
            i.message.clone(),
        ]);
    }
    let mut out = format!("= Update Health =\n{}", table(&rows));
    if insights.len() > 1 || insights.first().is_some_and(|i| i.level != Level::Info) {
        out.push_str("\nRun with --details=health for additional description and links to related online documentation\n");
    }
    out
}

/// oc's `detailedOutput`: each insight as a block, blank-line separated.
fn health_details(insights: &[Insight], now: Timestamp) -> String {
    const PAD: usize = "Description: ".len();
    let mut out = String::new();
    for (n, i) in insights.iter().enumerate() {
        out.push_str(&format!("Message: {}\n", i.message));
        let fields = [
            ("Since:", since(i, now)),
            ("Level:", format!("{:?}", i.level)),
            ("Impact:", i.impact.clone()),
            ("Reference:", i.reference.clone()),
        ];
        for (name, value) in fields {
            out.push_str(&format!("  {name:<PAD$}{value}\n"));
        }
        if !i.resources.is_empty() {
            out.push_str("  Resources:\n");
            let mut kinds: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
            for (kind, name) in &i.resources {
                kinds.entry(format!("{kind}: ")).or_default().push(name);
            }
            let pad = kinds.keys().map(String::len).max().unwrap_or(0);
            for (kind, mut names) in kinds {
                names.sort_unstable();
                out.push_str(&format!("    {kind:<pad$}{}\n", names.join(", ")));
            }
        }
        let description = i
            .description
            .replace('\n', &format!("\n{}, ", " ".repeat(PAD + 2)));
        out.push_str(&format!("  {:<PAD$}{description}\n", "Description:"));
        if n + 1 < insights.len() {
            out.push('\n');
        }
    }
    out
}

/// Go's `tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)`: every column but the last padded to its
/// widest cell plus three.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns.saturating_sub(1))
        .map(|i| {
            (rows.iter())
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
                + 3
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            match widths.get(i) {
                Some(width) if i + 1 < row.len() => out.push_str(&format!("{cell:<width$}")),
                _ => out.push_str(cell),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::cluster::{
        ClusterOperatorSpec, ClusterOperatorStatus, ClusterVersionSpec, ClusterVersionStatus,
        OperandVersion, Release, UpdateHistory,
    };

    /// 2026-01-01T12:00:00Z.
    fn now() -> Timestamp {
        "2026-01-01T12:00:00Z".parse().unwrap()
    }

    fn ago(seconds: i64) -> Time {
        Time(Timestamp::from_second(now().as_second() - seconds).unwrap())
    }

    fn cond(
        type_: &str,
        status: &str,
        seconds_ago: i64,
        reason: &str,
        message: &str,
    ) -> ClusterOperatorStatusCondition {
        ClusterOperatorStatusCondition::new(type_, status, ago(seconds_ago))
            .because(reason, message)
    }

    fn entry(
        state: &str,
        version: &str,
        started_ago: i64,
        completed_ago: Option<i64>,
    ) -> UpdateHistory {
        UpdateHistory {
            state: state.into(),
            started_time: ago(started_ago),
            completion_time: completed_ago.map(ago),
            version: Some(version.into()),
            image: format!("quay.io/r:{version}"),
            verified: false,
            accepted_risks: None,
        }
    }

    fn cluster(
        history: Vec<UpdateHistory>,
        conditions: Vec<ClusterOperatorStatusCondition>,
    ) -> ClusterVersion {
        let mut cv = ClusterVersion::new("version", ClusterVersionSpec::default());
        cv.status = Some(ClusterVersionStatus {
            desired: Some(Release {
                version: history.first().and_then(|h| h.version.clone()),
                ..Default::default()
            }),
            history,
            conditions,
            ..Default::default()
        });
        cv
    }

    fn operator(
        name: &str,
        version: &str,
        conditions: Vec<ClusterOperatorStatusCondition>,
    ) -> ClusterOperator {
        let mut co = ClusterOperator::new(name, ClusterOperatorSpec {});
        co.metadata.annotations = Some(BTreeMap::from([(
            "include.release.openshift.io/self-managed-high-availability".to_string(),
            "true".to_string(),
        )]));
        co.status = Some(ClusterOperatorStatus {
            conditions,
            versions: vec![OperandVersion {
                name: "operator".into(),
                version: version.into(),
            }],
            ..Default::default()
        });
        co
    }

    fn healthy(name: &str, version: &str) -> ClusterOperator {
        operator(
            name,
            version,
            vec![
                cond("Available", "True", 86400, "AsExpected", ""),
                cond("Progressing", "False", 86400, "AsExpected", ""),
                cond("Degraded", "False", 86400, "AsExpected", ""),
            ],
        )
    }

    /// 4.17.0 → 4.18.0 for five minutes: console done, etcd working on it for four.
    fn mid_update() -> (ClusterVersion, Vec<ClusterOperator>) {
        let cv = cluster(
            vec![
                entry("Partial", "4.18.0", 300, None),
                entry("Completed", "4.17.0", 86400, Some(84600)),
            ],
            vec![
                cond("Failing", "False", 300, "", ""),
                cond(
                    "Progressing",
                    "True",
                    300,
                    "",
                    "Working towards 4.18.0: 1 of 2 done (50% complete), waiting on etcd",
                ),
            ],
        );
        let etcd = operator(
            "etcd",
            "4.17.0",
            vec![
                cond("Available", "True", 86400, "AsExpected", ""),
                cond("Progressing", "True", 240, "", "Working towards 4.18.0"),
                cond("Degraded", "False", 86400, "AsExpected", ""),
            ],
        );
        // Not the platform's: no include/exclude annotation, so not counted.
        let mut foreign = healthy("foreign", "1.0");
        foreign.metadata.annotations = None;
        (cv, vec![healthy("console", "4.18.0"), etcd, foreign])
    }

    fn text(
        cv: &ClusterVersion,
        operators: &[ClusterOperator],
        terminal: bool,
    ) -> (String, String) {
        render(
            &assess(cv, operators, now()).unwrap(),
            now(),
            terminal,
            Details::Operators,
        )
    }

    #[test]
    fn a_cluster_in_the_middle_of_an_update() {
        let (cv, operators) = mid_update();
        let (out, err) = text(&cv, &operators, false);
        assert_eq!(err, "");
        assert_eq!(
            out,
            "An update is in progress for 5m0s: Working towards 4.18.0: 1 of 2 done (50% complete), waiting on etcd

= Control Plane =
Assessment:      Progressing
Target Version:  4.18.0 (from 4.17.0)
Updating:        etcd
Completion:      50% (1 operators updated, 1 updating, 0 waiting)
Duration:        5m (Est. Time Remaining: 1h6m)
Operator Health: 2 Healthy

Updating Cluster Operators
NAME   SINCE   REASON   MESSAGE
etcd   4m      -        Working towards 4.18.0

= Update Health =
SINCE   LEVEL   IMPACT   MESSAGE
5m      Info    None     Update is proceeding well
"
        );
        let (out, _) = text(&cv, &operators, true);
        assert!(out.contains("Completion:      50% (1 operators updated, 1 updating, 0 waiting)\n                 [###############...............] 1/2\n"), "{out}");
    }

    #[test]
    fn the_json_document_has_its_documented_shape() {
        let (cv, operators) = mid_update();
        let json = serde_json::to_value(assess(&cv, &operators, now()).unwrap()).unwrap();
        let cp = &json["controlPlane"];
        assert_eq!(json["updating"], true);
        assert_eq!(json["progressing"]["status"], "True");
        assert_eq!(json["failing"]["status"], "False");
        assert_eq!(cp["assessment"], "Progressing");
        assert_eq!(
            (&cp["targetVersion"], &cp["previousVersion"]),
            (&"4.18.0".into(), &"4.17.0".into())
        );
        assert_eq!(cp["completionPercent"], 50.0);
        assert_eq!(cp["startedTime"], "2026-01-01T11:55:00Z");
        assert_eq!(
            (
                &cp["durationSeconds"],
                &cp["estimatedRemainingSeconds"],
                &cp["estimatedDurationSeconds"]
            ),
            (&300.into(), &3960.into(), &4260.into())
        );
        assert_eq!(
            cp["operators"],
            serde_json::json!({"total": 2, "updated": 1, "updating": 1, "waiting": 0,
                                                         "healthy": 2, "unavailable": 0, "degraded": 0})
        );
        let held = &cp["notUpdated"];
        assert_eq!(held.as_array().unwrap().len(), 1);
        assert_eq!(
            (&held[0]["name"], &held[0]["version"]),
            (&"etcd".into(), &"4.17.0".into())
        );
        assert_eq!(held[0]["progressing"]["message"], "Working towards 4.18.0");
        assert_eq!(held[0]["available"]["status"], "True");
        assert_eq!(json["health"][0]["level"], "Info");
        assert_eq!(json["health"][0]["message"], "Update is proceeding well");
    }

    #[test]
    fn a_stalled_update_says_what_holds_it() {
        // Two hours into an update whose predecessor took 30 minutes: etcd unavailable for 25
        // minutes and degraded for 10, the ClusterVersion failing.
        let cv = cluster(
            vec![
                entry("Partial", "4.18.0", 7200, None),
                entry("Completed", "4.17.1", 90000, Some(88200)),
                entry("Completed", "4.17.0", 200000, Some(190000)),
            ],
            vec![
                cond(
                    "Failing",
                    "True",
                    600,
                    "ClusterOperatorNotAvailable",
                    "Cluster operator etcd is not available",
                ),
                cond(
                    "Progressing",
                    "True",
                    7200,
                    "ClusterOperatorNotAvailable",
                    "Unable to apply 4.18.0: the cluster operator etcd is not available",
                ),
            ],
        );
        let etcd = operator(
            "etcd",
            "4.17.1",
            vec![
                cond("Available", "False", 1500, "NoPods", "no etcd pods"),
                cond(
                    "Progressing",
                    "True",
                    6600,
                    "Upgrading",
                    "Working towards 4.18.0",
                ),
                cond(
                    "Degraded",
                    "True",
                    600,
                    "NodeDown",
                    "a node is down\nand another",
                ),
            ],
        );
        let operators = [healthy("console", "4.18.0"), etcd];
        let (out, err) = text(&cv, &operators, false);
        assert_eq!(err, "");
        assert_eq!(
            out,
            "An update is in progress for 2h0m0s: Unable to apply 4.18.0: the cluster operator etcd is not available

Failing=True:

  Reason: ClusterOperatorNotAvailable
  Message: Cluster operator etcd is not available


= Control Plane =
Assessment:      Stalled
Target Version:  4.18.0 (from 4.17.1)
Updating:        etcd
Completion:      50% (1 operators updated, 1 updating, 0 waiting)
Duration:        2h (Est. Time Remaining: N/A; estimate duration was 41m)
Operator Health: 1 Healthy, 1 Unavailable

Updating Cluster Operators
NAME   SINCE   REASON      MESSAGE
etcd   1h50m   Upgrading   Working towards 4.18.0

= Update Health =
SINCE   LEVEL     IMPACT             MESSAGE
25m     Error     API Availability   Cluster Operator etcd is unavailable (NoPods)
10m     Warning   Update Stalled     Cluster Version version is failing to proceed with the update (ClusterOperatorNotAvailable)
10m     Warning   API Availability   Cluster Operator etcd is degraded (NodeDown)

Run with --details=health for additional description and links to related online documentation
"
        );
        // Without --details, no operators' table; with --details health, each insight in full.
        let progress = assess(&cv, &operators, now()).unwrap();
        let (plain, _) = render(&progress, now(), false, Details::None);
        assert!(!plain.contains("Updating Cluster Operators"), "{plain}");
        let (health, _) = render(&progress, now(), false, Details::Health);
        assert!(!health.contains("Updating Cluster Operators"), "{health}");
        assert!(
            health.ends_with(
                "= Update Health =
Message: Cluster Operator etcd is unavailable (NoPods)
  Since:       25m
  Level:       Error
  Impact:      API Availability
  Reference:   https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDown.md
  Resources:
    clusteroperators.config.openshift.io: etcd
  Description: no etcd pods

Message: Cluster Version version is failing to proceed with the update (ClusterOperatorNotAvailable)
  Since:       10m
  Level:       Warning
  Impact:      Update Stalled
  Reference:   https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDegraded.md
  Resources:
    clusterversions.config.openshift.io: version
  Description: Cluster operator etcd is not available

Message: Cluster Operator etcd is degraded (NodeDown)
  Since:       10m
  Level:       Warning
  Impact:      API Availability
  Reference:   https://github.com/openshift/runbooks/blob/master/alerts/cluster-monitoring-operator/ClusterOperatorDegraded.md
  Resources:
    clusteroperators.config.openshift.io: etcd
  Description: a node is down
               , and another
"
            ),
            "{health}"
        );
    }

    #[test]
    fn operator_table_cuts_reasons_and_continues_messages_as_oc() {
        assert_eq!(ellipsis("Upgrading", 20), "Upgrading");
        assert_eq!(
            ellipsis("AVeryLongReasonIndeedYes", 20),
            "AVeryLongReasonIn..."
        );
        let (cv, mut operators) = mid_update();
        for o in &mut operators {
            for c in o.status.iter_mut().flat_map(|s| s.conditions.iter_mut()) {
                if c.type_ == "Progressing" && c.status == "True" {
                    c.reason = Some("AVeryLongReasonIndeedYes".into());
                    c.message = Some("first line\nsecond line".into());
                }
            }
        }
        let (out, _) = text(&cv, &operators, false);
        assert!(
            out.contains("NAME   SINCE   REASON                 MESSAGE\netcd   4m      AVeryLongReasonIn...   first line\n                                      second line\n"),
            "{out}"
        );
    }

    /// (name, history, operators, assessment, estimate, the Duration line)
    type Case = (
        &'static str,
        Vec<UpdateHistory>,
        Vec<ClusterOperator>,
        &'static str,
        Option<i64>,
        &'static str,
    );

    #[test]
    fn assessments_and_estimates() {
        let progressing = |seconds_ago| {
            cond(
                "Progressing",
                "True",
                seconds_ago,
                "",
                "Working towards 4.18.0",
            )
        };
        let cases: Vec<Case> = vec![
            (
                "just started, the hour-long default baseline",
                vec![
                    entry("Partial", "4.18.0", 0, None),
                    entry("Completed", "4.17.0", 9000, Some(8000)),
                ],
                vec![healthy("etcd", "4.17.0")],
                "Progressing",
                Some(4320),
                "Duration:        now (Est. Time Remaining: 1h12m)\n",
            ),
            (
                "slower than the previous update",
                vec![
                    entry("Partial", "4.18.0", 1900, None),
                    entry("Completed", "4.17.1", 9000, Some(7200)),
                    entry("Completed", "4.17.0", 90000, Some(89000)),
                ],
                vec![
                    healthy("console", "4.18.0"),
                    operator("etcd", "4.17.1", vec![progressing(1800)]),
                ],
                "Progressing - Slow",
                Some(-83),
                "Duration:        32m (Est. Time Remaining: <10m)\n",
            ),
            (
                "all operators updated",
                vec![
                    entry("Partial", "4.18.0", 600, None),
                    entry("Completed", "4.17.0", 9000, Some(8000)),
                ],
                vec![healthy("etcd", "4.18.0")],
                "Completed",
                None,
                "",
            ),
            (
                "a new install",
                vec![entry("Partial", "4.18.0", 60, None)],
                vec![healthy("etcd", "")],
                "Progressing",
                Some(4260),
                "Duration:        1m (Est. Time Remaining: 1h11m)\n",
            ),
        ];
        for (name, history, operators, assessment, remaining, duration) in cases {
            let cv = cluster(
                history,
                vec![cond("Failing", "False", 0, "", ""), progressing(0)],
            );
            let progress = assess(&cv, &operators, now()).unwrap();
            let cp = progress.control_plane.clone().unwrap();
            assert_eq!(
                (cp.assessment.as_str(), cp.estimated_remaining_seconds),
                (assessment, remaining),
                "{name}"
            );
            let (out, _) = render(&progress, now(), false, Details::Operators);
            assert!(out.contains(duration), "{name}: {out}");
        }
    }

    #[test]
    fn completed_and_not_updating() {
        let (mut cv, operators) = mid_update();
        let status = cv.status.as_mut().unwrap();
        status.history[0] = entry("Completed", "4.18.0", 3600, Some(60));
        let all_done: Vec<ClusterOperator> = (operators.iter())
            .map(|o| healthy(o.metadata.name.as_deref().unwrap(), "4.18.0"))
            .collect();
        let (out, _) = text(&cv, &all_done, false);
        assert!(out.contains("= Control Plane =\nUpdate to 4.18.0 successfully completed at 2026-01-01T11:59:00Z (duration: 59m)\n"), "{out}");

        status_of(&mut cv).conditions = vec![cond(
            "Progressing",
            "False",
            60,
            "",
            "Cluster version is 4.18.0",
        )];
        let progress = assess(&cv, &all_done, now()).unwrap();
        assert!(
            !progress.updating && progress.control_plane.is_none() && progress.health.is_empty()
        );
        assert_eq!(
            render(&progress, now(), true, Details::Operators),
            ("The cluster is not updating.\n".into(), String::new())
        );

        status_of(&mut cv).conditions = vec![];
        assert_eq!(
            assess(&cv, &all_done, now()),
            Err(ProgressError::NoProgressing)
        );
        assert_eq!(assess(&cv, &[], now()), Err(ProgressError::NoOperators));
    }

    fn status_of(cv: &mut ClusterVersion) -> &mut ClusterVersionStatus {
        cv.status.as_mut().unwrap()
    }

    #[test]
    fn warnings_and_insights_without_failing_or_after_a_partial_update() {
        let cv = cluster(
            vec![
                entry("Partial", "4.18.0", 120, None),
                entry("Partial", "4.17.1", 3600, Some(120)),
                entry("Completed", "4.17.0", 9000, Some(8000)),
            ],
            vec![cond(
                "Progressing",
                "True",
                120,
                "",
                "Working towards 4.18.0",
            )],
        );
        let (out, err) = text(&cv, &[healthy("etcd", "4.17.1")], false);
        assert_eq!(
            err,
            "warning: No current Failing info, see `oc describe clusterversion` for more details.\n"
        );
        assert!(
            out.contains("Target Version:  4.18.0 (from incomplete 4.17.1)\n"),
            "{out}"
        );
        assert!(
            out.contains("Completion:      0% (0 operators updated, 0 updating, 1 waiting)\n"),
            "{out}"
        );
        assert!(out.ends_with("SINCE   LEVEL     IMPACT           MESSAGE
now     Warning   Update Stalled   Cluster Version version has no Failing condition
2m      Warning   None             Previous update to 4.17.1 never completed, last complete update was 4.17.0

Run with --details=health for additional description and links to related online documentation
"), "{out}");
    }

    #[test]
    fn durations_read_as_ocs() {
        for (seconds, go, short) in [
            (0, "0s", "now"),
            (45, "45s", "45s"),
            (120, "2m0s", "2m"),
            (10800, "3h0m0s", "3h"),
            (7140, "1h59m0s", "1h59m"),
            (3605, "1h0m5s", "1h0m5s"),
            (-720, "-12m0s", "-12m"),
        ] {
            assert_eq!(
                (
                    go_duration(seconds).as_str(),
                    short_duration(seconds).as_str()
                ),
                (go, short),
                "{seconds}"
            );
        }
        for (remaining, estimated, want) in [
            (-720, 600, "N/A; estimate duration was 10m"),
            (540, 600, "<10m"),
            (900, 3600, "15m"),
            (-60, 600, "<10m"),
        ] {
            assert_eq!(vague_under(remaining, estimated), want);
        }
        assert_eq!(
            (
                round_to(90, 60),
                round_to(89, 60),
                round_to(-90, 60),
                truncate_to(-119, 60)
            ),
            (120, 60, -120, -60)
        );
    }

    #[test]
    fn estimates_follow_ocs_curve() {
        // (baseline, to last progress, updating for, completion, estimate)
        for (baseline, last, elapsed, completion, want) in [
            (3600, 60, 300, 0.5, 3960),    // no progress to extrapolate: the baseline
            (1800, 600, 7200, 0.5, -4716), // extrapolated, long overdue
            (1800, 0, 0, 0.0, 2160),
            (1800, 0, 0, 1.0, 0),
        ] {
            assert_eq!(
                estimate_completion(baseline, last, elapsed, completion),
                want
            );
        }
        let h = |started, done| entry("Completed", "x", started, Some(done));
        assert_eq!(baseline_duration(&[h(10, 0), h(5000, 3000)]), 3600);
        assert_eq!(
            baseline_duration(&[
                entry("Partial", "x", 10, None),
                h(5000, 3200),
                h(9000, 8000)
            ]),
            1800
        );
        assert_eq!(bar(0, 0), format!("[{}] 0/0", "#".repeat(30)));
    }
}
