//! Reading manifest files the way the upstream CVO does (go-yaml v2 through sigs.k8s.io/yaml,
//! split into documents by the Kubernetes `YAMLOrJSONDecoder`).
//!
//! * [`split_stream`] cuts a file into documents exactly like apimachinery's `YAMLReader`
//!   (lines starting with `---`), or into JSON values when the file starts with `{`;
//! * [`parse_document`] turns one YAML document into a [`Node`] tree with go-yaml v2 semantics:
//!   YAML 1.1 scalars, the last of duplicated keys wins, merge keys, anchors;
//!   its events come from libyaml, or, for documents in the plain block style most generated
//!   YAML uses, from a reader of that style that gives the same events faster (`simple`);
//! * [`duplicate_keys`] finds keys written twice in one mapping, which reading resolves silently
//!   (for `cvo validate`);
//! * [`go_json`] writes a value as Go's `encoding/json` would (sorted keys, HTML escaping,
//!   Go float formatting), which is what the version hash is computed over;
//! * [`write_document`] writes a value as one YAML document, byte for byte as serde_saphyr
//!   does, several times faster (what `cvo dt reconcile` prints).

mod build;
mod duplicates;
mod events;
mod gojson;
mod node;
mod resolve;
mod simple;
mod write;

use std::borrow::Cow;

pub use build::{parse_document, parse_document_noting_repeats};
pub use duplicates::{DuplicateKey, duplicate_keys};
pub use gojson::{go_float, go_json, write_go_json};
pub use node::{Mapping, Node};
pub use write::{to_document, write_document};

/// A YAML document as a `serde_json::Value`, for callers that want one (small inputs such as
/// an install-config).
pub fn parse_value(text: &str) -> Result<Value, Error> {
    parse_document(text).map(Node::into_value)
}

use serde_json::Value;

/// A position inside a file: 1-based line and column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// What went wrong reading YAML or JSON, with where (relative to the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub message: String,
    pub position: Option<Position>,
    /// Where the construct holding the problem started (an unclosed `[`, a quoted scalar...).
    pub started_at: Option<Position>,
}

impl Error {
    pub fn new(message: impl Into<String>, position: Option<Position>) -> Self {
        Error {
            message: message.into(),
            position,
            started_at: None,
        }
    }
}

/// One document of a file, as cut by the stream splitter.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk<'a> {
    /// The document's own text, byte for byte (separator lines excluded).
    pub text: &'a str,
    /// 1-based line of the file where the text starts.
    pub line: usize,
    /// For JSON streams, the parsed value (YAML chunks are parsed separately).
    pub json: Option<Value>,
}

impl<'a> Chunk<'a> {
    /// The text the YAML parser is given, as apimachinery's `YAMLReader` hands a document to
    /// go-yaml: line by line, each line ended by `\n` (its `LineReader` appends one to every line
    /// `bufio.Reader.ReadLine` returns). So the last line of a file without a final newline gets
    /// one, and a block scalar (`|`, `|+`, `>`, `>+`) ending there keeps a final line break,
    /// which changes the document's JSON and the version hash. `ReadLine` also drops the `\r`
    /// of a line's final `\r\n`, and only that one: a line ending `\r\r\n` reaches go-yaml as
    /// `\r\n`, one line break, where the bytes as written are two (`\r`, then `\r\n`).
    pub fn reader_text(&self) -> Cow<'a, str> {
        let text: Cow<'a, str> = if self.text.contains("\r\n") {
            Cow::Owned(self.text.replace("\r\n", "\n"))
        } else {
            Cow::Borrowed(self.text)
        };
        if text.is_empty() || text.ends_with('\n') {
            text
        } else {
            Cow::Owned(format!("{text}\n"))
        }
    }
}

/// Whether the Kubernetes decoder would read this file as a JSON stream: its first non-space
/// character is `{`, within the first 1024 bytes (`YAMLOrJSONDecoder` peeks at that many; the
/// CVO's `ParseManifests` asks for 1024). A byte-order mark is not a space, so such files are
/// read as YAML, and so are files whose `{` comes after 1024 bytes of blank lines.
pub fn is_json_stream(text: &str) -> bool {
    const PEEK: usize = 1024;
    for (at, c) in text.char_indices() {
        if at >= PEEK || c == '{' {
            return c == '{' && at < PEEK;
        }
        if !c.is_whitespace() || at + c.len_utf8() > PEEK {
            return false;
        }
    }
    false
}

