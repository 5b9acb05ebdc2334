//! The preconditions a requested release must pass before it is accepted (spec §5.3, §6;
//! upstream `pkg/payload/precondition` and `pkg/payload/precondition/clusterversion`).
//!
//! Upstream runs them in `SyncWorker.syncPayload` once a non-local payload is loaded and its
//! version verified, in this order: `ClusterVersionRollback`, `ClusterVersionGiantHop`,
//! `ClusterVersionUpgradeable`, `ClusterVersionRecommendedUpdate`. Every check runs; the
//! failures are then summarized into one message (`precondition.Summarize`). A blocking failure
//! rejects the release (`ReleaseAccepted=False PreconditionChecks`) unless
//! `spec.desiredUpdate.force` is set; warnings, and forced blocking failures, are accepted
//! risks that the release's history entry records.
//!
//! Pure: the caller passes what upstream reads from the ClusterVersion lister.

use std::cmp::Ordering;

use semver::Version;
use thiserror::Error;

use super::outcome::{LoadFailure, PayloadLoadStep};
use crate::cluster::{
    ClusterOperatorStatusCondition, ClusterVersion, ConditionalUpdate, Release, UpdateHistory,
};
use crate::include::ComponentOverride;
use crate::manifest::go_quote;

/// The `UpdateError` reason of a summarized precondition failure.
pub const REASON: &str = "UpgradePreconditionCheckFailed";

/// What the checks read of the ClusterVersion (upstream reads the lister's copy).
#[derive(Debug, Clone, Copy)]
pub struct ClusterView<'a> {
    /// `status.desired.version`: the release being reconciled, i.e. the payload applied now.
    pub current_version: &'a str,
    /// `status.desired.image`, which tells the rollback check which history entries are the
    /// current release.
    pub current_image: &'a str,
    /// `status.history`, newest first.
    pub history: &'a [UpdateHistory],
    /// `status.conditions`: `Upgradeable`, `Progressing` and `RetrievedUpdates` are read.
    pub conditions: &'a [ClusterOperatorStatusCondition],
    /// `spec.overrides`: any unmanaged one turns patch updates into a warning.
    pub overrides: &'a [ComponentOverride],
    /// `spec.channel`.
    pub channel: Option<&'a str>,
    /// `status.availableUpdates`.
    pub available_updates: &'a [Release],
    /// `status.conditionalUpdates`, with their `Recommended` conditions.
    pub conditional_updates: &'a [ConditionalUpdate],
}

impl<'a> ClusterView<'a> {
    /// The view of `cv`, with the release being reconciled given explicitly: before the first
    /// status write `status.desired` is not there yet, but the payload applied is known.
    pub fn new(cv: &'a ClusterVersion, current_version: &'a str, current_image: &'a str) -> Self {
        let status = cv.status.as_ref();
        ClusterView {
            current_version,
            current_image,
            history: status.map_or(&[], |s| s.history.as_slice()),
            conditions: status.map_or(&[], |s| s.conditions.as_slice()),
            overrides: &cv.spec.overrides,
            channel: cv.spec.channel.as_deref(),
            available_updates: status
                .and_then(|s| s.available_updates.as_deref())
                .unwrap_or(&[]),
            conditional_updates: status.map_or(&[], |s| s.conditional_updates.as_slice()),
        }
    }
}

/// One precondition check, in upstream's order ([`Check::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Only a rollback to the previous release within its z-stream is allowed.
    Rollback,
    /// No major version updates (except 4 → 5.0) and no skipped minor versions.
    GiantHop,
    /// `Upgradeable=False` blocks minor and major updates.
    Upgradeable,
    /// Warns when the target is not a recommended update.
    RecommendedUpdate,
}

impl Check {
    pub const ALL: [Check; 4] = [
        Check::Rollback,
        Check::GiantHop,
        Check::Upgradeable,
        Check::RecommendedUpdate,
    ];

    /// Upstream's `Name()`, which the summary quotes.
    pub fn name(self) -> &'static str {
        match self {
            Check::Rollback => "ClusterVersionRollback",
            Check::GiantHop => "ClusterVersionGiantHop",
            Check::Upgradeable => "ClusterVersionUpgradeable",
            Check::RecommendedUpdate => "ClusterVersionRecommendedUpdate",
        }
    }

    /// Runs the check for an update to `target_version` (the loaded payload's version).
    pub fn run(self, view: &ClusterView<'_>, target_version: &str) -> Option<CheckFailure> {
        let outcome = match self {
            Check::Rollback => rollback(view, target_version),
            Check::GiantHop => giant_hop(view, target_version),
            Check::Upgradeable => upgradeable(view, target_version),
            Check::RecommendedUpdate => recommended_update(view, target_version),
        };
        outcome.err().map(|(reason, message)| CheckFailure {
            check: self,
            reason,
            message,
        })
    }
}

