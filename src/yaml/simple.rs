//! The events of a document written in the plain block style most generated YAML uses (what
//! `kubectl get -o yaml`, serde and `cvo dt reconcile` write), read without libyaml: the same
//! events, with the same marks, that libyaml gives for such a document, or `None` when the
//! document uses anything else, which then goes to libyaml.
//!
//! Why by hand: libyaml-rs (a line-by-line translation of C libyaml, which we need for Go's
//! exact YAML, see `events`) was the biggest single cost of `cvo dt reconcile` reading 100,000
//! objects (BENCHMARKS.md), about 20 MB/s; no crate gives libyaml's events faster. Only the
//! scanning is replaced: the events go through the same builder, so what a document means
//! (Go's scalar resolution, duplicate keys, merge keys) cannot differ. The tests compare the
//! events and marks with libyaml's on every document of the real payload corpus and on
//! generated documents.
//!
//! The subset, line by line (anything else gives `None`): indentation by spaces; `key: value`,
//! `key:` (its value on the lines below, more indented, or a `- ` sequence at the same
//! indentation, or nothing: null), `- item` (a scalar, or the first line of a mapping or
//! sequence); blank lines and whole-line comments; keys plain scalars; values single-line plain
//! scalars, single-quoted scalars, double-quoted scalars without escapes, `{}` and `[]`. No
//! tabs, control characters, `\r`, byte-order mark, directives, document markers, anchors,
//! aliases, tags, block scalars, flow collections with content, multi-line scalars, trailing
//! comments, characters libyaml refuses or reads as line breaks (U+0080-U+009F, U+2028,
//! U+2029, U+FEFF, U+FFFE, U+FFFF), keys of 1,000 bytes or more (libyaml's simple keys end at
//! 1,024) or nesting deeper than 100 levels (the builder refuses 200; libyaml says so).

use super::events::{Event, Mark, ScalarStyle};

/// Deeper than this, the document goes to libyaml (and the builder's depth limit): the reader
/// recurses once a level.
const MAX_DEPTH: usize = 100;

/// The longest key the subset reads: libyaml drops a simple key whose `:` is more than 1,024
/// characters after its start.
const MAX_KEY: usize = 1000;

/// One line with content: its indentation and its text after it, trailing spaces dropped.
#[derive(Clone, Copy, Debug)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
    /// Where `text` starts, as libyaml marks it (0-based line and character column, byte
    /// offset).
    at: Mark,
}

impl<'a> Line<'a> {
    /// The same line from `bytes` further on (the content after a `- `).
    fn skip(self, bytes: usize) -> Line<'a> {
        let skipped = &self.text[..bytes];
        let text = &self.text[bytes..];
        Line {
            indent: self.at.column + skipped.chars().count(),
            text,
            at: self.at.moved(skipped),
        }
    }
}

impl Mark {
    /// The mark `text` (on one line) further on.
    fn moved(self, text: &str) -> Mark {
        Mark {
            line: self.line,
            column: self.column + text.chars().count(),
            offset: self.offset + text.len(),
        }
    }
}

/// The events libyaml gives for `text` (one document), or `None` when it is not in the subset.
pub fn events(text: &str) -> Option<Vec<(Event, Mark)>> {
    let mut reader = Reader {
        lines: lines(text)?,
        next: 0,
        pending: None,
        out: Vec::new(),
        depth: 0,
    };
    let first = reader.peek()?;
    reader.out.push((Event::StreamStart, Mark::default()));
    reader.out.push((Event::DocumentStart, first.at));
    reader.block()?;
    if reader.peek().is_some() {
        return None;
    }
    reader.out.push((Event::DocumentEnd, Mark::default()));
    reader.out.push((Event::StreamEnd, Mark::default()));
    Some(reader.out)
}

