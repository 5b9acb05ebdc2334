//! Whether a risk applies to this cluster (upstream `clusterconditions.Match` and
//! `loadRiskConditions`): its matching rules in order, unrecognized types skipped, the first
//! rule that evaluates decides; `Always` matches; a `PromQL` rule is asked of Prometheus (by the
//! caller, through [`super::cache`]). Each distinct risk is evaluated once per evaluation, with
//! the definition of the newest update that carries it. Pure.

use std::collections::{BTreeMap, BTreeSet};

use super::cache::MatchResult;
use super::graph::{ClusterCondition, ConditionalUpdate, ConditionalUpdateRisk};

/// What [`RuleMatch::step`] needs next.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleStep<'a> {
    /// Evaluate this `PromQL` rule and [`RuleMatch::record`] the answer.
    Query(&'a ClusterCondition),
    /// The rules' answer.
    Done(MatchResult),
}

/// Upstream `conditionRegistry.Match` over `rules`, one `PromQL` evaluation at a time.
#[derive(Debug, Clone)]
pub struct RuleMatch<'a> {
    rules: &'a [ClusterCondition],
    next: usize,
    errors: Vec<String>,
    decided: Option<bool>,
}

impl<'a> RuleMatch<'a> {
    pub fn new(rules: &'a [ClusterCondition]) -> Self {
        RuleMatch {
            rules,
            next: 0,
            errors: vec![],
            decided: None,
        }
    }

    pub fn step(&mut self) -> RuleStep<'a> {
        if let Some(m) = self.decided {
            return RuleStep::Done(Ok(m));
        }
        while let Some(rule) = self.rules.get(self.next) {
            match rule.type_.as_str() {
                "Always" => {
                    self.decided = Some(true);
                    return RuleStep::Done(Ok(true));
                }
                "PromQL" => return RuleStep::Query(rule),
                _ => self.next += 1,
            }
        }
        match aggregate(&self.errors) {
            None => RuleStep::Done(Ok(false)),
            Some(e) => RuleStep::Done(Err(e)),
        }
    }

    /// The answer for the rule [`RuleStep::Query`] named.
    pub fn record(&mut self, result: MatchResult) {
        match result {
            Ok(m) => self.decided = Some(m),
            Err(e) => self.errors.push(e),
        }
        self.next += 1;
    }
}

/// The rules' answer when no `PromQL` rule can be asked (`PromQL` answered by `promql`).
pub fn match_rules(
    rules: &[ClusterCondition],
    mut promql: impl FnMut(&ClusterCondition) -> MatchResult,
) -> MatchResult {
    let mut m = RuleMatch::new(rules);
    loop {
        match m.step() {
            RuleStep::Done(result) => return result,
            RuleStep::Query(rule) => m.record(promql(rule)),
        }
    }
}

