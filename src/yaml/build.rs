//! Builds a [`Node`] tree from libyaml events with go-yaml v2 semantics (decoding into
//! `interface{}` and then through sigs.k8s.io/yaml's key conversion).

use std::collections::HashMap;

use super::node::{Mapping, Node};

use super::events::{Event, EventParser, Mark, ScalarStyle, SyntaxError};
use super::resolve::{Scalar, resolve_plain, resolve_tagged};
use super::{Error, Position};

/// Nesting deeper than this is refused instead of risking the stack on hostile input.
/// (The deepest document of the real payload corpus nests 40 levels.)
const MAX_DEPTH: usize = 200;
/// go-yaml v2's "excessive aliasing" rule (`allowedAliasRatio`): past 100 values decoded
/// through aliases and 1,000 in all, at most 99% of the values may come from aliases up to
/// 400,000 values, scaling down to 10% at 4,000,000. So a billion-laughs document is refused
/// after a few thousand values, and alias expansion stays proportional to the document's size.
/// (An absolute budget of 10 million copied values let a 430-byte document take 1.2 s and
/// 630 MB before it was refused: found while writing the `yaml` fuzz target.)
fn excessive_aliasing(aliased: usize, decoded: usize) -> bool {
    const LOW: f64 = 400_000.0;
    const HIGH: f64 = 4_000_000.0;
    if aliased <= 100 || decoded <= 1000 {
        return false;
    }
    let decoded = decoded as f64;
    let allowed = if decoded <= LOW {
        0.99
    } else if decoded >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * (decoded - LOW) / (HIGH - LOW)
    };
    aliased as f64 / decoded > allowed
}

/// Parses one YAML document (the first in `text`). An empty document, or one holding only
/// comments, is `Null` (the CVO skips those).
pub fn parse_document(text: &str) -> Result<Node, Error> {
    parse_document_noting_repeats(text).map(|(node, _)| node)
}

/// [`parse_document`], also saying whether some mapping of the document may write a key twice
/// (go-yaml keeps the last value silently). Exact for plain mappings; a mapping with merge keys
/// (`<<`), where overriding is normal, says "maybe". Costs nothing extra: building a mapping
/// already sorts its keys. [`super::duplicate_keys`] says which keys, where.
pub fn parse_document_noting_repeats(text: &str) -> Result<(Node, bool), Error> {
    let events = match super::simple::events(text) {
        Some(events) => Events::Simple(events.into_iter()),
        None => Events::Libyaml(EventParser::new(text.as_bytes())),
    };
    let mut builder = Builder {
        events,
        anchors: HashMap::new(),
        nodes_started: 0,
        alias_copies: 0,
        decoded: 0,
        repeats: false,
    };
    match builder.document() {
        Ok(node) => Ok((node, builder.repeats)),
        Err(e) => match with_quote_escape_spelled_out(text, &e) {
            Some(fixed) => parse_document_noting_repeats(&fixed),
            None => Err(e),
        },
    }
}

/// go-yaml v2 reads `\'` in a double-quoted scalar as `'`; libyaml refuses it as an unknown
/// escape. When that is the error, the same text with that escape written `\x27` (the same
/// character) is what go-yaml read. (Later error positions on that line move by two columns.)
fn with_quote_escape_spelled_out(text: &str, e: &Error) -> Option<String> {
    if !e.message.ends_with("found unknown escape character") {
        return None;
    }
    let Position { line, column } = e.position?;
    // Columns count characters after a byte-order mark, which libyaml has skipped.
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let start = if line == 1 {
        bom
    } else {
        line_start(text, line)?
    };
    let at = start + text[start..].char_indices().nth(column - 1)?.0;
    text[at..]
        .starts_with("\\'")
        .then(|| format!("{}\\x27{}", &text[..at], &text[at + 2..]))
}

/// The byte offset where 1-based `line` starts, counting lines as libyaml does: `\r\n`, `\r`,
/// `\n`, NEL, LS and PS each end one.
fn line_start(text: &str, line: usize) -> Option<usize> {
    let mut seen = 1;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let end = match c {
            '\r' if chars.peek().is_some_and(|(_, next)| *next == '\n') => {
                chars.next();
                at + 2
            }
            '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => at + c.len_utf8(),
            _ => continue,
        };
        seen += 1;
        if seen == line {
            return Some(end);
        }
    }
    None
}