/// Why a check failed. Whether the failure blocks follows from the reason alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The release being reconciled has no SemVer version. A warning: only an update can fix it.
    InvalidCurrentVersion,
    /// The target has no SemVer version.
    InvalidDesiredVersion,
    LowDesiredVersion,
    MajorVersionUpdate,
    MultipleMinorVersionsUpdate,
    /// A patch update while overrides are set: allowed, with a warning.
    ClusterVersionOverridesSet,
    /// A patch retarget during a major update: allowed, recorded as a risk.
    MajorVersionClusterUpdateInProgress,
    /// A patch retarget during a minor update: allowed, recorded as a risk.
    MinorVersionClusterUpdateInProgress,
    NoChannel,
    UnknownUpdate,
    /// `Upgradeable=False`, with the condition's own reason.
    NotUpgradeable(String),
    /// The target is a conditional update that is `Recommended=False`, with the condition's
    /// reason (the risk's name, `MultipleReasons`...).
    NotRecommended(String),
    /// The target is a conditional update whose `Recommended` is neither `True` nor `False`
    /// (the condition's reason), or missing (`UnknownConditionType`).
    RecommendedUnknown(String),
}

impl Reason {
    pub fn as_str(&self) -> &str {
        match self {
            Reason::InvalidCurrentVersion => "InvalidCurrentVersion",
            Reason::InvalidDesiredVersion => "InvalidDesiredVersion",
            Reason::LowDesiredVersion => "LowDesiredVersion",
            Reason::MajorVersionUpdate => "MajorVersionUpdate",
            Reason::MultipleMinorVersionsUpdate => "MultipleMinorVersionsUpdate",
            Reason::ClusterVersionOverridesSet => "ClusterVersionOverridesSet",
            Reason::MajorVersionClusterUpdateInProgress => "MajorVersionClusterUpdateInProgress",
            Reason::MinorVersionClusterUpdateInProgress => "MinorVersionClusterUpdateInProgress",
            Reason::NoChannel => "NoChannel",
            Reason::UnknownUpdate => "UnknownUpdate",
            Reason::NotUpgradeable(reason)
            | Reason::NotRecommended(reason)
            | Reason::RecommendedUnknown(reason) => reason,
        }
    }

    /// Upstream's `!NonBlockingWarning` for the error carrying this reason.
    /// `ClusterVersionRecommendedUpdate` only ever warns, `Recommended=False` included: the
    /// refusal of updates that are not recommended is the client's (`oc adm upgrade`,
    /// `cvo upgrade`), and a warning accepted is recorded in the history entry's
    /// `acceptedRisks`.
    pub fn blocking(&self) -> bool {
        matches!(
            self,
            Reason::InvalidDesiredVersion
                | Reason::LowDesiredVersion
                | Reason::MajorVersionUpdate
                | Reason::MultipleMinorVersionsUpdate
                | Reason::NotUpgradeable(_)
        )
    }
}

/// A failed check (upstream `precondition.Error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    pub check: Check,
    pub reason: Reason,
    pub message: String,
}

impl CheckFailure {
    pub fn blocking(&self) -> bool {
        self.reason.blocking()
    }

    /// The failure's line in the summary.
    fn summary(&self) -> String {
        format!(
            "Precondition {} failed because of {}: {}",
            go_quote(self.check.name()),
            go_quote(self.reason.as_str()),
            self.message
        )
    }
}

/// The release is rejected: at least one blocking check failed and the update is not forced.
/// Displays as upstream's summarized message (the `<err>` of `ReleaseAccepted`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct PreconditionFailure {
    pub message: String,
    /// Every failed check, warnings included.
    pub failures: Vec<CheckFailure>,
}

/// `ReleaseAccepted=False PreconditionChecks`, whose message wraps the summary.
impl From<PreconditionFailure> for LoadFailure {
    fn from(failure: PreconditionFailure) -> Self {
        LoadFailure {
            step: PayloadLoadStep::PreconditionChecks,
            error: failure.message,
        }
    }
}

/// Runs every check for an update to `target_version` and summarizes them. `Ok(None)`: all
/// passed; `Ok(Some(risks))`: accepted with the summarized warnings (or, when `force`d, the
/// blocking failures) as the history entry's `acceptedRisks`; `Err`: rejected.
pub fn check(
    view: &ClusterView<'_>,
    target_version: &str,
    force: bool,
) -> Result<Option<String>, PreconditionFailure> {
    summarize(run_all(view, target_version), force)
}

/// Upstream `List.RunAll`: every check, in order, whatever the earlier ones found.
pub fn run_all(view: &ClusterView<'_>, target_version: &str) -> Vec<CheckFailure> {
    Check::ALL
        .iter()
        .filter_map(|c| c.run(view, target_version))
        .collect()
}

