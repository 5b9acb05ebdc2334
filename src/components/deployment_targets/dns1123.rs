//! Kubernetes' DNS-1123 name rules, with apimachinery's messages (`validation.IsDNS1123Label`
//! and `IsDNS1123Subdomain`, k8s.io/apimachinery v0.34): an empty list means valid.

/// A label's longest length.
pub const LABEL_MAX_LENGTH: usize = 63;
/// A subdomain's longest length.
pub const SUBDOMAIN_MAX_LENGTH: usize = 253;

const LABEL_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// What makes `value` no DNS-1123 label (`my-name`).
pub fn label_errors(value: &str) -> Vec<String> {
    let mut errors = length_error(value, LABEL_MAX_LENGTH);
    if !is_label(value) {
        // A subdomain that is no label has dots; apimachinery says just that.
        errors.push(match is_subdomain(value) {
            true => "must not contain dots".to_owned(),
            false => regex_error(LABEL_MESSAGE, LABEL_FORMAT, &["my-name", "123-abc"]),
        });
    }
    errors
}

/// What makes `value` no DNS-1123 subdomain (`example.com`).
pub fn subdomain_errors(value: &str) -> Vec<String> {
    let mut errors = length_error(value, SUBDOMAIN_MAX_LENGTH);
    if !is_subdomain(value) {
        let format = format!("{LABEL_FORMAT}(\\.{LABEL_FORMAT})*");
        errors.push(regex_error(SUBDOMAIN_MESSAGE, &format, &["example.com"]));
    }
    errors
}

/// Lengths are in bytes, as Go's `len`.
fn length_error(value: &str, max: usize) -> Vec<String> {
    match value.len() > max {
        true => vec![format!("must be no more than {max} characters")],
        false => Vec::new(),
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_label(value: &str) -> bool {
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = value.as_bytes();
    (bytes.first().is_some_and(alphanumeric) && bytes.last().is_some_and(alphanumeric))
        && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
}

/// Labels joined by dots (no length limit on each, as the regular expression has none).
fn is_subdomain(value: &str) -> bool {
    value.split('.').all(is_label)
}

/// apimachinery's `RegexError`, double space before `or` included.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected messages printed by apimachinery v0.34.4.
    const LABEL_REGEX: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN_REGEX: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn labels_and_subdomains_with_apimachinery_messages() {
        let long_label = "abcde".repeat(13);
        let long_subdomain = format!("{}a", "a.".repeat(127));
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("kubernetes-environment", &[], &[]),
            ("0-9", &[], &[]),
            ("Kubernetes-environment", &[LABEL_REGEX], &[SUBDOMAIN_REGEX]),
            ("", &[LABEL_REGEX], &[SUBDOMAIN_REGEX]),
            ("-a", &[LABEL_REGEX], &[SUBDOMAIN_REGEX]),
            ("a-", &[LABEL_REGEX], &[SUBDOMAIN_REGEX]),
            ("a_b", &[LABEL_REGEX], &[SUBDOMAIN_REGEX]),
            ("a..b", &[LABEL_REGEX], &[SUBDOMAIN_REGEX]),
            ("a.b", &["must not contain dots"], &[]),
            (&long_label, &["must be no more than 63 characters"], &[]),
            (
                &long_subdomain,
                &[
                    "must be no more than 63 characters",
                    "must not contain dots",
                ],
                &["must be no more than 253 characters"],
            ),
        ];
        for (value, label, subdomain) in cases {
            assert_eq!(label_errors(value), *label, "{value:?}");
            assert_eq!(subdomain_errors(value), *subdomain, "{value:?}");
        }
    }
}
