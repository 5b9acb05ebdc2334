//! A safe event iterator over `libyaml-rs`, the YAML organisation's Rust translation of libyaml.
//!
//! Why libyaml and not a pure-Rust scanner: the upstream CVO reads manifests with go-yaml v2,
//! which is a line-by-line port of libyaml. Only the same scanner accepts exactly what Go
//! accepts. Measured on the real payload corpus, `saphyr-parser` and `yaml-rust2` reject a
//! shipped manifest (a single-quoted scalar whose continuation lines are not indented past their
//! key, `0000_20_kube-apiserver-operator_00_scc-nested-container.yaml`) that Go and libyaml read.
//! The serde front-ends over libyaml (`yaml_serde`) are no help either: they resolve scalars as
//! YAML 1.2 and reject duplicate keys, both unlike Go. So we take libyaml's events and do the
//! Go-compatible resolution ourselves (see `resolve`).
//!
//! All `unsafe` of the crate lives in this file.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::ptr::{NonNull, addr_of_mut};

use libyaml_rs as sys;

/// Where an event starts: 0-based line and column, byte offset, as libyaml counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// The style a scalar was written in; only plain scalars are type-resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias(String),
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        value: String,
        style: ScalarStyle,
    },
    SequenceStart {
        anchor: Option<String>,
        tag: Option<String>,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<String>,
        tag: Option<String>,
    },
    MappingEnd,
}

/// A syntax error as libyaml reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub problem: String,
    pub context: Option<String>,
    /// Where the construct the problem is in started (a flow sequence, a quoted scalar...).
    pub context_mark: Option<Mark>,
    pub mark: Mark,
}

/// Pulls events from one input. The libyaml parser state points into itself (its read handler
/// data is the parser), so it lives in a `Box` that never moves.
pub struct EventParser<'input> {
    parser: Box<sys::yaml_parser_t>,
    input: &'input [u8],
    finished: bool,
    /// Whether the input holds a `\/`, which may sit in a double-quoted scalar.
    slash_escape: bool,
}

impl<'input> EventParser<'input> {
    pub fn new(input: &'input [u8]) -> Self {
        let mut parser: Box<MaybeUninit<sys::yaml_parser_t>> = Box::new_uninit();
        let parser = unsafe {
            let raw = parser.as_mut_ptr();
            // libyaml only fails to initialise when malloc fails; Rust aborts on OOM elsewhere
            // too, so treat it the same way.
            assert!(
                sys::yaml_parser_initialize(raw).ok,
                "libyaml could not allocate its parser"
            );
            // No encoding is forced: libyaml detects a UTF-8/UTF-16 BOM and skips it, as Go does.
            sys::yaml_parser_set_input_string(raw, input.as_ptr(), input.len() as _);
            parser.assume_init()
        };
        // (`contains` on bytes is a memchr: most documents have no backslash at all.)
        let slash_escape = input.contains(&b'\\') && input.windows(2).any(|w| w == b"\\/");
        EventParser {
            parser,
            input,
            finished: false,
            slash_escape,
        }
    }

    /// The next event with the mark where it starts.
    pub fn next_event(&mut self) -> Result<(Event, Mark), SyntaxError> {
        let mut event = MaybeUninit::<sys::yaml_event_t>::uninit();
        unsafe {
            let parser = addr_of_mut!(*self.parser);
            let state: &sys::yaml_parser_t = &*parser;
            if state.error != sys::YAML_NO_ERROR
                || !sys::yaml_parser_parse(parser, event.as_mut_ptr()).ok
            {
                return Err(syntax_error(&*parser));
            }
            let event = event.as_mut_ptr();
            let mark = mark_of((*event).start_mark);
            let end = mark_of((*event).end_mark);
            let converted = convert(&*event);
            sys::yaml_event_delete(event);
            if let Event::Scalar {
                style: ScalarStyle::DoubleQuoted,
                ..
            } = converted
            {
                self.check_go_escapes(mark, end)?;
            }
            if converted == Event::StreamEnd {
                self.finished = true;
            }
            Ok((converted, mark))
        }
    }

    /// go-yaml v2 knows every escape libyaml knows but `\/` (a YAML 1.2 addition): the CVO
    /// refuses a double-quoted scalar holding one, with libyaml's words for an unknown escape.
    fn check_go_escapes(&self, start: Mark, end: Mark) -> Result<(), SyntaxError> {
        if !self.slash_escape {
            return Ok(());
        }
        // libyaml-rs's mark offsets count bytes of the input after a byte-order mark.
        let bom = if self.input.starts_with("\u{feff}".as_bytes()) {
            3
        } else {
            0
        };
        let byte = |mark: Mark| (mark.offset + bom).min(self.input.len());
        let (from, to) = (byte(start), byte(end));
        let source = &self.input[from..to];
        let mut i = 0;
        while i < source.len() {
            if source[i] == b'\\' {
                if source.get(i + 1) == Some(&b'/') {
                    let before = String::from_utf8_lossy(&self.input[bom..from + i]);
                    let line = before.matches('\n').count();
                    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
                    return Err(SyntaxError {
                        problem: "found unknown escape character".into(),
                        context: Some("while parsing a quoted scalar".into()),
                        context_mark: Some(start),
                        mark: Mark {
                            line,
                            column,
                            offset: from + i - bom,
                        },
                    });
                }
                i += 1;
            }
            i += 1;
        }
        Ok(())
    }

    #[cfg(test)]
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

impl Drop for EventParser<'_> {
    fn drop(&mut self) {
        unsafe { sys::yaml_parser_delete(addr_of_mut!(*self.parser)) }
    }
}

