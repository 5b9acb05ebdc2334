//! The `ErrorOccurred` condition on DeploymentTargets and DeploymentTargetClaims (spec A.3), and
//! how a reconcile ends, as upstream's reconcilers end: with the condition that says how it
//! went. Every reconcile of an existing object writes it, `False`/`Success` when nothing went
//! wrong, but only when type, status, reason or message changed, so a quiet object is not
//! rewritten.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::keys::{CONDITION_ERROR_OCCURRED, REASON_ERROR_OCCURRED, REASON_SUCCESS};
use super::model::{EventType, Next, Object, Outcome};
use super::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClaimStatus, DeploymentTargetStatus,
};

/// The message of an unexpected error in the claim reconciler (the binder).
pub const GENERIC_CLAIM_ERROR: &str = "unexpected internal error occurred in DTC controller";
/// The message of an unexpected error in the target reconciler (the reclaimer).
pub const GENERIC_TARGET_ERROR: &str = "unexpected internal error occurred in DT controller";

/// Upstream's `insertOrUpdateConditionsInSlice`: the conditions with `new` in place of the first
/// of its type, or appended; `None` when one of its type already has this status, reason and
/// message. A change takes `now` as its `lastTransitionTime`.
pub fn upsert(
    conditions: &[Condition],
    new: ConditionValue,
    now: Timestamp,
) -> Option<Vec<Condition>> {
    let existing = conditions.iter().position(|c| c.type_ == new.type_);
    if let Some(i) = existing {
        let old = &conditions[i];
        if old.status == new.status && old.reason == new.reason && old.message == new.message {
            return None;
        }
    }
    let condition = Condition {
        type_: new.type_.to_owned(),
        status: new.status.to_owned(),
        reason: new.reason.to_owned(),
        message: new.message,
        last_transition_time: Time(now),
        observed_generation: None,
    };
    let mut updated = conditions.to_vec();
    match existing {
        Some(i) => updated[i] = condition,
        None => updated.push(condition),
    }
    Some(updated)
}

/// A condition's type, status, reason and message (what decides whether it changed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionValue {
    pub type_: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl ConditionValue {
    /// `ErrorOccurred=True`, reason `ErrorOccurred`.
    pub fn error(message: String) -> Self {
        ConditionValue {
            type_: CONDITION_ERROR_OCCURRED,
            status: "True",
            reason: REASON_ERROR_OCCURRED,
            message,
        }
    }

    /// `ErrorOccurred=False`, reason `Success`, no message.
    pub fn success() -> Self {
        ConditionValue {
            type_: CONDITION_ERROR_OCCURRED,
            status: "False",
            reason: REASON_SUCCESS,
            message: String::new(),
        }
    }
}

/// A Warning Event that goes with a problem, recorded when the condition changes (so a problem
/// that persists is reported once, not at every reconcile).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub reason: &'static str,
    pub message: String,
}

/// How a reconcile ended, as upstream's `(result, condition, error)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing went wrong: `ErrorOccurred=False`, then `next`.
    Ok(Next),
    /// Something the user must see: `ErrorOccurred=True` with `message`; `error` is returned
    /// (retried with backoff) when upstream returns one too.
    Problem {
        message: String,
        error: Option<String>,
        warning: Warning,
    },
    /// An unexpected error: the generic condition message, and `error` returned.
    Failed { error: String, warning: Warning },
}

impl Verdict {
    fn condition(&self, generic: &str) -> ConditionValue {
        match self {
            Verdict::Ok(_) => ConditionValue::success(),
            Verdict::Problem { message, .. } => ConditionValue::error(message.clone()),
            Verdict::Failed { .. } => ConditionValue::error(generic.to_owned()),
        }
    }

    fn warning(&self) -> Option<&Warning> {
        match self {
            Verdict::Ok(_) => None,
            Verdict::Problem { warning, .. } | Verdict::Failed { warning, .. } => Some(warning),
        }
    }
}

/// An object with the `ErrorOccurred` condition.
pub trait WithConditions: Clone {
    fn conditions(&self) -> &[Condition];
    fn set_conditions(&mut self, conditions: Vec<Condition>);
    fn into_object(self) -> Object;
}

impl WithConditions for DeploymentTargetClaim {
    fn conditions(&self) -> &[Condition] {
        self.status.as_ref().map_or(&[], |s| &s.conditions)
    }
    fn set_conditions(&mut self, conditions: Vec<Condition>) {
        (self
            .status
            .get_or_insert_with(DeploymentTargetClaimStatus::default))
        .conditions = conditions;
    }
    fn into_object(self) -> Object {
        Object::Claim(self)
    }
}

impl WithConditions for DeploymentTarget {
    fn conditions(&self) -> &[Condition] {
        self.status.as_ref().map_or(&[], |s| &s.conditions)
    }
    fn set_conditions(&mut self, conditions: Vec<Condition>) {
        (self
            .status
            .get_or_insert_with(DeploymentTargetStatus::default))
        .conditions = conditions;
    }
    fn into_object(self) -> Object {
        Object::Target(self)
    }
}