/// Upstream `precondition.Summarize`.
pub fn summarize(
    failures: Vec<CheckFailure>,
    force: bool,
) -> Result<Option<String>, PreconditionFailure> {
    let lines: Vec<String> = failures.iter().map(CheckFailure::summary).collect();
    let message = match lines.as_slice() {
        [] => return Ok(None),
        [one] => one.clone(),
        many => format!(
            "Multiple precondition checks failed:\n* {}",
            many.join("\n* ")
        ),
    };
    if !failures.iter().any(CheckFailure::blocking) {
        Ok(Some(message))
    } else if force {
        Ok(Some(format!("Forced through blocking failures: {message}")))
    } else {
        Err(PreconditionFailure { message, failures })
    }
}

/// `Err((reason, message))` is a failed check.
type Outcome = Result<(), (Reason, String)>;

/// Upstream `Rollback.Run`: a lower target must be the previous release, within the current
/// minor version.
fn rollback(view: &ClusterView<'_>, target: &str) -> Outcome {
    let (current, target) = versions(view, target)?;
    if target.cmp_precedence(&current) != Ordering::Less {
        return Ok(());
    }
    let low = |message| Err((Reason::LowDesiredVersion, message));
    match previous_release(view, &current) {
        None => low(format!(
            "{target} is less than the current target {current}, and the cluster has no previous Semantic Version"
        )),
        Some((previous, image)) if target.cmp_precedence(&previous) != Ordering::Equal => {
            low(format!(
                "{target} is less than the current target {current}, and the only supported rollback is to the cluster's previous version {previous} ({image})"
            ))
        }
        Some((previous, _)) if same_minor(&previous, &current) => Ok(()),
        Some(_) => low(format!(
            "{target} is less than the current target {current} and matches the cluster's previous version, but rollbacks that change major or minor versions are not recommended"
        )),
    }
}

/// The newest history entry that is not the release being reconciled (another version, or the
/// same version from another image), with its image. `None` when there is none or its version
/// is not SemVer: upstream stops at that entry either way.
fn previous_release<'a>(view: &ClusterView<'a>, current: &Version) -> Option<(Version, &'a str)> {
    let current = current.to_string();
    let entry = view
        .history
        .iter()
        .find(|e| entry_version(e) != current || e.image != view.current_image)?;
    let version = parse_version(entry_version(entry)).ok()?;
    Some((version, entry.image.as_str()))
}

/// Upstream `GiantHop.Run`.
fn giant_hop(view: &ClusterView<'_>, target: &str) -> Outcome {
    let (current, target) = versions(view, target)?;
    if target.major > current.major {
        let (from, to) = (current.major, target.major);
        // Upstream's temporary allowance while 5.0 is developed: 4.y → 5.0.z.
        if (from, to) == (4, 5) && target.minor == 0 {
            return Ok(());
        }
        let supported = if (from, to) == (4, 5) {
            "within the current major version or to 5.0"
        } else {
            "within the current major version"
        };
        return Err((
            Reason::MajorVersionUpdate,
            format!(
                "{target} has a larger major version than the current target {current} ({to} > {from}), and only updates {supported} are supported."
            ),
        ));
    }
    // Go's uint64 arithmetic wraps; so does this.
    if target.minor > current.minor.wrapping_add(1) {
        return Err((
            Reason::MultipleMinorVersionsUpdate,
            format!(
                "{target} is more than one minor version beyond the current target {current} ({}.{} > {}.({}+1)), and only updates within the current minor version or to the next minor version are supported.",
                target.major, target.minor, current.major, current.minor
            ),
        ));
    }
    Ok(())
}

/// Upstream's `ClusterVersionOverridesCondition` message, quoted in the overrides warning.
const OVERRIDES_MESSAGE: &str = "Disabling ownership via cluster version overrides prevents upgrades between minor or major versions. Please remove overrides before requesting a minor or major version update.";

/// Upstream `Upgradeable.Run`: `Upgradeable=False` blocks moving forward to another minor or
/// major version. Lower targets are the rollback check's business; patch updates pass, with a
/// warning when overrides are set or a minor/major update is still in progress.
fn upgradeable(view: &ClusterView<'_>, target: &str) -> Outcome {
    let Some(up) = condition(view.conditions, "Upgradeable").filter(|c| c.status == "False") else {
        return Ok(());
    };
    let (current, target) = versions(view, target)?;
    let patch_only = same_minor(&target, &current);
    if target.cmp_precedence(&current) == Ordering::Greater && !patch_only {
        let reason = up.reason.clone().unwrap_or_default();
        let message = up.message.clone().unwrap_or_default();
        return Err((Reason::NotUpgradeable(reason), message));
    }
    if view.overrides.iter().any(|o| o.unmanaged) {
        return Err((
            Reason::ClusterVersionOverridesSet,
            format!(
                "Retarget from {current} to {target} is not blocked by ClusterVersionOverridesSet. But the cluster-version operator is not managing these resources; they are currently the responsibility of the agent that set the overrides: {OVERRIDES_MESSAGE}"
            ),
        ));
    }
    match update_in_progress(view, &current) {
        Some((completed, hop)) if patch_only => Err((
            hop.reason(),
            format!(
                "Retarget to {target} while a {} version update from {completed} to {current} is in progress",
                hop.word()
            ),
        )),
        _ => Ok(()),
    }
}