/// Kubernetes' `NewAggregate(errs).Error()`: none, the one, or `[a, b]` without repeats.
fn aggregate(errors: &[String]) -> Option<String> {
    let mut seen: Vec<&str> = vec![];
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => None,
        [one] => Some(one.to_string()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

/// Whether a risk applies (upstream's `Applies` risk condition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    /// `True`, `Match`.
    Match,
    /// `False`, `NotMatch`.
    NotMatch,
    /// `Unknown`, `EvaluationFailed`, with upstream's message.
    EvaluationFailed(String),
}

impl Applies {
    /// From the rules' answer for `risk`.
    pub fn from_result(risk: &ConditionalUpdateRisk, result: MatchResult) -> Self {
        match result {
            Ok(true) => Applies::Match,
            Ok(false) => Applies::NotMatch,
            Err(e) => Applies::EvaluationFailed(unknown_exposure_message(risk, &e)),
        }
    }
}

/// Upstream `unknownExposureMessage`.
pub fn unknown_exposure_message(risk: &ConditionalUpdateRisk, error: &str) -> String {
    let name = &risk.name;
    format!(
        "Could not evaluate exposure to update risk {name} ({error})\n  {name} description: {}\n  {name} URL: {}",
        risk.message, risk.url
    )
}

/// The answer for every risk, by name.
pub type RiskConditions = BTreeMap<String, Applies>;

/// Upstream `loadRiskVersions` + `risksInOrder`: each distinct risk once, defined as the newest
/// update carrying it defines it, newest first (names break ties).
pub fn risks_in_order(conditional: &[ConditionalUpdate]) -> Vec<&ConditionalUpdateRisk> {
    let mut newest: BTreeMap<&str, (semver::Version, &ConditionalUpdateRisk)> = BTreeMap::new();
    for update in conditional {
        let Ok(version) = semver::Version::parse(&update.release.version) else {
            continue;
        };
        for risk in &update.risks {
            let newer = newest
                .get(risk.name.as_str())
                .is_none_or(|(v, _)| version.cmp_precedence(v).is_gt());
            if newer {
                newest.insert(&risk.name, (version.clone(), risk));
            }
        }
    }
    // BTreeMap order: by name; the stable sort keeps it among equal versions.
    let mut ordered: Vec<_> = newest.into_values().collect();
    ordered.sort_by(|a, b| b.0.cmp_precedence(&a.0));
    ordered.into_iter().map(|(_, r)| r).collect()
}

/// Whether every risk named in `conditional` has an answer that is not a failure: upstream
/// evaluates again until every conditional update is `Recommended` `True` or `False`.
pub fn settled(conditional: &[ConditionalUpdate], conditions: &RiskConditions) -> bool {
    let names: BTreeSet<&str> = (conditional.iter())
        .flat_map(|u| &u.risks)
        .map(|r| r.name.as_str())
        .collect();
    names.iter().all(|n| {
        conditions
            .get(*n)
            .is_some_and(|a| !matches!(a, Applies::EvaluationFailed(_)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::graph::{PromQlClusterCondition, Target};

    fn rule(type_: &str, q: &str) -> ClusterCondition {
        ClusterCondition {
            type_: type_.into(),
            promql: (!q.is_empty()).then(|| PromQlClusterCondition { promql: q.into() }),
        }
    }

    #[test]
    fn the_first_rule_that_evaluates_decides() {
        let answers = |q: &str| -> MatchResult {
            match q {
                "yes" => Ok(true),
                "no" => Ok(false),
                other => Err(format!("cannot {other}")),
            }
        };
        let promql = |r: &ClusterCondition| answers(&r.promql.as_ref().unwrap().promql);
        let cases: Vec<(Vec<ClusterCondition>, MatchResult)> = vec![
            (vec![], Ok(false)),
            (vec![rule("Always", "")], Ok(true)),
            (vec![rule("Unknown", ""), rule("PromQL", "no")], Ok(false)),
            (vec![rule("Unknown", "")], Ok(false)),
            (vec![rule("PromQL", "a"), rule("PromQL", "yes")], Ok(true)),
            (vec![rule("PromQL", "a"), rule("Always", "")], Ok(true)),
            (vec![rule("PromQL", "no"), rule("Always", "")], Ok(false)),
            (vec![rule("PromQL", "a")], Err("cannot a".into())),
            (
                vec![
                    rule("PromQL", "a"),
                    rule("PromQL", "b"),
                    rule("PromQL", "a"),
                ],
                Err("[cannot a, cannot b]".into()),
            ),
        ];
        for (rules, want) in cases {
            assert_eq!(match_rules(&rules, promql), want, "{rules:?}");
        }
    }

    fn update(version: &str, risks: &[(&str, &str)]) -> ConditionalUpdate {
        ConditionalUpdate {
            release: Target {
                version: version.into(),
                ..Default::default()
            },
            risks: risks
                .iter()
                .map(|(name, message)| ConditionalUpdateRisk {
                    name: name.to_string(),
                    message: message.to_string(),
                    url: format!("https://bug/{name}"),
                    matching_rules: vec![rule("Always", "")],
                })
                .collect(),
        }
    }

    #[test]
    fn each_risk_once_newest_definition_first() {
        let conditional = vec![
            update("4.18.2", &[("B", "new B"), ("A", "A")]),
            update("4.18.3", &[("C", "C")]),
            update("4.18.1", &[("B", "old B"), ("D", "D")]),
        ];
        let got: Vec<_> = risks_in_order(&conditional)
            .iter()
            .map(|r| (r.name.as_str(), r.message.as_str()))
            .collect();
        assert_eq!(got, [("C", "C"), ("A", "A"), ("B", "new B"), ("D", "D")]);
    }

    #[test]
    fn failures_read_as_upstream() {
        let risk = &update("4.18.1", &[("R", "It hurts.")]).risks[0];
        assert_eq!(
            Applies::from_result(risk, Err("executing PromQL query: down".into())),
            Applies::EvaluationFailed(
                "Could not evaluate exposure to update risk R (executing PromQL query: down)\n  R description: It hurts.\n  R URL: https://bug/R".into()
            )
        );
        let conditional = vec![update("4.18.1", &[("R", "")])];
        let mut conditions = RiskConditions::new();
        assert!(!settled(&conditional, &conditions));
        conditions.insert("R".into(), Applies::EvaluationFailed("x".into()));
        assert!(!settled(&conditional, &conditions));
        conditions.insert("R".into(), Applies::NotMatch);
        assert!(settled(&conditional, &conditions));
    }
}
