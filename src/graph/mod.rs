//! The run-level task graph, built exactly as the upstream Cluster Version
//! Operator builds it (`pkg/payload/task_graph.go`), plus a pure scheduler.
//!
//! Why a graph at all: a release payload is an ordered list of manifests
//! whose file names encode a *run level* and a *component*
//! (`0000_<level>_<component>_<rest>`). Run levels must be applied in order,
//! but different components inside one run level may be applied in parallel,
//! and every `batch/v1` `Job` is a hard barrier. The graph records exactly that.
//!
//! Construction (spec §1.9):
//! 1. [`TaskGraph::new`] — one node holding every task, in payload order.
//! 2. [`TaskGraph::split_on_jobs`] — every Job gets a node of its own that
//!    sits serially between what came before and what comes after it.
//! 3. [`TaskGraph::parallelize`] with the mode's breaker
//!    ([`by_number_and_component`] when updating,
//!    [`flatten_by_number_and_component`] when installing, a permuted and
//!    shifted flatten when reconciling).
//!
//! Node indices and edges match upstream's layout one for one, including the
//! empty "anchor" and "spacer" nodes, so graphs can be compared against
//! upstream test tables and DOT dumps.
//!
//! Everything here is pure logic: no I/O, no async, no threads. [`Scheduler`]
//! is a plain state machine; the operator's executor (`operator::apply`)
//! steps it with tokio tasks.

mod breakers;
mod build;
mod runlevel;
mod schedule;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod testutil;

pub use breakers::{
    SplitMix64, by_number_and_component, flatten_by_number_and_component, permute_order,
    shift_order,
};
pub use runlevel::parse_run_level;
pub use schedule::Scheduler;

/// What the graph needs to know about a task.
///
/// Implemented by the manifest type elsewhere; the graph only looks at the
/// file name (run level and component) and at whether the task is a Job
/// (a serial barrier).
pub trait GraphTask {
    /// Base file name of the manifest (e.g. `0000_50_olm_00-namespace.yaml`).
    fn file_name(&self) -> &str;
    /// True when the manifest's apiVersion is exactly `batch/v1` and its kind `Job`.
    fn is_job(&self) -> bool;
}

impl<T: GraphTask + ?Sized> GraphTask for &T {
    fn file_name(&self) -> &str {
        (**self).file_name()
    }
    fn is_job(&self) -> bool {
        (**self).is_job()
    }
}

/// One node of the graph: a serial list of tasks plus its edges.
///
/// `tasks` are indices into the task slice the graph was built from, in the
/// order they must be applied. `inputs`/`outputs` are upstream's `In`/`Out`:
/// indices of nodes that must finish before this one, and of nodes waiting on
/// it. A node with no tasks is an anchor or spacer; it exists only to keep
/// the edge count linear and "runs" instantly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskNode {
    /// Task indices, applied in this order.
    pub tasks: Vec<usize>,
    /// Predecessor node indices (upstream `In`).
    pub inputs: Vec<usize>,
    /// Successor node indices (upstream `Out`).
    pub outputs: Vec<usize>,
}

/// The task graph: plain data, indices into `nodes` are node ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskGraph {
    /// All nodes; edges refer to positions in this vector.
    pub nodes: Vec<TaskNode>,
}

/// The CVO sync state, which decides how much parallelism is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Moving to a new payload: run levels strictly in order.
    Update,
    /// First install: order barely matters, everything but Jobs in parallel.
    Install,
    /// Re-applying the current payload. `attempt` is the consecutive-failure
    /// counter; it varies the order so one stuck manifest cannot starve the
    /// others forever.
    Reconcile {
        /// Upstream `SyncWork.Attempt`.
        attempt: u64,
    },
}

/// Worker count upstream passes to `RunGraph` for each mode.
///
/// Updating uses `maxWorkers` (16), installing one worker per node (so the
/// whole flattened graph can start at once), reconciling only 2 to stay
/// gentle on a healthy cluster.
pub fn workers_for(mode: Mode, graph: &TaskGraph) -> usize {
    match mode {
        Mode::Update => 16,
        Mode::Install => graph.nodes.len(),
        Mode::Reconcile { .. } => 2,
    }
}