/// The lines with content, or `None` when a line has what the subset leaves out.
fn lines(text: &str) -> Option<Vec<Line<'_>>> {
    // Characters libyaml refuses (C1 controls, U+FFFE, U+FFFF) or reads as line breaks (NEL,
    // LS, PS) or skips (a byte-order mark, at the start of any line).
    let refused = |c: char| {
        matches!(
            c,
            '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
    };
    if !text.is_ascii() && text.chars().any(refused) {
        return None;
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for (number, raw) in text.split('\n').enumerate() {
        let start = offset;
        offset += raw.len() + 1;
        if raw.bytes().any(|b| b.is_ascii_control() || b == 0x7f) {
            return None;
        }
        let content = raw.trim_start_matches(' ');
        let indent = raw.len() - content.len();
        let content = content.trim_end_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if indent == 0
            && (content.starts_with("---")
                || content.starts_with("...")
                || content.starts_with('%'))
        {
            return None;
        }
        out.push(Line {
            indent,
            text: content,
            at: Mark {
                line: number,
                column: indent,
                offset: start + indent,
            },
        });
    }
    Some(out)
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    next: usize,
    /// The rest of a `- ` line, read before the lines after it.
    pending: Option<Line<'a>>,
    out: Vec<(Event, Mark)>,
    /// Blocks open.
    depth: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.pending.or_else(|| self.lines.get(self.next).copied())
    }

    fn advance(&mut self) {
        if self.pending.take().is_none() {
            self.next += 1;
        }
    }

    /// A block mapping or sequence starting at the next line.
    fn block(&mut self) -> Option<()> {
        let line = self.peek()?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let read = match is_entry(line.text) {
            true => self.sequence(line.indent),
            false => self.mapping(line.indent),
        };
        self.depth -= 1;
        read
    }

    fn sequence(&mut self, indent: usize) -> Option<()> {
        self.out.push((
            Event::SequenceStart {
                anchor: None,
                tag: None,
            },
            self.peek()?.at,
        ));
        while let Some(line) = self.peek() {
            if line.indent != indent || !is_entry(line.text) {
                if line.indent > indent {
                    return None;
                }
                break;
            }
            self.advance();
            let spaces = line.text[1..].len() - line.text[1..].trim_start_matches(' ').len();
            let item = line.skip(1 + spaces);
            if item.text.is_empty() {
                self.nested_or_null(indent, item.at, false)?;
            } else if is_entry(item.text) || key_of(item.text).is_some() {
                self.pending = Some(item);
                self.block()?;
            } else {
                self.value(item)?;
                self.nothing_more_indented(indent)?;
            }
        }
        self.out.push((Event::SequenceEnd, Mark::default()));
        Some(())
    }

    fn mapping(&mut self, indent: usize) -> Option<()> {
        self.out.push((
            Event::MappingStart {
                anchor: None,
                tag: None,
            },
            self.peek()?.at,
        ));
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || is_entry(line.text) {
                return None;
            }
            let (key, value_at) = key_of(line.text)?;
            self.advance();
            self.out.push((plain(key), line.at));
            let value = line.skip(value_at);
            let value = value.skip(value.text.len() - value.text.trim_start_matches(' ').len());
            if value.text.is_empty() {
                self.nested_or_null(indent, value.at, true)?;
            } else {
                self.value(value)?;
                self.nothing_more_indented(indent)?;
            }
        }
        self.out.push((Event::MappingEnd, Mark::default()));
        Some(())
    }

    /// The value of a `key:` or `-` with nothing after it: the block on the lines below (more
    /// indented; for a mapping's value also a sequence at the same indentation), or null.
    fn nested_or_null(&mut self, indent: usize, at: Mark, in_mapping: bool) -> Option<()> {
        match self.peek() {
            Some(next) if next.indent > indent => self.block(),
            Some(next) if in_mapping && next.indent == indent && is_entry(next.text) => {
                self.sequence(indent)
            }
            _ => {
                self.out.push((plain(""), at));
                Some(())
            }
        }
    }

    /// After a value on its key's line: a more indented line would continue a plain scalar
    /// over lines, or be an error, which libyaml judges.
    fn nothing_more_indented(&self, indent: usize) -> Option<()> {
        match self.peek() {
            Some(next) if next.indent > indent => None,
            _ => Some(()),
        }
    }

    /// A value written on one line.
    fn value(&mut self, line: Line<'a>) -> Option<()> {
        let text = line.text;
        let collection = |start: Event, end: Event| [(start, line.at), (end, line.at)];
        match text {
            "{}" => {
                self.out.extend(collection(
                    Event::MappingStart {
                        anchor: None,
                        tag: None,
                    },
                    Event::MappingEnd,
                ));
                return Some(());
            }
            "[]" => {
                self.out.extend(collection(
                    Event::SequenceStart {
                        anchor: None,
                        tag: None,
                    },
                    Event::SequenceEnd,
                ));
                return Some(());
            }
            _ => {}
        }
        let event = match text.as_bytes()[0] {
            b'\'' => single_quoted(text)?,
            b'"' => double_quoted(text)?,
            _ if is_plain_value(text) => plain(text),
            _ => return None,
        };
        self.out.push((event, line.at));
        Some(())
    }
}

/// Whether a line is a sequence entry (`- ...` or a lone `-`).
fn is_entry(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// The key of a `key: value` or `key:` line, and where its value starts, when the key is a
/// plain scalar of the subset.
fn key_of(text: &str) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    let colon = (0..bytes.len())
        .find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|&b| b == b' '))?;
    let key = &text[..colon];
    (key.len() < MAX_KEY && is_plain_start(key) && !key.contains(" #") && !key.ends_with(' '))
        .then_some((key, colon + 1))
}

