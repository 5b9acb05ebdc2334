//! Break functions: how one node's task list is cut into sequential steps of
//! parallel nodes (upstream `BreakFunc`), plus the reconcile-mode reordering.
//!
//! A break function returns `steps -> parallel nodes -> task indices`. The
//! task indices are the ones passed in (`subset`), so results can be fed
//! straight back into [`TaskGraph::parallelize`](super::TaskGraph::parallelize).

use std::ops::Range;

use super::{GraphTask, parse_run_level};

/// Steps of parallel nodes of task indices.
type Steps = Vec<Vec<Vec<usize>>>;

/// Upstream `ByNumberAndComponent`, the breaker used while updating.
///
/// Run levels stay strictly sequential; inside one contiguous run level,
/// each contiguous component becomes its own node and the nodes run in
/// parallel. A stretch with a single component (or an unparsable file name)
/// is serial and is appended to the previous serial node, so consecutive
/// serial stretches collapse into one node. Returns no steps for one task or
/// fewer, which [`TaskGraph::parallelize`](super::TaskGraph::parallelize)
/// treats as "leave the node alone".
pub fn by_number_and_component<T: GraphTask>(tasks: &[T], subset: &[usize]) -> Steps {
    if subset.len() <= 1 {
        return Vec::new();
    }
    let mut steps: Steps = Vec::new();
    // Whether the last step is a single serial node that may still grow
    // (upstream's `lastNode`).
    let mut serial_open = false;
    for chunks in segments(&keys(tasks, subset)) {
        match chunks.as_slice() {
            [only] if serial_open => append_to_last(&mut steps, &subset[only.clone()]),
            [only] => {
                steps.push(vec![subset[only.clone()].to_vec()]);
                serial_open = true;
            }
            _ => {
                steps.push(nodes_of(subset, chunks));
                serial_open = false;
            }
        }
    }
    steps
}

/// Upstream `FlattenByNumberAndComponent`, the breaker used while installing
/// and reconciling.
///
/// A single step holding one node per contiguous (run level, component)
/// stretch, so everything runs in parallel and only the order inside a
/// component is kept. Every unparsable file gets a node of its own. Returns
/// no steps for one task or fewer.
pub fn flatten_by_number_and_component<T: GraphTask>(tasks: &[T], subset: &[usize]) -> Steps {
    if subset.len() <= 1 {
        return Vec::new();
    }
    let chunks = segments(&keys(tasks, subset))
        .into_iter()
        .flatten()
        .collect();
    vec![nodes_of(subset, chunks)]
}

/// Upstream `ShiftOrder`: rotates every step left so that successive
/// reconcile attempts start with different nodes.
///
/// The shift is `step % len` when `len < stride`, else
/// `trunc(step * len / stride) % len` computed in floating point as upstream
/// does. Empty steps are skipped (upstream would divide by zero).
pub fn shift_order<N>(steps: &mut [Vec<N>], step: u64, stride: u64) {
    for nodes in steps.iter_mut().filter(|nodes| !nodes.is_empty()) {
        let len = nodes.len() as u64;
        let shift = if len < stride {
            step % len
        } else {
            // Saturating float-to-int cast: a zero stride cannot panic.
            ((step as f64) * (len as f64) / (stride as f64)) as u64 % len
        };
        nodes.rotate_left(shift as usize);
    }
}

/// Upstream `PermuteOrder`: shuffles every step with `rng`.
///
/// Upstream uses Go's `math/rand`, whose exact sequence is not portable; a
/// [`SplitMix64`] seeded the same way (attempt / 8) keeps the property that
/// matters: the order is stable for eight attempts, then changes.
pub fn permute_order<N>(steps: &mut [Vec<N>], rng: &mut SplitMix64) {
    for nodes in steps.iter_mut() {
        rng.shuffle(nodes);
    }
}

/// A tiny deterministic PRNG (Vigna's SplitMix64), so reconcile ordering is
/// reproducible without pulling in a random-number crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fully determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (multiply-shift; bias is irrelevant here).
    /// Returns 0 for a zero bound instead of panicking.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Fisher–Yates shuffle, walking down from the end like Go's `Shuffle`.
    pub fn shuffle<N>(&mut self, items: &mut [N]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// Parsed `(run level, component)` per position of `subset`; `None` for
/// unparsable names and for indices outside `tasks`.
fn keys<'a, T: GraphTask>(tasks: &'a [T], subset: &[usize]) -> Vec<Option<(&'a str, &'a str)>> {
    subset
        .iter()
        .map(|&t| {
            tasks
                .get(t)
                .and_then(|task| parse_run_level(task.file_name()))
        })
        .collect()
}

