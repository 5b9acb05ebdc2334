//! The in-cluster side: the `config.openshift.io/v1` API types the operator reads and writes,
//! and the CVO's own checks of a ClusterVersion spec ([`validation`]).
//!
//! This and [`crate::operator`] are the library modules that depend on kube and k8s-openapi;
//! the pure core stays free of them.

pub mod crds;
pub mod mirror_sets;
pub mod pull_secret;
pub mod validation;

/// The ClusterVersion singleton's name: the only one the CVO reads and writes.
pub const CLUSTER_VERSION_NAME: &str = "version";

pub use crds::{
    AcceptRisk, ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus,
    ClusterOperatorStatusCondition, ClusterVersion, ClusterVersionCapabilitiesStatus,
    ClusterVersionSpec, ClusterVersionStatus, ConditionalUpdate, ConditionalUpdateRisk,
    ObjectReference, OperandVersion, Release, SignatureStore, UPDATE_MODE_PREFLIGHT, Update,
    UpdateHistory, crds,
};