/// Whether `text` can start a plain scalar of the subset: not empty, not an indicator (`-`
/// only followed by a space, as in `-1`).
fn is_plain_start(text: &str) -> bool {
    if let Some(rest) = text.strip_prefix('-') {
        return rest.bytes().next().is_some_and(|b| b != b' ');
    }
    text.bytes().next().is_some_and(|b| {
        !matches!(
            b,
            b'?' | b':'
                | b','
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'#'
                | b'&'
                | b'*'
                | b'!'
                | b'|'
                | b'>'
                | b'\''
                | b'"'
                | b'%'
                | b'@'
                | b'`'
        )
    })
}

/// Whether `text` (a value on its line) is one plain scalar: no `: ` or final `:` (a mapping
/// on the line), no ` #` (a comment).
fn is_plain_value(text: &str) -> bool {
    is_plain_start(text) && !text.contains(": ") && !text.ends_with(':') && !text.contains(" #")
}

fn plain(text: &str) -> Event {
    scalar(text.to_owned(), ScalarStyle::Plain)
}

fn scalar(value: String, style: ScalarStyle) -> Event {
    Event::Scalar {
        anchor: None,
        tag: None,
        value,
        style,
    }
}

/// `'...'` alone on the rest of its line (`''` is a quote).
fn single_quoted(text: &str) -> Option<Event> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    let mut value = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(quote) = rest.find('\'') {
        // Inside, a quote only comes doubled.
        if rest.as_bytes().get(quote + 1) != Some(&b'\'') {
            return None;
        }
        value.push_str(&rest[..=quote]);
        rest = &rest[quote + 2..];
    }
    value.push_str(rest);
    Some(scalar(value, ScalarStyle::SingleQuoted))
}

/// `"..."` alone on the rest of its line, without escapes.
fn double_quoted(text: &str) -> Option<Event> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains(['"', '\\']) {
        return None;
    }
    Some(scalar(inner.to_owned(), ScalarStyle::DoubleQuoted))
}

#[cfg(test)]
mod tests {
    use super::super::events::EventParser;
    use super::*;

    /// libyaml's events for `text`, the marks of those the builder reports errors at.
    fn libyaml(text: &str) -> Vec<(Event, Option<Mark>)> {
        let mut parser = EventParser::new(text.as_bytes());
        let mut out = vec![];
        loop {
            let (event, mark) = parser.next_event().expect("libyaml reads it");
            let end = event == Event::StreamEnd;
            out.push(comparable(event, mark));
            if end {
                return out;
            }
        }
    }

    /// Scalars with content and collection starts keep their marks (where the builder reports
    /// an error); the others' marks are not used.
    fn comparable(event: Event, mark: Mark) -> (Event, Option<Mark>) {
        let kept = match &event {
            Event::Scalar { value, .. } => !value.is_empty(),
            Event::MappingStart { .. } | Event::SequenceStart { .. } => true,
            _ => false,
        };
        (event, kept.then_some(mark))
    }

    fn simple(text: &str) -> Option<Vec<(Event, Option<Mark>)>> {
        Some(
            (events(text)?.into_iter())
                .map(|(e, m)| comparable(e, m))
                .collect(),
        )
    }

    /// The subset's events, which must be libyaml's.
    fn same(text: &str) {
        let got = simple(text).unwrap_or_else(|| panic!("not read as simple: {text:?}"));
        assert_eq!(got, libyaml(text), "{text:?}");
    }

    #[test]
    fn reads_block_mappings_and_sequences_as_libyaml_does() {
        for text in [
            "a: b\n",
            "a: b",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n  namespace: y\n  resourceVersion: \"1\"\ndata:\n  k: YQ==\n",
            "a:\n  b:\n    c: d\n  e: f\ng: h\n",
            "a:\n- b\n- c\nd: e\n",
            "a:\n  - b\n  -   c\n",
            "- a\n- b: c\n  d: e\n- - f\n  - g\n-\n- h:\n  - i\n",
            "a:\nb: ~\nc:   \n",
            "a: {}\nb: []\nc:\n  - {}\n  - []\n",
            "a: 'it''s'\nb: ''\nc: \"x: y # z\"\nd: 'p: q'\n",
            "a: 1\nb: -1\n-c: -d\nc: 0x1F\nd: 1.5e3\ne: yes\nf: 2024-05-01T12:00:00Z\n",
            "url: https://api.example:6443/x#y\nk:v: w\n",
            "# a comment\na: b\n\n   # indented comment\nc: d\n",
            "é: ü\nx: 日本: no\n",
            "  a: b\n  c: d\n",
            "a: b   \nc:    d\n",
            "a: [b\n",
        ] {
            match simple(text) {
                Some(_) => same(text),
                None => assert!(
                    text.contains("日本") || text.contains('['),
                    "{text:?} should be in the subset"
                ),
            }
        }
    }

