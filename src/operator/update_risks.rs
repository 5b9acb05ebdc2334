//! The updates part of the ClusterVersion status (upstream `evaluateConditionalUpdates`,
//! `conditionalUpdateWithRiskNamesAndRiskConditions` and `conditionalUpdateRisks` in
//! `pkg/cvo/availableupdates.go` and `pkg/cvo/status.go`): `availableUpdates`,
//! `conditionalUpdates` (each with its `riskNames`, its risks with their `Applies` condition and
//! its `Recommended` condition) and `conditionalUpdateRisks` (every risk once, by name). Pure:
//! the last retrieval with its risk evaluations, the previous status and `now` in.

use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::upgradeable::UpgradeRisk;
use crate::cluster::{ConditionalUpdate, ConditionalUpdateRisk, Release};
use crate::updates::alerts::AlertRisk;
use crate::updates::graph::{self, ClusterCondition, sort_newest_first};
use crate::updates::rules::{Applies, RiskConditions};
use crate::updates::{AvailableUpdates, Target, recommendation};

/// The `Applies` condition type of a risk.
pub const APPLIES: &str = "Applies";
/// The `Recommended` condition type of a conditional update.
pub const RECOMMENDED: &str = "Recommended";
/// The `Applies` reason of a risk no evaluation answered for (upstream's "should never
/// happen").
pub const NO_RISK_CONDITION: &str = "InternalErrorFoundNoRiskCondition";

/// The three update fields of the status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdatesStatus {
    /// `availableUpdates`: `None` (upstream's `null`) when empty.
    pub available: Option<Vec<Release>>,
    pub conditional: Vec<ConditionalUpdate>,
    /// `conditionalUpdateRisks`.
    pub risks: Vec<ConditionalUpdateRisk>,
}

/// A risk a source in the cluster reports (upstream's `risk.Source`s besides the update
/// service: the `Alert` source's firing alerts, the `Upgradeable` sources' reasons). It always
/// applies (matching rule `Always`) to the updates of its [`Scope`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRisk {
    pub name: String,
    pub message: String,
    pub url: String,
    pub scope: Scope,
    /// The source's own `Applies` reason and message, and since when (an alert's `Alert:firing`,
    /// from when it became active); `None`: `Match`.
    pub applies: Option<SourceApplies>,
}

/// The updates a [`SourceRisk`] applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every update (an alert).
    All,
    /// Updates to another minor or major version, and those whose version does not parse
    /// (upstream `MajorAndMinorUpdates`): the `Upgradeable` sources' risks.
    MajorOrMinor,
    /// The update to this one release (a preflight's findings): it becomes a conditional update
    /// when the update service does not offer it.
    Release(ReleaseRef),
}

/// A release a [`Scope::Release`] risk is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseRef {
    pub version: String,
    pub image: String,
}

/// A source's own `Applies` condition (status `True`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceApplies {
    pub reason: String,
    pub message: String,
    pub since: Option<Timestamp>,
}

/// The risks the cluster's sources report (upstream's `Aggregate(Alert, Upgradeable)`): the
/// firing alerts' for every update, the `Upgradeable` sources' that join updates for the
/// updates to another minor or major version.
pub fn source_risks(upgradeable: &[UpgradeRisk], alerts: &[AlertRisk]) -> Vec<SourceRisk> {
    let alerts = alerts.iter().map(|a| SourceRisk {
        name: a.name.clone(),
        message: a.message.clone(),
        url: a.url.clone(),
        scope: Scope::All,
        applies: Some(SourceApplies {
            reason: a.reason.clone(),
            message: a.condition_message.clone(),
            since: a.since,
        }),
    });
    let upgradeable = (upgradeable.iter())
        .filter(|r| r.joins_updates)
        .map(|r| SourceRisk {
            name: r.name.clone(),
            message: r.message.clone(),
            url: r.url.clone(),
            scope: Scope::MajorOrMinor,
            applies: None,
        });
    let mut risks: Vec<SourceRisk> = Vec::new();
    // As upstream's aggregate: the first of a name wins.
    for risk in alerts.chain(upgradeable) {
        if !risks.iter().any(|r| r.name == risk.name) {
            risks.push(risk);
        }
    }
    risks
}

