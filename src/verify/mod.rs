//! Release signatures: whether a release image's digest is signed by the keys a cluster
//! trusts, as the CVO checks it (library-go's `pkg/verify`). Pure: the signature stores are
//! read by the caller, which hands each signature to a [`release::Verification`].
//!
//! - [`atomic`]: the "atomic container signature" JSON a signature carries.
//! - [`openpgp`]: keyrings, verifying and making the signed messages (rpgp).
//! - [`config`]: the verification ConfigMap (`verifier-public-key-*`, `store-*`).
//! - [`release`]: the digest rules, the store layout and the verification of one digest.
//!
//! Shell (I/O): [`store`] reads HTTP(S) stores and store-layout directories.

pub mod atomic;
pub mod config;
pub mod openpgp;
pub mod release;
#[cfg(feature = "registry")]
pub mod store;
