//! The constraint language's tokens, as anax's lexer finds them (a participle EBNF lexer).
//!
//! Each token class is tried in anax's order and the first that matches at the current place
//! wins, not the longest; within a class, repetitions take all they can and never give back.
//! That is why `inin == 1` starts with the operator `in`, `5g` is a number then a name, and
//! `1.1.1.1` a version then `.1`. Whitespace belongs to the token after it (an `OpEq` is
//! `" == "`), except around `AND`/`OR`, which need it on both sides.
//!
//! One more of participle's ways is kept: a literal of several characters that fails partway
//! keeps what it read (the characters that matched go into the token's text, the one that did
//! not is dropped), and the next alternative goes on from there. So `!x=` is the operator
//! `!=` read from three characters, and a token's [`Token::text`] can differ from the input it
//! consumed ([`Token::len`]); anax then looks for that text in the constraint to cut it off.

/// The token classes, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A name starting with `in` (and then more than `in`s).
    InStr,
    AndOp,
    OrOp,
    /// `<`, `>`, `<=`, `>=`, and also `=<`, `=>`.
    OpComp,
    OpIn,
    /// `=`, `==`, `!=`.
    OpEq,
    /// `[1.0.0,2.0.0)`: three-field versions, whitespace allowed around the comma.
    VersRange,
    /// `d.d.d`, each field possibly empty.
    Vers,
    Num,
    OpenParen,
    CloseParen,
    Str,
    /// A double-quoted run without commas.
    QuoteStr,
    /// A double-quoted run with commas.
    ListStr,
}

impl Kind {
    /// What may follow a name and an operator.
    pub fn is_value(self) -> bool {
        matches!(
            self,
            Kind::Str
                | Kind::InStr
                | Kind::QuoteStr
                | Kind::ListStr
                | Kind::Vers
                | Kind::VersRange
                | Kind::Num
        )
    }
}

/// One token: its class, its text (leading whitespace included) and how many bytes of the
/// input it consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub text: String,
    pub len: usize,
}

/// No token class matches here; the text is participle's (`1:2: no match found for #`), with
/// the line and column (in characters, from 1) of where the token would have started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: no match found for {found}")]
pub struct LexError {
    pub line: usize,
    pub column: usize,
    pub found: char,
}

const ORDER: [Kind; 14] = [
    Kind::InStr,
    Kind::AndOp,
    Kind::OrOp,
    Kind::OpComp,
    Kind::OpIn,
    Kind::OpEq,
    Kind::VersRange,
    Kind::Vers,
    Kind::Num,
    Kind::OpenParen,
    Kind::CloseParen,
    Kind::Str,
    Kind::QuoteStr,
    Kind::ListStr,
];

/// The first token of `input`; `None` at its end.
pub fn first_token(input: &str) -> Result<Option<Token>, LexError> {
    if input.is_empty() {
        return Ok(None);
    }
    for kind in ORDER {
        if let Some((text, len)) = match_kind(kind, input) {
            return Ok(Some(Token { kind, text, len }));
        }
    }
    Err(LexError {
        line: 1,
        column: 1,
        found: input.chars().next().unwrap_or_default(),
    })
}

/// Every token of `input`, for tests and diagnostics.
pub fn tokens(input: &str) -> Result<Vec<Token>, LexError> {
    let mut rest = input;
    let mut out = Vec::new();
    while let Some(token) = first_token(rest).map_err(|e| locate(input, rest, e))? {
        rest = &rest[token.len..];
        out.push(token);
    }
    Ok(out)
}

/// A lexing error of `rest`, placed within `whole` (of which `rest` is the tail).
pub fn locate(whole: &str, rest: &str, error: LexError) -> LexError {
    let before = &whole[..whole.len() - rest.len()];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    LexError {
        line,
        column,
        ..error
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\t' | ' ')
}

/// ASCII letters and the Unicode blocks anax's lexer adds: the Latin-1 supplement (from
/// U+00A0, so `£`, `µ` and the no-break space too), Hangul Jamo, currency symbols, Hiragana,
/// Katakana, CJK ideographs, Hangul syllables, half- and full-width forms.
fn is_alpha(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c,
            '\u{00A0}'..='\u{00FF}'
            | '\u{1100}'..='\u{11FF}'
            | '\u{20A0}'..='\u{20CF}'
            | '\u{3040}'..='\u{309F}'
            | '\u{30A0}'..='\u{30FF}'
            | '\u{4E00}'..='\u{9FFF}'
            | '\u{AC00}'..='\u{D7AF}'
            | '\u{FF00}'..='\u{FFEF}')
}

/// What a name or an unquoted value is made of.
fn is_word(c: char) -> bool {
    c.is_ascii_digit() || is_alpha(c) || "_-/!?+~'.".contains(c)
}

fn is_quoted(c: char) -> bool {
    is_word(c) || c == ' ' || c == '\t'
}

fn is_listed(c: char) -> bool {
    is_quoted(c) || c == ','
}

