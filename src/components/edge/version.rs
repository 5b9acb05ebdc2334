//! Versions and version ranges as Open Horizon writes them (anax `semanticversion`): service
//! versions, `version`-typed properties, `in` ranges in constraints, agent upgrade manifests.
//!
//! A version is one to three dot-separated decimal fields without leading zeros (`1`, `1.2`,
//! `1.2.3`), or `INFINITY`, above every other. A range is `[a,b]`, `[a,b)`, `(a,b]` or `(a,b)`
//! (no whitespace anywhere), and a bare version `x` means `[x,INFINITY)`; versions inside are
//! normalised to three fields (`1` is `1.0.0`). The error messages are anax's, word for word.
//!
//! Agent file versions and agent packages are ordered by [`compare_versions`] (spec B.2), which
//! also takes a SemVer 2.0 prerelease (`1.2.3-rc.1`, below `1.2.3`); ranges and `version`-typed
//! properties keep the plain form.
//!
//! Where anax indexes past the end of a string or a field list (it panics: an empty range, a
//! lone `[`, `INFINITY` tested against a bounded range), this module answers instead; each such
//! place says what it answers.

use std::cmp::Ordering;
use std::fmt;

/// The version above every other; also the open end of a bare version's range.
pub const INFINITY: &str = "INFINITY";

/// Why a version or a range is refused; the text is anax's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("Version_Expression: Whitespace is not permitted in {0}.")]
    Whitespace(String),
    #[error("Version_Expression: {0} is not a valid version string.")]
    NotAVersion(String),
    #[error("Version_Expression: {0} does not begin with an inclusion or exclusion directive.")]
    NoStart(String),
    #[error("Version_Expression: {0} does not end with an inclusion or exclusion directive.")]
    NoEnd(String),
    #[error("Version_Expression: Incorrect number of versions in expression: {0}.")]
    VersionCount(String),
    #[error("Input version string {0} or {1} is not a valid single version string.")]
    NotComparable(String, String),
}

/// One to three decimal fields without leading zeros, or `INFINITY` (anax `IsVersionString`).
pub fn is_version_string(text: &str) -> bool {
    if text == INFINITY {
        return true;
    }
    let fields: Vec<&str> = text.split('.').collect();
    fields.len() <= 3
        && fields.iter().all(|field| {
            !field.is_empty()
                && field.bytes().all(|b| b.is_ascii_digit())
                && !(field.len() > 1 && field.starts_with('0'))
        })
}

/// A valid version with three fields (`1` → `1.0.0`); `INFINITY` stays as it is.
pub fn normalize(version: &str) -> String {
    if version == INFINITY {
        return version.to_owned();
    }
    let fields = version.split('.').count();
    format!("{version}{}", ".0".repeat(3usize.saturating_sub(fields)))
}

/// Go's `strconv.Atoi` as anax uses it, its error ignored: a field too large for an int reads
/// as the largest int (Go's range error carries the clamped value), and `INFINITY`, where anax
/// compares it field by field, reads as 0.
fn field_value(field: &str) -> i64 {
    match field.parse::<i64>() {
        Ok(value) => value,
        Err(_) if !field.is_empty() && field.bytes().all(|b| b.is_ascii_digit()) => i64::MAX,
        Err(_) => 0,
    }
}

/// A version as the agent file versions, upgrade manifests and agent packages write it (spec
/// B.2): one to three decimal fields without leading zeros and an optional SemVer 2.0
/// prerelease after a `-` (`1.2.3-rc.1`), or `INFINITY`, above every other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentVersion<'a> {
    Infinity,
    Finite {
        /// The three fields, missing ones 0.
        fields: [i64; 3],
        /// The dot-separated prerelease identifiers; empty for a release.
        prerelease: Vec<&'a str>,
    },
}

