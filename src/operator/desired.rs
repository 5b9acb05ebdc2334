//! Which payload a pass applies (spec §5.1, §7.1): the release `spec.desiredUpdate` asks for,
//! once it is retrieved, loaded and verified; until then, and whenever that fails, the payload
//! applied before stays in use, so a bad release image never half-replaces a good payload.
//!
//! The decisions ([`requested_release`], [`switch_decision`], [`verify_version`]) are pure;
//! [`load_release`] is the blocking I/O shell (directory, `oci-layout:` or registry pull).

use super::outcome::{LoadFailure, PayloadLoadStep, RequestedUpdate};
use crate::cluster::ClusterVersion;
use crate::cluster::validation::images_for_version;
use crate::payload::source::{PayloadSource, read_input};
use crate::payload::{LoadOptions, Payload};

/// `spec.desiredUpdate` (already validated, invalid fields cleared): its image, or for a version
/// alone the one image an available update or the history names for it (upstream
/// `findUpdateFromConfig`).
pub fn requested_release(cv: &ClusterVersion) -> Option<RequestedUpdate> {
    let update = cv.spec.desired_update.as_ref()?;
    let version = update.version.clone().unwrap_or_default();
    let image = match update.image.as_deref().filter(|i| !i.is_empty()) {
        Some(image) => image.to_string(),
        None if version.is_empty() => return None,
        None => match images_for_version(cv, &version).as_slice() {
            [one] => one.clone(),
            _ => return None,
        },
    };
    Some(RequestedUpdate { image, version })
}

/// What to do about the requested release before a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchDecision {
    /// Keep applying the current payload: it already is the requested one.
    Keep,
    /// The cluster is still installing: upstream ignores version changes until the install
    /// completed once (`Ignoring detected version change … during payload initialization`).
    IgnoreWhileInitializing,
    /// Retrieve and load this release, then apply it instead.
    Load(RequestedUpdate),
}

/// `target` is the release the cluster should run (`spec.desiredUpdate`, else the payload the
/// operator started with); `current_image` the payload applied now. Pure.
pub fn switch_decision(
    target: RequestedUpdate,
    current_image: &str,
    initializing: bool,
) -> SwitchDecision {
    if target.image == current_image {
        SwitchDecision::Keep
    } else if initializing {
        SwitchDecision::IgnoreWhileInitializing
    } else {
        SwitchDecision::Load(target)
    }
}

/// Upstream's check of `desiredUpdate.version` (`""`: none) against the loaded payload's
/// version. Pure.
pub fn verify_version(requested: Option<&str>, loaded: Option<&str>) -> Result<(), LoadFailure> {
    match (requested, loaded) {
        (Some(want), Some(have)) if !want.is_empty() && want != have => Err(LoadFailure {
            step: PayloadLoadStep::VerifyPayloadVersion,
            error: format!(
                "release image version {have} does not match the expected upstream version {want}"
            ),
        }),
        _ => Ok(()),
    }
}

/// Retrieves (reads the directory, or pulls and extracts the image into the cache), loads and
/// verifies `release`, rendering `{{.ReleaseImage}}` as the requested image. Blocking.
pub fn load_release(
    release: &RequestedUpdate,
    cluster_profile: &str,
) -> Result<Payload, LoadFailure> {
    let source = PayloadSource::from_arg(Some(&release.image));
    let input = read_input(&source).map_err(|e| LoadFailure {
        step: PayloadLoadStep::RetrievePayload,
        error: e.to_string(),
    })?;
    let options = LoadOptions {
        release_image: Some(release.image.clone()),
        cluster_profile: cluster_profile.to_string(),
        strict_templates: false,
    };
    let payload = Payload::from_input(input, &options).map_err(|e| LoadFailure {
        step: PayloadLoadStep::LoadPayload,
        error: e.to_string(),
    })?;
    verify_version(Some(&release.version), payload.version())?;
    for warning in &payload.warnings {
        tracing::warn!(payload = %payload.origin, "{warning}");
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(image: &str) -> RequestedUpdate {
        RequestedUpdate {
            image: image.into(),
            version: String::new(),
        }
    }

    #[test]
    fn requests_name_an_image_or_a_known_version() {
        use crate::cluster::{ClusterVersionSpec, ClusterVersionStatus, Release, Update};
        let mut cv = ClusterVersion::new("version", ClusterVersionSpec::default());
        assert_eq!(requested_release(&cv), None);
        cv.spec.desired_update = Some(Update {
            version: Some("4.18.0".into()),
            ..Default::default()
        });
        assert_eq!(
            requested_release(&cv),
            None,
            "no payload is known for 4.18.0"
        );
        cv.status = Some(ClusterVersionStatus {
            available_updates: Some(vec![Release {
                version: Some("4.18.0".into()),
                image: Some("quay.io/r@sha256:2".into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        assert_eq!(
            requested_release(&cv),
            Some(RequestedUpdate {
                image: "quay.io/r@sha256:2".into(),
                version: "4.18.0".into()
            })
        );
        cv.spec.desired_update = Some(Update {
            version: Some("4.18.0".into()),
            image: Some("quay.io/r@sha256:1".into()),
            ..Default::default()
        });
        assert_eq!(
            requested_release(&cv),
            Some(RequestedUpdate {
                image: "quay.io/r@sha256:1".into(),
                version: "4.18.0".into()
            })
        );
    }

    #[test]
    fn switching_waits_for_the_install() {
        assert_eq!(
            switch_decision(release("a"), "a", false),
            SwitchDecision::Keep
        );
        assert_eq!(
            switch_decision(release("a"), "a", true),
            SwitchDecision::Keep
        );
        assert_eq!(
            switch_decision(release("b"), "a", true),
            SwitchDecision::IgnoreWhileInitializing
        );
        assert_eq!(
            switch_decision(release("b"), "a", false),
            SwitchDecision::Load(release("b"))
        );
    }

    #[test]
    fn version_mismatch_message_is_upstreams() {
        assert_eq!(verify_version(None, Some("4.18.0")), Ok(()));
        assert_eq!(verify_version(Some(""), Some("4.18.0")), Ok(()));
        assert_eq!(verify_version(Some("4.18.0"), Some("4.18.0")), Ok(()));
        assert_eq!(verify_version(Some("4.18.0"), None), Ok(()));
        let e = verify_version(Some("4.18.1"), Some("4.18.0")).unwrap_err();
        assert_eq!(e.step, PayloadLoadStep::VerifyPayloadVersion);
        assert_eq!(
            e.error,
            "release image version 4.18.0 does not match the expected upstream version 4.18.1"
        );
    }

    #[test]
    fn missing_directory_fails_at_retrieval_and_bad_metadata_at_load() {
        let e = load_release(&release("/nonexistent/cvo-payload"), "p").unwrap_err();
        assert_eq!(e.step, PayloadLoadStep::RetrievePayload);
        assert!(e.error.contains("/nonexistent/cvo-payload"), "{}", e.error);

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("release-manifests")).unwrap();
        std::fs::write(
            dir.path().join("release-manifests/release-metadata"),
            "{not json",
        )
        .unwrap();
        let e = load_release(&release(&dir.path().display().to_string()), "p").unwrap_err();
        assert_eq!(e.step, PayloadLoadStep::LoadPayload, "{e}");
    }
}
