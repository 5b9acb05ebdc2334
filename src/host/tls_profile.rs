//! The cluster's TLS profile for the operator's servers, as upstream's `pkg/tls` takes it from
//! the APIServer `cluster` (`config.openshift.io/v1`): honoured only when
//! `spec.tlsAdherence` is `StrictAllComponents` (or a value this build does not know, as
//! library-go's `ShouldHonorClusterTLSProfile` treats it); `spec.tlsSecurityProfile` is then
//! `Old`, `Intermediate` (also when unset or unknown), `Modern` or `Custom`, with the profiles'
//! minimum versions and OpenSSL cipher names of openshift/api's `TLSProfiles`. The flags
//! (`--tls-min-version`, `--tls-cipher-suites`) override it field by field, as upstream's
//! overrides do. Pure: the decisions over plain data; the APIServer is watched by the shell
//! ([`super::metrics_tls::watch_tls_profile`]).
//!
//! Go's `crypto/tls` ignores the cipher list for TLS 1.3 (all its suites stay on) and only sets
//! it when the minimum is below TLS 1.3; so does this. rustls implements no CBC, RSA key
//! exchange or 3DES suite: such names of a profile (the `Old` profile has many) are left out,
//! as upstream leaves out the names library-go does not map.

use serde::Deserialize;

use super::tls_settings::{SUPPORTED_SUITES, TlsSettings, TlsVersion, is_tls13};

/// `spec.tlsAdherence` values that keep the cluster profile away (library-go's
/// `ShouldHonorClusterTLSProfile`): unset is `NoOpinion`, which means the legacy behaviour.
const LEGACY_ADHERENCE: &[&str] = &["", "LegacyAdheringComponentsOnly"];

/// What of the APIServer `cluster`'s spec the TLS settings come from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerTls {
    #[serde(default)]
    pub tls_adherence: String,
    #[serde(default)]
    pub tls_security_profile: Option<TlsSecurityProfile>,
}

/// `spec.tlsSecurityProfile`: a profile type, and the `custom` profile's own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct TlsSecurityProfile {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub custom: Option<TlsProfileSpec>,
}

/// A profile's settings (`TLSProfileSpec`): OpenSSL (or IANA) cipher names and the minimum.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsProfileSpec {
    #[serde(default)]
    pub ciphers: Vec<String>,
    #[serde(default, rename = "minTLSVersion")]
    pub min_tls_version: String,
}

/// The profile the cluster asks for, as this build serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterProfile {
    /// `Old`, `Intermediate`, `Modern` or `Custom`.
    pub name: &'static str,
    pub settings: TlsSettings,
    /// The profile's cipher names this build cannot serve (left out).
    pub ignored_ciphers: Vec<String>,
}

/// A profile that cannot be used: upstream keeps the profile it had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsProfileError {
    /// Upstream's `ErrCustomProfileNil`.
    #[error("custom TLS profile specified but Custom field is nil")]
    CustomNil,
    #[error(
        "the TLS profile's minTLSVersion {0:?} is not a TLS version: valid values are VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13"
    )]
    Version(String),
}

const TLS13_CIPHERS: [&str; 3] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];
const INTERMEDIATE_TLS12_CIPHERS: [&str; 6] = [
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
];
/// What the `Old` profile adds to `Intermediate`'s (CBC, RSA key exchange, 3DES).
const OLD_ONLY_CIPHERS: [&str; 15] = [
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "AES128-GCM-SHA256",
    "AES256-GCM-SHA384",
    "AES128-SHA256",
    "AES256-SHA256",
    "AES128-SHA",
    "AES256-SHA",
    "DES-CBC3-SHA",
];

