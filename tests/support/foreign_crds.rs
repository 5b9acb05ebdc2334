//! Stand-ins for CRDs a real cluster gets from other components (prometheus-operator, the
//! config operator): the bundled payload has custom resources of both kinds, which neither it
//! nor the apiserver defines. Shared by the cluster tests and the apply benchmark.

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

/// Server-side applies the ServiceMonitor, PrometheusRule, ClusterImagePolicy,
/// ImageDigestMirrorSet, ImageContentSourcePolicy, Proxy and APIServer CRDs (schemaless) and
/// waits until they are Established.
pub async fn install_foreign_crds(client: &kube::Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("cvo-test").force();
    for (group, version, plural, kind, scope) in [
        (
            "monitoring.coreos.com",
            "v1",
            "servicemonitors",
            "ServiceMonitor",
            "Namespaced",
        ),
        (
            "monitoring.coreos.com",
            "v1",
            "prometheusrules",
            "PrometheusRule",
            "Namespaced",
        ),
        (
            "config.openshift.io",
            "v1",
            "clusterimagepolicies",
            "ClusterImagePolicy",
            "Cluster",
        ),
        // Where releases are pulled from when their registry is mirrored.
        (
            "config.openshift.io",
            "v1",
            "imagedigestmirrorsets",
            "ImageDigestMirrorSet",
            "Cluster",
        ),
        // Their older form, still honoured.
        (
            "operator.openshift.io",
            "v1alpha1",
            "imagecontentsourcepolicies",
            "ImageContentSourcePolicy",
            "Cluster",
        ),
        // The egress settings the update service is reached with (no status subresource:
        // the tests write the status the network operator would).
        ("config.openshift.io", "v1", "proxies", "Proxy", "Cluster"),
        // The cluster's TLS profile (spec.tlsSecurityProfile) the metrics server follows.
        (
            "config.openshift.io",
            "v1",
            "apiservers",
            "APIServer",
            "Cluster",
        ),
    ] {
        let name = format!("{plural}.{group}");
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "kind": kind, "singular": kind.to_lowercase()},
                     "versions": [{"name": version, "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
        });
        api.patch(&name, &params, &Patch::Apply(&crd)).await?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .with_context(|| format!("{name} not Established"))??;
    }
    Ok(())
}
