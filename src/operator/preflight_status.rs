//! A preflight as the operator keeps it between passes and reports it (pure): which target it
//! is for, whether it is running, completed or failed, when it was last evaluated (continuous
//! mode re-evaluates on the resync interval), its `Preflight` condition and the risks its
//! findings become ([`SourceRisk`]s scoped to the target release, merged into
//! `status.conditionalUpdates` as the API asks). The evaluation is [`super::preflight`]'s.

use std::time::{Duration, Instant};

use super::outcome::RequestedUpdate;
use super::update_risks::{ReleaseRef, Scope, SourceApplies, SourceRisk};
use crate::preflight::Report;

/// The ClusterVersion condition type that reports the preflight.
pub const CONDITION: &str = "Preflight";
/// The `Applies` reason of a preflight's risks.
pub const APPLIES_REASON: &str = "PreflightFound";

/// Where a preflight is.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// The target release is being retrieved and verified (`Preflight=Unknown`, `Running`).
    Running,
    /// Evaluated: the findings (`Preflight=True`, `Completed`).
    Completed(Box<Report>),
    /// The target could not be retrieved, verified or loaded (`Preflight=False`, the step as
    /// reason, as `ReleaseAccepted` names it).
    Failed { reason: String, message: String },
}

/// The preflight of one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Preflight {
    pub target: RequestedUpdate,
    pub phase: Phase,
    /// When it was last evaluated (completed or failed); `None` while running.
    pub evaluated: Option<Instant>,
}

/// Whether to (re-)evaluate the preflight of `target` now: a new target, one still running or
/// failed (retried every pass, as a requested release is), or a completed one older than the
/// resync interval (continuous mode: the result follows the cluster).
pub fn due(
    previous: Option<&Preflight>,
    target: &RequestedUpdate,
    now: Instant,
    interval: Duration,
) -> bool {
    match previous {
        Some(p) if p.target == *target => match (&p.phase, p.evaluated) {
            (Phase::Completed(_), Some(at)) => now.saturating_duration_since(at) >= interval,
            _ => true,
        },
        _ => true,
    }
}

impl Preflight {
    fn target_name(&self) -> &str {
        if self.target.version.is_empty() {
            &self.target.image
        } else {
            &self.target.version
        }
    }

    /// The `Preflight` condition: status, reason, message.
    pub fn condition(&self) -> (&'static str, String, String) {
        match &self.phase {
            Phase::Running => (
                "Unknown",
                "Running".into(),
                format!(
                    "Retrieving and verifying {} ({}) to check it against the cluster",
                    self.target_name(),
                    self.target.image
                ),
            ),
            Phase::Completed(report) => ("True", "Completed".into(), report.summary()),
            Phase::Failed { reason, message } => (
                "False",
                reason.clone(),
                format!("The preflight of {} failed: {message}", self.target_name()),
            ),
        }
    }

    /// The findings as risks of the update to the target (none until completed).
    pub fn risks(&self) -> Vec<SourceRisk> {
        let Phase::Completed(report) = &self.phase else {
            return Vec::new();
        };
        let version = (report.to_version.as_deref())
            .unwrap_or(&self.target.version)
            .to_string();
        let scope = Scope::Release(ReleaseRef {
            version,
            image: self.target.image.clone(),
        });
        (report.findings.iter())
            .map(|f| SourceRisk {
                name: f.name.clone(),
                message: f.message.clone(),
                url: f.url.clone(),
                scope: scope.clone(),
                applies: Some(SourceApplies {
                    reason: APPLIES_REASON.into(),
                    message: format!("The preflight of {} found this risk.", self.target_name()),
                    since: None,
                }),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(image: &str) -> RequestedUpdate {
        RequestedUpdate {
            version: "4.18.0".into(),
            image: image.into(),
        }
    }

    #[test]
    fn re_evaluated_on_a_new_target_after_a_failure_and_on_the_interval() {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        let completed = |at| Preflight {
            target: target("a"),
            phase: Phase::Completed(Box::new(report())),
            evaluated: Some(at),
        };
        assert!(due(None, &target("a"), now, minute));
        assert!(!due(
            Some(&completed(now)),
            &target("a"),
            now + minute / 2,
            minute
        ));
        assert!(due(
            Some(&completed(now)),
            &target("a"),
            now + minute,
            minute
        ));
        assert!(due(Some(&completed(now)), &target("b"), now, minute));
        let failed = Preflight {
            phase: Phase::Failed {
                reason: "RetrievePayload".into(),
                message: "x".into(),
            },
            ..completed(now)
        };
        assert!(due(Some(&failed), &target("a"), now, minute));
    }

    fn report() -> Report {
        Report {
            from_version: Some("4.17.0".into()),
            to_version: Some("4.18.0".into()),
            implicitly_enabled_capabilities: Default::default(),
            create: vec![],
            update: vec![],
            delete: vec![],
            left_behind: vec![],
            unchanged: 0,
            live_changes: vec![],
            unevaluated_cel_rules: 0,
            findings: vec![crate::preflight::Finding {
                name: "PreflightObjectsLeftBehind".into(),
                message: "m".into(),
                url: "https://x".into(),
            }],
        }
    }

    #[test]
    fn conditions_and_risks() {
        let mut p = Preflight {
            target: target("quay.io/r@sha256:1"),
            phase: Phase::Running,
            evaluated: None,
        };
        assert_eq!(p.condition().0, "Unknown");
        assert!(p.risks().is_empty());
        p.phase = Phase::Completed(Box::new(report()));
        let (status, reason, message) = p.condition();
        assert_eq!((status, reason.as_str()), ("True", "Completed"));
        assert!(message.starts_with("Preflight of 4.18.0: 1 risk (PreflightObjectsLeftBehind)"));
        let risks = p.risks();
        assert_eq!(risks.len(), 1);
        assert_eq!(
            risks[0].scope,
            Scope::Release(ReleaseRef {
                version: "4.18.0".into(),
                image: "quay.io/r@sha256:1".into()
            })
        );
        p.phase = Phase::Failed {
            reason: "VerifyPayload".into(),
            message: "no signature".into(),
        };
        assert_eq!(
            p.condition(),
            (
                "False",
                "VerifyPayload".into(),
                "The preflight of 4.18.0 failed: no signature".into()
            )
        );
    }
}
