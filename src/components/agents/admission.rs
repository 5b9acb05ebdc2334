//! The Agent and InfraEnv admission webhooks as the controller serves them (over the host's
//! TLS server, [`crate::host::webhook`]): an AdmissionReview in, [`admit_agent`] or
//! [`admit_infraenv`] (the functions `cvo agent admit` runs), an AdmissionReview out.
//! The InfraEnv rule on `osImageVersion` reads the referenced ClusterDeployment's
//! `spec.installed` from the controller's cache.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::runtime::reflector::{ObjectRef, Store};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::keys::{GROUP, VERSION};
use super::types::{Agent, ClusterDeployment, ClusterReference, InfraEnv};
use super::webhook::{Admission as Verdict, Operation, admit_agent, admit_infraenv, messages};
use crate::host::webhook::Admission;

/// Where the API server POSTs Agent reviews (upstream's admission server path).
pub const AGENT_PATH: &str = "/apis/admission.agentinstall.openshift.io/v1/agentvalidators";
/// Where the API server POSTs InfraEnv reviews.
pub const INFRAENV_PATH: &str = "/apis/admission.agentinstall.openshift.io/v1/infraenvvalidators";

/// The webhooks, with the ClusterDeployment cache once the controllers run.
pub struct AgentAdmission {
    pub cluster_deployments: Arc<RwLock<Option<Store<ClusterDeployment>>>>,
    /// Another operator serves the API: every request is allowed (its webhooks judge).
    pub standing_down: Arc<AtomicBool>,
}

impl Admission for AgentAdmission {
    fn review(&self, path: &str, body: &[u8]) -> Option<Vec<u8>> {
        let kind = match path {
            AGENT_PATH => "Agent",
            INFRAENV_PATH => "InfraEnv",
            _ => return None,
        };
        let request = serde_json::from_slice(body).unwrap_or(Value::Null);
        if self.standing_down.load(Ordering::Relaxed) {
            return serde_json::to_vec(&allow(&request)).ok();
        }
        let installed = |cd: &ClusterReference| {
            let store = self.cluster_deployments.read().ok()?.clone()?;
            let found = store.get(&ObjectRef::new(&cd.name).within(&cd.namespace))?;
            Some(found.spec.installed)
        };
        serde_json::to_vec(&review(kind, &request, &installed)).ok()
    }
}

/// An AdmissionReview that allows the request, whatever it is.
fn allow(request: &Value) -> Value {
    let uid = request.pointer("/request/uid").and_then(Value::as_str);
    serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "response": {"uid": uid.unwrap_or_default(), "allowed": true}})
}

/// The response to one AdmissionReview for `kind` (`Agent` or `InfraEnv`).
pub fn review(
    kind: &str,
    request: &Value,
    cluster_installed: &dyn Fn(&ClusterReference) -> Option<bool>,
) -> Value {
    let response = match read(request) {
        // Not this webhook's resource: upstream's `shouldValidate` lets it through.
        Ok(req) if !validates(kind, &req) => AdmissionResponse::from(&req),
        Ok(req) => {
            let verdict = judge(kind, &req, cluster_installed);
            let mut response = AdmissionResponse::from(&req);
            response.allowed = verdict.allowed;
            if !verdict.allowed {
                // Upstream's refusals: 400, BadRequest.
                response.result = kube::core::Status {
                    code: 400,
                    reason: "BadRequest".into(),
                    message: verdict.message,
                    ..kube::core::Status::default()
                };
            }
            response
        }
        Err(message) => {
            let mut response = AdmissionResponse::invalid(&message);
            let uid = request.pointer("/request/uid").and_then(Value::as_str);
            response.uid = uid.unwrap_or_default().to_owned();
            response
        }
    };
    serde_json::to_value(response.into_review()).unwrap_or_default()
}

fn read(request: &Value) -> Result<AdmissionRequest<DynamicObject>, String> {
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_value(request.clone()).map_err(|e| e.to_string())?;
    review.try_into().map_err(|e| format!("{e}"))
}

/// Whether the request is for the resource this webhook validates (the group, version and
/// resource of `kind`), as upstream's `shouldValidate` checks.
fn validates(kind: &str, req: &AdmissionRequest<DynamicObject>) -> bool {
    let resource = match kind {
        "Agent" => "agents",
        _ => "infraenvs",
    };
    let r = &req.resource;
    (r.group.as_str(), r.version.as_str(), r.resource.as_str()) == (GROUP, VERSION, resource)
}

fn operation(req: &AdmissionRequest<DynamicObject>) -> Operation {
    use kube::core::admission::Operation as Op;
    match req.operation {
        Op::Create => Operation::Create,
        Op::Update => Operation::Update,
        Op::Delete => Operation::Delete,
        Op::Connect => Operation::Connect,
    }
}