/// Upstream's `validName` of a merged risk.
static VALID_NAME: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new("^[A-Z][A-Za-z0-9.-]*$").expect("a valid pattern"));

/// What the update service offers, with the sources' risks merged in (upstream `risk.Merge`):
/// a recommended update a risk applies to becomes a conditional update with that risk; a
/// conditional update gains it unless it has a risk of that name. Risks whose names are not
/// CamelCase (`^[A-Z][A-Za-z0-9.-]*$`) are left out, as upstream refuses them. Each update's
/// risks end sorted by name.
pub fn merge_source_risks(
    retrieved: &AvailableUpdates,
    sources: &[SourceRisk],
    current_version: &str,
) -> (Vec<Target>, Vec<graph::ConditionalUpdate>) {
    let mut updates = retrieved.updates.clone();
    let mut conditional = retrieved.conditional.clone();
    // A release a risk is scoped to that the update service does not offer is offered with
    // that risk (a preflight's target, which the service may not know).
    for source in sources {
        if let Scope::Release(target) = &source.scope
            && !(updates.iter().any(|u| u.version == target.version))
            && !(conditional
                .iter()
                .any(|u| u.release.version == target.version))
        {
            conditional.push(graph::ConditionalUpdate {
                release: Target {
                    version: target.version.clone(),
                    image: target.image.clone(),
                    url: None,
                    channels: Vec::new(),
                },
                risks: Vec::new(),
            });
        }
    }
    let versions: Vec<String> = (updates.iter().map(|u| u.version.clone()))
        .chain(conditional.iter().map(|u| u.release.version.clone()))
        .collect();
    let current = semver::Version::parse(current_version).ok();
    let mut sources: Vec<&SourceRisk> = (sources.iter())
        .filter(|r| VALID_NAME.is_match(&r.name))
        .collect();
    sources.sort_by(|a, b| a.name.cmp(&b.name));
    for source in sources {
        let risk = graph::ConditionalUpdateRisk {
            url: source.url.clone(),
            name: source.name.clone(),
            message: source.message.clone(),
            matching_rules: vec![ClusterCondition {
                type_: "Always".into(),
                promql: None,
            }],
        };
        let scoped = versions.iter().filter(|v| match &source.scope {
            Scope::All => true,
            Scope::MajorOrMinor => major_or_minor(current.as_ref(), v),
            Scope::Release(target) => **v == target.version,
        });
        for version in scoped {
            if let Some(i) = updates.iter().position(|u| &u.version == version) {
                let release = updates.remove(i);
                conditional.push(graph::ConditionalUpdate {
                    release,
                    risks: vec![risk.clone()],
                });
                continue;
            }
            for update in conditional
                .iter_mut()
                .filter(|u| &u.release.version == version)
            {
                if !update.risks.iter().any(|r| r.name == risk.name) {
                    update.risks.push(risk.clone());
                }
            }
        }
    }
    for update in &mut conditional {
        update.risks.sort_by(|a, b| a.name.cmp(&b.name));
    }
    sort_newest_first(&mut conditional, |u| &u.release.version);
    (updates, conditional)
}

/// Upstream `MajorAndMinorUpdates`' test of one version (an unparsable one counts).
fn major_or_minor(current: Option<&semver::Version>, version: &str) -> bool {
    let (Some(current), Ok(target)) = (current, semver::Version::parse(version)) else {
        return true;
    };
    current.major < target.major || (current.major == target.major && current.minor < target.minor)
}