/// The kind of version change an update in progress makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    Major,
    Minor,
}

impl Hop {
    fn reason(self) -> Reason {
        match self {
            Hop::Major => Reason::MajorVersionClusterUpdateInProgress,
            Hop::Minor => Reason::MinorVersionClusterUpdateInProgress,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Hop::Major => "major",
            Hop::Minor => "minor",
        }
    }
}

/// Upstream `majorOrMinorUpdateFrom`: while `Progressing=True`, the last completed version
/// when `current` is a major or minor update from it.
fn update_in_progress<'a>(view: &ClusterView<'a>, current: &Version) -> Option<(&'a str, Hop)> {
    let completed = completed_version(view.history)?;
    let from = parse_version(completed).ok()?;
    condition(view.conditions, "Progressing").filter(|c| c.status == "True")?;
    if from.major < current.major {
        Some((completed, Hop::Major))
    } else if from.major == current.major && from.minor < current.minor {
        Some((completed, Hop::Minor))
    } else {
        None
    }
}

/// Upstream `GetCurrentVersion`: the newest completed version, else the installed (oldest)
/// one; `None` for an empty history or version.
fn completed_version(history: &[UpdateHistory]) -> Option<&str> {
    let entry = history
        .iter()
        .find(|e| e.state == "Completed")
        .or(history.last())?;
    Some(entry_version(entry)).filter(|v| !v.is_empty())
}

/// Upstream `RecommendedUpdate.Run`: a target in `availableUpdates` passes; a conditional
/// update passes when `Recommended=True` and warns otherwise (`False` included); any other
/// target warns about the unset channel or the `RetrievedUpdates` condition.
fn recommended_update(view: &ClusterView<'_>, target: &str) -> Outcome {
    let available = |r: &Release| r.version.as_deref().unwrap_or("") == target;
    if view.available_updates.iter().any(available) {
        return Ok(());
    }
    let current = view.current_version;
    let conditional = (view.conditional_updates.iter())
        .find(|u| u.release.version.as_deref().unwrap_or("") == target);
    if let Some(update) = conditional {
        let recommended = update.conditions.iter().find(|c| c.type_ == "Recommended");
        return match recommended {
            Some(c) if c.status == "True" => Ok(()),
            Some(c) if c.status == "False" => Err((
                Reason::NotRecommended(c.reason.clone()),
                format!(
                    "Update from {current} to {target} is not recommended:\n\n{}",
                    c.message
                ),
            )),
            Some(c) => Err((
                Reason::RecommendedUnknown(c.reason.clone()),
                format!(
                    "Update from {current} to {target} is {}={}: {}: {}",
                    c.type_, c.status, c.reason, c.message
                ),
            )),
            None => Err((
                Reason::RecommendedUnknown("UnknownConditionType".into()),
                format!(
                    "Update from {current} to {target} has a status.conditionalUpdates entry, but no Recommended condition."
                ),
            )),
        };
    }
    if view.channel.is_none_or(str::is_empty) {
        return Err((
            Reason::NoChannel,
            format!(
                "Configured channel is unset, so the recommended status of updating from {current} to {target} is unknown."
            ),
        ));
    }
    let message = match condition(view.conditions, "RetrievedUpdates") {
        None => format!(
            "No RetrievedUpdates, so the recommended status of updating from {current} to {target} is unknown."
        ),
        Some(c) if c.status == "True" => format!(
            "RetrievedUpdates=True ({}), so the update from {current} to {target} is probably neither recommended nor supported.",
            c.reason.as_deref().unwrap_or("")
        ),
        Some(c) => format!(
            "RetrievedUpdates={} ({}), so the recommended status of updating from {current} to {target} is unknown.",
            c.status,
            c.reason.as_deref().unwrap_or("")
        ),
    };
    Err((Reason::UnknownUpdate, message))
}

/// The current and target versions, parsed as the version checks need them. An unparsable
/// current version only warns: it takes an update to fix it.
fn versions(view: &ClusterView<'_>, target: &str) -> Result<(Version, Version), (Reason, String)> {
    let current =
        parse_version(view.current_version).map_err(|e| (Reason::InvalidCurrentVersion, e))?;
    let target = parse_version(target).map_err(|e| (Reason::InvalidDesiredVersion, e))?;
    Ok((current, target))
}

fn same_minor(a: &Version, b: &Version) -> bool {
    a.major == b.major && a.minor == b.minor
}

/// Upstream `resourcemerge.FindOperatorStatusCondition`: the first of that type.
fn condition<'a>(
    conditions: &'a [ClusterOperatorStatusCondition],
    type_: &str,
) -> Option<&'a ClusterOperatorStatusCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

fn entry_version(entry: &UpdateHistory) -> &str {
    entry.version.as_deref().unwrap_or("")
}

