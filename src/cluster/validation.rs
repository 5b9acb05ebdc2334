//! The CVO's own checks of the ClusterVersion spec (upstream `lib/validation`,
//! `ValidateClusterVersion` and `ClearInvalidFields`; spec §5.1). The API server's schema
//! accepts more than the CVO can act on; what fails here is reported in the `Invalid` condition
//! and ignored (cleared) for the sync, never fatal. Pure.

use std::fmt;

use super::{ClusterVersion, ClusterVersionSpec, UPDATE_MODE_PREFLIGHT};
use crate::manifest::go_quote;
use crate::updates::request::{go_url_error, parse_uuid};

/// One problem, as apimachinery's `field.Error` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// `spec.clusterID`, `spec.desiredUpdate.version`, …
    pub field: &'static str,
    /// `Some(value)` for `Invalid value: "<value>"`; `None` for `Required value`.
    pub value: Option<String>,
    pub detail: &'static str,
    /// apimachinery's `field.NotSupported`: `Unsupported value: "<value>": supported values:
    /// <detail>` instead of `Invalid value`.
    pub unsupported: bool,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) if self.unsupported => write!(
                f,
                "{}: Unsupported value: {}: supported values: {}",
                self.field,
                go_quote(value),
                self.detail
            ),
            Some(value) => write!(
                f,
                "{}: Invalid value: {}: {}",
                self.field,
                go_quote(value),
                self.detail
            ),
            None => write!(f, "{}: Required value: {}", self.field, self.detail),
        }
    }
}

/// Upstream `ValidateClusterVersion` (the checks of the spec; the object name is always
/// `version` here).
pub fn validate_cluster_version(cv: &ClusterVersion) -> Vec<FieldError> {
    let spec = &cv.spec;
    let mut errors = vec![];
    if let Some(upstream) = spec.upstream.as_deref().filter(|u| !u.is_empty())
        && go_url_error(upstream).is_some()
    {
        errors.push(invalid(
            "spec.upstream",
            upstream,
            "must be a valid URL or empty",
        ));
    }
    if !spec.cluster_id.is_empty() {
        let id = parse_uuid(&spec.cluster_id).unwrap_or([0; 16]);
        if id[8] & 0xc0 != 0x80 {
            errors.push(invalid(
                "spec.clusterID",
                &spec.cluster_id,
                "must be an RFC4122-variant UUID",
            ));
        } else if id[6] >> 4 != 4 {
            errors.push(invalid(
                "spec.clusterID",
                &spec.cluster_id,
                "must be a version-4 UUID",
            ));
        }
    }
    if let Some(update) = &spec.desired_update {
        let version = update.version.as_deref().unwrap_or_default();
        let image = update.image.as_deref().unwrap_or_default();
        let architecture = update.architecture.as_deref().unwrap_or_default();
        const FIELD: &str = "spec.desiredUpdate.version";
        // Upstream main (acceptRisks reconciled): a desiredUpdate that only accepts risks is
        // valid. Its error is on `spec.desiredUpdate` itself, which ClearInvalidFields (a
        // `spec.desiredUpdate.` prefix) leaves in place, as upstream's does.
        if let Some(mode) = update
            .mode
            .as_deref()
            .filter(|m| *m != UPDATE_MODE_PREFLIGHT)
        {
            // The CRD's enum refuses it on a real cluster; a CRD without the field does not.
            errors.push(FieldError {
                field: "spec.desiredUpdate.mode",
                value: Some(mode.to_string()),
                detail: "\"Preflight\"",
                unsupported: true,
            });
        }
        if version.is_empty()
            && image.is_empty()
            && architecture.is_empty()
            && update.accept_risks.is_empty()
        {
            errors.push(FieldError {
                field: "spec.desiredUpdate",
                value: None,
                detail: "must specify architecture, version, image, or acceptRisks",
                unsupported: false,
            });
        } else if !version.is_empty() && semver::Version::parse(version).is_err() {
            errors.push(invalid(
                FIELD,
                version,
                "must be a semantic version (1.2.3[-...])",
            ));
        } else if !version.is_empty() && image.is_empty() {
            match images_for_version(cv, version).len() {
                0 => errors.push(invalid(
                    FIELD,
                    version,
                    "when image is empty the update must be an available update",
                )),
                1 => {}
                _ => errors.push(invalid(
                    FIELD,
                    version,
                    "there are multiple possible payloads for this version, specify the exact image",
                )),
            }
        }
    }
    errors
}

