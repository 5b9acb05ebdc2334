//! Which payload a pass applies (spec §5.1, §7.1): the release `spec.desiredUpdate` asks for,
//! once it is retrieved, loaded and verified; until then, and whenever that fails, the payload
//! applied before stays in use, so a bad release image never half-replaces a good payload.
//!
//! Pure decisions: [`requested_release`], [`switch_decision`], [`release_source`] (a release
//! the cluster names is a pullspec, never a local path) and [`verify_version`]; retrieving it
//! is [`super::retrieve`]'s.

use super::outcome::{LoadFailure, PayloadLoadStep, RequestedUpdate};
use crate::cluster::ClusterVersion;
use crate::cluster::validation::images_for_version;
use crate::payload::PayloadSource;

/// `spec.desiredUpdate` (already validated, invalid fields cleared): its image, or for a version
/// alone the one image an available update or the history names for it (upstream
/// `findUpdateFromConfig`).
pub fn requested_release(cv: &ClusterVersion) -> Option<RequestedUpdate> {
    let update = cv.spec.desired_update.as_ref()?;
    if update.is_preflight() {
        return None;
    }
    update_target(cv)
}

/// The release a preflight (`spec.desiredUpdate.mode: Preflight`) checks, chosen as an update's
/// would be; `None` when no preflight is asked for.
pub fn preflight_target(cv: &ClusterVersion) -> Option<RequestedUpdate> {
    let update = cv.spec.desired_update.as_ref()?;
    if !update.is_preflight() {
        return None;
    }
    update_target(cv)
}

/// The release `spec.desiredUpdate` names, whatever its mode.
fn update_target(cv: &ClusterVersion) -> Option<RequestedUpdate> {
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

/// Where a release the cluster names may be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReleaseSources {
    /// Registries only: `spec.desiredUpdate.image` is a pullspec, never a path. Anyone who
    /// can write the ClusterVersion must not make the operator read its own files.
    #[default]
    Registries,
    /// For tests only: directories, `file://` and `oci-layout:` paths as the command line
    /// takes them, besides pullspecs.
    RegistriesAndLocalFiles,
}

/// Where `image`, named by the cluster, is pulled from: its registry, when it is a pullspec;
/// otherwise it is refused (`RetrievePayload`). Local files (tests only) are
/// [`super::retrieve`]'s to resolve.
pub fn release_source(image: &str) -> Result<PayloadSource, LoadFailure> {
    if is_pullspec(image) {
        return Ok(PayloadSource::Registry(image.to_string()));
    }
    Err(LoadFailure {
        step: PayloadLoadStep::RetrievePayload,
        error: format!(
            "{image:?} is not a release image pullspec (HOST[:PORT]/REPOSITORY[:TAG] or ...@sha256:DIGEST): the operator only pulls release images from registries"
        ),
    })
}

/// A fully qualified image reference: a registry host (with a `.` or a port, or `localhost`;
/// bracketed IPv6 hosts need a port), a repository, and optionally a tag or digest; no
/// transport prefix (`docker://`, `oci-layout:`, `file://`). Short Docker Hub names are not
/// accepted: a cluster names its registry.
fn is_pullspec(image: &str) -> bool {
    let Some((host, rest)) = image.split_once('/') else {
        return false;
    };
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let host_ok = name.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '[')
        && (name.contains('.') || port.is_some() || name == "localhost")
        && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-[]:".contains(&b));
    let path = rest.split(['@', ':']).next().unwrap_or("");
    let path_ok = !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
        && path
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b));
    host_ok && path_ok && !image.contains("://") && !image.chars().any(char::is_whitespace)
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
    fn a_cluster_names_releases_by_pullspec_only() {
        let registry = release_source;
        for ok in [
            "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64",
            "quay.io/openshift-release-dev/ocp-release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "127.0.0.1:5000/cvo/release:4.18.0",
            "localhost/cvo/release",
            "registry.example.com:443/a/b/c:tag",
        ] {
            assert_eq!(registry(ok), Ok(PayloadSource::Registry(ok.into())), "{ok}");
        }
        for bad in [
            "bundled",
            "/etc/passwd",
            "payloads/4.18.0",
            "./x.y/z",
            "file:///var/lib/payload",
            "oci-layout:/tmp/layout:4.18.0",
            "docker://quay.io/a/b:1",
            "quay.io/../../etc",
            "quay.io/a b:1",
            "ubuntu:22.04",
            "",
        ] {
            let e = registry(bad).unwrap_err();
            assert_eq!(e.step, PayloadLoadStep::RetrievePayload, "{bad}");
            assert!(
                e.error.contains("is not a release image pullspec"),
                "{bad}: {e}"
            );
        }
    }
}
