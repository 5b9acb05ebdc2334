//! The constraint language of Open Horizon policies (anax's `text` constraint plugin): each
//! constraint is `name op value` terms joined by `AND`/`&&` and `OR`/`||`, with parentheses;
//! AND binds tighter than OR; the constraints of one policy are ANDed.
//!
//! anax does not parse a constraint once into a tree: it walks the text one step at a time,
//! re-lexing what is left ([`next_expression`], [`next_operator`]), and validation and
//! evaluation walk it differently. This module keeps the two walks so that what anax accepts,
//! refuses and decides stays the same, quirks included:
//! - a name longer than three bytes that ends in `in` and is followed directly by a value is
//!   split (`countryin"a,b"` is `country in "a,b"`), and such a term is not checked further;
//! - `(` after a term or `)` where no operator may come ends the walk's step quietly during
//!   validation, so `)a == 1(` is valid (and always satisfied);
//! - a name keeps the whitespace in front of it: ` a == 1` tests a property named ` a`.
//!
//! [`lexer`] finds the tokens, [`eval`] decides a constraint against properties and two
//! policies' compatibility.

pub mod eval;
pub mod gofloat;
pub mod lexer;

use lexer::{Kind, LexError, first_token};

use super::version::{VersionError, VersionRange};

/// The deepest nesting of parentheses accepted. anax has no limit (Go's stacks grow); this one
/// keeps evaluation's recursion within a thread's stack, far above any written policy.
pub const MAX_DEPTH: usize = 256;

/// Why a constraint is refused, as anax words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    #[error("Error finding an expression in {constraint}. Error was: {cause}")]
    Expression {
        constraint: String,
        cause: StepError,
    },
    #[error("Error finding a control operator in {constraint}. Error was: {cause}")]
    Operator {
        constraint: String,
        cause: StepError,
    },
    #[error("The constraint expression contains unmatched parentheses.")]
    UnmatchedParentheses,
    /// Not anax's: see [`MAX_DEPTH`].
    #[error("The constraint expression nests parentheses deeper than {MAX_DEPTH} levels.")]
    TooDeep,
    /// Not anax's: anax panics evaluating a term against such a value (`removeQuotes` slices
    /// before the start of a lone `"`).
    #[error(
        "property {name:?} has the value {value:?}, which holds a lone double quote (\") that the constraints cannot be decided against (anax panics there): remove the quote or quote the whole value"
    )]
    LoneQuote { name: String, value: String },
}

/// What one step of the walk found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Lex(LexError),
    #[error("Unrecognized token found: {0}")]
    Unrecognized(LexError),
    #[error("Non-operator token proceeding property name token. \"{name}{next}\"")]
    NonOperator { name: String, next: String },
    #[error("Invalid property value. {name}{op}{value}")]
    InvalidValue {
        name: String,
        op: String,
        value: String,
    },
    #[error("Next expression not found: {0}")]
    NoExpression(String),
    #[error("Version range can only use operator 'in'.")]
    RangeNeedsIn,
    #[error("Property type list of strings can only use operator 'in'.")]
    ListNeedsIn,
    #[error("Cannot use numerical comparison operator {op} with value {value}.")]
    NotNumeric { op: String, value: String },
    #[error("The 'in' operator can only be used for types version and list of strings")]
    InNeedsListOrVersion,
    #[error(transparent)]
    Range(VersionError),
    #[error("No control operator found. Expecting one of AND,&&,OR,||. Found: {0}")]
    NoOperator(String),
}

/// One `name op value` term. The operator and the value are trimmed; the name is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub name: String,
    pub op: String,
    pub value: String,
}

/// What may come after a term or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Nothing is left.
    End,
    And,
    Or,
    Open,
    Close,
}

