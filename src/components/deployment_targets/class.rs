//! The class reconciler (not upstream's, whose classes have an empty status): a
//! DeploymentTargetClass whose parameters its provisioner cannot take, or whose provisioner is a
//! near miss of one of `cvo`'s, says so in its `ErrorOccurred` condition
//! ([`super::parameters::check_class`]); claims of the class say it again when they are
//! provisioned.

use super::conditions::{Verdict, Warning, WithConditions, conclude};
use super::model::{Context, Next, Object, ObjectRef, Outcome, World};
use super::parameters::check_class;
use super::types::{DeploymentTargetClass, DeploymentTargetClassStatus};

/// The message of an unexpected error in the class reconciler.
pub const GENERIC_CLASS_ERROR: &str = "unexpected internal error occurred in DTClass controller";

/// Reconciles one DeploymentTargetClass: its `ErrorOccurred` condition.
pub fn reconcile_class(class: &ObjectRef, world: &World, ctx: &Context) -> Outcome {
    let Some(found) = world.class(&class.name) else {
        return Outcome::done();
    };
    let verdict = match check_class(found) {
        // A class that never had a problem is not given a status.
        Ok(()) if found.conditions().is_empty() => return Outcome::done(),
        Ok(()) => Verdict::Ok(Next::Done),
        Err(message) => Verdict::Problem {
            message: message.clone(),
            error: None,
            warning: Warning {
                reason: "InvalidParameters",
                message,
            },
        },
    };
    let mut out = Outcome::done();
    conclude(
        &mut out,
        Some(found.clone()),
        verdict,
        GENERIC_CLASS_ERROR,
        ctx.now,
    );
    out
}

impl WithConditions for DeploymentTargetClass {
    fn conditions(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
        self.status.as_ref().map_or(&[], |s| &s.conditions)
    }
    fn set_conditions(
        &mut self,
        conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    ) {
        (self
            .status
            .get_or_insert_with(DeploymentTargetClassStatus::default))
        .conditions = conditions;
    }
    fn into_object(self) -> Object {
        Object::Class(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::keys::PROVISIONER_NAMESPACE;
    use crate::components::deployment_targets::model::{Kind, Write};
    use crate::components::deployment_targets::testing::{class, ctx, world};
    use crate::components::deployment_targets::types::ClassParameters;

    fn reconcile(w: &World) -> Outcome {
        reconcile_class(
            &ObjectRef::new(Kind::DeploymentTargetClass, "", "cls"),
            w,
            &ctx(),
        )
    }

    #[test]
    fn a_class_with_an_unknown_parameter_says_so_and_a_fixed_one_is_cleared() {
        let Object::Class(mut bad) = class("cls", PROVISIONER_NAMESPACE, "Delete") else {
            panic!()
        };
        let parameters = serde_json::json!({"quota": {}});
        bad.spec.parameters = Some(ClassParameters(
            parameters.as_object().cloned().unwrap_or_default(),
        ));
        let out = reconcile(&world([Object::Class(bad.clone())]));
        let [Write::UpdateStatus(Object::Class(written))] = &out.writes[..] else {
            panic!("{:?}", out.writes)
        };
        let condition = &written.status.as_ref().unwrap().conditions[0];
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("True", "ErrorOccurred")
        );
        assert!(
            condition
                .message
                .starts_with("DeploymentTargetClass cls: spec.parameters.quota: "),
            "{}",
            condition.message
        );
        assert_eq!(out.events[0].reason, "InvalidParameters");
        assert_eq!(
            out.error, None,
            "a user error waits for the class to change"
        );

        let mut fixed = written.clone();
        fixed.spec.parameters = None;
        let out = reconcile(&world([Object::Class(fixed)]));
        let [Write::UpdateStatus(Object::Class(cleared))] = &out.writes[..] else {
            panic!("{:?}", out.writes)
        };
        assert_eq!(
            cleared.status.as_ref().unwrap().conditions[0].status,
            "False"
        );
        let quiet = reconcile(&world([Object::Class(cleared.clone())]));
        assert!(quiet.writes.is_empty());
        let fine = reconcile(&world([class("cls", PROVISIONER_NAMESPACE, "Delete")]));
        assert_eq!(fine, Outcome::done(), "a class that never had a problem");
    }
}
