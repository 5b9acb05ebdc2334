//! Running a graph: a pure scheduling state machine ([`Scheduler`]) and a
//! scoped thread-pool driver ([`run_graph`]) with upstream `RunGraph`
//! semantics.
//!
//! Rules (spec §1.9): a node is eligible when it has not been submitted yet
//! and every one of its inputs finished without error; the lowest-index
//! eligible node is dispatched first. A failed node blocks its dependents
//! (transitively) but independent branches keep going. Nodes that never ran
//! are reported as incomplete.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

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
/// It performs no I/O and owns no threads, so a synchronous pool
/// ([`run_graph`]) or an async operator can drive it: call
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

/// What [`run_graph`] reports.
#[derive(Debug)]
pub struct RunOutcome<E> {
    /// Errors returned by `run_node`, ordered by node index (as upstream).
    pub errors: Vec<(usize, E)>,
    /// Nodes that never ran (blocked by a failure, or canceled), in index
    /// order, including empty anchor/spacer nodes.
    pub incomplete: Vec<usize>,
}

impl<E> RunOutcome<E> {
    /// True when every node ran and none failed.
    pub fn is_success(&self) -> bool {
        self.errors.is_empty() && self.incomplete.is_empty()
    }

    /// First task of the first incomplete node that has tasks.
    ///
    /// Empty nodes are skipped because they have no task to name (the
    /// upstream revision that indexes `Tasks[0]` blindly would panic there).
    pub fn first_incomplete_task(&self, graph: &TaskGraph) -> Option<usize> {
        self.incomplete.iter().find_map(|&n| {
            graph
                .nodes
                .get(n)
                .and_then(|node| node.tasks.first().copied())
        })
    }

    /// Upstream's synthetic error: only when no node failed but some work
    /// was left undone, `<count> incomplete task nodes, beginning with <task>`.
    pub fn incomplete_summary(
        &self,
        graph: &TaskGraph,
        label: impl Fn(usize) -> String,
    ) -> Option<String> {
        if !self.errors.is_empty() {
            return None;
        }
        let first = self.first_incomplete_task(graph)?;
        Some(incomplete_message(self.incomplete.len(), &label(first)))
    }
}

/// `<count> incomplete task nodes, beginning with <first_task>`, verbatim
/// from upstream `RunGraph`.
pub fn incomplete_message(count: usize, first_task: &str) -> String {
    format!("{count} incomplete task nodes, beginning with {first_task}")
}

/// Runs every node of `graph` on `max(1, workers)` scoped threads.
///
/// `run_node` receives a node index and applies that node's tasks in order.
/// An error blocks only the failed node's dependents; independent branches
/// continue. Empty anchor/spacer nodes complete instantly without calling
/// `run_node`. If `run_node` panics, its node counts as failed so the other
/// workers drain normally, and the panic is re-raised once they have.
pub fn run_graph<E: Send>(
    graph: &TaskGraph,
    workers: usize,
    run_node: impl Fn(usize) -> Result<(), E> + Sync,
) -> RunOutcome<E> {
    run_graph_cancellable(graph, workers, &AtomicBool::new(false), run_node)
}

/// [`run_graph`] that stops dispatching new nodes once `cancel` is set
/// (upstream: context cancellation). Running nodes finish normally (they
/// may watch `cancel` themselves); undispatched nodes become incomplete.
pub fn run_graph_cancellable<E: Send>(
    graph: &TaskGraph,
    workers: usize,
    cancel: &AtomicBool,
    run_node: impl Fn(usize) -> Result<(), E> + Sync,
) -> RunOutcome<E> {
    let pool = Pool::new(graph);
    // More threads than nodes could never be busy.
    let threads = workers.clamp(1, graph.nodes.len().max(1));
    thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| pool.work(cancel, &run_node));
        }
    });
    pool.into_outcome()
}

/// State shared by the worker threads.
struct Pool<'g, E> {
    shared: Mutex<Shared<'g, E>>,
    wake: Condvar,
}

struct Shared<'g, E> {
    scheduler: Scheduler<'g>,
    errors: Vec<(usize, E)>,
}

impl<'g, E> Pool<'g, E> {
    fn new(graph: &'g TaskGraph) -> Self {
        let scheduler = Scheduler::new(graph);
        let shared = Shared {
            scheduler,
            errors: Vec::new(),
        };
        Self {
            shared: Mutex::new(shared),
            wake: Condvar::new(),
        }
    }

    /// Never panics on poisoning: the lock is never held while user code
    /// runs, so the protected state is always consistent.
    fn lock(&self) -> MutexGuard<'_, Shared<'g, E>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One worker: claim, run, record, until the graph is drained.
    fn work(&self, cancel: &AtomicBool, run_node: &impl Fn(usize) -> Result<(), E>) {
        while let Some(node) = self.claim(cancel) {
            let claim = Claim {
                pool: self,
                node,
                armed: true,
            };
            claim.complete(run_node(node));
        }
    }

