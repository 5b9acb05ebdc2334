//! Writing a `serde_json::Value` as one YAML document, byte for byte what
//! `serde_saphyr::to_string` (serde-saphyr 2.0, default options) writes for it.
//!
//! Why by hand: `cvo dt reconcile` prints up to 130,000 objects, and serde_saphyr was about 30%
//! of the whole command on a 100,000-object world (its per-string quoting checks, its
//! general-purpose state machine for every serde shape, the `fmt::Write` plumbing). A
//! `Value` has few shapes, so this writes them in one pass: a string's style is decided in one
//! scan of its bytes and a plain string is copied straight into the output. Measured on the
//! 131,202 documents `cvo dt reconcile` prints for a 100,000-object world (release build, one
//! thread, a loaded 2-core machine): serde_saphyr 3.2 s, this 0.9 s, the same 70.7 MB.
//!
//! The output must stay exactly serde_saphyr's (tests compare the command's output byte for
//! byte, and users diff it), so the rules below are serde_saphyr's, restated:
//!
//! * block layout with two-space steps; a sequence that is a mapping's value has its dashes at
//!   the key's column; the first entry of a mapping or sequence that is a sequence item goes on
//!   the dash's line; empty collections are `{}` and `[]`;
//! * a string is plain unless reading it back could change it or its type (YAML 1.1 words and
//!   numbers, timestamps, indicators, `: `, ` #`, control characters...), and is then
//!   double-quoted with YAML escapes; `.`, `#` and `-` alone are single-quoted;
//! * a string with a line break is a literal block (`|`, chomping from its trailing line
//!   breaks, an indentation indicator when its first line starts with a space); a plain-safe
//!   string longer than 80 characters is a folded block (`>-`) wrapped at spaces;
//! * keys are plain under stricter rules (no `:`, no flow indicators) and never blocks.
//!
//! What this does not reproduce with certainty (a key longer than 1024 characters, which
//! serde_saphyr writes as an explicit `? key`), it leaves to serde_saphyr for the whole document.
//! The differential tests below compare both writers on generated values and on every document
//! of `testdata/dt/`.

use serde_json::{Number, Value};
use std::fmt::Write as _;

/// The width folded blocks wrap at (serde_saphyr's `folded_wrap_chars` default), in characters.
const FOLD_WIDTH: usize = 80;
/// The longest key written as `key:` (YAML's limit for an implicit key, in characters).
const SIMPLE_KEY_MAX: usize = 1024;

/// Writes `value` as one YAML document at the end of `out`, exactly as
/// `serde_saphyr::to_string(value)` would.
pub fn write_document(value: &Value, out: &mut String) -> Result<(), serde_saphyr::ser::Error> {
    if !write_fast(value, out) {
        serde_saphyr::to_fmt_writer(out, value)?;
    }
    Ok(())
}

/// `value` as one YAML document, exactly as `serde_saphyr::to_string(value)` writes it.
pub fn to_document(value: &Value) -> Result<String, serde_saphyr::ser::Error> {
    let mut out = String::with_capacity(512);
    write_document(value, &mut out)?;
    Ok(out)
}

/// Writes the document with the fast writer. False (and `out` as it was) when the document
/// has a shape the fast writer leaves to serde_saphyr.
pub(crate) fn write_fast(value: &Value, out: &mut String) -> bool {
    let start = out.len();
    match (Writer { out }).node(value, Place::Top) {
        Ok(()) => true,
        Err(Unsupported) => {
            out.truncate(start);
            false
        }
    }
}

/// A shape the fast writer does not write.
struct Unsupported;

/// Where a node starts.
#[derive(Clone, Copy)]
enum Place {
    /// The document's root, at the start of a line.
    Top,
    /// A mapping's value, right after `key:` (no space yet); keys at `key_col`.
    Value { key_col: usize },
    /// A sequence item, right after `- `; the dash at `dash_col`.
    Item { dash_col: usize },
}

impl Place {
    /// What goes between where the node starts and a scalar.
    fn scalar_prefix(self) -> &'static str {
        match self {
            Place::Value { .. } => " ",
            Place::Top | Place::Item { .. } => "",
        }
    }

    /// The column a block scalar's body is indented from.
    fn parent_col(self) -> usize {
        match self {
            Place::Top => 0,
            Place::Value { key_col } => key_col,
            Place::Item { dash_col } => dash_col,
        }
    }
}