/// The next term at the start of `expression` and what is left after it. `None` with the text
/// unchanged when it starts with a parenthesis, `None` with nothing left when only whitespace is.
///
/// What is left is the expression with the first occurrence of the term's token texts cut out
/// (Go's `strings.Replace(..., 1)`): the term itself, unless the lexer's texts differ from the
/// input (see [`lexer`]), when it may be a later occurrence or nothing.
pub fn next_expression(expression: &str) -> Result<(Option<Term>, String), StepError> {
    if expression.trim().is_empty() {
        return Ok((None, String::new()));
    }
    let Some(first) = first_token(expression).map_err(StepError::Lex)? else {
        return Ok((None, String::new()));
    };
    match first.kind {
        Kind::Str | Kind::InStr => {}
        Kind::OpenParen | Kind::CloseParen => return Ok((None, expression.to_owned())),
        _ => return Err(StepError::NoExpression(expression.to_owned())),
    }
    // The kind and text of the token after `consumed` bytes; the end is a token with no text.
    let token_after = |consumed: usize| {
        let rest = &expression[consumed..];
        first_token(rest)
            .map_err(|e| StepError::Unrecognized(lexer::locate(expression, rest, e)))
            .map(|t| t.map_or((None, String::new(), 0), |t| (Some(t.kind), t.text, t.len)))
    };
    let mut name = first.text;
    let (second_kind, second, second_len) = token_after(first.len)?;
    let is_op = matches!(second_kind, Some(Kind::OpEq | Kind::OpComp | Kind::OpIn));
    // The operator's class; `None` for an `in` split off the name, which is checked no further.
    let (op_kind, op, value_kind, value) = if is_op {
        let (value_kind, value, _) = token_after(first.len + second_len)?;
        (second_kind, second, value_kind, value)
    } else if name.len() > 3 && name.ends_with("in") {
        name.truncate(name.len() - 2);
        (None, "in".to_owned(), second_kind, second)
    } else {
        return Err(StepError::NonOperator { name, next: second });
    };
    if !value_kind.is_some_and(Kind::is_value) {
        return Err(StepError::InvalidValue { name, op, value });
    }
    check_op_value(op_kind, &op, value_kind, &value)?;
    let rest = expression.replacen(&format!("{name}{op}{value}"), "", 1);
    let term = Term {
        name,
        op: op.trim().to_owned(),
        value: value.trim().to_owned(),
    };
    Ok((Some(term), rest))
}

/// The operator may take the value (anax `validOpValuePair`).
fn check_op_value(
    op_kind: Option<Kind>,
    op: &str,
    value_kind: Option<Kind>,
    value: &str,
) -> Result<(), StepError> {
    match op_kind {
        Some(Kind::OpEq) if value_kind == Some(Kind::VersRange) => Err(StepError::RangeNeedsIn),
        Some(Kind::OpEq) if value_kind == Some(Kind::ListStr) => Err(StepError::ListNeedsIn),
        Some(Kind::OpComp) if go_parse_float(value).is_none() => Err(StepError::NotNumeric {
            op: op.to_owned(),
            value: value.to_owned(),
        }),
        Some(Kind::OpIn) => match value_kind {
            Some(Kind::VersRange) => VersionRange::parse(value)
                .map(drop)
                .map_err(StepError::Range),
            Some(Kind::ListStr | Kind::QuoteStr | Kind::Vers) => Ok(()),
            _ => Err(StepError::InNeedsListOrVersion),
        },
        _ => Ok(()),
    }
}

/// The control operator or parenthesis at the start of `expression` and what is left after it
/// (the first occurrence of its text cut out, as for terms).
pub fn next_operator(expression: &str) -> Result<(Control, String), StepError> {
    if expression.trim().is_empty() {
        return Ok((Control::End, String::new()));
    }
    let Some(token) = first_token(expression).map_err(StepError::Lex)? else {
        return Ok((Control::End, String::new()));
    };
    let control = match token.kind {
        Kind::CloseParen => Control::Close,
        Kind::OpenParen => Control::Open,
        Kind::AndOp => Control::And,
        Kind::OrOp => Control::Or,
        _ => return Err(StepError::NoOperator(expression.to_owned())),
    };
    Ok((control, expression.replacen(&token.text, "", 1)))
}