impl<'a> AgentVersion<'a> {
    /// `None` when the text is not such a version.
    pub fn parse(text: &'a str) -> Option<Self> {
        if text == INFINITY {
            return Some(AgentVersion::Infinity);
        }
        let (core, prerelease) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        if core == INFINITY || !is_version_string(core) {
            return None;
        }
        let prerelease: Vec<&str> = match prerelease {
            None => vec![],
            Some(pre) => pre.split('.').collect(),
        };
        if !prerelease.iter().all(|id| is_prerelease_identifier(id)) {
            return None;
        }
        let mut fields = [0; 3];
        for (slot, field) in fields.iter_mut().zip(core.split('.')) {
            *slot = field_value(field);
        }
        Some(AgentVersion::Finite { fields, prerelease })
    }
}

/// A SemVer 2.0 prerelease identifier: ASCII letters, digits and `-`, not empty, and a numeric
/// one without leading zeros.
fn is_prerelease_identifier(id: &str) -> bool {
    !id.is_empty()
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !(id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a text is a version with an optional prerelease, or `INFINITY` (see [`AgentVersion`]).
pub fn is_agent_version(text: &str) -> bool {
    AgentVersion::parse(text).is_some()
}

impl Ord for AgentVersion<'_> {
    /// `INFINITY` above all; the fields as numbers; then a release above its prereleases, and
    /// prereleases identifier by identifier (SemVer 2.0 §11).
    fn cmp(&self, other: &Self) -> Ordering {
        use AgentVersion::*;
        match (self, other) {
            (Infinity, Infinity) => Ordering::Equal,
            (Infinity, Finite { .. }) => Ordering::Greater,
            (Finite { .. }, Infinity) => Ordering::Less,
            (
                Finite {
                    fields: a,
                    prerelease: pa,
                },
                Finite {
                    fields: b,
                    prerelease: pb,
                },
            ) => a.cmp(b).then_with(|| compare_prereleases(pa, pb)),
        }
    }
}

impl PartialOrd for AgentVersion<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// No prerelease is above any prerelease; else identifier by identifier, and with an equal
/// prefix the longer list is above.
fn compare_prereleases(a: &[&str], b: &[&str]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    for (x, y) in a.iter().zip(b) {
        match compare_identifiers(x, y) {
            Ordering::Equal => continue,
            unequal => return unequal,
        }
    }
    a.len().cmp(&b.len())
}

/// Numeric identifiers compare as numbers (by length first: they have no leading zeros and may
/// be longer than any integer type) and sort below alphanumeric ones, which compare in ASCII
/// order.
fn compare_identifiers(a: &str, b: &str) -> Ordering {
    let numeric = |id: &str| id.bytes().all(|b| b.is_ascii_digit());
    match (numeric(a), numeric(b)) {
        (true, true) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.cmp(b),
    }
}

/// Orders two versions (anax `CompareVersions`, spec B.2): `INFINITY` is above all, missing
/// fields are 0, fields compare as numbers, a release is above its prereleases (SemVer 2.0).
pub fn compare_versions(a: &str, b: &str) -> Result<Ordering, VersionError> {
    match (AgentVersion::parse(a), AgentVersion::parse(b)) {
        (Some(x), Some(y)) => Ok(x.cmp(&y)),
        _ => Err(VersionError::NotComparable(a.to_owned(), b.to_owned())),
    }
}

/// A version range with both ends normalised (anax `Version_Expression`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    pub start: String,
    pub start_inclusive: bool,
    pub end: String,
    pub end_inclusive: bool,
}