    #[test]
    fn leaves_everything_else_to_libyaml() {
        for text in [
            "a: |\n  b\n",
            "a: >-\n  b\n",
            "a: &x b\nc: *x\n",
            "a: !!str 1\n",
            "a: b # comment\n",
            "a: \"x\\ny\"\n",
            "a: 'x\n  y'\n",
            "a: b\n  c\n",
            "a: [b, c]\n",
            "a: {b: c}\n",
            "? a\n: b\n",
            "\"a\": b\n",
            "--- a\n",
            "%YAML 1.1\n---\na: b\n",
            "a:\tb\n",
            "a: b\r\n",
            "\u{feff}a: b\n",
            "plain scalar\n",
            "",
            "# only a comment\n",
            "a: b\n- c\n",
            "- a\n b\n",
            "a: b:\n",
            "a: b: c\n",
            "a: -\n",
            "a: x\u{2028}  y\n",
            "a: b\u{2028}c\n",
            "a: b\u{85}\n",
            "a: b\u{80}\n",
            "a: b\n\u{feff}c: d\n",
            "# \u{2029}\na: b\n",
        ] {
            assert!(simple(text).is_none(), "{text:?}");
        }
    }

    /// libyaml's events for `text`, or `None` when libyaml refuses it.
    fn libyaml_or_error(text: &str) -> Option<Vec<(Event, Option<Mark>)>> {
        let mut parser = EventParser::new(text.as_bytes());
        let mut out = vec![];
        loop {
            let (event, mark) = parser.next_event().ok()?;
            let end = event == Event::StreamEnd;
            out.push(comparable(event, mark));
            if end {
                return Some(out);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Documents of lines put together at random from the pieces block YAML is made of:
        /// whatever the subset reads, libyaml reads too, to the same events.
        #[test]
        fn agrees_with_libyaml_on_generated_documents(
            lines in proptest::collection::vec(
                (0usize..5, 0usize..4, "[a-z0-9]{0,3}", 0usize..18, "[a-z0-9 ]{0,3}"),
                1..10,
            )
        ) {
            const PREFIXES: [&str; 4] = ["", "- ", "-", "- - "];
            const PIECES: [&str; 18] = [
                "", ": ", ":", ": '", "'", "\"", " #", "#", "{}", "[]", "-", "''",
                "\u{2028}", "\u{85}", "\u{80}", "\u{feff}", "é", "- - - ",
            ];
            let text: String = (lines.iter())
                .map(|(indent, prefix, word, piece, tail)| {
                    format!(
                        "{}{}{word}{}{tail}\n",
                        " ".repeat(*indent),
                        PREFIXES[*prefix],
                        PIECES[*piece]
                    )
                })
                .collect();
            if let Some(got) = simple(&text) {
                proptest::prop_assert_eq!(Some(got), libyaml_or_error(&text), "{:?}", text);
            }
        }
    }

    /// The real payload corpus (as tests/support finds it), when it is there.
    fn corpus_files() -> Vec<std::path::PathBuf> {
        let dir = std::env::var_os("CVO_CORPUS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
            });
        let required = std::env::var("CVO_REQUIRE_CORPUS").as_deref() == Ok("1");
        assert!(dir.is_dir() || !required, "no corpus at {}", dir.display());
        let mut files = vec![];
        let mut dirs = vec![dir];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if (path.extension()).is_some_and(|e| e == "yaml" || e == "yml") {
                    files.push(path);
                }
            }
        }
        files
    }

    #[test]
    fn leaves_long_keys_and_deep_nesting_to_libyaml() {
        let long = format!("{}: v\n", "k".repeat(1100));
        assert!(simple(&long).is_none());
        assert!(libyaml_or_error(&long).is_none(), "libyaml refuses it");
        let fits = format!("{}: v\n", "k".repeat(900));
        same(&fits);
        let deep = format!("{}x\n", "- ".repeat(50_000));
        assert!(simple(&deep).is_none());
        let nested = format!("{}x\n", "- ".repeat(MAX_DEPTH - 1));
        same(&nested);
    }

    /// Every document of the real payload corpus the subset reads gives libyaml's events.
    #[test]
    fn agrees_with_libyaml_on_the_corpus() {
        let (mut read, mut documents) = (0, 0);
        let files = corpus_files();
        if files.is_empty() {
            return;
        }
        for path in files {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for chunk in super::super::split_stream(&text).unwrap_or_default() {
                if chunk.json.is_some() {
                    continue;
                }
                documents += 1;
                let text = chunk.reader_text();
                if simple(&text).is_some() {
                    read += 1;
                    same(&text);
                }
            }
        }
        eprintln!("{read} of {documents} corpus documents read without libyaml");
        assert!(read * 2 > documents, "{read} of {documents}");
    }
}