/// The scan both upstream breakers share.
///
/// Cuts positions into *segments* — maximal runs of parsable names with the
/// same run level string; an unparsable name is a segment of its own — and
/// each segment into *chunks*, maximal runs of the same component (always
/// comparing neighbours, as upstream does).
fn segments(keys: &[Option<(&str, &str)>]) -> Vec<Vec<Range<usize>>> {
    let mut segments = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let (chunks, end) = segment_at(keys, i);
        segments.push(chunks);
        i = end;
    }
    segments
}

/// The chunks of the segment starting at `start`, and where it ends.
fn segment_at(keys: &[Option<(&str, &str)>], start: usize) -> (Vec<Range<usize>>, usize) {
    let mut chunks = Vec::new();
    let mut chunk_start = start;
    let mut j = start + 1;
    while let (Some(Some((level_a, comp_a))), Some(Some((level_b, comp_b)))) =
        (keys.get(j - 1), keys.get(j))
    {
        if level_a != level_b {
            break;
        }
        if comp_a != comp_b {
            chunks.push(chunk_start..j);
            chunk_start = j;
        }
        j += 1;
    }
    chunks.push(chunk_start..j);
    (chunks, j)
}

/// Turns position ranges into nodes of task indices.
fn nodes_of(subset: &[usize], chunks: Vec<Range<usize>>) -> Vec<Vec<usize>> {
    chunks.into_iter().map(|r| subset[r].to_vec()).collect()
}

