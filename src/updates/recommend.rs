//! The `Recommended` condition of a conditional update (upstream `evaluateConditionalUpdate`,
//! with `desiredUpdate.acceptRisks`): from whether each of its risks applies
//! ([`super::rules::RiskConditions`]) and the risks the administrator accepted. Pure.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use super::graph::ConditionalUpdateRisk;
use super::rules::{Applies, RiskConditions};

/// `Recommended`'s status, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recommendation {
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

impl Recommendation {
    pub fn is_recommended(&self) -> bool {
        self.status == "True"
    }
}

/// No risk applies.
pub const NOT_EXPOSED: &str = "NotExposedToRisks";
/// The risks that apply are all accepted.
pub const ALL_EXPOSED_RISKS_ACCEPTED: &str = "AllExposedRisksAccepted";
pub const EVALUATION_FAILED: &str = "EvaluationFailed";
pub const MULTIPLE_REASONS: &str = "MultipleReasons";
/// The reason for a risk whose name is not a valid condition reason.
pub const EXPOSED: &str = "ExposedToRisks";

/// The message of an update none of whose risks apply.
pub const RECOMMENDED_MESSAGE: &str = "The update is recommended, because none of the conditional update risks apply to this cluster.";
/// The message of an update whose applying risks are all accepted.
pub const ACCEPTED_MESSAGE: &str = "The update is recommended, because either risk does not apply to this cluster or it is accepted by cluster admins.";

/// Kubernetes' condition reason pattern.
static REASON: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$").expect("a valid pattern")
});

/// Upstream `newRecommendedStatus`: `False` wins, then `Unknown`.
fn status(now: &'static str, want: &'static str) -> &'static str {
    if now == "False" || want == "False" {
        "False"
    } else if now == "Unknown" || want == "Unknown" {
        "Unknown"
    } else {
        want
    }
}

/// Upstream `newRecommendedReason` (main): an accepted risk does not hide a reason met before
/// it, and an evaluation failure or an invalid-named risk met with the other keeps one reason.
fn reason(now: &str, want: &str) -> String {
    let keep_want = now == NOT_EXPOSED
        || (now == ALL_EXPOSED_RISKS_ACCEPTED && want != NOT_EXPOSED)
        || (now == EVALUATION_FAILED && want == EXPOSED)
        || now == want;
    let keep_now = want == NOT_EXPOSED
        || (now == EVALUATION_FAILED && want == ALL_EXPOSED_RISKS_ACCEPTED)
        || (now == EXPOSED && (want == ALL_EXPOSED_RISKS_ACCEPTED || want == EVALUATION_FAILED));
    if keep_want {
        want.into()
    } else if keep_now {
        now.into()
    } else {
        MULTIPLE_REASONS.into()
    }
}

