//! Error texts with their causes: an error's own text often hides what went wrong
//! (`error sending request for url (…)`), its innermost cause says it (`Connection refused`,
//! a DNS failure, a certificate problem).

/// `error: cause: cause…`, leaving out a cause whose text is already shown.
pub fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let part = next.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = next.source();
    }
    text
}

/// The innermost cause's text alone.
pub fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Chain {
        text: String,
        #[source]
        source: Option<Box<Chain>>,
    }

    fn chain(texts: &[&str]) -> Chain {
        let mut error = None;
        for text in texts.iter().rev() {
            error = Some(Chain {
                text: text.to_string(),
                source: error.map(Box::new),
            });
        }
        error.unwrap()
    }

    #[test]
    fn causes_are_shown_once() {
        let e = chain(&[
            "error sending request",
            "client error (Connect)",
            "Connection refused",
        ]);
        assert_eq!(
            with_causes(&e),
            "error sending request: client error (Connect): Connection refused"
        );
        assert_eq!(innermost(&e), "Connection refused");
        let repeated = chain(&[
            "cannot read x: No such file (os error 2)",
            "No such file (os error 2)",
        ]);
        assert_eq!(
            with_causes(&repeated),
            "cannot read x: No such file (os error 2)"
        );
    }
}
