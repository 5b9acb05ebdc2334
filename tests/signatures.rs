//! Release signatures against GnuPG itself: a signature `gpg --sign` made over an atomic
//! container signature verifies in cvo (with the key `gpg --export` wrote, armored or
//! binary), and one cvo made verifies in `gpg`. RSA keys, as release keys are. Skips without
//! `gpg` unless `CVO_REQUIRE_GPG=1` (which `.ci/run` sets).

#[path = "support/gnupg.rs"]
mod gnupg;
#[path = "support/static_server.rs"]
mod static_server;

use std::collections::BTreeMap;

use std::process::Command;

use cvo::verify::atomic::AtomicSignature;
use cvo::verify::openpgp::{self, Keyring};
use cvo::verify::release::{Verification, VerifyError};
use gnupg::GnuPg;
use static_server::StaticServer;

const DIGEST: &str = "sha256:817a12c32a39bbe394944ba49de563e085f1d3c5266eb8e9723256bc4448680e";

/// A GnuPG home with a release key; None when gpg is missing (and allowed to be).
fn gnupg() -> Option<GnuPg> {
    GnuPg::with_key("Release Signer <release@example.com>").unwrap()
}

fn gpg(home: &GnuPg, args: &[&str]) -> Vec<u8> {
    home.run(args).unwrap()
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
        let signature = gpg(&home, &args);
        for (form, key) in [
            ("armored key", gpg(&home, &["--armor", "--export"])),
            ("binary key", gpg(&home, &["--export"])),
        ] {
            let keyring = Keyring::parse(&key).unwrap_or_else(|e| panic!("{form}: {e}"));
            assert_eq!(verify(DIGEST, keyring, &signature), Ok(1), "{name}, {form}");
        }
        // The same signature does not verify another digest.
        let keyring = Keyring::parse(&gpg(&home, &["--export"])).unwrap();
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
    let secret = gpg(&home, &["--armor", "--export-secret-keys"]);
    let key = openpgp::parse_secret_key(&secret).unwrap();
    let content = document(DIGEST);
    let signature = openpgp::sign(&content, &key).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("signature-1");
    std::fs::write(&file, &signature).unwrap();
    // gpg --decrypt checks the signature (status GOODSIG) and prints the signed content.
    let out = Command::new("gpg")
        .arg("--homedir")
        .arg(home.home())
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

fn cvo(args: &[&str]) -> (i32, String, String) {
    let out = assert_cmd::Command::cargo_bin("cvo")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn payload_sign_then_verify_through_an_http_store() {
    let Some(home) = gnupg() else { return };
    let work = tempfile::tempdir().unwrap();
    let secret = work.path().join("release.key");
    std::fs::write(&secret, gpg(&home, &["--armor", "--export-secret-keys"])).unwrap();
    let public = work.path().join("release.pub");
    std::fs::write(&public, gpg(&home, &["--armor", "--export"])).unwrap();
    let stranger_home = gnupg().unwrap();
    let stranger = work.path().join("stranger.pub");
    std::fs::write(&stranger, gpg(&stranger_home, &["--armor", "--export"])).unwrap();
    let store = work.path().join("store");
    let (secret, public, stranger) = (
        secret.to_str().unwrap(),
        public.to_str().unwrap(),
        stranger.to_str().unwrap(),
    );
    let identity = "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64";
    let (code, out, err) = cvo(&[
        "payload",
        "sign",
        "--digest",
        DIGEST,
        "--identity",
        identity,
        "--key",
        secret,
        "--to",
        store.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let written = store.join(DIGEST.replacen(':', "=", 1)).join("signature-1");
    assert_eq!(out.trim(), written.to_str().unwrap());
    // gpg agrees it is a good signature of an atomic container signature of the digest.
    let content = gpg(&home, &["--decrypt", written.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&content).unwrap();
    assert_eq!(doc["critical"]["image"]["docker-manifest-digest"], DIGEST);
    assert_eq!(doc["critical"]["identity"]["docker-reference"], identity);

    let served = StaticServer::start(&store).unwrap();
    let verify = |keyring: &str, digest: &str| {
        cvo(&[
            "payload",
            "verify",
            "--digest",
            digest,
            "--keyring",
            keyring,
            "--store",
            &served.url,
            "-o",
            "json",
        ])
    };
    let (code, out, err) = verify(public, DIGEST);
    assert_eq!(code, 0, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["verified"], true);
    assert_eq!(report["keyrings"][0], "verifier-public-key-release");
    // Another key: refused with upstream's message, exit 1.
    let (code, out, _) = verify(stranger, DIGEST);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["verified"], false);
    assert_eq!(
        report["error"],
        format!("unable to verify {DIGEST} against keyrings: verifier-public-key-stranger")
    );
    // A digest nobody signed: the store answers 404 at once; refused the same way.
    let unsigned = DIGEST.replace("sha256:8", "sha256:7");
    let (code, out, _) = verify(public, &unsigned);
    assert_eq!(code, 1, "{out}");
    // Both keyrings required (a verification ConfigMap naming the store and both keys).
    let config_map = work.path().join("verification.yaml");
    let indent = |file: &str| {
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    std::fs::write(
        &config_map,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-verification\n  namespace: openshift-config-managed\n  annotations:\n    release.openshift.io/verification-config-map: \"\"\ndata:\n  store-local: {}\n  verifier-public-key-release: |\n{}  verifier-public-key-stranger: |\n{}",
            served.url,
            indent(public),
            indent(stranger)
        ),
    )
    .unwrap();
    let (code, out, err) = cvo(&[
        "payload",
        "verify",
        "--digest",
        DIGEST,
        "--config-map",
        config_map.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!(
            "unable to verify {DIGEST} against keyrings: verifier-public-key-stranger"
        )),
        "{out}"
    );
    // Bad input is an error that says what to give.
    let (code, _, err) = cvo(&[
        "payload",
        "verify",
        "--digest",
        "latest",
        "--keyring",
        public,
        "--store",
        &served.url,
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("the provided release image digest has an invalid format: \"latest\""),
        "{err}"
    );
    let (code, _, err) = cvo(&[
        "payload",
        "verify",
        "--digest",
        DIGEST,
        "--keyring",
        public,
        "--store",
        "ftp://x",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("must be a valid URL with scheme http:// or https://"),
        "{err}"
    );
}

/// An https store whose certificate only its own CA vouches for: refused with the system's
/// roots, verified with `--store-ca` (the same client a cluster's `spec.signatureStores[].ca`
/// gets), and a typo'd CA file is an error.
#[test]
fn payload_verify_through_an_https_store_with_its_own_ca() {
    let Some(home) = gnupg() else { return };
    let work = tempfile::tempdir().unwrap();
    let (public, store) = signed_store(&home, work.path());
    let (cert, _) = cvo::host::webhook::make_certificate(
        &["localhost".to_string()],
        k8s_openapi::jiff::Timestamp::now(),
    )
    .unwrap();
    let (leaf, key, ca) = (
        work.path().join("tls.crt"),
        work.path().join("tls.key"),
        work.path().join("ca.crt"),
    );
    std::fs::write(&leaf, &cert.certificate).unwrap();
    std::fs::write(&key, &cert.key).unwrap();
    std::fs::write(&ca, &cert.ca).unwrap();
    let served = StaticServer::start_tls(&store, &leaf, &key).unwrap();
    let verify = |extra: &[&str]| {
        let mut args = vec![
            "payload",
            "verify",
            "--digest",
            DIGEST,
            "--keyring",
            public.to_str().unwrap(),
            "--store",
            &served.url,
            "-o",
            "json",
        ];
        args.extend_from_slice(extra);
        cvo(&args)
    };
    let (code, out, err) = verify(&[]);
    assert_eq!(
        code, 1,
        "the system's roots do not know the store's CA: {out}{err}"
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["verified"], false);
    let (code, out, err) = verify(&["--store-ca", ca.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["verified"], true);
    let (code, _, err) = verify(&["--store-ca", public.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("no PEM certificate"), "{err}");
}

/// `cvo payload sign` of [`DIGEST`] with `home`'s key into a store under `dir`: the public key
/// file and the store.
fn signed_store(home: &GnuPg, dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let secret = dir.join("release.key");
    std::fs::write(&secret, gpg(home, &["--armor", "--export-secret-keys"])).unwrap();
    let public = dir.join("release.pub");
    std::fs::write(&public, gpg(home, &["--armor", "--export"])).unwrap();
    let store = dir.join("store");
    let (code, _, err) = cvo(&[
        "payload",
        "sign",
        "--digest",
        DIGEST,
        "--identity",
        "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64",
        "--key",
        secret.to_str().unwrap(),
        "--to",
        store.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    (public, store)
}