/// Ends a reconcile as upstream's wrapper does: it re-reads the object (`object`: its state
/// after the writes so far, `None` when they removed it, and then nothing is written) and
/// writes the condition the verdict calls for if it changed; then the verdict's next step and
/// error. `generic` is the controller's message for unexpected errors.
pub fn conclude<T: WithConditions>(
    out: &mut Outcome,
    object: Option<T>,
    verdict: Verdict,
    generic: &str,
    now: Timestamp,
) {
    if let Some(mut object) = object {
        let changed = upsert(object.conditions(), verdict.condition(generic), now);
        if let Some(conditions) = changed {
            object.set_conditions(conditions);
            let object = object.into_object();
            if let Some(w) = verdict.warning() {
                let regarding = object.reference();
                out.event(regarding, EventType::Warning, w.reason, w.message.clone());
            }
            out.writes.push(super::model::Write::UpdateStatus(object));
        }
    }
    match verdict {
        Verdict::Ok(next) => out.next = next,
        Verdict::Problem { error, .. } => out.error = error,
        Verdict::Failed { error, .. } => out.error = Some(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::model::{Kind, ObjectRef, Write};

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str, t: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(at(t)),
            observed_generation: None,
        }
    }

    #[test]
    fn upsert_writes_only_changes_and_stamps_them() {
        let error = |m: &str| ConditionValue::error(m.into());
        let old = vec![
            condition("Other", "True", "R", "", 1),
            condition("ErrorOccurred", "True", "ErrorOccurred", "boom", 1),
        ];
        let cases: Vec<(&str, ConditionValue, Option<Vec<Condition>>)> = vec![
            ("same status, reason and message", error("boom"), None),
            (
                "another message replaces the condition in place",
                error("bang"),
                Some(vec![
                    old[0].clone(),
                    condition("ErrorOccurred", "True", "ErrorOccurred", "bang", 9),
                ]),
            ),
            (
                "success flips status and reason and clears the message",
                ConditionValue::success(),
                Some(vec![
                    old[0].clone(),
                    condition("ErrorOccurred", "False", "Success", "", 9),
                ]),
            ),
        ];
        for (name, new, want) in cases {
            assert_eq!(upsert(&old, new, at(9)), want, "{name}");
        }
        let appended = upsert(&old[..1], ConditionValue::success(), at(9)).unwrap();
        assert_eq!(
            appended[1],
            condition("ErrorOccurred", "False", "Success", "", 9)
        );
    }

    fn claim(conditions: Vec<Condition>) -> DeploymentTargetClaim {
        let mut claim = DeploymentTargetClaim::new("c", Default::default());
        claim.metadata.namespace = Some("ns".into());
        claim.set_conditions(conditions);
        claim
    }

    #[test]
    fn conclude_maps_verdicts_to_conditions_errors_and_warnings() {
        let warning = || Warning {
            reason: "BindingConflict",
            message: "detail".into(),
        };
        let cases = [
            (
                Verdict::Ok(Next::Requeue),
                Some(("False", "Success", "")),
                None,
                Next::Requeue,
            ),
            (
                Verdict::Problem {
                    message: "shown".into(),
                    error: None,
                    warning: warning(),
                },
                Some(("True", "ErrorOccurred", "shown")),
                None,
                Next::Done,
            ),
            (
                Verdict::Failed {
                    error: "real cause".into(),
                    warning: warning(),
                },
                Some(("True", "ErrorOccurred", GENERIC_CLAIM_ERROR)),
                Some("real cause"),
                Next::Done,
            ),
        ];
        for (verdict, want, error, next) in cases {
            let mut out = Outcome::done();
            let warns = !matches!(verdict, Verdict::Ok(_));
            conclude(
                &mut out,
                Some(claim(vec![])),
                verdict,
                GENERIC_CLAIM_ERROR,
                at(5),
            );
            let Some(Write::UpdateStatus(Object::Claim(written))) = out.writes.first() else {
                panic!("no status write: {out:?}");
            };
            let c = &written.conditions()[0];
            let (status, reason, message) = want.unwrap();
            assert_eq!(
                (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
                (status, reason, message)
            );
            assert_eq!(out.error.as_deref(), error);
            assert_eq!(out.next, next);
            assert_eq!(out.events.len(), usize::from(warns));
            if warns {
                assert_eq!(
                    out.events[0].regarding,
                    ObjectRef::new(Kind::DeploymentTargetClaim, "ns", "c")
                );
                assert_eq!(out.events[0].message, "detail");
            }
        }
    }

    #[test]
    fn conclude_writes_nothing_for_an_unchanged_or_removed_object() {
        let success = condition("ErrorOccurred", "False", "Success", "", 1);
        let mut out = Outcome::done();
        conclude(
            &mut out,
            Some(claim(vec![success])),
            Verdict::Ok(Next::Done),
            GENERIC_CLAIM_ERROR,
            at(5),
        );
        assert!(out.writes.is_empty());
        let mut out = Outcome::done();
        let verdict = Verdict::Failed {
            error: "e".into(),
            warning: Warning {
                reason: "R",
                message: "m".into(),
            },
        };
        conclude::<DeploymentTargetClaim>(&mut out, None, verdict, GENERIC_CLAIM_ERROR, at(5));
        assert!(out.writes.is_empty() && out.events.is_empty());
        assert_eq!(out.error.as_deref(), Some("e"));
    }
}
