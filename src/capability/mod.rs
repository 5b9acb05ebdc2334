//! Capabilities: the registry of optional cluster components, the sets an
//! administrator can pick as a baseline, and the effective-capability
//! computation the CVO performs on every sync (spec §3, §4.3, §4.4).
//!
//! Everything here is pure data and pure functions: no I/O, no async. The
//! exact strings (capability names, set names, condition texts, validation
//! messages) are part of the contract, because users' alerts and tooling
//! match on them.
//!
//! * [`Capability`], [`CapabilitySet`] — names, with Go's byte-wise ordering.
//! * [`Registry`] — which capabilities exist, which set contains what, which
//!   are hidden behind feature gates.
//! * [`set_capabilities`], [`set_from_implicitly_enabled`],
//!   [`ClusterCapabilities::status`] — what is known/enabled/implicitly
//!   enabled for a given `spec.capabilities`.
//! * [`implicitly_enabled_condition`] — the `ImplicitlyEnabledCapabilities`
//!   ClusterVersion condition.
//! * [`validate_spec`] — the API server's CEL rules on `spec.capabilities`.
//! * [`implicit::implicitly_enabled`] — capabilities an upgrade enables because a resource
//!   the cluster already manages moved into them.

pub mod implicit;
pub mod names;
mod registry;
mod status;
mod types;
mod validate;

pub use registry::{
    DECLARED_CAPABILITIES_KEY, DeclaredCapability, Registry, check_declared, sets_json,
};
pub use status::{
    CapabilitiesSpec, CapabilitiesStatus, ClusterCapabilities, Condition,
    IMPLICITLY_ENABLED_CONDITION_TYPE, LEGACY_IMPLICITLY_ENABLED_CONDITION_TYPE,
    implicitly_enabled_condition, set_capabilities, set_from_implicitly_enabled,
};
pub use types::{Capability, CapabilitySet, UnknownCapabilitySet};
pub use validate::validate_spec;