fn mark_of(mark: sys::yaml_mark_t) -> Mark {
    Mark {
        line: mark.line as usize,
        column: mark.column as usize,
        offset: mark.index as usize,
    }
}

unsafe fn syntax_error(parser: &sys::yaml_parser_t) -> SyntaxError {
    let problem = unsafe { c_string(parser.problem.cast_mut().cast()) }
        .unwrap_or_else(|| "unknown YAML syntax error".to_string());
    let context = unsafe { c_string(parser.context.cast_mut().cast()) };
    let mark = if parser.problem_mark.line == 0 && parser.problem_mark.index == 0 {
        mark_of(parser.context_mark)
    } else {
        mark_of(parser.problem_mark)
    };
    let context_mark = context.is_some().then(|| mark_of(parser.context_mark));
    SyntaxError {
        problem,
        context,
        context_mark,
        mark,
    }
}

unsafe fn c_string(ptr: *mut u8) -> Option<String> {
    let ptr = NonNull::new(ptr)?;
    let text = unsafe { CStr::from_ptr(ptr.as_ptr().cast()) };
    Some(text.to_string_lossy().into_owned())
}

unsafe fn bytes_string(ptr: *mut u8, len: usize) -> String {
    if ptr.is_null() || len == 0 {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    // libyaml only emits UTF-8 (it validates its input and refuses bad escapes); checking again
    // with `from_utf8` is cheaper than the lossy conversion's chunking.
    String::from_utf8(bytes.to_vec())
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

unsafe fn convert(event: &sys::yaml_event_t) -> Event {
    unsafe {
        match event.type_ {
            sys::YAML_STREAM_START_EVENT => Event::StreamStart,
            sys::YAML_STREAM_END_EVENT => Event::StreamEnd,
            sys::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
            sys::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
            sys::YAML_ALIAS_EVENT => {
                Event::Alias(c_string(event.data.alias.anchor).unwrap_or_default())
            }
            sys::YAML_SCALAR_EVENT => {
                let scalar = &event.data.scalar;
                Event::Scalar {
                    anchor: c_string(scalar.anchor),
                    tag: c_string(scalar.tag),
                    value: bytes_string(scalar.value, scalar.length as usize),
                    style: match scalar.style {
                        sys::YAML_SINGLE_QUOTED_SCALAR_STYLE => ScalarStyle::SingleQuoted,
                        sys::YAML_DOUBLE_QUOTED_SCALAR_STYLE => ScalarStyle::DoubleQuoted,
                        sys::YAML_LITERAL_SCALAR_STYLE => ScalarStyle::Literal,
                        sys::YAML_FOLDED_SCALAR_STYLE => ScalarStyle::Folded,
                        _ => ScalarStyle::Plain,
                    },
                }
            }
            sys::YAML_SEQUENCE_START_EVENT => Event::SequenceStart {
                anchor: c_string(event.data.sequence_start.anchor),
                tag: c_string(event.data.sequence_start.tag),
            },
            sys::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
            sys::YAML_MAPPING_START_EVENT => Event::MappingStart {
                anchor: c_string(event.data.mapping_start.anchor),
                tag: c_string(event.data.mapping_start.tag),
            },
            sys::YAML_MAPPING_END_EVENT => Event::MappingEnd,
            // YAML_NO_EVENT only appears after an error, which is reported before conversion.
            _ => Event::StreamEnd,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<Event> {
        let mut parser = EventParser::new(text.as_bytes());
        let mut out = vec![];
        while !parser.is_finished() {
            out.push(parser.next_event().unwrap().0);
        }
        out
    }

    #[test]
    fn reads_a_mapping() {
        let got = events("a: 'b'\n");
        assert_eq!(got[0], Event::StreamStart);
        assert!(
            matches!(got[3], Event::Scalar { ref value, style: ScalarStyle::Plain, .. } if value == "a")
        );
        assert!(
            matches!(got[4], Event::Scalar { ref value, style: ScalarStyle::SingleQuoted, .. } if value == "b")
        );
    }

    #[test]
    fn skips_a_byte_order_mark() {
        let got = events("\u{feff}a: b\n");
        assert!(matches!(got[3], Event::Scalar { ref value, .. } if value == "a"));
    }

    fn first_error(text: &str) -> Option<SyntaxError> {
        let mut parser = EventParser::new(text.as_bytes());
        while !parser.is_finished() {
            if let Err(e) = parser.next_event() {
                return Some(e);
            }
        }
        None
    }

    /// hack/upstream: go-yaml v2 refuses `\/` in double-quoted scalars (libyaml takes it).
    #[test]
    fn refuses_the_slash_escape_like_go_yaml() {
        let err = first_error("a: 1\nb: \"x\\/y\"\n").expect("an error");
        assert_eq!(err.problem, "found unknown escape character");
        assert_eq!((err.mark.line, err.mark.column), (1, 5));
        assert!(first_error("a: 'x\\/y'\nb: x\\/y\nc: \"x\\\\/y\"\n").is_none());
        // Marks count bytes (after a byte-order mark): non-ASCII text before must not shift
        // the scalar looked at.
        let err = first_error("\u{feff}é: \"日本\"\nb: \"ü\\/\"\n").expect("an error");
        assert_eq!((err.mark.line, err.mark.column), (1, 5));
        assert!(first_error("\u{feff}é: \"日本日本\"\nb: 'x\\/'\nc: \"y\"\n").is_none());
    }

    #[test]
    fn reports_position_of_syntax_errors() {
        let mut parser = EventParser::new(b"a: b\nc: [d\n");
        let err = loop {
            match parser.next_event() {
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        assert!(err.mark.line >= 1, "{err:?}");
        assert!(!err.problem.is_empty());
    }
}