/// `availableUpdates`, `conditionalUpdates` and `conditionalUpdateRisks` from a retrieval and
/// the sources' risks ([`merge_source_risks`]): each risk gets its `Applies` condition (the
/// evaluation's; a source's risk always applies, with the source's own reason when it has one),
/// each conditional update its `riskNames` and its `Recommended` condition, and the
/// recommended ones join `availableUpdates`. Transition times are kept while a condition's
/// status does not change (the previous status' `Recommended` by image, `Applies` by risk
/// name). Both lists newest first; `conditionalUpdateRisks` sorted by name.
pub fn updates_status(
    retrieved: &AvailableUpdates,
    sources: &[SourceRisk],
    current_version: &str,
    previous_conditional: &[ConditionalUpdate],
    previous_risks: &[ConditionalUpdateRisk],
    now: &Time,
) -> UpdatesStatus {
    // A release only a source's risk made an update (a preflight's target) is never
    // recommended by the update service: it is not an available update, even with every risk
    // accepted.
    let served: std::collections::BTreeSet<&str> = (retrieved.updates.iter())
        .map(|u| u.version.as_str())
        .chain(
            retrieved
                .conditional
                .iter()
                .map(|u| u.release.version.as_str()),
        )
        .collect();
    let (updates, offered) = merge_source_risks(retrieved, sources, current_version);
    let mut evaluated = retrieved.risks.clone();
    for source in sources {
        evaluated
            .entry(source.name.clone())
            .or_insert(Applies::Match);
    }
    let mut available: Vec<Release> = updates.iter().map(release).collect();
    let mut conditional = Vec::with_capacity(offered.len());
    for update in &offered {
        let r = recommendation(&update.risks, &evaluated, &retrieved.accepted);
        if r.is_recommended() && served.contains(update.release.version.as_str()) {
            available.push(release(&update.release));
        }
        let since = previous_conditional
            .iter()
            .filter(|p| p.release.image.as_deref() == Some(update.release.image.as_str()))
            .flat_map(|p| &p.conditions)
            .find(|c| c.type_ == RECOMMENDED && c.status == r.status)
            .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
        let risks: Vec<ConditionalUpdateRisk> = (update.risks.iter())
            .map(|risk| {
                let mut risk = ConditionalUpdateRisk::from(risk);
                let own = (sources.iter())
                    .find(|s| s.name == risk.name)
                    .and_then(|s| s.applies.as_ref());
                let applies = applies(&evaluated, &risk.name, own, previous_risks, now);
                risk.conditions.push(applies);
                risk
            })
            .collect();
        let mut risk_names: Vec<String> = risks.iter().map(|r| r.name.clone()).collect();
        risk_names.sort();
        risk_names.dedup();
        conditional.push(ConditionalUpdate {
            release: release(&update.release),
            risk_names,
            risks,
            conditions: vec![Condition {
                type_: RECOMMENDED.into(),
                status: r.status.into(),
                reason: r.reason,
                message: r.message,
                last_transition_time: since,
                observed_generation: None,
            }],
        });
    }
    sort_newest_first(&mut available, |r| r.version.as_deref().unwrap_or(""));
    let risks = conditional_update_risks(&conditional);
    UpdatesStatus {
        available: Some(available).filter(|a| !a.is_empty()),
        conditional,
        risks,
    }
}

/// Upstream `conditionalUpdateRisks`: every risk of `conditional` once (the first met, in the
/// updates' order), sorted by name.
pub fn conditional_update_risks(conditional: &[ConditionalUpdate]) -> Vec<ConditionalUpdateRisk> {
    let mut risks: Vec<ConditionalUpdateRisk> = Vec::new();
    for risk in conditional.iter().flat_map(|u| &u.risks) {
        if !risks.iter().any(|r| r.name == risk.name) {
            risks.push(risk.clone());
        }
    }
    risks.sort_by(|a, b| a.name.cmp(&b.name));
    risks
}

/// The `riskNames` of the conditional update to `image`, when it is one (upstream's
/// `riskNamesForDesiredImage`).
pub fn risk_names_of<'a>(conditional: &'a [ConditionalUpdate], image: &str) -> &'a [String] {
    (conditional.iter())
        .find(|u| u.release.image.as_deref() == Some(image))
        .map_or(&[], |u| u.risk_names.as_slice())
}

