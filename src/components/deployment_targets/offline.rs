//! The offline simulator behind `cvo dt reconcile`: the component's reconcilers run over a
//! [`World`] until nothing changes. Each round reconciles every object of a kind some
//! reconciler handles, in kind, namespace and name order (objects created during a round wait
//! for the next), applying each reconcile's writes as it returns them, the way the controller's
//! executor does: in order, stopping at the first one refused, each carrying forward the
//! `resourceVersion` an earlier write of the same reconcile gave its object. The clock stands
//! still: a `RequeueAfter` does not make time pass, so what only time would change stays as it
//! is (`--now` says when the run happens).
//!
//! A reconcile whose reads (and its writes' targets) did not change since it last ran would
//! decide exactly what it decided then, which changed nothing (or it would have changed
//! something it read): it is skipped ([`super::tracking`]). Skipping changes no output, only
//! the time: [`Rounds::ReconcileEverything`] runs every reconcile of every round, and the
//! tests check both give the same report.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::model::{Context, Kind, Object, ObjectRef, Outcome, World, Write};
use super::tracking::{Hashing, Reads};
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

/// Which reconciles a round runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounds {
    /// Those whose reads changed since they last ran (and those that never ran).
    SkipUnchanged,
    /// Every one (what the skipping is checked against).
    ReconcileEverything,
}

/// Runs rounds until one changes nothing, at most `max_rounds`.
pub fn run(world: World, ctx: &Context, max_rounds: usize) -> Report {
    run_rounds(world, ctx, max_rounds, Rounds::SkipUnchanged)
}

/// [`run`], choosing which reconciles a round runs.
pub fn run_rounds(mut world: World, ctx: &Context, max_rounds: usize, which: Rounds) -> Report {
    let mut errors = BTreeMap::new();
    let mut due = due_list(&world);
    let mut rounds = 0;
    let mut converged = false;
    if which == Rounds::SkipUnchanged {
        world.track();
    }
    while rounds < max_rounds && !converged {
        rounds += 1;
        converged = !round(&mut world, ctx, &mut errors, &mut due).changed;
        match which {
            Rounds::SkipUnchanged => {
                let (created, removed) = (world.take_created(), world.take_removed());
                refresh(&mut due, &world, created, removed);
                // Every test's run checks the list kept against the list rebuilt.
                debug_assert!(
                    (due.iter().map(|d| &d.reference))
                        .eq(due_list(&world).iter().map(|d| &d.reference))
                );
            }
            Rounds::ReconcileEverything => due = due_list(&world),
        }
    }
    world.untrack();
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

/// What one round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Round {
    /// Whether it changed the world.
    changed: bool,
    /// The reconciles it ran (not skipped).
    reconciled: usize,
}

/// An object a round reconciles, and what its last reconcile read (while the world tracks
/// reads).
struct Due {
    reference: ObjectRef,
    reconcile: Reconcile,
    reads: Option<Reads>,
}

/// Every object some reconciler handles, in the world's order, none reconciled yet.
fn due_list(world: &World) -> Vec<Due> {
    (world.objects())
        .filter(|o| reconciler(o.kind()).is_some())
        .filter_map(|o| due_entry(o.reference()))
        .collect()
}

/// The next round's list from this one's: without the objects gone (when some were
/// `removed`), with those `created` (each where the world's order puts it), what the others
/// last read kept. What [`due_list`] would give, without copying every reference each round (a
/// tenth of the 100,000-object run's loop, BENCHMARKS.md).
fn refresh(due: &mut Vec<Due>, world: &World, mut created: Vec<ObjectRef>, removed: bool) {
    if removed {
        due.retain(|d| world.contains(&d.reference));
    }
    created.retain(|r| reconciler(r.kind).is_some() && world.contains(r));
    if created.is_empty() {
        return;
    }
    created.sort_unstable();
    created.dedup();
    let old = std::mem::take(due);
    let mut created = created.into_iter().peekable();
    for entry in old {
        while let Some(new) = created.next_if(|r| *r <= entry.reference) {
            if new != entry.reference {
                due.extend(due_entry(new));
            }
        }
        due.push(entry);
    }
    due.extend(created.filter_map(due_entry));
}

/// A new entry for `reference`, none for a kind no reconciler handles.
fn due_entry(reference: ObjectRef) -> Option<Due> {
    reconciler(reference.kind).map(|reconcile| Due {
        reference,
        reconcile,
        reads: None,
    })
}

