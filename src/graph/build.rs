//! Graph construction: `NewTaskGraph`, `Split(SplitOnJobs)`, `Parallelize`,
//! `bulkAdd` and `Tree`, ported so that node indices and edge order match
//! upstream exactly (new nodes are always appended, never inserted).

use super::{
    GraphTask, Mode, SplitMix64, TaskGraph, TaskNode, by_number_and_component,
    flatten_by_number_and_component, permute_order, shift_order,
};

/// Upstream's reconcile stride: the permutation changes every 8 attempts,
/// and the rotation walks through the nodes within those 8.
const RECONCILE_STRIDE: u64 = 8;

impl TaskGraph {
    /// One node holding every task in payload order (upstream `NewTaskGraph`).
    pub fn new(task_count: usize) -> Self {
        let node = TaskNode {
            tasks: (0..task_count).collect(),
            ..TaskNode::default()
        };
        Self { nodes: vec![node] }
    }

    /// Builds the graph the CVO would run for `tasks` in `mode`.
    pub fn build<T: GraphTask>(tasks: &[T], mode: Mode) -> Self {
        let mut graph = Self::new(tasks.len());
        graph.split_on_jobs(tasks);
        graph.parallelize(breaker_for(tasks, mode));
        graph
    }

    /// Upstream `Split(SplitOnJobs)`: every Job becomes a serial barrier.
    ///
    /// Jobs may depend on anything applied before them and anything after
    /// them may depend on the Job, so nothing may be reordered across one.
    /// Indices outside `tasks` are not Jobs.
    pub fn split_on_jobs<T: GraphTask>(&mut self, tasks: &[T]) {
        self.split(|t| tasks.get(t).is_some_and(GraphTask::is_job));
    }

    /// Upstream `Split`: for each node with more than one task, the first
    /// task matching `on` gets the node to itself, with the tasks before it
    /// in a new predecessor node and the tasks after it in a new successor
    /// node (both appended). Appended nodes are scanned too, so every
    /// matching task ends up alone.
    pub fn split(&mut self, mut on: impl FnMut(usize) -> bool) {
        let mut i = 0;
        while i < self.nodes.len() {
            self.split_node(i, &mut on);
            i += 1;
        }
    }

    /// Upstream `Parallelize`: replaces each node whose tasks `breaker` cuts
    /// into more than one node by a chain of layers.
    ///
    /// The node itself becomes an empty left anchor; layers are connected
    /// all-to-all when either side has a single node, otherwise through an
    /// empty spacer node (so M×N edges become M+N). When the node had
    /// successors an empty right anchor is appended in front of them.
    /// `breaker` sees appended nodes too, exactly as upstream.
    pub fn parallelize(&mut self, mut breaker: impl FnMut(&[usize]) -> Vec<Vec<Vec<usize>>>) {
        let mut i = 0;
        while i < self.nodes.len() {
            let steps = breaker(&self.nodes[i].tasks);
            if !is_noop(&steps) {
                self.expand(i, steps);
            }
            i += 1;
        }
    }

    /// Nodes without predecessors (upstream `Roots`).
    pub fn roots(&self) -> Vec<usize> {
        let roots = self.nodes.iter().enumerate();
        roots
            .filter(|(_, n)| n.inputs.is_empty())
            .map(|(i, _)| i)
            .collect()
    }

    /// Graphviz DOT in upstream's `Tree` layout: one box per node listing
    /// its task labels (`no manifests` for anchors and spacers), then every
    /// `Out` edge. Double quotes are stripped from labels, as upstream does.
    pub fn to_dot(&self, label: impl Fn(usize) -> String) -> String {
        let mut out: Vec<String> = ["digraph tasks {", "  labelloc=t;", "  rankdir=TB;"]
            .map(String::from)
            .to_vec();
        for (i, node) in self.nodes.iter().enumerate() {
            let text = node_label(node, &label);
            out.push(format!("  {i} [ label=\"{text}\" shape=\"box\" ];"));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            out.extend(node.outputs.iter().map(|j| format!("  {i} -> {j};")));
        }
        out.push("}".to_string());
        out.join("\n")
    }

