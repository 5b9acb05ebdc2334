//! `cvo upgrade recommend`: the update recommendations, as `oc adm upgrade recommend` shows
//! them (`openshift/oc` `pkg/cli/admin/upgrade/recommend`): the cluster's own concerns
//! (`Failing`, an update in progress, the firing alerts of the precheck, `RetrievedUpdates`),
//! then the updates by minor version, newest first, the two newest of each minor and the
//! not-recommended ones with their reason; `--version` tells one release's issues and fails
//! unless every issue is named in `--accept`. Read-only. Pure: the ClusterVersion and the
//! precheck's conditions in, the texts out; `src/cli/upgrade.rs` reads the cluster and the
//! alerts.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use semver::Version;

use super::admin::two_columns;
use super::alerts::AlertCondition;
use crate::cluster::{
    ClusterOperatorStatusCondition, ClusterVersion, ConditionalUpdate, ConditionalUpdateRisk,
    Release,
};
use crate::updates::graph::ClusterCondition;
#[cfg(test)]
use serde_json::json;

/// What was asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecommendRequest {
    /// `--version`: one release's context.
    pub version: Option<Version>,
    /// `--show-outdated-releases`.
    pub show_outdated: bool,
    /// `--quiet` (with `--version` only): print only the issues not accepted.
    pub quiet: bool,
    /// `--accept`: issue names the admin finds acceptable.
    pub accept: BTreeSet<String>,
}

/// oc's checks of the flags; the `--version` text parsed.
pub fn check(
    version: Option<&str>,
    show_outdated: bool,
    quiet: bool,
) -> Result<Option<Version>, String> {
    match version {
        None if quiet => Err("--quiet can only be set when --version is set".into()),
        None => Ok(None),
        Some(_) if show_outdated => {
            Err("when --version is set, --show-outdated-releases is unnecessary".into())
        }
        Some(text) => Version::parse(text)
            .map(Some)
            .map_err(|e| format!("cannot parse SemVer target {text:?}: {e}")),
    }
}

/// What the command prints, and the error it ends with (exit 1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recommendations {
    pub out: String,
    pub err: String,
    pub error: Option<String>,
}

