//! JSON exactly as Go's `encoding/json.Marshal` writes it, because the CVO's version hash is
//! computed over those bytes. serde_json differs in three ways that matter: Go escapes `<`, `>`,
//! `&`, U+2028 and U+2029; Go switches floats to exponent form below 1e-6 and from 1e21 on, with
//! a signed exponent; and Go sorts object keys (serde_json keeps whatever order its map has).

use std::io::Write as _;

use super::node::Node;

/// Go `json.Marshal(value)`.
pub fn go_json(node: &Node) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_go_json(node, &mut out);
    out
}

/// Mapping keys are already sorted and unique ([`super::node::Mapping`]), as Go writes them.
pub fn write_go_json(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Node::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        Node::Float(f) => out.extend_from_slice(go_float(*f).as_bytes()),
        Node::Str(s) => write_string(s, out),
        Node::Seq(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_json(item, out);
            }
            out.push(b']');
        }
        Node::Map(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
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

/// Bytes Go's encoder does not copy as they are: control characters, `"`, `\\`, `<`, `>`, `&`,
/// and 0xE2 (the first byte of U+2028/U+2029, checked further when seen).
const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[b'<' as usize] = true;
    table[b'>' as usize] = true;
    table[b'&' as usize] = true;
    table[0xE2] = true;
    table
};

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !SPECIAL[b as usize] {
            i += 1;
            continue;
        }
        let escaped: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0xE2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(0xA8)) => Some(b"\\u2028"),
                (Some(0x80), Some(0xA9)) => Some(b"\\u2029"),
                _ => {
                    i += 1;
                    continue;
                }
            },
            _ => None,
        };
        out.extend_from_slice(&bytes[start..i]);
        match escaped {
            Some(e) => {
                out.extend_from_slice(e);
                i += if b == 0xE2 { 3 } else { 1 };
            }
            None => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xF) as usize]);
                i += 1;
            }
        }
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn text(v: Value) -> String {
        String::from_utf8(go_json(&Node::from(v))).unwrap()
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
