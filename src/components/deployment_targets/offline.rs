//! The offline simulator behind `cvo dt reconcile`: the component's reconcilers run over a
//! [`World`] until nothing changes. Each round reconciles every object of a kind some
//! reconciler handles, in kind, namespace and name order (objects created during a round wait
//! for the next), applying each reconcile's writes as it returns them, the way the controller's
//! executor does: in order, stopping at the first one refused, each carrying forward the
//! `resourceVersion` an earlier write of the same reconcile gave its object. The clock stands
//! still: a `RequeueAfter` does not make time pass, so what only time would change stays as it
//! is (`--now` says when the run happens).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::model::{Context, Kind, Object, ObjectRef, Outcome, World, Write};
use super::{binder, class, environment, reclaim, space_request};

/// A reconcile function, as every controller of the component has one.
pub type Reconcile = fn(&ObjectRef, &World, &Context) -> Outcome;

/// The reconcilers the simulator runs, by the kind each reconciles.
pub const RECONCILERS: &[(Kind, Reconcile)] = &[
    (Kind::DeploymentTargetClass, class::reconcile_class),
    (Kind::DeploymentTarget, reclaim::reconcile_target),
    (Kind::DeploymentTargetClaim, binder::reconcile_claim),
    (Kind::Environment, environment::reconcile_environment),
    (Kind::SpaceRequest, space_request::reconcile_space_request),
];

/// What is wrong with one object after the last round that reconciled it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ObjectError {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub message: String,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub world: World,
    /// Rounds run, the last (quiet) one included.
    pub rounds: usize,
    /// Whether a round changed nothing before `max_rounds` ran out.
    pub converged: bool,
    /// By kind, namespace and name.
    pub errors: Vec<ObjectError>,
}

/// Runs rounds until one changes nothing, at most `max_rounds`.
pub fn run(mut world: World, ctx: &Context, max_rounds: usize) -> Report {
    let mut errors = BTreeMap::new();
    let mut rounds = 0;
    let mut converged = false;
    while rounds < max_rounds && !converged {
        rounds += 1;
        converged = !round(&mut world, ctx, &mut errors);
    }
    let errors = (errors.into_iter())
        .map(|(r, message): (ObjectRef, String)| ObjectError {
            kind: r.kind.to_string(),
            namespace: r.namespace,
            name: r.name,
            message,
        })
        .collect();
    Report {
        world,
        rounds,
        converged,
        errors,
    }
}

/// One round; true when it changed the world.
fn round(world: &mut World, ctx: &Context, errors: &mut BTreeMap<ObjectRef, String>) -> bool {
    let due: Vec<(ObjectRef, Reconcile)> = (world.objects())
        .filter_map(|o| reconciler(o.kind()).map(|f| (o.reference(), f)))
        .collect();
    let before = world.revision();
    for (reference, reconcile) in due {
        let outcome = reconcile(&reference, world, ctx);
        let refused = execute_owned(world, outcome.writes, ctx);
        let message = refused
            .or(outcome.error)
            .or_else(|| error_condition(world, &reference));
        match message {
            Some(m) => errors.insert(reference, m),
            None => errors.remove(&reference),
        };
    }
    world.revision() != before
}

fn reconciler(kind: Kind) -> Option<Reconcile> {
    (RECONCILERS.iter())
        .find(|(k, _)| *k == kind)
        .map(|(_, f)| *f)
}

/// Applies writes in order; the first refused ends the reconcile's writes and is returned.
#[cfg(test)]
pub(super) fn execute(world: &mut World, writes: &[Write], ctx: &Context) -> Option<String> {
    execute_owned(world, writes.to_vec(), ctx)
}

/// Applies writes in order; the first refused ends the reconcile's writes and is returned.
/// The writes' objects are stored as they are, without a copy.
fn execute_owned(world: &mut World, writes: Vec<Write>, ctx: &Context) -> Option<String> {
    let mut versions: HashMap<ObjectRef, Option<String>> = HashMap::new();
    for mut write in writes {
        let target = write.target();
        if let (Some(version), Write::Update(o) | Write::UpdateStatus(o)) =
            (versions.get(&target), &mut write)
        {
            o.meta_mut().resource_version = version.clone();
        }
        let verb = write.verb();
        if let Err(e) = world.apply_owned(write, ctx) {
            return Some(format!("{verb} of {target} refused: {e}"));
        }
        let version = world
            .get(&target)
            .and_then(|o| o.meta().resource_version.clone());
        versions.insert(target, version);
    }
    None
}

