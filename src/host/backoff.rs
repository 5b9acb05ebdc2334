//! Retrying a failed reconcile as controller-runtime's default rate limiter does for
//! upstream's controllers (client-go's `ItemExponentialFailureRateLimiter`: 5 ms, doubled at
//! each failure of the same object in a row, at most 1000 s, forgotten once it succeeds).
//! kube-runtime's `error_policy` gives one delay per error and counts nothing, so the failures
//! are counted here.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

/// The delay after the first failure.
pub const BASE: Duration = Duration::from_millis(5);
/// The longest delay.
pub const MAX: Duration = Duration::from_secs(1000);

/// The delay before retrying an object that has failed `failures` times in a row (1 for the
/// first failure): `BASE * 2^(failures - 1)`, at most [`MAX`].
pub fn retry_after(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(63);
    let millis = (BASE.as_millis() as u64).saturating_mul(1u64 << doublings);
    Duration::from_millis(millis).min(MAX)
}

/// How many times in a row each object failed.
#[derive(Debug)]
pub struct Failures<K> {
    counts: Mutex<HashMap<K, u32>>,
}

impl<K> Default for Failures<K> {
    fn default() -> Self {
        Failures {
            counts: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq> Failures<K> {
    /// Counts a failure of `key`; the delay before its retry.
    pub fn failed(&self, key: K) -> Duration {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(key).or_insert(0);
        *count = count.saturating_add(1);
        retry_after(*count)
    }

    /// `key` succeeded: its next failure starts again at [`BASE`].
    pub fn succeeded(&self, key: &K) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_5ms_up_to_1000s() {
        let table = [
            (1, Duration::from_millis(5)),
            (2, Duration::from_millis(10)),
            (3, Duration::from_millis(20)),
            (10, Duration::from_millis(2560)),
            (18, Duration::from_millis(655_360)),
            (19, MAX),
            (100, MAX),
            (u32::MAX, MAX),
        ];
        for (failures, want) in table {
            assert_eq!(retry_after(failures), want, "{failures}");
        }
    }

    #[test]
    fn failures_are_counted_per_object_until_it_succeeds() {
        let failures = Failures::default();
        assert_eq!(failures.failed("a"), Duration::from_millis(5));
        assert_eq!(failures.failed("a"), Duration::from_millis(10));
        assert_eq!(failures.failed("b"), Duration::from_millis(5));
        failures.succeeded(&"a");
        assert_eq!(failures.failed("a"), Duration::from_millis(5));
    }
}