/// Cuts a file into documents. YAML: on lines beginning with `---` whose rest is blank or a
/// comment (anything else is the upstream error `invalid Yaml document separator`). JSON:
/// concatenated values.
pub fn split_stream(text: &str) -> Result<Vec<Chunk<'_>>, Error> {
    if is_json_stream(text) {
        split_json(text)
    } else {
        split_yaml(text)
    }
}

/// Cuts a file into documents as YAML whatever its first character: for readers that take a
/// stream of JSON documents separated by `---` lines (which is YAML, not a JSON stream).
pub fn split_yaml_stream(text: &str) -> Result<Vec<Chunk<'_>>, Error> {
    split_yaml(text)
}

fn split_yaml(text: &str) -> Result<Vec<Chunk<'_>>, Error> {
    let mut chunks = Vec::new();
    let mut start: Option<(usize, usize)> = None; // (byte offset, line) of the open chunk
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_no = index + 1;
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(Error::new(
                    format!("invalid Yaml document separator: {trimmed}"),
                    Some(Position {
                        line: line_no,
                        column: 1,
                    }),
                ));
            }
            if let Some((begin, begin_line)) = start.take() {
                // The reader returns the open document; the separator line is dropped.
                chunks.push(yaml_chunk(&text[begin..offset], begin_line));
            } else if hides_lines(rest) {
                // With no document open, the reader keeps the separator line as the start of
                // the next one. That only matters when the "comment" after `---` holds line
                // breaks go-yaml sees and the reader does not (a lone `\r`): the rest of the
                // line is then YAML.
                start = Some((offset, line_no));
            }
        } else if start.is_none() {
            start = Some((offset, line_no));
        }
        offset += line.len();
    }
    if let Some((begin, begin_line)) = start {
        chunks.push(yaml_chunk(&text[begin..], begin_line));
    }
    Ok(chunks)
}

/// Whether the rest of a `\n`-ended line holds a line break of go-yaml's (`\r` not followed by
/// the line's `\n`, NEL, LS, PS), so that more YAML lines hide in what the Kubernetes reader
/// takes for one line.
fn hides_lines(rest: &str) -> bool {
    let body = rest.strip_suffix('\n').unwrap_or(rest);
    let body = body.strip_suffix('\r').unwrap_or(body);
    body.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}'])
}

fn yaml_chunk(text: &str, line: usize) -> Chunk<'_> {
    Chunk {
        text,
        line,
        json: None,
    }
}

fn split_json(text: &str) -> Result<Vec<Chunk<'_>>, Error> {
    let mut chunks = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut end = 0;
    while let Some(next) = stream.next() {
        let value = next.map_err(|e| {
            Error::new(
                json_message(&e),
                Some(Position {
                    line: e.line(),
                    column: e.column(),
                }),
            )
        })?;
        let begin = end + (text[end..].len() - text[end..].trim_start().len());
        end = stream.byte_offset();
        let line = text[..begin].matches('\n').count() + 1;
        chunks.push(Chunk {
            text: &text[begin..end],
            line,
            json: Some(value),
        });
    }
    Ok(chunks)
}

