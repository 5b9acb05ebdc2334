//! Running a graph: a pure scheduling state machine ([`Scheduler`]) with
//! upstream `RunGraph` semantics. The operator's async executor
//! (`operator::apply`) drives it; the tests drive it with a deterministic
//! single-threaded simulation (`testutil::drive`).
//!
//! Rules (spec §1.9): a node is eligible when it has not been submitted yet
//! and every one of its inputs finished without error; the lowest-index
//! eligible node is dispatched first. A failed node blocks its dependents
//! (transitively) but independent branches keep going. Nodes that never ran
//! are reported as incomplete.

use std::collections::BTreeSet;

use super::TaskGraph;

/// Lifecycle of one node inside a [`Scheduler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Succeeded,
    Failed,
}

/// Pure state machine deciding which node may run next.
///
/// It performs no I/O and owns no threads, so any driver can step it (the
/// operator uses tokio tasks): call
/// [`next_ready`](Self::next_ready) to claim work, [`finish`](Self::finish)
/// when it is done, and stop when [`is_done`](Self::is_done).
///
/// Eligibility only looks at `inputs` (as upstream does), so hand-built
/// graphs with one-sided edges behave like they would upstream. An input
/// index that does not exist can never finish, so its node never becomes
/// eligible (upstream would panic).
#[derive(Debug, Clone)]
pub struct Scheduler<'g> {
    graph: &'g TaskGraph,
    state: Vec<State>,
    /// Input entries per node that have not succeeded yet.
    waiting_on: Vec<usize>,
    /// Reverse of `inputs`, with multiplicity.
    dependents: Vec<Vec<usize>>,
    /// Eligible, unsubmitted nodes; ordered so the lowest index comes first.
    ready: BTreeSet<usize>,
    running: usize,
    canceled: bool,
}

impl<'g> Scheduler<'g> {
    /// A scheduler with nothing submitted yet.
    pub fn new(graph: &'g TaskGraph) -> Self {
        let count = graph.nodes.len();
        let mut dependents = vec![Vec::new(); count];
        for (i, node) in graph.nodes.iter().enumerate() {
            for &p in &node.inputs {
                if let Some(d) = dependents.get_mut(p) {
                    d.push(i);
                }
            }
        }
        let waiting_on: Vec<usize> = graph.nodes.iter().map(|n| n.inputs.len()).collect();
        let ready = (0..count).filter(|&i| waiting_on[i] == 0).collect();
        Self {
            graph,
            state: vec![State::Pending; count],
            waiting_on,
            dependents,
            ready,
            running: 0,
            canceled: false,
        }
    }

