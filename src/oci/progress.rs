//! The download progress bar of registry pulls (`indicatif`, on standard error).
//!
//! A bar is drawn only for a person watching: standard error is a terminal, `$CI` is not set,
//! and the command writes neither machine-readable output (`-o json`, `--log-format json`)
//! nor was asked to be quiet (`--quiet`). The decision is [`show_progress`], a pure function.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What the command line writes, as far as a progress bar is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Text for a person (the default output formats).
    Human,
    /// Machine-readable output (`-o json`, `-o junit`, `--log-format json`, ...): a bar's
    /// escape sequences must not end up among it, even on standard error.
    Machine,
    /// `--quiet`, and library callers that did not ask for a bar.
    #[default]
    Quiet,
}

/// Whether a pull draws a progress bar. `ci` is the value of `$CI` (set by GitHub Actions,
/// GitLab, Buildkite, ... to `true`); an empty value, `0` or `false` count as unset so that
/// `CI=false` can turn the bar back on.
pub fn show_progress(stderr_is_terminal: bool, ci: Option<&str>, mode: OutputMode) -> bool {
    let in_ci = ci.is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"));
    stderr_is_terminal && !in_ci && mode == OutputMode::Human
}

/// One overall bar in bytes for the layers of a pull; cleared when dropped, so an error
/// message is never printed behind a half-drawn bar.
pub struct Download {
    bar: Option<ProgressBar>,
}

impl Download {
    /// A bar of `total` bytes over `layers` layers when `show`, else nothing at all.
    pub fn new(show: bool, total: u64, layers: usize) -> Download {
        if !show || total == 0 {
            return Download { bar: None };
        }
        // `wide_bar` takes what the terminal width leaves, so the line never wraps (a wrapped
        // line is not erased cleanly).
        let style = ProgressStyle::with_template(
            "{prefix} [{wide_bar}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .expect("a valid progress template")
        .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(format!(
                "pulling {layers} layer{}",
                if layers == 1 { "" } else { "s" }
            ));
        Download { bar: Some(bar) }
    }

    /// A bar that never draws.
    pub fn none() -> Download {
        Download { bar: None }
    }

    pub fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    pub fn is_shown(&self) -> bool {
        self.bar.is_some()
    }
}

impl Drop for Download {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_only_for_a_person_at_a_terminal() {
        use OutputMode::*;
        // A terminal, no CI, human output: the only case with a bar.
        assert!(show_progress(true, None, Human));
        // Not a terminal (piped, redirected, under a test harness).
        assert!(!show_progress(false, None, Human));
        // CI, whatever it says unless it says no.
        for ci in ["true", "1", "yes", "TRUE", "gitlab"] {
            assert!(!show_progress(true, Some(ci), Human), "CI={ci}");
        }
        for ci in ["", "0", "false", "False"] {
            assert!(show_progress(true, Some(ci), Human), "CI={ci}");
        }
        // -o json and friends, --log-format json, --quiet.
        assert!(!show_progress(true, None, Machine));
        assert!(!show_progress(true, None, Quiet));
        // The library default asks for none.
        assert_eq!(OutputMode::default(), Quiet);
    }

    #[test]
    fn a_hidden_download_is_inert() {
        let hidden = Download::new(false, 100, 1);
        assert!(!hidden.is_shown());
        hidden.advance(10);
        assert!(!Download::new(true, 0, 1).is_shown());
        assert!(!Download::none().is_shown());
    }
}
