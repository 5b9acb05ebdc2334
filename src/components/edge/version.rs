//! Versions and version ranges as Open Horizon writes them (anax `semanticversion`): service
//! versions, `version`-typed properties, `in` ranges in constraints, agent upgrade manifests.
//!
//! A version is one to three dot-separated decimal fields without leading zeros (`1`, `1.2`,
//! `1.2.3`), or `INFINITY`, above every other. A range is `[a,b]`, `[a,b)`, `(a,b]` or `(a,b)`
//! (no whitespace anywhere), and a bare version `x` means `[x,INFINITY)`; versions inside are
//! normalised to three fields (`1` is `1.0.0`). The error messages are anax's, word for word.
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

/// Go's `strconv.Atoi` as anax uses it: a field too large for an int reads as 0 (anax ignores
/// the error), and so does `INFINITY` where anax compares it field by field.
fn field_value(field: &str) -> i64 {
    field.parse().unwrap_or(0)
}

/// Orders two versions (anax `CompareVersions`): `INFINITY` is above all, missing fields are 0,
/// fields compare as numbers.
pub fn compare_versions(a: &str, b: &str) -> Result<Ordering, VersionError> {
    if !is_version_string(a) || !is_version_string(b) {
        return Err(VersionError::NotComparable(a.to_owned(), b.to_owned()));
    }
    if a == b {
        return Ok(Ordering::Equal);
    }
    if a == INFINITY {
        return Ok(Ordering::Greater);
    }
    if b == INFINITY {
        return Ok(Ordering::Less);
    }
    let (a, b) = (normalize(a), normalize(b));
    for (x, y) in a.split('.').zip(b.split('.')) {
        if x != y {
            match field_value(x).cmp(&field_value(y)) {
                Ordering::Equal => continue,
                unequal => return Ok(unequal),
            }
        }
    }
    Ok(Ordering::Equal)
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
            // Fields past an int both read as 0 (anax ignores Atoi's error).
            ("99999999999999999999", "99999999999999999998", Equal),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare_versions(a, b), Ok(want), "{a} vs {b}");
        }
        assert_eq!(
            compare_versions("1.a", "1").unwrap_err().to_string(),
            "Input version string 1.a or 1 is not a valid single version string."
        );
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