struct Writer<'a> {
    out: &'a mut String,
}

impl Writer<'_> {
    fn node(&mut self, value: &Value, place: Place) -> Result<(), Unsupported> {
        match value {
            Value::Null => self.scalar(place, "null"),
            Value::Bool(true) => self.scalar(place, "true"),
            Value::Bool(false) => self.scalar(place, "false"),
            Value::Number(n) => {
                self.out.push_str(place.scalar_prefix());
                write_number(self.out, n);
                self.out.push('\n');
            }
            Value::String(s) => self.string(s, place),
            Value::Array(items) if items.is_empty() => self.scalar(place, "[]"),
            Value::Object(map) if map.is_empty() => self.scalar(place, "{}"),
            Value::Array(items) => {
                let (dash_col, mut inline) = self.open_block(place, 0);
                for item in items {
                    if !inline {
                        self.indent(dash_col);
                    }
                    inline = false;
                    self.out.push_str("- ");
                    self.node(item, Place::Item { dash_col })?;
                }
            }
            Value::Object(map) => {
                let (key_col, mut inline) = self.open_block(place, 2);
                for (key, value) in map {
                    if !inline {
                        self.indent(key_col);
                    }
                    inline = false;
                    self.key(key)?;
                    self.out.push(':');
                    self.node(value, Place::Value { key_col })?;
                }
            }
        }
        Ok(())
    }

    /// Starts a non-empty block collection: the column of its dashes or keys and whether its
    /// first entry goes on the current line. As a mapping's value, a sequence's dashes are at
    /// the key's column (`deeper` 0) and a mapping's keys one step in (`deeper` 2).
    fn open_block(&mut self, place: Place, deeper: usize) -> (usize, bool) {
        match place {
            Place::Top => (0, false),
            Place::Value { key_col } => {
                self.out.push('\n');
                (key_col + deeper, false)
            }
            Place::Item { dash_col } => (dash_col + 2, true),
        }
    }

    fn scalar(&mut self, place: Place, text: &str) {
        self.out.push_str(place.scalar_prefix());
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn indent(&mut self, col: usize) {
        const SPACES: &str = "                                                                ";
        let mut left = col;
        while left > 0 {
            let n = left.min(SPACES.len());
            self.out.push_str(&SPACES[..n]);
            left -= n;
        }
    }

    fn key(&mut self, key: &str) -> Result<(), Unsupported> {
        if is_plain(key, true) {
            if key.len() > SIMPLE_KEY_MAX && key.chars().count() > SIMPLE_KEY_MAX {
                return Err(Unsupported);
            }
            self.out.push_str(key);
        } else {
            let start = self.out.len();
            write_double_quoted(self.out, key);
            let text = &self.out[start..];
            if text.len() > SIMPLE_KEY_MAX && text.chars().count() > SIMPLE_KEY_MAX {
                return Err(Unsupported);
            }
        }
        Ok(())
    }

    fn string(&mut self, s: &str, place: Place) {
        match value_style(s) {
            Style::Plain => self.scalar(place, s),
            Style::SingleQuoted => {
                self.out.push_str(place.scalar_prefix());
                self.out.push('\'');
                self.out.push_str(s);
                self.out.push_str("'\n");
            }
            Style::DoubleQuoted => {
                self.out.push_str(place.scalar_prefix());
                write_double_quoted(self.out, s);
                self.out.push('\n');
            }
            Style::Literal => self.literal(s, place),
            Style::Folded => self.folded(s, place),
        }
    }

    /// A literal block (`|`): its lines as they are, indented one step past the parent.
    fn literal(&mut self, s: &str, place: Place) {
        let body = s.trim_end_matches('\n');
        let breaks = s.len() - body.len();
        let col = place.parent_col() + 2;
        self.out.push_str(place.scalar_prefix());
        self.out.push('|');
        // A first line starting with a space would be read as the body's indentation.
        let first = body.split('\n').find(|line| !line.is_empty());
        if first.is_some_and(|line| line.starts_with(' ')) {
            self.out.push('2');
        }
        match breaks {
            0 => self.out.push('-'),
            1 if !body.is_empty() => {}
            _ => self.out.push('+'),
        }
        self.out.push('\n');
        if body.is_empty() {
            for _ in 0..breaks {
                self.indent(col);
                self.out.push('\n');
            }
            return;
        }
        for line in body.split('\n') {
            self.indent(col);
            self.out.push_str(line);
            self.out.push('\n');
        }
        for _ in 1..breaks {
            self.indent(col);
            self.out.push('\n');
        }
    }

    /// A folded block (`>-`) of a one-line string, broken at runs of spaces so that lines stay
    /// within 80 characters where a run allows it. A break at a run of n spaces keeps n - 1 of
    /// them at the end of the line (reading folds the break into the last one). The count
    /// restarts after the character that forced a break (that character itself is not
    /// counted), and once a line cannot be broken the rest of the string goes on that line.
    fn folded(&mut self, s: &str, place: Place) {
        let col = place.parent_col() + 2;
        self.out.push_str(place.scalar_prefix());
        self.out.push_str(">-\n");
        let mut line_start = 0;
        let mut counted = 0;
        // The last run of spaces followed by something other than a tab: (start, end).
        let mut break_at: Option<(usize, usize)> = None;
        let mut run_start: Option<usize> = None;
        for (at, c) in s.char_indices() {
            if c == ' ' {
                run_start.get_or_insert(at);
            } else if let Some(run) = run_start.take()
                && c != '\t'
            {
                break_at = Some((run, at));
            }
            counted += 1;
            if counted > FOLD_WIDTH {
                let Some((run, end)) = break_at.take() else {
                    break;
                };
                self.indent(col);
                self.out.push_str(&s[line_start..run]);
                self.indent(end - run - 1);
                self.out.push('\n');
                line_start = end;
                counted = 0;
            }
        }
        self.indent(col);
        self.out.push_str(&s[line_start..]);
        self.out.push('\n');
    }
}