/// A refusal as anax's `ConstraintExpression.Validate` words it: its plugin registry asks each
/// constraint language in turn and, when none owns the array (the text language disowns what
/// it refuses), names the array as Go prints a `[]string` and adds each plugin's error after
/// a space, ending with a newline.
pub fn registry_message<S: AsRef<str>>(constraints: &[S], error: &ConstraintError) -> String {
    let list: Vec<&str> = constraints.iter().map(AsRef::as_ref).collect();
    format!(
        "constraint language [{}] is not supported.  {error}\n",
        list.join(" ")
    )
}

/// Checks every constraint of an array (anax's `Validate`); the first refusal is returned.
pub fn validate<S: AsRef<str>>(constraints: &[S]) -> Result<(), ConstraintError> {
    constraints
        .iter()
        .try_for_each(|c| validate_one(c.as_ref()))
}

fn validate_one(constraint: &str) -> Result<(), ConstraintError> {
    let mut depth: isize = 0;
    let mut rest = constraint.to_owned();
    while !rest.is_empty() {
        let (term, after) =
            next_expression(&rest).map_err(|cause| ConstraintError::Expression {
                constraint: constraint.to_owned(),
                cause,
            })?;
        rest = after;
        loop {
            let (control, after) = match next_operator(&rest) {
                Ok(found) => found,
                Err(cause) if term.is_some() => {
                    return Err(ConstraintError::Operator {
                        constraint: constraint.to_owned(),
                        cause,
                    });
                }
                // After a parenthesis anax lets the error pass: the next step reads a term.
                Err(_) => break,
            };
            rest = after;
            match control {
                Control::Open => depth += 1,
                Control::Close => depth -= 1,
                _ => break,
            }
            if depth.unsigned_abs() > MAX_DEPTH {
                return Err(ConstraintError::TooDeep);
            }
        }
    }
    match depth {
        0 => Ok(()),
        _ => Err(ConstraintError::UnmatchedParentheses),
    }
}

/// One constraint as evaluation reads it: OR over AND groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disjunction(pub Vec<Vec<Node>>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Term(Term),
    Group(Disjunction),
}

#[derive(Default)]
struct Frame {
    any_of: Vec<Vec<Node>>,
    all_of: Vec<Node>,
}

impl Frame {
    fn finish(mut self) -> Disjunction {
        self.any_of.push(self.all_of);
        Disjunction(self.any_of)
    }
}

/// Reads a constraint the way anax's evaluation does (`parseConstraintExpression`): OR closes
/// the current AND group, `(` right after a term starts a group, `)` or the end closes one and
/// at the outermost level ends the reading (what follows is ignored). Validate first: this walk
/// trusts what validation checked.
pub fn parse(constraint: &str) -> Result<Disjunction, StepError> {
    let mut stack = vec![Frame::default()];
    let mut rest = constraint.to_owned();
    loop {
        let (term, after) = next_expression(&rest)?;
        if let Some(term) = term {
            top(&mut stack).all_of.push(Node::Term(term));
        }
        let (mut control, after) = next_operator(&after)?;
        rest = after;
        if control == Control::Open {
            stack.push(Frame::default());
            continue;
        }
        loop {
            match control {
                Control::Or => {
                    let frame = top(&mut stack);
                    let group = std::mem::take(&mut frame.all_of);
                    frame.any_of.push(group);
                }
                Control::Close | Control::End => {
                    let done = stack.pop().unwrap_or_default().finish();
                    if stack.is_empty() {
                        return Ok(done);
                    }
                    top(&mut stack).all_of.push(Node::Group(done));
                    (control, rest) = next_operator(&rest)?;
                    continue;
                }
                // After a group anax takes `(` like AND: no group starts.
                Control::And | Control::Open => {}
            }
            break;
        }
    }
}

fn top(stack: &mut [Frame]) -> &mut Frame {
    stack
        .last_mut()
        .expect("the outermost frame is popped only to return")
}

pub use gofloat::go_parse_float;

/// Go's `strconv.ParseBool`.
pub fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
