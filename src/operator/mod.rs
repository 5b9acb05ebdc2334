//! The operator: what the CVO does to a cluster. Which payload to apply ([`desired`]), one
//! apply pass over it ([`apply`]),
//! the ClusterOperator health check ([`health`]), the summarized errors ([`summary`]), the
//! ClusterVersion status ([`status`]) and
//! the sync loop of `cvo start` ([`run`](mod@run)), its leader election ([`lease`]) and its
//! metrics and probes ([`metrics`]).
//!
//! The decisions (which action a manifest asks for, which upstream reason an API error maps to,
//! the next status, operator health) are pure functions; the kube I/O is a thin async shell
//! around them.

pub mod apply;
pub mod desired;
pub mod health;
pub mod lease;
pub mod metrics;
pub mod precondition;
pub mod run;
pub mod status;
pub mod summary;

pub use apply::{
    Action, ApplyError, ApplyOptions, ApplyReport, Effect, FIELD_MANAGER, TaskError, action,
    apply_payload, apply_payload_with, reason_for, reason_for_status,
};
pub use health::{OperatorHealthError, check_cluster_operator};
pub use lease::{LeaderElector, LeaseConfig};
pub use metrics::Metrics;
pub use run::{RunOptions, run, sync_once};
pub use status::{
    Failure, PayloadLoad, PayloadLoadStep, Progress, RequestedUpdate, StatusInput, UpgradeRisk,
    next_status,
};
pub use summary::OperatorUpdateStartTimes;