/// serde_json's number as serde_saphyr writes it: integers as they are; floats as serde_json
/// writes them (shortest round trip), with a `.0` where the mantissa has no point and a sign
/// on the exponent, so that YAML 1.1 readers take it for a float.
fn write_number(out: &mut String, n: &Number) {
    let start = out.len();
    let _ = write!(out, "{n}");
    if !n.is_f64() {
        return;
    }
    match out[start..].find(['e', 'E']).map(|at| start + at) {
        Some(mut e) => {
            if !out[start..e].contains('.') {
                out.insert_str(e, ".0");
                e += 2;
            }
            if !matches!(out.as_bytes().get(e + 1), Some(b'+' | b'-')) {
                out.insert(e + 1, '+');
            }
        }
        None if !out[start..].contains('.') => out.push_str(".0"),
        None => {}
    }
}

/// How a string value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

fn value_style(s: &str) -> Style {
    if s.contains('\n') {
        return match fits_block(s) {
            true => Style::Literal,
            false => Style::DoubleQuoted,
        };
    }
    // Trailing spaces survive in a folded block (not in a plain scalar), so a long string
    // qualifies for one by what comes before them.
    let before_spaces = s.trim_end_matches(' ');
    let plain = is_plain(before_spaces, false);
    if plain && s.len() > FOLD_WIDTH && s.chars().count() > FOLD_WIDTH {
        return Style::Folded;
    }
    if matches!(s, "." | "#" | "-") {
        return Style::SingleQuoted;
    }
    match plain && before_spaces.len() == s.len() {
        true => Style::Plain,
        false => Style::DoubleQuoted,
    }
}

/// Whether every character can stand as it is in a block scalar: printable, not a line break
/// other than `\n` (`\r`, NEL, LS, PS would be read as or mistaken for one), not a BOM.
fn fits_block(s: &str) -> bool {
    if s.bytes()
        .all(|b| b == b'\n' || b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return true;
    }
    s.chars().all(|c| match c {
        '\n' | '\t' => true,
        '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => false,
        c => matches!(u32::from(c),
            0x20..=0x7e | 0xa0..=0xd7ff | 0xe000..=0xfffd | 0x10000..),
    })
}