/// The message of an `ErrorOccurred=True` condition on a target or claim: a problem shown to
/// the user for which upstream returns no error (a claim that wants a claimed target).
fn error_condition(world: &World, reference: &ObjectRef) -> Option<String> {
    let conditions = match world.get(reference)? {
        Object::Class(c) => &c.status.as_ref()?.conditions,
        Object::Target(t) => &t.status.as_ref()?.conditions,
        Object::Claim(c) => &c.status.as_ref()?.conditions,
        Object::Environment(e) => &e.status.as_ref()?.conditions,
        _ => return None,
    };
    (conditions.iter())
        .find(|c| c.type_ == super::keys::CONDITION_ERROR_OCCURRED && c.status == "True")
        .map(|c| c.message.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::keys::{FINALIZER_BINDER, PROVISIONER_NAMESPACE};
    use crate::components::deployment_targets::testing::{
        MetaBuilder, claim, class, ctx, target, world,
    };
    use crate::components::deployment_targets::types::{ClaimPhase, TargetPhase};

    #[test]
    fn dynamic_provisioning_converges_to_a_bound_claim() {
        let start = world([
            claim("c", "cls").object(),
            class("cls", PROVISIONER_NAMESPACE, "Delete"),
        ]);
        let report = run(start, &ctx(), 20);
        assert!(report.converged);
        assert_eq!(report.errors, vec![]);
        // Mark; provision; the target's finalizer and the binding; a round that writes nothing.
        assert_eq!(report.rounds, 4);
        let w = &report.world;
        assert_eq!(w.claim("ns", "c").unwrap().phase(), Some(ClaimPhase::Bound));
        assert_eq!(
            w.target("ns", "c-dt").unwrap().phase(),
            Some(TargetPhase::Bound)
        );
        assert!(w.namespace("ns--c").is_some());

        let short = run(
            world([
                claim("c", "cls").object(),
                class("cls", PROVISIONER_NAMESPACE, "Delete"),
            ]),
            &ctx(),
            2,
        );
        assert!(!short.converged);
        assert_eq!(short.rounds, 2);
    }

    #[test]
    fn errors_are_those_of_the_last_round_each_object_was_reconciled_in() {
        let start = world([
            claim("lost", "cls")
                .annotation(super::super::keys::ANN_BIND_COMPLETED, "true")
                .finalizer(FINALIZER_BINDER)
                .phase(ClaimPhase::Bound)
                .object(),
            claim("wants", "cls").target("dt").object(),
            target("dt", "cls").claim_ref("other").object(),
        ]);
        let report = run(start, &ctx(), 10);
        assert!(report.converged);
        let errors: Vec<(&str, &str)> = report
            .errors
            .iter()
            .map(|e| (e.name.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            errors,
            [
                (
                    "lost",
                    "DeploymentTarget not found for a bounded DeploymentTargetClaim lost in namespace ns"
                ),
                (
                    "wants",
                    "DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed"
                ),
            ]
        );
        assert_eq!(report.errors[0].kind, "DeploymentTargetClaim");
        assert_eq!(report.errors[0].namespace, "ns");
    }

    #[test]
    fn execution_carries_versions_forward_and_stops_at_a_refused_write() {
        let mut w = world([target("dt", "cls").object()]);
        let read = w.target("ns", "dt").unwrap().clone();
        let mut first = read.clone();
        first.spec.claim_ref = "a".into();
        let mut second = read.clone();
        second.spec.claim_ref = "b".into();
        let writes = [
            Write::Update(Object::Target(first)),
            Write::Update(Object::Target(second.clone())),
        ];
        assert_eq!(execute(&mut w, &writes, &ctx()), None);
        assert_eq!(w.target("ns", "dt").unwrap().spec.claim_ref, "b");
        let refused = execute(
            &mut w,
            &[
                Write::Update(Object::Target(second)),
                Write::Delete(Object::Target(read).reference()),
            ],
            &ctx(),
        );
        assert_eq!(
            refused.as_deref(),
            Some(
                "update of DeploymentTarget ns/dt refused: conflict on DeploymentTarget ns/dt: the object has been modified (resourceVersion 3, the write carries 1)"
            )
        );
        assert!(
            w.target("ns", "dt").is_some(),
            "the writes after it are not made"
        );
    }
}
