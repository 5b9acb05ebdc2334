//! Where the apply pass stands down: a payload CRD that stands in for another operator's
//! ([`crate::ownership`]) is not applied where that operator's CRD is live, and neither is an
//! admission webhook configuration of the payload that would put a second webhook on that
//! CRD's objects (one the CVO applied before is deleted). The decision is
//! [`crate::ownership::judge`]'s; this shell reads the live objects.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject};
use serde_json::Value;

use super::task::FIELD_MANAGER;
use crate::manifest::Manifest;
use crate::ownership::{Foreign, foreign_stand_in, stand_in, webhook_covers_stand_in};

/// Why `manifest` is not applied, if it is not: a stand-in CRD whose live CRD is another
/// operator's, or a webhook configuration on such a CRD's objects.
pub(crate) async fn stand_down(
    client: &kube::Client,
    manifest: &Manifest,
    payload: &[Manifest],
) -> Result<Option<String>, kube::Error> {
    if manifest
        .gvk
        .is("apiextensions.k8s.io", "CustomResourceDefinition")
    {
        let ours = manifest.object();
        if stand_in(&ours).is_none() {
            return Ok(None);
        }
        return Ok(foreign(client, &ours).await?.map(|f| {
            format!("{f}: the CVO does not replace another operator's CustomResourceDefinition")
        }));
    }
    let webhook = manifest.gvk.is(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ) || manifest.gvk.is(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    );
    if !webhook {
        return Ok(None);
    }
    let object = manifest.object();
    for crd in payload.iter().map(Manifest::object) {
        if !webhook_covers_stand_in(&object, &crd) {
            continue;
        }
        let Some(f) = foreign(client, &crd).await? else {
            continue;
        };
        let group = str_at(&crd, "/spec/group");
        let plural = str_at(&crd, "/spec/names/plural");
        let deleted = delete_own(client, manifest).await?;
        let also = match deleted {
            true => "; the one the CVO applied before is deleted",
            false => "",
        };
        return Ok(Some(format!(
            "it would put a second admission webhook on {plural}.{group}, and {f}: not applied{also}"
        )));
    }
    Ok(None)
}

/// The live CRD of the payload's `ours`, when it is another operator's.
async fn foreign(client: &kube::Client, ours: &Value) -> Result<Option<Foreign>, kube::Error> {
    let name = (ours.pointer("/metadata/name").and_then(Value::as_str)).unwrap_or_default();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let live = api.get_opt(name).await?;
    let live = live.map(|crd| serde_json::to_value(crd).unwrap_or_default());
    Ok(foreign_stand_in(ours, live.as_ref(), FIELD_MANAGER))
}

fn str_at<'a>(doc: &'a Value, pointer: &str) -> &'a str {
    doc.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Deletes the live webhook configuration of `manifest` if the CVO applied it (its manager
/// manages its webhooks); whether it did.
async fn delete_own(client: &kube::Client, manifest: &Manifest) -> Result<bool, kube::Error> {
    let resource = kube::discovery::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        &manifest.gvk.group,
        &manifest.gvk.version,
        &manifest.gvk.kind,
    ));
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let name = manifest.id.name.as_str();
    let Some(live) = api.get_opt(name).await? else {
        return Ok(false);
    };
    let ours = (live.metadata.managed_fields.iter().flatten()).any(|f| {
        f.manager.as_deref() == Some(FIELD_MANAGER)
            && f.fields_v1
                .as_ref()
                .is_some_and(|v| v.0.get("f:webhooks").is_some())
    });
    if !ours {
        return Ok(false);
    }
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}
