//! The operator: what the CVO does to a cluster.
//!
//! Pure (plain data in, plain data out; no kube client, no async):
//! * [`outcome`]: what a pass produced (task errors, the apply report, failures, progress,
//!   the payload-load steps), the types everything below shares;
//! * [`pass`]: one sync pass as data: observation, the plan (payload, capabilities, inclusion,
//!   mode, task graph), accepting a requested release, the next status and state;
//! * [`task`]: one task's decisions (action, upstream reasons, owner references, the report);
//! * [`desired`] (which release is requested), [`feature_gates`] (which gates the cluster has
//!   enabled), [`precondition`], [`health`] (ClusterOperator
//!   and workload health), [`summary`] (error summarization), [`upgradeable`] (the
//!   `Upgradeable` risk sources), [`deletions`] (the payload's deletions in progress),
//!   [`update_risks`] (the status' updates and their risks) and [`status`] (the next
//!   ClusterVersion status).
//!
//! I/O shells around them: [`apply`] (the executor of a pass's task graph), [`run`](mod@run)
//! (the sync loop of `cvo start`: observe, plan, execute, write), [`retrieve`] (pulling and
//! loading a requested release), [`alert_risks`] (the firing alerts read for the `Alert` risk
//! source), [`events`] (Events about the ClusterVersion), [`stand_down`] (not replacing another
//! operator's CRDs), [`metrics`] (the operator's metrics) and [`watches`] (what wakes the loop,
//! and the ClusterOperators the metrics read). Leader election and
//! serving are the host's ([`crate::host`]), shared with the components' controllers.

pub mod alert_risks;
pub mod apply;
pub mod cluster_metrics;
pub mod deletions;
pub mod desired;
pub mod events;
pub mod feature_gates;
pub mod health;
pub mod history;
pub mod metrics;
pub mod outcome;
pub mod pass;
pub mod precondition;
pub mod preflight;
pub mod preflight_status;
pub mod retrieve;
pub mod run;
pub mod stand_down;
pub mod status;
pub mod summary;
pub mod task;
pub mod update_risks;
pub mod upgradeable;
pub mod watches;

pub use crate::host::lease::{LeaderElector, LeaseConfig};
pub use apply::{
    ApplyError, ApplyOptions, apply_graph, apply_payload, apply_payload_with, reason_for,
};
pub use health::{OperatorHealthError, check_cluster_operator};
pub use metrics::Metrics;
pub use outcome::{
    ApplyReport, Effect, Failure, LoadFailure, PayloadLoad, PayloadLoadStep, Progress,
    RequestedUpdate, TaskError,
};
pub use pass::{OperatorFacts, SyncState};
pub use run::{RunOptions, run, sync_once};
pub use status::{StatusInput, next_status};
pub use summary::OperatorUpdateStartTimes;
pub use task::{Action, ClusterVersionOwner, FIELD_MANAGER, action, reason_for_status};
pub use upgradeable::{RiskFacts, UpgradeRisk};