fn json_message(e: &serde_json::Error) -> String {
    // serde_json appends " at line L column C"; the position is reported separately.
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &str) -> Vec<(&str, usize)> {
        split_stream(input)
            .unwrap()
            .into_iter()
            .map(|c| (c.text, c.line))
            .collect()
    }

    #[test]
    fn splits_on_separator_lines_with_comments() {
        let input = "a: 1\n--- # second\nb: 2\n---\n---   \nc: 3\n";
        assert_eq!(
            texts(input),
            vec![("a: 1\n", 1), ("b: 2\n", 3), ("c: 3\n", 6)]
        );
    }

    #[test]
    fn a_leading_separator_starts_no_document() {
        assert_eq!(texts("---\na: 1\n"), vec![("a: 1\n", 2)]);
        assert_eq!(
            texts("# only a comment\n---\n"),
            vec![("# only a comment\n", 1)]
        );
    }

    #[test]
    fn rejects_content_on_a_separator_line_like_upstream() {
        let err = split_stream("a: 1\n--- b: 2\n").unwrap_err();
        assert_eq!(err.message, "invalid Yaml document separator: b: 2");
        assert_eq!(err.position, Some(Position { line: 2, column: 1 }));
    }

    #[test]
    fn a_separator_must_start_the_line() {
        assert_eq!(texts("a: |\n  ---\n"), vec![("a: |\n  ---\n", 1)]);
    }

    #[test]
    fn splits_concatenated_json_values_keeping_their_bytes() {
        let input = "{\"a\": 1}\n  {\"b\":\n 2}";
        let chunks = split_stream(input).unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].text, "{\"a\": 1}");
        assert_eq!(chunks[1].text, "{\"b\":\n 2}");
        assert_eq!(chunks[1].line, 2);
        assert_eq!(chunks[1].json, Some(serde_json::json!({"b": 2})));
    }

    #[test]
    fn bad_json_names_the_position() {
        let err = split_stream("{\"a\": }").unwrap_err();
        assert_eq!(err.position.map(|p| p.line), Some(1));
        assert!(!err.message.contains(" at line "), "{}", err.message);
    }

    /// hack/upstream: the decoder guesses from the first 1024 bytes only.
    #[test]
    fn json_is_only_recognised_within_the_first_1024_bytes() {
        let json = "{\"b\": 1, \"a\": 2}";
        assert!(is_json_stream(&format!("{}{json}", " ".repeat(1023))));
        assert!(!is_json_stream(&format!("{}{json}", " ".repeat(1024))));
        assert!(!is_json_stream(&format!("{}{json}", " \n".repeat(600))));
        // A space character cut by the 1024th byte is not a space to the decoder.
        assert!(!is_json_stream(&format!(
            "{}\u{a0}{json}",
            " ".repeat(1023)
        )));
        let text = format!("{}{json}", "\n".repeat(1100));
        assert_eq!(split_stream(&text).unwrap()[0].json, None, "read as YAML");
    }

    #[test]
    fn the_reader_text_ends_every_line_like_the_kubernetes_yaml_reader() {
        let chunks = split_stream("a: |\n  x\n---\nb: |\n  y").unwrap();
        assert_eq!(chunks[0].reader_text(), "a: |\n  x\n");
        assert!(matches!(chunks[0].reader_text(), Cow::Borrowed(_)));
        assert_eq!(
            chunks[1].text, "b: |\n  y",
            "the document's own text is kept"
        );
        assert_eq!(chunks[1].reader_text(), "b: |\n  y\n");
    }

    /// The Kubernetes reader splits lines on `\n` only; go-yaml also breaks lines on `\r`. A
    /// separator line that opens a file hides the YAML after its lone `\r`s: the reader keeps
    /// that line as the start of the document (and go-yaml reads it), where an ordinary
    /// separator line is dropped.
    #[test]
    fn a_separator_line_with_hidden_lines_starts_the_document() {
        let chunks = split_stream("--- # first\ra: 1\r---\rb: 2\r").unwrap();
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].text, "--- # first\ra: 1\r---\rb: 2\r");
        assert_eq!(
            parse_value(&chunks[0].reader_text()).unwrap(),
            serde_json::json!({"a": 1})
        );
        // An ordinary separator line is not part of the document, nor one after an open one.
        assert_eq!(texts("--- # c\na: 1\n"), [("a: 1\n", 2)]);
        assert_eq!(
            texts("a: 1\n--- # c\rb: 2\n"),
            [("a: 1\n", 1)],
            "the reader drops a separator line that ends a document, hidden lines and all"
        );
        assert_eq!(texts("--- # c\r\na: 1\r\n"), [("a: 1\r\n", 2)]);
    }

    /// Upstream (wubifXWv73o= on the corpus, hack/upstream) keeps the final line break of a
    /// block scalar on the last line of a file that has no final newline.
    #[test]
    fn a_block_scalar_on_the_last_line_keeps_its_line_break() {
        for (text, expected) in [
            ("a: |\n  x", "x\n"),
            ("a: |+\n  x", "x\n"),
            ("a: >\n  x", "x\n"),
            ("a: >+\n  x", "x\n"),
            ("a: |-\n  x", "x"),
            ("a: >-\n  x", "x"),
            ("a: |\r\n  x\r\n", "x\n"),
            // Go's ReadLine drops one `\r\n` per line: `\r\r\n` is one line break, not two.
            ("a: |\r\r\n  crlf\r\r\n  two\r\r\n", "crlf\ntwo\n"),
            ("a: |\r\r\n  crlf\r\r\n  two", "crlf\ntwo\n"),
            // A lone `\r` is a line break to go-yaml, and no line end to the reader.
            ("a: |\r  x\r  y", "x\ny\n"),
        ] {
            let chunk = &split_stream(text).unwrap()[0];
            let value = parse_value(&chunk.reader_text()).unwrap();
            assert_eq!(value["a"], expected, "{text:?}");
        }
    }

    #[test]
    fn a_byte_order_mark_means_yaml() {
        assert!(!is_json_stream("\u{feff}{\"a\":1}"));
        assert!(is_json_stream("\n  {\"a\":1}"));
        assert!(!is_json_stream("  "));
    }
}
