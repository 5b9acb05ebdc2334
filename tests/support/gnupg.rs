//! GnuPG for the signature tests: a throwaway home with one RSA signing key, as release keys
//! are. `None` when `gpg` is missing, unless `CVO_REQUIRE_GPG=1` (`.ci/run`), which fails.

use std::process::Command;

pub struct GnuPg {
    home: tempfile::TempDir,
}

impl GnuPg {
    /// A home with a fresh RSA key for `user_id`.
    pub fn with_key(user_id: &str) -> anyhow::Result<Option<GnuPg>> {
        if Command::new("gpg").arg("--version").output().is_err() {
            anyhow::ensure!(
                std::env::var("CVO_REQUIRE_GPG").as_deref() != Ok("1"),
                "gpg is missing and CVO_REQUIRE_GPG=1 (hack/install-deps.sh installs it)"
            );
            eprintln!("skipping: gpg is not installed");
            return Ok(None);
        }
        let gnupg = GnuPg {
            home: tempfile::tempdir()?,
        };
        gnupg.run(&["--quick-gen-key", user_id, "rsa2048", "sign", "never"])?;
        Ok(Some(gnupg))
    }

    /// `gpg ARGS` in this home, unattended; its standard output.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<Vec<u8>> {
        let out = Command::new("gpg")
            .arg("--homedir")
            .arg(self.home.path())
            .args(["--batch", "--yes", "--pinentry-mode", "loopback"])
            .args(["--passphrase", ""])
            .args(args)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(out.stdout)
    }

    /// The home directory, for `gpg` runs that need more than standard output.
    #[allow(dead_code)] // Not every test binary that includes this file uses it.
    pub fn home(&self) -> &std::path::Path {
        self.home.path()
    }
}
