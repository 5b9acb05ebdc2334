//! The throttled cache PromQL rules are evaluated through (upstream
//! `pkg/clusterconditions/cache`): one query at most every [`MIN_BETWEEN_MATCHES`], a rule
//! asked again at most every [`MIN_FOR_CONDITION`], results forgotten after [`EXPIRATION`].
//! Each query goes to the most stale rule someone asked for, so that rules asked for late in
//! every batch are not starved.
//!
//! Pure: [`MatchCache::begin`] says whether to answer from the cache or which rule to query;
//! the caller queries and hands the result to [`MatchCache::complete`]. Times are passed in.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

use super::graph::ClusterCondition;

/// Upstream `NewPromQL`'s `MinBetweenMatches`.
pub const MIN_BETWEEN_MATCHES: SignedDuration = SignedDuration::from_secs(1);
/// Upstream's `MinForCondition`.
pub const MIN_FOR_CONDITION: SignedDuration = SignedDuration::from_hours(1);
/// Upstream's `Expiration`.
pub const EXPIRATION: SignedDuration = SignedDuration::from_hours(24);

/// A rule's answer: matches, does not, or why it could not be evaluated.
pub type MatchResult = Result<bool, String>;

/// One rule's entry (upstream `MatchResult`).
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// When its last evaluation completed; `None`: asked for, never evaluated.
    when: Option<Timestamp>,
    /// When it was last asked for.
    access: Timestamp,
    result: Option<MatchResult>,
}

/// What to do for a rule.
#[derive(Debug, Clone, PartialEq)]
pub enum CacheStep {
    /// The answer, from the cache.
    Answer(MatchResult),
    /// No query may be made before `until`; `message` is upstream's error for the rule now.
    Throttled { until: Timestamp, message: String },
    /// Query `rule` (perhaps not the one asked for: the most stale one), then
    /// [`MatchCache::complete`] with `key`.
    Evaluate { key: String, rule: ClusterCondition },
}

/// Upstream `cache.Cache`, keyed by the rule's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchCache {
    last_match: Option<Timestamp>,
    entries: BTreeMap<String, Entry>,
    pub min_between_matches: SignedDuration,
    pub min_for_condition: SignedDuration,
    pub expiration: SignedDuration,
}

impl Default for MatchCache {
    fn default() -> Self {
        MatchCache {
            last_match: None,
            entries: BTreeMap::new(),
            min_between_matches: MIN_BETWEEN_MATCHES,
            min_for_condition: MIN_FOR_CONDITION,
            expiration: EXPIRATION,
        }
    }
}

/// Upstream's cache key: the rule as JSON (`{"type":"PromQL","promql":{"promql":"..."}}`).
pub fn key(rule: &ClusterCondition) -> String {
    serde_json::to_string(rule).unwrap_or_else(|_| format!("{rule:?}"))
}

/// Go's `Format("15:04:05Z07")` of a UTC time.
fn clock(t: Timestamp) -> String {
    t.strftime("%H:%M:%SZ").to_string()
}

impl MatchCache {
    /// Upstream `Match` up to the wrapped evaluation, asked for `rule` at `now`.
    pub fn begin(&mut self, rule: &ClusterCondition, now: Timestamp) -> CacheStep {
        let key = key(rule);
        self.expire(now);
        let step = self.decide(&key, rule, now);
        // Upstream's deferred access stamp.
        match self.entries.get_mut(&key) {
            Some(entry) => entry.access = now,
            None => {
                self.entries.insert(
                    key,
                    Entry {
                        when: None,
                        access: now,
                        result: None,
                    },
                );
            }
        }
        step
    }

    fn decide(&mut self, key: &str, rule: &ClusterCondition, now: Timestamp) -> CacheStep {
        if let Some(last) = self.last_match
            && now.duration_since(last) <= self.min_between_matches
        {
            if let Some(result) = self.cached(key) {
                return CacheStep::Answer(result);
            }
            let until = last.saturating_add(self.min_between_matches).unwrap_or(now);
            return CacheStep::Throttled {
                until,
                message: format!("evaluation is throttled until {}", clock(until)),
            };
        }
        let target = match self.most_stale(now) {
            Some((thief, target)) => target.map(|t| (thief, t)),
            // Nothing asked for since its evaluation: evaluate the rule asked for.
            None => Some((key.to_string(), rule.clone())),
        };
        let (key, rule) = match target {
            Some(target) => target,
            // The most stale is too fresh to ask again: the cache answers, if it can.
            None => match self.cached(key) {
                Some(result) => return CacheStep::Answer(result),
                None => (key.to_string(), rule.clone()),
            },
        };
        CacheStep::Evaluate { key, rule }
    }

    /// Records the evaluation of the rule `evaluated` ([`CacheStep::Evaluate`]'s key) that
    /// completed at `now`, and answers for `rule`, the one asked for.
    pub fn complete(
        &mut self,
        rule: &ClusterCondition,
        evaluated: &str,
        result: MatchResult,
        now: Timestamp,
    ) -> CacheStep {
        self.last_match = Some(now);
        let entry = self.entries.entry(evaluated.to_string()).or_insert(Entry {
            when: None,
            access: now,
            result: None,
        });
        entry.when = Some(now);
        entry.result = Some(result);
        match self.cached(&key(rule)) {
            Some(result) => CacheStep::Answer(result),
            None => CacheStep::Throttled {
                until: now.saturating_add(self.min_between_matches).unwrap_or(now),
                message: "evaluation is throttled".into(),
            },
        }
    }

    fn cached(&self, key: &str) -> Option<MatchResult> {
        let entry = self.entries.get(key)?;
        entry.when.and(entry.result.clone())
    }

