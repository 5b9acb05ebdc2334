//! `cvo`: a release-payload processor in the style of the OpenShift Cluster Version Operator.
//!
//! The crate is a pure core with thin shells around it:
//!
//! * pure core (no I/O, no async): [`yaml`] (Go-compatible YAML reading), [`manifest`]
//!   (documents and their identity), [`include`](mod@include) (the upstream inclusion rules),
//!   [`capability`] (capability sets, enablement, implicit enablement), [`graph`] (the
//!   run-level task graph and its scheduler), [`hash`] (the `status.versionHash`), [`updates`]
//!   (the update service's graph and the updates it offers; its HTTP client with `cluster`).
//! * shells: [`payload`] (reading a payload directory or the bundled one), [`oci`] (release
//!   images in OCI image layouts: extraction, cache, packing), [`render`],
//!   [`explain`], [`validate`] (the CI linter), [`plan`] (upgrade preview) and [`cli`].
//! * in-cluster: [`cluster`] (the `config.openshift.io/v1` API types and their CRDs) and
//!   [`operator`] (one apply pass against a cluster); with the `apply` command, the only code that
//!   depends on kube.
//!
//! Cargo features (both default): `cluster` builds [`cluster`], [`operator`] and the `apply`,
//! `start` and `crds` commands (kube, k8s-openapi, hyper, prometheus-client); `registry` builds
//! the registry client ([`oci::registry`]: oci-client, rustls, tokio). `cluster` implies
//! `registry`. `--no-default-features` is the render-only build: every payload command, with
//! payload directories, the bundled payload and image layouts.
//!
//! [`components`] is where the payload components `cvo` ships will live.

pub mod capability;
pub mod causes;
pub mod cli;
#[cfg(feature = "cluster")]
pub mod cluster;
#[cfg(feature = "cluster")]
pub mod components;
pub mod crd_schema;
pub mod explain;
pub mod graph;
pub mod hash;
#[cfg(feature = "cluster")]
pub mod host;
pub mod include;
pub mod manifest;
pub mod oci;
#[cfg(feature = "cluster")]
pub mod operator;
pub mod ownership;
pub mod payload;
pub mod plan;
pub mod preflight;
pub mod release;
pub mod render;
pub mod retry;
pub mod suggest;
pub mod updates;
pub mod validate;
pub mod verify;
pub mod yaml;