/// oc's `Run`. `precheck` is the alert precheck's conditions, or why it could not run.
pub fn recommend(
    cv: &ClusterVersion,
    request: &RecommendRequest,
    precheck: Result<Vec<AlertCondition>, String>,
) -> Recommendations {
    let mut r = Recommendations::default();
    let quiet = request.quiet;
    let accept = &request.accept;
    let mut issues: BTreeSet<String> = BTreeSet::new();
    let accepted = |name: &str| {
        if accept.contains(name) {
            "accepted "
        } else {
            ""
        }
    };
    let status = cv.status.clone().unwrap_or_default();
    let condition = |type_: &str| status.conditions.iter().find(|c| c.type_ == type_);

    match condition("Failing") {
        Some(c) if c.status != "False" => {
            if !quiet {
                r.out.push_str(&format!(
                    "{}{}={}:\n\n{}\n\n",
                    accepted("Failing"),
                    c.type_,
                    c.status,
                    reason_and_message(c)
                ));
            }
            issues.insert("Failing".into());
        }
        Some(_) => {}
        None => {
            if !quiet {
                r.err.push_str(&format!(
                    "{}warning: No current Failing info, see `oc describe clusterversion` for more details.\n",
                    accepted("Failing")
                ));
            }
            issues.insert("Failing".into());
        }
    }
    if let Some(c) = condition("Progressing")
        .filter(|c| c.status == "True" && c.message.as_deref().is_some_and(|m| !m.is_empty()))
    {
        if !quiet {
            r.out.push_str(&format!(
                "{}info: An update is in progress.  You may wish to let this update complete before requesting a new update.\n  {}\n\n",
                accepted("Progressing"),
                c.message.as_deref().unwrap_or("").replace('\n', "\n  ")
            ));
        }
        issues.insert("Progressing".into());
    }

    let conditions = match precheck {
        Ok(conditions) => conditions,
        Err(e) => {
            if !quiet {
                r.out.push_str(&format!(
                    "Failed to check for at least some preconditions: {e}\n"
                ));
            }
            issues.insert("FailedToCompletePrecheck".into());
            Vec::new()
        }
    };
    let (mut happy, mut accepted_conditions, mut unhappy) = (vec![], vec![], vec![]);
    for c in &conditions {
        if c.status == "True" {
            happy.push(format!("{} ({})", c.type_, c.reason));
            continue;
        }
        let name = c.acceptance_name.clone().unwrap_or_default();
        if accept.contains(&name) {
            accepted_conditions.push(c.type_.clone());
        } else {
            unhappy.push(c.type_.clone());
        }
        issues.insert(name);
    }
    if !quiet {
        let lists = [
            (
                &mut happy,
                "The following conditions found no cause for concern in updating this cluster to later releases",
            ),
            (
                &mut accepted_conditions,
                "The following conditions found cause for concern in updating this cluster to later releases, but were explicitly accepted via --accept",
            ),
        ];
        for (list, text) in lists {
            if !list.is_empty() {
                list.sort();
                r.out.push_str(&format!("{text}: {}\n\n", list.join(", ")));
            }
        }
        if !unhappy.is_empty() {
            unhappy.sort();
            r.out.push_str(&format!(
                "The following conditions found cause for concern in updating this cluster to later releases: {}\n\n",
                unhappy.join(", ")
            ));
            for c in conditions.iter().filter(|c| c.status != "True") {
                r.out.push_str(&format!(
                    "{}={}:\n\n  Reason: {}\n  Message: {}\n\n",
                    c.type_,
                    c.status,
                    c.reason,
                    c.message.replace('\n', "\n  ")
                ));
            }
        }
    }

    if let Some(c) = condition("RetrievedUpdates").filter(|c| c.status != "True") {
        if !quiet {
            r.err.push_str(&format!(
                "warning: Cannot refresh available updates:\n{}\n\n",
                reason_and_message(c)
            ));
        }
        issues.insert("CannotRetrieveUpdates".into());
    }

    let desired = status.desired.clone().unwrap_or_default();
    if !quiet && let Some(channel) = non_empty(&cv.spec.channel) {
        match non_empty(&cv.spec.upstream) {
            None => r.out.push_str(
                "Upstream update service is unset, so the cluster will use an appropriate default.\n",
            ),
            Some(upstream) => r
                .out
                .push_str(&format!("Upstream update service: {upstream}\n")),
        }
        if desired.channels.is_empty() {
            r.out.push_str(&format!("Channel: {channel}\n"));
        } else {
            r.out.push_str(&format!(
                "Channel: {channel} (available channels: {})\n",
                desired.channels.join(", ")
            ));
        }
    }

    let mut buckets: BTreeMap<u64, BTreeMap<u64, Vec<ConditionalUpdate>>> = BTreeMap::new();
    let mut bucket = |release: &Release, update: ConditionalUpdate, err: &mut String| {
        let version = release.version.as_deref().unwrap_or("");
        match Version::parse(version) {
            Ok(v) => (buckets.entry(v.major).or_default().entry(v.minor))
                .or_default()
                .push(update),
            Err(e) => {
                if !quiet {
                    // oc's text, without a line end.
                    err.push_str(&format!(
                        "warning: Cannot parse SemVer available update {version:?}: {e}"
                    ));
                }
            }
        }
    };
    for update in &status.conditional_updates {
        bucket(&update.release, update.clone(), &mut r.err);
    }
    let available = status.available_updates.clone().unwrap_or_default();
    for release in &available {
        let conditional =
            (status.conditional_updates.iter()).any(|c| c.release.image == release.image);
        if !conditional {
            let update = ConditionalUpdate {
                release: release.clone(),
                ..ConditionalUpdate::default()
            };
            bucket(release, update, &mut r.err);
        }
    }
    if let Some(c) = condition("Upgradeable").filter(|c| c.status == "False") {
        let current = desired.version.as_deref().unwrap_or("");
        if let Err(e) = inject_upgradeable(current, c, &mut buckets)
            && !quiet
        {
            r.err.push_str(&format!(
                "warning: Cannot inject {}={} as a conditional update risk: {e}\n\nReason: {}\n  Message: {}\n\n",
                c.type_,
                c.status,
                c.reason.as_deref().unwrap_or(""),
                c.message.as_deref().unwrap_or("").replace('\n', "\n  ")
            ));
        }
    }

    if let Some(version) = &request.version {
        r.error = Some(
            match one_release(&mut r, &buckets, version, request, &mut issues) {
                Ok(()) => return r,
                Err(e) => e,
            },
        );
        return r;
    }
    if buckets.is_empty() {
        r.out.push_str("No updates available. You may still upgrade to a specific release image with --to-image or wait for new updates to be available.\n");
        return r;
    }
    for (major, minors) in buckets.iter_mut().rev() {
        for (minor, updates) in minors.iter_mut().rev() {
            minor_section(&mut r.out, *major, *minor, updates, request.show_outdated);
        }
    }
    r
}

