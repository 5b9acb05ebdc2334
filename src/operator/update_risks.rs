//! The updates part of the ClusterVersion status (upstream `evaluateConditionalUpdates`,
//! `conditionalUpdateWithRiskNamesAndRiskConditions` and `conditionalUpdateRisks` in
//! `pkg/cvo/availableupdates.go` and `pkg/cvo/status.go`): `availableUpdates`,
//! `conditionalUpdates` (each with its `riskNames`, its risks with their `Applies` condition and
//! its `Recommended` condition) and `conditionalUpdateRisks` (every risk once, by name). Pure:
//! the last retrieval with its risk evaluations, the previous status and `now` in.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::cluster::{ConditionalUpdate, ConditionalUpdateRisk, Release};
use crate::updates::graph::sort_newest_first;
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

/// `availableUpdates`, `conditionalUpdates` and `conditionalUpdateRisks` from a retrieval: each
/// risk gets its `Applies` condition from the evaluation, each conditional update its
/// `riskNames` and its `Recommended` condition, and the recommended ones join
/// `availableUpdates`. Transition times are kept while a condition's status does not change
/// (the previous status' `Recommended` by image, `Applies` by risk name). Both lists newest
/// first; `conditionalUpdateRisks` sorted by name.
pub fn updates_status(
    retrieved: &AvailableUpdates,
    previous_conditional: &[ConditionalUpdate],
    previous_risks: &[ConditionalUpdateRisk],
    now: &Time,
) -> UpdatesStatus {
    let mut available: Vec<Release> = retrieved.updates.iter().map(release).collect();
    let mut conditional = Vec::with_capacity(retrieved.conditional.len());
    for update in &retrieved.conditional {
        let r = recommendation(&update.risks, &retrieved.risks, &retrieved.accepted);
        if r.is_recommended() {
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
                let applies = applies(&retrieved.risks, &risk.name, previous_risks, now);
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
    previous: &[ConditionalUpdateRisk],
    now: &Time,
) -> Condition {
    let (status, reason, message) = match conditions.get(name) {
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
        let s = updates_status(&u, &[], &[], &t(T0));
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
        // The conditional update's own risks carry the same conditions.
        let own: Vec<_> = (s.conditional[0].risks.iter())
            .map(|r| (r.name.as_str(), applies_of(r).1))
            .collect();
        assert_eq!(own, [("B", "Match"), ("A", "NotMatch")]);
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
        let s = updates_status(&retrieved(&[]), &[], &[], &t(T0));
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
            &[],
            &t(T0),
        );
        let again = updates_status(
            &retrieved(&[("A", Applies::Match), ("B", Applies::Match)]),
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
}