/// Where a document's events come from: the simple block style read directly
/// ([`super::simple`]), anything else from libyaml.
enum Events<'a> {
    Simple(std::vec::IntoIter<(Event, Mark)>),
    Libyaml(EventParser<'a>),
}

struct Builder<'a> {
    events: Events<'a>,
    /// Anchored values with their size, for alias expansion, and when their node started.
    anchors: HashMap<String, (Node, usize, usize)>,
    /// Nodes begun so far: go-yaml binds an anchor when its node starts, so of two nodes with
    /// the same anchor, the one that started last wins, even when it is nested in the other.
    nodes_started: usize,
    alias_copies: usize,
    /// Values decoded, directly or through aliases (go-yaml's `decodeCount`).
    decoded: usize,
    /// A mapping lost an entry to a later one with the same key (or used a merge key).
    repeats: bool,
}

impl Builder<'_> {
    fn document(&mut self) -> Result<Node, Error> {
        loop {
            let (event, mark) = self.next()?;
            match event {
                Event::StreamStart => continue,
                Event::StreamEnd => return Ok(Node::Null),
                Event::DocumentStart => break,
                other => return Err(unexpected(&other, mark)),
            }
        }
        let (event, mark) = self.next()?;
        if event == Event::DocumentEnd {
            return Ok(Node::Null);
        }
        Ok(self.node(event, mark, 0)?.0)
    }

    fn next(&mut self) -> Result<(Event, Mark), Error> {
        match &mut self.events {
            Events::Simple(events) => {
                Ok(events.next().unwrap_or((Event::StreamEnd, Mark::default())))
            }
            Events::Libyaml(parser) => parser.next_event().map_err(syntax),
        }
    }

    /// A node and how many values it holds (for the alias budget).
    fn node(&mut self, event: Event, mark: Mark, depth: usize) -> Result<(Node, usize), Error> {
        self.count(1, 0, mark)?;
        if depth > MAX_DEPTH {
            return Err(at(
                format!("document is nested deeper than {MAX_DEPTH} levels"),
                mark,
            ));
        }
        self.nodes_started += 1;
        let started = self.nodes_started;
        match event {
            Event::Scalar {
                anchor,
                tag,
                value,
                style,
            } => {
                let scalar = scalar(value, style, tag.as_deref(), mark)?;
                let json = scalar.into_node().map_err(|m| at(m, mark))?;
                Ok(self.remember(anchor, started, json, 1))
            }
            Event::SequenceStart { anchor, .. } => {
                let (items, size) = self.sequence(depth)?;
                Ok(self.remember(anchor, started, Node::Seq(items), size))
            }
            Event::MappingStart { anchor, .. } => {
                let (map, size) = self.mapping(depth)?;
                Ok(self.remember(anchor, started, Node::Map(map), size))
            }
            Event::Alias(name) => self.alias(&name, mark),
            other => Err(unexpected(&other, mark)),
        }
    }

    fn remember(
        &mut self,
        anchor: Option<String>,
        started: usize,
        value: Node,
        size: usize,
    ) -> (Node, usize) {
        if let Some(name) = anchor {
            let later = self.anchors.get(&name).is_some_and(|a| a.2 > started);
            if !later {
                self.anchors.insert(name, (value.clone(), size, started));
            }
        }
        (value, size)
    }

    fn alias(&mut self, name: &str, mark: Mark) -> Result<(Node, usize), Error> {
        let size = self
            .anchors
            .get(name)
            .ok_or_else(|| at(format!("unknown anchor '{name}' referenced"), mark))?
            .1;
        // Checked before copying: a refused expansion costs nothing.
        self.count(size, size, mark)?;
        Ok((self.anchors[name].0.clone(), size))
    }

    /// Counts values decoded (`aliased` of them through an alias) and applies go-yaml's alias
    /// rule. go-yaml checks after each value; checking after a whole expansion is the same, as
    /// the aliased share only grows during one (and the share allowed only shrinks).
    fn count(&mut self, decoded: usize, aliased: usize, mark: Mark) -> Result<(), Error> {
        self.decoded += decoded;
        self.alias_copies += aliased;
        if excessive_aliasing(self.alias_copies, self.decoded) {
            return Err(at("document contains excessive aliasing", mark));
        }
        Ok(())
    }

    fn sequence(&mut self, depth: usize) -> Result<(Vec<Node>, usize), Error> {
        let mut items = Vec::new();
        let mut size = 1;
        loop {
            let (event, mark) = self.next()?;
            if event == Event::SequenceEnd {
                return Ok((items, size));
            }
            let (item, item_size) = self.node(event, mark, depth + 1)?;
            size += item_size;
            items.push(item);
        }
    }

    fn mapping(&mut self, depth: usize) -> Result<(Mapping, usize), Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        let mut size = 1;
        loop {
            let (event, mark) = self.next()?;
            if event == Event::MappingEnd {
                let written = entries.len();
                let mapping = Mapping::from_entries(entries);
                self.repeats |= mapping.len() < written;
                return Ok((mapping, size));
            }
            let key = self.key(event, mark)?;
            let (value_event, value_mark) = self.next()?;
            let (value, value_size) = self.node(value_event, value_mark, depth + 1)?;
            size += 1 + value_size;
            match key {
                Key::Merge => merge_into(&mut entries, value).map_err(|m| at(m, value_mark))?,
                // go-yaml v2 (non-strict) keeps the last of duplicated keys: entries stay in
                // document order and `Mapping::from_entries` keeps the last.
                Key::Name(name) => entries.push((name, value)),
            }
        }
    }

    fn key(&mut self, event: Event, mark: Mark) -> Result<Key, Error> {
        if matches!(event, Event::Scalar { .. }) {
            self.count(1, 0, mark)?;
        }
        match event {
            Event::Scalar {
                tag, value, style, ..
            } => match scalar(value, style, tag.as_deref(), mark)? {
                Scalar::Merge => Ok(Key::Merge),
                other => other.into_key().map(Key::Name).map_err(|m| at(m, mark)),
            },
            Event::Alias(name) => match self.alias(&name, mark)?.0 {
                Node::Str(s) => Ok(Key::Name(s)),
                Node::Int(i) => Ok(Key::Name(i.to_string())),
                Node::Uint(u) => Ok(Key::Name(u.to_string())),
                Node::Float(f) => Scalar::Float(f)
                    .into_key()
                    .map(Key::Name)
                    .map_err(|m| at(m, mark)),
                Node::Bool(b) => Ok(Key::Name(b.to_string())),
                _ => Err(at(
                    "invalid map key: an alias to a collection or null is used as a key",
                    mark,
                )),
            },
            Event::MappingStart { .. } | Event::SequenceStart { .. } => Err(at(
                "invalid map key: a mapping or sequence is used as a key (an unquoted `{{...}}` template reads as a flow mapping; quote it)",
                mark,
            )),
            other => Err(unexpected(&other, mark)),
        }
    }
}