    /// The graph being scheduled.
    pub fn graph(&self) -> &'g TaskGraph {
        self.graph
    }

    /// The node [`next_ready`](Self::next_ready) would return, without claiming it.
    pub fn peek_ready(&self) -> Option<usize> {
        self.ready.first().copied()
    }

    /// Claims the lowest-index eligible node and marks it submitted.
    pub fn next_ready(&mut self) -> Option<usize> {
        let node = self.ready.pop_first()?;
        self.state[node] = State::Running;
        self.running += 1;
        Some(node)
    }

    /// Records the result of a claimed node; successes may make dependents
    /// eligible. Returns false (and changes nothing) when `node` was not
    /// running, so a confused driver cannot corrupt the state.
    pub fn finish(&mut self, node: usize, ok: bool) -> bool {
        if self.state.get(node) != Some(&State::Running) {
            return false;
        }
        self.running -= 1;
        self.state[node] = if ok { State::Succeeded } else { State::Failed };
        if ok {
            self.release_dependents(node);
        }
        true
    }

    /// Stops handing out work (upstream: the context was canceled). Running
    /// nodes may still [`finish`](Self::finish); everything else stays
    /// incomplete.
    pub fn cancel(&mut self) {
        self.canceled = true;
        self.ready.clear();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_canceled(&self) -> bool {
        self.canceled
    }

    /// Number of claimed nodes that have not finished.
    pub fn in_flight(&self) -> usize {
        self.running
    }

    /// True when no claimed node is still running.
    pub fn is_idle(&self) -> bool {
        self.running == 0
    }

    /// True when nothing is running and nothing more can become eligible.
    pub fn is_done(&self) -> bool {
        self.is_idle() && self.ready.is_empty()
    }

    /// Nodes without a result (never run, or still running), in index
    /// order. Includes empty anchor/spacer nodes, as upstream's count does.
    pub fn incomplete(&self) -> Vec<usize> {
        self.indices_where(|s| matches!(s, State::Pending | State::Running))
    }

    /// Nodes that finished with an error, in index order.
    pub fn failed(&self) -> Vec<usize> {
        self.indices_where(|s| s == State::Failed)
    }

    /// Nodes that finished without error, in index order.
    pub fn succeeded(&self) -> Vec<usize> {
        self.indices_where(|s| s == State::Succeeded)
    }

    fn indices_where(&self, keep: impl Fn(State) -> bool) -> Vec<usize> {
        let states = self.state.iter().enumerate();
        states.filter(|&(_, &s)| keep(s)).map(|(i, _)| i).collect()
    }

    fn release_dependents(&mut self, node: usize) {
        for &d in &self.dependents[node] {
            self.waiting_on[d] = self.waiting_on[d].saturating_sub(1);
            let eligible = self.waiting_on[d] == 0 && self.state[d] == State::Pending;
            if eligible && !self.canceled {
                self.ready.insert(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;
    use crate::graph::TaskNode;
    use crate::graph::testutil::{Event, Run, drive, node, oldest_first, seeded};

    /// A graph whose tasks are named by `names`, for upstream-style tables.
    struct Named {
        graph: TaskGraph,
        names: Vec<&'static str>,
    }

    /// Builds a graph from `(task names, inputs, outputs)` triples.
    fn named(spec: &[(&[&'static str], &[usize], &[usize])]) -> Named {
        let mut names = Vec::new();
        let mut nodes = Vec::new();
        for (tasks, inputs, outputs) in spec {
            let ids: Vec<usize> = (names.len()..names.len() + tasks.len()).collect();
            names.extend_from_slice(tasks);
            nodes.push(node(&ids, inputs, outputs));
        }
        Named {
            graph: TaskGraph { nodes },
            names,
        }
    }

    /// Drives `g`, logging task names in completion order; `fail` picks the
    /// task that makes its node return an error (the task is not logged).
    fn run_logged(
        g: &Named,
        workers: usize,
        cancel: &Cell<bool>,
        pick: impl FnMut(usize) -> usize,
        fail: impl Fn(&str) -> Option<String>,
    ) -> (Vec<&'static str>, Run<String>) {
        let log = RefCell::new(Vec::new());
        let run = drive(&g.graph, workers, cancel, pick, |n| {
            for &t in &g.graph.nodes[n].tasks {
                if let Some(err) = fail(g.names[t]) {
                    return Err(err);
                }
                log.borrow_mut().push(g.names[t]);
            }
            Ok(())
        });
        (log.into_inner(), run)
    }

    fn no_cancel() -> Cell<bool> {
        Cell::new(false)
    }

    fn sorted(mut v: Vec<&'static str>) -> Vec<&'static str> {
        v.sort_unstable();
        v
    }

    fn position(log: &[&str], name: &str) -> usize {
        log.iter().position(|&x| x == name).unwrap()
    }

    fn dispatched<E>(run: &Run<E>) -> Vec<usize> {
        let events = run.events.iter();
        events
            .filter_map(|e| match *e {
                Event::Dispatch(n) => Some(n),
                Event::Finish(..) => None,
            })
            .collect()
    }

    #[test]
    fn nodes_executed_after_dependencies() {
        let g = named(&[
            (&["c"], &[3], &[]),
            (&["d", "e"], &[3], &[]),
            (&["f"], &[3], &[4]),
            (&["a", "b"], &[], &[0, 1, 2]),
            (&["g"], &[2], &[]),
        ]);
        for seed in 0..20 {
            let (log, run) = run_logged(&g, 2, &no_cancel(), seeded(seed), |_| None);
            assert!(run.is_success());
            assert_eq!(sorted(log.clone()), ["a", "b", "c", "d", "e", "f", "g"]);
            assert_eq!(&log[..2], ["a", "b"]);
            assert!(position(&log, "d") < position(&log, "e"));
            assert!(position(&log, "f") < position(&log, "g"));
            assert!(run.peak_in_flight <= 2);
        }
        // One worker: strictly the lowest-index eligible node each time.
        let (log, run) = run_logged(&g, 1, &no_cancel(), oldest_first, |_| None);
        assert_eq!(dispatched(&run), [3, 0, 1, 2, 4]);
        assert_eq!(log, ["a", "b", "c", "d", "e", "f", "g"]);
    }

    /// Upstream "task error interrupts node processing".
    #[test]
    fn error_blocks_only_dependents() {
        let g = named(&[
            (&["c"], &[2], &[]),
            (&["d"], &[2], &[3]),
            (&["a", "b"], &[], &[0, 1]),
            (&["e"], &[1], &[]),
        ]);
        for seed in 0..8 {
            let fail = |t: &str| (t == "d").then(|| "error A".to_string());
            let (log, run) = run_logged(&g, 2, &no_cancel(), seeded(seed), fail);
            assert_eq!(sorted(log), ["a", "b", "c"]);
            assert_eq!(run.errors, vec![(1, "error A".to_string())]);
            assert_eq!(run.incomplete, vec![3]);
        }
    }

    /// Upstream "task errors in parallel nodes both reported".
    #[test]
    fn errors_in_parallel_nodes_both_reported() {
        let g = named(&[
            (&["a"], &[], &[1]),
            (&["b"], &[0], &[2, 4, 8]),
            (&["c1"], &[1], &[3]),
            (&["c2"], &[2], &[7]),
            (&["d1"], &[1], &[5]),
            (&["d2"], &[4], &[6]),
            (&["d3"], &[5], &[7]),
            (&["e"], &[3, 6], &[]),
            (&["f"], &[1], &[]),
        ]);
        for seed in 0..8 {
            let fail = |t: &str| matches!(t, "c1" | "f").then(|| format!("error - {t}"));
            let (log, run) = run_logged(&g, 2, &no_cancel(), seeded(seed), fail);
            assert_eq!(sorted(log), ["a", "b", "d1", "d2", "d3"]);
            let errors: Vec<(usize, &str)> =
                run.errors.iter().map(|(n, e)| (*n, e.as_str())).collect();
            assert_eq!(errors, [(2, "error - c1"), (8, "error - f")]);
            assert_eq!(run.incomplete, vec![3, 7]);
        }
    }

    /// Upstream "mid-task cancellation error interrupts node processing":
    /// `d` fails and cancels while `c` is still in flight; `c` still finishes.
    #[test]
    fn cancellation_error_from_a_node() {
        let g = named(&[
            (&["c"], &[2], &[]),
            (&["d"], &[2], &[3]),
            (&["a", "b"], &[], &[0, 1]),
            (&["e"], &[1], &[]),
        ]);
        let cancel = no_cancel();
        let fail = |t: &str| {
            (t == "d").then(|| {
                cancel.set(true);
                "context canceled".to_string()
            })
        };
        let newest_first = |n: usize| n - 1;
        let (log, run) = run_logged(&g, 2, &cancel, newest_first, fail);
        assert_eq!(log, ["a", "b", "c"]);
        assert_eq!(run.errors, vec![(1, "context canceled".to_string())]);
        assert_eq!(run.incomplete, vec![3]);
    }

    /// Upstream "cancelation without task errors is reported".
    #[test]
    fn cancellation_without_errors_leaves_undispatched_incomplete() {
        let g = named(&[(&["a"], &[], &[1]), (&["b"], &[0], &[])]);
        let cancel = no_cancel();
        let fail = |t: &str| {
            assert_ne!(t, "b", "task b should never run");
            cancel.set(true);
            None
        };
        let (log, run) = run_logged(&g, 1, &cancel, oldest_first, fail);
        assert_eq!(log, ["a"]);
        assert!(run.errors.is_empty());
        assert_eq!(run.incomplete, vec![1]);
    }

    #[test]
    fn cancel_before_start_leaves_everything_incomplete_in_index_order() {
        // Empty anchor/spacer nodes count as incomplete too, as upstream's count does.
        let g = TaskGraph {
            nodes: vec![
                node(&[], &[], &[1]),
                node(&[], &[0], &[2]),
                node(&[7], &[1], &[]),
                node(&[8], &[], &[]),
            ],
        };
        let run = drive(&g, 4, &Cell::new(true), oldest_first, |_| Ok::<(), ()>(()));
        assert!(run.events.is_empty());
        assert_eq!(run.incomplete, vec![0, 1, 2, 3]);
    }

    #[test]
    fn scheduler_dispatches_lowest_index_first() {
        let g = named(&[
            (&["c"], &[3], &[]),
            (&["d"], &[3], &[]),
            (&["x"], &[], &[]),
            (&["a"], &[], &[0, 1]),
        ]);
        let mut s = Scheduler::new(&g.graph);
        assert_eq!(s.peek_ready(), Some(2));
        assert_eq!(s.next_ready(), Some(2));
        assert_eq!(s.next_ready(), Some(3));
        assert_eq!(s.next_ready(), None);
        assert_eq!(s.in_flight(), 2);
        assert!(!s.is_idle() && !s.is_done());
        assert!(s.finish(3, true));
        assert!(!s.finish(3, true), "finishing twice is ignored");
        assert!(!s.finish(0, true), "finishing an unclaimed node is ignored");
        assert!(!s.finish(99, true), "unknown nodes are ignored");
        assert_eq!(s.next_ready(), Some(0));
        assert_eq!(s.next_ready(), Some(1));
        s.finish(0, true);
        s.finish(1, false);
        s.finish(2, true);
        assert!(s.is_done());
        assert_eq!(s.succeeded(), vec![0, 2, 3]);
        assert_eq!(s.failed(), vec![1]);
        assert!(s.incomplete().is_empty());
    }

    #[test]
    fn scheduler_failure_blocks_transitively_and_cancel_stops() {
        let g = TaskGraph {
            nodes: vec![
                node(&[0], &[], &[1]),
                node(&[1], &[0], &[2]),
                node(&[2], &[1], &[]),
                node(&[3], &[], &[]),
                node(&[4], &[42], &[]), // input does not exist: never eligible
            ],
        };
        let mut s = Scheduler::new(&g);
        assert_eq!(s.next_ready(), Some(0));
        s.finish(0, false);
        assert_eq!(s.next_ready(), Some(3));
        s.cancel();
        assert!(s.is_canceled());
        assert_eq!(s.next_ready(), None);
        assert!(s.finish(3, true));
        assert!(s.is_done());
        assert_eq!(s.incomplete(), vec![1, 2, 4]);
    }

    #[test]
    fn empty_nodes_complete_at_once() {
        let g = TaskGraph {
            nodes: vec![
                node(&[], &[], &[1, 2]),
                node(&[0], &[0], &[3]),
                node(&[1], &[0], &[3]),
                node(&[], &[1, 2], &[4]),
                node(&[2], &[3], &[]),
            ],
        };
        let calls = RefCell::new(Vec::new());
        let run = drive(&g, 3, &no_cancel(), oldest_first, |n| {
            calls.borrow_mut().push(n);
            Ok::<(), ()>(())
        });
        assert!(run.is_success());
        assert_eq!(calls.into_inner(), [1, 2, 4]);
        use Event::{Dispatch as D, Finish as F};
        let want = [D(0), F(0, true), D(1), D(2), F(1, true), F(2, true)];
        assert_eq!(run.events[..6], want);
        assert_eq!(run.events[6..], [D(3), F(3, true), D(4), F(4, true)]);
    }

    /// Highest number of simultaneously running nodes for `workers`.
    fn peak_in_flight(workers: usize) -> usize {
        let g = TaskGraph {
            nodes: (0..8)
                .map(|t| TaskNode {
                    tasks: vec![t],
                    ..TaskNode::default()
                })
                .collect(),
        };
        let run = drive(&g, workers, &no_cancel(), seeded(7), |_| Ok::<(), ()>(()));
        assert!(run.is_success());
        run.peak_in_flight
    }

    #[test]
    fn at_most_workers_in_flight_and_zero_means_one() {
        assert_eq!(peak_in_flight(0), 1);
        assert_eq!(peak_in_flight(1), 1);
        assert_eq!(peak_in_flight(3), 3);
        assert_eq!(peak_in_flight(8), 8);
        assert_eq!(peak_in_flight(20), 8);
    }

    #[test]
    fn empty_graph_and_single_empty_node() {
        let never = |_| Err("never");
        let run = drive(&TaskGraph::default(), 4, &no_cancel(), oldest_first, never);
        assert!(run.is_success() && run.events.is_empty());
        let run = drive(&TaskGraph::new(0), 4, &no_cancel(), oldest_first, never);
        assert!(run.is_success());
        assert_eq!(run.events, [Event::Dispatch(0), Event::Finish(0, true)]);
    }
}
