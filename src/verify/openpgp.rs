//! OpenPGP for release signatures, with rpgp (pure Rust): keyrings, verifying the signed
//! message a signature store serves (what `gpg --sign` makes: a compressed, signed literal
//! packet), and making one. The checks and their messages follow library-go's
//! `verifySignatureWithKeyring` (golang.org/x/crypto/openpgp's `ReadMessage`).

use std::io::BufReader;

use pgp::composed::{Deserializable, Message, MessageBuilder, SignedPublicKey, SignedSecretKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::Signature;
use pgp::types::{CompressionAlgorithm, KeyDetails as _, Password, VerifyingKey};

/// The public keys one verifier trusts (a `verifier-public-key-*` entry: one or more keys).
#[derive(Clone, Debug)]
pub struct Keyring {
    keys: Vec<SignedPublicKey>,
}

/// Why a keyring or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenPgpError {
    #[error("{0}")]
    Keyring(String),
    /// library-go's words for a signature that does not verify.
    #[error("{0}")]
    Signature(String),
    #[error("cannot sign: {0}")]
    Sign(String),
}

impl Keyring {
    /// An ASCII-armored or binary keyring (library-go's `loadArmoredOrUnarmoredGPGKeyRing`).
    pub fn parse(data: &[u8]) -> Result<Keyring, OpenPgpError> {
        let armored = (data.iter().position(|b| !b.is_ascii_whitespace()))
            .is_some_and(|start| data[start..].starts_with(b"-----BEGIN"));
        let keys: Result<Vec<SignedPublicKey>, pgp::errors::Error> = match armored {
            true => SignedPublicKey::from_armor_many(data).and_then(|(keys, _)| keys.collect()),
            false => SignedPublicKey::from_bytes_many(BufReader::new(data))
                .and_then(|keys| keys.collect()),
        };
        let keys = keys.map_err(|e| OpenPgpError::Keyring(format!("openpgp: {e}")))?;
        if keys.is_empty() {
            return Err(OpenPgpError::Keyring("openpgp: no keys found".into()));
        }
        Ok(Keyring { keys })
    }

    /// The keys' fingerprints, upper-case hex as containers/image prints them.
    pub fn fingerprints(&self) -> Vec<String> {
        (self.keys.iter())
            .map(|k| hex::encode_upper(k.fingerprint().as_bytes()))
            .collect()
    }

    /// The keyring, ASCII-armored.
    pub fn to_armored(&self) -> Result<String, OpenPgpError> {
        let mut out = String::new();
        for key in &self.keys {
            let armored = key
                .to_armored_string(Default::default())
                .map_err(|e| OpenPgpError::Keyring(e.to_string()))?;
            out.push_str(&armored);
        }
        Ok(out)
    }
}

/// What a verified signature carried, and who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub content: Vec<u8>,
    /// The signing key's fingerprint (upper-case hex, containers/image's convention).
    pub signed_by: String,
}

/// Verifies a signed message (binary or armored) with any key of `keyring` (primary or
/// subkey) at `now` (Unix seconds); returns the signed content.
pub fn verify(signature: &[u8], keyring: &Keyring, now: i64) -> Result<Verified, OpenPgpError> {
    let bad = |m: String| OpenPgpError::Signature(m);
    let read = |e: pgp::errors::Error| bad(format!("could not read the message: {e}"));
    let armored = signature.starts_with(b"-----BEGIN");
    let message = match armored {
        true => Message::from_armor(BufReader::new(signature)).map(|(m, _)| m),
        false => Message::from_bytes(BufReader::new(signature)),
    }
    .map_err(read)?;
    let mut message = message.decompress().map_err(read)?;
    if !message.is_signed() {
        return Err(bad("not signed".into()));
    }
    let content =
        (message.as_data_vec()).map_err(|e| bad(format!("could not read the message: {e}")))?;
    for key in &keyring.keys {
        let candidates =
            std::iter::once((key.fingerprint(), &key.primary_key as &dyn VerifyingKey)).chain(
                key.public_subkeys
                    .iter()
                    .map(|s| (s.key.fingerprint(), &s.key as &dyn VerifyingKey)),
            );
        for (fingerprint, verifying) in candidates {
            if let Ok(sig) = message.verify(verifying) {
                check_lifetime(sig, now)?;
                return Ok(Verified {
                    content,
                    signed_by: hex::encode_upper(fingerprint.as_bytes()),
                });
            }
        }
    }
    Err(bad("invalid signature".into()))
}

