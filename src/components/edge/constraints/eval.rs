//! Deciding constraints against properties, as anax does (`propertyInArray` and the
//! `RequiredProperty` walk), and two policies' compatibility (`policy.Are_Compatible`, without
//! the agreement protocols).
//!
//! A term is decided by the first property with its name whose value is a number, a boolean or
//! a string; a property of another JSON kind, or a boolean tested with `in`, is passed over and
//! the next one with the name is tried. No such property: false, even for `!=`.

use serde_json::Value;

use super::{ConstraintError, Disjunction, Node, Term, go_parse_bool, go_parse_float, parse};
use crate::components::edge::properties::{LIST_TYPE, Property, VERSION_TYPE, go_value};
use crate::components::edge::version::{VersionRange, is_version_expression, is_version_string};

/// Whether the properties satisfy every constraint of the array (ANDed); an empty array is
/// satisfied by anything. Constraints are validated first: an invalid one is the error.
pub fn satisfied<S: AsRef<str>>(
    constraints: &[S],
    properties: &[Property],
) -> Result<bool, ConstraintError> {
    evaluate(constraints, properties).map(|answer| answer.is_ok())
}

/// anax's `ConstraintExpression.IsSatisfiedBy` after validation: `Ok(Ok(()))` when satisfied,
/// `Ok(Err(reason))` when not, with anax's reason: the parse's error (validation lets through
/// constraints the parse refuses, `()a != 1`), or which required property or properties were
/// not found among the available ones. `Err` for an invalid constraint, and where anax
/// panics: a property value that is a lone `"` ([`ConstraintError::LoneQuote`]).
pub fn evaluate<S: AsRef<str>>(
    constraints: &[S],
    properties: &[Property],
) -> Result<Result<(), String>, ConstraintError> {
    super::validate(constraints)?;
    // anax reads every constraint before deciding any.
    let mut trees = Vec::with_capacity(constraints.len());
    for constraint in constraints {
        match parse(constraint.as_ref()) {
            Ok(tree) => trees.push(tree),
            Err(cause) => return Ok(Err(cause.to_string())),
        }
    }
    for tree in &trees {
        if let Err(reason) = any_of(tree, properties)? {
            return Ok(Err(reason));
        }
    }
    Ok(Ok(()))
}

/// Some AND group holds.
pub fn holds(tree: &Disjunction, properties: &[Property]) -> Result<bool, ConstraintError> {
    any_of(tree, properties).map(|answer| answer.is_ok())
}

/// anax's OR: the first group that holds, else the whole OR as not found.
fn any_of(
    tree: &Disjunction,
    properties: &[Property],
) -> Result<Result<(), String>, ConstraintError> {
    for group in &tree.0 {
        if all_of(group, properties)?.is_ok() {
            return Ok(Ok(()));
        }
    }
    Ok(Err(format!(
        "The required properties {} were not found in the available properties {}",
        show_any(tree),
        show_properties(properties)
    )))
}

/// anax's AND: the first term that does not hold, or the first group's reason.
fn all_of(nodes: &[Node], properties: &[Property]) -> Result<Result<(), String>, ConstraintError> {
    for node in nodes {
        match node {
            Node::Term(term) if !term_holds(term, properties)? => {
                return Ok(Err(format!(
                    "The required property '{} {} {}' were not found in the available properties {}",
                    term.name,
                    term.op,
                    term.value,
                    show_properties(properties)
                )));
            }
            Node::Term(_) => {}
            Node::Group(inner) => {
                if let Err(reason) = any_of(inner, properties)? {
                    return Ok(Err(reason));
                }
            }
        }
    }
    Ok(Ok(()))
}

/// An OR as anax displays it: its groups joined by `, `.
fn show_any(tree: &Disjunction) -> String {
    let groups: Vec<String> = tree.0.iter().map(|group| show_all(group)).collect();
    groups.join(", ")
}

/// An AND as anax displays it: terms `nameopvalue`, groups in parentheses, joined by ` AND `.
fn show_all(nodes: &[Node]) -> String {
    let shown: Vec<String> = (nodes.iter())
        .map(|node| match node {
            Node::Term(t) => format!("{}{}{}", t.name, t.op, t.value),
            Node::Group(inner) => format!("({})", show_any(inner)),
        })
        .collect();
    shown.join(" AND ")
}

/// The properties as anax lists them: `name=value` joined by `, ` (Go's `%v`).
fn show_properties(properties: &[Property]) -> String {
    let shown: Vec<String> = (properties.iter())
        .map(|p| {
            let value = p.value.as_ref().map_or("<nil>".to_owned(), go_value);
            format!("{}={value}", p.name)
        })
        .collect();
    shown.join(", ")
}

/// One term against the property list (anax `propertyInArray`): the first property with its
/// name whose value is a number, a boolean or a string decides; a property of another JSON
/// kind, or a boolean tested with `in`, is passed over. No such property: false, even for `!=`.
pub fn term_holds(term: &Term, properties: &[Property]) -> Result<bool, ConstraintError> {
    for property in properties.iter().filter(|p| p.name == term.name) {
        let decided = match &property.value {
            Some(Value::Number(n)) => Some(number_holds(n.as_f64().unwrap_or(f64::NAN), term)),
            Some(Value::Bool(b)) => bool_holds(*b, term),
            Some(Value::String(s)) => Some(string_holds(property, s, term)?),
            _ => None,
        };
        if let Some(decided) = decided {
            return Ok(decided);
        }
    }
    Ok(false)
}

