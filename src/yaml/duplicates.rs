//! Finds mapping keys written twice in one mapping. go-yaml v2 (non-strict, as the CVO reads
//! manifests) silently keeps the last one, so the first value is lost without a word; linters
//! (yamllint's `key-duplicates`, strict decoders) reject such documents.
//!
//! A separate pass over the events, so [`super::parse_document`] (the loader's hot path) pays
//! nothing for it; reading a document ([`super::parse_document_noting_repeats`]) already notes
//! whether any key repeats, so
//! the events are only read again where a key may repeat.

use std::collections::HashMap;

use super::Position;
use super::events::{Event, EventParser, Mark, ScalarStyle};
use super::resolve::{Scalar, resolve_plain, resolve_tagged};

/// A key that occurs a second time in the same mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// Where the mapping is, like `metadata.annotations` or `spec.containers[0]`; empty for the
    /// document's top level.
    pub path: String,
    /// The key as the CVO sees it (`y` and `true` are the same key, `"1"` and `1` too).
    pub key: String,
    /// The repeated occurrence (the one whose value wins).
    pub position: Position,
    /// The first occurrence (the value that is lost).
    pub first: Position,
    /// Both occurrences have the same scalar value, so nothing is lost (collections are
    /// never compared: they count as different).
    pub same_value: bool,
}

/// Every repeated key of the first document in `text`, in document order. Stops quietly at a
/// syntax error: reading the document reports that.
pub fn duplicate_keys(text: &str) -> Vec<DuplicateKey> {
    let mut walker = Walker {
        stack: Vec::new(),
        found: Vec::new(),
    };
    let mut parser = EventParser::new(text.as_bytes());
    while let Ok((event, mark)) = parser.next_event() {
        match event {
            Event::StreamEnd | Event::DocumentEnd => break,
            Event::StreamStart | Event::DocumentStart => {}
            other => walker.event(other, mark),
        }
        // Reading refuses such nesting too; stopping here keeps hostile input cheap.
        if walker.stack.len() > MAX_DEPTH {
            break;
        }
    }
    walker.found
}

/// The document reader's nesting limit.
const MAX_DEPTH: usize = 200;

enum Frame {
    Map {
        path: String,
        /// Each key's first position and, once read, its first value when it is a scalar.
        keys: HashMap<String, (Position, Option<String>)>,
        /// The key whose value comes next; `None` while a key is expected.
        pending: Option<String>,
        /// When the pending key is a repeat: its entry in `found`.
        repeat: Option<usize>,
    },
    Seq {
        path: String,
        index: usize,
    },
}

/// An explicit stack instead of recursion: hostile nesting cannot overflow it.
struct Walker {
    stack: Vec<Frame>,
    found: Vec<DuplicateKey>,
}