/// Characters that only a double-quoted scalar can hold: C0/C1 controls, BOM, the line and
/// paragraph separators, and the non-characters U+FFFE and U+FFFF.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}'
        )
}

/// Whether `s` can be written plain: as a value (block context), or as a key (also in no
/// need of `:`, `,`, `[`, `]`, `{`, `}`, and not a number or word under YAML 1.2 rules either).
fn is_plain(s: &str, key: bool) -> bool {
    let bytes = s.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    // Space around a plain scalar is not part of it.
    if first.is_ascii_whitespace() || last.is_ascii_whitespace() {
        return false;
    }
    match first {
        b',' | b':' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>'
        | b'\'' | b'"' | b'%' | b'@' | b'`' => return false,
        // `-` and `?` followed by a space start a sequence item or an explicit key.
        b'-' | b'?' if bytes.get(1).is_none_or(u8::is_ascii_whitespace) => return false,
        _ => {}
    }
    if (bytes.starts_with(b"---") || bytes.starts_with(b"..."))
        && bytes.get(3).is_none_or(u8::is_ascii_whitespace)
    {
        return false;
    }
    let mut ascii = true;
    let mut prev = 0u8;
    for &b in bytes {
        match b {
            0..=0x1f | 0x7f => return false,
            b'#' if prev == b' ' => return false,
            b' ' if prev == b':' => return false,
            b':' | b',' | b'[' | b']' | b'{' | b'}' if key => return false,
            0x80.. => ascii = false,
            _ => {}
        }
        prev = b;
    }
    if !ascii && !plain_unicode(s, key) {
        return false;
    }
    // `a:` would end in an indicator (an ASCII string ending in space was refused above).
    if !key && last == b':' {
        return false;
    }
    // Keys are also checked against YAML 1.2's numbers and words, which are all among YAML
    // 1.1's (`yaml_12_ambiguity_is_within_yaml_11s` below), so the one check covers both.
    !is_ambiguous(s, true)
}

/// The checks of `is_plain` that look at characters beyond ASCII: controls and the like (which
/// need escapes), a `#` after any white space (a comment), a `:` before trailing white space.
fn plain_unicode(s: &str, key: bool) -> bool {
    let mut prev = 'x';
    for c in s.chars() {
        if needs_escape(c) || (c == '#' && prev.is_whitespace()) {
            return false;
        }
        prev = c;
    }
    key || !s.trim().ends_with(':')
}

/// Whether a YAML reader could take the plain scalar for something other than this string (or
/// refuse it): null, booleans, numbers, infinities and NaN; with `yaml11`, also YAML 1.1's
/// booleans (`yes`, `off`, `y`...), sexagesimal and radix numbers, numbers with underscores,
/// timestamps, the merge key `<<` and the value key `=`.
fn is_ambiguous(s: &str, yaml11: bool) -> bool {
    const WORDS: [&str; 7] = ["null", "true", "false", "nan", "inf", "+inf", "-inf"];
    const YAML11_BOOLS: [&str; 8] = ["true", "false", "yes", "no", "y", "n", "on", "off"];
    if s.is_empty() || s == "~" {
        return true;
    }
    if s.len() <= 5 && WORDS.iter().any(|w| s.eq_ignore_ascii_case(w)) {
        return true;
    }
    if yaml11 {
        if s == "<<" || s == "=" {
            return true;
        }
        // Readers take the words with blanks around them too (trimmed only when there are
        // any: this runs for every string written).
        let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        let bytes = s.as_bytes();
        let word = match bytes.first().is_some_and(blank) || bytes.last().is_some_and(blank) {
            true => s.trim_matches([' ', '\t', '\r', '\n']),
            false => s,
        };
        if word.len() <= 5 && YAML11_BOOLS.iter().any(|w| word.eq_ignore_ascii_case(w)) {
            return true;
        }
    }
    if !matches!(s.as_bytes()[0], b'0'..=b'9' | b'+' | b'-' | b'.' | b'_') {
        return false;
    }
    is_number(s, yaml11) || yaml11 && is_timestamp(s.as_bytes())
}