    /// One `Split` step on node `i` (which must exist).
    fn split_node(&mut self, i: usize, on: &mut impl FnMut(usize) -> bool) {
        let tasks = self.nodes[i].tasks.clone();
        if tasks.len() <= 1 {
            return;
        }
        let Some(j) = tasks.iter().position(|&t| on(t)) else {
            return;
        };
        if j > 0 {
            self.split_left(i, tasks[..j].to_vec());
        }
        if j + 1 < tasks.len() {
            self.split_right(i, tasks[j + 1..].to_vec());
        }
        self.nodes[i].tasks = vec![tasks[j]];
    }

    /// Moves node `i`'s predecessors onto a new node holding `left`.
    fn split_left(&mut self, i: usize, left: Vec<usize>) {
        let next = self.nodes.len();
        let inputs = std::mem::replace(&mut self.nodes[i].inputs, vec![next]);
        for &p in &inputs {
            self.redirect_outputs(p, i, next);
        }
        self.nodes.push(TaskNode {
            tasks: left,
            inputs,
            outputs: vec![i],
        });
    }

    /// Moves node `i`'s successors behind a new node holding `right`.
    fn split_right(&mut self, i: usize, right: Vec<usize>) {
        let next = self.nodes.len();
        let outputs = std::mem::replace(&mut self.nodes[i].outputs, vec![next]);
        for &s in &outputs {
            self.redirect_inputs(s, i, next);
        }
        self.nodes.push(TaskNode {
            tasks: right,
            inputs: vec![i],
            outputs,
        });
    }

    /// Turns node `i` into a left anchor followed by `steps`.
    fn expand(&mut self, i: usize, steps: Vec<Vec<Vec<usize>>>) {
        self.nodes[i].tasks.clear();
        let outputs = std::mem::take(&mut self.nodes[i].outputs);
        let mut layer = vec![i];
        for nodes in steps.into_iter().filter(|nodes| !nodes.is_empty()) {
            if layer.len() > 1 && nodes.len() > 1 {
                layer = self.bulk_add(vec![Vec::new()], &layer);
            }
            layer = self.bulk_add(nodes, &layer);
        }
        if !outputs.is_empty() {
            self.add_right_anchor(i, outputs, layer);
        }
    }

    /// Appends an empty node between the last `layer` and the successors the
    /// expanded node `i` used to have.
    fn add_right_anchor(&mut self, i: usize, outputs: Vec<usize>, layer: Vec<usize>) {
        let next = self.nodes.len();
        for &s in &outputs {
            self.redirect_inputs(s, i, next);
        }
        for &j in &layer {
            if let Some(node) = self.nodes.get_mut(j) {
                node.outputs = vec![next];
            }
        }
        self.nodes.push(TaskNode {
            tasks: Vec::new(),
            inputs: layer,
            outputs,
        });
    }

    /// Upstream `bulkAdd`: appends one node per task list, each depending on
    /// all of `inputs`, and records the new nodes (deduplicated) as outputs
    /// of every input. Returns the new node indices.
    fn bulk_add(&mut self, nodes: Vec<Vec<usize>>, inputs: &[usize]) -> Vec<usize> {
        let from = self.nodes.len();
        let added: Vec<usize> = (from..from + nodes.len()).collect();
        for tasks in nodes {
            let inputs = inputs.to_vec();
            self.nodes.push(TaskNode {
                tasks,
                inputs,
                outputs: Vec::new(),
            });
        }
        for &k in inputs {
            if let Some(node) = self.nodes.get_mut(k) {
                append_unique(&mut node.outputs, &added);
            }
        }
        added
    }

    /// In node `at`'s outputs, replaces `from` by `to` (upstream `replaceOut`).
    fn redirect_outputs(&mut self, at: usize, from: usize, to: usize) {
        if let Some(node) = self.nodes.get_mut(at) {
            replace_all(&mut node.outputs, from, to);
        }
    }

