//! A cheap line scan that rules out repeated mapping keys, so that the event walk of
//! [`super::duplicate_keys`] (a second libyaml pass, as costly as reading the document) only
//! runs on documents that may have one.
//!
//! Conservative by construction: it follows block mappings by the column of their keys, and
//! answers "maybe" for anything outside the block subset it understands (flow collections
//! other than `{}`/`[]` and one-line scalar lists, explicit keys, anchors or tags on keys, tabs,
//! directives, very large mappings). Quoted scalars are followed across lines, since a quoted
//! scalar ends at its closing quote whatever the indentation of its lines. "No" is only answered when no mapping of the document
//! can hold the same key twice.

use std::borrow::Cow;

use super::resolve::resolve_plain;

/// Beyond this many keys in one mapping the scan stops comparing and says "maybe".
const MAX_KEYS: usize = 256;

/// Whether the YAML document `text` may hold a key twice in one mapping.
pub(super) fn may_repeat_keys(text: &str) -> bool {
    let mut scan = Scan {
        scopes: Vec::new(),
        scalar_above: None,
        open_quote: None,
        dash: None,
    };
    text.lines()
        .any(|line| scan.line(line.strip_suffix('\r').unwrap_or(line)))
}

/// An open block mapping: the column of its keys and the keys seen so far.
struct Scope<'a> {
    column: usize,
    keys: Vec<Cow<'a, str>>,
}

struct Scan<'a> {
    scopes: Vec<Scope<'a>>,
    /// After a block scalar indicator or a plain scalar: lines indented deeper than this
    /// column are that scalar's text (a plain scalar continues on more indented lines, and in
    /// valid YAML nothing else can be there).
    scalar_above: Option<usize>,
    /// Inside a quoted scalar that began on an earlier line: its quote.
    open_quote: Option<char>,
    /// The column of the last `- ` indicator of the current line, if any.
    dash: Option<usize>,
}

impl<'a> Scan<'a> {
    /// Reads one line; `true` means "maybe" (stop scanning).
    fn line(&mut self, line: &'a str) -> bool {
        if let Some(quote) = self.open_quote {
            return self.quote_continues(line, quote);
        }
        let content = line.trim_start_matches(' ');
        let indent = line.len() - content.len();
        if let Some(above) = self.scalar_above {
            if content.is_empty() || indent > above {
                return false;
            }
            self.scalar_above = None;
        }
        if content.is_empty() || content.starts_with('#') {
            return false;
        }
        if content.starts_with(['\t', '%']) || line.starts_with("---") || line.starts_with("...") {
            return true;
        }
        let Some((column, rest)) = self.sequence_items(indent, content) else {
            return false;
        };
        self.close_deeper(column);
        self.entry(column, rest)
    }

    /// Skips `- ` indicators (each starts a fresh item, closing deeper mappings); the column
    /// and text of what follows, `None` when nothing does.
    fn sequence_items(&mut self, mut column: usize, mut rest: &'a str) -> Option<(usize, &'a str)> {
        self.dash = None;
        while rest == "-" || rest.starts_with("- ") {
            self.dash = Some(column);
            self.close_deeper(column);
            let after = rest[1..].trim_start_matches(' ');
            if after.is_empty() {
                return None;
            }
            if after.starts_with(['|', '>']) {
                self.scalar_above = Some(column);
                return None;
            }
            column += rest.len() - after.len();
            rest = after;
        }
        Some((column, rest))
    }

    /// A line of a quoted scalar that began earlier: it ends at the closing quote, after
    /// which only a comment may follow.
    fn quote_continues(&mut self, line: &str, quote: char) -> bool {
        let Some(end) = quote_end(line, quote, 0) else {
            return false;
        };
        self.open_quote = None;
        let after = line[end + 1..].trim_start_matches([' ', '\t']);
        !(after.is_empty() || after.starts_with('#'))
    }

    /// A quoted scalar starts at the beginning of `text`: note whether it stays open.
    fn quoted_scalar(&mut self, text: &str) {
        let quote = if text.starts_with('"') { '"' } else { '\'' };
        if quote_end(text, quote, 1).is_none() {
            self.open_quote = Some(quote);
        }
    }

