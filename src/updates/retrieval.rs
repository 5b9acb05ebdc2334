//! When the operator asks the update service again, and what it keeps from the previous
//! answer (upstream `syncAvailableUpdates`). The caller reads the clock and passes it in.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::Failure;
use super::alerts::AlertRisk;
use super::cache::MatchCache;
use super::graph::{ConditionalUpdate, Target, Updates};
use super::rules::RiskConditions;

/// What an answer was asked for: a change of any part asks again at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Key {
    /// The update service used (`spec.upstream` or the default).
    pub upstream: String,
    pub channel: String,
    /// The architecture asked for.
    pub architecture: String,
}

/// The last retrieval and the updates the status shows.
#[derive(Debug, Clone, PartialEq)]
pub struct AvailableUpdates {
    pub key: Key,
    /// The last attempt, successful or not.
    pub attempted: Instant,
    /// Recommended updates, newest first.
    pub updates: Vec<Target>,
    /// Conditional updates, newest first.
    pub conditional: Vec<ConditionalUpdate>,
    /// Why the last attempt failed; `None` when it succeeded.
    pub failure: Option<Failure>,
    /// Whether each risk of `conditional` applies, as last evaluated (kept across attempts
    /// until evaluated again, so a retrieval does not flip the status to unknown).
    pub risks: RiskConditions,
    /// The throttled cache `PromQL` rules are evaluated through (kept across attempts).
    pub cache: MatchCache,
    /// The risks `spec.desiredUpdate.acceptRisks` accepts, as of the last pass.
    pub accepted: BTreeSet<String>,
    /// The risks the firing alerts make, as last read (kept when reading them fails, as
    /// upstream's alert getter keeps its stale cache).
    pub alerts: Vec<AlertRisk>,
}

impl AvailableUpdates {
    /// Whether to ask (again): never asked, the last attempt is at least `interval` old (upstream's
    /// minimum update check interval), or the upstream, channel or architecture changed.
    pub fn due(previous: Option<&Self>, key: &Key, now: Instant, interval: Duration) -> bool {
        previous
            .is_none_or(|p| now.saturating_duration_since(p.attempted) >= interval || p.key != *key)
    }

    /// The state after an attempt at `now`. A failure to talk to the update service
    /// (`RemoteFailed`, `ResponseFailed`, `ResponseInvalid`) keeps the updates retrieved before
    /// for the same upstream, channel and architecture, as upstream does; any other outcome
    /// replaces them.
    pub fn record(
        previous: Option<Self>,
        key: Key,
        now: Instant,
        result: Result<Updates, Failure>,
    ) -> Self {
        let (risks, cache, accepted, alerts) = previous
            .as_ref()
            .map(|p| {
                let alerts = p.alerts.clone();
                (p.risks.clone(), p.cache.clone(), p.accepted.clone(), alerts)
            })
            .unwrap_or_default();
        match result {
            Ok(u) => AvailableUpdates {
                key,
                attempted: now,
                updates: u.updates,
                conditional: u.conditional,
                failure: None,
                risks,
                cache,
                accepted,
                alerts,
            },
            Err(failure) => {
                let (updates, conditional) = match previous {
                    Some(p) if failure.is_transient() && p.key == key => (p.updates, p.conditional),
                    _ => (vec![], vec![]),
                };
                AvailableUpdates {
                    key,
                    attempted: now,
                    updates,
                    conditional,
                    failure: Some(failure),
                    risks,
                    cache,
                    accepted,
                    alerts,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(channel: &str) -> Key {
        Key {
            upstream: "http://u/graph".into(),
            channel: channel.into(),
            architecture: "amd64".into(),
        }
    }

    fn found() -> Updates {
        Updates {
            updates: vec![Target {
                version: "4.18.1".into(),
                image: "i".into(),
                ..Target::default()
            }],
            ..Updates::default()
        }
    }

    #[test]
    fn asks_on_the_interval_and_on_changes() {
        let t0 = Instant::now();
        let minute = Duration::from_secs(60);
        assert!(AvailableUpdates::due(None, &key("a"), t0, minute));
        let last = AvailableUpdates::record(None, key("a"), t0, Ok(found()));
        assert!(!AvailableUpdates::due(
            Some(&last),
            &key("a"),
            t0 + minute / 2,
            minute
        ));
        assert!(AvailableUpdates::due(
            Some(&last),
            &key("a"),
            t0 + minute,
            minute
        ));
        assert!(AvailableUpdates::due(Some(&last), &key("b"), t0, minute));
        let other_arch = Key {
            architecture: "Multi".into(),
            ..key("a")
        };
        assert!(AvailableUpdates::due(Some(&last), &other_arch, t0, minute));
    }

    #[test]
    fn transient_failures_keep_the_updates() {
        let t0 = Instant::now();
        let good = AvailableUpdates::record(None, key("a"), t0, Ok(found()));
        let failed = AvailableUpdates::record(
            Some(good.clone()),
            key("a"),
            t0,
            Err(Failure::RemoteFailed("down".into())),
        );
        assert_eq!(failed.updates, good.updates);
        assert_eq!(failed.failure, Some(Failure::RemoteFailed("down".into())));
        // Another channel, or a definitive answer, replaces them.
        let moved = AvailableUpdates::record(
            Some(good.clone()),
            key("b"),
            t0,
            Err(Failure::RemoteFailed("down".into())),
        );
        assert!(moved.updates.is_empty());
        let missing = AvailableUpdates::record(
            Some(good),
            key("a"),
            t0,
            Err(Failure::VersionNotFound {
                version: "4.18.0".into(),
                channel: "a".into(),
            }),
        );
        assert!(missing.updates.is_empty());
    }
}
