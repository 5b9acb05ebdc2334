//! DeploymentTarget provisioning (Konflux): DeploymentTargetClaims bind to DeploymentTargets
//! the way PersistentVolumeClaims bind to PersistentVolumes, classes say how targets are
//! provisioned and reclaimed, and Environments turn a bound claim into a managed environment.
//!
//! - [`types`]: the CRD types; [`keys`]: annotation, label and finalizer keys.
//! - [`crds`]: the CRDs the payload ships, the capability and the component's name.
//! - [`model`]: the plain data reconciles work on (`World` in, `Outcome` out).
//! - [`environment`]: the Environment controller (Environment → managed environment).
//! - [`dns1123`]: Kubernetes' DNS-1123 name rules, with apimachinery's messages.
//! - [`request_uri`]: Go's `url.ParseRequestURI`, which the Environment webhook applies.
//! - [`webhook`]: the Environment admission rules and the AdmissionReview exchange.
//! - [`operator_status`]: the ClusterOperator the controller keeps.
//! - [`executor`] (I/O): an `Outcome`'s writes against the API server.

pub mod crds;
pub mod dns1123;
pub mod environment;
pub mod executor;
pub mod keys;
pub mod model;
pub mod operator_status;
pub mod request_uri;
pub mod types;
pub mod webhook;