    fn close_deeper(&mut self, column: usize) {
        while self.scopes.last().is_some_and(|s| s.column > column) {
            self.scopes.pop();
        }
    }

    /// A line at `column` after indentation and sequence indicators.
    fn entry(&mut self, column: usize, rest: &'a str) -> bool {
        if is_empty_flow(rest) {
            return false;
        }
        if rest.starts_with(['{', '[', '?', '&', '*', '!', '|', '>', '@', '`', '\t']) {
            return true;
        }
        let Some((key, value)) = split_key(rest) else {
            // A scalar (a sequence item): no key here.
            if rest.starts_with(['"', '\'']) {
                self.quoted_scalar(rest);
            } else {
                // Its more indented lines continue it: an item's beyond its `-`, a value's
                // (written below its key) beyond the key.
                self.scalar_above = self.dash.or(self.scopes.last().map(|s| s.column));
            }
            return false;
        };
        let Some(key) = key else {
            return true;
        };
        if self.value(column, value) || self.add_key(column, key) {
            return true;
        }
        false
    }

    /// Looks at a key's value on the same line: `true` for anything the scan cannot follow.
    fn value(&mut self, column: usize, value: &str) -> bool {
        let value = strip_properties(value.trim_start_matches([' ', '\t']));
        match value.as_bytes().first() {
            Some(b'|' | b'>') => {
                self.scalar_above = Some(column);
                false
            }
            Some(b'"' | b'\'') => {
                self.quoted_scalar(value);
                false
            }
            _ if is_empty_flow(value) => false,
            Some(b'{') => true,
            Some(b'[') => value.contains('{') || !value.contains(']'),
            None | Some(b'#') => false,
            Some(_) => {
                self.scalar_above = Some(column);
                false
            }
        }
    }

    /// Adds a key to the mapping at `column`; `true` when it repeats (or the mapping is huge).
    fn add_key(&mut self, column: usize, key: Cow<'a, str>) -> bool {
        match self.scopes.last_mut() {
            Some(scope) if scope.column == column => {
                if scope.keys.contains(&key) || scope.keys.len() >= MAX_KEYS {
                    return true;
                }
                scope.keys.push(key);
            }
            _ => self.scopes.push(Scope {
                column,
                keys: vec![key],
            }),
        }
        false
    }
}

/// `key: value` or `key:` → the key (as the CVO names it; `None` when the scan cannot tell)
/// and the rest. `None` when the line holds no key.
type KeyAndValue<'a> = (Option<Cow<'a, str>>, &'a str);

fn split_key(rest: &str) -> Option<KeyAndValue<'_>> {
    if let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = closing_quote(rest, quote)?;
        let after = rest[end + 1..].trim_start_matches([' ', '\t']);
        let value = after.strip_prefix(':')?;
        if !value.is_empty() && !value.starts_with([' ', '\t']) {
            return None;
        }
        let inner = &rest[1..end];
        // Escapes would need decoding: let the walker decide.
        let key = (!inner.contains(['\\', '\''])).then_some(Cow::Borrowed(inner));
        return Some((key, value));
    }
    let colon = plain_key_end(rest)?;
    let key = rest[..colon].trim_end_matches([' ', '\t']);
    Some((Some(plain_key(key)), &rest[colon + 1..]))
}

/// The `:` ending a plain key: followed by a blank or the end of the line, and before any
/// ` #` comment.
fn plain_key_end(rest: &str) -> Option<usize> {
    let bytes = rest.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            return None;
        }
        if b == b':' && matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')) {
            return Some(i);
        }
    }
    None
}

/// go-yaml names a plain key by its resolved value (`y` is `true`, `0x1` is `1`).
fn plain_key(key: &str) -> Cow<'_, str> {
    let may_resolve = key
        .bytes()
        .next()
        .is_none_or(|b| b"yYnNtTfFoO~.+-0123456789<".contains(&b));
    if !may_resolve {
        return Cow::Borrowed(key);
    }
    match resolve_plain(key).into_key() {
        Ok(name) if name == key => Cow::Borrowed(key),
        Ok(name) => Cow::Owned(name),
        Err(_) => Cow::Borrowed("null"),
    }
}