/// The history entry's `acceptedRisks` of a requested release (upstream `updateClusterVersionStatus`):
/// what loading it accepted (precondition warnings, forced failures), and, when the release is
/// a conditional update, the names of its risks.
pub fn accepted_risks_message(loaded: &str, image: &str, risk_names: &[String]) -> String {
    if risk_names.is_empty() {
        return loaded.to_string();
    }
    let names = risk_names.join(",");
    if loaded.is_empty() {
        format!(
            "The target release {image} is exposed to the risks [{names}] which were all explicitly accepted by the cluster administrator."
        )
    } else {
        format!(
            "{loaded}; It is exposed to the risks [{names}] which were all explicitly accepted by the cluster administrator."
        )
    }
}

/// The `Applies` condition of the risk `name` (upstream `loadRiskConditions`), its transition
/// time kept from the previous status while its status is the same.
fn applies(
    conditions: &RiskConditions,
    name: &str,
    own: Option<&SourceApplies>,
    previous: &[ConditionalUpdateRisk],
    now: &Time,
) -> Condition {
    let evaluated = conditions.get(name);
    if let (Some(Applies::Match), Some(own)) = (evaluated, own) {
        let at = own
            .since
            .and_then(|t| Timestamp::from_second(t.as_second()).ok());
        return Condition {
            type_: APPLIES.into(),
            status: "True".into(),
            reason: own.reason.clone(),
            message: own.message.clone(),
            last_transition_time: at.map_or_else(|| now.clone(), Time),
            observed_generation: None,
        };
    }
    let (status, reason, message) = match evaluated {
        Some(Applies::Match) => ("True", "Match", String::new()),
        Some(Applies::NotMatch) => ("False", "NotMatch", String::new()),
        Some(Applies::EvaluationFailed(message)) => {
            ("Unknown", "EvaluationFailed", message.clone())
        }
        None => (
            "Unknown",
            NO_RISK_CONDITION,
            format!("failed to find risk condition for risk {name}"),
        ),
    };
    let since = (previous.iter())
        .filter(|r| r.name == name)
        .flat_map(|r| &r.conditions)
        .find(|c| c.type_ == APPLIES && c.status == status)
        .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
    Condition {
        type_: APPLIES.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time: since,
        observed_generation: None,
    }
}

