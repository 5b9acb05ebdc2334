//! Scalar resolution exactly as go-yaml v2 (`resolve.go`) does it when decoding into
//! `interface{}`, which is how the CVO reads manifests (through sigs.k8s.io/yaml).
//!
//! YAML 1.1 rules: `yes`/`on`/`y` are booleans, `0755` is octal, `1e3` is a float; a timestamp
//! stays a string (go-yaml v2 keeps timestamps as strings in `interface{}` for compatibility).

use super::node::Node;

/// The resolved value of a scalar, before it becomes JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    /// The `<<` merge key.
    Merge,
}

const BOOL_TRUE: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
];
const BOOL_FALSE: &[&str] = &[
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
];
const NULLS: &[&str] = &["", "~", "null", "Null", "NULL"];

const STR_TAG: &str = "tag:yaml.org,2002:str";
const BINARY_TAG: &str = "tag:yaml.org,2002:binary";
const INT_TAG: &str = "tag:yaml.org,2002:int";
const FLOAT_TAG: &str = "tag:yaml.org,2002:float";
const BOOL_TAG: &str = "tag:yaml.org,2002:bool";
const NULL_TAG: &str = "tag:yaml.org,2002:null";
const TIMESTAMP_TAG: &str = "tag:yaml.org,2002:timestamp";
const MERGE_TAG: &str = "tag:yaml.org,2002:merge";

/// Resolves a plain (unquoted, untagged) scalar; a string keeps its allocation.
pub fn resolve_plain(text: impl Into<String> + AsRef<str>) -> Scalar {
    match resolve_by_hint(text.as_ref()) {
        Some(Scalar::Str(_)) | None => Scalar::Str(text.into()),
        Some(other) => other,
    }
}

/// Resolves a scalar that carries an explicit tag (`!!int "3"`, `!!str 3`, ...). Unknown tags
/// (local `!foo` tags) leave the text a string, as go-yaml v2 does.
pub fn resolve_tagged(text: &str, tag: &str) -> Result<Scalar, String> {
    let short = short_tag(tag);
    match tag {
        STR_TAG => Ok(Scalar::Str(text.to_string())),
        BINARY_TAG => decode_binary(text).map(Scalar::Str),
        INT_TAG | FLOAT_TAG | BOOL_TAG | NULL_TAG | TIMESTAMP_TAG | MERGE_TAG => {
            if tag == TIMESTAMP_TAG {
                return if looks_like_timestamp(text) {
                    Ok(Scalar::Str(text.to_string()))
                } else {
                    Err(cannot_decode(text, &short))
                };
            }
            match (tag, resolve_by_hint(text)) {
                (INT_TAG, Some(s @ (Scalar::Int(_) | Scalar::Uint(_)))) => Ok(s),
                // go-yaml v2 accepts an int where a float is asked for.
                (FLOAT_TAG, Some(Scalar::Int(i))) => Ok(Scalar::Float(i as f64)),
                (FLOAT_TAG, Some(Scalar::Uint(u))) => Ok(Scalar::Float(u as f64)),
                (FLOAT_TAG, Some(s @ Scalar::Float(_))) => Ok(s),
                (BOOL_TAG, Some(s @ Scalar::Bool(_))) => Ok(s),
                (NULL_TAG, Some(Scalar::Null)) => Ok(Scalar::Null),
                (MERGE_TAG, Some(Scalar::Merge)) => Ok(Scalar::Merge),
                _ => Err(cannot_decode(text, &short)),
            }
        }
        _ => Ok(Scalar::Str(text.to_string())),
    }
}

fn cannot_decode(text: &str, short_tag: &str) -> String {
    format!("cannot decode !!str `{text}` as a {short_tag}")
}

/// `tag:yaml.org,2002:int` → `!!int`, the spelling go-yaml uses in messages.
pub fn short_tag(tag: &str) -> String {
    match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_string(),
    }
}

/// The first character decides what a plain scalar may be, as in go-yaml's `resolveTable`.
fn resolve_by_hint(text: &str) -> Option<Scalar> {
    let hint = text.as_bytes().first().copied();
    match hint {
        None => Some(Scalar::Null),
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => {
            lookup(text)
        }
        Some(b'.') => lookup(text).or_else(|| parse_go_float(text).map(Scalar::Float)),
        Some(b'+' | b'-' | b'0'..=b'9') => lookup(text).or_else(|| number(text)),
        Some(b'<') if text == "<<" => Some(Scalar::Merge),
        _ => None,
    }
}