/// blang/semver's `Parse`, which upstream uses. It accepts the grammar the `semver` crate
/// does; its error texts end up in the condition messages, so they are reproduced.
pub(crate) fn parse_version(s: &str) -> Result<Version, String> {
    match blang_error(s) {
        Some(error) => Err(error),
        None => Version::parse(s).map_err(|e| e.to_string()),
    }
}

/// blang/semver's `alphanum` set.
fn alphanumeric(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// The error blang/semver's `Parse` returns for `s`, checked in its order.
fn blang_error(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Some("No Major.Minor.Patch elements found".into());
    };
    // Build metadata is split off first, so a '-' in it does not start a prerelease.
    let (rest, build) = split(rest, '+');
    let (patch, prerelease) = split(rest, '-');
    number_error(major, "major", "Major")
        .or_else(|| number_error(minor, "minor", "Minor"))
        .or_else(|| number_error(patch, "patch", "Patch"))
        .or_else(|| prerelease.and_then(|p| p.split('.').find_map(prerelease_error)))
        .or_else(|| build.and_then(|b| b.split('.').find_map(build_error)))
}

fn split(s: &str, separator: char) -> (&str, Option<&str>) {
    match s.split_once(separator) {
        Some((head, tail)) => (head, Some(tail)),
        None => (s, None),
    }
}

fn number_error(s: &str, lower: &str, upper: &str) -> Option<String> {
    if !s.chars().all(|c| c.is_ascii_digit()) {
        Some(format!(
            "Invalid character(s) found in {lower} number {}",
            go_quote(s)
        ))
    } else if s.len() > 1 && s.starts_with('0') {
        Some(format!(
            "{upper} number must not contain leading zeroes {}",
            go_quote(s)
        ))
    } else {
        parse_uint_error(s)
    }
}

fn prerelease_error(s: &str) -> Option<String> {
    if s.is_empty() {
        Some("Prerelease is empty".into())
    } else if s.chars().all(|c| c.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            Some(format!(
                "Numeric PreRelease version must not contain leading zeroes {}",
                go_quote(s)
            ))
        } else {
            parse_uint_error(s)
        }
    } else if !s.chars().all(alphanumeric) {
        Some(format!(
            "Invalid character(s) found in prerelease {}",
            go_quote(s)
        ))
    } else {
        None
    }
}

fn build_error(s: &str) -> Option<String> {
    if s.is_empty() {
        Some("Build meta data is empty".into())
    } else if !s.chars().all(alphanumeric) {
        Some(format!(
            "Invalid character(s) found in build meta data {}",
            go_quote(s)
        ))
    } else {
        None
    }
}

