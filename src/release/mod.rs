//! Release images as `oc adm release` builds, inspects and mirrors them: the decisions, over plain
//! data (no I/O). The shells are [`crate::oci::build`] (layers and images),
//! [`crate::oci::copy`] (registries) and the `cvo payload new|info|mirror` commands.
//!
//! * [`pullspec`]: image pull specs (`registry/repo[:tag][@sha256:…]`).
//! * [`references`]: the `image-references` ImageStream, `--mapping` lines and the substitution
//!   of image references and `0.0.1-snapshot` versions in the manifests (oc's
//!   `image_mapper.go`).
//! * [`elf`]: which architecture an executable is for.
//! * [`diff`]: what changed between two releases (`cvo payload info A B`).
//! * [`digest_mirrors`]: which repositories a pull by digest tries after the cluster's
//!   ImageDigestMirrorSets.
//! * [`mirror`]: where each image of a release goes in a mirror, and the ImageDigestMirrorSet
//!   that redirects a cluster to it.

pub mod diff;
pub mod digest_mirrors;
pub mod elf;
pub mod mirror;
pub mod pullspec;
pub mod references;

/// The image-references tag of the operator image: the release image's base, which holds the
/// `cvo` binary (oc's `--to-image-base-tag` default).
pub const OPERATOR_TAG: &str = "cluster-version-operator";

/// The image config label naming the release (oc writes `is.Name`, the version).
pub const LABEL_RELEASE: &str = "io.openshift.release";
/// The image config label with the digest of the image the release was built on (oc's
/// `annotationReleaseBaseImageDigest`).
pub const LABEL_BASE_IMAGE_DIGEST: &str = "io.openshift.release.base-image-digest";
/// The label marking an image whose `/manifests` contribute to a release (oc's
/// `annotationReleaseOperator`); the CVO's image carries it.
pub const LABEL_RELEASE_OPERATOR: &str = "io.openshift.release.operator";
/// The history comment of the release layer, as oc writes it.
pub const RELEASE_HISTORY_COMMENT: &str = "Release image for OpenShift";

/// OpenShift's name of a Go architecture in tags and release names (oc's `archMap`).
pub fn openshift_arch(go_arch: &str) -> &str {
    match go_arch {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        other => other,
    }
}
