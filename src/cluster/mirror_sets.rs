//! The cluster's ImageDigestMirrorSets (`config.openshift.io/v1`, cluster-scoped), read for
//! the release pulls `cvo start` makes: the shell around [`crate::release::digest_mirrors`].

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;

use crate::release::digest_mirrors::{DigestMirrors, ImageDigestMirrorSetSpec};

/// Every ImageDigestMirrorSet's rules, merged. An API that is not installed is no rule; a set
/// whose spec does not parse is left out with a warning naming it.
pub async fn digest_mirrors(client: &kube::Client) -> Result<DigestMirrors, kube::Error> {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "ImageDigestMirrorSet");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "imagedigestmirrorsets");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let sets = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(DigestMirrors::default()),
        Err(e) => return Err(e),
    };
    let mut specs = Vec::new();
    for set in sets {
        let name = set.metadata.name.unwrap_or_default();
        let spec = (set.data.get("spec").cloned())
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        match serde_json::from_value::<ImageDigestMirrorSetSpec>(spec) {
            Ok(spec) => specs.push(spec),
            Err(error) => {
                tracing::warn!(%error, "ImageDigestMirrorSet {name}: its spec is not valid; its mirrors are not used")
            }
        }
    }
    Ok(DigestMirrors::from_specs(&specs))
}

/// `images` with the cluster's ImageDigestMirrorSets as its mirrors; without them (with a
/// warning) when they cannot be read.
pub async fn with_cluster_mirrors(
    client: &kube::Client,
    images: &crate::oci::Options,
) -> crate::oci::Options {
    let mut images = images.clone();
    match digest_mirrors(client).await {
        Ok(mirrors) => images.mirrors = mirrors,
        Err(error) => {
            tracing::warn!(%error, "cannot list the ImageDigestMirrorSets; releases are pulled from their own repositories")
        }
    }
    images
}
