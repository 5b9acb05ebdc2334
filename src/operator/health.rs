//! `checkOperatorHealth` (spec §5.4): whether a ClusterOperator the payload ships reports what
//! the payload expects. Pure.

use super::apply::Effect;
use crate::cluster::{ClusterOperator, ClusterOperatorStatusCondition};

/// Why a ClusterOperator is not yet what the payload expects. `Display` is the upstream
/// `UpdateError` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperatorHealthError {
    #[error("Cluster operator {name} does not declare expected versions")]
    NoVersions { name: String },
    #[error("clusteroperators.config.openshift.io \"{name}\" not found")]
    NotFound { name: String },
    #[error("Cluster operator {name} is not available")]
    NotAvailable { name: String, nested: String },
    #[error("Cluster operator {name} is degraded")]
    Degraded { name: String, nested: String },
    #[error("Cluster operator {name} is updating versions")]
    Updating { name: String, nested: String },
}

impl OperatorHealthError {
    /// The upstream `UpdateError.Reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            OperatorHealthError::NoVersions { .. } => "ClusterOperatorNoVersions",
            OperatorHealthError::NotFound { .. } => "UpdatePayloadResourceNotFound",
            OperatorHealthError::NotAvailable { .. } => "ClusterOperatorNotAvailable",
            OperatorHealthError::Degraded { .. } => "ClusterOperatorDegraded",
            OperatorHealthError::Updating { .. } => "ClusterOperatorUpdating",
        }
    }

    /// How the error weighs on the pass (spec §5.4): degraded is only reported while
    /// installing and fails after an interval otherwise; updating versions is only waiting.
    pub fn effect(&self, initializing: bool) -> Effect {
        match self {
            OperatorHealthError::Degraded { .. } if initializing => Effect::Report,
            OperatorHealthError::Degraded { .. } => Effect::FailAfterInterval,
            OperatorHealthError::Updating { .. } => Effect::None,
            _ => Effect::Fail,
        }
    }

    /// The operator's name.
    pub fn name(&self) -> &str {
        match self {
            OperatorHealthError::NoVersions { name }
            | OperatorHealthError::NotFound { name }
            | OperatorHealthError::NotAvailable { name, .. }
            | OperatorHealthError::Degraded { name, .. }
            | OperatorHealthError::Updating { name, .. } => name,
        }
    }

    /// The nested error text (upstream `Nested`).
    pub fn nested(&self) -> String {
        match self {
            OperatorHealthError::NotAvailable { nested, .. }
            | OperatorHealthError::Degraded { nested, .. }
            | OperatorHealthError::Updating { nested, .. } => nested.clone(),
            other => other.to_string(),
        }
    }
}

