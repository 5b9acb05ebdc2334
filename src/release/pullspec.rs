//! Image pull specs: `[registry/]repository[:tag][@sha256:<64 hex>]`, parsed as far as the
//! release commands need (which repository, which tag, which digest), not validated as a
//! registry client would.

use std::fmt;

/// A parsed pull spec.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pullspec {
    /// Everything before the tag or digest: `quay.io/openshift-release-dev/ocp-v4.0-art-dev`.
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<hex>`.
    pub digest: Option<String>,
}

impl Pullspec {
    pub fn parse(text: &str) -> Result<Pullspec, String> {
        let bare = text.strip_prefix("docker://").unwrap_or(text);
        let (rest, digest) = match bare.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (bare, None),
        };
        if let Some(digest) = digest {
            let hex = digest.strip_prefix("sha256:").unwrap_or("");
            if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(format!(
                    "{text:?} is not a valid image reference: the digest must be sha256: and 64 lowercase hex digits"
                ));
            }
        }
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[last_slash..].rsplit_once(':') {
            Some((_, tag)) => (&rest[..rest.len() - tag.len() - 1], Some(tag)),
            None => (rest, None),
        };
        let bad_tag = tag.is_some_and(|t| {
            t.is_empty()
                || t.len() > 128
                || t.starts_with(['.', '-'])
                || !t
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
        if repository.is_empty()
            || repository.starts_with('/')
            || repository.ends_with('/')
            || repository.contains("//")
            || repository.contains(char::is_whitespace)
            || bad_tag
        {
            return Err(format!("{text:?} is not a valid image reference"));
        }
        Ok(Pullspec {
            repository: repository.to_string(),
            tag: tag.map(str::to_string),
            digest: digest.map(str::to_string),
        })
    }

    /// The same repository at `digest` (the tag dropped): what a release references.
    pub fn with_digest(&self, digest: &str) -> Pullspec {
        Pullspec {
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest.to_string()),
        }
    }

    /// The same repository with `tag` (no digest).
    pub fn with_tag(&self, tag: &str) -> Pullspec {
        Pullspec {
            repository: self.repository.clone(),
            tag: Some(tag.to_string()),
            digest: None,
        }
    }

    /// The registry host (`quay.io`, `127.0.0.1:5000`), when the repository names one.
    pub fn registry(&self) -> Option<&str> {
        let (first, _) = self.repository.split_once('/')?;
        (first.contains(['.', ':']) || first == "localhost").then_some(first)
    }
}

impl fmt::Display for Pullspec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// The digest of a pull spec, or the pull spec itself when it has none (oc's `digestOrRef`).
pub fn digest_or_ref(text: &str) -> String {
    match Pullspec::parse(text) {
        Ok(Pullspec {
            digest: Some(digest),
            ..
        }) => digest,
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pullspecs() {
        let hex = "a".repeat(64);
        let p = Pullspec::parse(&format!("quay.io/a/b@sha256:{hex}")).unwrap();
        assert_eq!(p.repository, "quay.io/a/b");
        assert_eq!(p.tag, None);
        assert_eq!(p.digest.as_deref(), Some(format!("sha256:{hex}").as_str()));
        assert_eq!(p.registry(), Some("quay.io"));

        let p = Pullspec::parse("127.0.0.1:5000/openshift/release:4.18.0").unwrap();
        assert_eq!(p.repository, "127.0.0.1:5000/openshift/release");
        assert_eq!(p.tag.as_deref(), Some("4.18.0"));
        assert_eq!(p.registry(), Some("127.0.0.1:5000"));
        assert_eq!(p.to_string(), "127.0.0.1:5000/openshift/release:4.18.0");
        assert_eq!(
            p.with_digest(&format!("sha256:{hex}")).to_string(),
            format!("127.0.0.1:5000/openshift/release@sha256:{hex}")
        );

        let p = Pullspec::parse("localhost:5000/x").unwrap();
        assert_eq!((p.repository.as_str(), p.tag), ("localhost:5000/x", None));
        assert_eq!(Pullspec::parse("ubuntu").unwrap().registry(), None);
        let both = Pullspec::parse(&format!("docker://r.io/x:t@sha256:{hex}")).unwrap();
        assert_eq!(both.tag.as_deref(), Some("t"));
        assert!(both.digest.is_some());

        for bad in [
            "",
            "quay.io/a@sha256:abc",
            "quay.io/a:",
            "quay.io/a:-x",
            "/a",
            "a//b",
            "a b",
        ] {
            assert!(Pullspec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(digest_or_ref("quay.io/a:t"), "quay.io/a:t");
        assert_eq!(
            digest_or_ref(&format!("quay.io/a@sha256:{hex}")),
            format!("sha256:{hex}")
        );
    }
}