fn lookup(text: &str) -> Option<Scalar> {
    if BOOL_TRUE.contains(&text) {
        Some(Scalar::Bool(true))
    } else if BOOL_FALSE.contains(&text) {
        Some(Scalar::Bool(false))
    } else if NULLS.contains(&text) {
        Some(Scalar::Null)
    } else {
        match text {
            ".nan" | ".NaN" | ".NAN" => Some(Scalar::Float(f64::NAN)),
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
                Some(Scalar::Float(f64::INFINITY))
            }
            "-.inf" | "-.Inf" | "-.INF" => Some(Scalar::Float(f64::NEG_INFINITY)),
            _ => None,
        }
    }
}

/// Integers (Go `strconv.ParseInt(s, 0, 64)` after removing `_`), then unsigned, then YAML-style
/// floats, then `0b`/`-0b` binary. A timestamp-looking value resolves to a string.
fn number(text: &str) -> Option<Scalar> {
    if looks_like_timestamp(text) {
        // A string; the caller keeps the text it already owns.
        return None;
    }
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    if let Some(i) = parse_go_int(&plain) {
        return Some(Scalar::Int(i));
    }
    if let Some(u) = parse_go_uint(&plain) {
        return Some(Scalar::Uint(u));
    }
    if is_yaml_style_float(&plain)
        && let Some(f) = parse_go_float(&plain)
    {
        return Some(Scalar::Float(f));
    }
    if let Some(bits) = plain.strip_prefix("0b") {
        return i64::from_str_radix(bits, 2)
            .map(Scalar::Int)
            .ok()
            .or_else(|| u64::from_str_radix(bits, 2).ok().map(Scalar::Uint));
    }
    if let Some(bits) = plain.strip_prefix("-0b") {
        return i64::from_str_radix(&format!("-{bits}"), 2)
            .ok()
            .map(Scalar::Int);
    }
    None
}

