//! Verifying one release digest (library-go's `releaseVerifier.Verify`): every keyring of the
//! verifier must have signed it, through a signature in the containers/image store layout
//! (`<store>/sha256=<hex>/signature-<n>`, `n` from 1, at most 9 looked at). The caller reads
//! the stores and offers each signature to a [`Verification`]; this module does no I/O.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::atomic;
use super::openpgp::{self, Keyring};

/// How many signatures of one store are looked at (library-go's `maxSignatureSearch` is 10;
/// its loop reads `signature-1` to `signature-9`).
pub const MAX_SIGNATURES: u32 = 9;

/// `validReleaseDigest`.
static VALID_DIGEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$").expect("a valid regex")
});

/// Why a digest is not verified (library-go's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the release verifier is incorrectly configured, unable to verify digests")]
    NotConfigured,
    #[error("release images that are not accessed via digest cannot be verified")]
    NoDigest,
    #[error("the provided release image digest has an invalid format: {0:?}")]
    BadDigest(String),
    /// Keyrings without a valid signature, and what went wrong with each signature tried.
    #[error("unable to verify {digest} against keyrings: {}", keyrings.join(", "))]
    Unverified {
        digest: String,
        keyrings: Vec<String>,
        errors: Vec<String>,
    },
}

/// Checks a digest before any store is read.
pub fn check_digest(digest: &str) -> Result<(), VerifyError> {
    if digest.is_empty() {
        return Err(VerifyError::NoDigest);
    }
    if !VALID_DIGEST.is_match(digest) {
        return Err(VerifyError::BadDigest(digest.into()));
    }
    Ok(())
}

/// The URL of signature `n` of `digest` in `store` (`<store>/sha256=<hex>/signature-<n>`).
pub fn signature_url(store: &str, digest: &str, n: u32) -> String {
    let segment = digest.replacen(':', "=", 1);
    format!("{}/{segment}/signature-{n}", store.trim_end_matches('/'))
}