/// Upstream `evaluateConditionalUpdate`: `False` with the risk's name as reason when a risk
/// applies and is not accepted (`MultipleReasons` for several), `Unknown`/`EvaluationFailed`
/// when one could not be evaluated, else `True` (`NotExposedToRisks`, or
/// `AllExposedRisksAccepted`). The messages of the risks that stand in the way are joined by a
/// blank line.
pub fn recommendation(
    risks: &[ConditionalUpdateRisk],
    conditions: &RiskConditions,
    accepted: &BTreeSet<String>,
) -> Recommendation {
    let mut r = Recommendation {
        status: "True",
        reason: NOT_EXPOSED.into(),
        message: RECOMMENDED_MESSAGE.into(),
    };
    let mut messages = vec![];
    for risk in risks {
        match conditions.get(&risk.name) {
            Some(Applies::NotMatch) => {}
            Some(Applies::Match) if accepted.contains(&risk.name) => {
                r.status = status(r.status, "True");
                r.reason = reason(&r.reason, ALL_EXPOSED_RISKS_ACCEPTED);
                r.message = ACCEPTED_MESSAGE.into();
            }
            Some(Applies::Match) => {
                r.status = status(r.status, "False");
                let want = if REASON.is_match(&risk.name) {
                    risk.name.as_str()
                } else {
                    EXPOSED
                };
                r.reason = reason(&r.reason, want);
                messages.push(format!("{} {}", risk.message, risk.url));
            }
            failed => {
                r.status = status(r.status, "Unknown");
                r.reason = reason(&r.reason, EVALUATION_FAILED);
                messages.push(match failed {
                    Some(Applies::EvaluationFailed(m)) => m.clone(),
                    _ => format!("failed to find risk condition for risk {}", risk.name),
                });
            }
        }
    }
    if !messages.is_empty() {
        r.message = messages.join("\n\n");
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn risk(name: &str) -> ConditionalUpdateRisk {
        ConditionalUpdateRisk {
            url: format!("https://bug/{name}"),
            name: name.into(),
            message: format!("{name} hurts."),
            matching_rules: vec![],
        }
    }

    fn rec(status: &'static str, reason: &str, message: &str) -> Recommendation {
        Recommendation {
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }

    #[test]
    fn reasons_combine_as_upstreams() {
        // (now, want, expected): upstream's Test_newRecommendedReason table.
        let (n, a, f, m, e) = (
            NOT_EXPOSED,
            ALL_EXPOSED_RISKS_ACCEPTED,
            EVALUATION_FAILED,
            MULTIPLE_REASONS,
            EXPOSED,
        );
        let cases = [
            (n, a, a),
            (n, f, f),
            (n, m, m),
            (n, e, e),
            (a, n, a),
            (a, f, f),
            (a, m, m),
            (a, e, e),
            (f, n, f),
            (f, a, f),
            (f, m, m),
            (f, e, e),
            (m, n, m),
            (m, a, m),
            (m, f, m),
            (m, e, m),
            (e, n, e),
            (e, a, e),
            (e, f, e),
            (e, m, m),
            // A risk's own name.
            (n, "A", "A"),
            ("A", "A", "A"),
            ("A", "B", m),
            ("A", n, "A"),
            (f, "A", m),
        ];
        for (now, want, expected) in cases {
            assert_eq!(reason(now, want), expected, "{now} then {want}");
        }
    }

    #[test]
    fn recommended_by_risk() {
        let conditions: RiskConditions = [
            ("A", Applies::Match),
            ("B", Applies::Match),
            ("N", Applies::NotMatch),
            ("P", Applies::EvaluationFailed("P failed".into())),
            ("not a reason!", Applies::Match),
        ]
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
        let accepted = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        let cases: Vec<(Vec<&str>, BTreeSet<String>, Recommendation)> = vec![
            (
                vec![],
                accepted(&[]),
                rec("True", NOT_EXPOSED, RECOMMENDED_MESSAGE),
            ),
            (
                vec!["N"],
                accepted(&[]),
                rec("True", NOT_EXPOSED, RECOMMENDED_MESSAGE),
            ),
            (
                vec!["A"],
                accepted(&[]),
                rec("False", "A", "A hurts. https://bug/A"),
            ),
            (
                vec!["A", "B"],
                accepted(&[]),
                rec(
                    "False",
                    MULTIPLE_REASONS,
                    "A hurts. https://bug/A\n\nB hurts. https://bug/B",
                ),
            ),
            (
                vec!["N", "A"],
                accepted(&["A"]),
                rec("True", ALL_EXPOSED_RISKS_ACCEPTED, ACCEPTED_MESSAGE),
            ),
            (
                vec!["A", "B"],
                accepted(&["A"]),
                rec("False", "B", "B hurts. https://bug/B"),
            ),
            (
                vec!["A", "B"],
                accepted(&["A", "B"]),
                rec("True", ALL_EXPOSED_RISKS_ACCEPTED, ACCEPTED_MESSAGE),
            ),
            (
                vec!["P"],
                accepted(&[]),
                rec("Unknown", EVALUATION_FAILED, "P failed"),
            ),
            (
                vec!["A", "P"],
                accepted(&[]),
                rec(
                    "False",
                    MULTIPLE_REASONS,
                    "A hurts. https://bug/A\n\nP failed",
                ),
            ),
            (
                vec!["A", "P"],
                accepted(&["A"]),
                rec("Unknown", EVALUATION_FAILED, "P failed"),
            ),
            (
                vec!["not a reason!"],
                accepted(&[]),
                rec(
                    "False",
                    EXPOSED,
                    "not a reason! hurts. https://bug/not a reason!",
                ),
            ),
            (
                vec!["missing"],
                accepted(&[]),
                rec(
                    "Unknown",
                    EVALUATION_FAILED,
                    "failed to find risk condition for risk missing",
                ),
            ),
        ];
        for (names, accepted, want) in cases {
            let risks: Vec<_> = names.iter().map(|n| risk(n)).collect();
            assert_eq!(
                recommendation(&risks, &conditions, &accepted),
                want,
                "{names:?} accepting {accepted:?}"
            );
        }
    }
}