/// go-yaml v2 only tries a timestamp when the value starts with four digits and a dash, and then
/// only the layouts `2006-1-2T15:4:5.999999999Z07:00`, `2006-1-2t15:4:5.999999999Z07:00`,
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`. Into `interface{}` the result is the original
/// string, so we only need to know that it parses.
fn looks_like_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let (date, time) = match text.find(['T', 't', ' ']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    valid_date(date) && time.is_none_or(valid_time)
}

fn valid_date(date: &str) -> bool {
    let parts: Vec<&str> = date.split('-').collect();
    if parts.len() != 3 || parts[0].len() != 4 {
        return false;
    }
    let num = |s: &str, max: u32| {
        (1..=2).contains(&s.len())
            && s.bytes().all(|c| c.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|v| (1..=max).contains(&v))
    };
    num(parts[1], 12) && num(parts[2], 31)
}

/// `15:4:5` with optional fraction and zone (`Z`, `+07:00`); the space layout takes no zone.
fn valid_time(time: &str) -> bool {
    let (clock, zone) = match time.find(['Z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => (time, ""),
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let small = |s: &str, max: u32| {
        (1..=2).contains(&s.len())
            && s.bytes().all(|c| c.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|v| v <= max)
    };
    let zone_ok = zone.is_empty()
        || zone == "Z"
        || (zone.len() == 6
            && zone.as_bytes()[3] == b':'
            && zone[1..3]
                .bytes()
                .chain(zone[4..].bytes())
                .all(|c| c.is_ascii_digit()));
    parts.len() == 3
        && small(parts[0], 23)
        && small(parts[1], 59)
        && small(parts[2], 59)
        && fraction
            .is_none_or(|f| !f.is_empty() && f.len() <= 9 && f.bytes().all(|c| c.is_ascii_digit()))
        && zone_ok
}

/// Go `strconv.ParseInt(s, 0, 64)`: sign, then `0x`, `0o`, `0b` or a leading `0` for octal.
fn parse_go_int(s: &str) -> Option<i64> {
    let (negative, digits) = split_sign(s);
    let (radix, body) = radix_of(digits)?;
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go `strconv.ParseUint(s, 0, 64)`: no sign allowed.
fn parse_go_uint(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) {
        return None;
    }
    let (radix, body) = radix_of(s)?;
    u64::from_str_radix(body, radix).ok()
}

fn split_sign(s: &str) -> (bool, &str) {
    match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    }
}

fn radix_of(s: &str) -> Option<(u32, &str)> {
    let lower = s.get(..2).map(str::to_ascii_lowercase);
    let (radix, body) = match lower.as_deref() {
        Some("0x") => (16, &s[2..]),
        Some("0o") => (8, &s[2..]),
        Some("0b") => (2, &s[2..]),
        _ if s.len() > 1 && s.starts_with('0') => (8, &s[1..]),
        _ => (10, s),
    };
    // from_str_radix accepts a leading sign; Go does not accept one after the prefix.
    (!body.is_empty() && !body.starts_with(['+', '-'])).then_some((radix, body))
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go `strconv.ParseFloat(s, 64)` for the decimal forms YAML can reach here. Rust's parser also
/// takes `inf`/`nan` words, which Go spells differently; those never reach this point because
/// the hint table only sends `.`, digits and signs here, but guard anyway. A value too large for
/// a float64 is an error to Go (`ErrRange`), so go-yaml keeps such a scalar a string (`1e400`).
fn parse_go_float(s: &str) -> Option<f64> {
    if s.bytes()
        .any(|c| c.is_ascii_alphabetic() && !matches!(c, b'e' | b'E'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn decode_binary(text: &str) -> Result<String, String> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|e| format!("!!binary value contains invalid base64 data: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

impl Scalar {
    /// The value Go's `json.Marshal` would see. NaN and infinities have no JSON form.
    pub fn into_node(self) -> Result<Node, String> {
        Ok(match self {
            Scalar::Null => Node::Null,
            Scalar::Bool(b) => Node::Bool(b),
            Scalar::Int(i) => Node::Int(i),
            Scalar::Uint(u) => Node::Uint(u),
            Scalar::Float(f) if f.is_finite() => Node::Float(f),
            Scalar::Float(f) => {
                return Err(format!("json: unsupported value: {}", go_float_name(f)));
            }
            Scalar::Str(s) => Node::Str(s),
            Scalar::Merge => Node::Str("<<".to_string()),
        })
    }

    /// A map key as sigs.k8s.io/yaml turns it into a JSON object key.
    pub fn into_key(self) -> Result<String, String> {
        match self {
            Scalar::Str(s) => Ok(s),
            Scalar::Int(i) => Ok(i.to_string()),
            Scalar::Uint(u) => Ok(u.to_string()),
            Scalar::Bool(b) => Ok(b.to_string()),
            Scalar::Float(f) => Ok(go_float32_key(f)),
            Scalar::Merge => Ok("<<".to_string()),
            Scalar::Null => Err("unsupported map key of type: <nil>: a mapping key is null; quote it or give it a value".to_string()),
        }
    }
}

fn go_float_name(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's names for the specials.
fn go_float32_key(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    let f32v = f as f32;
    let exp = if f32v == 0.0 {
        0
    } else {
        f32v.abs().log10().floor() as i32
    };
    if (-4..21).contains(&exp) {
        format!("{f32v}")
    } else {
        let s = format!("{f32v:e}");
        match s.split_once('e') {
            Some((m, e)) if e.starts_with('-') => format!("{m}e-{:0>2}", &e[1..]),
            Some((m, e)) => format!("{m}e+{e:0>2}"),
            None => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_booleans_like_go() {
        for t in [
            "yes", "Yes", "YES", "on", "On", "ON", "y", "Y", "true", "True", "TRUE",
        ] {
            assert_eq!(resolve_plain(t), Scalar::Bool(true), "{t}");
        }
        for f in [
            "no", "No", "NO", "off", "Off", "OFF", "n", "N", "false", "False", "FALSE",
        ] {
            assert_eq!(resolve_plain(f), Scalar::Bool(false), "{f}");
        }
        assert_eq!(resolve_plain("yEs"), Scalar::Str("yEs".into()));
        assert_eq!(resolve_plain("tRUE"), Scalar::Str("tRUE".into()));
    }

    #[test]
    fn nulls() {
        for n in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(n), Scalar::Null, "{n:?}");
        }
        assert_eq!(resolve_plain("nULL"), Scalar::Str("nULL".into()));
    }

    #[test]
    fn integers_in_go_bases() {
        assert_eq!(resolve_plain("0755"), Scalar::Int(493));
        assert_eq!(resolve_plain("0x1F"), Scalar::Int(31));
        assert_eq!(resolve_plain("0o17"), Scalar::Int(15));
        assert_eq!(resolve_plain("0b101"), Scalar::Int(5));
        assert_eq!(resolve_plain("-12"), Scalar::Int(-12));
        assert_eq!(resolve_plain("+12"), Scalar::Int(12));
        assert_eq!(resolve_plain("1_000"), Scalar::Int(1000));
        assert_eq!(resolve_plain("0"), Scalar::Int(0));
        assert_eq!(
            resolve_plain("18446744073709551615"),
            Scalar::Uint(u64::MAX)
        );
        assert_eq!(resolve_plain("-9223372036854775808"), Scalar::Int(i64::MIN));
    }

    #[test]
    fn floats() {
        assert_eq!(resolve_plain("1.5"), Scalar::Float(1.5));
        assert_eq!(resolve_plain("1e3"), Scalar::Float(1000.0));
        assert_eq!(resolve_plain(".5"), Scalar::Float(0.5));
        assert_eq!(resolve_plain("-.5"), Scalar::Float(-0.5));
        // Not octal, so Go falls through to the float form.
        assert_eq!(resolve_plain("08"), Scalar::Float(8.0));
        assert_eq!(resolve_plain("1."), Scalar::Float(1.0));
        assert!(matches!(resolve_plain(".nan"), Scalar::Float(f) if f.is_nan()));
        assert_eq!(resolve_plain("-.inf"), Scalar::Float(f64::NEG_INFINITY));
        // hack/upstream: out of float64 range is a string to go-yaml, not an infinity.
        assert_eq!(resolve_plain("1e400"), Scalar::Str("1e400".into()));
        assert_eq!(resolve_plain("-1e400"), Scalar::Str("-1e400".into()));
        assert_eq!(resolve_plain("1e-400"), Scalar::Float(0.0));
    }

    #[test]
    fn strings_that_look_like_something_else() {
        for s in [
            "1.2.3",
            "4.18.0-rc.1",
            "=",
            "-",
            "v1",
            "1:20",
            "0x",
            "12abc",
            "+",
            ".",
            "0b2",
            "2001-02-03",
            "2001-02-03T04:05:06Z",
            "2001-2-3 4:5:6.5",
        ] {
            assert_eq!(resolve_plain(s), Scalar::Str(s.into()), "{s}");
        }
        assert_eq!(resolve_plain("<<"), Scalar::Merge);
    }

    #[test]
    fn timestamps_are_only_recognised_in_go_layouts() {
        assert!(looks_like_timestamp("2001-02-03"));
        assert!(looks_like_timestamp("2001-2-3T4:05:06.5+07:00"));
        assert!(!looks_like_timestamp("2001-13-03"));
        assert!(!looks_like_timestamp("2001-02"));
    }

    #[test]
    fn explicit_tags() {
        assert_eq!(resolve_tagged("3", STR_TAG), Ok(Scalar::Str("3".into())));
        assert_eq!(resolve_tagged("3", INT_TAG), Ok(Scalar::Int(3)));
        assert_eq!(resolve_tagged("3", FLOAT_TAG), Ok(Scalar::Float(3.0)));
        assert_eq!(
            resolve_tagged("aGVsbG8=", BINARY_TAG),
            Ok(Scalar::Str("hello".into()))
        );
        assert_eq!(resolve_tagged("x", "!local"), Ok(Scalar::Str("x".into())));
        assert_eq!(
            resolve_tagged("abc", INT_TAG),
            Err("cannot decode !!str `abc` as a !!int".into())
        );
    }

    #[test]
    fn keys_become_strings_like_sigs_k8s_io_yaml() {
        assert_eq!(Scalar::Int(3).into_key().unwrap(), "3");
        assert_eq!(Scalar::Bool(true).into_key().unwrap(), "true");
        assert_eq!(Scalar::Float(1.5).into_key().unwrap(), "1.5");
        assert_eq!(Scalar::Float(1e21).into_key().unwrap(), "1e+21");
        assert!(Scalar::Null.into_key().is_err());
    }

    #[test]
    fn specials_have_no_json_form() {
        assert!(Scalar::Float(f64::NAN).into_node().is_err());
        assert_eq!(Scalar::Int(-1).into_node().unwrap(), Node::Int(-1));
    }
}