/// Go's `strconv.ParseUint(s, 10, 64)` error for a string of ASCII digits.
fn parse_uint_error(s: &str) -> Option<String> {
    let kind = if s.is_empty() {
        "invalid syntax"
    } else if s.parse::<u64>().is_err() {
        "value out of range"
    } else {
        return None;
    };
    Some(format!(
        "strconv.ParseUint: parsing {}: {kind}",
        go_quote(s)
    ))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn epoch() -> Time {
        Time("1970-01-01T00:00:00Z".parse().unwrap())
    }

    const OVERRIDES_RISK: &str = "Disabling ownership via cluster version overrides prevents updates between minor or major versions. Please remove overrides before requesting a minor or major version update.";

    fn cond(
        type_: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) -> ClusterOperatorStatusCondition {
        ClusterOperatorStatusCondition::new(type_, status, epoch()).because(reason, message)
    }

    /// What our status writes while overrides are set.
    fn overrides_upgradeable() -> ClusterOperatorStatusCondition {
        cond(
            "Upgradeable",
            "False",
            "ClusterVersionOverrides",
            OVERRIDES_RISK,
        )
    }

    fn entry(state: &str, version: &str, image: &str) -> UpdateHistory {
        UpdateHistory {
            state: state.into(),
            started_time: epoch(),
            completion_time: None,
            version: Some(version.into()),
            image: image.into(),
            verified: false,
            accepted_risks: None,
        }
    }

    fn unmanaged() -> Vec<ComponentOverride> {
        vec![ComponentOverride {
            kind: "Deployment".into(),
            group: "apps".into(),
            namespace: "ns".into(),
            name: "x".into(),
            unmanaged: true,
        }]
    }

    /// 4.17.0 from `img:4.17.0`, installed, on a channel whose update is in `availableUpdates`
    /// (so only the checks under test speak).
    fn view<'a>(
        history: &'a [UpdateHistory],
        conditions: &'a [ClusterOperatorStatusCondition],
        overrides: &'a [ComponentOverride],
        available: &'a [Release],
    ) -> ClusterView<'a> {
        ClusterView {
            current_version: "4.17.0",
            current_image: "img:4.17.0",
            history,
            conditions,
            overrides,
            channel: Some("stable-4.17"),
            available_updates: available,
            conditional_updates: &[],
        }
    }

    fn conditional(version: &str, recommended: Option<(&str, &str, &str)>) -> ConditionalUpdate {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
        ConditionalUpdate {
            release: release(version),
            risk_names: vec![],
            risks: vec![],
            conditions: (recommended.into_iter())
                .map(|(status, reason, message)| Condition {
                    type_: "Recommended".into(),
                    status: status.into(),
                    reason: reason.into(),
                    message: message.into(),
                    last_transition_time: epoch(),
                    observed_generation: None,
                })
                .collect(),
        }
    }

    #[test]
    fn conditional_updates_pass_or_warn_by_recommended() {
        let summary = |reason: &str, message: &str| {
            format!(
                "Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"{reason}\": {message}"
            )
        };
        let not_recommended = summary(
            "ConsoleBreaks",
            "Update from 4.17.0 to 4.17.1 is not recommended:\n\nThe console may break. https://bug/2",
        );
        let unknown = summary(
            "EvaluationFailed",
            "Update from 4.17.0 to 4.17.1 is Recommended=Unknown: EvaluationFailed: Could not evaluate",
        );
        let no_condition = summary(
            "UnknownConditionType",
            "Update from 4.17.0 to 4.17.1 has a status.conditionalUpdates entry, but no Recommended condition.",
        );
        // (Recommended status, reason and message; force; the outcome)
        type Case<'a> = (
            Option<(&'a str, &'a str, &'a str)>,
            bool,
            Result<Option<String>, String>,
        );
        let cases: Vec<Case<'_>> = vec![
            (Some(("True", "NotExposedToRisks", "")), false, Ok(None)),
            (
                Some((
                    "False",
                    "ConsoleBreaks",
                    "The console may break. https://bug/2",
                )),
                false,
                Ok(Some(not_recommended.clone())),
            ),
            (
                Some((
                    "False",
                    "ConsoleBreaks",
                    "The console may break. https://bug/2",
                )),
                true,
                Ok(Some(not_recommended)),
            ),
            (
                Some(("Unknown", "EvaluationFailed", "Could not evaluate")),
                false,
                Ok(Some(unknown)),
            ),
            (None, false, Ok(Some(no_condition))),
        ];
        for (recommended, force, want) in cases {
            let updates = [conditional("4.17.1", recommended)];
            let v = ClusterView {
                conditional_updates: &updates,
                ..view(&[], &[], &[], &[])
            };
            let got = check(&v, "4.17.1", force).map_err(|e| e.message);
            assert_eq!(got, want, "{recommended:?} force={force}");
        }
    }

    fn release(version: &str) -> Release {
        Release {
            version: Some(version.into()),
            ..Release::default()
        }
    }

    #[test]
    fn patch_update_with_overrides_is_accepted_with_a_warning() {
        let (conds, overrides) = ([overrides_upgradeable()], unmanaged());
        let available = [release("4.17.1")];
        let v = view(&[], &conds, &overrides, &available);
        assert_eq!(
            check(&v, "4.17.1", false),
            Ok(Some(
                "Precondition \"ClusterVersionUpgradeable\" failed because of \"ClusterVersionOverridesSet\": Retarget from 4.17.0 to 4.17.1 is not blocked by ClusterVersionOverridesSet. But the cluster-version operator is not managing these resources; they are currently the responsibility of the agent that set the overrides: Disabling ownership via cluster version overrides prevents upgrades between minor or major versions. Please remove overrides before requesting a minor or major version update.".into()
            ))
        );
    }

    #[test]
    fn minor_update_with_overrides_is_blocked_unless_forced() {
        let (conds, overrides) = ([overrides_upgradeable()], unmanaged());
        let available = [release("4.18.0")];
        let v = view(&[], &conds, &overrides, &available);
        let summary = format!(
            "Precondition \"ClusterVersionUpgradeable\" failed because of \"ClusterVersionOverrides\": {OVERRIDES_RISK}"
        );
        let failure = check(&v, "4.18.0", false).unwrap_err();
        assert_eq!(failure.to_string(), summary);
        assert_eq!(
            failure.failures[0].reason,
            Reason::NotUpgradeable("ClusterVersionOverrides".into())
        );
        let load = LoadFailure::from(failure);
        assert_eq!(load.step, PayloadLoadStep::PreconditionChecks);
        assert_eq!(load.error, summary);

        assert_eq!(
            check(&v, "4.18.0", true),
            Ok(Some(format!("Forced through blocking failures: {summary}")))
        );
    }

    #[test]
    fn major_update_is_blocked_except_4_to_5_0() {
        let available = [release("5.1.0"), release("5.0.2"), release("2.0.0")];
        let v = view(&[], &[], &[], &available);
        assert_eq!(
            check(&v, "5.1.0", false).unwrap_err().to_string(),
            "Precondition \"ClusterVersionGiantHop\" failed because of \"MajorVersionUpdate\": 5.1.0 has a larger major version than the current target 4.17.0 (5 > 4), and only updates within the current major version or to 5.0 are supported."
        );
        assert_eq!(check(&v, "5.0.2", false), Ok(None));
        let v = ClusterView {
            current_version: "1.0.0",
            ..v
        };
        assert_eq!(
            check(&v, "2.0.0", false).unwrap_err().to_string(),
            "Precondition \"ClusterVersionGiantHop\" failed because of \"MajorVersionUpdate\": 2.0.0 has a larger major version than the current target 1.0.0 (2 > 1), and only updates within the current major version are supported."
        );
    }

    #[test]
    fn skipping_a_minor_version_is_blocked() {
        let available = [release("4.19.0")];
        let v = view(&[], &[], &[], &available);
        assert_eq!(
            check(&v, "4.19.0", false).unwrap_err().to_string(),
            "Precondition \"ClusterVersionGiantHop\" failed because of \"MultipleMinorVersionsUpdate\": 4.19.0 is more than one minor version beyond the current target 4.17.0 (4.19 > 4.(17+1)), and only updates within the current minor version or to the next minor version are supported."
        );
    }

    #[test]
    fn rollback_only_to_the_previous_patch_release() {
        let available = [release("4.16.9"), release("4.17.0")];
        let rollback = |history: &[UpdateHistory], current: &str, target: &str| {
            let v = ClusterView {
                current_version: current,
                current_image: "img:current",
                ..view(history, &[], &[], &available)
            };
            check(&v, target, false).map_err(|e| e.to_string())
        };
        let prefix =
            "Precondition \"ClusterVersionRollback\" failed because of \"LowDesiredVersion\": ";
        assert_eq!(
            rollback(&[], "4.17.1", "4.17.0"),
            Err(format!(
                "{prefix}4.17.0 is less than the current target 4.17.1, and the cluster has no previous Semantic Version"
            ))
        );
        let z_stream = [
            entry("Partial", "4.17.1", "img:current"),
            entry("Completed", "4.17.0", "img:4.17.0"),
        ];
        assert_eq!(rollback(&z_stream, "4.17.1", "4.17.0"), Ok(None));
        assert_eq!(
            rollback(&z_stream, "4.17.1", "4.16.9"),
            Err(format!(
                "{prefix}4.16.9 is less than the current target 4.17.1, and the only supported rollback is to the cluster's previous version 4.17.0 (img:4.17.0)"
            ))
        );
        let minor = [
            entry("Partial", "4.17.0", "img:current"),
            entry("Completed", "4.16.9", "img:4.16.9"),
        ];
        assert_eq!(
            rollback(&minor, "4.17.0", "4.16.9"),
            Err(format!(
                "{prefix}4.16.9 is less than the current target 4.17.0 and matches the cluster's previous version, but rollbacks that change major or minor versions are not recommended"
            ))
        );
    }

    #[test]
    fn no_upgradeable_condition_lets_minor_updates_through() {
        let available = [release("4.18.0")];
        let v = view(&[], &[], &[], &available);
        assert_eq!(check(&v, "4.18.0", false), Ok(None));
        let not_false = [cond("Upgradeable", "Unknown", "EvaluationFailed", "x")];
        let v = view(&[], &not_false, &[], &available);
        assert_eq!(check(&v, "4.18.0", false), Ok(None));
    }

    #[test]
    fn patch_retarget_during_a_minor_update_is_a_recorded_risk() {
        let conds = [
            cond("Upgradeable", "False", "AdminAckRequired", "ack"),
            cond("Progressing", "True", "", ""),
        ];
        let history = [
            entry("Partial", "4.17.0", "img:4.17.0"),
            entry("Completed", "4.16.9", "img:4.16.9"),
        ];
        let available = [release("4.17.2")];
        let v = view(&history, &conds, &[], &available);
        assert_eq!(
            check(&v, "4.17.2", false),
            Ok(Some("Precondition \"ClusterVersionUpgradeable\" failed because of \"MinorVersionClusterUpdateInProgress\": Retarget to 4.17.2 while a minor version update from 4.16.9 to 4.17.0 is in progress".into()))
        );
    }

    #[test]
    fn recommended_update_only_warns() {
        let none: [Release; 0] = [];
        let no_channel = ClusterView {
            channel: None,
            ..view(&[], &[], &[], &none)
        };
        assert_eq!(
            check(&no_channel, "4.17.1", false),
            Ok(Some("Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"NoChannel\": Configured channel is unset, so the recommended status of updating from 4.17.0 to 4.17.1 is unknown.".into()))
        );
        let conds = [cond("RetrievedUpdates", "False", "NoUpstream", "m")];
        let v = view(&[], &conds, &[], &none);
        assert_eq!(
            check(&v, "4.17.1", false),
            Ok(Some("Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"UnknownUpdate\": RetrievedUpdates=False (NoUpstream), so the recommended status of updating from 4.17.0 to 4.17.1 is unknown.".into()))
        );
        let conds = [cond("RetrievedUpdates", "True", "", "")];
        let v = view(&[], &conds, &[], &none);
        assert_eq!(
            check(&v, "4.17.1", false),
            Ok(Some("Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"UnknownUpdate\": RetrievedUpdates=True (), so the update from 4.17.0 to 4.17.1 is probably neither recommended nor supported.".into()))
        );
        let v = view(&[], &[], &[], &none);
        assert_eq!(
            check(&v, "4.17.1", false),
            Ok(Some("Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"UnknownUpdate\": No RetrievedUpdates, so the recommended status of updating from 4.17.0 to 4.17.1 is unknown.".into()))
        );
    }

    #[test]
    fn multiple_failures_are_summarized_in_order() {
        let (conds, overrides) = ([overrides_upgradeable()], unmanaged());
        let v = ClusterView {
            channel: None,
            ..view(&[], &conds, &overrides, &[])
        };
        let expected = format!(
            "Multiple precondition checks failed:\n\
             * Precondition \"ClusterVersionGiantHop\" failed because of \"MultipleMinorVersionsUpdate\": 4.19.0 is more than one minor version beyond the current target 4.17.0 (4.19 > 4.(17+1)), and only updates within the current minor version or to the next minor version are supported.\n\
             * Precondition \"ClusterVersionUpgradeable\" failed because of \"ClusterVersionOverrides\": {OVERRIDES_RISK}\n\
             * Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"NoChannel\": Configured channel is unset, so the recommended status of updating from 4.17.0 to 4.19.0 is unknown."
        );
        let failure = check(&v, "4.19.0", false).unwrap_err();
        assert_eq!(failure.to_string(), expected);
        let checks: Vec<Check> = failure.failures.iter().map(|f| f.check).collect();
        assert_eq!(
            checks,
            [
                Check::GiantHop,
                Check::Upgradeable,
                Check::RecommendedUpdate
            ]
        );
        assert_eq!(
            check(&v, "4.19.0", true),
            Ok(Some(format!(
                "Forced through blocking failures: {expected}"
            )))
        );
    }

    #[test]
    fn unparsable_versions_fail_as_upstream() {
        let available = [release("4.18"), release("4.18.0")];
        // The target: blocking, from each version check.
        let v = view(&[], &[], &[], &available);
        let prefix = |name: &str| {
            format!("Precondition \"{name}\" failed because of \"InvalidDesiredVersion\": ")
        };
        assert_eq!(
            check(&v, "4.18", false).unwrap_err().to_string(),
            format!(
                "Multiple precondition checks failed:\n* {}No Major.Minor.Patch elements found\n* {}No Major.Minor.Patch elements found",
                prefix("ClusterVersionRollback"),
                prefix("ClusterVersionGiantHop")
            )
        );
        // The current version: a warning only.
        let v = ClusterView {
            current_version: "",
            ..v
        };
        let accepted = check(&v, "4.18.0", false).unwrap().unwrap();
        assert!(accepted.contains("\"InvalidCurrentVersion\": Version string empty"));
    }

    #[test]
    fn blang_parse_errors() {
        let err = |s: &str| parse_version(s).unwrap_err();
        assert_eq!(
            err("v4.1.0"),
            "Invalid character(s) found in major number \"v4\""
        );
        assert_eq!(
            err("4.01.0"),
            "Minor number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            err("4.1.x"),
            "Invalid character(s) found in patch number \"x\""
        );
        assert_eq!(
            err(".1.0"),
            "strconv.ParseUint: parsing \"\": invalid syntax"
        );
        assert_eq!(err("4.1.0-"), "Prerelease is empty");
        assert_eq!(
            err("4.1.0-01"),
            "Numeric PreRelease version must not contain leading zeroes \"01\""
        );
        assert_eq!(
            err("4.1.0-a_b"),
            "Invalid character(s) found in prerelease \"a_b\""
        );
        assert_eq!(err("4.1.0+"), "Build meta data is empty");
        assert_eq!(
            err("4.1.0+a+b"),
            "Invalid character(s) found in build meta data \"a+b\""
        );
        assert_eq!(
            err("99999999999999999999.1.0"),
            "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"
        );
        let ok = parse_version("4.17.0-0.test-2024-10-07-173400-ci+build.1").unwrap();
        assert_eq!(ok.to_string(), "4.17.0-0.test-2024-10-07-173400-ci+build.1");
    }

    #[test]
    fn ci_build_to_release_candidate_passes_upgradeable() {
        // Upstream's "cluster-bot build to release candidate with Upgradeable=False".
        let conds = [cond("Upgradeable", "False", "bla", "set to False")];
        let available = [release("4.17.0-rc.6")];
        let v = ClusterView {
            current_version: "4.17.0-0.test-2024-10-07-173400-ci-ln-pwn9ngk-latest",
            ..view(&[], &conds, &[], &available)
        };
        assert_eq!(Check::Upgradeable.run(&v, "4.17.0-rc.6"), None);
    }
}