/// Upstream `ClearInvalidFields`: the spec the sync acts on.
pub fn clear_invalid_fields(
    spec: &ClusterVersionSpec,
    errors: &[FieldError],
) -> ClusterVersionSpec {
    let mut spec = spec.clone();
    for error in errors {
        match error.field {
            f if f.starts_with("spec.desiredUpdate.") => spec.desired_update = None,
            "spec.upstream" => spec.upstream = None,
            "spec.clusterID" => spec.cluster_id.clear(),
            _ => {}
        }
    }
    spec
}

/// The images a version-only `desiredUpdate` may mean (upstream `countPayloadsForVersion`):
/// the available updates of that version, else the newest history entry of it.
pub fn images_for_version(cv: &ClusterVersion, version: &str) -> Vec<String> {
    let status = cv.status.clone().unwrap_or_default();
    let available: Vec<String> = (status.available_updates.iter().flatten())
        .filter(|u| u.version.as_deref() == Some(version))
        .filter_map(|u| u.image.clone().filter(|i| !i.is_empty()))
        .collect();
    if !available.is_empty() {
        return available;
    }
    (status.history.iter())
        .find(|h| h.version.as_deref() == Some(version) && !h.image.is_empty())
        .map(|h| vec![h.image.clone()])
        .unwrap_or_default()
}

