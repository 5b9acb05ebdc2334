//! JSON exactly as Go's `encoding/json.Marshal` writes it, because the CVO's version hash is
//! computed over those bytes. serde_json differs in three ways that matter: Go escapes `<`, `>`,
//! `&`, U+2028 and U+2029; Go switches floats to exponent form below 1e-6 and from 1e21 on, with
//! a signed exponent; and Go sorts object keys (serde_json keeps whatever order its map has).

use std::io::Write as _;

use serde_json::{Number, Value};

/// Go `json.Marshal(value)`.
pub fn go_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_go_json(value, &mut out);
    out
}

pub fn write_go_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_json(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // serde_json's default map is already sorted; stay correct if a dependency turns on
            // its `preserve_order` feature.
            if !entries.is_sorted_by(|a, b| a.0 <= b.0) {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_go_json(item, out);
            }
            out.push(b'}');
        }
    }
}

fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        out.extend_from_slice(go_float(f).as_bytes());
    }
}

/// Go's float64 encoding: shortest round-trip digits, `%f` style in [1e-6, 1e21), else `%e`
/// style with `e-7` (not `e-07`) and `e+21`.
pub fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    let scientific = format!("{f:e}");
    match scientific.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            format!("{mantissa}e+{exponent}")
        }
        _ => scientific,
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            _ => None,
        };
        let needs_unicode = b < 0x20 || b == b'<' || b == b'>' || b == b'&';
        // U+2028 and U+2029 are E2 80 A8 / E2 80 A9.
        let line_separator = b == 0xE2
            && bytes.get(i + 1) == Some(&0x80)
            && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9));
        if escape.is_none() && !needs_unicode && !line_separator {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if let Some(e) = escape {
            out.extend_from_slice(e);
            i += 1;
        } else if line_separator {
            out.extend_from_slice(if bytes[i + 2] == 0xA8 {
                b"\\u2028"
            } else {
                b"\\u2029"
            });
            i += 3;
        } else {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xF) as usize]);
            i += 1;
        }
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: Value) -> String {
        String::from_utf8(go_json(&v)).unwrap()
    }

    #[test]
    fn compact_with_sorted_keys() {
        assert_eq!(
            text(json!({"b": [1, true, null], "a": {"z": "y", "A": 1}})),
            r#"{"a":{"A":1,"z":"y"},"b":[1,true,null]}"#
        );
    }

    #[test]
    fn html_and_control_characters_are_escaped_like_go() {
        assert_eq!(
            text(json!("<a href=\"x\">&</a>")),
            r#""\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e""#
        );
        assert_eq!(
            text(json!("tab\there\nnew\u{1}\u{8}\u{c}")),
            r#""tab\there\nnew\u0001\b\f""#
        );
        assert_eq!(
            text(json!("a\u{2028}b\u{2029}c é")),
            "\"a\\u2028b\\u2029c é\""
        );
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1000.0), "1000");
        assert_eq!(go_float(1e20), "100000000000000000000");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1.5e-7), "1.5e-7");
        assert_eq!(go_float(1e-10), "1e-10");
        assert_eq!(go_float(0.000001), "0.000001");
        assert_eq!(go_float(-0.0), "-0");
        assert_eq!(text(json!(18446744073709551615u64)), "18446744073709551615");
    }
}
