//! Pruning `status.history` (upstream `prune` in `pkg/cvo/status_history.go`): when the history
//! is longer than its limit, the one entry of the lowest rank goes. The most important entries
//! are never dropped: the initial install (the entry at the limit), the five newest and the
//! most recently completed update; then come the first and last completed update of each minor
//! version, the partial updates of a minor transition, and the partial updates within a
//! z-stream transition, which go first. Each rank is lowered by the entry's age, so among equals
//! the oldest goes. Pure.

use crate::cluster::UpdateHistory;

/// Entries `0..=MAX_FINAL_ENTRY_INDEX` (the newest) are kept.
const MAX_FINAL_ENTRY_INDEX: usize = 4;
const MOST_IMPORTANT_WEIGHT: f64 = 1000.0;
const INTERESTING_WEIGHT: f64 = 30.0;
const PARTIAL_MINOR_WEIGHT: f64 = 20.0;
const PARTIAL_Z_STREAM_WEIGHT: f64 = -20.0;
const SLICE_INDEX_WEIGHT: f64 = -1.01;

const COMPLETED: &str = "Completed";

/// Drops the lowest-ranked entries of `history` (newest first) until it holds at most
/// `max_size`. Upstream drops one per status write (its history grows by one at most between
/// two); this drops as many as needed, one at a time, so a longer history read from the
/// cluster is within the limit after one write.
pub fn prune(history: &mut Vec<UpdateHistory>, max_size: usize) {
    while history.len() > max_size {
        prune_one(history, max_size);
    }
}

/// Upstream's `prune` of a history longer than `max_size`.
fn prune_one(history: &mut Vec<UpdateHistory>, max_size: usize) {
    let most_recent_completed = history.iter().position(completed);
    let mut lowest = (f64::MAX, 0, "");
    for i in 0..history.len() {
        let (mut rank, mut reason) = (0.0, "an older update of less importance");
        if i == max_size || i <= MAX_FINAL_ENTRY_INDEX || Some(i) == most_recent_completed {
            rank = MOST_IMPORTANT_WEIGHT;
        } else if first_or_last_completed_in_a_minor(i, history, max_size) {
            rank += INTERESTING_WEIGHT;
            reason = "the first or last completed minor update";
        } else if partial_between(i, history, max_size, same_minor) {
            rank += PARTIAL_MINOR_WEIGHT;
            reason = "a partial update within a minor transition";
        } else if partial_between(i, history, max_size, same_z_stream) {
            rank += PARTIAL_Z_STREAM_WEIGHT;
            reason = "a partial update within a z-stream transition";
        }
        rank += SLICE_INDEX_WEIGHT * i as f64;
        if rank < lowest.0 {
            lowest = (rank, i, reason);
        }
    }
    let (rank, index, reason) = lowest;
    tracing::debug!(
        version = history[index].version.as_deref().unwrap_or(""),
        index,
        rank,
        "pruning {reason}"
    );
    if index == max_size {
        history.truncate(max_size);
    } else {
        history.remove(index);
    }
}

fn completed(entry: &UpdateHistory) -> bool {
    entry.state == COMPLETED
}

fn first_or_last_completed_in_a_minor(i: usize, h: &[UpdateHistory], max_size: usize) -> bool {
    if !completed(&h[i]) {
        return false;
    }
    if i == 0 || i == max_size {
        return true;
    }
    let older = next_older_completed(i, h);
    if older == i || !same_minor(&h[i], &h[older]) {
        return true;
    }
    let newer = next_newer_completed(i, h);
    newer == i || !same_minor(&h[i], &h[newer])
}

/// A partial update between two completed ones that `same` says differ (upstream's
/// `isPartialPortionOfMinorTransition` with the minor, `isPartialWithinAZStream` with the
/// z-stream).
fn partial_between(
    i: usize,
    h: &[UpdateHistory],
    max_size: usize,
    same: fn(&UpdateHistory, &UpdateHistory) -> bool,
) -> bool {
    if completed(&h[i]) || i == 0 || i == max_size {
        return false;
    }
    let older = next_older_completed(i, h);
    if older == i {
        return false;
    }
    let newer = next_newer_completed(i, h);
    newer != i && !same(&h[older], &h[newer])
}

/// The index of the next older completed entry; `i` when there is none.
fn next_older_completed(i: usize, h: &[UpdateHistory]) -> usize {
    (i + 1..h.len()).find(|&j| completed(&h[j])).unwrap_or(i)
}