/// A signature past its lifetime (`signature expired on ...`, as library-go says it).
fn check_lifetime(signature: &Signature, now: i64) -> Result<(), OpenPgpError> {
    let (Some(created), Some(lifetime)) =
        (signature.created(), signature.signature_expiration_time())
    else {
        return Ok(());
    };
    let expiry = i64::from(created.as_secs()) + lifetime.as_secs() as i64;
    if lifetime.as_secs() > 0 && now > expiry {
        let when = rfc3339(expiry);
        return Err(OpenPgpError::Signature(format!(
            "signature expired on {when}"
        )));
    }
    Ok(())
}

/// A Unix time as RFC 3339 (UTC).
fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| seconds.to_string())
}

/// Signs `content` as `gpg --sign` does (a ZLIB-compressed, signed literal packet), binary.
pub fn sign(content: &[u8], key: &SignedSecretKey) -> Result<Vec<u8>, OpenPgpError> {
    let mut builder = MessageBuilder::from_bytes("", content.to_vec());
    builder.compression(CompressionAlgorithm::ZLIB);
    builder.sign(&key.primary_key, Password::empty(), HashAlgorithm::Sha256);
    builder
        .to_vec(rand08::thread_rng())
        .map_err(|e| OpenPgpError::Sign(e.to_string()))
}

/// A secret key from its ASCII-armored or binary form.
pub fn parse_secret_key(data: &[u8]) -> Result<SignedSecretKey, OpenPgpError> {
    let armored = data.starts_with(b"-----BEGIN");
    let key = match armored {
        true => SignedSecretKey::from_armor_single(data).map(|(k, _)| k),
        false => SignedSecretKey::from_bytes(BufReader::new(data)),
    };
    key.map_err(|e| OpenPgpError::Keyring(format!("openpgp: {e}")))
}

/// Keys for tests (this module's and the verifier's).
#[cfg(test)]
pub(crate) mod testing {
    use pgp::composed::{KeyType, SecretKeyParamsBuilder, SignedSecretKey};

    use super::Keyring;

    /// A signing key (Ed25519: quick to make in a debug build).
    pub fn keypair(name: &str) -> SignedSecretKey {
        let params = SecretKeyParamsBuilder::default()
            .key_type(KeyType::Ed25519Legacy)
            .can_certify(true)
            .can_sign(true)
            .primary_user_id(format!("{name} <{name}@example.com>"))
            .build()
            .expect("key parameters");
        params.generate(rand08::thread_rng()).expect("a key")
    }

    pub fn public(key: &SignedSecretKey) -> Keyring {
        Keyring {
            keys: vec![key.to_public_key()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{keypair, public};
    use super::*;

    #[test]
    fn a_signed_message_verifies_with_its_key_only_and_survives_armor() {
        let key = keypair("release");
        let message = sign(b"{\"x\":1}", &key).unwrap();
        let keyring = public(&key);
        let verified = verify(&message, &keyring, 0).unwrap();
        assert_eq!(verified.content, b"{\"x\":1}");
        assert_eq!(verified.signed_by, keyring.fingerprints()[0]);
        let other = public(&keypair("other"));
        assert_eq!(
            verify(&message, &other, 0).unwrap_err().to_string(),
            "invalid signature"
        );
        // The keyring round-trips through its armored form.
        let armored = keyring.to_armored().unwrap();
        let parsed = Keyring::parse(armored.as_bytes()).unwrap();
        assert!(verify(&message, &parsed, 0).is_ok());
        assert!(Keyring::parse(b"junk").is_err());
    }
}