/// One round over `due`: an object none of whose last reads changed since is skipped, its
/// error kept.
fn round(
    world: &mut World,
    ctx: &Context,
    errors: &mut BTreeMap<ObjectRef, String>,
    due: &mut [Due],
) -> Round {
    let before = world.revision();
    let mut reconciled = 0;
    for Due {
        reference,
        reconcile,
        reads: last_reads,
    } in due.iter_mut()
    {
        if (last_reads.as_ref()).is_some_and(|reads| !world.changed_since(reads)) {
            continue;
        }
        reconciled += 1;
        let tick = world.change_tick();
        world.begin_reads();
        let _ = world.get(reference);
        let outcome = reconcile(reference, world, ctx);
        let refused = execute_owned(world, outcome.writes, ctx);
        let message = refused
            .or(outcome.error)
            .or_else(|| error_condition(world, reference));
        *last_reads = Some(world.end_reads(tick));
        match message {
            Some(m) => errors.insert(reference.clone(), m),
            None => errors.remove(reference),
        };
    }
    Round {
        changed: world.revision() != before,
        reconciled,
    }
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
    let mut versions: HashMap<ObjectRef, Option<String>, Hashing> = HashMap::default();
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

    /// Runs `world` both ways; the reports must be the same, object for object.
    fn both_ways(world: World, max_rounds: usize) -> Report {
        let skipping = run_rounds(world.clone(), &ctx(), max_rounds, Rounds::SkipUnchanged);
        let every = run_rounds(world, &ctx(), max_rounds, Rounds::ReconcileEverything);
        assert_eq!(skipping.rounds, every.rounds, "rounds");
        assert_eq!(skipping.converged, every.converged, "converged");
        assert_eq!(skipping.errors, every.errors, "errors");
        let objects = |r: &Report| r.world.objects().cloned().collect::<Vec<_>>();
        assert_eq!(objects(&skipping), objects(&every), "objects");
        assert_eq!(skipping.world, every.world);
        skipping
    }

    #[test]
    fn skipping_unchanged_reconciles_changes_nothing_on_every_fixture() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/dt");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".yaml") || name.ends_with(".out.yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let loaded = crate::components::deployment_targets::load::load(&text)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            both_ways(loaded.world, 100);
            files += 1;
        }
        assert!(files >= 10, "{files} fixtures");
    }

    /// A small generator of arbitrary worlds (a seed in, objects out): targets, claims,
    /// classes, Environments and Secrets naming each other at random, in any phase, some being
    /// deleted. (Namespaces being deleted, and SpaceRequests, are in the fixtures.)
    fn arbitrary_world(seed: u64) -> World {
        use crate::components::deployment_targets::keys::{
            ANN_BIND_COMPLETED, FINALIZER_BINDER, FINALIZER_DT, PROVISIONER_DEVSANDBOX,
        };
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let namespaces = ["ns", "team", "team--a"];
        let classes = ["manual", "ns-prov", "sandbox", "missing"];
        let mut objects = vec![
            class("manual", "example.com/manual", "Retain"),
            class("ns-prov", PROVISIONER_NAMESPACE, "Delete"),
            class("sandbox", PROVISIONER_DEVSANDBOX, "Delete"),
        ];
        let count = 2 + next(18);
        for i in 0..count {
            let ns = namespaces[next(3) as usize];
            let cls = classes[next(4) as usize];
            let other = format!("o{}", next(count));
            let object = match next(6) {
                0 | 1 => {
                    let mut t = target(&format!("o{i}"), cls).in_namespace(ns);
                    if next(2) == 0 {
                        t = t.claim_ref(&other);
                    }
                    t = match next(6) {
                        0 => t.phase(TargetPhase::Available),
                        1 => t.phase(TargetPhase::Bound),
                        2 => t.phase(TargetPhase::Released),
                        3 => t.phase(TargetPhase::Failed),
                        _ => t,
                    };
                    if next(5) == 0 {
                        t = t.finalizer(FINALIZER_DT).deleting(-10);
                    }
                    t.object()
                }
                2 | 3 => {
                    let mut c = claim(&format!("o{i}"), cls).in_namespace(ns);
                    if next(3) == 0 {
                        c = c.target(&other);
                    }
                    c = match next(5) {
                        0 => c.phase(ClaimPhase::Pending),
                        1 => c
                            .phase(ClaimPhase::Bound)
                            .annotation(ANN_BIND_COMPLETED, "true")
                            .finalizer(FINALIZER_BINDER),
                        2 => c.phase(ClaimPhase::Lost),
                        _ => c,
                    };
                    if next(5) == 0 {
                        c = c.finalizer(FINALIZER_BINDER).deleting(-10);
                    }
                    c.object()
                }
                4 => Object::from_value(
                    Kind::Environment,
                    serde_json::json!({
                        "metadata": {"name": format!("o{i}"), "namespace": ns, "resourceVersion": "1"},
                        "spec": {"displayName": "e", "deploymentStrategy": "AppStudioAutomated",
                                 "configuration": {"target": {"deploymentTargetClaim": {"claimName": other}}}}}),
                )
                .unwrap(),
                _ => Object::from_value(
                    Kind::Secret,
                    serde_json::json!({
                        "metadata": {"name": format!("o{i}"), "namespace": ns, "resourceVersion": "1"},
                        "data": {"kubeconfig": "YQ=="}}),
                )
                .unwrap(),
            };
            objects.push(object);
        }
        world(objects)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        #[test]
        fn skipping_unchanged_reconciles_changes_nothing_on_arbitrary_worlds(seed in 0u64..u64::MAX) {
            both_ways(arbitrary_world(seed), 30);
        }
    }

    #[test]
    fn only_reconciles_whose_reads_changed_run_again() {
        let start = world([
            claim("c", "cls").object(),
            target("dt", "cls").object(),
            claim("d", "cls").in_namespace("other").object(),
            class("cls", "example.com/manual", "Retain"),
        ]);
        let mut w = start.clone();
        w.track();
        let (mut errors, mut due) = (BTreeMap::new(), due_list(&w));
        let mut rounds = vec![];
        loop {
            let r = round(&mut w, &ctx(), &mut errors, &mut due);
            let (created, removed) = (w.take_created(), w.take_removed());
            refresh(&mut due, &w, created, removed);
            rounds.push(r.reconciled);
            if !r.changed {
                break;
            }
        }
        // Every object at first; then only those whose reads the first round's writes
        // changed (the class, whose reads nothing changed, is not among them).
        assert_eq!(rounds, [4, 3]);
        w.untrack();
        assert_eq!(w, both_ways(start, 10).world);
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