fn find<'a>(
    conditions: &'a [ClusterOperatorStatusCondition],
    type_: &str,
) -> Option<&'a ClusterOperatorStatusCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// `checkOperatorHealth(expected, live)`: `expected` is the payload's ClusterOperator manifest,
/// `live` the cluster's object (`None`: not found); `initializing` is the Initializing state.
pub fn check_cluster_operator(
    expected: &ClusterOperator,
    live: Option<&ClusterOperator>,
    initializing: bool,
) -> Result<(), OperatorHealthError> {
    let name = expected.metadata.name.clone().unwrap_or_default();
    let versions = expected
        .status
        .as_ref()
        .map(|s| s.versions.as_slice())
        .unwrap_or_default();
    if versions.is_empty() {
        return Err(OperatorHealthError::NoVersions { name });
    }
    let Some(live) = live else {
        return Err(OperatorHealthError::NotFound { name });
    };
    let status = live.status.clone().unwrap_or_default();
    let mut undone: Vec<String> = versions
        .iter()
        .filter_map(
            |want| match status.versions.iter().find(|v| v.name == want.name) {
                None => Some(format!("{} to {}", want.name, want.version)),
                Some(have) if have.version != want.version => Some(format!(
                    "{} from {} to {}",
                    want.name, have.version, want.version
                )),
                Some(_) => None,
            },
        )
        .collect();
    undone.sort();
    let is = |type_: &str, value: &str| {
        find(&status.conditions, type_).is_some_and(|c| c.status == value)
    };
    let available = is("Available", "True");
    let progressing = is("Progressing", "True");
    let degraded = !is("Degraded", "False");
    let summary = format!(
        "cluster operator {name}: available={available}, progressing={progressing}, degraded={degraded}, undone={}",
        undone.join(", ")
    );
    let detail = |type_: &str, sep: &str| {
        find(&status.conditions, type_).map(|c| {
            format!(
                "cluster operator {name} is {type_}={}: {}{sep}{}",
                c.status,
                c.reason.as_deref().unwrap_or(""),
                c.message.as_deref().unwrap_or("")
            )
        })
    };
    if !available {
        let nested = detail("Available", ": ").unwrap_or(summary);
        return Err(OperatorHealthError::NotAvailable { name, nested });
    }
    if degraded {
        let nested = detail("Degraded", ", ").unwrap_or(summary);
        return Err(OperatorHealthError::Degraded { name, nested });
    }
    if !undone.is_empty() && !initializing {
        return Err(OperatorHealthError::Updating {
            name,
            nested: summary,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterOperatorSpec, ClusterOperatorStatus, OperandVersion};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn co(versions: &[(&str, &str)], conditions: &[(&str, &str)]) -> ClusterOperator {
        let mut co = ClusterOperator::new("etcd", ClusterOperatorSpec {});
        co.status = Some(ClusterOperatorStatus {
            versions: versions
                .iter()
                .map(|(n, v)| OperandVersion {
                    name: (*n).into(),
                    version: (*v).into(),
                })
                .collect(),
            conditions: conditions
                .iter()
                .map(|(t, s)| ClusterOperatorStatusCondition {
                    type_: (*t).into(),
                    status: (*s).into(),
                    last_transition_time: Time("2025-01-01T00:00:00Z".parse().unwrap()),
                    reason: Some("R".into()),
                    message: Some("m".into()),
                })
                .collect(),
            related_objects: vec![],
        });
        co
    }

    const WANT: &[(&str, &str)] = &[("operator", "4.18.0"), ("etcd", "3.5")];

    fn check(live: Option<&ClusterOperator>, init: bool) -> Result<(), OperatorHealthError> {
        check_cluster_operator(&co(WANT, &[]), live, init)
    }

    #[test]
    fn messages() {
        let err = check_cluster_operator(&co(&[], &[]), None, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cluster operator etcd does not declare expected versions"
        );
        assert_eq!(err.reason(), "ClusterOperatorNoVersions");

        let err = check(None, false).unwrap_err();
        assert_eq!(err.reason(), "UpdatePayloadResourceNotFound");

        let err = check(Some(&co(WANT, &[])), false).unwrap_err();
        assert_eq!(err.to_string(), "Cluster operator etcd is not available");
        assert_eq!(err.reason(), "ClusterOperatorNotAvailable");
        assert_eq!(
            err.nested(),
            "cluster operator etcd: available=false, progressing=false, degraded=true, undone="
        );
        let err = check(Some(&co(WANT, &[("Available", "False")])), false).unwrap_err();
        assert_eq!(
            err.nested(),
            "cluster operator etcd is Available=False: R: m"
        );

        let err = check(Some(&co(WANT, &[("Available", "True")])), false).unwrap_err();
        assert_eq!(err.to_string(), "Cluster operator etcd is degraded");
        assert_eq!(err.reason(), "ClusterOperatorDegraded");
        let err = check(
            Some(&co(WANT, &[("Available", "True"), ("Degraded", "True")])),
            true,
        )
        .unwrap_err();
        assert_eq!(err.nested(), "cluster operator etcd is Degraded=True: R, m");

        let healthy = [("Available", "True"), ("Degraded", "False")];
        let old = co(&[("operator", "4.17.0")], &healthy);
        let err = check(Some(&old), false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cluster operator etcd is updating versions"
        );
        assert_eq!(err.reason(), "ClusterOperatorUpdating");
        assert_eq!(
            err.nested(),
            "cluster operator etcd: available=true, progressing=false, degraded=false, undone=etcd to 3.5, operator from 4.17.0 to 4.18.0"
        );
        // Initializing does not wait for versions.
        assert_eq!(check(Some(&old), true), Ok(()));
        assert_eq!(check(Some(&co(WANT, &healthy)), false), Ok(()));
    }
}
