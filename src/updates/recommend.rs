//! The `Recommended` condition of a conditional update (upstream `evaluateConditionalUpdate`
//! and `clusterconditions.Match`). `Always` rules are evaluated here; `PromQL` rules are not
//! evaluated yet, so a risk they decide leaves the update `Unknown` (`EvaluationFailed`).

use super::graph::{ClusterCondition, ConditionalUpdateRisk};

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

/// The message of an update none of whose risks apply.
pub const RECOMMENDED_MESSAGE: &str = "The update is recommended, because none of the conditional update risks apply to this cluster.";

/// Why a `PromQL` rule has no answer in this version.
pub const PROMQL_NOT_EVALUATED: &str = "PromQL cluster conditions are not evaluated yet";

/// Upstream `clusterconditions.Match`: the first rule of a known type decides (`Always`
/// matches); the error when none can.
fn matches(rules: &[ClusterCondition]) -> Result<bool, String> {
    let mut errors = Vec::new();
    for rule in rules {
        match rule.type_.as_str() {
            "Always" => return Ok(true),
            "PromQL" => return Err(PROMQL_NOT_EVALUATED.to_string()),
            other => errors.push(format!("unrecognized condition type {other}")),
        }
    }
    Err(if errors.is_empty() {
        "no conditions".to_string()
    } else {
        errors.join("; ")
    })
}

/// Upstream `evaluateConditionalUpdate`: `False` with the risk's name as reason when a risk
/// applies (`MultipleReasons` for several), `Unknown`/`EvaluationFailed` when one cannot be
/// evaluated, else `True`/`AsExpected`. Messages are joined by a blank line.
pub fn recommendation(risks: &[ConditionalUpdateRisk]) -> Recommendation {
    let mut status = "";
    let mut reason = String::new();
    let mut messages = Vec::new();
    for risk in risks {
        match matches(&risk.matching_rules) {
            Err(e) => {
                if status != "False" {
                    status = "Unknown";
                }
                reason = if reason.is_empty() || reason == "EvaluationFailed" {
                    "EvaluationFailed".into()
                } else {
                    "MultipleReasons".into()
                };
                messages.push(format!(
                    "Exposure to {} is unknown due to an evaluation failure: {e}\n{} {}",
                    risk.name, risk.message, risk.url
                ));
            }
            Ok(true) => {
                status = "False";
                reason = if reason.is_empty() {
                    risk.name.clone()
                } else {
                    "MultipleReasons".into()
                };
                messages.push(format!("{} {}", risk.message, risk.url));
            }
            Ok(false) => {}
        }
    }
    if status.is_empty() {
        return Recommendation {
            status: "True",
            reason: "AsExpected".into(),
            message: RECOMMENDED_MESSAGE.into(),
        };
    }
    Recommendation {
        status,
        reason,
        message: messages.join("\n\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::graph::PromQlClusterCondition;

    fn risk(name: &str, rule: &str) -> ConditionalUpdateRisk {
        ConditionalUpdateRisk {
            url: format!("https://bug/{name}"),
            name: name.into(),
            message: format!("{name} hurts."),
            matching_rules: vec![ClusterCondition {
                type_: rule.into(),
                promql: (rule == "PromQL").then(|| PromQlClusterCondition {
                    promql: "group(up)".into(),
                }),
            }],
        }
    }

    #[test]
    fn recommended_by_risk() {
        let cases: Vec<(Vec<ConditionalUpdateRisk>, Recommendation)> = vec![
            (
                vec![],
                Recommendation {
                    status: "True",
                    reason: "AsExpected".into(),
                    message: RECOMMENDED_MESSAGE.into(),
                },
            ),
            (
                vec![risk("A", "Always")],
                Recommendation {
                    status: "False",
                    reason: "A".into(),
                    message: "A hurts. https://bug/A".into(),
                },
            ),
            (
                vec![risk("A", "Always"), risk("B", "Always")],
                Recommendation {
                    status: "False",
                    reason: "MultipleReasons".into(),
                    message: "A hurts. https://bug/A\n\nB hurts. https://bug/B".into(),
                },
            ),
            (
                vec![risk("P", "PromQL")],
                Recommendation {
                    status: "Unknown",
                    reason: "EvaluationFailed".into(),
                    message: format!(
                        "Exposure to P is unknown due to an evaluation failure: {PROMQL_NOT_EVALUATED}\nP hurts. https://bug/P"
                    ),
                },
            ),
            (
                vec![risk("A", "Always"), risk("P", "PromQL")],
                Recommendation {
                    status: "False",
                    reason: "MultipleReasons".into(),
                    message: format!(
                        "A hurts. https://bug/A\n\nExposure to P is unknown due to an evaluation failure: {PROMQL_NOT_EVALUATED}\nP hurts. https://bug/P"
                    ),
                },
            ),
        ];
        for (risks, want) in cases {
            assert_eq!(recommendation(&risks), want, "{risks:?}");
        }
    }
}
