//! hive's real ClusterDeployment CRD, generated from hive's API module by `hack/hive-crd/gen.sh`
//! (controller-gen over `github.com/openshift/hive/apis/hive/v1`, cached outside the work
//! tree; nothing generated is in the repository). Without Go or the module proxy, a CRD of the
//! same name with fields `cvo`'s schema lacks stands in for it, unless `CVO_REQUIRE_CLUSTER=1`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// hive's ClusterDeployment CRD as JSON, and where it came from.
pub fn hive_cluster_deployment_crd() -> anyhow::Result<(Value, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/hive-crd/gen.sh");
    let generated = Command::new(&script)
        .output()
        .with_context(|| format!("cannot run {}", script.display()))
        .and_then(|out| {
            if !out.status.success() {
                bail!("{}", String::from_utf8_lossy(&out.stderr));
            }
            let dir = String::from_utf8(out.stdout)?.trim().to_owned();
            let file = Path::new(&dir).join("hive.openshift.io_clusterdeployments.yaml");
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let crd: Value = serde_saphyr::from_str(&text)?;
            Ok((
                crd,
                format!("generated from hive's API module ({})", file.display()),
            ))
        });
    match generated {
        Ok(found) => Ok(found),
        Err(e) if std::env::var("CVO_REQUIRE_CLUSTER").as_deref() == Ok("1") => {
            Err(e.context("cannot generate hive's CRD and CVO_REQUIRE_CLUSTER=1"))
        }
        Err(e) => {
            eprintln!(
                "note: cannot generate hive's CRD ({e:#}); using a stand-in with fields cvo lacks"
            );
            Ok((stand_in(), "a stand-in with fields cvo lacks".into()))
        }
    }
}

/// A ClusterDeployment CRD of hive's name and group with a few of hive's fields `cvo`'s lacks.
fn stand_in() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusterdeployments.hive.openshift.io",
                     "annotations": {"controller-gen.kubebuilder.io/version": "v0.23.0"}},
        "spec": {"group": "hive.openshift.io", "scope": "Namespaced",
                 "names": {"plural": "clusterdeployments", "singular": "clusterdeployment",
                           "kind": "ClusterDeployment", "listKind": "ClusterDeploymentList",
                           "shortNames": ["cd"]},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "required": ["baseDomain", "clusterName", "platform"],
                                            "properties": {
                                       "baseDomain": {"type": "string"},
                                       "clusterName": {"type": "string"},
                                       "installed": {"type": "boolean"},
                                       "preserveOnDelete": {"type": "boolean"},
                                       "installAttemptsLimit": {"type": "integer", "format": "int32"},
                                       "pullSecretRef": {"type": "object", "properties": {"name": {"type": "string"}}},
                                       "clusterInstallRef": {"type": "object", "properties": {
                                           "group": {"type": "string"}, "version": {"type": "string"},
                                           "kind": {"type": "string"}, "name": {"type": "string"}}},
                                       "platform": {"type": "object", "properties": {
                                           "agentBareMetal": {"type": "object", "properties": {
                                               "agentSelector": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": true}}}}}}},
                                   "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    })
}