fn release(t: &Target) -> Release {
    Release {
        version: Some(t.version.clone()),
        image: Some(t.image.clone()),
        url: t.url.clone(),
        channels: t.channels.clone(),
        architecture: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::graph::{ClusterCondition, ConditionalUpdateRisk as GraphRisk};
    use crate::updates::{ConditionalUpdate as Offered, Key};

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    const T0: &str = "2025-01-01T00:00:00Z";
    const T1: &str = "2025-01-01T00:05:00Z";

    fn target(v: &str) -> Target {
        Target {
            version: v.into(),
            image: format!("img@{v}"),
            ..Target::default()
        }
    }

    fn risk(name: &str) -> GraphRisk {
        GraphRisk {
            url: format!("https://bug/{name}"),
            name: name.into(),
            message: format!("{name} hurts."),
            matching_rules: vec![ClusterCondition {
                type_: "Always".into(),
                promql: None,
            }],
        }
    }

    fn retrieved(risks: &[(&str, Applies)]) -> AvailableUpdates {
        AvailableUpdates {
            key: Key::default(),
            attempted: std::time::Instant::now(),
            updates: vec![target("4.18.1")],
            conditional: vec![
                Offered {
                    release: target("4.18.3"),
                    risks: vec![risk("B"), risk("A")],
                },
                Offered {
                    release: target("4.18.2"),
                    risks: vec![risk("A"), risk("C")],
                },
            ],
            failure: None,
            risks: (risks.iter())
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect(),
            cache: Default::default(),
            accepted: Default::default(),
            alerts: Default::default(),
        }
    }

    fn applies_of(risk: &ConditionalUpdateRisk) -> (&str, &str, &str) {
        let c = &risk.conditions[0];
        assert_eq!(c.type_, APPLIES);
        (c.status.as_str(), c.reason.as_str(), c.message.as_str())
    }

    #[test]
    fn risks_carry_applies_and_updates_their_names() {
        let u = retrieved(&[
            ("A", Applies::NotMatch),
            ("B", Applies::Match),
            ("C", Applies::EvaluationFailed("C failed".into())),
        ]);
        let s = updates_status(&u, &[], "4.18.0", &[], &[], &t(T0));
        assert_eq!(s.conditional[0].risk_names, ["A", "B"]);
        assert_eq!(s.conditional[1].risk_names, ["A", "C"]);
        let names: Vec<_> = s.risks.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "C"]);
        let by_name: Vec<_> = s.risks.iter().map(applies_of).collect();
        assert_eq!(
            by_name,
            [
                ("False", "NotMatch", ""),
                ("True", "Match", ""),
                ("Unknown", "EvaluationFailed", "C failed"),
            ]
        );
        // The conditional update's own risks carry the same conditions, sorted by name.
        let own: Vec<_> = (s.conditional[0].risks.iter())
            .map(|r| (r.name.as_str(), applies_of(r).1))
            .collect();
        assert_eq!(own, [("A", "NotMatch"), ("B", "Match")]);
        // 4.18.2 is Unknown (C), 4.18.3 False (B): neither joins the available updates.
        let available: Vec<_> = (s.available.iter().flatten())
            .map(|r| r.version.as_deref().unwrap())
            .collect();
        assert_eq!(available, ["4.18.1"]);
        assert_eq!(risk_names_of(&s.conditional, "img@4.18.3"), ["A", "B"]);
        assert!(risk_names_of(&s.conditional, "img@4.18.1").is_empty());
    }

    #[test]
    fn a_risk_without_an_answer_is_an_internal_error() {
        let s = updates_status(&retrieved(&[]), &[], "4.18.0", &[], &[], &t(T0));
        assert_eq!(
            applies_of(&s.risks[0]),
            (
                "Unknown",
                NO_RISK_CONDITION,
                "failed to find risk condition for risk A"
            )
        );
    }

    #[test]
    fn transition_times_move_only_with_the_status() {
        let first = updates_status(
            &retrieved(&[("A", Applies::NotMatch), ("B", Applies::Match)]),
            &[],
            "4.18.0",
            &[],
            &[],
            &t(T0),
        );
        let again = updates_status(
            &retrieved(&[("A", Applies::Match), ("B", Applies::Match)]),
            &[],
            "4.18.0",
            &first.conditional,
            &first.risks,
            &t(T1),
        );
        let since = |s: &UpdatesStatus, name: &str| {
            (s.risks.iter().find(|r| r.name == name))
                .map(|r| r.conditions[0].last_transition_time.clone())
                .unwrap()
        };
        assert_eq!(since(&again, "A"), t(T1));
        assert_eq!(since(&again, "B"), t(T0));
    }

    #[test]
    fn accepted_risks_name_the_risks_of_the_target() {
        let names = ["A".to_string(), "B".to_string()];
        assert_eq!(accepted_risks_message("", "img@1", &[]), "");
        assert_eq!(accepted_risks_message("warn", "img@1", &[]), "warn");
        assert_eq!(
            accepted_risks_message("", "img@1", &names),
            "The target release img@1 is exposed to the risks [A,B] which were all explicitly accepted by the cluster administrator."
        );
        assert_eq!(
            accepted_risks_message("warn", "img@1", &names),
            "warn; It is exposed to the risks [A,B] which were all explicitly accepted by the cluster administrator."
        );
    }

    fn alert(name: &str) -> AlertRisk {
        AlertRisk {
            name: name.into(),
            message: format!("{name} fires."),
            url: format!("https://runbook/{name}"),
            reason: "Alert:firing".into(),
            condition_message: format!("critical alert {name} firing, ..."),
            since: Some("2025-01-01T00:01:02.5Z".parse().unwrap()),
        }
    }

    fn upgrade_risk(name: &str, joins_updates: bool) -> UpgradeRisk {
        UpgradeRisk {
            name: name.into(),
            message: format!("{name} blocks."),
            url: "https://docs".into(),
            joins_updates,
        }
    }

    #[test]
    fn source_risks_join_their_updates() {
        // 4.18.1 recommended, 4.18.2 and 4.18.3 conditional; 4.19.0 a minor update.
        let mut u = retrieved(&[
            ("A", Applies::NotMatch),
            ("B", Applies::NotMatch),
            ("C", Applies::NotMatch),
        ]);
        u.updates.push(target("4.19.0"));
        u.conditional[1].risks = vec![risk("C"), risk("A")];
        let sources = source_risks(
            &[
                upgrade_risk("ClusterOperatorUpgradeable-x", true),
                upgrade_risk("ResourceDeletionInProgressUnknown", false),
            ],
            &[alert("KubeNodeNotReady"), alert("lowercase")],
        );
        let names: Vec<_> = sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "KubeNodeNotReady",
                "lowercase",
                "ClusterOperatorUpgradeable-x"
            ]
        );
        let (updates, conditional) = merge_source_risks(&u, &sources, "4.18.0");
        assert!(updates.is_empty(), "{updates:?}");
        let shape: Vec<(&str, Vec<&str>)> = (conditional.iter())
            .map(|c| {
                let names = c.risks.iter().map(|r| r.name.as_str()).collect();
                (c.release.version.as_str(), names)
            })
            .collect();
        assert_eq!(
            shape,
            [
                (
                    "4.19.0",
                    vec!["ClusterOperatorUpgradeable-x", "KubeNodeNotReady"]
                ),
                ("4.18.3", vec!["A", "B", "KubeNodeNotReady"]),
                ("4.18.2", vec!["A", "C", "KubeNodeNotReady"]),
                ("4.18.1", vec!["KubeNodeNotReady"]),
            ]
        );

        // In the status: the alert applies with its own reason and since its alert fired; the
        // updates it joins are not recommended, under its name.
        let s = updates_status(&u, &sources, "4.18.0", &[], &[], &t(T0));
        assert_eq!(s.available, None);
        let alert_risk = s
            .risks
            .iter()
            .find(|r| r.name == "KubeNodeNotReady")
            .unwrap();
        assert_eq!(
            applies_of(alert_risk),
            (
                "True",
                "Alert:firing",
                "critical alert KubeNodeNotReady firing, ..."
            )
        );
        assert_eq!(
            alert_risk.conditions[0].last_transition_time,
            t("2025-01-01T00:01:02Z")
        );
        let upgradeable = (s.risks.iter())
            .find(|r| r.name == "ClusterOperatorUpgradeable-x")
            .unwrap();
        assert_eq!(applies_of(upgradeable), ("True", "Match", ""));
        let recommended = |version: &str| {
            let update = (s.conditional.iter())
                .find(|c| c.release.version.as_deref() == Some(version))
                .unwrap();
            let c = &update.conditions[0];
            (c.status.clone(), c.reason.clone(), c.message.clone())
        };
        assert_eq!(
            recommended("4.18.1"),
            (
                "False".into(),
                "KubeNodeNotReady".into(),
                "KubeNodeNotReady fires. https://runbook/KubeNodeNotReady".into()
            )
        );
        assert_eq!(recommended("4.19.0").1, "MultipleReasons");

        // Accepting the alert's risk recommends the patch update again.
        u.accepted.insert("KubeNodeNotReady".into());
        let s = updates_status(&u, &sources, "4.18.0", &[], &[], &t(T0));
        let available: Vec<_> = (s.available.iter().flatten())
            .map(|r| r.version.as_deref().unwrap())
            .collect();
        assert_eq!(available, ["4.18.3", "4.18.2", "4.18.1"]);
    }
}
