use super::*;

fn file(path: &str) -> Entry {
    Entry {
        path: path.to_owned(),
        kind: EntryKind::File { size: 1 },
    }
}

fn dir(path: &str) -> Entry {
    Entry {
        path: path.to_owned(),
        kind: EntryKind::Directory,
    }
}

fn messages(errors: &[PackageError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn manifests_read_and_validated() {
    let full = r#"{"version": "2.31.0-rc.1", "packagesVersion": "2.31.0", "sslVersion": "1", "configVersion": "1.2"}"#;
    assert_eq!(
        parse_manifest(full),
        Ok(PackageManifest {
            version: "2.31.0-rc.1".into(),
            packages_version: Some("2.31.0".into()),
            ssl_version: Some("1".into()),
            config_version: Some("1.2".into()),
        })
    );
    assert_eq!(
        parse_manifest(r#"{"version": "1.0.2"}"#).unwrap(),
        PackageManifest {
            version: "1.0.2".into(),
            ..Default::default()
        }
    );
    let bad = [
        (
            r#"{"packagesVersion": "1"}"#,
            vec![
                "package.json: the version field is missing; it is required (the agent compares it with its own version)",
            ],
        ),
        (
            r#"{"version": "1.0.2", "sslversion": "1"}"#,
            vec![
                "package.json: unknown field \"sslversion\" (did you mean sslVersion?); the fields are version, packagesVersion, sslVersion, configVersion",
            ],
        ),
        (
            r#"{"version": 1}"#,
            vec!["package.json: version must be a string such as \"2.31.0\", not a number"],
        ),
        (
            r#"{"version": "1.2.3.4", "configVersion": "v1"}"#,
            vec![
                "package.json: version \"1.2.3.4\" is not a version: one to three decimal fields and an optional -prerelease, e.g. 2.31.0 or 2.31.0-rc.1",
                "package.json: configVersion \"v1\" is not a version: one to three decimal fields and an optional -prerelease, e.g. 2.31.0 or 2.31.0-rc.1",
            ],
        ),
        (
            r#"{"version": "INFINITY"}"#,
            vec![
                "package.json: version \"INFINITY\" is not a version: one to three decimal fields and an optional -prerelease, e.g. 2.31.0 or 2.31.0-rc.1",
            ],
        ),
        (
            "[1]",
            vec![
                "package.json: not a JSON object (found an array); write {\"version\": \"X.Y.Z\", ...}",
            ],
        ),
    ];
    for (text, want) in bad {
        assert_eq!(messages(&parse_manifest(text).unwrap_err()), want, "{text}");
    }
    assert!(
        parse_manifest("{").unwrap_err()[0]
            .to_string()
            .starts_with("package.json: not a JSON object (EOF while parsing")
    );
}

#[test]
fn manifests_serialise_in_the_exchange_form() {
    let manifest = PackageManifest {
        version: "1.0.0".into(),
        ssl_version: Some("2".into()),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&manifest).unwrap(),
        r#"{"version":"1.0.0","sslVersion":"2"}"#
    );
}

#[test]
fn layouts() {
    let (contents, errors) = check_entries(&[
        dir("./"),
        file("./package.json"),
        dir("./packages/"),
        file("./packages/horizon_2.31.0_amd64.deb"),
        file("./packages/horizon-cli_2.31.0_amd64.deb"),
        file("ssl/agent-install.crt"),
        file("config/agent-install.cfg"),
    ]);
    assert_eq!(errors, vec![]);
    assert_eq!(
        contents,
        Contents {
            packages: vec![
                "horizon-cli_2.31.0_amd64.deb".into(),
                "horizon_2.31.0_amd64.deb".into()
            ],
            ssl: vec!["agent-install.crt".into()],
            config: vec!["agent-install.cfg".into()],
        }
    );
    // Every directory may be left out or be empty.
    let (contents, errors) = check_entries(&[file("package.json"), dir("ssl")]);
    assert_eq!((contents, errors), (Contents::default(), vec![]));
}

#[test]
fn layout_problems() {
    let cases: Vec<(Vec<Entry>, Vec<&str>)> = vec![
        (
            vec![dir("packages")],
            vec!["package.json: missing at the root of the package; every package has one"],
        ),
        (
            vec![file("package.json"), file("pakages/a.deb")],
            vec![
                "pakages/a.deb: not part of a package (did you mean packages?); at its root a package holds package.json and the directories packages/, ssl/ and config/",
            ],
        ),
        (
            vec![file("package.json"), file("ssl")],
            vec![
                "ssl: not part of a package (ssl must be a directory); at its root a package holds package.json and the directories packages/, ssl/ and config/",
            ],
        ),
        (
            vec![file("package.json"), file("/etc/passwd")],
            vec![
                "/etc/passwd: an absolute path; the entries of a package are relative to its root",
            ],
        ),
        (
            vec![file("package.json"), file("config/../../x")],
            vec![
                "config/../../x: a path through `..`; the entries of a package stay under its root",
            ],
        ),
        (
            vec![
                file("package.json"),
                Entry {
                    path: "ssl/cert".into(),
                    kind: EntryKind::Symlink,
                },
                Entry {
                    path: "packages/x".into(),
                    kind: EntryKind::HardLink,
                },
                Entry {
                    path: "config/fifo".into(),
                    kind: EntryKind::Other,
                },
            ],
            vec![
                "ssl/cert: a symbolic link; a package holds only regular files and directories",
                "packages/x: a hard link; a package holds only regular files and directories",
                "config/fifo: a special file; a package holds only regular files and directories",
            ],
        ),
        (
            vec![file("package.json"), file("./package.json")],
            vec!["package.json: in the archive twice"],
        ),
        (
            vec![dir("package.json")],
            vec!["package.json: must be a regular file"],
        ),
    ];
    for (entries, want) in cases {
        let (_, errors) = check_entries(&entries);
        assert_eq!(messages(&errors), want, "{entries:?}");
    }
}

#[test]
fn digests() {
    let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    assert_eq!(parse_digest(hex), Ok(hex.to_owned()));
    assert_eq!(
        parse_digest(&format!("{}  agent.tar.gz\n", hex.to_uppercase())),
        Ok(hex.to_owned())
    );
    assert_eq!(
        parse_digest("abc").unwrap_err().to_string(),
        "\"abc\" is not a SHA-256 digest: 64 hexadecimal characters, optionally followed by the file name as sha256sum writes it"
    );
    assert!(parse_digest("").is_err());
    assert!(parse_digest(&"g".repeat(64)).is_err());
    assert_eq!(digest_line(hex, "a.tar.gz"), format!("{hex}  a.tar.gz\n"));
    assert_eq!(check_digest(&hex.to_uppercase(), hex), Ok(()));
    let other = "0".repeat(64);
    assert_eq!(
        check_digest(&other, hex).unwrap_err().to_string(),
        format!(
            "SHA-256 mismatch: the package's digest is {hex}, the expected one is {other}; the package is not the one the digest was made for"
        )
    );
}

#[test]
fn standings_against_the_installed_version() {
    let cases = [
        ("2.31.0", "2.30.9", Standing::Newer),
        ("2.31.0", "2.31", Standing::Same),
        ("2.31.0-rc.1", "2.31.0", Standing::Older),
        ("2.31.0", "2.31.0-rc.1", Standing::Newer),
        ("1.0.0", LOCAL_BUILD, Standing::Newer),
        ("0.0.0", LOCAL_BUILD, Standing::Same),
    ];
    for (package, installed, want) in cases {
        assert_eq!(
            standing(package, installed),
            Ok(want),
            "{package} vs {installed}"
        );
    }
    assert_eq!(
        standing("1.0.0", "latest").unwrap_err().to_string(),
        "installed version \"latest\" is not a version (nor \"local build\"): one to three decimal fields and an optional -prerelease"
    );
}