/// A cursor over the input that only moves forward, writing what it matches into the token's
/// text; a production that fails is dropped whole (a new cursor per production).
struct Cursor<'a> {
    input: &'a str,
    pos: usize,
    text: String,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.input[self.pos..].chars().next()
    }

    fn one(&mut self, class: impl Fn(char) -> bool) -> bool {
        match self.peek() {
            Some(c) if class(c) => {
                self.pos += c.len_utf8();
                self.text.push(c);
                true
            }
            _ => false,
        }
    }

    fn many(&mut self, class: impl Fn(char) -> bool + Copy) {
        while self.one(class) {}
    }

    /// participle's literal: no match unless the first character matches; then character by
    /// character, a mismatch consumed but not written, what matched before it kept.
    fn literal(&mut self, literal: &str) -> bool {
        if self.peek() != literal.chars().next() {
            return false;
        }
        for want in literal.chars() {
            let Some(got) = self.peek() else {
                return false;
            };
            self.pos += got.len_utf8();
            if got != want {
                return false;
            }
            self.text.push(got);
        }
        true
    }

    fn spaces(&mut self) {
        self.many(is_whitespace);
    }

    /// `{digit} "." {digit} "." {digit}`
    fn version(&mut self) -> bool {
        self.many(|c| c.is_ascii_digit());
        if !self.literal(".") {
            return false;
        }
        self.many(|c| c.is_ascii_digit());
        if !self.literal(".") {
            return false;
        }
        self.many(|c| c.is_ascii_digit());
        true
    }
}