    /// Upstream `expireStaleMatchResults`: results older than the expiration, and requests
    /// never evaluated that old, are forgotten.
    fn expire(&mut self, now: Timestamp) {
        let expiration = self.expiration;
        self.entries
            .retain(|_, e| now.duration_since(e.when.unwrap_or(e.access)) <= expiration);
    }

    /// Upstream `calculateMostStale`: among the rules asked for since their last evaluation,
    /// the least recently evaluated (ties: the longest waiting). `None`: there is none;
    /// `Some((key, None))`: it was evaluated less than `min_for_condition` ago.
    fn most_stale(&self, now: Timestamp) -> Option<(String, Option<ClusterCondition>)> {
        let asked = |e: &Entry| e.when.is_none_or(|w| e.access > w);
        let (key, entry) = self
            .entries
            .iter()
            .filter(|(_, e)| asked(e))
            .min_by_key(|(_, e)| (e.when, e.access))?;
        if let Some(when) = entry.when
            && now.duration_since(when) < self.min_for_condition
        {
            return Some((key.clone(), None));
        }
        // Keys are this cache's own JSON; one that does not parse back is dropped upstream.
        let rule = serde_json::from_str(key).ok();
        Some((key.clone(), rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::updates::graph::PromQlClusterCondition;

    fn rule(q: &str) -> ClusterCondition {
        ClusterCondition {
            type_: "PromQL".into(),
            promql: Some(PromQlClusterCondition { promql: q.into() }),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    /// Asks for `r` at `t`; when told to evaluate, answers `result` for whatever rule the
    /// cache picked, at the same time. Returns the rule evaluated (if any) and the answer.
    fn ask(
        cache: &mut MatchCache,
        r: &ClusterCondition,
        t: Timestamp,
        result: MatchResult,
    ) -> (Option<String>, CacheStep) {
        match cache.begin(r, t) {
            CacheStep::Evaluate { key, rule } => {
                let step = cache.complete(r, &key, result, t);
                (Some(rule.promql.unwrap().promql), step)
            }
            step => (None, step),
        }
    }

    #[test]
    fn key_is_upstreams_json() {
        assert_eq!(
            key(&rule("group(up)")),
            r#"{"type":"PromQL","promql":{"promql":"group(up)"}}"#
        );
    }

    #[test]
    fn first_request_is_evaluated_then_cached() {
        let mut c = MatchCache::default();
        let a = rule("a");
        assert_eq!(
            ask(&mut c, &a, at(0), Ok(true)),
            (Some("a".into()), CacheStep::Answer(Ok(true)))
        );
        // Within a second: the cache answers.
        assert_eq!(
            ask(&mut c, &a, at(1), Ok(false)),
            (None, CacheStep::Answer(Ok(true)))
        );
        // Later, but within MinForCondition: still the cache.
        assert_eq!(
            ask(&mut c, &a, at(1800), Ok(false)),
            (None, CacheStep::Answer(Ok(true)))
        );
        // An hour after the evaluation: evaluated again.
        assert_eq!(
            ask(&mut c, &a, at(3601), Ok(false)),
            (Some("a".into()), CacheStep::Answer(Ok(false)))
        );
    }

    #[test]
    fn a_second_rule_within_the_second_is_throttled() {
        let mut c = MatchCache::default();
        ask(&mut c, &rule("a"), at(0), Ok(true));
        let until = at(1);
        assert_eq!(
            ask(&mut c, &rule("b"), at(0), Ok(true)),
            (
                None,
                CacheStep::Throttled {
                    until,
                    message: format!("evaluation is throttled until {}", clock(until)),
                }
            )
        );
        assert_eq!(clock(at(1)), "22:13:21Z");
        // After the second, b (waiting, never evaluated) gets its evaluation.
        assert_eq!(
            ask(&mut c, &rule("b"), at(2), Err("down".into())),
            (Some("b".into()), CacheStep::Answer(Err("down".into())))
        );
    }

    #[test]
    fn a_rule_asked_again_without_others_waiting_is_evaluated_again() {
        // Upstream: when no rule was asked for since its evaluation, the one asked for is
        // evaluated (MinForCondition only holds back the most stale waiting rule).
        let mut c = MatchCache::default();
        ask(&mut c, &rule("a"), at(0), Ok(true));
        assert_eq!(
            ask(&mut c, &rule("a"), at(20), Ok(false)),
            (Some("a".into()), CacheStep::Answer(Ok(false)))
        );
    }

    #[test]
    fn the_most_stale_waiting_rule_steals_the_evaluation() {
        let mut c = MatchCache::default();
        ask(&mut c, &rule("a"), at(0), Ok(true));
        assert!(matches!(
            ask(&mut c, &rule("b"), at(0), Ok(true)).1,
            CacheStep::Throttled { .. }
        ));
        // c is asked for while b waits, never evaluated: b is queried, c is throttled.
        assert_eq!(
            ask(&mut c, &rule("c"), at(5), Ok(true)),
            (
                Some("b".into()),
                CacheStep::Throttled {
                    until: at(6),
                    message: "evaluation is throttled".into()
                }
            )
        );
        // Then c's turn.
        assert_eq!(
            ask(&mut c, &rule("c"), at(10), Ok(false)),
            (Some("c".into()), CacheStep::Answer(Ok(false)))
        );
        // b's answer is cached.
        assert_eq!(
            ask(&mut c, &rule("b"), at(10), Ok(false)),
            (None, CacheStep::Answer(Ok(true)))
        );
    }

    #[test]
    fn entries_expire_after_a_day() {
        let mut c = MatchCache::default();
        ask(&mut c, &rule("a"), at(0), Ok(true));
        c.expire(at(86_401));
        assert!(c.entries.is_empty());
    }
}
