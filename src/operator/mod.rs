//! The operator: what the CVO does to a cluster. For now one apply pass over a payload
//! ([`apply`]); the sync loop, status reporting and ClusterOperator waiting come later.
//!
//! The decisions (which action a manifest asks for, which upstream reason an API error maps to)
//! are pure functions; the kube I/O is a thin async shell around them.

pub mod apply;

pub use apply::{
    Action, ApplyError, ApplyOptions, ApplyReport, FIELD_MANAGER, TaskError, action, apply_payload,
    apply_payload_with, reason_for, reason_for_status,
};