/// OpenSSL's names of the suites this build serves, with Go's (IANA) names (library-go's
/// `openSSLToIANACiphersMap`, the part rustls implements).
const OPENSSL_NAMES: [(&str, &str); 6] = [
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// Whether the cluster's profile applies to this component (library-go's
/// `ShouldHonorClusterTLSProfile`: unknown values are the stricter `StrictAllComponents`).
pub fn honors_cluster_profile(adherence: &str) -> bool {
    !LEGACY_ADHERENCE.contains(&adherence)
}

/// The named profile's spec (controller-runtime-common's `GetTLSProfileSpec`): unset, empty
/// or unknown types are `Intermediate`.
fn profile_spec(
    profile: Option<&TlsSecurityProfile>,
) -> Result<(&'static str, TlsProfileSpec), TlsProfileError> {
    let named = |min: &str, ciphers: &mut dyn Iterator<Item = &&str>| TlsProfileSpec {
        ciphers: ciphers.map(|c| c.to_string()).collect(),
        min_tls_version: min.to_string(),
    };
    let intermediate = || {
        let mut ciphers = TLS13_CIPHERS.iter().chain(&INTERMEDIATE_TLS12_CIPHERS);
        ("Intermediate", named("VersionTLS12", &mut ciphers))
    };
    match profile.map(|p| p.type_.as_str()).unwrap_or_default() {
        "Old" => {
            let mut ciphers = (TLS13_CIPHERS.iter())
                .chain(&INTERMEDIATE_TLS12_CIPHERS)
                .chain(&OLD_ONLY_CIPHERS);
            Ok(("Old", named("VersionTLS10", &mut ciphers)))
        }
        "Modern" => Ok(("Modern", named("VersionTLS13", &mut TLS13_CIPHERS.iter()))),
        "Custom" => (profile.and_then(|p| p.custom.clone()))
            .map(|spec| ("Custom", spec))
            .ok_or(TlsProfileError::CustomNil),
        _ => Ok(intermediate()),
    }
}

/// Go's name of a profile's cipher (IANA names are taken as they are), when this build serves
/// it.
fn go_cipher(name: &str) -> Option<&'static str> {
    (OPENSSL_NAMES.iter())
        .find(|(openssl, _)| *openssl == name)
        .map(|(_, go)| *go)
        .or_else(|| SUPPORTED_SUITES.iter().find(|s| **s == name).copied())
}

/// The settings a profile spec gives (controller-runtime-common's `NewTLSConfigFromProfile`):
/// its minimum, and below TLS 1.3 its TLS 1.2 ciphers (none served: the defaults, as Go's
/// empty list).
fn from_spec(name: &'static str, spec: &TlsProfileSpec) -> Result<ClusterProfile, TlsProfileError> {
    // An empty minimum is library-go's `DefaultTLSVersion`, TLS 1.2.
    let min = match spec.min_tls_version.as_str() {
        "" => TlsVersion::Tls12,
        given => {
            TlsVersion::parse(given).map_err(|_| TlsProfileError::Version(given.to_string()))?
        }
    };
    let mut cipher_suites = Vec::new();
    let mut ignored_ciphers = Vec::new();
    if min != TlsVersion::Tls13 {
        for cipher in &spec.ciphers {
            match go_cipher(cipher) {
                // Go never restricts TLS 1.3 suites by this list.
                Some(go) if is_tls13(go) => {}
                Some(go) if !cipher_suites.contains(&go) => cipher_suites.push(go),
                Some(_) => {}
                None => ignored_ciphers.push(cipher.clone()),
            }
        }
    }
    Ok(ClusterProfile {
        name,
        settings: TlsSettings {
            min_version: Some(min),
            cipher_suites,
        },
        ignored_ciphers,
    })
}

/// The cluster's profile for `apiserver` (`None`: none exists, or it is not honoured); an error
/// when the profile cannot be used (upstream then keeps the profile it had).
pub fn cluster_profile(
    apiserver: Option<&ApiServerTls>,
) -> Result<Option<ClusterProfile>, TlsProfileError> {
    let Some(apiserver) = apiserver.filter(|a| honors_cluster_profile(&a.tls_adherence)) else {
        return Ok(None);
    };
    let (name, spec) = profile_spec(apiserver.tls_security_profile.as_ref())?;
    from_spec(name, &spec).map(Some)
}