impl VersionRange {
    /// Parses a range or a bare version (anax `Version_Expression_Factory`), checking in anax's
    /// order so that the first complaint is the same one.
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        if text.contains(' ') {
            return Err(VersionError::Whitespace(text.to_owned()));
        }
        let bytes = text.as_bytes();
        // anax indexes the first byte of the text; an empty text is a single (invalid) version.
        let single = bytes.first().is_none_or(|b| !b"([".contains(b))
            && !text.contains(',')
            && bytes.last().is_none_or(|b| !b")]".contains(b));
        let expr = match single {
            true if !is_version_string(text) => {
                return Err(VersionError::NotAVersion(text.to_owned()));
            }
            true => format!("[{text},{INFINITY})"),
            false => text.to_owned(),
        };
        let start_inclusive = expr.starts_with('[');
        if !start_inclusive && !expr.starts_with('(') {
            return Err(VersionError::NoStart(text.to_owned()));
        }
        let inner = &expr[1..];
        let end_inclusive = inner.ends_with(']');
        // A lone `[` leaves nothing to end with (anax slices past the start and panics).
        if !end_inclusive && !inner.ends_with(')') {
            return Err(VersionError::NoEnd(text.to_owned()));
        }
        let inner = &inner[..inner.len() - 1];
        let versions: Vec<&str> = inner.split(',').collect();
        let [start, end] = versions[..] else {
            return Err(VersionError::VersionCount(expr));
        };
        if start.is_empty() || end.is_empty() {
            return Err(VersionError::VersionCount(expr));
        }
        for version in [start, end] {
            if !is_version_string(version) {
                return Err(VersionError::NotAVersion(version.to_owned()));
            }
        }
        Ok(VersionRange {
            start: normalize(start),
            start_inclusive,
            end: normalize(end),
            end_inclusive,
        })
    }

    /// Whether a version lies in the range (anax `Is_within_range`, with its arithmetic: an end
    /// equal to the version decides by its bracket, then the start and the end are compared
    /// field by field, `INFINITY` as an end holding everything above the start).
    pub fn contains(&self, version: &str) -> Result<bool, VersionError> {
        if !is_version_string(version) {
            return Err(VersionError::NotAVersion(version.to_owned()));
        }
        let version = normalize(version);
        if (version == self.start && self.start_inclusive)
            || (version == self.end && self.end_inclusive)
        {
            return Ok(true);
        }
        if version == self.start || version == self.end {
            return Ok(false);
        }
        // anax compares `INFINITY` field by field here and reads past its one field (a panic):
        // it lies in no range that the checks above did not already decide.
        if version == INFINITY {
            return Ok(false);
        }
        let fields: Vec<i64> = version.split('.').map(field_value).collect();
        for (start, field) in self.start.split('.').map(field_value).zip(&fields) {
            match start.cmp(field) {
                Ordering::Equal => continue,
                Ordering::Less => break,
                Ordering::Greater => return Ok(false),
            }
        }
        if self.end == INFINITY {
            return Ok(true);
        }
        for (end, field) in self.end.split('.').map(field_value).zip(&fields) {
            match end.cmp(field) {
                Ordering::Equal => continue,
                Ordering::Greater => return Ok(true),
                Ordering::Less => return Ok(false),
            }
        }
        // Equal field by field but not as text: only fields past an int's range get here.
        Ok(false)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (open, close) = (
            if self.start_inclusive { '[' } else { '(' },
            if self.end_inclusive { ']' } else { ')' },
        );
        write!(f, "{open}{},{}{close}", self.start, self.end)
    }
}