fn invalid(field: &'static str, value: &str, detail: &'static str) -> FieldError {
    FieldError {
        field,
        value: Some(value.to_string()),
        detail,
        unsupported: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterVersionStatus, Release, Update, UpdateHistory};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    const ID: &str = "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61";

    fn cv(spec: ClusterVersionSpec) -> ClusterVersion {
        ClusterVersion::new("version", spec)
    }

    fn messages(cv: &ClusterVersion) -> Vec<String> {
        validate_cluster_version(cv)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn cluster_ids() {
        let with_id = |id: &str| {
            cv(ClusterVersionSpec {
                cluster_id: id.into(),
                ..Default::default()
            })
        };
        assert!(messages(&with_id(ID)).is_empty());
        assert!(messages(&with_id(&format!("{{{ID}}}"))).is_empty());
        assert!(messages(&with_id(&ID.replace('-', ""))).is_empty());
        assert_eq!(
            messages(&with_id("not-valid-cluster-id")),
            [
                r#"spec.clusterID: Invalid value: "not-valid-cluster-id": must be an RFC4122-variant UUID"#
            ]
        );
        // A version-1 UUID.
        assert_eq!(
            messages(&with_id("6ba7b810-9dad-11d1-80b4-00c04fd430c8")),
            [
                r#"spec.clusterID: Invalid value: "6ba7b810-9dad-11d1-80b4-00c04fd430c8": must be a version-4 UUID"#
            ]
        );
    }

    #[test]
    fn update_modes() {
        let with = |mode: &str| {
            cv(ClusterVersionSpec {
                cluster_id: ID.into(),
                desired_update: Some(Update {
                    image: Some("quay.io/r@sha256:1".into()),
                    mode: Some(mode.into()),
                    ..Default::default()
                }),
                ..Default::default()
            })
        };
        assert!(messages(&with("Preflight")).is_empty());
        let typo = with("preflight");
        assert_eq!(
            messages(&typo),
            [
                r#"spec.desiredUpdate.mode: Unsupported value: "preflight": supported values: "Preflight""#
            ]
        );
        // An unknown mode is neither a preflight nor an update: the request is ignored.
        let errors = validate_cluster_version(&typo);
        assert_eq!(
            clear_invalid_fields(&typo.spec, &errors).desired_update,
            None
        );
    }

    #[test]
    fn upstream_urls() {
        let with = |u: &str| {
            cv(ClusterVersionSpec {
                cluster_id: ID.into(),
                upstream: Some(u.into()),
                ..Default::default()
            })
        };
        assert!(
            messages(&with(
                "https://api.openshift.com/api/upgrades_info/v1/graph"
            ))
            .is_empty()
        );
        assert_eq!(
            messages(&with("#%GG")),
            [r##"spec.upstream: Invalid value: "#%GG": must be a valid URL or empty"##]
        );
    }

    fn entry(version: &str, image: &str) -> UpdateHistory {
        UpdateHistory {
            state: "Completed".into(),
            started_time: Time(Timestamp::UNIX_EPOCH),
            completion_time: None,
            version: Some(version.into()),
            image: image.into(),
            verified: false,
            accepted_risks: None,
        }
    }

    fn release(version: &str, image: &str) -> Release {
        Release {
            version: Some(version.into()),
            image: Some(image.into()),
            ..Default::default()
        }
    }

    #[test]
    fn desired_updates() {
        let with = |version: Option<&str>, image: Option<&str>| {
            let mut c = cv(ClusterVersionSpec {
                cluster_id: ID.into(),
                desired_update: Some(Update {
                    version: version.map(str::to_string),
                    image: image.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            });
            c.status = Some(ClusterVersionStatus {
                history: vec![entry("4.0.1", "image/image:v4.0.1")],
                available_updates: Some(vec![
                    release("4.0.2", "test/image:1"),
                    release("4.0.3", "test/image:2"),
                    release("4.0.3", "test/image:3"),
                ]),
                ..Default::default()
            });
            c
        };
        assert!(messages(&with(None, Some("quay.io/r@sha256:1"))).is_empty());
        assert!(messages(&with(Some("4.0.2"), None)).is_empty());
        assert!(
            messages(&with(Some("4.0.1"), None)).is_empty(),
            "a previous version"
        );
        assert_eq!(
            messages(&with(None, None)),
            [
                "spec.desiredUpdate: Required value: must specify architecture, version, image, or acceptRisks"
            ]
        );
        let mut accepting = with(None, None);
        if let Some(u) = accepting.spec.desired_update.as_mut() {
            u.accept_risks = vec![crate::cluster::AcceptRisk { name: "R".into() }];
        }
        assert!(messages(&accepting).is_empty(), "risks only");
        assert_eq!(
            messages(&with(Some("4.0"), None)),
            [
                r#"spec.desiredUpdate.version: Invalid value: "4.0": must be a semantic version (1.2.3[-...])"#
            ]
        );
        assert_eq!(
            messages(&with(Some("4.0.4"), None)),
            [
                r#"spec.desiredUpdate.version: Invalid value: "4.0.4": when image is empty the update must be an available update"#
            ]
        );
        assert_eq!(
            messages(&with(Some("4.0.3"), None)),
            [
                r#"spec.desiredUpdate.version: Invalid value: "4.0.3": there are multiple possible payloads for this version, specify the exact image"#
            ]
        );
        assert_eq!(
            images_for_version(&with(Some("4.0.2"), None), "4.0.2"),
            ["test/image:1"]
        );
    }

    #[test]
    fn invalid_fields_are_cleared() {
        let spec = ClusterVersionSpec {
            cluster_id: "x".into(),
            upstream: Some("#%GG".into()),
            channel: Some("stable-4.18".into()),
            desired_update: Some(Update {
                version: Some("4.0".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let errors = validate_cluster_version(&cv(spec.clone()));
        assert_eq!(errors.len(), 3);
        let cleared = clear_invalid_fields(&spec, &errors);
        assert_eq!(cleared.cluster_id, "");
        assert_eq!(cleared.upstream, None);
        assert_eq!(cleared.desired_update, None);
        assert_eq!(cleared.channel.as_deref(), Some("stable-4.18"));
    }
}