/// `{}` or `[]`, alone or before a comment.
fn is_empty_flow(text: &str) -> bool {
    ["{}", "[]"].iter().any(|empty| {
        text.strip_prefix(empty).is_some_and(|after| {
            let after = after.trim_start_matches([' ', '\t']);
            after.is_empty() || after.starts_with('#')
        })
    })
}

/// The byte offset of the quote closing the scalar that `text` opens.
fn closing_quote(text: &str, quote: char) -> Option<usize> {
    quote_end(text, quote, 1)
}

/// The byte offset of the first unescaped `quote` at or after `from`.
fn quote_end(text: &str, quote: char, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == '"' => i += 2,
            b'\'' if quote == '\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote as u8 => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Drops a value's `&anchor` and `!tag`, which may precede a block scalar indicator.
fn strip_properties(mut value: &str) -> &str {
    while value.starts_with(['&', '!']) {
        let end = value.find([' ', '\t']).unwrap_or(value.len());
        value = value[end..].trim_start_matches([' ', '\t']);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_block_documents_without_repeats_are_ruled_out() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels:\n    name: x\nspec:\n  containers:\n  - name: a\n    image: x\n    args:\n    - --name: y\n  - name: b\n    image: y\n    command: |\n      name: 1\n      name: 2\n  volumes:\n  -\n    name: v\n  -\n    name: w\n";
        assert!(!may_repeat_keys(text));
    }

    #[test]
    fn repeats_are_never_missed() {
        for text in [
            "a: 1\na: 2\n",
            "a: 1\n'a': 2\n",
            "y: 1\ntrue: 2\n",
            "m:\n  a: 1\n  b:\n    c: 1\n  a: 2\n",
            "- name: a\n  name: b\n",
            "a:\n- x\nb: 1\na: 2\n",
            "- a:\n  - x: 1\n  b: 2\n  a: 3\n",
            "k: |\n  text\nk: 2\n",
            "a: 1 # c\na : 2\n",
            "a:   \n  x: 1\na: 2\n",
            "a: 1\r\na: 2\r\n",
        ] {
            assert!(may_repeat_keys(text), "{text:?}");
        }
    }

    #[test]
    fn what_the_scan_cannot_follow_is_a_maybe() {
        for text in [
            "a: {b: 1, b: 2}\n",
            "a: 'multi\n  line' x\nb: 1\n",
            "? a\n: 1\n",
            "&x a: 1\n",
            "\"a\\x41\": 1\n",
            "a: [1, {b: 2}]\n",
            "- {a: 1}\n",
            "%YAML 1.1\n---\na: 1\n",
            "a: x\nb:\n  c: 1\n  && d: 2\n",
        ] {
            assert!(may_repeat_keys(text), "{text:?}");
        }
        assert!(!may_repeat_keys(
            "a: {}\nb: [x, y]\nc: 'q: r'\nd: \"s\"\n- {}\n"
        ));
        // Lines of a quoted scalar are text, whatever their indentation and content.
        assert!(!may_repeat_keys(
            "a: 'x\nb: 1\nb: 2\n  it''s'\nc: \"y\\\n  a: 1\"\n"
        ));
        assert!(may_repeat_keys("a: 'x\n  y'\na: 2\n"));
        // Nor are the more indented lines of a plain scalar.
        assert!(!may_repeat_keys(
            "- rule: has(x)\n    && {y} > 0\n    b: c\n  message: m\n- plain\n  && x: y\n"
        ));
        assert!(may_repeat_keys("a: x\n  y\na: z\n"));
        assert!(may_repeat_keys("x:\n  a:\n   some text\n  a: 2\n"));
        assert!(may_repeat_keys(
            "x:\n  -   item\n      text\n  x: 1\n  x: 2\n"
        ));
        assert!(!may_repeat_keys("a: !!binary |\n  a: 1\n  a: 2\nb: 1\n"));
    }
}