/// The index of the next newer completed entry; `i` when there is none.
fn next_newer_completed(i: usize, h: &[UpdateHistory]) -> usize {
    (0..i).rev().find(|&j| completed(&h[j])).unwrap_or(i)
}

/// The version's dot-separated field `n` (upstream's `getEffectiveMinor`/`Micro`: empty when
/// there are too few).
fn field(entry: &UpdateHistory, n: usize) -> &str {
    let version = entry.version.as_deref().unwrap_or("");
    let fields: Vec<&str> = version.split('.').collect();
    if fields.len() <= n { "" } else { fields[n] }
}

fn same_minor(a: &UpdateHistory, b: &UpdateHistory) -> bool {
    field(a, 1) == field(b, 1)
}

fn same_z_stream(a: &UpdateHistory, b: &UpdateHistory) -> bool {
    same_minor(a, b) && field(a, 2) == field(b, 2)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    /// `C4.6.3` is a completed update to 4.6.3, `P4.1.4` a partial one.
    fn history(entries: &str) -> Vec<UpdateHistory> {
        (entries.split_whitespace())
            .map(|e| {
                let (state, version) = e.split_at(1);
                UpdateHistory {
                    state: if state == "C" { "Completed" } else { "Partial" }.into(),
                    started_time: Time(Timestamp::UNIX_EPOCH),
                    completion_time: None,
                    version: Some(version.into()),
                    image: String::new(),
                    verified: false,
                    accepted_risks: None,
                }
            })
            .collect()
    }

    /// Upstream's `Test_prune` cases (maximum 10).
    #[test]
    fn drops_the_least_informative_entry_as_upstream() {
        let cases = [
            (
                "partial update within a minor transition",
                "C4.6.3 C4.5.3 C4.4.3 C4.3.3 C4.3.2 C4.3.1 C4.2.1 P4.1.4 P4.1.3 P4.1.2 C4.1.1",
                "C4.6.3 C4.5.3 C4.4.3 C4.3.3 C4.3.2 C4.3.1 C4.2.1 P4.1.4 P4.1.3 C4.1.1",
            ),
            (
                "partial update within a z-stream transition",
                "C4.5.3 C4.4.3 C4.4.3 C4.4.2 C4.1.10 C4.1.9 C4.1.4 P4.1.3 C4.1.2 P4.0.1 C4.0.1",
                "C4.5.3 C4.4.3 C4.4.3 C4.4.2 C4.1.10 C4.1.9 C4.1.4 C4.1.2 P4.0.1 C4.0.1",
            ),
            (
                "prune oldest not in mostImportantWeight set",
                "C4.11.0 C4.10.0 C4.9.0 C4.8.0 C4.7.0 C4.6.0 C4.5.0 C4.4.0 C4.3.0 C4.2.0 C4.1.0",
                "C4.11.0 C4.10.0 C4.9.0 C4.8.0 C4.7.0 C4.6.0 C4.5.0 C4.4.0 C4.3.0 C4.1.0",
            ),
            (
                "prune only partial not in mostImportantWeight set",
                "C4.11.0 P4.10.0 C4.9.0 C4.8.0 C4.7.0 P4.6.0 C4.5.0 C4.4.0 C4.3.0 C4.2.0 C4.1.0",
                "C4.11.0 P4.10.0 C4.9.0 C4.8.0 C4.7.0 C4.5.0 C4.4.0 C4.3.0 C4.2.0 C4.1.0",
            ),
            (
                "a history within its limit is left alone",
                "C4.3.0 P4.2.0 C4.1.0",
                "C4.3.0 P4.2.0 C4.1.0",
            ),
        ];
        for (name, before, after) in cases {
            let mut h = history(before);
            prune(&mut h, 10);
            assert_eq!(h, history(after), "{name}");
        }
    }

    #[test]
    fn the_initial_entry_and_the_newest_stay() {
        // Fourteen partial updates after the install: the oldest ones beyond the five newest
        // go, never the install (the entry at the limit when each is dropped).
        let mut h = history(&format!("{}C4.1.0", "P4.1.1 ".repeat(14)));
        prune(&mut h, 10);
        assert_eq!(h, history(&format!("{}C4.1.0", "P4.1.1 ".repeat(9))));
    }
}