/// `--version`: the release's issues; an error unless every issue is accepted.
fn one_release(
    r: &mut Recommendations,
    buckets: &BTreeMap<u64, BTreeMap<u64, Vec<ConditionalUpdate>>>,
    version: &Version,
    request: &RecommendRequest,
    issues: &mut BTreeSet<String>,
) -> Result<(), String> {
    if buckets.is_empty() {
        return Err(format!(
            "no updates available, so cannot display context for the requested release {version}"
        ));
    }
    let Some(minors) = buckets.get(&version.major) else {
        return Err(format!(
            "no updates to {} available, so cannot display context for the requested release {version}",
            version.major
        ));
    };
    let Some(updates) = minors.get(&version.minor) else {
        return Err(format!(
            "no updates to {}.{} available, so cannot display context for the requested release {version}",
            version.major, version.minor
        ));
    };
    let wanted = version.to_string();
    let Some(update) = (updates.iter()).find(|u| u.release.version.as_deref() == Some(&wanted))
    else {
        return Err(format!(
            "no update to {version} available, so cannot display context for the requested release"
        ));
    };
    let quiet = request.quiet;
    if !quiet {
        r.out.push('\n');
    }
    let image = update.release.image.as_deref().unwrap_or("");
    let url = update.release.url.as_deref().unwrap_or("");
    match not_recommended(update) {
        None => {
            if !quiet {
                r.out.push_str(&format!(
                    "Update to {wanted} has no known issues relevant to this cluster.\nImage: {image}\nRelease URL: {url}\n"
                ));
            }
        }
        Some(c) => {
            if !quiet {
                let reason = if request.accept.contains("ConditionalUpdateRisk") {
                    format!("accepted {} via ConditionalUpdateRisk", c.reason)
                } else {
                    c.reason.clone()
                };
                r.out.push_str(&format!(
                    "Update to {wanted} {}={}:\nImage: {image}\nRelease URL: {url}\nReason: {reason}\nMessage: {}\n",
                    c.type_,
                    c.status,
                    c.message.replace('\n', "\n  ")
                ));
            }
            issues.insert("ConditionalUpdateRisk".into());
        }
    }
    let unaccepted: Vec<&str> = (issues.iter())
        .filter(|i| !request.accept.contains(*i))
        .map(String::as_str)
        .collect();
    if !unaccepted.is_empty() {
        return Err(format!(
            "issues that apply to this cluster but which were not included in --accept: {}",
            unaccepted.join(",")
        ));
    }
    if !issues.is_empty() && !quiet {
        let all: Vec<&str> = issues.iter().map(String::as_str).collect();
        r.out.push_str(&format!(
            "Update to {wanted} has no known issues relevant to this cluster other than the accepted {}.\n",
            all.join(",")
        ));
    }
    Ok(())
}