/// Extends the single node of the last (serial) step.
fn append_to_last(steps: &mut Steps, tasks: &[usize]) {
    if let Some(node) = steps.last_mut().and_then(|step| step.last_mut()) {
        node.extend_from_slice(tasks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::testutil::{Fake, pods};

    /// Runs a breaker over all of `names` and returns file names, for
    /// readable comparisons with the upstream tables.
    fn run(breaker: fn(&[Fake], &[usize]) -> Steps, names: &[&str]) -> Vec<Vec<Vec<String>>> {
        let tasks = pods(names);
        let all: Vec<usize> = (0..tasks.len()).collect();
        let steps = breaker(&tasks, &all);
        steps
            .iter()
            .map(|step| {
                step.iter()
                    .map(|node| node.iter().map(|&t| tasks[t].name.clone()).collect())
                    .collect()
            })
            .collect()
    }

    fn s(steps: &[&[&[&str]]]) -> Vec<Vec<Vec<String>>> {
        steps
            .iter()
            .map(|step| {
                step.iter()
                    .map(|node| node.iter().map(|n| n.to_string()).collect())
                    .collect()
            })
            .collect()
    }

    const MIXED: &[&str] = &[
        "0000_01_a-b-c_file1",
        "0000_01_x-y-z_file1",
        "0000_01_x-y-z_file2",
        "a",
        "0000_01_x-y-z_file2",
        "0000_01_x-y-z_file3",
    ];

    #[test]
    fn by_number_and_component_upstream_table() {
        let b = by_number_and_component::<Fake>;
        assert_eq!(run(b, &[]), s(&[]), "empty tasks");
        assert_eq!(run(b, &["a"]), s(&[]), "no grouping possible");
        assert_eq!(
            run(b, &["a", "b", "c"]),
            s(&[&[&["a", "b", "c"]]]),
            "no recognizable groups"
        );
        assert_eq!(
            run(b, &["0000_01_x-y-z_file1"]),
            s(&[]),
            "single grouped item"
        );
        assert_eq!(
            run(b, &["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]),
            s(&[&[&["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]]]),
            "multiple grouped items in single node"
        );
        assert_eq!(
            run(b, &["a", "0000_01_x-y-z_file1", "c"]),
            s(&[&[&["a", "0000_01_x-y-z_file1", "c"]]])
        );
        assert_eq!(
            run(b, &["0000_01_a-b-c_file1", "0000_01_x-y-z_file2"]),
            s(&[&[&["0000_01_a-b-c_file1"], &["0000_01_x-y-z_file2"]]])
        );
        assert_eq!(
            run(b, MIXED),
            s(&[
                &[
                    &["0000_01_a-b-c_file1"],
                    &["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]
                ],
                &[&["a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3"]],
            ])
        );
    }

    #[test]
    fn by_number_and_component_serial_levels_merge() {
        // Worked example #5: 07 and 08 merge, 09 splits, 10 and 11 merge.
        let names = [
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
        ];
        assert_eq!(
            run(by_number_and_component::<Fake>, &names),
            s(&[
                &[&["0000_07_a_0", "0000_08_a_0"]],
                &[
                    &["0000_09_a_0", "0000_09_a_1"],
                    &["0000_09_b_0", "0000_09_b_1"]
                ],
                &[&["0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"]],
            ])
        );
    }

    #[test]
    fn run_levels_compare_as_strings() {
        // "1" and "01" are different run levels, so no parallel step forms.
        assert_eq!(
            run(
                by_number_and_component::<Fake>,
                &["0000_1_a_x", "0000_01_b_x"]
            ),
            s(&[&[&["0000_1_a_x", "0000_01_b_x"]]])
        );
        // A component coming back after another one in the same level is a
        // separate parallel node (neighbour comparison).
        assert_eq!(
            run(
                by_number_and_component::<Fake>,
                &["0000_1_a_1", "0000_1_b_1", "0000_1_a_2"]
            ),
            s(&[&[&["0000_1_a_1"], &["0000_1_b_1"], &["0000_1_a_2"]]])
        );
    }

    #[test]
    fn flatten_upstream_table() {
        let f = flatten_by_number_and_component::<Fake>;
        assert_eq!(run(f, &[]), s(&[]), "empty tasks");
        assert_eq!(run(f, &["a"]), s(&[]), "no grouping possible");
        assert_eq!(
            run(f, &["a", "b", "c"]),
            s(&[&[&["a"], &["b"], &["c"]]]),
            "no recognizable groups"
        );
        assert_eq!(
            run(f, &["0000_01_x-y-z_file1"]),
            s(&[]),
            "single grouped item"
        );
        assert_eq!(
            run(f, &["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]),
            s(&[&[&["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"]]]),
            "multiple grouped items in single node"
        );
        assert_eq!(
            run(f, &["a", "0000_01_x-y-z_file1", "c"]),
            s(&[&[&["a"], &["0000_01_x-y-z_file1"], &["c"]]])
        );
        assert_eq!(
            run(f, &["0000_01_a-b-c_file1", "0000_01_x-y-z_file2"]),
            s(&[&[&["0000_01_a-b-c_file1"], &["0000_01_x-y-z_file2"]]])
        );
        assert_eq!(
            run(f, MIXED),
            s(&[&[
                &["0000_01_a-b-c_file1"],
                &["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"],
                &["a"],
                &["0000_01_x-y-z_file2", "0000_01_x-y-z_file3"],
            ]])
        );
        assert_eq!(
            run(
                f,
                &[
                    "0000_01_a-b-c_file1",
                    "0000_01_x-y-z_file1",
                    "0000_01_x-y-z_file2",
                    "0000_02_x-y-z_file2",
                    "0000_02_x-y-z_file3",
                ]
            ),
            s(&[&[
                &["0000_01_a-b-c_file1"],
                &["0000_01_x-y-z_file1", "0000_01_x-y-z_file2"],
                &["0000_02_x-y-z_file2", "0000_02_x-y-z_file3"],
            ]])
        );
    }

    #[test]
    fn breakers_use_the_given_subset_and_ignore_bad_indices() {
        let tasks = pods(&["0000_01_a_1", "0000_01_b_1", "0000_01_a_2", "0000_01_b_2"]);
        assert_eq!(
            by_number_and_component(&tasks, &[1, 3]),
            vec![vec![vec![1, 3]]]
        );
        // Index 9 does not exist: treated like an unparsable name.
        assert_eq!(
            flatten_by_number_and_component(&tasks, &[0, 9, 1]),
            vec![vec![vec![0], vec![9], vec![1]]]
        );
    }

    #[test]
    fn shift_order_upstream_table() {
        let cases: [(u64, u64, Vec<u32>, Vec<u32>); 5] = [
            (0, 8, vec![1, 2], vec![1, 2]),
            (1, 8, vec![1, 2], vec![2, 1]),
            (2, 8, vec![1, 2], vec![1, 2]),
            (1, 2, vec![1, 2, 3], vec![2, 3, 1]),
            (2, 3, vec![1, 2, 3], vec![3, 1, 2]),
        ];
        for (step, stride, input, want) in cases {
            let mut steps = vec![input];
            shift_order(&mut steps, step, stride);
            assert_eq!(steps, vec![want], "step {step} stride {stride}");
        }
    }

    #[test]
    fn shift_order_tolerates_degenerate_input() {
        let mut steps: Vec<Vec<u32>> = vec![vec![], vec![1, 2, 3]];
        shift_order(&mut steps, 5, 0);
        assert_eq!(steps[0], Vec::<u32>::new());
        let mut sorted = steps[1].clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![1, 2, 3]);
    }

    #[test]
    fn splitmix64_reference_vector() {
        // Published reference output for seed 1234567.
        let mut rng = SplitMix64::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    #[test]
    fn permute_order_is_a_deterministic_permutation() {
        let shuffled = |seed| {
            let mut steps = vec![(0..20).collect::<Vec<u32>>(), vec![7]];
            permute_order(&mut steps, &mut SplitMix64::new(seed));
            steps
        };
        let a = shuffled(3);
        assert_eq!(a, shuffled(3));
        assert_ne!(a, shuffled(4));
        let mut sorted = a[0].clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<u32>>());
        assert_eq!(a[1], vec![7]);
        assert_eq!(SplitMix64::new(1).below(0), 0);
    }
}
