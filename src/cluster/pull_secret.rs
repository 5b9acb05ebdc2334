//! The cluster's pull secret (Secret `openshift-config/pull-secret`, key `.dockerconfigjson`),
//! read for the release pulls `cvo start` makes: upstream, a node pulls the release image with
//! it (the kubelet's global pull secret), so `cvo` uses its credentials as that node would.
//! The shell around [`crate::oci::registry::PullSecret`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use crate::oci::registry::PullSecret;

pub const PULL_SECRET_NAMESPACE: &str = "openshift-config";
pub const PULL_SECRET_NAME: &str = "pull-secret";

/// The pull secret as it is now. A Secret that is missing, unreadable or malformed gives no
/// credentials; the reason lands in the message of a pull the registry then refuses.
pub async fn pull_secret(client: &kube::Client) -> PullSecret {
    let name = format!("{PULL_SECRET_NAMESPACE}/{PULL_SECRET_NAME}");
    let api: Api<Secret> = Api::namespaced(client.clone(), PULL_SECRET_NAMESPACE);
    match api.get_opt(PULL_SECRET_NAME).await {
        Ok(secret) => {
            let data: Option<BTreeMap<String, Vec<u8>>> = secret.map(|s| {
                (s.data.unwrap_or_default().into_iter())
                    .map(|(key, value)| (key, value.0))
                    .collect()
            });
            PullSecret::from_secret_data(&name, data.as_ref())
        }
        Err(error) => {
            tracing::warn!(%error, "cannot read the pull secret {name}; releases are pulled without it");
            PullSecret {
                name,
                auths: Err(format!("cannot read it: {error}")),
            }
        }
    }
}

/// `images` as a node pulls a release image: through the cluster's mirror sets
/// ([`super::mirror_sets`]) and with its pull secret.
pub async fn as_a_node_pulls(
    client: &kube::Client,
    images: &crate::oci::Options,
) -> crate::oci::Options {
    let mut images = super::mirror_sets::with_cluster_mirrors(client, images).await;
    images.registry.pull_secret = Some(pull_secret(client).await);
    images
}
