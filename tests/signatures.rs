//! Release signatures against GnuPG itself: a signature `gpg --sign` made over an atomic
//! container signature verifies in cvo (with the key `gpg --export` wrote, armored or
//! binary), and one cvo made verifies in `gpg`. RSA keys, as release keys are. Skips without
//! `gpg` unless `CVO_REQUIRE_GPG=1` (which `.ci/run` sets).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use cvo::verify::atomic::AtomicSignature;
use cvo::verify::openpgp::{self, Keyring};
use cvo::verify::release::{Verification, VerifyError};

const DIGEST: &str = "sha256:817a12c32a39bbe394944ba49de563e085f1d3c5266eb8e9723256bc4448680e";

/// A throwaway GnuPG home with one RSA signing key; None when gpg is missing (and allowed to be).
fn gnupg() -> Option<tempfile::TempDir> {
    if Command::new("gpg").arg("--version").output().is_err() {
        assert!(
            std::env::var("CVO_REQUIRE_GPG").as_deref() != Ok("1"),
            "gpg is missing and CVO_REQUIRE_GPG=1 (hack/install-deps.sh installs it)"
        );
        eprintln!("skipping: gpg is not installed");
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    gpg(
        home.path(),
        &[
            "--quick-gen-key",
            "Release Signer <release@example.com>",
            "rsa2048",
            "sign",
            "never",
        ],
    );
    Some(home)
}

fn gpg(home: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("gpg")
        .arg("--homedir")
        .arg(home)
        .args([
            "--batch",
            "--yes",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gpg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn document(digest: &str) -> Vec<u8> {
    serde_json::to_vec(&AtomicSignature::new(
        digest,
        "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64",
        "gpg",
        1,
    ))
    .unwrap()
}

fn verify(digest: &str, keyring: Keyring, signature: &[u8]) -> Result<usize, VerifyError> {
    let keyrings: BTreeMap<String, Keyring> =
        [("verifier-public-key-test".to_string(), keyring)].into();
    let mut verification = Verification::start(digest, &keyrings, 0)?;
    verification.offer(Ok(signature));
    verification.finish().map(|s| s.len())
}

#[test]
fn a_signature_gpg_made_verifies_in_cvo() {
    let Some(home) = gnupg() else { return };
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, document(DIGEST)).unwrap();
    let doc = doc.to_str().unwrap();
    for (name, args) in [
        ("default compression", vec!["--sign", "--output", "-", doc]),
        (
            "bzip2",
            vec!["--compress-algo", "bzip2", "--sign", "--output", "-", doc],
        ),
        (
            "uncompressed",
            vec!["--compress-algo", "none", "--sign", "--output", "-", doc],
        ),
        ("armored", vec!["--armor", "--sign", "--output", "-", doc]),
    ] {
        let signature = gpg(home.path(), &args);
        for (form, key) in [
            ("armored key", gpg(home.path(), &["--armor", "--export"])),
            ("binary key", gpg(home.path(), &["--export"])),
        ] {
            let keyring = Keyring::parse(&key).unwrap_or_else(|e| panic!("{form}: {e}"));
            assert_eq!(verify(DIGEST, keyring, &signature), Ok(1), "{name}, {form}");
        }
        // The same signature does not verify another digest.
        let keyring = Keyring::parse(&gpg(home.path(), &["--export"])).unwrap();
        let other = DIGEST.replace("sha256:8", "sha256:9");
        assert!(
            matches!(
                verify(&other, keyring, &signature),
                Err(VerifyError::Unverified { .. })
            ),
            "{name}"
        );
    }
}

#[test]
fn a_signature_cvo_made_verifies_in_gpg() {
    let Some(home) = gnupg() else { return };
    let secret = gpg(home.path(), &["--armor", "--export-secret-keys"]);
    let key = openpgp::parse_secret_key(&secret).unwrap();
    let content = document(DIGEST);
    let signature = openpgp::sign(&content, &key).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("signature-1");
    std::fs::write(&file, &signature).unwrap();
    // gpg --decrypt checks the signature (status GOODSIG) and prints the signed content.
    let out = Command::new("gpg")
        .arg("--homedir")
        .arg(home.path())
        .args(["--batch", "--status-fd", "2", "--decrypt"])
        .arg(&file)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && status.contains("[GNUPG:] GOODSIG"),
        "{status}"
    );
    assert_eq!(out.stdout, content);
}
