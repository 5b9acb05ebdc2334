//! Payload components that `cvo` ships in its own payloads (`payloads/`) and implements, each
//! under a capability the payload declares. Each is a pure core (types, reconcile decisions
//! over plain data) with its kube-runtime shell beside it, hosted by `cvo controller NAME`.
//!
//! - [`agents`]: Assisted Installer agent late binding (Agents and InfraEnvs).
//! - [`deployment_targets`]: DeploymentTarget provisioning (Konflux environments).
//! - [`edge`]: Open Horizon edge policies: the constraint language, properties, versions.
//! - [`edge_operator`]: the edge agent's operator, which runs the agent once its hub settings
//!   are there.

pub mod agents;
pub mod deployment_targets;
pub mod edge;
pub mod edge_operator;
