//! What a retry loop tells its user: once what it retries and for how long, again only when the
//! reason changes, and the final error when it gives up; not the same warning at every attempt.

use std::time::Duration;

/// The log lines of one retry loop, decided attempt by attempt.
#[derive(Debug, Clone)]
pub struct RetryNotice {
    what: String,
    budget: Option<Duration>,
    last: Option<String>,
    attempts: u32,
}

impl RetryNotice {
    /// A loop retrying `what` (e.g. "waiting for the API server https://…"), for at most
    /// `budget` (`None`: until it succeeds or is stopped).
    pub fn new(what: impl Into<String>, budget: Option<Duration>) -> RetryNotice {
        RetryNotice {
            what: what.into(),
            budget,
            last: None,
            attempts: 0,
        }
    }

    /// The line to log for an attempt that failed with `problem`: the first failure says what
    /// is retried and for how long, a new reason says so; a repeated reason says nothing.
    pub fn failed(&mut self, problem: &str) -> Option<String> {
        self.attempts += 1;
        if self.last.as_deref() == Some(problem) {
            return None;
        }
        let line = match (&self.last, self.budget) {
            (None, Some(budget)) => format!(
                "{}: {problem}; retrying for up to {}",
                self.what,
                seconds(budget)
            ),
            (None, None) => format!("{}: {problem}; retrying", self.what),
            (Some(_), _) => format!("{}: now {problem}; still retrying", self.what),
        };
        self.last = Some(problem.to_string());
        Some(line)
    }

    /// The line to log when an attempt succeeds after failures (none after a first success);
    /// a later failure is then told again.
    pub fn succeeded(&mut self) -> Option<String> {
        let line = self.last.take().map(|_| {
            format!(
                "{}: succeeded after {} failed attempt{}",
                self.what,
                self.attempts,
                if self.attempts == 1 { "" } else { "s" }
            )
        });
        self.attempts = 0;
        line
    }

    /// How many attempts failed since the last success.
    pub fn failures(&self) -> u32 {
        self.attempts
    }
}

fn seconds(d: Duration) -> String {
    match d.as_secs() {
        s if s < 120 => format!("{s}s"),
        s => format!("{}m{}s", s / 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_reason_is_said_once() {
        let mut notice = RetryNotice::new(
            "waiting for the API server https://x",
            Some(Duration::from_secs(60)),
        );
        let lines: Vec<Option<String>> = ["refused", "refused", "refused", "timeout", "timeout"]
            .iter()
            .map(|p| notice.failed(p))
            .collect();
        assert_eq!(
            lines,
            [
                Some(
                    "waiting for the API server https://x: refused; retrying for up to 60s".into()
                ),
                None,
                None,
                Some("waiting for the API server https://x: now timeout; still retrying".into()),
                None,
            ]
        );
        assert_eq!(notice.failures(), 5);
        assert_eq!(
            notice.succeeded().as_deref(),
            Some("waiting for the API server https://x: succeeded after 5 failed attempts")
        );
        assert_eq!(notice.succeeded(), None);
        assert_eq!(
            notice.failed("refused").as_deref(),
            Some("waiting for the API server https://x: refused; retrying for up to 60s")
        );
    }

    #[test]
    fn without_a_budget_it_retries_until_stopped() {
        let mut notice = RetryNotice::new("watching Agents", None);
        assert_eq!(
            notice.failed("403").as_deref(),
            Some("watching Agents: 403; retrying")
        );
        assert_eq!(seconds(Duration::from_secs(600)), "10m0s");
    }
}
