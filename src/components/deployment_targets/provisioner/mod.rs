//! Dynamic provisioning: what makes a DeploymentTarget for a claim no target matches, and frees
//! what it made when the target goes. A class names its provisioner (`spec.provisioner`); the
//! binder asks it to provision for a claim it marked (phase `Pending`, `dt-provisioner`
//! annotation), the reclaimer asks it to deprovision a target being deleted whose class says
//! `Delete`. Both are pure: they read the [`World`] and return the writes to make.
//!
//! - [`namespace`]: `appstudio.redhat.com/namespace`, `cvo`'s own: a namespace on this cluster
//!   with an admin ServiceAccount and its kubeconfig.
//! - [`devsandbox`]: `appstudio.redhat.com/devsandbox`, upstream's: a codeready-toolchain
//!   SpaceRequest (its other half is [`super::space_request`]).

pub mod devsandbox;
pub mod namespace;

use super::keys::{
    ANN_DYNAMICALLY_PROVISIONED, ANN_TARGET_PROVISIONER, LABEL_TARGET_PROVISIONER,
    PROVISIONER_NAMESPACE,
};
use super::meta::{annotation, set_annotation, set_label};
use super::model::{Context, Event, Next, World, Write};
use super::types::{DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass};

/// A way of provisioning DeploymentTargets.
pub trait Provisioner: Sync {
    /// The name classes give in `spec.provisioner`.
    fn name(&self) -> &'static str;

    /// What it creates first, for upstream's condition message `unable to handle provisioning
    /// of <what>: <error>`.
    fn provisions(&self) -> &'static str;

    /// The writes that move provisioning on for `claim`, marked for dynamic provisioning and
    /// of `class` (whose provisioner this is); each step is written only when missing, so
    /// calling it again is harmless. An error is shown on the claim.
    fn provision(
        &self,
        claim: &DeploymentTargetClaim,
        class: &DeploymentTargetClass,
        world: &World,
        ctx: &Context,
    ) -> Result<Changes, String>;

    /// The writes that keep what a live `target` of `class` holds as the class says (the
    /// namespace provisioner: its quota, its LimitRange, a token renewed before it expires),
    /// and when to look again. An error is shown on the target. Nothing, by default.
    fn maintain(
        &self,
        _target: &DeploymentTarget,
        _class: &DeploymentTargetClass,
        _world: &World,
        _ctx: &Context,
    ) -> Result<(Changes, Next), String> {
        Ok((Changes::default(), Next::Done))
    }

    /// The writes that free what `target` (being deleted, class `Delete`) holds, and how far
    /// that has come.
    fn deprovision(
        &self,
        target: &DeploymentTarget,
        world: &World,
        ctx: &Context,
    ) -> Deprovisioning;
}

/// Writes to make and Events to record, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    pub writes: Vec<Write>,
    pub events: Vec<Event>,
}

/// What deprovisioning a target asked for and where it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Deprovisioning {
    pub changes: Changes,
    pub state: Deprovisioned,
}

/// Where deprovisioning a target stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deprovisioned {
    /// Nothing the target holds is left: its finalizer may go.
    Finished,
    /// Still going: keep the finalizer and look again (`next`).
    Pending(Next),
    /// It did not finish in time (the message says what is stuck): the target becomes
    /// `Failed`, keeps its finalizer, and is not looked at again until something changes.
    Failed(String),
    /// It cannot go on: the message becomes the target's `ErrorOccurred` condition.
    Blocked(String),
}

/// Marks a target `provisioner` made for `claim`: annotated `provisioned-by` with its name, and
/// labelled with the claim's `dt-provisioner` annotation when it has one.
pub fn mark_provisioned(
    target: &mut DeploymentTarget,
    claim: &DeploymentTargetClaim,
    provisioner: &str,
) {
    if let Some(value) = annotation(&claim.metadata, ANN_TARGET_PROVISIONER) {
        set_label(&mut target.metadata, LABEL_TARGET_PROVISIONER, value);
    }
    set_annotation(
        &mut target.metadata,
        ANN_DYNAMICALLY_PROVISIONED,
        provisioner,
    );
}

/// Every provisioner, by name.
pub const PROVISIONERS: [&dyn Provisioner; 2] =
    [&namespace::NamespaceProvisioner, &devsandbox::Devsandbox];

/// The provisioner a class names.
pub fn by_name(name: &str) -> Option<&'static dyn Provisioner> {
    PROVISIONERS.into_iter().find(|p| p.name() == name)
}

/// The provisioner that frees what a target holds: the namespace provisioner for the targets
/// it made (annotated `provisioned-by` with its name), else devsandbox, which like upstream's
/// reclaimer looks for a SpaceRequest of any target (and finds none for a user-made one).
pub fn for_target(target: &DeploymentTarget) -> &'static dyn Provisioner {
    match annotation(&target.metadata, ANN_DYNAMICALLY_PROVISIONED) {
        Some(PROVISIONER_NAMESPACE) => &namespace::NamespaceProvisioner,
        _ => &devsandbox::Devsandbox,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::keys::PROVISIONER_DEVSANDBOX;
    use crate::components::deployment_targets::testing::{MetaBuilder, target};

    #[test]
    fn provisioners_are_found_by_class_name_and_by_target_annotation() {
        assert_eq!(
            by_name(PROVISIONER_NAMESPACE).map(|p| p.name()),
            Some(PROVISIONER_NAMESPACE)
        );
        assert_eq!(
            by_name(PROVISIONER_DEVSANDBOX).map(|p| p.name()),
            Some(PROVISIONER_DEVSANDBOX)
        );
        assert!(by_name("example.com/other").is_none());
        let ours = target("t", "c")
            .annotation(ANN_DYNAMICALLY_PROVISIONED, PROVISIONER_NAMESPACE)
            .build();
        assert_eq!(for_target(&ours).name(), PROVISIONER_NAMESPACE);
        for other in [
            target("t", "c").build(),
            target("t", "c")
                .annotation(ANN_DYNAMICALLY_PROVISIONED, "x")
                .build(),
        ] {
            assert_eq!(for_target(&other).name(), PROVISIONER_DEVSANDBOX);
        }
    }
}
