//! Go's `strconv.ParseFloat(s, 64)`, which anax uses on constraint values: decimal and
//! hexadecimal (`0x1p4`) forms, `_` between digits (`1_000`), `inf`/`infinity` with a sign and
//! `nan` without, in any case. Out of range is an error; below the smallest float is zero.
//! Written by hand because Rust's `f64::from_str` knows neither hexadecimal floats nor
//! underscores, and takes a sign before `nan`.

/// The value Go reads, or `None` where Go returns an error.
pub fn go_parse_float(text: &str) -> Option<f64> {
    if let Some(special) = special(text) {
        return Some(special);
    }
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let hex =
        body.len() >= 2 && body.as_bytes()[0] == b'0' && matches!(body.as_bytes()[1], b'x' | b'X');
    if !well_formed(body, hex) || (body.contains('_') && !underscores_ok(text)) {
        return None;
    }
    let value = match hex {
        true => parse_hex(&body[2..])?,
        false => body.replace('_', "").parse::<f64>().ok()?,
    };
    if value.is_infinite() {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// `inf`, `infinity` (either with a sign) and `nan`, case-insensitive, as the whole text.
fn special(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    match lower.as_str() {
        "nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Go's `readFloat` consuming the whole text (after the sign): digits (hex digits after
/// `0x`) with at most one `.`, at least one digit, then an exponent (`e` for decimal, `p`
/// required for hexadecimal) with an optional sign and at least one digit; `_` anywhere in
/// the digits (checked by [`underscores_ok`]).
fn well_formed(body: &str, hex: bool) -> bool {
    let bytes = body.as_bytes();
    let mut i = if hex { 2 } else { 0 };
    let (mut saw_dot, mut saw_digits) = (false, false);
    while i < bytes.len() {
        match bytes[i] {
            b'_' => {}
            b'.' if saw_dot => break,
            b'.' => saw_dot = true,
            b'0'..=b'9' => saw_digits = true,
            c if hex && c.is_ascii_hexdigit() => saw_digits = true,
            _ => break,
        }
        i += 1;
    }
    if !saw_digits {
        return false;
    }
    let exponent_char = if hex { b'p' } else { b'e' };
    if i < bytes.len() && bytes[i].to_ascii_lowercase() == exponent_char {
        i += 1;
        if i < bytes.len() && matches!(bytes[i], b'+' | b'-') {
            i += 1;
        }
        if i >= bytes.len() || !bytes[i].is_ascii_digit() {
            return false;
        }
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
    } else if hex {
        return false;
    }
    i == bytes.len()
}

/// Go's `underscoreOK`: each `_` between digits, or between the base prefix and a digit.
fn underscores_ok(text: &str) -> bool {
    let mut s = text.as_bytes();
    if let Some(b'-' | b'+') = s.first() {
        s = &s[1..];
    }
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = s[1].eq_ignore_ascii_case(&b'x');
    }
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// A well-formed hexadecimal float after `0x` (`1.8p1`), rounded to nearest, ties to even;
/// `None` past the largest float.
fn parse_hex(body: &str) -> Option<f64> {
    let body = body.replace('_', "");
    let p = body.find(['p', 'P'])?;
    let (mantissa, exponent) = (&body[..p], &body[p + 1..]);
    let exponent: i64 = {
        let (negative, digits) = match exponent.as_bytes().first() {
            Some(b'-') => (true, &exponent[1..]),
            Some(b'+') => (false, &exponent[1..]),
            _ => (false, exponent),
        };
        // Like Go, stop counting far past any float's range.
        let magnitude = digits
            .bytes()
            .fold(0i64, |acc, d| (acc * 10 + i64::from(d - b'0')).min(100_000));
        if negative { -magnitude } else { magnitude }
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    // The first 16 hex digits exactly; the rest only as a sticky bit and a scale.
    let kept = &digits[..digits.len().min(16)];
    let dropped = &digits[kept.len()..];
    let m = u64::from_str_radix(if kept.is_empty() { "0" } else { kept }, 16).ok()?;
    if m == 0 {
        return Some(0.0);
    }
    let sticky = dropped.bytes().any(|d| d != b'0');
    let e2 = exponent - 4 * fraction.len() as i64 + 4 * dropped.len() as i64;
    let bits = i64::from(64 - m.leading_zeros());
    let msb = e2 + bits - 1;
    let lsb = (msb - 52).max(-1074);
    let drop = lsb - e2;
    let (kept, scale) = if drop <= 0 {
        (m, e2)
    } else if drop > 64 {
        (0, lsb)
    } else {
        let kept = if drop == 64 { 0 } else { m >> drop };
        let rest = if drop == 64 {
            m
        } else {
            m & ((1u64 << drop) - 1)
        };
        let half = 1u64 << (drop - 1);
        let up = rest > half || (rest == half && (sticky || kept & 1 == 1));
        (kept + u64::from(up), lsb)
    };
    if kept == 0 {
        return Some(0.0);
    }
    let value = kept as f64 * power_of_two(scale)?;
    (!value.is_infinite()).then_some(value)
}

/// 2^e for e from -1074 (the smallest subnormal); `None` above the largest exponent.
fn power_of_two(e: i64) -> Option<f64> {
    match e {
        1024.. => None,
        -1022..=1023 => Some(f64::from_bits(((e + 1023) as u64) << 52)),
        -1074..=-1023 => Some(f64::from_bits(1u64 << (e + 1074))),
        _ => Some(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go 1.26's `strconv.ParseFloat(s, 64)` returned for each text.
    #[test]
    fn parses_as_go() {
        let ok = [
            ("1_000", 1000.0),
            ("+1_000", 1000.0),
            ("+0x1p4", 16.0),
            ("0x1p-2", 0.25),
            ("0x1.8p1", 3.0),
            ("1e-400", 0.0),
            ("-inf", f64::NEG_INFINITY),
            ("+Infinity", f64::INFINITY),
            ("0x_1p4", 16.0),
            ("0X1P4", 16.0),
            ("0x1p4_0", 1.099511627776e12),
            (".5", 0.5),
            ("5.", 5.0),
            ("0x.8p1", 1.0),
            ("0x1.p1", 2.0),
            ("1_0.5", 10.5),
            ("1.5_0", 1.5),
            ("1e1_0", 1e10),
            ("-2.5", -2.5),
            ("0x1fffffffffffff8p-3", 1.8014398509481984e16),
            ("0x1.fffffffffffffp1023", f64::MAX),
            ("0x3p-1076", 5e-324),
            ("0x1p-1074", 5e-324),
            ("0x1p-1075", 0.0),
            ("0x1.8p-1074", 1e-323),
            ("0x1.00000000000008p0", 1.0),
            ("0x1.00000000000018p0", 1.0000000000000004),
            ("0x1.000000000000080001p0", 1.0000000000000002),
        ];
        for (text, want) in ok {
            assert_eq!(go_parse_float(text), Some(want), "{text}");
        }
        assert!(go_parse_float("nan").is_some_and(f64::is_nan));
        assert!(go_parse_float("NaN").is_some_and(f64::is_nan));
        for bad in [
            "0x10",
            "1e400",
            "+nan",
            "1__0",
            "_1",
            "1_",
            "0xp1",
            ".",
            "1e",
            "",
            "-",
            "infinit",
            "0x1p1024",
            "0x1.fffffffffffff8p1023",
            "1e+",
            "1.2.3",
            "0x1.8",
            "1f",
            " 1",
        ] {
            assert_eq!(go_parse_float(bad), None, "{bad:?}");
        }
    }
}