fn decode<K: DeserializeOwned>(object: &Option<DynamicObject>) -> Option<K> {
    serde_json::from_value(serde_json::to_value(object.as_ref()?).ok()?).ok()
}

fn judge(
    kind: &str,
    req: &AdmissionRequest<DynamicObject>,
    cluster_installed: &dyn Fn(&ClusterReference) -> Option<bool>,
) -> Verdict {
    let op = operation(req);
    if matches!(op, Operation::Delete | Operation::Connect) {
        return Verdict::allowed();
    }
    match kind {
        "Agent" => {
            let Some(new) = decode::<Agent>(&req.object) else {
                return Verdict::denied(messages::NO_CONTENT);
            };
            admit_agent(op, decode::<Agent>(&req.old_object).as_ref(), &new)
        }
        _ => {
            let Some(new) = decode::<InfraEnv>(&req.object) else {
                return Verdict::denied(messages::NO_CONTENT);
            };
            let installed = new.spec.cluster_ref.as_ref().and_then(cluster_installed);
            admit_infraenv(
                op,
                decode::<InfraEnv>(&req.old_object).as_ref(),
                &new,
                installed,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(cd: Option<&str>, state: &str) -> Value {
        json!({
            "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": "h1", "namespace": "pool"},
            "spec": {"role": "", "approved": true,
                     "clusterDeploymentName": cd.map(|n| json!({"name": n, "namespace": "pool"}))},
            "status": {"debugInfo": {"state": state}},
        })
    }

    fn request(kind: &str, op: &str, old: Value, new: Value) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u1",
                "kind": {"group": "agent-install.openshift.io", "version": "v1beta1", "kind": kind},
                "resource": {"group": "agent-install.openshift.io", "version": "v1beta1",
                             "resource": if kind == "Agent" { "agents" } else { "infraenvs" }},
                "operation": op, "userInfo": {}, "name": "h1", "namespace": "pool",
                "object": new, "oldObject": old,
            }
        })
    }

    #[test]
    fn a_move_during_installation_is_denied_with_upstreams_message() {
        let req = request(
            "Agent",
            "UPDATE",
            agent(Some("c1"), "installing"),
            agent(Some("c2"), "installing"),
        );
        let out = review("Agent", &req, &|_| None);
        assert_eq!(out["response"]["uid"], "u1");
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(
            out["response"]["status"]["message"],
            "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation."
        );
        assert_eq!(out["response"]["status"]["code"], 400);
        assert_eq!(out["response"]["status"]["reason"], "BadRequest");
        let req = request(
            "Agent",
            "UPDATE",
            agent(Some("c1"), "known"),
            agent(Some("c2"), "known"),
        );
        assert_eq!(
            review("Agent", &req, &|_| None)["response"]["allowed"],
            true
        );
    }

    #[test]
    fn infraenv_cluster_ref_is_immutable_and_kinds_are_checked() {
        let ie = |cd: Option<&str>| {
            json!({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "pool", "namespace": "pool"},
                   "spec": {"clusterRef": cd.map(|n| json!({"name": n, "namespace": "pool"}))}})
        };
        let req = request("InfraEnv", "UPDATE", ie(None), ie(Some("c1")));
        let out = review("InfraEnv", &req, &|_| Some(true));
        assert_eq!(
            out["response"]["status"]["message"],
            "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation."
        );
        // An InfraEnv review sent to the Agent webhook is not its resource: let through, as
        // upstream lets through what is not its group, version and resource.
        let out = review("Agent", &req, &|_| None);
        assert_eq!(out["response"]["allowed"], true);
        assert_eq!(out["response"]["uid"], "u1");
        let mut other = request(
            "Agent",
            "UPDATE",
            agent(Some("c1"), "installing"),
            agent(Some("c2"), "installing"),
        );
        other["request"]["resource"]["version"] = json!("v1");
        assert_eq!(
            review("Agent", &other, &|_| None)["response"]["allowed"],
            true
        );
        // Garbage is refused.
        let out = review("Agent", &json!({"request": 1}), &|_| None);
        assert_eq!(out["response"]["allowed"], false);
    }

    #[test]
    fn a_cross_namespace_reference_is_allowed() {
        let mut moved = agent(Some("hc1"), "known-unbound");
        moved["spec"]["clusterDeploymentName"]["namespace"] = json!("clusters-hc1");
        let req = request("Agent", "UPDATE", agent(None, "known-unbound"), moved);
        assert_eq!(
            review("Agent", &req, &|_| None)["response"]["allowed"],
            true
        );
    }
}
