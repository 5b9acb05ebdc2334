//! Property tests: graphs built from random payloads are well formed, keep
//! every ordering guarantee upstream relies on, and, driven through the
//! [`Scheduler`] with any number of workers and any completion order, run
//! each node at most once and never before its inputs.

use std::cell::Cell;
use std::collections::BTreeSet;

use proptest::prelude::*;

use super::testutil::{Event, Fake, drive, seeded};
use super::{Mode, Scheduler, TaskGraph, parse_run_level, workers_for};

/// File names drawn from a small vocabulary so run levels and components
/// collide often, plus names the parser rejects.
fn file_name() -> impl Strategy<Value = String> {
    let conventional = (
        prop::sample::select(vec!["00", "01", "1", "50"]),
        prop::sample::select(vec!["a", "b", "x-y"]),
        0..3u8,
    )
        .prop_map(|(level, comp, n)| format!("0000_{level}_{comp}_{n}.yaml"));
    let odd = prop::sample::select(vec![
        "a",
        "image-references",
        "0000_5x_a_b",
        "0000_50_a.yaml",
    ])
    .prop_map(String::from);
    prop_oneof![4 => conventional, 1 => odd]
}

fn task() -> impl Strategy<Value = Fake> {
    (file_name(), prop::bool::weighted(0.1)).prop_map(|(name, job)| Fake { name, job })
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Update),
        Just(Mode::Install),
        (0..40u64).prop_map(|attempt| Mode::Reconcile { attempt }),
    ]
}

/// Every task sits in exactly one node, in ascending order within it.
fn assert_partition(g: &TaskGraph, count: usize) {
    let mut seen: Vec<usize> = g
        .nodes
        .iter()
        .flat_map(|n| n.tasks.iter().copied())
        .collect();
    for node in &g.nodes {
        assert!(node.tasks.windows(2).all(|w| w[0] < w[1]), "{node:?}");
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..count).collect::<Vec<_>>());
}

/// Edges are mirrored, free of duplicates, in range, and acyclic.
fn assert_edges(g: &TaskGraph) {
    for (i, node) in g.nodes.iter().enumerate() {
        assert_eq!(
            node.outputs.iter().collect::<BTreeSet<_>>().len(),
            node.outputs.len()
        );
        assert_eq!(
            node.inputs.iter().collect::<BTreeSet<_>>().len(),
            node.inputs.len()
        );
        for &o in &node.outputs {
            assert!(g.nodes[o].inputs.contains(&i), "{i} -> {o} not mirrored");
        }
        for &p in &node.inputs {
            assert!(g.nodes[p].outputs.contains(&i), "{p} -> {i} not mirrored");
        }
    }
    let mut s = Scheduler::new(g);
    while let Some(n) = s.next_ready() {
        s.finish(n, true);
    }
    assert!(
        s.incomplete().is_empty(),
        "cycle among {:?}",
        s.incomplete()
    );
}

/// `ancestors[n]` holds every node that must finish before `n` starts.
fn ancestors(g: &TaskGraph) -> Vec<BTreeSet<usize>> {
    let mut memo: Vec<Option<BTreeSet<usize>>> = vec![None; g.nodes.len()];
    fn visit(g: &TaskGraph, n: usize, memo: &mut Vec<Option<BTreeSet<usize>>>) -> BTreeSet<usize> {
        if let Some(done) = &memo[n] {
            return done.clone();
        }
        let mut set = BTreeSet::new();
        for &p in &g.nodes[n].inputs {
            set.insert(p);
            set.extend(visit(g, p, memo));
        }
        memo[n] = Some(set.clone());
        set
    }
    (0..g.nodes.len()).map(|n| visit(g, n, &mut memo)).collect()
}

/// Task `a` is guaranteed to be applied before task `b`.
fn ordered(g: &TaskGraph, anc: &[BTreeSet<usize>], a: usize, b: usize) -> bool {
    let home = |t| g.nodes.iter().position(|n| n.tasks.contains(&t)).unwrap();
    let (na, nb) = (home(a), home(b));
    na == nb || anc[nb].contains(&na)
}

/// The guarantees upstream relies on: Jobs are barriers in every mode, and
/// when updating, anything not in the same run level stays in order.
fn assert_ordering(tasks: &[Fake], g: &TaskGraph, mode: Mode) {
    let anc = ancestors(g);
    let level = |t: usize| parse_run_level(&tasks[t].name).map(|(l, _)| l);
    for b in 0..tasks.len() {
        for a in 0..b {
            let same_level = level(a).is_some() && level(a) == level(b);
            let must = tasks[a].job || tasks[b].job || (mode == Mode::Update && !same_level);
            assert!(!must || ordered(g, &anc, a, b), "{a} before {b} in {g:?}");
        }
    }
}

