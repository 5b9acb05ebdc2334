//! Property tests: graphs built from random payloads are well formed, keep
//! every ordering guarantee upstream relies on, and run each node at most
//! once and never before its inputs.

use std::collections::BTreeSet;
use std::sync::Mutex;

use proptest::prelude::*;

use super::testutil::Fake;
use super::{Mode, Scheduler, TaskGraph, parse_run_level, run_graph, workers_for};

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
    fn run_graph_respects_dependencies(
        tasks in prop::collection::vec(task(), 0..24),
        mode in mode(),
        workers in 0..5usize,
        failing in prop::collection::btree_set(0..24usize, 0..3),
    ) {
        let g = TaskGraph::build(&tasks, mode);
        let anc = ancestors(&g);
        let finished_ok = Mutex::new(BTreeSet::new());
        let started = Mutex::new(Vec::new());
        let outcome = run_graph(&g, workers, |n| {
            {
                let done = finished_ok.lock().unwrap();
                let needed = anc[n].iter().filter(|&&p| !g.nodes[p].tasks.is_empty());
                for p in needed {
                    assert!(done.contains(p), "node {n} started before {p} finished");
                }
                started.lock().unwrap().push(n);
            }
            if g.nodes[n].tasks.iter().any(|t| failing.contains(t)) {
                return Err(n);
            }
            finished_ok.lock().unwrap().insert(n);
            Ok(())
        });
        let mut started = started.into_inner().unwrap();
        started.sort_unstable();
        let unique: BTreeSet<usize> = started.iter().copied().collect();
        prop_assert_eq!(unique.len(), started.len(), "a node ran twice");

        let ran = expected_runs(&g, &failing);
        let want_started: Vec<usize> =
            (0..g.nodes.len()).filter(|&n| ran[n] && !g.nodes[n].tasks.is_empty()).collect();
        prop_assert_eq!(started, want_started);
        let want_incomplete: Vec<usize> = (0..g.nodes.len()).filter(|&n| !ran[n]).collect();
        prop_assert_eq!(&outcome.incomplete, &want_incomplete);
        for (n, err) in &outcome.errors {
            prop_assert_eq!(n, err);
        }
        if failing.iter().all(|&t| t >= tasks.len()) {
            prop_assert!(outcome.is_success());
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