/// One `Updates to X.Y:` section, as oc writes it through a `tabwriter` (min width 14,
/// padding 1) whose buffered rows reach the output only when flushed: a not-recommended update
/// printed in long form goes out at once, before the rows still buffered, and rows never
/// flushed (the header of a section whose shown updates are all long) are never printed.
fn minor_section(
    out: &mut String,
    major: u64,
    minor: u64,
    updates: &mut [ConditionalUpdate],
    show_outdated: bool,
) {
    out.push('\n');
    out.push_str(&format!("Updates to {major}.{minor}:\n"));
    let header = || ["  VERSION".to_string(), "ISSUES".to_string()];
    let mut pending: Vec<[String; 2]> = vec![header()];
    let flush = |out: &mut String, pending: &mut Vec<[String; 2]>| {
        out.push_str(&two_columns(pending, 14));
        pending.clear();
    };
    let (mut last_was_long, mut header_queued) = (false, true);
    updates.sort_by(|a, b| newest_first(&a.release, &b.release));
    let count = updates.len();
    for (i, update) in updates.iter().enumerate() {
        let c = not_recommended(update);
        if last_was_long || (c.is_some() && !show_outdated) {
            out.push('\n');
            if c.is_none() && !header_queued {
                pending.push(header());
                header_queued = true;
            }
            last_was_long = false;
        }
        if i == 2 && !show_outdated {
            out.push_str(&format!(
                "And {} older {major}.{minor} updates you can see with '--show-outdated-releases' or '--version VERSION'.\n",
                count - 2
            ));
            break;
        }
        let version = update.release.version.as_deref().unwrap_or("");
        match c {
            None => {
                pending.push([
                    format!("  {version}"),
                    "no known issues relevant to this cluster".into(),
                ]);
                if !show_outdated {
                    header_queued = false;
                    flush(out, &mut pending);
                }
            }
            Some(c) if show_outdated => pending.push([format!("  {version}"), c.reason]),
            Some(c) => {
                out.push_str(&format!(
                    "  Version: {version}\n  Image: {}\n",
                    update.release.image.as_deref().unwrap_or("")
                ));
                out.push_str(&format!(
                    "  Reason: {}\n  Message: {}\n",
                    c.reason,
                    c.message.trim().replace('\n', "\n  ")
                ));
                last_was_long = true;
            }
        }
    }
    if show_outdated {
        flush(out, &mut pending);
    }
}

/// oc's `notRecommendedCondition`: none for an update without risks or `Recommended=True`;
/// a stand-in `Unknown`/`NoConditions` for one with risks and no `Recommended` condition (its
/// list of names starts with one empty entry per risk, as oc's does).
fn not_recommended(update: &ConditionalUpdate) -> Option<Condition> {
    if update.risks.is_empty() {
        return None;
    }
    if let Some(c) = update.conditions.iter().find(|c| c.type_ == "Recommended") {
        return (c.status != "True").then(|| c.clone());
    }
    let mut names: Vec<&str> = vec![""; update.risks.len()];
    names.extend(update.risks.iter().map(|r| r.name.as_str()));
    names.sort_unstable();
    Some(Condition {
        type_: "Recommended".into(),
        status: "Unknown".into(),
        reason: "NoConditions".into(),
        message: format!(
            "Conditional update to {} has risks ({}), but no conditions.",
            update.release.version.as_deref().unwrap_or(""),
            names.join(", ")
        ),
        last_transition_time: never(),
        observed_generation: None,
    })
}