impl Walker {
    fn event(&mut self, event: Event, mark: Mark) {
        match event {
            Event::MappingStart { .. } => {
                let path = self.child_path();
                self.stack.push(Frame::Map {
                    path,
                    keys: HashMap::new(),
                    pending: None,
                    repeat: None,
                });
            }
            Event::SequenceStart { .. } => {
                let path = self.child_path();
                self.stack.push(Frame::Seq { path, index: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.value_done();
            }
            Event::Scalar {
                tag, value, style, ..
            } if self.expects_key() => self.key(key_name(value, style, tag.as_deref()), mark),
            // An alias used as a key is rare and resolves to a copy of an earlier value; it is
            // not worth tracking. Treat it as a key nobody can repeat.
            Event::Alias(_) if self.expects_key() => self.key(None, mark),
            Event::Scalar {
                tag, value, style, ..
            } => {
                self.scalar_value(scalar_repr(value, style, tag.as_deref()));
                self.value_done();
            }
            Event::Alias(name) => {
                self.scalar_value(format!("*{name}"));
                self.value_done();
            }
            _ => self.value_done(),
        }
    }

    /// Remembers a key's first scalar value, or compares a repeat's value with it.
    fn scalar_value(&mut self, repr: String) {
        let Some(Frame::Map {
            keys,
            pending: Some(key),
            repeat,
            ..
        }) = self.stack.last_mut()
        else {
            return;
        };
        let Some((_, first)) = keys.get_mut(key.as_str()) else {
            return;
        };
        match repeat {
            Some(index) => {
                if let Some(found) = self.found.get_mut(*index) {
                    found.same_value = first.as_deref() == Some(repr.as_str());
                }
            }
            None => *first = Some(repr),
        }
    }

    fn expects_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { pending: None, .. }))
    }

    /// Records a key; `None` (merge keys, alias keys) is never reported.
    fn key(&mut self, name: Option<String>, mark: Mark) {
        let Some(Frame::Map {
            path,
            keys,
            pending,
            repeat,
        }) = self.stack.last_mut()
        else {
            return;
        };
        let position = Position {
            line: mark.line + 1,
            column: mark.column + 1,
        };
        let name = name.unwrap_or_else(|| "<<".to_string());
        *repeat = None;
        if name != "<<" {
            match keys.get(&name) {
                Some(&(first, _)) => {
                    *repeat = Some(self.found.len());
                    self.found.push(DuplicateKey {
                        path: path.clone(),
                        key: name.clone(),
                        position,
                        first,
                        same_value: false,
                    });
                }
                None => {
                    keys.insert(name.clone(), (position, None));
                }
            }
        }
        *pending = Some(name);
    }

    /// A value finished: its mapping now expects a key, its sequence the next item.
    fn value_done(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::Map {
                pending, repeat, ..
            }) => {
                *pending = None;
                *repeat = None;
            }
            Some(Frame::Seq { index, .. }) => *index += 1,
            None => {}
        }
    }

    /// The path of a collection that starts now, as a value (or, oddly, a key) of the top frame.
    fn child_path(&self) -> String {
        match self.stack.last() {
            None => String::new(),
            Some(Frame::Map { path, pending, .. }) => {
                let key = pending.as_deref().unwrap_or("?");
                if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                }
            }
            Some(Frame::Seq { path, index }) => format!("{path}[{index}]"),
        }
    }
}

/// A scalar value as the CVO reads it, for comparing two values: `"true"` and `true` differ,
/// `yes` and `true` do not.
fn scalar_repr(value: String, style: ScalarStyle, tag: Option<&str>) -> String {
    format!("{:?}", resolve(value, style, tag))
}

/// The key as sigs.k8s.io/yaml names it; `None` for the merge key.
fn key_name(value: String, style: ScalarStyle, tag: Option<&str>) -> Option<String> {
    match resolve(value, style, tag) {
        Scalar::Merge => None,
        // A null key is an error the document reader reports; name it so it is still tracked.
        other => Some(other.into_key().unwrap_or_else(|_| "null".to_string())),
    }
}