/// The text of a token of this class at the beginning of `input` and the bytes it consumes,
/// if it matches.
fn match_kind(kind: Kind, input: &str) -> Option<(String, usize)> {
    let mut c = Cursor {
        input,
        pos: 0,
        text: String::new(),
    };
    let matched = match kind {
        Kind::InStr => {
            c.literal("in") && {
                while c.literal("in") {}
                c.one(is_word) && {
                    c.many(is_word);
                    true
                }
            }
        }
        Kind::AndOp | Kind::OrOp => {
            let (word, symbol) = match kind {
                Kind::AndOp => ("AND", "&&"),
                _ => ("OR", "||"),
            };
            c.one(is_whitespace) && {
                c.spaces();
                (c.literal(word) || c.literal(symbol)) && c.one(is_whitespace) && {
                    c.spaces();
                    true
                }
            }
        }
        Kind::OpComp => {
            c.spaces();
            c.literal("=");
            (c.literal(">") || c.literal("<")) && {
                c.literal("=");
                c.spaces();
                true
            }
        }
        Kind::OpIn => {
            c.spaces();
            c.literal("in") && {
                c.spaces();
                true
            }
        }
        Kind::OpEq => {
            c.spaces();
            let matched = c.literal("!=")
                || (c.literal("=") && {
                    c.literal("=");
                    true
                });
            matched && {
                c.spaces();
                true
            }
        }
        Kind::VersRange => {
            c.spaces();
            (c.literal("(") || c.literal("["))
                && c.version()
                && {
                    c.spaces();
                    c.literal(",")
                }
                && {
                    c.spaces();
                    c.version() || c.literal("INFINITY")
                }
                && (c.literal("]") || c.literal(")"))
        }
        Kind::Vers => {
            c.spaces();
            c.version()
        }
        Kind::Num => {
            c.spaces();
            c.literal("-");
            c.one(|ch| ch.is_ascii_digit()) && {
                c.many(|ch| ch.is_ascii_digit());
                if c.literal(".") {
                    c.many(|ch| ch.is_ascii_digit());
                }
                true
            }
        }
        Kind::OpenParen => {
            c.spaces();
            c.literal("(") && {
                c.spaces();
                true
            }
        }
        Kind::CloseParen => {
            c.spaces();
            c.literal(")")
        }
        Kind::Str => {
            c.spaces();
            c.one(is_word) && {
                c.many(is_word);
                true
            }
        }
        Kind::QuoteStr | Kind::ListStr => {
            let class = match kind {
                Kind::QuoteStr => is_quoted,
                _ => is_listed,
            };
            c.spaces();
            c.literal("\"") && c.one(class) && {
                c.many(class);
                c.literal("\"")
            }
        }
    };
    matched.then_some((c.text, c.pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokens as `Kind"text"`, or the error: the form the participle v0.7.1 oracle printed.
    fn show(input: &str) -> String {
        let mut rest = input;
        let mut out = Vec::new();
        loop {
            match first_token(rest) {
                Ok(Some(t)) => {
                    out.push(format!("{:?}{:?}", t.kind, t.text));
                    rest = &rest[t.len..];
                }
                Ok(None) => break,
                Err(e) => {
                    out.push(format!("ERR[{}]", locate(input, rest, e)));
                    break;
                }
            }
        }
        out.join(" ")
    }

    /// Token streams printed by anax's lexer definition run through participle v0.7.1 (the
    /// version anax's go.mod pins), for the ASCII grammar.
    #[test]
    fn tokens_as_participle_finds_them() {
        let cases = [
            (
                "version == 1.1.1 OR USDA == true",
                r#"Str"version" OpEq" == " Vers"1.1.1" OrOp" OR " Str"USDA" OpEq" == " Str"true""#,
            ),
            (
                "eggs == truck load && certification == USDA",
                r#"Str"eggs" OpEq" == " Str"truck" Str" load" AndOp" && " Str"certification" OpEq" == " Str"USDA""#,
            ),
            ("inin == 1", r#"OpIn"in" OpIn"in " OpEq"== " Num"1""#),
            (
                "inininintValue == \"ininint\"",
                r#"InStr"inininintValue" OpEq" == " QuoteStr"\"ininint\"""#,
            ),
            (
                "inVersion in [0.0.0,1.4.3]",
                r#"InStr"inVersion" OpIn" in " VersRange"[0.0.0,1.4.3]""#,
            ),
            ("countryin\"a,b\"", r#"Str"countryin" ListStr"\"a,b\"""#),
            ("x #", r#"Str"x" ERR[1:2: no match found for  ]"#),
            ("a=<3", r#"Str"a" OpComp"=<" Num"3""#),
            ("a=>3", r#"Str"a" OpComp"=>" Num"3""#),
            ("a ANDROID", r#"Str"a" Str" ANDROID""#),
            ("a == 1.1.1.1", r#"Str"a" OpEq" == " Vers"1.1.1" Str".1""#),
            ("a == 3abc", r#"Str"a" OpEq" == " Num"3" Str"abc""#),
            ("x == ..", r#"Str"x" OpEq" == " Vers"..""#),
            (
                "a == ( 1.0.0 , 2.0.0 ]",
                r#"Str"a" OpEq" == " OpenParen"( " Vers"1.0.0" ERR[1:13: no match found for  ]"#,
            ),
            ("a == \"x\"y", r#"Str"a" OpEq" == " QuoteStr"\"x\"" Str"y""#),
            (
                "a == \"\"",
                r#"Str"a" OpEq" == " ERR[1:6: no match found for "]"#,
            ),
            ("a == \"a b,c\"", r#"Str"a" OpEq" == " ListStr"\"a b,c\"""#),
            (
                "( a == 1 )",
                r#"OpenParen"( " Str"a" OpEq" == " Num"1" CloseParen" )""#,
            ),
            ("5g == 1", r#"Num"5" Str"g" OpEq" == " Num"1""#),
            ("a == -", r#"Str"a" OpEq" == " Str"-""#),
            ("a ==\tb", r#"Str"a" OpEq" ==\t" Str"b""#),
            ("a AND", r#"Str"a" Str" AND""#),
            ("a\n#", "Str\"a\" ERR[1:2: no match found for \n]"),
            // A literal that fails partway keeps what it read; the text differs from the input.
            (
                "in=!>= == ininx in incountryin",
                r#"OpIn"in" OpEq"=" OpEq"!= " OpEq"== " InStr"ininx" OpIn" in " InStr"incountryin""#,
            ),
            ("!!<=!!=", r#"Str"!!" OpComp"<=" OpEq"!=""#),
            (
                "a && countryin(1.0.0, 2.0.0]! =>>=&&",
                r#"Str"a" AndOp" && " Str"countryin" VersRange"(1.0.0, 2.0.0]" OpEq"!=" OpComp">" OpComp">=" ERR[1:35: no match found for &]"#,
            ),
            (
                "a AX&& b == 1",
                r#"Str"a" AndOp" A&& " Str"b" OpEq" == " Num"1""#,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(show(input), want, "{input:?}");
        }
    }

    #[test]
    fn unicode_letters_are_words() {
        assert_eq!(
            show("pays == Modèle"),
            r#"Str"pays" OpEq" == " Str"Modèle""#
        );
        assert_eq!(
            show("名前 == 最終グイン"),
            r#"Str"名前" OpEq" == " Str"最終グイン""#
        );
        assert_eq!(show("k == 한국"), r#"Str"k" OpEq" == " Str"한국""#);
        assert_eq!(show("p == €"), r#"Str"p" OpEq" == " Str"€""#);
        assert_eq!(show("p == ＡＢＣ"), r#"Str"p" OpEq" == " Str"ＡＢＣ""#);
        assert_eq!(
            show("p == Д"),
            r#"Str"p" OpEq" == " ERR[1:6: no match found for Д]"#
        );
    }

    #[test]
    fn tokens_lists_all() {
        let all = tokens("a == 1 AND b in \"x,y\"").unwrap();
        let kinds: Vec<Kind> = all.iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Str,
                Kind::OpEq,
                Kind::Num,
                Kind::AndOp,
                Kind::Str,
                Kind::OpIn,
                Kind::ListStr
            ]
        );
        assert_eq!(
            tokens("a\n b #").unwrap_err().to_string(),
            "2:3: no match found for  "
        );
    }
}
