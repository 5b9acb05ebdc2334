//! DeploymentTarget provisioning (Konflux): DeploymentTargetClaims bind to DeploymentTargets
//! the way PersistentVolumeClaims bind to PersistentVolumes, classes say how targets are
//! provisioned and reclaimed, and Environments turn a bound claim into a managed environment.
//!
//! - [`types`]: the CRD types; [`keys`]: annotation, label and finalizer keys.
//! - [`model`]: the plain data reconciles work on (`World` in, `Outcome` out); [`meta`] and
//!   [`phase`]: the metadata and phase edits they make.
//! - [`binder`]: the claim reconciler; [`matching`]: which target a claim may bind.
//! - [`reclaim`]: the target reconciler; [`provisioner`]: dynamic provisioning (the namespace
//!   and devsandbox provisioners); [`space_request`]: the SpaceRequest reconciler.
//! - [`conditions`]: the `ErrorOccurred` condition every reconcile ends with.
//! - [`apiserver`]: API-server semantics over a `World`; [`offline`]: the fixpoint loop of
//!   `cvo dt reconcile`.

pub mod apiserver;
pub mod binder;
pub mod conditions;
pub mod keys;
pub mod matching;
pub mod meta;
pub mod model;
pub mod offline;
pub mod phase;
pub mod provisioner;
pub mod reclaim;
pub mod space_request;
#[cfg(test)]
mod testing;
pub mod types;