enum Key {
    Name(String),
    Merge,
}

fn scalar(
    value: String,
    style: ScalarStyle,
    tag: Option<&str>,
    mark: Mark,
) -> Result<Scalar, Error> {
    match (tag, style) {
        // A lone `!` is the non-specific tag: the scalar is a string.
        (Some("!"), _) => Ok(Scalar::Str(value)),
        (Some(tag), _) => resolve_tagged(&value, tag).map_err(|m| at(m, mark)),
        (None, ScalarStyle::Plain) => Ok(resolve_plain(value)),
        (None, _) => Ok(Scalar::Str(value)),
    }
}

/// `<<: *base` or `<<: [*a, *b]`, in place in document order; earlier maps of a list win, as
/// in go-yaml v2, so they are appended last.
fn merge_into(entries: &mut Vec<(String, Node)>, value: Node) -> Result<(), String> {
    const MESSAGE: &str = "map merge requires map or sequence of maps as the value";
    match value {
        Node::Map(source) => {
            entries.extend(source.into_entries());
            Ok(())
        }
        Node::Seq(items) => {
            for item in items.into_iter().rev() {
                match item {
                    Node::Map(source) => entries.extend(source.into_entries()),
                    _ => return Err(MESSAGE.to_string()),
                }
            }
            Ok(())
        }
        _ => Err(MESSAGE.to_string()),
    }
}