    /// In node `at`'s inputs, replaces `from` by `to` (upstream `replaceIn`).
    fn redirect_inputs(&mut self, at: usize, from: usize, to: usize) {
        if let Some(node) = self.nodes.get_mut(at) {
            replace_all(&mut node.inputs, from, to);
        }
    }
}

/// The breaker the CVO uses for `mode` (see `SyncWorker.apply`).
///
/// The reconcile generator is created once per graph and shared by every
/// node, like upstream's `rand.New(rand.NewSource(epoch))`.
fn breaker_for<T: GraphTask>(
    tasks: &[T],
    mode: Mode,
) -> impl FnMut(&[usize]) -> Vec<Vec<Vec<usize>>> + '_ {
    let epoch = match mode {
        Mode::Reconcile { attempt } => attempt / RECONCILE_STRIDE,
        Mode::Update | Mode::Install => 0,
    };
    let mut rng = SplitMix64::new(epoch);
    move |subset| match mode {
        Mode::Update => by_number_and_component(tasks, subset),
        Mode::Install => flatten_by_number_and_component(tasks, subset),
        Mode::Reconcile { attempt } => {
            let mut steps = flatten_by_number_and_component(tasks, subset);
            permute_order(&mut steps, &mut rng);
            shift_order(&mut steps, attempt % RECONCILE_STRIDE, RECONCILE_STRIDE);
            steps
        }
    }
}

/// Upstream treats "no steps" and "one step of one node" as nothing to do.
fn is_noop(steps: &[Vec<Vec<usize>>]) -> bool {
    match steps {
        [] => true,
        [only] => only.len() == 1,
        _ => false,
    }
}

fn node_label(node: &TaskNode, label: &impl Fn(usize) -> String) -> String {
    if node.tasks.is_empty() {
        return "no manifests".to_string();
    }
    let labels: Vec<String> = node
        .tasks
        .iter()
        .map(|&t| label(t).replace('"', ""))
        .collect();
    labels.join("\\n")
}

fn replace_all(items: &mut [usize], from: usize, to: usize) {
    items
        .iter_mut()
        .filter(|x| **x == from)
        .for_each(|x| *x = to);
}

