//! The edge agent's operator (`cvo controller edge-agent`): what the payload runs under the
//! `EdgeAgent` capability so that the Open Horizon agent runs only once it can reach its hub.
//!
//! The payload ships the agent's lasting objects (Namespace, ServiceAccount, binding,
//! the `create-only` ConfigMap the administrator fills, PVC, Service) and this operator with
//! its ClusterOperator `edge-agent`; the operator, not the CVO, creates the agent's Deployment
//! and auto-upgrade CronJob, once the hub settings are there, and removes them when they go.
//! Until then nothing crash-loops, and the ClusterOperator says what is missing.
//!
//! Pure core: [`hub`] (the settings, what is missing or wrong), [`operand`] (the agent's
//! objects for the settings, as `cvo edge agent-install` renders them), [`status`] (the
//! ClusterOperator). Shell: [`controller`].

pub mod controller;
pub mod hub;
pub mod operand;
pub mod status;

/// `cvo controller edge-agent`, and its Lease.
pub const COMPONENT: &str = "edge-agent";
/// The ClusterOperator it keeps.
pub const OPERATOR: &str = "edge-agent";
