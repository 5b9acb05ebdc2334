//! Versions and version ranges as Open Horizon writes them (anax `semanticversion`): service
//! versions, agent file versions, upgrade manifests, `in` ranges in constraints.
//!
//! A version is one to three dot-separated fields of decimal digits (leading zeros allowed:
//! `1.02` is `1.2`), optionally followed by `-` and a prerelease of ASCII letters, digits, `-`
//! and `.` (`2.31.0-1498`, `1.0.0-rc.1`), or `INFINITY`, above every other. A range is
//! `[a,b]`, `[a,b)`, `(a,b]` or `(a,b)` (no whitespace anywhere), and a bare version `x` means
//! `[x,INFINITY)`; versions inside are normalised to three fields (`1-rc` is `1.0.0-rc`).
//! Versions are ordered field by field as numbers, then by prerelease as SemVer 2.0 orders them
//! (a release above its prereleases). The error messages are anax's, word for word.
//!
//! `version`-typed properties keep the older, stricter form (anax
//! `externalpolicy.IsVersionString`): [`is_plain_version_string`].
//!
//! Where anax slices past the end of a string (a lone `[` or `(`: it panics), this module
//! answers with an error instead; the place says so.

use std::cmp::Ordering;
use std::fmt;

/// The version above every other; also the open end of a bare version's range.
pub const INFINITY: &str = "INFINITY";

/// Why a version or a range is refused; the text is anax's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("Version_Expression: Empty string is not a valid version.")]
    Empty,
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

/// The part before the first `-` and the prerelease after it (anax splits on every `-` and
/// joins the rest again).
fn split_prerelease(text: &str) -> (&str, &str) {
    text.split_once('-').unwrap_or((text, ""))
}

/// One to three fields of decimal digits and an optional prerelease of `[0-9A-Za-z.-]`, or
/// `INFINITY` (anax `semanticversion.IsVersionString`). The prerelease is checked character
/// by character after Go's `unicode.ToLower`, so the Kelvin sign `K` and `İ` pass as `k`, `i`.
pub fn is_version_string(text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    if text == INFINITY {
        return true;
    }
    let (core, prerelease) = split_prerelease(text);
    let fields: Vec<&str> = core.split('.').collect();
    fields.len() <= 3
        && fields
            .iter()
            .all(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
        && prerelease.chars().all(|c| {
            c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '\u{212A}' || c == '\u{130}'
        })
}

/// The form `version`-typed properties must have (anax `externalpolicy.IsVersionString`): one to
/// three decimal fields without leading zeros, or `INFINITY`; no prerelease.
pub fn is_plain_version_string(text: &str) -> bool {
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

/// A valid version with three fields (`1` → `1.0.0`, `1-rc` → `1.0.0-rc`, `1.2.3-` →
/// `1.2.3`); `INFINITY` stays as it is (anax `normalize`).
pub fn normalize(version: &str) -> String {
    if version == INFINITY {
        return version.to_owned();
    }
    let (core, prerelease) = split_prerelease(version);
    let fields = core.split('.').count();
    let mut out = format!("{core}{}", ".0".repeat(3usize.saturating_sub(fields)));
    if !prerelease.is_empty() {
        out.push('-');
        out.push_str(prerelease);
    }
    out
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits. `Err` carries what Go returns
/// beside its error: 0 for a syntax error, the nearest int for one out of range.
pub fn go_atoi(text: &str) -> Result<i64, i64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(0);
    }
    let mut value: i128 = 0;
    for b in digits.bytes() {
        value = value * 10 + i128::from(b - b'0');
        if value > i128::from(i64::MAX) + 1 {
            break;
        }
    }
    let value = if negative { -value } else { value };
    match i64::try_from(value) {
        Ok(v) => Ok(v),
        Err(_) if negative => Err(i64::MIN),
        Err(_) => Err(i64::MAX),
    }
}

/// Orders two versions (anax `CompareVersions`): the same text is equal, `INFINITY` is above
/// all, then the three fields as numbers (Go's `Atoi`, a field past an int reading as the
/// largest int), then the prereleases ([`compare_prereleases`]).
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
    let ((a_core, a_pre), (b_core, b_pre)) = (split_prerelease(&a), split_prerelease(&b));
    for (x, y) in a_core.split('.').zip(b_core.split('.')) {
        if x == y {
            continue;
        }
        let value = |f: &str| go_atoi(f).unwrap_or_else(|clamped| clamped);
        match value(x).cmp(&value(y)) {
            Ordering::Equal => continue,
            unequal => return Ok(unequal),
        }
    }
    Ok(compare_prereleases(a_pre, b_pre))
}