/// What is served: the cluster's profile (if any) with the flags' settings over it, each flag
/// that was given replacing its field (upstream's `ApplySettings`).
pub fn effective(profile: Option<&ClusterProfile>, flags: &TlsSettings) -> TlsSettings {
    let base = profile.map(|p| p.settings.clone()).unwrap_or_default();
    TlsSettings {
        min_version: flags.min_version.or(base.min_version),
        cipher_suites: if flags.cipher_suites.is_empty() {
            base.cipher_suites
        } else {
            flags.cipher_suites.clone()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apiserver(value: serde_json::Value) -> ApiServerTls {
        serde_json::from_value(value).unwrap()
    }

    const INTERMEDIATE_GO: [&str; 6] = [
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ];

    #[test]
    fn adherence_decides_whether_the_profile_applies() {
        for (adherence, honoured) in [
            ("", false),
            ("LegacyAdheringComponentsOnly", false),
            ("StrictAllComponents", true),
            // Unknown values are the stricter one.
            ("SomethingNew", true),
        ] {
            assert_eq!(honors_cluster_profile(adherence), honoured, "{adherence:?}");
        }
    }

    #[test]
    fn the_cluster_profile_by_type() {
        type Case = (
            serde_json::Value,
            Option<(
                &'static str,
                Option<TlsVersion>,
                Vec<&'static str>,
                Vec<&'static str>,
            )>,
        );
        let strict = |profile: serde_json::Value| serde_json::json!({"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": profile});
        let cases: Vec<Case> = vec![
            // Not honoured: no adherence, or the legacy one.
            (
                serde_json::json!({"tlsSecurityProfile": {"type": "Modern", "modern": {}}}),
                None,
            ),
            (
                serde_json::json!({"tlsAdherence": "LegacyAdheringComponentsOnly", "tlsSecurityProfile": {"type": "Modern"}}),
                None,
            ),
            // Unset, empty or unknown type: Intermediate.
            (
                serde_json::json!({"tlsAdherence": "StrictAllComponents"}),
                Some((
                    "Intermediate",
                    Some(TlsVersion::Tls12),
                    INTERMEDIATE_GO.to_vec(),
                    vec![],
                )),
            ),
            (
                strict(serde_json::json!({"type": "Recent"})),
                Some((
                    "Intermediate",
                    Some(TlsVersion::Tls12),
                    INTERMEDIATE_GO.to_vec(),
                    vec![],
                )),
            ),
            (
                strict(serde_json::json!({"type": "Intermediate", "intermediate": {}})),
                Some((
                    "Intermediate",
                    Some(TlsVersion::Tls12),
                    INTERMEDIATE_GO.to_vec(),
                    vec![],
                )),
            ),
            // Modern: TLS 1.3 only, whose suites are never restricted.
            (
                strict(serde_json::json!({"type": "Modern", "modern": {}})),
                Some(("Modern", Some(TlsVersion::Tls13), vec![], vec![])),
            ),
            // Old: TLS 1.0 is TLS 1.2 here; its CBC, RSA and 3DES suites are left out.
            (
                strict(serde_json::json!({"type": "Old", "old": {}})),
                Some((
                    "Old",
                    Some(TlsVersion::Tls12),
                    INTERMEDIATE_GO.to_vec(),
                    OLD_ONLY_CIPHERS.to_vec(),
                )),
            ),
            // Custom: OpenSSL and IANA names, duplicates once, the unknown left out.
            (
                strict(serde_json::json!({"type": "Custom", "custom": {
                    "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                                "TLS_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "AES128-SHA"],
                    "minTLSVersion": "VersionTLS12"}})),
                Some((
                    "Custom",
                    Some(TlsVersion::Tls12),
                    vec![
                        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                    ],
                    vec!["AES128-SHA"],
                )),
            ),
            // Custom without a minimum: library-go's default, TLS 1.2.
            (
                strict(serde_json::json!({"type": "Custom", "custom": {
                    "ciphers": ["ECDHE-ECDSA-AES128-GCM-SHA256"]}})),
                Some((
                    "Custom",
                    Some(TlsVersion::Tls12),
                    vec!["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
                    vec![],
                )),
            ),
            // Custom at TLS 1.3: the list is not used, as Go's.
            (
                strict(serde_json::json!({"type": "Custom", "custom": {
                    "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256"], "minTLSVersion": "VersionTLS13"}})),
                Some(("Custom", Some(TlsVersion::Tls13), vec![], vec![])),
            ),
        ];
        for (spec, want) in cases {
            let got = cluster_profile(Some(&apiserver(spec.clone()))).unwrap();
            let got = got.map(|p| {
                (
                    p.name,
                    p.settings.min_version,
                    p.settings.cipher_suites,
                    p.ignored_ciphers,
                )
            });
            let want = want.map(|(n, v, c, i)| {
                (
                    n,
                    v,
                    c,
                    i.into_iter().map(str::to_string).collect::<Vec<_>>(),
                )
            });
            assert_eq!(got, want, "{spec}");
        }
        assert_eq!(cluster_profile(None), Ok(None));
    }

    #[test]
    fn unusable_profiles_are_errors() {
        let custom_nil = apiserver(serde_json::json!({"tlsAdherence": "StrictAllComponents",
            "tlsSecurityProfile": {"type": "Custom"}}));
        let e = cluster_profile(Some(&custom_nil)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "custom TLS profile specified but Custom field is nil"
        );
        let bad_version = apiserver(serde_json::json!({"tlsAdherence": "StrictAllComponents",
            "tlsSecurityProfile": {"type": "Custom", "custom": {"ciphers": [], "minTLSVersion": "VersionTLS14"}}}));
        assert_eq!(
            cluster_profile(Some(&bad_version)),
            Err(TlsProfileError::Version("VersionTLS14".into()))
        );
    }

    #[test]
    fn flags_override_the_profile_field_by_field() {
        let modern = cluster_profile(Some(&apiserver(serde_json::json!({
            "tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": {"type": "Modern"}}))))
        .unwrap();
        let intermediate = cluster_profile(Some(&apiserver(serde_json::json!({
            "tlsAdherence": "StrictAllComponents"}))))
        .unwrap();
        let tls12 = TlsSettings::parse("VersionTLS12", &[]).unwrap();
        let one_suite =
            TlsSettings::parse("", &["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()]).unwrap();
        let cases = [
            // No profile, no flags: the defaults.
            (None, TlsSettings::default(), TlsSettings::default()),
            // No profile: the flags.
            (None, tls12.clone(), tls12.clone()),
            // The profile, as it is.
            (
                modern.clone(),
                TlsSettings::default(),
                TlsSettings {
                    min_version: Some(TlsVersion::Tls13),
                    cipher_suites: vec![],
                },
            ),
            // --tls-min-version over Modern's TLS 1.3.
            (modern.clone(), tls12.clone(), tls12.clone()),
            // --tls-cipher-suites over Intermediate's suites, its minimum kept.
            (
                intermediate.clone(),
                one_suite.clone(),
                TlsSettings {
                    min_version: Some(TlsVersion::Tls12),
                    cipher_suites: vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
                },
            ),
            (
                intermediate.clone(),
                TlsSettings::default(),
                TlsSettings {
                    min_version: Some(TlsVersion::Tls12),
                    cipher_suites: INTERMEDIATE_GO.to_vec(),
                },
            ),
        ];
        for (profile, flags, want) in cases {
            assert_eq!(
                effective(profile.as_ref(), &flags),
                want,
                "{profile:?} {flags:?}"
            );
        }
    }
}
