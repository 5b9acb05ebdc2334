//! Test fixtures shared by the graph tests, and [`drive`]: a deterministic,
//! single-threaded driver for the [`Scheduler`].

use std::cell::Cell;

use super::{GraphTask, Scheduler, SplitMix64, TaskGraph};

/// A stand-in manifest: a file name and whether it is a `batch/v1` Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fake {
    pub name: String,
    pub job: bool,
}

impl GraphTask for Fake {
    fn file_name(&self) -> &str {
        &self.name
    }
    fn is_job(&self) -> bool {
        self.job
    }
}

/// A non-Job task.
pub fn pod(name: &str) -> Fake {
    Fake {
        name: name.to_string(),
        job: false,
    }
}

/// A Job task.
pub fn job(name: &str) -> Fake {
    Fake {
        name: name.to_string(),
        job: true,
    }
}

/// Non-Job tasks with the given names.
pub fn pods(names: &[&str]) -> Vec<Fake> {
    names.iter().map(|n| pod(n)).collect()
}

/// Shorthand for a node literal in expected graphs.
pub fn node(tasks: &[usize], inputs: &[usize], outputs: &[usize]) -> super::TaskNode {
    super::TaskNode {
        tasks: tasks.to_vec(),
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    }
}

/// One step of a [`drive`]n run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The scheduler handed this node out ([`Scheduler::next_ready`]).
    Dispatch(usize),
    /// The node finished; `true` when it succeeded ([`Scheduler::finish`]).
    Finish(usize, bool),
}

/// What [`drive`] observed.
#[derive(Debug)]
pub struct Run<E> {
    /// Every dispatch and finish, in the order they happened.
    pub events: Vec<Event>,
    /// Errors returned by `run_node`, ordered by node index.
    pub errors: Vec<(usize, E)>,
    /// [`Scheduler::incomplete`] once the scheduler is done.
    pub incomplete: Vec<usize>,
    /// Highest [`Scheduler::in_flight`] seen.
    pub peak_in_flight: usize,
}

impl<E> Run<E> {
    /// True when every node ran and none failed.
    pub fn is_success(&self) -> bool {
        self.errors.is_empty() && self.incomplete.is_empty()
    }
}

/// Drives a [`Scheduler`] over `graph` to the end, deterministically on the
/// calling thread, the way the operator's executor steps it.
///
/// Up to `max(1, workers)` claimed nodes are in flight at once; slots are
/// refilled from [`Scheduler::next_ready`] (lowest index first) whenever one
/// frees up. `pick(n)` chooses which of the `n` in-flight nodes (in dispatch
/// order; taken modulo `n`) completes next: that is when `run_node` is called
/// for it and its result is passed to [`Scheduler::finish`]. Empty
/// anchor/spacer nodes complete as soon as they are claimed, without a slot
/// and without `run_node`. Once `cancel` is set (checked before every claim,
/// like upstream's context) the scheduler is canceled; in-flight nodes still
/// complete.
pub fn drive<E>(
    graph: &TaskGraph,
    workers: usize,
    cancel: &Cell<bool>,
    mut pick: impl FnMut(usize) -> usize,
    mut run_node: impl FnMut(usize) -> Result<(), E>,
) -> Run<E> {
    let slots = workers.max(1);
    let mut s = Scheduler::new(graph);
    let mut run = Run {
        events: Vec::new(),
        errors: Vec::new(),
        incomplete: Vec::new(),
        peak_in_flight: 0,
    };
    let mut in_flight: Vec<usize> = Vec::new();
    loop {
        while in_flight.len() < slots {
            if cancel.get() {
                s.cancel();
            }
            let Some(node) = s.next_ready() else {
                break;
            };
            run.events.push(Event::Dispatch(node));
            if graph.nodes[node].tasks.is_empty() {
                assert!(s.finish(node, true));
                run.events.push(Event::Finish(node, true));
            } else {
                in_flight.push(node);
            }
            assert_eq!(s.in_flight(), in_flight.len());
            run.peak_in_flight = run.peak_in_flight.max(s.in_flight());
        }
        if in_flight.is_empty() {
            break;
        }
        let node = in_flight.remove(pick(in_flight.len()) % in_flight.len());
        let result = run_node(node);
        let ok = result.is_ok();
        if let Err(err) = result {
            run.errors.push((node, err));
        }
        assert!(s.finish(node, ok), "node {node} was not running");
        run.events.push(Event::Finish(node, ok));
        assert_eq!(s.in_flight(), in_flight.len());
    }
    assert!(s.is_done());
    run.errors.sort_by_key(|&(node, _)| node);
    run.incomplete = s.incomplete();
    run
}

/// `pick` for [`drive`]: the oldest in-flight node completes first.
pub fn oldest_first(_: usize) -> usize {
    0
}

/// `pick` for [`drive`]: completions in a pseudo-random order fixed by `seed`.
pub fn seeded(seed: u64) -> impl FnMut(usize) -> usize {
    let mut rng = SplitMix64::new(seed);
    move |n| rng.below(n as u64) as usize
}