/// oc's `injectUpgradeableAsCondition`: `Upgradeable=False` as a risk (`UpgradeableFalse`) of
/// every update to a later minor or major version that has no risk saying the same.
fn inject_upgradeable(
    current: &str,
    condition: &ClusterOperatorStatusCondition,
    buckets: &mut BTreeMap<u64, BTreeMap<u64, Vec<ConditionalUpdate>>>,
) -> Result<(), String> {
    let current = Version::parse(current)
        .map_err(|e| format!("cannot parse SemVer version {current:?}: {e}"))?;
    let url = if current.minor <= 13 {
        format!(
            "https://docs.openshift.com/container-platform/{}.{}/updating/index.html#understanding_clusteroperator_conditiontypes_updating-clusters-overview",
            current.major, current.minor
        )
    } else {
        format!(
            "https://docs.openshift.com/container-platform/{}.{}/updating/preparing_for_updates/updating-cluster-prepare.html#cluster-upgradeable_updating-cluster-prepare",
            current.major, current.minor
        )
    };
    let message = condition.message.clone().unwrap_or_default();
    let reason = condition.reason.clone().unwrap_or_default();
    for (major, minors) in buckets.iter_mut() {
        for (minor, targets) in minors.iter_mut() {
            if *major < current.major || (*major == current.major && *minor <= current.minor) {
                continue;
            }
            for target in targets.iter_mut() {
                if target.risks.iter().any(|r| r.message.contains(&message)) {
                    continue;
                }
                target.risks.push(ConditionalUpdateRisk {
                    url: url.clone(),
                    name: "UpgradeableFalse".into(),
                    message: message.clone(),
                    matching_rules: vec![ClusterCondition {
                        type_: "Always".into(),
                        promql: None,
                    }],
                    conditions: vec![],
                });
                match target
                    .conditions
                    .iter_mut()
                    .find(|c| c.type_ == "Recommended")
                {
                    Some(c) => {
                        if c.status == "True" {
                            c.reason = reason.clone();
                            c.message = message.clone();
                        } else {
                            c.reason = "MultipleReasons".into();
                            c.message = format!("{message}\n\n{}", c.message);
                        }
                        c.status = "False".into();
                    }
                    None => target.conditions.push(Condition {
                        type_: "Recommended".into(),
                        status: "False".into(),
                        reason: reason.clone(),
                        message: message.clone(),
                        last_transition_time: never(),
                        observed_generation: None,
                    }),
                }
            }
        }
    }
    Ok(())
}

/// oc's `sortConditionalUpdatesBySemanticVersions`: newest first, unparsable ones last (by
/// text, descending).
fn newest_first(a: &Release, b: &Release) -> std::cmp::Ordering {
    let parse = |r: &Release| Version::parse(r.version.as_deref().unwrap_or("")).ok();
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp_precedence(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b.version.cmp(&a.version),
    }
}

/// The transition time of a condition made up here (never shown).
fn never() -> Time {
    Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}

