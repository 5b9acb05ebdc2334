//! "Did you mean": the one place that decides whether a name a user wrote is a near miss of a
//! valid one. Used by `cvo validate` for annotation values and by the command line for flag and
//! file values, so both judge a typo the same way.

/// The closest candidate: the same name in other case, else the only one it is the start of,
/// else one a few edits away, else the only one it abbreviates by leaving letters out
/// (`self-managed-ha`); all case-insensitive.
pub fn suggest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if let Some(same) = candidates.iter().find(|c| c.eq_ignore_ascii_case(name)) {
        return Some(same);
    }
    let lower = name.to_lowercase();
    let extending: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| lower.chars().count() >= 4 && c.to_lowercase().starts_with(&lower))
        .collect();
    if let [only] = extending[..] {
        return Some(only);
    }
    let limit = (name.chars().count() / 3).max(2);
    let near = candidates
        .iter()
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    if near.is_some() {
        return near;
    }
    let abbreviated: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| lower.chars().count() >= 4 && abbreviates(&lower, &c.to_lowercase()))
        .collect();
    match abbreviated[..] {
        [only] => Some(only),
        _ => None,
    }
}

/// Whether `short` is `long` with letters left out, starting with the same letter.
fn abbreviates(short: &str, long: &str) -> bool {
    if short.chars().next() != long.chars().next() {
        return false;
    }
    let mut rest = long.chars();
    short.chars().all(|c| rest.any(|l| l == c))
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// ` (did you mean X?)` when `value` is a near miss of one of `valid`, else nothing.
pub fn did_you_mean(value: &str, valid: &[&str]) -> String {
    suggest(value, valid).map_or_else(String::new, |near| {
        format!(" (did you mean {}?)", shown(near))
    })
}

/// The message for a value that is not one of `valid`: what it is, the near miss if there is
/// one, and every valid value. `what` names the kind of value ("cluster profile").
pub fn unknown_value(what: &str, value: &str, valid: &[&str]) -> String {
    format!(
        "unknown {what} {value:?}{}; valid values: {}",
        did_you_mean(value, valid),
        shown_list(valid)
    )
}

/// Values as a list shows them: comma-separated, the empty string quoted.
pub fn shown_list(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| shown(v))
        .collect::<Vec<_>>()
        .join(", ")
}

fn shown(value: &str) -> String {
    if value.is_empty() {
        "\"\"".to_string()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let caps = ["Storage", "Console", "MachineAPI"];
        let cases: &[(&str, Option<&str>)] = &[
            ("storage", Some("Storage")),
            ("CONSOLE", Some("Console")),
            ("Consol", Some("Console")),
            ("Consle", Some("Console")),
            ("MachinAPI", Some("MachineAPI")),
            ("Mach", Some("MachineAPI")),
            ("Networking", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(suggest(name, &caps), *want, "{name}");
        }
        let profiles = [
            "self-managed-high-availability",
            "single-node-developer",
            "ibm-cloud-managed",
            "hypershift",
        ];
        assert_eq!(
            suggest("self-managed-ha", &profiles),
            Some("self-managed-high-availability")
        );
        assert_eq!(
            suggest("single-node", &profiles),
            Some("single-node-developer")
        );
        assert_eq!(suggest("aws", &profiles), None);
        assert_eq!(suggest("snd", &profiles), None, "too short to abbreviate");
        assert_eq!(suggest("hyper", &profiles), Some("hypershift"));
        assert!(abbreviates("mapi", "machineapi"));
        assert!(!abbreviates("api", "machineapi"));
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("é", "e"), 1);
    }

    #[test]
    fn unknown_value_messages() {
        assert_eq!(
            unknown_value("feature set", "TechPreview", &["", "TechPreviewNoUpgrade"]),
            r#"unknown feature set "TechPreview" (did you mean TechPreviewNoUpgrade?); valid values: "", TechPreviewNoUpgrade"#
        );
        assert_eq!(
            unknown_value("capability", "Foo", &["Console"]),
            r#"unknown capability "Foo"; valid values: Console"#
        );
    }
}
