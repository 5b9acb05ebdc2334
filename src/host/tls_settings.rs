//! The TLS settings of the operator's servers (`--tls-min-version`, `--tls-cipher-suites`), as
//! upstream's flags name them: Go's `crypto/tls` names (`VersionTLS12`,
//! `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`, ...). Pure: the names are checked here and mapped to
//! rustls's suites, which are a subset of Go's (no CBC, RSA key exchange, 3DES or RC4: a name
//! of those is refused, naming the supported ones).

use std::fmt;

use crate::suggest::did_you_mean;

/// The lowest protocol version served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// What `--tls-min-version` and `--tls-cipher-suites` asked for; the defaults are rustls's
/// (TLS 1.2 and 1.3 with its safe suites), which upstream's `SecureTLSConfig` also allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// `None`: TLS 1.2.
    pub min_version: Option<TlsVersion>,
    /// Go names, checked; empty: every suite rustls offers.
    pub cipher_suites: Vec<&'static str>,
}

/// A setting that is not a known or supported name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsSettingsError {
    #[error(
        "--tls-min-version {given:?} is not a TLS version{hint}: valid values are VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13"
    )]
    Version { given: String, hint: String },
    #[error("--tls-cipher-suites {given:?} is not a cipher suite{hint}: valid values are {valid}")]
    Suite {
        given: String,
        hint: String,
        valid: String,
    },
    #[error(
        "--tls-cipher-suites {given:?} is a Go cipher suite this build does not implement (rustls offers no CBC, RSA key exchange, 3DES or RC4 suites): use one of {valid}"
    )]
    Unsupported { given: String, valid: String },
    #[error(
        "--tls-cipher-suites names only TLS 1.2 suites while --tls-min-version is VersionTLS13: no suite would be left"
    )]
    Empty,
}

/// Go's names of the suites rustls implements, TLS 1.3 first.
pub const SUPPORTED_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
];

/// Go's other names (`crypto/tls` `CipherSuites` and `InsecureCipherSuites`), and its aliases
/// of supported ones.
const GO_ONLY_SUITES: &[&str] = &[
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

/// Go's aliases: the same suites under their older names.
const ALIASES: &[(&str, &str)] = &[
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

impl TlsVersion {
    /// Go's `VersionTLS1x`. TLS 1.0 and 1.1 are accepted as minimums: rustls never speaks them,
    /// so the floor is TLS 1.2 either way.
    pub fn parse(given: &str) -> Result<TlsVersion, TlsSettingsError> {
        match given {
            "VersionTLS10" | "VersionTLS11" | "VersionTLS12" => Ok(TlsVersion::Tls12),
            "VersionTLS13" => Ok(TlsVersion::Tls13),
            _ => Err(TlsSettingsError::Version {
                given: given.to_string(),
                hint: hint(
                    given,
                    &[
                        "VersionTLS10",
                        "VersionTLS11",
                        "VersionTLS12",
                        "VersionTLS13",
                    ],
                ),
            }),
        }
    }
}

/// Whether a supported suite (Go name) is a TLS 1.3 one.
pub fn is_tls13(suite: &str) -> bool {
    !suite.starts_with("TLS_ECDHE_")
}

fn hint(given: &str, candidates: &[&str]) -> String {
    did_you_mean(given, candidates)
}

impl TlsSettings {
    /// Checks the flags' values (`min_version` empty: unset).
    pub fn parse(min_version: &str, suites: &[String]) -> Result<TlsSettings, TlsSettingsError> {
        let min_version = match min_version.trim() {
            "" => None,
            v => Some(TlsVersion::parse(v)?),
        };
        let valid = SUPPORTED_SUITES.join(", ");
        let mut cipher_suites = Vec::new();
        for given in suites.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let name = (ALIASES.iter())
                .find(|(alias, _)| *alias == given)
                .map_or(given, |(_, name)| name);
            match SUPPORTED_SUITES.iter().find(|s| **s == name) {
                Some(suite) if !cipher_suites.contains(suite) => cipher_suites.push(*suite),
                Some(_) => {}
                None if GO_ONLY_SUITES.contains(&name) => {
                    return Err(TlsSettingsError::Unsupported {
                        given: given.to_string(),
                        valid,
                    });
                }
                None => {
                    let known: Vec<&str> = SUPPORTED_SUITES
                        .iter()
                        .chain(GO_ONLY_SUITES)
                        .copied()
                        .collect();
                    return Err(TlsSettingsError::Suite {
                        given: given.to_string(),
                        hint: hint(given, &known),
                        valid,
                    });
                }
            }
        }
        if min_version == Some(TlsVersion::Tls13)
            && !cipher_suites.is_empty()
            && !cipher_suites.iter().any(|s| is_tls13(s))
        {
            return Err(TlsSettingsError::Empty);
        }
        Ok(TlsSettings {
            min_version,
            cipher_suites,
        })
    }

    /// The suites served, by Go name, as Go treats the list: it restricts the TLS 1.2 suites;
    /// TLS 1.3 ones are all on unless some are named. `None`: every suite rustls offers.
    pub fn suites(&self) -> Option<Vec<&'static str>> {
        if self.cipher_suites.is_empty() {
            return None;
        }
        let named13 = self.cipher_suites.iter().any(|s| is_tls13(s));
        let tls13 = (SUPPORTED_SUITES.iter())
            .filter(|s| is_tls13(s))
            .filter(|s| !named13 || self.cipher_suites.contains(s));
        let tls12 = (self.cipher_suites.iter()).filter(|s| !is_tls13(s));
        Some(tls13.chain(tls12).copied().collect())
    }

    /// Whether TLS 1.2 is served.
    pub fn tls12(&self) -> bool {
        self.min_version != Some(TlsVersion::Tls13)
    }
}

