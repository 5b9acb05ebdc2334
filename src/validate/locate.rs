//! Positions of things inside a document, found by a targeted search of its text. The tree the
//! engine keeps has no positions (it is built for speed); a key written as `key:` (plain,
//! quoted, or in JSON) is easy to find again, and a miss falls back to the document's start.

use crate::manifest::Manifest;

/// 1-based line and column of the start of the document in its file: its first line that is
/// not blank, a comment, a `---` separator or a directive.
pub fn document_start(m: &Manifest) -> (usize, usize) {
    let skipped = m
        .original_text()
        .lines()
        .take_while(|l| {
            let t = l.trim_start();
            t.is_empty() || t.starts_with('#') || t.starts_with('%') || l.starts_with("---")
        })
        .count();
    let total = m.original_text().lines().count();
    (m.line + if skipped < total { skipped } else { 0 }, 1)
}

/// Where mapping key `key` is written in the document, else where the document starts.
pub fn key(m: &Manifest, key: &str) -> (usize, usize) {
    let text = m.original_text();
    find_key(text, key).map_or_else(|| document_start(m), |offset| in_file(m, offset))
}

/// Where `part`, one of the `+`-separated names in the value of mapping key `key`, is written
/// on the key's line; else where the key is.
pub fn value_part(m: &Manifest, key: &str, part: &str) -> (usize, usize) {
    let text = m.original_text();
    let Some(at) = find_key(text, key) else {
        return document_start(m);
    };
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let value_start = at + key.len();
    let line = &text[value_start..line_end];
    let delimited = |i: usize| {
        let before = line[..i].chars().next_back();
        let after = line[i + part.len()..].chars().next();
        let edge =
            |c: Option<char>| c.is_none_or(|c| matches!(c, '+' | '"' | '\'' | ' ' | ':' | '\t'));
        edge(before) && edge(after)
    };
    match line
        .match_indices(part)
        .map(|(i, _)| i)
        .find(|&i| delimited(i))
    {
        Some(i) if !part.is_empty() => in_file(m, value_start + i),
        _ => in_file(m, at),
    }
}

/// Where `needle` (a value) first appears in the document, else where the document starts.
pub fn text(m: &Manifest, needle: &str) -> (usize, usize) {
    if needle.is_empty() {
        return document_start(m);
    }
    m.original_text()
        .find(needle)
        .map_or_else(|| document_start(m), |offset| in_file(m, offset))
}

fn in_file(m: &Manifest, offset: usize) -> (usize, usize) {
    let (line, column) = line_column(m.original_text(), offset);
    (m.line + line - 1, column)
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

fn floor_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The byte offset of `key` written as a mapping key: preceded by a line start, blank, quote,
/// `{` or `,`, and followed (after an optional closing quote and blanks) by `:`.
pub fn find_key(text: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    text.match_indices(key)
        .map(|(i, _)| i)
        .find(|&i| starts_key(text, i) && ends_key(&text[i + key.len()..]))
}

fn starts_key(text: &str, i: usize) -> bool {
    i == 0
        || matches!(
            text.as_bytes()[i - 1],
            b' ' | b'\t' | b'\n' | b'"' | b'\'' | b'{' | b','
        )
}

fn ends_key(rest: &str) -> bool {
    let rest = rest
        .strip_prefix('"')
        .or_else(|| rest.strip_prefix('\''))
        .unwrap_or(rest);
    rest.trim_start_matches([' ', '\t']).starts_with(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_plain_quoted_and_json_keys_but_not_values() {
        let text = "a: release.openshift.io/delete\nmetadata:\n  annotations:\n    release.openshift.io/delete: \"x\"\n";
        let at = find_key(text, "release.openshift.io/delete").unwrap();
        assert_eq!(line_column(text, at), (4, 5));
        let json = r#"{"metadata": {"annotations": {"k": "v"}}}"#;
        assert_eq!(line_column(json, find_key(json, "k").unwrap()), (1, 32));
        assert_eq!(find_key("kk: 1\n", "k"), None);
        assert_eq!(find_key("", ""), None);
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_column("é: x\n  ü: y", 9), (2, 3));
        // An offset inside a character is moved back to its start, never panics.
        assert_eq!(line_column("é", 1), (1, 1));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