fn position(mark: Mark) -> Position {
    Position {
        line: mark.line + 1,
        column: mark.column + 1,
    }
}

fn at(message: impl Into<String>, mark: Mark) -> Error {
    Error::new(message, Some(position(mark)))
}

fn syntax(e: SyntaxError) -> Error {
    let message = match e.context {
        Some(context) => format!("{context}: {}", e.problem),
        None => e.problem,
    };
    Error {
        message,
        position: Some(position(e.mark)),
        started_at: e.context_mark.map(position),
    }
}

fn unexpected(event: &Event, mark: Mark) -> Error {
    at(format!("unexpected YAML event {event:?}"), mark)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(text: &str) -> Value {
        parse_document(text).unwrap().into_value()
    }

    /// hack/upstream: an anchor redefined inside the node that first defines it is bound when
    /// its node starts, as go-yaml does: the inner definition wins.
    #[test]
    fn a_nested_redefinition_of_an_anchor_wins() {
        assert_eq!(
            parse("a: &x\n  b: &x inner\nc: *x\n"),
            json!({"a": {"b": "inner"}, "c": "inner"})
        );
        assert_eq!(
            parse("a: &x first\nb: &x second\nc: *x\n"),
            json!({"a": "first", "b": "second", "c": "second"})
        );
    }

    /// hack/upstream: go-yaml v2 reads `\'` in a double-quoted scalar (libyaml refuses it).
    #[test]
    fn the_quote_escape_reads_like_go_yaml() {
        assert_eq!(
            parse("a: \"it\\'s\"\nb: \"x\\'\\'\"\nc: 'd\\'\n"),
            json!({"a": "it's", "b": "x''", "c": "d\\"})
        );
        assert_eq!(parse("\u{feff}é: \"\\'日\\'\"\n"), json!({"é": "'日'"}));
        // Lines as libyaml counts them: the escape on the third line of each.
        for text in [
            "a: 1\rb: 2\rc: \"it\\'s\"\r",
            "a: 1\r\nb: 2\r\nc: \"it\\'s\"\r\n",
            "a: 1\u{2028}b: 2\nc: \"it\\'s\"\n",
        ] {
            assert_eq!(
                parse(text),
                json!({"a": 1, "b": 2, "c": "it's"}),
                "{text:?}"
            );
        }
        let err = parse_document("a: \"\\'\\q\"\n").unwrap_err();
        assert!(
            err.message.ends_with("found unknown escape character"),
            "{err:?}"
        );
    }

    #[test]
    fn reads_yaml_1_1_scalars_like_go() {
        let v = parse("a: yes\nb: on\nc: 0755\nd: '0755'\ne: 1.0\nf: ~\ng: \"yes\"\nh: 08\n");
        assert_eq!(
            v,
            json!({"a": true, "b": true, "c": 493, "d": "0755", "e": 1.0, "f": null, "g": "yes", "h": 8.0})
        );
    }

    #[test]
    fn the_last_duplicated_key_wins() {
        let v = parse("metadata:\n  annotations:\n    a: first\n    a: second\n");
        assert_eq!(v, json!({"metadata": {"annotations": {"a": "second"}}}));
    }

    #[test]
    fn reads_quoted_continuation_lines_not_indented_past_their_key() {
        // The shape of 0000_20_kube-apiserver-operator_00_scc-nested-container.yaml.
        let text = "metadata:\n  annotations:\n    d: 'first line\n    second line\n    third'\n  name: x\n";
        let v = parse(text);
        assert_eq!(
            v["metadata"]["annotations"]["d"],
            json!("first line second line third")
        );
        assert_eq!(v["metadata"]["name"], json!("x"));
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        assert_eq!(parse("\u{feff}kind: A\n"), json!({"kind": "A"}));
    }

    #[test]
    fn empty_and_comment_only_documents_are_null() {
        assert_eq!(parse(""), Value::Null);
        assert_eq!(parse("# nothing here\n"), Value::Null);
        assert_eq!(parse("null\n"), Value::Null);
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let v = parse("base: &b {p: 1, q: 2}\nderived:\n  <<: *b\n  q: 3\nlist: [*b]\n");
        assert_eq!(v["derived"], json!({"p": 1, "q": 3}));
        assert_eq!(v["list"], json!([{"p": 1, "q": 2}]));
        // `y` is a YAML 1.1 boolean, so go-yaml turns this key into "true".
        assert_eq!(parse("y: 1\n"), json!({"true": 1}));
        let v = parse("a: &a {k: 1}\nb: &b {k: 2, j: 2}\nc:\n  <<: [*a, *b]\n");
        assert_eq!(v["c"], json!({"k": 1, "j": 2}));
    }

    #[test]
    fn non_string_keys_become_strings() {
        assert_eq!(
            parse("1: a\ntrue: b\n1.5: c\n"),
            json!({"1": "a", "true": "b", "1.5": "c"})
        );
    }

    #[test]
    fn explicit_tags() {
        assert_eq!(
            parse("a: !!str 123\nb: !!int \"7\"\nc: !custom x\n"),
            json!({"a": "123", "b": 7, "c": "x"})
        );
    }

    #[test]
    fn errors_carry_positions() {
        let err = parse_document("a: b\nc: [d\n").unwrap_err();
        assert!(err.position.is_some_and(|p| p.line >= 2), "{err:?}");
        let err = parse_document("a: *nope\n").unwrap_err();
        assert_eq!(err.message, "unknown anchor 'nope' referenced");
        assert_eq!(err.position, Some(Position { line: 1, column: 4 }));
    }

    #[test]
    fn template_braces_as_a_key_are_a_clear_error() {
        let err = parse_document("image: {{.ReleaseImage}}\n").unwrap_err();
        assert!(err.message.contains("invalid map key"), "{}", err.message);
    }

    #[test]
    fn nan_has_no_json_form() {
        assert!(
            parse_document("a: .nan\n")
                .unwrap_err()
                .message
                .contains("unsupported value: NaN")
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let text = "[".repeat(2000) + &"]".repeat(2000);
        assert!(
            parse_document(&text)
                .unwrap_err()
                .message
                .contains("nested deeper")
        );
    }

    /// go-yaml's rule: a document of a few hundred bytes expanding to ~15,000 values, 99.7% of
    /// them through aliases, is refused (the old budget of 10 million copies let such documents
    /// grow to 630 MB before refusing them; found while writing the `yaml` fuzz target).
    #[test]
    fn aliasing_is_limited_by_its_share_like_go_yaml() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..4 {
            let p = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let err = parse_document(&text).unwrap_err();
        assert!(err.message.contains("excessive aliasing"), "{err:?}");
        assert_eq!(err.position.map(|p| p.line), Some(4));

        // A large anchored value used a few times is fine: most values are not aliased.
        let items = vec!["x"; 2000].join(", ");
        let text = format!("a: &a [{items}]\nb: [*a, *a, *a, *a, *a]\n");
        let value = parse(&text);
        assert_eq!(value["b"].as_array().unwrap().len(), 5);
        assert_eq!(value["b"][4].as_array().unwrap().len(), 2000);

        assert!(!excessive_aliasing(100, 100_000));
        assert!(!excessive_aliasing(990, 1_000));
        assert!(excessive_aliasing(992, 1_001));
        assert!(!excessive_aliasing(390_000, 400_000));
        // Between 400,000 and 4,000,000 values the share allowed falls from 99% to 10%.
        assert!(!excessive_aliasing(1_000_000, 2_000_000)); // 50% of 59.4% allowed
        assert!(excessive_aliasing(1_000_000, 3_500_000)); // 28.6% of 22.4% allowed
        assert!(excessive_aliasing(500_000, 4_500_000)); // 11.1% of 10% allowed
    }

    #[test]
    fn billion_laughs_is_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        assert!(
            parse_document(&text)
                .unwrap_err()
                .message
                .contains("excessive aliasing")
        );
    }
}
