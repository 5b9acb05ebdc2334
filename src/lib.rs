//! `cvo`: a release-payload processor in the style of the OpenShift Cluster Version Operator.
//!
//! The crate is a pure core with thin shells around it:
//!
//! * pure core (no I/O, no async): [`yaml`] (Go-compatible YAML reading), [`manifest`]
//!   (documents and their identity), [`include`](mod@include) (the upstream inclusion rules),
//!   [`capability`] (capability sets, enablement, implicit enablement), [`graph`] (the
//!   run-level task graph and its scheduler), [`hash`] (the `status.versionHash`).
//! * shells: [`payload`] (reading a payload directory or the bundled one), [`oci`] (release
//!   images in OCI image layouts: extraction, cache, packing), [`render`],
//!   [`explain`], [`validate`] (the CI linter), [`plan`] (upgrade preview) and [`cli`].
//! * in-cluster: [`cluster`] (the `config.openshift.io/v1` API types and their CRDs) and
//!   [`operator`] (one apply pass against a cluster); with the `apply` command, the only code that
//!   depends on kube.
//!
//! [`components`] is where the payload components `cvo` ships will live.

pub mod capability;
pub mod causes;
pub mod cli;
pub mod cluster;
pub mod components;
pub mod explain;
pub mod graph;
pub mod hash;
pub mod include;
pub mod manifest;
pub mod oci;
pub mod operator;
pub mod payload;
pub mod plan;
pub mod render;
pub mod suggest;
pub mod validate;
pub mod yaml;