fn strip_sign(s: &[u8]) -> &[u8] {
    match s {
        [b'+' | b'-', rest @ ..] => rest,
        _ => s,
    }
}

/// A radix prefix (`0b`, `0o`, `0x`, either case) and the digits after it.
fn radix(s: &[u8]) -> Option<(u32, &[u8])> {
    match s {
        [b'0', b'b' | b'B', digits @ ..] => Some((2, digits)),
        [b'0', b'o' | b'O', digits @ ..] => Some((8, digits)),
        [b'0', b'x' | b'X', digits @ ..] => Some((16, digits)),
        _ => None,
    }
}

fn is_digit(b: u8, radix: u32) -> bool {
    char::from(b).is_digit(radix) && b.is_ascii()
}

/// Digits in `radix`, at least one; an underscore only between two digits.
fn digits_strict(s: &[u8], radix: u32) -> bool {
    !s.is_empty()
        && (0..s.len()).all(|i| {
            is_digit(s[i], radix)
                || s[i] == b'_'
                    && i > 0
                    && is_digit(s[i - 1], radix)
                    && s.get(i + 1).is_some_and(|&n| is_digit(n, radix))
        })
}

/// Digits in `radix` and underscores anywhere, at least one character.
fn digits_loose(s: &[u8], radix: u32) -> bool {
    !s.is_empty() && s.iter().all(|&b| b == b'_' || is_digit(b, radix))
}

/// Numbers as YAML readers resolve them. YAML 1.2: `[+-]` then `.inf`/`.nan`, `0b`/`0o`/`0x`
/// radix integers, decimals with an optional point and exponent, underscores only between
/// digits. YAML 1.1 (and Go's reader) also: base 60 (`1:30`), underscores anywhere (they are
/// dropped before resolving), any run of digits and points after a decimal point, a sign after
/// an unsigned `0b`/`0o`.
fn is_number(s: &str, yaml11: bool) -> bool {
    let bytes = s.as_bytes();
    let unsigned = strip_sign(bytes);
    if unsigned.eq_ignore_ascii_case(b".inf") || unsigned.eq_ignore_ascii_case(b".nan") {
        return true;
    }
    let dropped: Vec<u8>;
    let mut bytes = bytes;
    if yaml11 {
        if is_sexagesimal(unsigned) {
            return true;
        }
        if let Some((base, digits)) = radix(unsigned)
            && digits_loose(digits, base)
        {
            return true;
        }
        if bytes.contains(&b'_') {
            dropped = bytes.iter().copied().filter(|&b| b != b'_').collect();
            bytes = &dropped;
        }
    }
    let unsigned = strip_sign(bytes);
    if let Some((base, mut digits)) = radix(unsigned) {
        if yaml11 && (bytes.starts_with(b"0b") || bytes.starts_with(b"0o")) {
            digits = strip_sign(digits);
        }
        return digits_strict(digits, base);
    }
    let mantissa = match unsigned.iter().position(|&b| b == b'e' || b == b'E') {
        Some(e) => {
            if !digits_strict(strip_sign(&unsigned[e + 1..]), 10) {
                return false;
            }
            &unsigned[..e]
        }
        None => unsigned,
    };
    match mantissa.iter().position(|&b| b == b'.') {
        Some(point) => {
            let (whole, fraction) = (&mantissa[..point], &mantissa[point + 1..]);
            if !whole.is_empty() && !digits_strict(whole, 10) {
                return false;
            }
            match (yaml11, fraction.is_empty()) {
                (true, _) => fraction.iter().all(|&b| b.is_ascii_digit() || b == b'.'),
                (false, true) => !whole.is_empty(),
                (false, false) => digits_strict(fraction, 10),
            }
        }
        None => digits_strict(mantissa, 10),
    }
}

