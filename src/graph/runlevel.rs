//! Run level and component parsing of manifest file names.
//!
//! Upstream uses the regular expression
//! `^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_` (Go RE2, where `\d` is
//! ASCII-only). It is implemented here by hand because every choice in that
//! expression is forced: digits, letters and `-` can never be `_`, so the
//! greedy/lazy distinction cannot change the match, and the component is
//! simply everything up to the first `_` after the run level, provided it is
//! a `-`-separated list of non-empty ASCII alphanumeric words. A hand parser
//! cannot fail to compile and cannot panic; the tests cross-check it against
//! the regex itself.

/// Splits a manifest file name into `(run level digits, component)`.
///
/// Returns `None` when the name does not follow the
/// `0000_<digits>_<component>_` convention; such files act as serial
/// barriers. The run level is returned as the digit string because upstream
/// compares run levels as strings (`"1"` and `"01"` differ).
pub fn parse_run_level(file_name: &str) -> Option<(&str, &str)> {
    let rest = file_name.strip_prefix("0000_")?;
    let (level, rest) = split_run(rest, |b| b.is_ascii_digit())?;
    let rest = rest.strip_prefix('_')?;
    let component = component_prefix(rest)?;
    Some((level, component))
}

/// Splits off the longest non-empty prefix whose bytes satisfy `keep`.
fn split_run(s: &str, keep: impl Fn(u8) -> bool) -> Option<(&str, &str)> {
    let len = s.bytes().take_while(|&b| keep(b)).count();
    // `keep` only accepts ASCII, so `len` is always a char boundary.
    (len > 0).then(|| s.split_at(len))
}

/// Returns the `word(-word)*` prefix of `s` that is immediately followed by `_`.
fn component_prefix(s: &str) -> Option<&str> {
    let mut end = 0;
    loop {
        let (word, rest) = split_run(&s[end..], |b| b.is_ascii_alphanumeric())?;
        end += word.len();
        match rest.as_bytes().first() {
            Some(b'_') => return Some(&s[..end]),
            Some(b'-') => end += 1,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_run_level;
    use proptest::prelude::*;

    #[test]
    fn parses_conventional_names() {
        let cases = [
            ("0000_50_olm_00-namespace.yaml", Some(("50", "olm"))),
            ("0000_01_x-y-z_file1", Some(("01", "x-y-z"))),
            ("0000_07_a_0", Some(("07", "a"))),
            (
                "0000_03_config-operator_01_proxy.crd.yaml",
                Some(("03", "config-operator")),
            ),
            (
                "0000_99_machine-api-operator_00_tombstones.yaml",
                Some(("99", "machine-api-operator")),
            ),
            ("0000_1_a_", Some(("1", "a"))),
            ("0000_0123456789_Ab9_x", Some(("0123456789", "Ab9"))),
        ];
        for (name, want) in cases {
            assert_eq!(parse_run_level(name), want, "{name}");
        }
    }

    #[test]
    fn lazy_group_stops_at_first_underscore() {
        // The lazy `*?` group: the component is the shortest dash-list that is
        // followed by `_`, so a later `_x-y_` never extends it.
        assert_eq!(parse_run_level("0000_50_a-b_c-d_file"), Some(("50", "a-b")));
        assert_eq!(parse_run_level("0000_50_a_b_c"), Some(("50", "a")));
        assert_eq!(parse_run_level("0000_50_a-b-c-d_"), Some(("50", "a-b-c-d")));
    }

    #[test]
    fn rejects_non_matching_names() {
        let names = [
            "",
            "a",
            "image-references",
            "0000_50_olm.yaml",        // no `_` after the component
            "0000_50_olm",             // nothing after the component
            "0000__olm_x",             // empty run level
            "0000_5a_olm_x",           // non-digit run level
            "0000_50__x",              // empty component
            "0000_50_-olm_x",          // leading dash
            "0000_50_olm-_x",          // trailing dash
            "0000_50_o--lm_x",         // empty word between dashes
            "0000_50_o.lm_x",          // dot in the component
            "000_50_olm_x",            // three zeros
            "00000_50_olm_x",          // five zeros
            " 0000_50_olm_x",          // anchored at the start
            "0001_50_olm_x",           // prefix is literal
            "0000_\u{663}_olm_x",      // Go's \d is ASCII-only
            "0000_50_\u{e9}t\u{e9}_x", // non-ASCII letters
        ];
        for name in names {
            assert_eq!(parse_run_level(name), None, "{name:?}");
        }
    }

    /// The upstream expression, with `\d` spelled as Go's ASCII class.
    fn upstream(name: &str) -> Option<(String, String)> {
        let re = regex::Regex::new(r"^0000_([0-9]+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_").ok()?;
        let caps = re.captures(name)?;
        Some((caps[1].to_string(), caps[2].to_string()))
    }

    proptest! {
        #[test]
        fn agrees_with_upstream_regex(name in "(0000_)?[0-9a_\\-.Z\u{663}]{0,12}") {
            let ours = parse_run_level(&name).map(|(l, c)| (l.to_string(), c.to_string()));
            prop_assert_eq!(ours, upstream(&name));
        }

        #[test]
        fn agrees_with_upstream_regex_on_any_string(name in "\\PC{0,16}") {
            let ours = parse_run_level(&name).map(|(l, c)| (l.to_string(), c.to_string()));
            prop_assert_eq!(ours, upstream(&name));
        }
    }
}