/// A node should run exactly when all of its inputs ran and succeeded.
fn expected_runs(g: &TaskGraph, failing: &BTreeSet<usize>) -> Vec<bool> {
    let mut ran = vec![false; g.nodes.len()];
    let mut s = Scheduler::new(g);
    while let Some(n) = s.next_ready() {
        ran[n] = true;
        let fails = g.nodes[n].tasks.iter().any(|t| failing.contains(t));
        s.finish(n, !fails);
    }
    ran
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn built_graphs_are_well_formed(tasks in prop::collection::vec(task(), 0..30), mode in mode()) {
        let g = TaskGraph::build(&tasks, mode);
        assert_partition(&g, tasks.len());
        assert_edges(&g);
        assert_ordering(&tasks, &g, mode);
        prop_assert_eq!(&g, &TaskGraph::build(&tasks, mode));
        if mode == Mode::Install {
            prop_assert_eq!(workers_for(mode, &g), g.nodes.len());
        }
    }

    #[test]
    fn driven_runs_respect_dependencies(
        tasks in prop::collection::vec(task(), 0..24),
        mode in mode(),
        workers in 0..5usize,
        failing in prop::collection::btree_set(0..24usize, 0..3),
        seed in any::<u64>(),
    ) {
        let g = TaskGraph::build(&tasks, mode);
        let fails = |n: usize| g.nodes[n].tasks.iter().any(|t| failing.contains(t));
        let run = drive(&g, workers, &Cell::new(false), seeded(seed), |n| {
            if fails(n) { Err(n) } else { Ok(()) }
        });

        // Replay the trace: every dispatch is upstream's next node (the
        // lowest unsubmitted one whose inputs all succeeded), at most
        // max(1, workers) nodes with tasks are in flight, and a node
        // finishes only after it was dispatched.
        let mut status: Vec<Option<Option<bool>>> = vec![None; g.nodes.len()];
        let mut in_flight = 0usize;
        for event in &run.events {
            match *event {
                Event::Dispatch(n) => {
                    let upstream = (0..g.nodes.len()).find(|&m| {
                        status[m].is_none()
                            && g.nodes[m].inputs.iter().all(|&p| status[p] == Some(Some(true)))
                    });
                    prop_assert_eq!(Some(n), upstream);
                    status[n] = Some(None);
                    if !g.nodes[n].tasks.is_empty() {
                        in_flight += 1;
                        prop_assert!(in_flight <= workers.max(1));
                    }
                }
                Event::Finish(n, ok) => {
                    prop_assert_eq!(status[n], Some(None), "node {} finished twice or unclaimed", n);
                    prop_assert_eq!(ok, !fails(n));
                    status[n] = Some(Some(ok));
                    if !g.nodes[n].tasks.is_empty() {
                        in_flight -= 1;
                    }
                }
            }
        }
        prop_assert_eq!(in_flight, 0);
        prop_assert!(run.peak_in_flight <= workers.max(1));

        let ran = expected_runs(&g, &failing);
        let dispatched: Vec<usize> = (0..g.nodes.len()).filter(|&n| status[n].is_some()).collect();
        let want: Vec<usize> = (0..g.nodes.len()).filter(|&n| ran[n]).collect();
        prop_assert_eq!(dispatched, want);
        let want_incomplete: Vec<usize> = (0..g.nodes.len()).filter(|&n| !ran[n]).collect();
        prop_assert_eq!(&run.incomplete, &want_incomplete);
        let want_errors: Vec<(usize, usize)> =
            (0..g.nodes.len()).filter(|&n| ran[n] && fails(n)).map(|n| (n, n)).collect();
        prop_assert_eq!(&run.errors, &want_errors);
        if failing.iter().all(|&t| t >= tasks.len()) {
            prop_assert!(run.is_success());
        }
    }

    #[test]
    fn scheduler_matches_upstream_next_node(
        tasks in prop::collection::vec(task(), 0..24),
        mode in mode(),
        picks in prop::collection::vec((any::<usize>(), prop::bool::weighted(0.2)), 0..64),
    ) {
        let g = TaskGraph::build(&tasks, mode);
        let mut s = Scheduler::new(&g);
        let mut status: Vec<Option<Option<bool>>> = vec![None; g.nodes.len()];
        let mut running: Vec<usize> = Vec::new();
        let mut picks = picks.into_iter();
        loop {
            // Upstream getNextNode: lowest unsubmitted node whose inputs all succeeded.
            let upstream = (0..g.nodes.len()).find(|&n| {
                status[n].is_none()
                    && g.nodes[n].inputs.iter().all(|&p| status[p] == Some(Some(true)))
            });
            prop_assert_eq!(s.peek_ready(), upstream);
            if let Some(n) = s.next_ready() {
                status[n] = Some(None);
                running.push(n);
            }
            if running.is_empty() {
                break;
            }
            // Finish a pseudo-randomly chosen running node, sometimes with an error.
            let (index, fail) = picks.next().unwrap_or((0, false));
            let n = running.swap_remove(index % running.len());
            status[n] = Some(Some(!fail));
            prop_assert!(s.finish(n, !fail));
        }
        prop_assert!(s.is_done());
    }
}