/// `<`, `>`, `<=`, `>=`, `!=` compare; any other operator (`=`, `==`, `in`, `=<`, `=>`) is
/// equality. A value that is not a number (Go's `ParseFloat`) is false.
fn number_holds(property: f64, term: &Term) -> bool {
    let Some(value) = go_parse_float(&term.value) else {
        return false;
    };
    match term.op.as_str() {
        "<" => property < value,
        ">" => property > value,
        "<=" => property <= value,
        ">=" => property >= value,
        "!=" => property != value,
        _ => property == value,
    }
}

/// A value that is not a Go boolean is false; then `=`, `==`, `!=` compare, `in` decides
/// nothing (`None`: the next property is tried) and other operators are false.
fn bool_holds(property: bool, term: &Term) -> Option<bool> {
    let Some(value) = go_parse_bool(&term.value) else {
        return Some(false);
    };
    match term.op.as_str() {
        "!=" => Some(property != value),
        "=" | "==" => Some(property == value),
        "in" => None,
        _ => Some(false),
    }
}

fn string_holds(property: &Property, text: &str, term: &Term) -> Result<bool, ConstraintError> {
    let have = trim_spaces(strip_quotes(text, property)?);
    let want = trim_spaces(strip_quotes(&term.value, property)?);
    let is_list = property.r#type == LIST_TYPE;
    Ok(match term.op.as_str() {
        "!=" if is_list => !list_contains(want, have, property)?,
        "!=" => have != want,
        "in" if property.r#type == VERSION_TYPE
            || (is_version_string(have) && is_version_expression(want)) =>
        {
            VersionRange::parse(want).is_ok_and(|range| range.contains(have).unwrap_or(false))
        }
        // Each item is trimmed and unquoted here and again in `list_contains`, as in anax.
        "in" if is_list => {
            for item in have.split(',') {
                if list_contains(strip_quotes(trim_spaces(item), property)?, want, property)? {
                    return Ok(true);
                }
            }
            false
        }
        "in" => list_contains(have, want, property)?,
        // An untyped "toad,cat,dog" equals cat: the value is looked for among the items.
        "=" | "==" => list_contains(want, have, property)? || have == want,
        _ => false,
    })
}

/// Whether `item` (trimmed, unquoted) is one of the comma-separated `list`'s items (each
/// trimmed, then unquoted, in order until one matches), anax `stringListContains`.
fn list_contains(item: &str, list: &str, property: &Property) -> Result<bool, ConstraintError> {
    let item = strip_quotes(trim_spaces(item), property)?;
    for candidate in list.split(',') {
        if strip_quotes(trim_spaces(candidate), property)? == item {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Surrounding double quotes off (anax `removeQuotes`). A lone `"` is where anax slices
/// backwards and panics; here it is an error naming the property.
fn strip_quotes<'a>(text: &'a str, property: &Property) -> Result<&'a str, ConstraintError> {
    match text {
        "\"" => Err(ConstraintError::LoneQuote {
            name: property.name.clone(),
            value: property.value.as_ref().map_or(String::new(), go_value),
        }),
        _ if text.len() >= 2 && text.starts_with('"') && text.ends_with('"') => {
            Ok(&text[1..text.len() - 1])
        }
        _ => Ok(text),
    }
}

/// Spaces, and only spaces, off both ends (anax `removeSpaces`).
fn trim_spaces(text: &str) -> &str {
    text.trim_matches(' ')
}

/// One side of a compatibility check: what it offers and what it asks of the other side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySide {
    pub properties: Vec<Property>,
    pub constraints: Vec<String>,
}

/// Why two sides are not compatible. The wording is cvo's: anax's depends on the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incompatible {
    #[error("the {side} constraints are not valid: {error}")]
    Invalid {
        side: &'static str,
        error: ConstraintError,
    },
    #[error("the {side} constraints are not satisfied by the {other} properties")]
    Unsatisfied {
        side: &'static str,
        other: &'static str,
    },
}

/// Bidirectional compatibility (`policy.Are_Compatible` for properties and constraints): the
/// consumer's constraints (deployment or management policy) hold for the producer's properties
/// (the node), and the producer's constraints hold for the consumer's properties.
pub fn are_compatible(producer: &PolicySide, consumer: &PolicySide) -> Result<(), Incompatible> {
    let directions = [
        (consumer, producer, "consumer", "producer"),
        (producer, consumer, "producer", "consumer"),
    ];
    for (asking, offering, side, other) in directions {
        match satisfied(&asking.constraints, &offering.properties) {
            Ok(true) => {}
            Ok(false) => return Err(Incompatible::Unsatisfied { side, other }),
            Err(error) => return Err(Incompatible::Invalid { side, error }),
        }
    }
    Ok(())
}