fn reason_and_message(c: &ClusterOperatorStatusCondition) -> String {
    format!(
        "  Reason: {}\n  Message: {}",
        c.reason.as_deref().unwrap_or(""),
        c.message.as_deref().unwrap_or("").replace('\n', "\n  ")
    )
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::alerts::{parse_alerts, recommend_conditions};

    /// A 4.14.1 cluster on stable-4.15: three 4.14 updates, a recommended 4.15.2 and a 4.15.1
    /// that is not recommended.
    fn cluster() -> ClusterVersion {
        let release = |v: &str| json!({"version": v, "image": format!("quay.io/r@sha256:{v}"), "url": format!("https://errata/{v}")});
        serde_json::from_value(json!({
            "metadata": {"name": "version"},
            "spec": {"clusterID": "c", "channel": "stable-4.15"},
            "status": {
                "desired": {"version": "4.14.1", "image": "quay.io/r@sha256:4.14.1",
                            "channels": ["stable-4.14", "stable-4.15"]},
                "observedGeneration": 1, "versionHash": "h",
                "conditions": [
                    {"type": "Failing", "status": "False", "lastTransitionTime": "2025-01-01T00:00:00Z"},
                    {"type": "Progressing", "status": "False", "message": "Cluster version is 4.14.1", "lastTransitionTime": "2025-01-01T00:00:00Z"},
                    {"type": "RetrievedUpdates", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
                ],
                "availableUpdates": [release("4.14.3"), release("4.14.5"), release("4.14.4"), release("4.15.2")],
                "conditionalUpdates": [{
                    "release": release("4.15.1"),
                    "risks": [{"name": "ConsoleBreaks", "url": "https://bug/1", "message": "The console may break.",
                               "matchingRules": [{"type": "Always"}]}],
                    "conditions": [{"type": "Recommended", "status": "False", "reason": "ConsoleBreaks",
                                    "message": "The console may break. https://bug/1",
                                    "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                }],
            },
        }))
        .unwrap()
    }

    /// What oc prints first for [`cluster`] with [`firing_critical`].
    macro_rules! concerns {
        () => {
            concat!(
                "The following conditions found no cause for concern in updating this cluster to later releases: recommended/NodeAlerts (AsExpected), recommended/PodDisruptionBudgetAlerts (AsExpected), recommended/PodImagePullAlerts (AsExpected), recommended/UpdatePrecheckAlerts (AsExpected)\n",
                "\n",
                "The following conditions found cause for concern in updating this cluster to later releases: recommended/CriticalAlerts/KubeAPIDown/0\n",
                "\n",
                "recommended/CriticalAlerts/KubeAPIDown/0=False:\n",
                "\n",
                "  Reason: Alert:firing\n",
                "  Message: critical alert KubeAPIDown firing, suggesting significant cluster issues worth investigating. The API is down. The alert description is: KubeAPI has disappeared. <alert does not have a runbook_url annotation>\n",
                "\n",
                "Upstream update service is unset, so the cluster will use an appropriate default.\n",
                "Channel: stable-4.15 (available channels: stable-4.14, stable-4.15)\n",
            )
        };
    }

    fn firing_critical() -> Vec<AlertCondition> {
        let body = br#"{"status":"success","data":{"alerts":[{"labels":{"alertname":"KubeAPIDown","severity":"critical","namespace":"openshift-kube-apiserver"},"annotations":{"summary":"The API is down.","description":"KubeAPI has disappeared."},"state":"firing","activeAt":"2025-01-01T00:00:00Z","value":"1"}]}}"#;
        recommend_conditions(&parse_alerts(200, body).unwrap())
    }

    #[test]
    fn flags_are_checked_as_oc_checks_them() {
        assert_eq!(
            check(None, false, true).unwrap_err(),
            "--quiet can only be set when --version is set"
        );
        assert_eq!(
            check(Some("4.15.1"), true, false).unwrap_err(),
            "when --version is set, --show-outdated-releases is unnecessary"
        );
        assert!(
            check(Some("4.15"), false, false)
                .unwrap_err()
                .starts_with("cannot parse SemVer target \"4.15\"")
        );
        assert_eq!(
            check(Some("4.15.1"), false, true).unwrap(),
            Some(Version::new(4, 15, 1))
        );
    }

    #[test]
    fn updates_by_minor_newest_first_with_the_not_recommended_in_long_form() {
        let shown = recommend(&cluster(), &RecommendRequest::default(), Ok(vec![]));
        assert_eq!(
            shown.out,
            concat!(
                "Upstream update service is unset, so the cluster will use an appropriate default.\n",
                "Channel: stable-4.15 (available channels: stable-4.14, stable-4.15)\n",
                "\n",
                "Updates to 4.15:\n",
                "  VERSION     ISSUES\n",
                "  4.15.2      no known issues relevant to this cluster\n",
                "\n",
                "  Version: 4.15.1\n",
                "  Image: quay.io/r@sha256:4.15.1\n",
                "  Reason: ConsoleBreaks\n",
                "  Message: The console may break. https://bug/1\n",
                "\n",
                "Updates to 4.14:\n",
                "  VERSION     ISSUES\n",
                "  4.14.5      no known issues relevant to this cluster\n",
                "  4.14.4      no known issues relevant to this cluster\n",
                "And 1 older 4.14 updates you can see with '--show-outdated-releases' or '--version VERSION'.\n",
            )
        );
        assert_eq!((shown.err.as_str(), shown.error), ("", None));
    }

    #[test]
    fn outdated_releases_and_concerns() {
        let request = RecommendRequest {
            show_outdated: true,
            ..Default::default()
        };
        let shown = recommend(&cluster(), &request, Ok(firing_critical()));
        assert_eq!(
            shown.out,
            concat!(
                concerns!(),
                "\n",
                "Updates to 4.15:\n",
                "  VERSION     ISSUES\n",
                "  4.15.2      no known issues relevant to this cluster\n",
                "  4.15.1      ConsoleBreaks\n",
                "\n",
                "Updates to 4.14:\n",
                "  VERSION     ISSUES\n",
                "  4.14.5      no known issues relevant to this cluster\n",
                "  4.14.4      no known issues relevant to this cluster\n",
                "  4.14.3      no known issues relevant to this cluster\n",
            )
        );
        assert_eq!(shown.error, None);
        // Without the alerts, the precheck is an issue of its own.
        let shown = recommend(&cluster(), &request, Err("no Prometheus".into()));
        assert!(
            shown
                .out
                .starts_with("Failed to check for at least some preconditions: no Prometheus\n"),
            "{}",
            shown.out
        );
    }

    #[test]
    fn one_release_fails_until_its_issues_are_accepted() {
        let request = |accept: &[&str], quiet| RecommendRequest {
            version: Some(Version::new(4, 15, 1)),
            quiet,
            accept: accept.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let shown = recommend(&cluster(), &request(&[], false), Ok(firing_critical()));
        assert_eq!(
            shown.out,
            concat!(
                concerns!(),
                "\n",
                "Update to 4.15.1 Recommended=False:\n",
                "Image: quay.io/r@sha256:4.15.1\n",
                "Release URL: https://errata/4.15.1\n",
                "Reason: ConsoleBreaks\n",
                "Message: The console may break. https://bug/1\n",
            )
        );
        assert_eq!(
            shown.error.unwrap(),
            "issues that apply to this cluster but which were not included in --accept: ConditionalUpdateRisk,KubeAPIDown"
        );
        // Accepting both: the concerns are marked accepted and the command succeeds.
        let both = request(&["KubeAPIDown", "ConditionalUpdateRisk"], false);
        let shown = recommend(&cluster(), &both, Ok(firing_critical()));
        assert_eq!(shown.error, None);
        assert!(shown.out.contains("but were explicitly accepted via --accept: recommended/CriticalAlerts/KubeAPIDown/0\n"), "{}", shown.out);
        assert!(
            shown
                .out
                .contains("Reason: accepted ConsoleBreaks via ConditionalUpdateRisk\n"),
            "{}",
            shown.out
        );
        assert!(shown.out.ends_with("Update to 4.15.1 has no known issues relevant to this cluster other than the accepted ConditionalUpdateRisk,KubeAPIDown.\n"), "{}", shown.out);
        // --quiet prints nothing and names only what is not accepted.
        let shown = recommend(
            &cluster(),
            &request(&["ConditionalUpdateRisk"], true),
            Ok(firing_critical()),
        );
        assert_eq!(shown.out, "");
        assert_eq!(
            shown.error.unwrap(),
            "issues that apply to this cluster but which were not included in --accept: KubeAPIDown"
        );
        let mut other = request(&[], false);
        other.version = Some(Version::new(4, 16, 0));
        let shown = recommend(&cluster(), &other, Ok(vec![]));
        assert_eq!(
            shown.error.unwrap(),
            "no updates to 4.16 available, so cannot display context for the requested release 4.16.0"
        );
    }
}