    /// Blocks until a node with tasks is claimed (`Some`) or the graph is
    /// drained (`None`). Empty nodes are completed on the spot.
    fn claim(&self, cancel: &AtomicBool) -> Option<usize> {
        let mut shared = self.lock();
        loop {
            if cancel.load(Ordering::SeqCst) {
                shared.scheduler.cancel();
            }
            if let Some(node) = shared.scheduler.next_ready() {
                if has_tasks(shared.scheduler.graph(), node) {
                    return Some(node);
                }
                shared.scheduler.finish(node, true);
                continue;
            }
            if shared.scheduler.is_idle() {
                self.wake.notify_all();
                return None;
            }
            shared = self
                .wake
                .wait(shared)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Stores a node's result (`None`: it panicked) and wakes waiters.
    fn record(&self, node: usize, result: Option<Result<(), E>>) {
        let mut shared = self.lock();
        let ok = matches!(result, Some(Ok(())));
        if let Some(Err(err)) = result {
            shared.errors.push((node, err));
        }
        shared.scheduler.finish(node, ok);
        drop(shared);
        self.wake.notify_all();
    }

    fn into_outcome(self) -> RunOutcome<E> {
        let shared = self
            .shared
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let incomplete = shared.scheduler.incomplete();
        let mut errors = shared.errors;
        errors.sort_by_key(|&(node, _)| node);
        RunOutcome { errors, incomplete }
    }
}

/// A claimed node; if dropped without [`complete`](Self::complete) (the
/// worker is unwinding from a panic in `run_node`) it records a failure so
/// the remaining workers do not wait for it forever.
struct Claim<'p, 'g, E> {
    pool: &'p Pool<'g, E>,
    node: usize,
    armed: bool,
}

impl<E> Claim<'_, '_, E> {
    fn complete(mut self, result: Result<(), E>) {
        self.armed = false;
        self.pool.record(self.node, Some(result));
    }
}

impl<E> Drop for Claim<'_, '_, E> {
    fn drop(&mut self) {
        if self.armed {
            self.pool.record(self.node, None);
        }
    }
}

fn has_tasks(graph: &TaskGraph, node: usize) -> bool {
    graph.nodes.get(node).is_some_and(|n| !n.tasks.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::TaskNode;
    use crate::graph::testutil::node;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

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

    /// Runs `g`, logging task names in completion order; `fail` picks the
    /// task that makes its node return an error (the task is not logged).
    fn run_logged(
        g: &Named,
        workers: usize,
        cancel: &AtomicBool,
        fail: impl Fn(&str) -> Option<String> + Sync,
    ) -> (Vec<&'static str>, RunOutcome<String>) {
        let log = Mutex::new(Vec::new());
        let outcome = run_graph_cancellable(&g.graph, workers, cancel, |n| {
            for &t in &g.graph.nodes[n].tasks {
                thread::sleep(Duration::from_micros((t as u64 % 3) * 300));
                if let Some(err) = fail(g.names[t]) {
                    return Err(err);
                }
                log.lock().unwrap().push(g.names[t]);
            }
            Ok(())
        });
        (log.into_inner().unwrap(), outcome)
    }

    fn no_cancel() -> AtomicBool {
        AtomicBool::new(false)
    }

    fn sorted(mut v: Vec<&'static str>) -> Vec<&'static str> {
        v.sort_unstable();
        v
    }

    fn position(log: &[&str], name: &str) -> usize {
        log.iter().position(|&x| x == name).unwrap()
    }

    #[test]
    fn tasks_executed_in_order() {
        let g = named(&[(&["a", "b"], &[], &[])]);
        let (log, outcome) = run_logged(&g, 0, &no_cancel(), |_| None);
        assert_eq!(log, ["a", "b"]);
        assert!(outcome.is_success());
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
        for _ in 0..20 {
            let (log, outcome) = run_logged(&g, 2, &no_cancel(), |_| None);
            assert!(outcome.is_success());
            assert_eq!(sorted(log.clone()), ["a", "b", "c", "d", "e", "f", "g"]);
            assert_eq!(&log[..2], ["a", "b"]);
            assert!(position(&log, "d") < position(&log, "e"));
            assert!(position(&log, "f") < position(&log, "g"));
        }
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
        let fail = |t: &str| (t == "d").then(|| "error A".to_string());
        let (log, outcome) = run_logged(&g, 2, &no_cancel(), fail);
        assert_eq!(sorted(log), ["a", "b", "c"]);
        assert_eq!(outcome.errors, vec![(1, "error A".to_string())]);
        assert_eq!(outcome.incomplete, vec![3]);
        assert_eq!(
            outcome.incomplete_summary(&g.graph, |t| g.names[t].into()),
            None
        );
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
        let fail = |t: &str| matches!(t, "c1" | "f").then(|| format!("error - {t}"));
        let (log, outcome) = run_logged(&g, 2, &no_cancel(), fail);
        assert_eq!(sorted(log), ["a", "b", "d1", "d2", "d3"]);
        let errors: Vec<(usize, &str)> = outcome
            .errors
            .iter()
            .map(|(n, e)| (*n, e.as_str()))
            .collect();
        assert_eq!(errors, [(2, "error - c1"), (8, "error - f")]);
        assert_eq!(outcome.incomplete, vec![3, 7]);
    }

    /// Upstream "mid-task cancellation error interrupts node processing".
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
                cancel.store(true, Ordering::SeqCst);
                "context canceled".to_string()
            })
        };
        let (log, outcome) = run_logged(&g, 2, &cancel, fail);
        assert!(!log.contains(&"e"));
        assert_eq!(outcome.errors, vec![(1, "context canceled".to_string())]);
        assert!(outcome.incomplete.contains(&3));
    }