/// YAML 1.1 base-60 numbers (`190:20:30`, `1:30.5`), given without their sign: a first
/// component of digits and underscores (not starting with 0 unless a fraction follows), then
/// `:` components of one digit or two below 60, then an optional fraction of digits and
/// underscores.
fn is_sexagesimal(unsigned: &[u8]) -> bool {
    let (integer, fraction) = match unsigned.iter().position(|&b| b == b'.') {
        Some(point) => (&unsigned[..point], Some(&unsigned[point + 1..])),
        None => (unsigned, None),
    };
    let Some(colon) = integer.iter().position(|&b| b == b':') else {
        return false;
    };
    let (first, rest) = (&integer[..colon], &integer[colon + 1..]);
    match first.first() {
        Some(b'0') if fraction.is_none() => return false,
        Some(b'0'..=b'9') => {}
        _ => return false,
    }
    first.iter().all(|&b| b.is_ascii_digit() || b == b'_')
        && rest.split(|&b| b == b':').all(|part| match part {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        })
        && fraction.is_none_or(|f| f.iter().all(|&b| b.is_ascii_digit() || b == b'_'))
}

/// YAML 1.1 timestamps as Go reads them, without checking the calendar: `YYYY-M-D`, then
/// optionally `T`/`t` or blanks, `H:M:S`, a fraction after `.` or `,`, blanks, and `Z` or a
/// `±H[:MM]` offset.
fn is_timestamp(s: &[u8]) -> bool {
    /// Takes a run of digits whose length is within `min..=max`.
    fn digits(s: &mut &[u8], min: usize, max: usize) -> bool {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        *s = &s[n..];
        (min..=max).contains(&n)
    }
    fn take(s: &mut &[u8], what: &[u8]) -> bool {
        match s.first() {
            Some(b) if what.contains(b) => {
                *s = &s[1..];
                true
            }
            _ => false,
        }
    }
    fn blanks(s: &mut &[u8]) -> usize {
        let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        *s = &s[n..];
        n
    }
    let mut rest = s;
    let s = &mut rest;
    if !(digits(s, 4, 4) && take(s, b"-") && digits(s, 1, 2) && take(s, b"-") && digits(s, 1, 2)) {
        return false;
    }
    if s.is_empty() {
        return true;
    }
    if !take(s, b"Tt") && blanks(s) == 0 {
        return false;
    }
    if !(digits(s, 1, 2) && take(s, b":") && digits(s, 1, 2) && take(s, b":") && digits(s, 1, 2)) {
        return false;
    }
    if take(s, b".,") {
        digits(s, 0, usize::MAX);
    }
    blanks(s);
    if s.is_empty() || *s == b"Z" {
        return true;
    }
    if !(take(s, b"+-") && digits(s, 1, 2)) {
        return false;
    }
    if take(s, b":") && !digits(s, 2, 2) {
        return false;
    }
    s.is_empty()
}