/// Two prereleases as anax orders them (`ComparePrereleases`, after SemVer 2.0 §11): none is
/// above any; else identifier by identifier, numbers (what Go's `Atoi` reads, `-1` included)
/// by value and below the others, the others in byte order; with an equal prefix the longer
/// list is above.
pub fn compare_prereleases(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if a.is_empty() {
        return Ordering::Greater;
    }
    if b.is_empty() {
        return Ordering::Less;
    }
    let (a_ids, b_ids): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for (i, x) in a_ids.iter().enumerate() {
        let Some(y) = b_ids.get(i) else {
            return Ordering::Greater;
        };
        if x == y {
            continue;
        }
        let unequal = match (go_atoi(x), go_atoi(y)) {
            (Ok(n), Ok(m)) => n.cmp(&m),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => x.cmp(y),
        };
        if unequal != Ordering::Equal {
            return unequal;
        }
    }
    match a_ids.len() < b_ids.len() {
        true => Ordering::Less,
        false => Ordering::Equal,
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
        if text.is_empty() {
            return Err(VersionError::Empty);
        }
        if text.contains(' ') {
            return Err(VersionError::Whitespace(text.to_owned()));
        }
        let bytes = text.as_bytes();
        let single = !b"([".contains(&bytes[0])
            && !text.contains(',')
            && !b")]".contains(&bytes[bytes.len() - 1]);
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
        // A lone `[` or `(` leaves nothing to end with: anax slices before the start and
        // panics; this is its message for a range without an end.
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

    /// Whether a version lies in the range (anax `Is_within_range`): an end equal to the
    /// normalised version decides by its bracket, then the version must not be below the start
    /// and, unless the end is `INFINITY`, not above the end.
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
        if compare_versions(&self.start, &version)? == Ordering::Greater {
            return Ok(false);
        }
        if self.end == INFINITY {
            return Ok(true);
        }
        Ok(compare_versions(&self.end, &version)? != Ordering::Less)
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
    if start.is_empty() || end.is_empty() {
        return false;
    }
    // anax drops the first byte of the start and the last of the end, brackets or not; a cut
    // through a character leaves bytes that are no version.
    let start = std::str::from_utf8(&start.as_bytes()[1..]).unwrap_or("\u{FFFD}");
    let end = std::str::from_utf8(&end.as_bytes()[..end.len() - 1]).unwrap_or("\u{FFFD}");
    is_version_string(start) && is_version_string(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// anax `TestIsVersionString`, and the hub versions (facts of anax main).
    #[test]
    fn version_strings() {
        for valid in [
            "1.0",
            "1.2",
            "1.234.567",
            "3.0.0",
            "234",
            "1.2.03",
            "1.02.3",
            "1.2.3-abc",
            "1.0-abc",
            "1-a",
            "1.2.0-testing",
            "1.0.0-1-a",
            "2.31.0-1498",
            "1.0.0-rc.1",
            "1.05.0",
            "INFINITY",
            "1.2.3-",
            "1.0.0-rc..1",
            "1-RC",
            "1-\u{212A}",
        ] {
            assert!(is_version_string(valid), "{valid}");
        }
        for invalid in [
            "1.0.0.1",
            "1.2.3a",
            "[1.2, 1.3]",
            "1.2.a",
            "1.-a",
            "1.0.1-d*s",
            "",
            "-rc",
            "1.",
            "INFINITY-rc",
            "1.0.0+build",
            "1-é",
            "infinity",
        ] {
            assert!(!is_version_string(invalid), "{invalid:?}");
        }
        for plain in ["1", "1.2.3", "INFINITY", "0"] {
            assert!(is_plain_version_string(plain), "{plain}");
        }
        for not_plain in ["01", "1.02", "1.0.0-rc.1", "", "1.2.3.4"] {
            assert!(!is_plain_version_string(not_plain), "{not_plain}");
        }
        assert_eq!(normalize("1"), "1.0.0");
        assert_eq!(normalize("1.2-rc"), "1.2.0-rc");
        assert_eq!(normalize("1.2.3-"), "1.2.3");
        assert_eq!(normalize("1-a-b"), "1.0.0-a-b");
        assert_eq!(normalize(INFINITY), INFINITY);
    }

    /// anax `TestCompareVersions` and `TestCompareVersionsWithPrerelease` (each pair lower
    /// first), plus the SemVer 2.0 examples and Go's `Atoi` on long fields.
    #[test]
    fn comparisons() {
        use Ordering::*;
        let lower = [
            ("1", "2"),
            ("1.5", "2.0.5"),
            ("0.9", "0.10"),
            ("1.0.9", "1.0.10"),
            ("1.0.9", "INFINITY"),
            ("1.0.1-a", "1.0.1-b"),
            ("1.0.1-c", "2.0.1-a"),
            ("1.30.0-alpha", "1.30.0"),
            ("1.30.0-alpha.1", "1.30.0-beta"),
            ("1.30.0-990", "1.30.0-1000"),
            ("1.30.0-alpha.990", "1.30.0-alpha.1000"),
            ("1.30.0-alpha", "1.30.0-alpha.990"),
            ("1.30.0-alpha.990", "1.30.0-alpha.990.1"),
            ("1.30.0-alpha.990.1.5", "1.30.0-alpha.990.beta"),
            ("1.30.0-alpha.990.1.5", "1.30.0-alpha-990.1.5"),
            ("1-alpha.990.1.5", "1.30-alpha-990.1.5"),
            ("1-alpha", "1-alpha-990.1.5"),
            ("1.0.0-alpha.beta", "1.0.0-beta"),
            ("1.0.0-beta.2", "1.0.0-beta.11"),
            ("1.0.0-rc.1", "1.0.0"),
            ("1.0.0-1", "1.0.0-a"),
            ("1.0.0-Z", "1.0.0-a"),
            ("2.30.0-1400", "2.31.0-1498"),
            // Atoi reads `-1` as a number; a number past an int is text.
            ("1.0.0--1", "1.0.0-0"),
            ("1.0.0-99", "1.0.0-123456789012345678901234567890"),
        ];
        for (a, b) in lower {
            assert_eq!(compare_versions(a, b), Ok(Less), "{a} vs {b}");
            assert_eq!(compare_versions(b, a), Ok(Greater), "{b} vs {a}");
        }
        let equal = [
            ("INFINITY", "INFINITY"),
            ("2.0", "2.0.0"),
            ("2.0-a", "2.0.0-a"),
            ("2-a", "2-a"),
            ("1.02", "1.2.0"),
            ("1.0.0-01", "1.0.0-1"),
            ("1.2.3-", "1.2.3"),
            // Go's Atoi reads a field past an int as the largest int.
            ("99999999999999999999", "99999999999999999998"),
        ];
        for (a, b) in equal {
            assert_eq!(compare_versions(a, b), Ok(Equal), "{a} vs {b}");
            assert_eq!(compare_versions(b, a), Ok(Equal), "{b} vs {a}");
        }
        for bad in ["2.0.x", "2.0.1x", "[2.0, 1.1)", ""] {
            assert_eq!(
                compare_versions(bad, "2.0.0").unwrap_err().to_string(),
                format!(
                    "Input version string {bad} or 2.0.0 is not a valid single version string."
                )
            );
        }
    }

    /// anax `TestConstructor` (refused) and `TestPositive` (accepted), with the messages anax
    /// main gives.
    #[test]
    fn ranges_parse_with_anax_messages() {
        for refused in [
            "",
            "a",
            "1a",
            "1.2.a",
            "[1.2.3",
            "[1.2.3]",
            "(1.2.3",
            "(1.2.3)",
            "1a.2.3",
            "1.2.3.4",
            "1..2..3..4",
            "1.2.3.",
            "1.2.3,",
            "1,2a",
            "1,1.2.3.a",
            "1,1.2..3",
            "1,1a.2.3",
            ".1,.2",
            "1.2.3, 1.2.3",
            "[1.2,3.4)a",
            "[1.2,3.4a)",
            "[1.2.3.4,3.4)",
            "(1.2,3..4]",
            "[(1.2,3.4)",
            "[1.2,3.4))",
            "[1.2,3.4,5.6)",
            "1.2,3.4",
            "[1.2,3.4",
        ] {
            assert!(VersionRange::parse(refused).is_err(), "{refused:?}");
        }
        let ok = [
            ("1", "[1.0.0,INFINITY)"),
            ("1.1", "[1.1.0,INFINITY)"),
            ("1.2.3", "[1.2.3,INFINITY)"),
            ("[1,2]", "[1.0.0,2.0.0]"),
            ("(1.1.1,2.2.2)", "(1.1.1,2.2.2)"),
            ("(1.1-alpha,2.2-beta]", "(1.1.0-alpha,2.2.0-beta]"),
            ("(1.1-a-b,2]", "(1.1.0-a-b,2.0.0]"),
            ("(1.1-a-b,2.01.2]", "(1.1.0-a-b,2.01.2]"),
            ("(1.02,2]", "(1.02.0,2.0.0]"),
            ("[1.0.0-rc.1,2.0.0)", "[1.0.0-rc.1,2.0.0)"),
            ("INFINITY", "[INFINITY,INFINITY)"),
            ("(INFINITY,2.0.0)", "(INFINITY,2.0.0)"),
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
                "",
                "Version_Expression: Empty string is not a valid version.",
            ),
            (
                "[1.0.0, 2.0.0)",
                "Version_Expression: Whitespace is not permitted in [1.0.0, 2.0.0).",
            ),
            (
                "1.0.0.0",
                "Version_Expression: 1.0.0.0 is not a valid version string.",
            ),
            (
                "1.0.0,2.0.0]",
                "Version_Expression: 1.0.0,2.0.0] does not begin with an inclusion or exclusion directive.",
            ),
            (
                "[1.0.0,2.0.0",
                "Version_Expression: [1.0.0,2.0.0 does not end with an inclusion or exclusion directive.",
            ),
            // anax panics on a lone bracket (it slices before the start).
            (
                "[",
                "Version_Expression: [ does not end with an inclusion or exclusion directive.",
            ),
            (
                "(",
                "Version_Expression: ( does not end with an inclusion or exclusion directive.",
            ),
            (
                "[1.0.0]",
                "Version_Expression: Incorrect number of versions in expression: [1.0.0].",
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
        ];
        for (text, want) in bad {
            assert_eq!(
                VersionRange::parse(text).unwrap_err().to_string(),
                want,
                "{text:?}"
            );
        }
    }

    /// anax `TestRanges1` to `TestRanges5`, and the cases.
    #[test]
    fn containment() {
        /// A range; versions inside, outside, not versions.
        type Row<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
        let table: [Row; 8] = [
            (
                "[1,2]",
                &[
                    "1", "2", "1.0", "2.0", "1.0.0", "2.0.0", "1.1", "1.9", "1.0.1", "1.1.1",
                    "1.1.01", "1.09.0",
                ],
                &["2.1", "2.01"],
                &["1.a", "2.a", ""],
            ),
            (
                "[1,2)",
                &[
                    "1",
                    "1.0",
                    "1.0.0",
                    "1.1",
                    "1.9",
                    "1.0.1",
                    "1.1.1",
                    "1.01.90-z",
                    "1.1.1-custom-tag",
                ],
                &["2", "2.0", "2.0.0", "2.1", "2.1-a", "0.0.1-beta"],
                &["1.a", "2.a", "1.2a"],
            ),
            (
                "(1,2]",
                &[
                    "2",
                    "2.0",
                    "2.0.0",
                    "1.1",
                    "1.9",
                    "1.0.1",
                    "1.1.1",
                    "1.1.1-beta4",
                ],
                &["1", "1.0", "1.0.0", "2.1", "2.1-tag", "0.0.01"],
                &["1.a", "2.a"],
            ),
            (
                "(1,2)",
                &[
                    "2.0.0-beta",
                    "1.1",
                    "1.9",
                    "1.0.1",
                    "1.1.1",
                    "1.1.1-prerelease",
                ],
                &["1", "2", "1.0", "2.0", "1.0.0", "2.0.0", "2.1", "0.0.1"],
                &["1.a", "2.a"],
            ),
            (
                "[1,INFINITY)",
                &["1", "1.5.0", "2.5.0", "1.5.1", "1.46.71-alpha"],
                &["0.03.1", "INFINITY"],
                &[],
            ),
            (
                "[1.0.0-rc.1,2.0.0)",
                &["1.0.0-rc.1", "1.0.0-rc.2", "1.0.0", "1.5.0"],
                &["1.0.0-rc.0", "2.0.0"],
                &[],
            ),
            // A prerelease of the end is below it, so inside a range that excludes the end.
            (
                "[2.30.0,3.0.0)",
                &["2.31.0-1498", "2.30.1", "3.0.0-1"],
                &["2.30.0-1400", "3.0.0"],
                &[],
            ),
            // INFINITY as a start holds nothing but itself (when inclusive).
            ("INFINITY", &["INFINITY"], &["1.5.0", "99"], &[]),
        ];
        for (range, inside, outside, invalid) in table {
            let parsed = VersionRange::parse(range).unwrap();
            for v in inside {
                assert_eq!(parsed.contains(v), Ok(true), "{v} in {range}");
            }
            for v in outside {
                assert_eq!(parsed.contains(v), Ok(false), "{v} not in {range}");
            }
            for v in invalid {
                assert_eq!(
                    parsed.contains(v).unwrap_err().to_string(),
                    format!("Version_Expression: {v} is not a valid version string.")
                );
            }
        }
        let cases = [
            ("(INFINITY,2.0.0)", "1.5.0", false),
            ("[1.0.0,INFINITY]", "INFINITY", true),
            ("[1.0.0,2.0.0]", "INFINITY", false),
            ("[3.0.0,1.0.0]", "2.0.0", false),
        ];
        for (range, version, want) in cases {
            let parsed = VersionRange::parse(range).unwrap();
            assert_eq!(parsed.contains(version), Ok(want), "{version} in {range}");
        }
    }

    /// anax `TestVersionExpressionSuccess` and `TestVersionExpressionFailure`.
    #[test]
    fn version_expressions() {
        for yes in [
            "[1.2.3,INFINITY)",
            "[1.2.3,4.5.6)",
            "[1.2.3,4.5.6]",
            "(1.2.3,INFINITY)",
            "(1.2.3,4.5.6]",
            "(1.2.0-a,1.2.0-z]",
            "(1.2-test,1.2-release]",
            "(1.0,1.2-beta]",
            "x1,2]",
            "[1,2x",
        ] {
            assert!(is_version_expression(yes), "{yes}");
        }
        for no in [
            "1",
            "1.2",
            "1.2.3",
            "[1.2)",
            "1,1",
            "(1",
            "(1,",
            "a",
            "[a,2]",
            "(a,b)",
            "(1.2.3,a]",
            "(1.1.1,1.2a]",
            "(1-b,a-b]",
            "",
            "é1,2]",
        ] {
            assert!(!is_version_expression(no), "{no}");
        }
    }

    #[test]
    fn go_atoi_reads_as_go() {
        assert_eq!(go_atoi("12"), Ok(12));
        assert_eq!(go_atoi("-1"), Ok(-1));
        assert_eq!(go_atoi("+7"), Ok(7));
        assert_eq!(go_atoi("007"), Ok(7));
        assert_eq!(go_atoi(""), Err(0));
        assert_eq!(go_atoi("-"), Err(0));
        assert_eq!(go_atoi("1_0"), Err(0));
        assert_eq!(go_atoi("a"), Err(0));
        assert_eq!(go_atoi("99999999999999999999"), Err(i64::MAX));
        assert_eq!(go_atoi("-99999999999999999999"), Err(i64::MIN));
        assert_eq!(go_atoi("-9223372036854775808"), Ok(i64::MIN));
    }

    mod generated {
        //! Versions and ranges from the classes anax main reads differently from older anax
        //! (prereleases, leading zeros, `INFINITY`, brackets, whitespace, Unicode, malformed
        //! text): every input gets an answer, none panics, and the answers hang together.

        use proptest::prelude::*;

        use super::super::*;

        fn version() -> impl Strategy<Value = String> {
            let field = prop_oneof![
                Just("0"),
                Just("1"),
                Just("2"),
                Just("01"),
                Just("10"),
                Just("99999999999999999999")
            ];
            let prerelease = prop_oneof![
                Just(""),
                Just("-rc.1"),
                Just("-1498"),
                Just("-"),
                Just("-a-b"),
                Just("-rc..1"),
                Just("-K"),
                Just("-é"),
                Just("-x_y"),
                Just("--1"),
            ];
            prop_oneof![
                4 => (proptest::collection::vec(field, 1..4), prerelease)
                    .prop_map(|(fields, pre)| format!("{}{pre}", fields.join("."))),
                1 => Just(INFINITY.to_owned()),
                1 => "\\PC{0,6}",
            ]
        }

        fn range() -> impl Strategy<Value = String> {
            let open = prop_oneof![Just("["), Just("("), Just(""), Just(" ")];
            let close = prop_oneof![Just("]"), Just(")"), Just(""), Just(",")];
            prop_oneof![
                (open, version(), version(), close)
                    .prop_map(|(o, a, b, c)| format!("{o}{a},{b}{c}")),
                version(),
                "[\\[\\](),. 0-9a-zA-Z-]{0,8}",
            ]
        }

        proptest! {
            #[test]
            fn every_range_and_version_is_answered(text in range(), versions in proptest::collection::vec(version(), 0..4)) {
                match VersionRange::parse(&text) {
                    Ok(parsed) => {
                        // The normalised form reads back as the same range.
                        prop_assert_eq!(VersionRange::parse(&parsed.to_string()), Ok(parsed.clone()));
                        for v in &versions {
                            prop_assert_eq!(parsed.contains(v).is_ok(), is_version_string(v));
                        }
                    }
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                }
                let _ = is_version_expression(&text);
            }

            #[test]
            fn comparison_is_answered_and_reflexive(a in version(), b in version()) {
                let valid = is_version_string(&a) && is_version_string(&b);
                prop_assert_eq!(compare_versions(&a, &b).is_ok(), valid);
                if is_version_string(&a) {
                    prop_assert_eq!(compare_versions(&a, &a), Ok(Ordering::Equal));
                }
            }
        }
    }
}