    /// Upstream "cancelation without task errors is reported".
    #[test]
    fn cancellation_without_errors_reports_incomplete() {
        let g = named(&[(&["a"], &[], &[1]), (&["b"], &[0], &[])]);
        let cancel = no_cancel();
        let fail = |t: &str| {
            assert_ne!(t, "b", "task b should never run");
            cancel.store(true, Ordering::SeqCst);
            None
        };
        let (log, outcome) = run_logged(&g, 1, &cancel, fail);
        assert_eq!(log, ["a"]);
        assert!(outcome.errors.is_empty());
        assert_eq!(outcome.incomplete, vec![1]);
        assert_eq!(
            outcome
                .incomplete_summary(&g.graph, |t| g.names[t].into())
                .as_deref(),
            Some("1 incomplete task nodes, beginning with b")
        );
    }

    #[test]
    fn incomplete_message_is_verbatim() {
        assert_eq!(
            incomplete_message(1, "configmap \"default/b\" (0 of 0)"),
            "1 incomplete task nodes, beginning with configmap \"default/b\" (0 of 0)"
        );
    }

    #[test]
    fn incomplete_summary_skips_empty_nodes_but_counts_them() {
        // 0 fails nothing; cancel before anything runs: all three incomplete.
        let g = TaskGraph {
            nodes: vec![
                node(&[], &[], &[1]),
                node(&[], &[0], &[2]),
                node(&[7], &[1], &[]),
            ],
        };
        let cancel = AtomicBool::new(true);
        let outcome = run_graph_cancellable(&g, 4, &cancel, |_| Ok::<(), ()>(()));
        assert_eq!(outcome.incomplete, vec![0, 1, 2]);
        assert_eq!(outcome.first_incomplete_task(&g), Some(7));
        assert_eq!(
            outcome
                .incomplete_summary(&g, |t| format!("task {t}"))
                .as_deref(),
            Some("3 incomplete task nodes, beginning with task 7")
        );
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
    fn empty_nodes_run_instantly_without_run_node() {
        let g = TaskGraph {
            nodes: vec![
                node(&[], &[], &[1, 2]),
                node(&[0], &[0], &[3]),
                node(&[1], &[0], &[3]),
                node(&[], &[1, 2], &[4]),
                node(&[2], &[3], &[]),
            ],
        };
        let calls = Mutex::new(Vec::new());
        let outcome = run_graph(&g, 3, |n| {
            calls.lock().unwrap().push(n);
            Ok::<(), ()>(())
        });
        assert!(outcome.is_success());
        let mut calls = calls.into_inner().unwrap();
        assert_eq!(calls.pop(), Some(4));
        calls.sort_unstable();
        assert_eq!(calls, vec![1, 2]);
    }

    /// Highest number of simultaneously running nodes for `workers`.
    fn peak_concurrency(workers: usize) -> usize {
        let g = TaskGraph {
            nodes: (0..8)
                .map(|t| TaskNode {
                    tasks: vec![t],
                    ..TaskNode::default()
                })
                .collect(),
        };
        let (now, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let outcome = run_graph(&g, workers, |_| {
            let current = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(current, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(5));
            now.fetch_sub(1, Ordering::SeqCst);
            Ok::<(), ()>(())
        });
        assert!(outcome.is_success());
        peak.into_inner()
    }

    #[test]
    fn zero_workers_means_one() {
        assert_eq!(peak_concurrency(0), 1);
        assert_eq!(peak_concurrency(1), 1);
        assert!(peak_concurrency(3) <= 3);
    }

    #[test]
    fn empty_graph_and_single_empty_node() {
        let outcome = run_graph(&TaskGraph::default(), 4, |_| Err("never"));
        assert!(outcome.is_success());
        let outcome = run_graph(&TaskGraph::new(0), 4, |_| Err("never"));
        assert!(outcome.is_success());
    }

    #[test]
    fn panicking_node_does_not_hang_the_pool() {
        let g = named(&[(&["a"], &[], &[1]), (&["b"], &[0], &[]), (&["c"], &[], &[])]);
        let ran_c = AtomicBool::new(false);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_graph(&g.graph, 2, |n| {
                match g.names[g.graph.nodes[n].tasks[0]] {
                    "a" => panic!("boom"),
                    "b" => unreachable!("b depends on a"),
                    _ => ran_c.store(true, Ordering::SeqCst),
                }
                Ok::<(), ()>(())
            })
        }));
        assert!(result.is_err(), "the panic is propagated");
        assert!(ran_c.load(Ordering::SeqCst), "independent work still ran");
    }
}
