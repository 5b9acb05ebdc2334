//! The "atomic container signature" (containers/image's simple signing format) that a release
//! signature signs, and library-go's `verifyAtomicContainerSignature` checks of it:
//!
//! ```json
//! {"critical": {"type": "atomic container signature",
//!               "image": {"docker-manifest-digest": "sha256:..."},
//!               "identity": {"docker-reference": "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64"}},
//!  "optional": {"creator": "...", "timestamp": 1700000000}}
//! ```

use serde::{Deserialize, Serialize};

/// The signature's `type`.
pub const SIGNATURE_TYPE: &str = "atomic container signature";

/// An atomic container signature. Unknown fields are refused, as library-go's decoder
/// (`DisallowUnknownFields`) refuses them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtomicSignature {
    #[serde(default)]
    pub critical: Critical,
    #[serde(default)]
    pub optional: Optional,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Critical {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub image: Image,
    #[serde(default)]
    pub identity: Identity,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    #[serde(default, rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    #[serde(default, rename = "docker-reference")]
    pub docker_reference: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Optional {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub creator: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timestamp: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Why a signed document does not authenticate a digest (library-go's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AtomicError {
    #[error("the signature is not valid JSON: {0}")]
    NotJson(String),
    #[error("signature is not the correct type")]
    WrongType,
    #[error("signature must have an identity")]
    NoIdentity,
    #[error("signature digest does not match")]
    DigestMismatch,
}

impl AtomicSignature {
    /// A signature of `digest` for the image `reference`, as `cvo payload sign` makes it.
    pub fn new(digest: &str, reference: &str, creator: &str, timestamp: i64) -> Self {
        AtomicSignature {
            critical: Critical {
                type_: SIGNATURE_TYPE.into(),
                image: Image {
                    docker_manifest_digest: digest.into(),
                },
                identity: Identity {
                    docker_reference: reference.into(),
                },
            },
            optional: Optional {
                creator: creator.into(),
                timestamp,
            },
        }
    }
}

/// `verifyAtomicContainerSignature`: whether `content` authenticates `digest`.
pub fn check(content: &[u8], digest: &str) -> Result<AtomicSignature, AtomicError> {
    let signature: AtomicSignature =
        serde_json::from_slice(content).map_err(|e| AtomicError::NotJson(e.to_string()))?;
    if signature.critical.type_ != SIGNATURE_TYPE {
        return Err(AtomicError::WrongType);
    }
    if signature.critical.identity.docker_reference.is_empty() {
        return Err(AtomicError::NoIdentity);
    }
    if signature.critical.image.docker_manifest_digest != digest {
        return Err(AtomicError::DigestMismatch);
    }
    Ok(signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:817a12c32a39bbe394944ba49de563e085f1d3c5266eb8e9723256bc4448680e";

    #[test]
    fn checks_in_library_gos_order_with_its_messages() {
        let good = format!(
            r#"{{"critical":{{"type":"atomic container signature","image":{{"docker-manifest-digest":"{DIGEST}"}},"identity":{{"docker-reference":"quay.io/o/r:4.18"}}}},"optional":{{"creator":"x","timestamp":1}}}}"#
        );
        let cases: Vec<(&str, String, Result<(), AtomicError>)> = vec![
            ("valid", good.clone(), Ok(())),
            (
                "no optional",
                good.replace(r#","optional":{"creator":"x","timestamp":1}"#, ""),
                Ok(()),
            ),
            (
                "unknown field",
                good.replace(r#""optional":{"#, r#""extra":1,"optional":{"#),
                Err(AtomicError::NotJson(String::new())),
            ),
            (
                "type",
                good.replace("atomic container", "other"),
                Err(AtomicError::WrongType),
            ),
            (
                "identity",
                good.replace("quay.io/o/r:4.18", ""),
                Err(AtomicError::NoIdentity),
            ),
            (
                "digest",
                good.replace("sha256:8", "sha256:9"),
                Err(AtomicError::DigestMismatch),
            ),
            (
                "not JSON",
                "nope".into(),
                Err(AtomicError::NotJson(String::new())),
            ),
        ];
        for (name, content, want) in cases {
            let got = check(content.as_bytes(), DIGEST).map(|_| ());
            match (&got, &want) {
                (Err(AtomicError::NotJson(m)), Err(AtomicError::NotJson(_))) => {
                    assert!(!m.is_empty(), "{name}")
                }
                _ => assert_eq!(got, want, "{name}"),
            }
        }
        assert_eq!(
            AtomicError::NotJson("x".into()).to_string(),
            "the signature is not valid JSON: x"
        );
    }

    #[test]
    fn what_sign_makes_is_what_check_accepts() {
        let made = AtomicSignature::new(DIGEST, "quay.io/o/r:4.18", "cvo", 7);
        let json = serde_json::to_vec(&made).unwrap();
        assert_eq!(check(&json, DIGEST).unwrap(), made);
    }
}
