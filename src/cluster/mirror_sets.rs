//! The cluster's ImageDigestMirrorSets (`config.openshift.io/v1`) and ImageContentSourcePolicies
//! (`operator.openshift.io/v1alpha1`), both cluster-scoped, read for the release pulls
//! `cvo start` makes: the shell around [`crate::release::digest_mirrors`].

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde::de::DeserializeOwned;

use crate::release::digest_mirrors::{
    DigestMirrors, ImageContentSourcePolicySpec, ImageDigestMirrorSetSpec,
};

/// Every ImageDigestMirrorSet's and ImageContentSourcePolicy's rules, merged. An API that is
/// not installed is no rule; an object whose spec does not parse is left out with a warning
/// naming it.
pub async fn digest_mirrors(client: &kube::Client) -> Result<DigestMirrors, kube::Error> {
    let mut specs: Vec<ImageDigestMirrorSetSpec> = specs_of(
        client,
        ("config.openshift.io", "v1", "ImageDigestMirrorSet"),
        "imagedigestmirrorsets",
    )
    .await?;
    let policies: Vec<ImageContentSourcePolicySpec> = specs_of(
        client,
        (
            "operator.openshift.io",
            "v1alpha1",
            "ImageContentSourcePolicy",
        ),
        "imagecontentsourcepolicies",
    )
    .await?;
    specs.extend(policies.into_iter().map(ImageDigestMirrorSetSpec::from));
    Ok(DigestMirrors::from_specs(&specs))
}

/// The specs of every object of a cluster-scoped kind; none when its API is not installed.
async fn specs_of<S: DeserializeOwned>(
    client: &kube::Client,
    (group, version, kind): (&str, &str, &str),
    plural: &str,
) -> Result<Vec<S>, kube::Error> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let objects = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut specs = Vec::new();
    for object in objects {
        let name = object.metadata.name.unwrap_or_default();
        let spec = (object.data.get("spec").cloned())
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        match serde_json::from_value::<S>(spec) {
            Ok(spec) => specs.push(spec),
            Err(error) => {
                tracing::warn!(%error, "{kind} {name}: its spec is not valid; its mirrors are not used")
            }
        }
    }
    Ok(specs)
}

/// `images` with the cluster's mirror sets as its mirrors; without them (with a warning) when
/// they cannot be read.
pub async fn with_cluster_mirrors(
    client: &kube::Client,
    images: &crate::oci::Options,
) -> crate::oci::Options {
    let mut images = images.clone();
    match digest_mirrors(client).await {
        Ok(mirrors) => images.mirrors = mirrors,
        Err(error) => {
            tracing::warn!(%error, "cannot list the ImageDigestMirrorSets and ImageContentSourcePolicies; releases are pulled from their own repositories")
        }
    }
    images
}