/// `"s"` with YAML's escapes: `\\`, `\"`, the named ones (`\0 \a \b \t \n \v \f \r \e \N \L
/// \P`), `\uFEFF`, `\xHH` for the other C0 and C1 controls and DEL, `\uHHHH` for U+FFFE and
/// U+FFFF. Everything else as it is.
fn write_double_quoted(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(s.len() + 2);
    out.push('"');
    let mut copied = 0;
    for (at, c) in s.char_indices() {
        let named = match c {
            '\\' => "\\\\",
            '"' => "\\\"",
            '\0' => "\\0",
            '\u{7}' => "\\a",
            '\u{8}' => "\\b",
            '\t' => "\\t",
            '\n' => "\\n",
            '\u{b}' => "\\v",
            '\u{c}' => "\\f",
            '\r' => "\\r",
            '\u{1b}' => "\\e",
            '\u{85}' => "\\N",
            '\u{2028}' => "\\L",
            '\u{2029}' => "\\P",
            '\u{feff}' => "\\uFEFF",
            c if needs_escape(c) => "",
            _ => continue,
        };
        out.push_str(&s[copied..at]);
        copied = at + c.len_utf8();
        if !named.is_empty() {
            out.push_str(named);
            continue;
        }
        let code = u32::from(c);
        let (prefix, width) = match code <= 0xff {
            true => ("\\x", 2),
            false => ("\\u", 4),
        };
        out.push_str(prefix);
        for shift in (0..width).rev() {
            out.push(char::from(HEX[((code >> (4 * shift)) & 0xf) as usize]));
        }
    }
    out.push_str(&s[copied..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn saphyr(value: &Value) -> String {
        serde_saphyr::to_string(value).expect("serde_saphyr writes every JSON value")
    }

    fn fast(value: &Value) -> Option<String> {
        let mut out = String::new();
        write_fast(value, &mut out).then_some(out)
    }

    /// Both writers agree on `value`, and the fast writer handled it.
    #[track_caller]
    fn same(value: &Value) {
        let ours = fast(value).unwrap_or_else(|| panic!("fast path refused {value:?}"));
        assert_eq!(ours, saphyr(value), "{value:?}");
    }

    #[test]
    fn layouts() {
        for value in [
            json!(null),
            json!(true),
            json!(12),
            json!(-3),
            json!(u64::MAX),
            json!(1.5),
            json!(1e300),
            json!(-2.5e-8),
            json!(0.0),
            json!(-0.0),
            json!(100.0),
            json!({}),
            json!([]),
            json!({"a": {}, "b": [], "c": [[]], "d": [{}], "e": [[1, [2, {}]], {"x": []}]}),
            json!([[1, 2], [[3, 4], 5], {"a": [6, 7], "b": {"c": [8]}}]),
            json!({"a": [{"b": [{"c": {"d": [1]}}]}]}),
            json!([["x"], [["y", "z\nw"]]]),
            json!({"a": "line\n", "b": ["  lead\n", "x\n\n", "\n\n"], "c": {"d": "t\r\n"}}),
            json!([{"k": "1\n2"}, {"k": ["3\n4"]}]),
        ] {
            same(&value);
        }
    }

    #[test]
    fn strings() {
        let long = "word ".repeat(40);
        let cases = [
            "",
            " ",
            "a",
            ".",
            "#",
            "-",
            "?",
            "-a",
            "- a",
            "?x",
            "? x",
            ":",
            "a:",
            "a: b",
            "a:b",
            "a #b",
            "a#b",
            "#a",
            "yes",
            "No",
            "ON",
            "y",
            "N",
            "~",
            "null",
            "NULL",
            "True",
            "<<",
            "=",
            "0",
            "007",
            "0x1F",
            "0b2",
            "0o17",
            "1_000",
            "_1",
            "1__0",
            "1:30",
            "1:60",
            "1:30.5",
            "0:30",
            "1e5",
            "1E+5",
            "1e",
            ".5",
            "5.",
            ".",
            "..",
            "1.2.3",
            ".inf",
            "-.Inf",
            ".NaN",
            "nan",
            "-inf",
            "2024-05-01",
            "2024-05-01T12:00:00Z",
            "2024-5-1 1:2:3.5 +01:00",
            "2024-05-01t12:00:00,5",
            "20240-05-01",
            "2024-05-01T12:00:00+123",
            "---",
            "--- a",
            "---a",
            "...",
            "... a",
            "a\tb",
            "a\rb",
            "\u{85}",
            "a\u{2028}b",
            "\u{feff}x",
            "\u{fffe}",
            "\u{7f}",
            "\u{1b}[0m",
            "\u{0}",
            "é",
            "a\u{a0}#b",
            "a:\u{3000}",
            "\u{3000}",
            "\"q\"",
            "'s'",
            "back\\slash",
            "{a}",
            "[a]",
            "a,b",
            "%x",
            "@x",
            "`x",
            "!x",
            "&x",
            "*x",
            "|x",
            ">x",
            "x|",
            "kind: Secret",
        ];
        for s in cases {
            same(&json!(s));
            same(&json!({ s: s }));
            same(&json!([s, { s: [s] }]));
        }
        for s in [
            long.clone(),
            long.trim_end().to_string(),
            format!("{long}   "),
            "x".repeat(200),
            format!("{} {}", "a".repeat(90), "b".repeat(90)),
            format!("{}  {}", "a".repeat(79), "b".repeat(3)),
            format!("{}   {} {}", "a".repeat(70), "b".repeat(20), "c".repeat(90)),
            format!("{} \tx", "a".repeat(79)),
            format!("{}é {}", "é".repeat(60), "ü".repeat(30)),
            format!("yes{}", " ".repeat(90)),
            format!("a{}b", " ".repeat(100)),
            format!("{}: x", "k".repeat(90)),
            "k".repeat(1030),
            "k:".repeat(600),
        ] {
            same(&json!(s));
            same(&json!({ "key": { "in": [s.clone()] } }));
            same(&json!([[s.clone()]]));
        }
    }

    #[test]
    fn a_key_longer_than_1024_characters_goes_to_serde_saphyr() {
        let value = json!({ "k".repeat(1100): 1, "q:".repeat(600): [2] });
        assert_eq!(fast(&value), None);
        let mut out = "before\n".to_string();
        write_document(&value, &mut out).unwrap();
        assert_eq!(out, format!("before\n{}", saphyr(&value)));
        same(&json!({ "k".repeat(1024): 1, "é".repeat(1000): 2 }));
    }

    /// Strings from characters that mean something to YAML, and long ones.
    fn nasty_string() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "yes", "No", "ON", "off", "y", "N", "true", "False", "null", "NULL", "~", "nan",
            ".inf", "-", "+", ".", "_", ":", "#", " ", "  ", "\t", "\n", "\r", "-", "?", "'", "\"",
            "\\", "{", "}", "[", "]", ",", "&", "*", "!", "|", ">", "%", "@", "`", "<<", "=", "0",
            "1", "7", "9", "e", "E", "x", "b", "o", "T", "Z", "2024", "05", "12", "---", "...",
            "a", "k", "é", "\u{85}", "\u{2028}", "\u{2029}", "\u{feff}", "\u{fffe}", "\u{a0}",
            "\u{3000}", "\u{0}", "\u{7}", "\u{1b}", "\u{7f}", "\u{9f}", "😀", "word", "name ",
        ]);
        prop_oneof![
            6 => prop::collection::vec(pieces.clone(), 0..8).prop_map(|p| p.concat()),
            2 => (
                prop::collection::vec(pieces, 0..4),
                70usize..100,
                prop::sample::select(vec!["a", "ab ", "x y", "é", "  ", "b"]),
            )
                .prop_map(|(p, n, fill)| {
                    let mut s = p.concat();
                    while s.chars().count() < n {
                        s.push_str(fill);
                    }
                    s
                }),
            1 => "[a-z0-9 .:/-]{0,120}",
        ]
    }

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            (-1000i32..1000, -30i32..30)
                .prop_map(|(m, e)| Value::from(f64::from(m) * 10f64.powi(e))),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number(),
            nasty_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(nasty_string(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn yaml_12_ambiguity_is_within_yaml_11s(s in "[-+0-9._:eExXbBoO]{1,8}|[a-zA-Z~<=+-]{1,5}") {
            prop_assert!(!is_ambiguous(&s, false) || is_ambiguous(&s, true), "{:?}", s);
        }

        #[test]
        fn writes_what_serde_saphyr_writes(value in value()) {
            let ours = fast(&value);
            prop_assert!(ours.is_some(), "fast path refused {:?}", value);
            prop_assert_eq!(ours.unwrap(), saphyr(&value));
        }
    }

    /// Every document of every file under testdata/dt (the inputs and the expected output of
    /// `cvo dt reconcile`), written both ways; the fast path takes all of them.
    #[test]
    fn the_dt_testdata_writes_the_same_and_on_the_fast_path() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/dt");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let mut documents = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            for chunk in crate::yaml::split_stream(&text).unwrap() {
                let value = match chunk.json {
                    Some(json) => json,
                    None => crate::yaml::parse_value(&chunk.reader_text()).unwrap(),
                };
                same(&value);
                documents += 1;
            }
        }
        assert!(documents > 200, "{documents} documents");
    }

    /// The generated world's output is what serde_saphyr wrote: written again it is the same
    /// bytes, document for document.
    #[test]
    fn the_generated_worlds_output_writes_back_to_itself() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/dt/generated-world.out.yaml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let documents: Vec<String> = crate::yaml::split_stream(&text)
            .unwrap()
            .iter()
            .map(|chunk| {
                let value = crate::yaml::parse_value(&chunk.reader_text()).unwrap();
                fast(&value).expect("the fast path takes every object")
            })
            .collect();
        assert_eq!(documents.join("---\n"), text);
    }
}