/// go-yaml v2's resolution; a tag it cannot apply leaves the text a string (the reader
/// reports that error).
fn resolve(value: String, style: ScalarStyle, tag: Option<&str>) -> Scalar {
    match (tag, style) {
        (Some("!"), _) => Scalar::Str(value),
        (Some(tag), _) => resolve_tagged(&value, tag).unwrap_or(Scalar::Str(value)),
        (None, ScalarStyle::Plain) => resolve_plain(value),
        (None, _) => Scalar::Str(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dups(text: &str) -> Vec<(String, String, usize, usize)> {
        duplicate_keys(text)
            .into_iter()
            .map(|d| (d.path, d.key, d.position.line, d.first.line))
            .collect()
    }

    #[test]
    fn finds_repeated_keys_with_path_and_both_positions() {
        let text = "kind: A\nmetadata:\n  annotations:\n    a: 1\n    b: 2\n    a: 3\nkind: B\n";
        assert_eq!(
            dups(text),
            vec![
                ("metadata.annotations".into(), "a".into(), 6, 4),
                (String::new(), "kind".into(), 7, 1)
            ]
        );
        let d = &duplicate_keys(text)[0];
        assert_eq!(d.position, Position { line: 6, column: 5 });
    }

    #[test]
    fn keys_are_compared_as_the_cvo_sees_them() {
        assert_eq!(
            dups("y: 1\ntrue: 2\n"),
            vec![(String::new(), "true".into(), 2, 1)]
        );
        assert_eq!(
            dups("'1': a\n1: b\n"),
            vec![(String::new(), "1".into(), 2, 1)]
        );
        assert!(dups("a: 1\n'b': 2\n").is_empty());
    }

    #[test]
    fn repeats_with_the_same_scalar_value_are_told_apart() {
        let same = |text: &str| -> Vec<bool> {
            duplicate_keys(text)
                .into_iter()
                .map(|d| d.same_value)
                .collect()
        };
        assert_eq!(
            same(
                "a: x
a: x
"
            ),
            vec![true]
        );
        assert_eq!(
            same(
                "a: x
a: 'x'
"
            ),
            vec![true]
        );
        assert_eq!(
            same(
                "a: yes
a: true
"
            ),
            vec![true]
        );
        assert_eq!(
            same(
                "a: x
a: y
"
            ),
            vec![false]
        );
        assert_eq!(
            same(
                "a: true
a: 'true'
"
            ),
            vec![false]
        );
        assert_eq!(
            same(
                "a: [x]
a: [x]
"
            ),
            vec![false]
        );
        assert_eq!(
            same(
                "a: x
b: 1
a: x
a: z
"
            ),
            vec![true, false]
        );
    }

    #[test]
    fn same_key_in_different_mappings_is_fine() {
        let text = "spec:\n  containers:\n  - name: a\n    image: x\n  - name: b\n    image: y\n";
        assert!(dups(text).is_empty());
        let text = "spec:\n  containers:\n  - name: a\n  - name: b\n    name: c\n";
        assert_eq!(
            dups(text),
            vec![("spec.containers[1]".into(), "name".into(), 5, 4)]
        );
    }

    #[test]
    fn flow_mappings_json_and_merge_keys() {
        assert_eq!(
            dups("{\"a\": 1, \"b\": {\"c\": 1, \"c\": 2}}"),
            vec![("b".into(), "c".into(), 1, 1)]
        );
        assert!(dups("base: &b {p: 1}\nd:\n  <<: *b\n  <<: *b\n  p: 2\n").is_empty());
    }

    #[test]
    fn syntax_errors_and_hostile_input_do_not_panic() {
        assert!(dups("a: [\n").is_empty());
        assert!(dups(&("[".repeat(10_000))).is_empty());
        assert_eq!(dups("a: 1\na: [\n").len(), 1);
        assert!(dups("").is_empty());
    }

    /// Reading a document notes repeats for free; the walk only runs where it did. The note
    /// must never miss a repeat the walk finds, and is exact when no merge key is involved.
    mod reading_notes_every_repeat {
        use proptest::prelude::*;

        /// Lines of block YAML from a small vocabulary, so keys repeat often, at random
        /// indentation (sequences, block and multi-line scalars, quotes, flow collections).
        fn document() -> impl Strategy<Value = String> {
            let line = (
                0..4usize,
                prop::sample::select(vec![
                    "a: 1",
                    "a: 2",
                    "b:",
                    "'a': x",
                    "y: 1",
                    "true: 2",
                    "- a: 1",
                    "- b",
                    "-",
                    "- - a: 1",
                    "a: |",
                    "a: >-",
                    "text: more",
                    "a: 'open",
                    "close' ",
                    "# a: 1",
                    "a: {b: 1}",
                    "a: [x]",
                    "- {}",
                    "a: x # b: c",
                    "a : 3",
                    "? a",
                    "a: !!str |",
                    "",
                ]),
            )
                .prop_map(|(indent, text)| format!("{}{text}\n", "  ".repeat(indent)));
            prop::collection::vec(line, 0..12).prop_map(|lines| lines.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn the_note_matches_the_walk(text in document()) {
                if let Ok((_, noted)) = crate::yaml::parse_document_noting_repeats(&text) {
                    prop_assert_eq!(noted, !super::duplicate_keys(&text).is_empty(), "{:?}", text);
                }
            }
        }

        #[test]
        fn merge_keys_are_a_maybe() {
            let text = "base: &b {p: 1}\nd:\n  <<: *b\n  p: 2\n";
            assert!(crate::yaml::parse_document_noting_repeats(text).unwrap().1);
            assert!(super::duplicate_keys(text).is_empty());
        }
    }
}