fn append_unique(items: &mut Vec<usize>, new: &[usize]) {
    for &n in new {
        if !items.contains(&n) {
            items.push(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::testutil::{Fake, job, node, pod, pods};
    use crate::graph::workers_for;

    fn graph(nodes: Vec<TaskNode>) -> TaskGraph {
        TaskGraph { nodes }
    }

    /// Runs `Split(SplitOnJobs)` on a single node holding all tasks.
    fn split(tasks: &[Fake]) -> TaskGraph {
        let mut g = TaskGraph::new(tasks.len());
        g.split_on_jobs(tasks);
        g
    }

    #[test]
    fn new_holds_every_task_in_one_node() {
        assert_eq!(TaskGraph::new(3), graph(vec![node(&[0, 1, 2], &[], &[])]));
        assert_eq!(TaskGraph::new(0), graph(vec![node(&[], &[], &[])]));
    }

    #[test]
    fn split_upstream_table() {
        let mut empty = graph(vec![]);
        empty.split_on_jobs(&[pod("p")]);
        assert_eq!(empty, graph(vec![]));
        assert_eq!(split(&[pod("p")]), graph(vec![node(&[0], &[], &[])]));
        assert_eq!(
            split(&[job("j"), pod("p")]),
            graph(vec![node(&[0], &[], &[1]), node(&[1], &[0], &[])]),
            "split right (Job first)"
        );
        assert_eq!(
            split(&[pod("p"), job("j")]),
            graph(vec![node(&[1], &[1], &[]), node(&[0], &[], &[0])]),
            "split left (Job last)"
        );
        assert_eq!(
            split(&[pod("p"), pod("p"), job("j"), pod("p")]),
            graph(vec![
                node(&[2], &[1], &[2]),
                node(&[0, 1], &[], &[0]),
                node(&[3], &[0], &[])
            ]),
            "interior"
        );
    }

    #[test]
    fn split_several_jobs() {
        assert_eq!(
            split(&[pod("p"), pod("p"), job("j"), pod("p"), job("j"), pod("p")]),
            graph(vec![
                node(&[2], &[1], &[3]),
                node(&[0, 1], &[], &[0]),
                node(&[4], &[3], &[4]),
                node(&[3], &[0], &[2]),
                node(&[5], &[2], &[]),
            ]),
            "interspersed"
        );
        assert_eq!(
            split(&[job("j"), pod("p"), pod("p"), job("j")]),
            graph(vec![
                node(&[0], &[], &[2]),
                node(&[3], &[2], &[]),
                node(&[1, 2], &[0], &[1])
            ]),
            "ends"
        );
        assert_eq!(
            split(&[job("j"), job("j"), job("j")]),
            graph(vec![
                node(&[0], &[], &[1]),
                node(&[1], &[0], &[2]),
                node(&[2], &[1], &[])
            ]),
            "only jobs"
        );
    }

    #[test]
    fn bulk_add_upstream_table() {
        let mut g = graph(vec![node(&[0, 1], &[], &[])]);
        assert_eq!(g.bulk_add(vec![vec![2], vec![3]], &[0]), vec![1, 2]);
        assert_eq!(
            g,
            graph(vec![
                node(&[0, 1], &[], &[1, 2]),
                node(&[2], &[0], &[]),
                node(&[3], &[0], &[])
            ])
        );

        let mut g = graph(vec![node(&[0, 1], &[], &[1]), node(&[4], &[], &[])]);
        assert_eq!(g.bulk_add(vec![vec![2], vec![3]], &[0]), vec![2, 3]);
        assert_eq!(
            g,
            graph(vec![
                node(&[0, 1], &[], &[1, 2, 3]),
                node(&[4], &[], &[]),
                node(&[2], &[0], &[]),
                node(&[3], &[0], &[]),
            ])
        );
    }

    #[test]
    fn example_upstream_table() {
        let update = |tasks: &[Fake]| TaskGraph::build(tasks, Mode::Update);
        assert_eq!(
            update(&[pod("a"), job("0000_50_a_0")]),
            graph(vec![node(&[1], &[1], &[]), node(&[0], &[], &[0])])
        );
        assert_eq!(
            update(&[
                pod("a"),
                job("0000_50_a_0"),
                pod("0000_50_a_1"),
                pod("0000_50_a_2")
            ]),
            graph(vec![
                node(&[1], &[1], &[2]),
                node(&[0], &[], &[0]),
                node(&[2, 3], &[0], &[])
            ])
        );
        assert_eq!(
            update(&[
                job("a"),
                pod("0000_50_a_0"),
                pod("0000_50_b_0"),
                pod("0000_50_b_1")
            ]),
            graph(vec![
                node(&[0], &[], &[1]),
                node(&[], &[0], &[2, 3]),
                node(&[1], &[1], &[]),
                node(&[2, 3], &[1], &[]),
            ])
        );
        let tasks = [
            job("a"),
            pod("0000_50_a_0"),
            pod("0000_50_b_0"),
            pod("0000_50_b_1"),
            pod("0000_50_c_0"),
            job("b"),
        ];
        assert_eq!(
            update(&tasks),
            graph(vec![
                node(&[0], &[], &[2]),
                node(&[5], &[6], &[]),
                node(&[], &[0], &[3, 4, 5]),
                node(&[1], &[2], &[6]),
                node(&[2, 3], &[2], &[6]),
                node(&[4], &[2], &[6]),
                node(&[], &[3, 4, 5], &[1]),
            ])
        );
    }

    #[test]
    fn worked_example_5() {
        let tasks = pods(&[
            "0000_07_a_0",
            "0000_08_a_0",
            "0000_09_a_0",
            "0000_09_a_1",
            "0000_09_b_0",
            "0000_09_b_1",
            "0000_10_a_0",
            "0000_10_a_1",
            "0000_11_a_0",
            "0000_11_a_1",
        ]);
        let g = TaskGraph::build(&tasks, Mode::Update);
        assert_eq!(
            g,
            graph(vec![
                node(&[], &[], &[1]),
                node(&[0, 1], &[0], &[2, 3]),
                node(&[2, 3], &[1], &[4]),
                node(&[4, 5], &[1], &[4]),
                node(&[6, 7, 8, 9], &[2, 3], &[]),
            ])
        );
        assert_eq!(g.roots(), vec![0]);
        assert_eq!(workers_for(Mode::Update, &g), 16);
        assert_eq!(workers_for(Mode::Reconcile { attempt: 5 }, &g), 2);
    }

    #[test]
    fn parallel_after_parallel_gets_a_spacer() {
        let tasks = pods(&["0000_01_a_x", "0000_01_b_x", "0000_02_a_x", "0000_02_b_x"]);
        assert_eq!(
            TaskGraph::build(&tasks, Mode::Update),
            graph(vec![
                node(&[], &[], &[1, 2]),
                node(&[0], &[0], &[3]),
                node(&[1], &[0], &[3]),
                node(&[], &[1, 2], &[4, 5]),
                node(&[2], &[3], &[]),
                node(&[3], &[3], &[]),
            ])
        );
    }

    #[test]
    fn spacer_and_right_anchor_before_a_trailing_job() {
        let mut tasks = pods(&["0000_01_a_x", "0000_01_b_x", "0000_02_a_x", "0000_02_b_x"]);
        tasks.push(job("0000_03_j_x"));
        assert_eq!(
            TaskGraph::build(&tasks, Mode::Update),
            graph(vec![
                node(&[4], &[7], &[]),
                node(&[], &[], &[2, 3]),
                node(&[0], &[1], &[4]),
                node(&[1], &[1], &[4]),
                node(&[], &[2, 3], &[5, 6]),
                node(&[2], &[4], &[7]),
                node(&[3], &[4], &[7]),
                node(&[], &[5, 6], &[0]),
            ])
        );
    }

    #[test]
    fn install_flattens_between_jobs() {
        let mut tasks = pods(&["0000_01_a_x", "0000_01_b_x", "0000_02_a_x"]);
        tasks.push(job("x"));
        tasks.push(pod("0000_03_a_x"));
        let g = TaskGraph::build(&tasks, Mode::Install);
        assert_eq!(
            g,
            graph(vec![
                node(&[3], &[6], &[2]),
                node(&[], &[], &[3, 4, 5]),
                node(&[4], &[0], &[]),
                node(&[0], &[1], &[6]),
                node(&[1], &[1], &[6]),
                node(&[2], &[1], &[6]),
                node(&[], &[3, 4, 5], &[0]),
            ])
        );
        assert_eq!(workers_for(Mode::Install, &g), 7);
    }

    #[test]
    fn parallelize_skips_empty_steps_and_noops() {
        let mut g = TaskGraph::new(2);
        g.parallelize(|_| vec![vec![vec![0, 1]]]);
        assert_eq!(g, TaskGraph::new(2), "one step of one node is a no-op");

        let mut g = TaskGraph::new(2);
        let mut calls = 0;
        g.parallelize(|tasks| {
            calls += 1;
            if tasks.len() == 2 {
                vec![vec![vec![0]], vec![], vec![vec![1]]]
            } else {
                vec![]
            }
        });
        assert_eq!(
            g,
            graph(vec![
                node(&[], &[], &[1]),
                node(&[0], &[0], &[2]),
                node(&[1], &[1], &[])
            ])
        );
        assert_eq!(calls, 3, "appended nodes are offered to the breaker too");
    }

    fn reconcile_fixture() -> Vec<Fake> {
        let mut tasks = Vec::new();
        for c in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"] {
            tasks.push(pod(&format!("0000_10_{c}_1")));
            tasks.push(pod(&format!("0000_10_{c}_2")));
        }
        tasks.push(job("0000_20_job_1"));
        tasks.extend(pods(&["0000_30_a_1", "0000_30_b_1", "0000_30_c_1"]));
        tasks
    }

    fn sorted_nodes(g: &TaskGraph) -> Vec<Vec<usize>> {
        let mut nodes: Vec<Vec<usize>> = g.nodes.iter().map(|n| n.tasks.clone()).collect();
        nodes.sort();
        nodes
    }

    #[test]
    fn reconcile_permutes_flattened_nodes_deterministically() {
        let tasks = reconcile_fixture();
        let install = TaskGraph::build(&tasks, Mode::Install);
        for attempt in 0..24 {
            let g = TaskGraph::build(&tasks, Mode::Reconcile { attempt });
            assert_eq!(g, TaskGraph::build(&tasks, Mode::Reconcile { attempt }));
            assert_eq!(
                sorted_nodes(&g),
                sorted_nodes(&install),
                "attempt {attempt}"
            );
            assert_eq!(g.nodes.len(), install.nodes.len());
            assert_eq!(workers_for(Mode::Reconcile { attempt }, &g), 2);
        }
        let at = |attempt| TaskGraph::build(&tasks, Mode::Reconcile { attempt });
        // Same epoch, different iteration: same permutation, rotated.
        assert_ne!(at(0), at(1));
        // Different epoch: a different permutation.
        assert_ne!(at(0), at(8));
    }

    #[test]
    fn reconcile_shift_rotates_within_an_epoch() {
        let tasks = reconcile_fixture();
        // The 11-node step is rotated by trunc(i * 11 / 8) within one epoch.
        let first_task = |attempt| {
            let g = TaskGraph::build(&tasks, Mode::Reconcile { attempt });
            g.nodes[1]
                .outputs
                .iter()
                .map(|&n| g.nodes[n].tasks[0])
                .collect::<Vec<_>>()
        };
        let base = first_task(16);
        for i in 1..8u64 {
            let mut want = base.clone();
            want.rotate_left((i * 11 / 8) as usize % 11);
            assert_eq!(first_task(16 + i), want, "iteration {i}");
        }
    }

    #[test]
    fn dot_matches_upstream_tree_layout() {
        let tasks = [
            job("a"),
            pod("0000_50_a_0"),
            pod("0000_50_b_\"0\""),
            pod("0000_50_b_1"),
        ];
        let g = TaskGraph::build(&tasks, Mode::Update);
        let dot = g.to_dot(|t| tasks[t].name.clone());
        let want = [
            "digraph tasks {",
            "  labelloc=t;",
            "  rankdir=TB;",
            "  0 [ label=\"a\" shape=\"box\" ];",
            "  1 [ label=\"no manifests\" shape=\"box\" ];",
            "  2 [ label=\"0000_50_a_0\" shape=\"box\" ];",
            "  3 [ label=\"0000_50_b_0\\n0000_50_b_1\" shape=\"box\" ];",
            "  0 -> 1;",
            "  1 -> 2;",
            "  1 -> 3;",
            "}",
        ]
        .join("\n");
        assert_eq!(dot, want);
    }

    #[test]
    fn tolerates_out_of_range_edges_and_tasks() {
        let mut g = graph(vec![node(&[0, 1, 2], &[9], &[7])]);
        g.split_on_jobs(&[pod("p"), job("j")]);
        assert_eq!(
            g,
            graph(vec![
                node(&[1], &[1], &[2]),
                node(&[0], &[9], &[0]),
                node(&[2], &[0], &[7])
            ])
        );
        // Expand node 2 only; its successor 7 does not exist and is skipped.
        g.parallelize(|t| {
            if t == [2] {
                vec![vec![vec![0], vec![1]]]
            } else {
                vec![]
            }
        });
        assert_eq!(g.nodes.len(), 6);
        assert_eq!(g.nodes[5], node(&[], &[3, 4], &[7]));
    }
}