impl fmt::Display for TlsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsVersion::Tls12 => "TLS 1.2",
            TlsVersion::Tls13 => "TLS 1.3",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn versions_and_suites_by_their_go_names() {
        assert_eq!(TlsSettings::parse("", &[]).unwrap(), TlsSettings::default());
        let s = TlsSettings::parse(
            "VersionTLS12",
            &strings(&[
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
            ]),
        )
        .unwrap();
        assert_eq!(s.min_version, Some(TlsVersion::Tls12));
        assert!(s.tls12());
        // TLS 1.3 suites stay on, as Go's list only restricts TLS 1.2.
        assert_eq!(
            s.suites().unwrap(),
            [
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            ]
        );
        let only13 = TlsSettings::parse("VersionTLS13", &strings(&["TLS_AES_256_GCM_SHA384"]));
        assert_eq!(
            only13.unwrap().suites().unwrap(),
            ["TLS_AES_256_GCM_SHA384"]
        );
        assert!(!TlsSettings::parse("VersionTLS13", &[]).unwrap().tls12());
        assert_eq!(
            TlsSettings::parse("VersionTLS10", &[]).unwrap().min_version,
            Some(TlsVersion::Tls12)
        );
    }

    #[test]
    fn typos_and_unsupported_suites_are_errors() {
        let e = TlsSettings::parse("VersionTLS2", &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--tls-min-version \"VersionTLS2\" is not a TLS version (did you mean VersionTLS12?): valid values are VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13"
        );
        let e = TlsSettings::parse("", &strings(&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA265"]))
            .unwrap_err();
        assert!(
            e.to_string().starts_with("--tls-cipher-suites \"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA265\" is not a cipher suite (did you mean TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256?): valid values are TLS_AES_128_GCM_SHA256, "),
            "{e}"
        );
        let e = TlsSettings::parse("", &strings(&["TLS_RSA_WITH_AES_128_CBC_SHA"])).unwrap_err();
        assert!(matches!(e, TlsSettingsError::Unsupported { .. }), "{e}");
        let e = TlsSettings::parse(
            "VersionTLS13",
            &strings(&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]),
        )
        .unwrap_err();
        assert_eq!(e, TlsSettingsError::Empty);
    }
}