/// Whether a text is a full range with brackets (anax `IsVersionExpression`): bracketed on at
/// least one side, two versions around one comma.
pub fn is_version_expression(text: &str) -> bool {
    let opens = text.starts_with(['[', '(']);
    let closes = text.ends_with([']', ')']);
    if !opens && !closes {
        return false;
    }
    let versions: Vec<&str> = text.split(',').collect();
    let [start, end] = versions[..] else {
        return false;
    };
    // anax drops the first byte of the start and the last of the end, brackets or not.
    let start = start.get(1..).unwrap_or("");
    let end = end.get(..end.len().saturating_sub(1)).unwrap_or("");
    !start.is_empty() && !end.is_empty() && is_version_string(start) && is_version_string(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_strings() {
        for valid in ["1", "1.2", "1.2.3", "0.0.0", "10.20.30", "INFINITY", "0"] {
            assert!(is_version_string(valid), "{valid}");
        }
        for invalid in [
            "",
            "1.",
            ".1",
            "1..2",
            "1.2.3.4",
            "01",
            "1.02.1",
            "a",
            "1.2.a",
            "-1",
            "+1",
            "1 ",
            "infinity",
            "1.2.3-beta",
        ] {
            assert!(!is_version_string(invalid), "{invalid:?}");
        }
        assert_eq!(normalize("1"), "1.0.0");
        assert_eq!(normalize("1.2"), "1.2.0");
        assert_eq!(normalize("1.2.3"), "1.2.3");
        assert_eq!(normalize(INFINITY), INFINITY);
    }

    #[test]
    fn comparisons() {
        use Ordering::*;
        let cases = [
            ("1.0.0", "1.0.0", Equal),
            ("1", "1.0.0", Equal),
            ("1.10", "1.9.9", Greater),
            ("2", "10", Less),
            ("INFINITY", "99.0.0", Greater),
            ("1.2.3", "INFINITY", Less),
            ("INFINITY", "INFINITY", Equal),
            ("INFINITY", "99.0.0-rc.1", Greater),
            // Go's Atoi clamps a field past an int to the largest int (its error ignored).
            ("99999999999999999999", "99999999999999999998", Equal),
            ("99999999999999999999", "5", Greater),
            // Prereleases (SemVer 2.0 §11): a release above its prereleases.
            ("1.0.0-alpha", "1.0.0", Less),
            ("1.0.0", "1.0.0-rc.1", Greater),
            ("1-rc.1", "1.0.0-rc.1", Equal),
            ("1.0.1-alpha", "1.0.0", Greater),
            // Identifier by identifier: numeric below alphanumeric, numbers as numbers,
            // ASCII order, the longer list above on an equal prefix.
            ("1.0.0-alpha", "1.0.0-alpha.1", Less),
            ("1.0.0-alpha.1", "1.0.0-alpha.beta", Less),
            ("1.0.0-alpha.beta", "1.0.0-beta", Less),
            ("1.0.0-beta", "1.0.0-beta.2", Less),
            ("1.0.0-beta.2", "1.0.0-beta.11", Less),
            ("1.0.0-beta.11", "1.0.0-rc.1", Less),
            ("1.0.0-rc.1", "1.0.0", Less),
            ("1.0.0-1", "1.0.0-a", Less),
            ("1.0.0-Z", "1.0.0-a", Less),
            ("1.0.0-x-y", "1.0.0-x", Greater),
            ("1.0.0-123456789012345678901234567890", "1.0.0-99", Greater),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare_versions(a, b), Ok(want), "{a} vs {b}");
            assert_eq!(compare_versions(b, a), Ok(want.reverse()), "{b} vs {a}");
        }
        for bad in [
            "1.a",
            "",
            "1.0.0-",
            "1.0.0-rc..1",
            "1.0.0-01",
            "1.0.0-rc_1",
            "1.0.0+build",
            "01.0.0-rc",
            "INFINITY-rc",
            "1.2.3.4-rc",
            "-rc",
        ] {
            assert_eq!(
                compare_versions(bad, "1").unwrap_err().to_string(),
                format!("Input version string {bad} or 1 is not a valid single version string.")
            );
        }
        assert!(is_agent_version("1.0.0-0.3.7"));
        assert!(is_agent_version("1.0.0-x.7.z.92"));
        assert!(is_agent_version("2.31.0-1563"));
        // Ranges and typed properties keep anax's plain versions.
        assert!(!is_version_string("1.0.0-rc.1"));
    }

    #[test]
    fn ranges_parse_with_anax_messages() {
        let ok = [
            ("1.0.0", "[1.0.0,INFINITY)"),
            ("1", "[1.0.0,INFINITY)"),
            ("[1,2]", "[1.0.0,2.0.0]"),
            ("(1.2,2.3.4)", "(1.2.0,2.3.4)"),
            ("[1.0.0,INFINITY)", "[1.0.0,INFINITY)"),
            ("(0.0.0,INFINITY]", "(0.0.0,INFINITY]"),
            // anax does not check that the start is below the end.
            ("[3.0.0,1.0.0]", "[3.0.0,1.0.0]"),
        ];
        for (text, want) in ok {
            assert_eq!(
                VersionRange::parse(text).unwrap().to_string(),
                want,
                "{text}"
            );
        }
        let bad = [
            (
                "[1.0.0, 2.0.0)",
                "Version_Expression: Whitespace is not permitted in [1.0.0, 2.0.0).",
            ),
            (
                "1.0.0.0",
                "Version_Expression: 1.0.0.0 is not a valid version string.",
            ),
            (
                "01.0",
                "Version_Expression: 01.0 is not a valid version string.",
            ),
            ("", "Version_Expression:  is not a valid version string."),
            (
                "1.0.0,2.0.0]",
                "Version_Expression: 1.0.0,2.0.0] does not begin with an inclusion or exclusion directive.",
            ),
            (
                "[1.0.0,2.0.0",
                "Version_Expression: [1.0.0,2.0.0 does not end with an inclusion or exclusion directive.",
            ),
            (
                "[",
                "Version_Expression: [ does not end with an inclusion or exclusion directive.",
            ),
            (
                "[1.0.0]",
                "Version_Expression: Incorrect number of versions in expression: [1.0.0].",
            ),
            (
                "[1,2,3]",
                "Version_Expression: Incorrect number of versions in expression: [1,2,3].",
            ),
            (
                "[,2]",
                "Version_Expression: Incorrect number of versions in expression: [,2].",
            ),
            (
                "[1.x,2]",
                "Version_Expression: 1.x is not a valid version string.",
            ),
            (
                "[1,2.0.0.0)",
                "Version_Expression: 2.0.0.0 is not a valid version string.",
            ),
            (
                "[1.0.0,2.0.0)x",
                "Version_Expression: [1.0.0,2.0.0)x does not end with an inclusion or exclusion directive.",
            ),
        ];
        for (text, want) in bad {
            assert_eq!(
                VersionRange::parse(text).unwrap_err().to_string(),
                want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn containment() {
        let cases = [
            ("[1.0.0,2.0.0)", "1.0.0", true),
            ("[1.0.0,2.0.0)", "1", true),
            ("(1.0.0,2.0.0)", "1.0.0", false),
            ("[1.0.0,2.0.0)", "2.0.0", false),
            ("[1.0.0,2.0.0]", "2", true),
            ("[1.0.0,2.0.0)", "1.9.99", true),
            ("[1.0.0,2.0.0)", "0.9", false),
            ("[1.0.0,2.0.0)", "2.0.1", false),
            ("1.2.3", "1.2.3", true),
            ("1.2.3", "1.2.2", false),
            ("1.2.3", "500", true),
            ("[1.0.0,INFINITY)", "INFINITY", false),
            ("[1.0.0,INFINITY]", "INFINITY", true),
            ("[1.0.0,2.0.0]", "INFINITY", false),
            // A start of INFINITY reads as 0 when compared field by field, as in anax.
            ("(INFINITY,2.0.0)", "1.0.0", true),
            // A reversed range holds nothing strictly inside.
            ("[3.0.0,1.0.0]", "2.0.0", false),
        ];
        for (range, version, want) in cases {
            let range_v = VersionRange::parse(range).unwrap();
            assert_eq!(range_v.contains(version), Ok(want), "{version} in {range}");
        }
        let range = VersionRange::parse("[1,2]").unwrap();
        assert_eq!(
            range.contains("1.2.3.4").unwrap_err().to_string(),
            "Version_Expression: 1.2.3.4 is not a valid version string."
        );
    }

    #[test]
    fn version_expressions() {
        for yes in ["[1.0.0,2.0.0)", "(1,INFINITY]", "x1,2]", "[1,2x"] {
            assert!(is_version_expression(yes), "{yes}");
        }
        for no in ["1.0.0", "[1.0.0]", "[1,2,3]", "[,2]", "1,2", "[a,2]", "[1,"] {
            assert!(!is_version_expression(no), "{no}");
        }
    }
}
