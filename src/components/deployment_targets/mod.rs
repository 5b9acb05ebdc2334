//! DeploymentTarget provisioning (Konflux): DeploymentTargetClaims bind to DeploymentTargets
//! the way PersistentVolumeClaims bind to PersistentVolumes, classes say how targets are
//! provisioned and reclaimed, and Environments turn a bound claim into a managed environment.
//!
//! Pure core:
//! - [`types`]: the CRD types; [`keys`]: annotation, label and finalizer keys; [`crds`]: the
//!   CRDs the payload ships, the capability and the component's name.
//! - [`model`]: the plain data reconciles work on (`World` in, `Outcome` out); [`meta`] and
//!   [`phase`]: the metadata and phase edits they make.
//! - [`binder`]: the claim reconciler; [`matching`]: which target a claim may bind.
//! - [`reclaim`]: the target reconciler; [`provisioner`]: dynamic provisioning (the namespace
//!   and devsandbox provisioners); [`space_request`]: the SpaceRequest reconciler.
//! - [`conditions`]: the `ErrorOccurred` condition every reconcile ends with.
//! - [`class`]: the class reconciler, with [`parameters`] (what the provisioners read in a
//!   class's `spec.parameters`, and what is wrong with them).
//! - [`environment`]: the Environment controller (Environment → managed environment).
//! - [`webhook`]: the Environment admission rules and the AdmissionReview exchange, with
//!   [`dns1123`] (Kubernetes' name rules) and [`request_uri`] (Go's `url.ParseRequestURI`).
//! - [`apiserver`]: API-server semantics over a `World`; [`offline`]: the fixpoint loop of
//!   `cvo dt reconcile`; [`load`]: its input, a YAML stream of objects, with [`fields`]
//!   (unknown fields and the paths of type errors).
//! - [`tracking`]: what reconciles read and when objects changed, so that `cvo dt reconcile`
//!   skips a reconcile whose inputs did not change.
//! - [`index`]: the controller's index of watched objects (and of its own writes) that every
//!   reconcile's `World` is cut from.
//!
//! Shell (I/O): [`executor`] (an `Outcome`'s writes against the API server) and
//! [`controller`] (watches feeding the index, kube-runtime controllers, Events, the ClusterOperator
//! through the host's `cluster_operator`).

pub mod apiserver;
pub mod binder;
pub mod class;
pub mod conditions;
pub mod controller;
pub mod crds;
pub mod dns1123;
pub mod environment;
pub mod executor;
pub mod fields;
pub mod index;
pub mod keys;
pub mod load;
pub mod matching;
pub mod meta;
pub mod model;
pub mod offline;
pub mod parameters;
pub mod phase;
pub mod provisioner;
pub mod reclaim;
pub mod request_uri;
pub mod space_request;
#[cfg(test)]
pub(crate) mod testing;
pub mod tracking;
pub mod types;
pub mod webhook;