/// The signatures of `digest` among the `binaryData` entries of the signature ConfigMaps
/// (`openshift-config-managed`, label `release.openshift.io/verification-signatures`: what
/// `oc adm release mirror` writes for disconnected clusters), keyed `sha256-HEX-N` (library-go's
/// `digestToKeyPrefix`: a ConfigMap key has no `:`), in key order.
pub fn signatures_in_config_maps<'a>(
    digest: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<Vec<u8>> {
    let Some((algorithm, hash)) = digest.split_once(':') else {
        return Vec::new();
    };
    let prefix = format!("{algorithm}-{hash}");
    let mut found: Vec<(&str, &[u8])> = (entries.into_iter())
        .filter(|(key, _)| {
            key.strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        .collect();
    found.sort_by_key(|(key, _)| *key);
    found.into_iter().map(|(_, data)| data.to_vec()).collect()
}

/// The signature ConfigMap a verifying CVO writes (library-go's `configmap.Store.Store`), in
/// [`super::config::SIGNATURES_NAMESPACE`] with the [`super::config::SIGNATURES_LABEL`] label.
pub const SIGNATURES_MANAGED_NAME: &str = "signatures-managed";

/// How many digests it keeps (library-go's `maxSignatureCacheSize`).
pub const MAX_PERSISTED_DIGESTS: usize = 64;

/// The `binaryData` of `signatures-managed` once `digest`'s verified `signatures` are added to
/// `existing`: keyed `sha256-HEX-N`, `N` from 0 as library-go writes them, replacing what it
/// held for that digest; at most [`MAX_PERSISTED_DIGESTS`] digests (the others' entries are
/// dropped, the greatest keys first). Nothing to add (no `:` in the digest, no signature) leaves
/// `existing` as it is.
pub fn persisted_signatures(
    existing: &BTreeMap<String, Vec<u8>>,
    digest: &str,
    signatures: &[Vec<u8>],
) -> BTreeMap<String, Vec<u8>> {
    let Some((algorithm, hash)) = digest.split_once(':') else {
        return existing.clone();
    };
    if signatures.is_empty() {
        return existing.clone();
    }
    let prefix = format!("{algorithm}-{hash}");
    let digest_of = |key: &str| key.rsplit_once('-').map(|(d, _)| d.to_string());
    let mut kept: BTreeMap<String, Vec<u8>> = (existing.iter())
        .filter(|(key, _)| digest_of(key).as_deref() != Some(prefix.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut digests: Vec<String> = kept.keys().filter_map(|k| digest_of(k)).collect();
    digests.dedup();
    while digests.len() >= MAX_PERSISTED_DIGESTS {
        let Some(dropped) = digests.pop() else { break };
        kept.retain(|key, _| digest_of(key).as_deref() != Some(dropped.as_str()));
    }
    for (n, signature) in signatures.iter().enumerate() {
        kept.insert(format!("{prefix}-{n}"), signature.clone());
    }
    kept
}

/// The verification of one digest as signatures come in.
#[derive(Debug)]
pub struct Verification<'k> {
    digest: String,
    now: i64,
    remaining: BTreeMap<&'k str, &'k Keyring>,
    /// The signatures that verified, in order.
    pub accepted: Vec<Vec<u8>>,
    errors: Vec<String>,
}

impl<'k> Verification<'k> {
    /// Starts verifying `digest` against every keyring (by name) at `now` (Unix seconds).
    pub fn start(
        digest: &str,
        keyrings: &'k BTreeMap<String, Keyring>,
        now: i64,
    ) -> Result<Self, VerifyError> {
        if keyrings.is_empty() {
            return Err(VerifyError::NotConfigured);
        }
        check_digest(digest)?;
        Ok(Verification {
            digest: digest.into(),
            now,
            remaining: keyrings.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            accepted: Vec::new(),
            errors: Vec::new(),
        })
    }

    /// Offers one signature (or why it could not be read); true once every keyring has signed.
    pub fn offer(&mut self, signature: Result<&[u8], String>) -> bool {
        let signature = match signature {
            Ok(s) => s,
            Err(e) => {
                self.errors.push(e);
                return self.done();
            }
        };
        let mut signed = Vec::new();
        for (&name, keyring) in &self.remaining {
            let verified = openpgp::verify(signature, keyring, self.now)
                .map_err(|e| e.to_string())
                .and_then(|v| atomic::check(&v.content, &self.digest).map_err(|e| e.to_string()));
            match verified {
                Ok(_) => signed.push(name),
                Err(e) => self.errors.push(e),
            }
        }
        if !signed.is_empty() {
            self.accepted.push(signature.to_vec());
        }
        for name in signed {
            self.remaining.remove(name);
        }
        self.done()
    }

    pub fn done(&self) -> bool {
        self.remaining.is_empty()
    }

    /// The verdict once the stores have nothing more to offer.
    pub fn finish(self) -> Result<Vec<Vec<u8>>, VerifyError> {
        if self.remaining.is_empty() {
            return Ok(self.accepted);
        }
        Err(VerifyError::Unverified {
            digest: self.digest,
            keyrings: self.remaining.keys().map(|k| k.to_string()).collect(),
            errors: self.errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::atomic::AtomicSignature;

    #[test]
    fn verified_signatures_are_persisted_as_library_go_keys_them() {
        let key = |d: &str, n: u32| format!("sha256-{d}-{n}");
        let existing = BTreeMap::from([
            (key("aa", 0), b"old-a".to_vec()),
            (key("aa", 1), b"old-a2".to_vec()),
            (key("bb", 0), b"b".to_vec()),
        ]);
        let written = persisted_signatures(&existing, "sha256:aa", &[b"new-a".to_vec()]);
        assert_eq!(
            written,
            BTreeMap::from([
                (key("aa", 0), b"new-a".to_vec()),
                (key("bb", 0), b"b".to_vec())
            ])
        );
        assert_eq!(persisted_signatures(&existing, "sha256:cc", &[]), existing);
        assert_eq!(
            persisted_signatures(&existing, "nodigest", &[b"x".to_vec()]),
            existing
        );
        // At most 64 digests: the new one is always kept.
        let full: BTreeMap<String, Vec<u8>> = (0..MAX_PERSISTED_DIGESTS)
            .map(|i| (key(&format!("{i:02}"), 0), vec![]))
            .collect();
        let written = persisted_signatures(&full, "sha256:zz", &[b"z".to_vec()]);
        assert_eq!(written.len(), MAX_PERSISTED_DIGESTS);
        assert!(written.contains_key(&key("zz", 0)) && !written.contains_key(&key("63", 0)));
    }
    use crate::verify::openpgp::testing::{keypair, public};

    const DIGEST: &str = "sha256:817a12c32a39bbe394944ba49de563e085f1d3c5266eb8e9723256bc4448680e";

    fn signed(key: &pgp::composed::SignedSecretKey, digest: &str) -> Vec<u8> {
        let doc = AtomicSignature::new(digest, "quay.io/o/r:4.18.0", "cvo", 1);
        openpgp::sign(&serde_json::to_vec(&doc).unwrap(), key).unwrap()
    }

    #[test]
    fn digests_are_checked_with_upstreams_messages() {
        assert_eq!(check_digest(""), Err(VerifyError::NoDigest));
        assert_eq!(
            check_digest("latest").unwrap_err().to_string(),
            "the provided release image digest has an invalid format: \"latest\""
        );
        assert_eq!(check_digest(DIGEST), Ok(()));
        assert_eq!(
            signature_url("https://s.example/sigs/", DIGEST, 2),
            "https://s.example/sigs/sha256=817a12c32a39bbe394944ba49de563e085f1d3c5266eb8e9723256bc4448680e/signature-2"
        );
    }

    #[test]
    fn config_map_signatures_are_found_by_the_digest_key_prefix() {
        let hash = DIGEST.trim_start_matches("sha256:");
        let key1 = format!("sha256-{hash}-1");
        let key2 = format!("sha256-{hash}-2");
        let other = format!("sha256-{}-1", hash.replace('8', "9"));
        let entries = [
            (key2.as_str(), b"two".as_slice()),
            (other.as_str(), b"other".as_slice()),
            (key1.as_str(), b"one".as_slice()),
        ];
        assert_eq!(
            signatures_in_config_maps(DIGEST, entries),
            [b"one".to_vec(), b"two".to_vec()]
        );
        assert!(signatures_in_config_maps("nodigest", entries).is_empty());
    }

    #[test]
    fn every_keyring_must_sign_the_digest() {
        let (a, b, stranger) = (keypair("a"), keypair("b"), keypair("x"));
        let keyrings: BTreeMap<String, Keyring> = [
            ("verifier-public-key-a".to_string(), public(&a)),
            ("verifier-public-key-b".to_string(), public(&b)),
        ]
        .into();
        // Both sign: verified, whatever came first (an unreadable signature, a stranger's).
        let mut v = Verification::start(DIGEST, &keyrings, 0).unwrap();
        assert!(!v.offer(Err("404".into())));
        assert!(!v.offer(Ok(&signed(&stranger, DIGEST))));
        assert!(!v.offer(Ok(&signed(&a, DIGEST))));
        assert!(v.offer(Ok(&signed(&b, DIGEST))));
        assert_eq!(v.finish().unwrap().len(), 2);
        // Only a signs, and b signs another digest: b is named.
        let other = DIGEST.replace("sha256:8", "sha256:9");
        let mut v = Verification::start(DIGEST, &keyrings, 0).unwrap();
        v.offer(Ok(&signed(&a, DIGEST)));
        v.offer(Ok(&signed(&b, &other)));
        let err = v.finish().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("unable to verify {DIGEST} against keyrings: verifier-public-key-b")
        );
        let VerifyError::Unverified { errors, .. } = err else {
            unreachable!()
        };
        assert!(
            errors
                .iter()
                .any(|e| e == "signature digest does not match"),
            "{errors:?}"
        );
        // Garbage is not a signature.
        let mut v = Verification::start(DIGEST, &keyrings, 0).unwrap();
        v.offer(Ok(b"not openpgp"));
        let VerifyError::Unverified {
            errors,
            keyrings: names,
            ..
        } = v.finish().unwrap_err()
        else {
            unreachable!()
        };
        assert_eq!(names.len(), 2);
        assert!(
            errors[0].starts_with("could not read the message: "),
            "{errors:?}"
        );
        assert_eq!(
            Verification::start(DIGEST, &BTreeMap::new(), 0).unwrap_err(),
            VerifyError::NotConfigured
        );
    }
}
