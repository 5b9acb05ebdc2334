//! Builders for the objects the tests of this component write, all in namespace `ns` unless
//! told otherwise, each with a `resourceVersion` as if read from the API server.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use super::meta::{add_finalizer, set_annotation, set_label};
use super::model::{Context, Object, World};
use super::types::{
    ClaimPhase, DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClaimSpec,
    DeploymentTargetClass, DeploymentTargetClassSpec, DeploymentTargetSpec, KubernetesCredentials,
    TargetPhase,
};

/// The clock of every test: 2024-05-01T12:00:00Z.
pub fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

/// `now` moved by `seconds`.
pub fn at(seconds: i64) -> Timestamp {
    now() + k8s_openapi::jiff::SignedDuration::from_secs(seconds)
}

pub fn ctx() -> Context {
    Context::at(now())
}

pub fn world(objects: impl IntoIterator<Item = Object>) -> World {
    let mut world = World::new();
    for o in objects {
        world.insert(o);
    }
    world
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_owned),
        resource_version: Some("1".into()),
        ..ObjectMeta::default()
    }
}

/// Metadata edits every builder offers.
pub trait MetaBuilder: Sized {
    fn meta_mut(&mut self) -> &mut ObjectMeta;

    fn annotation(mut self, key: &str, value: &str) -> Self {
        set_annotation(self.meta_mut(), key, value);
        self
    }
    fn label(mut self, key: &str, value: &str) -> Self {
        set_label(self.meta_mut(), key, value);
        self
    }
    fn finalizer(mut self, finalizer: &str) -> Self {
        add_finalizer(self.meta_mut(), finalizer);
        self
    }
    /// Being deleted since `now` moved by `seconds`.
    fn deleting(mut self, seconds: i64) -> Self {
        self.meta_mut().deletion_timestamp = Some(Time(at(seconds)));
        self
    }
    fn in_namespace(mut self, namespace: &str) -> Self {
        self.meta_mut().namespace = Some(namespace.into());
        self
    }
}

pub struct TargetBuilder(DeploymentTarget);

/// A target of `class` with credentials, no phase and no claimRef.
pub fn target(name: &str, class: &str) -> TargetBuilder {
    let spec = DeploymentTargetSpec {
        deployment_target_class_name: class.into(),
        kubernetes_credentials: KubernetesCredentials {
            default_namespace: "deploy".into(),
            api_url: "https://api.example:6443".into(),
            cluster_credentials_secret: "creds".into(),
            allow_insecure_skip_tls_verify: false,
        },
        claim_ref: String::new(),
    };
    let mut dt = DeploymentTarget::new(name, spec);
    dt.metadata = meta(name, Some("ns"));
    TargetBuilder(dt)
}

impl MetaBuilder for TargetBuilder {
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl TargetBuilder {
    pub fn claim_ref(mut self, claim: &str) -> Self {
        self.0.spec.claim_ref = claim.into();
        self
    }
    pub fn phase(mut self, phase: TargetPhase) -> Self {
        self.0.set_phase(phase);
        self
    }
    pub fn no_credentials(mut self) -> Self {
        self.0.spec.kubernetes_credentials = KubernetesCredentials::default();
        self
    }
    pub fn build(self) -> DeploymentTarget {
        self.0
    }
    pub fn object(self) -> Object {
        Object::Target(self.0)
    }
}

pub struct ClaimBuilder(DeploymentTargetClaim);

/// A claim of `class` with no target, phase, annotation or finalizer.
pub fn claim(name: &str, class: &str) -> ClaimBuilder {
    let spec = DeploymentTargetClaimSpec {
        deployment_target_class_name: class.into(),
        target_name: String::new(),
    };
    let mut dtc = DeploymentTargetClaim::new(name, spec);
    dtc.metadata = meta(name, Some("ns"));
    ClaimBuilder(dtc)
}

impl MetaBuilder for ClaimBuilder {
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl ClaimBuilder {
    pub fn target(mut self, target: &str) -> Self {
        self.0.spec.target_name = target.into();
        self
    }
    pub fn phase(mut self, phase: ClaimPhase) -> Self {
        self.0.set_phase(phase);
        self
    }
    pub fn build(self) -> DeploymentTargetClaim {
        self.0
    }
    pub fn object(self) -> Object {
        Object::Claim(self.0)
    }
}

/// A class with this provisioner and reclaim policy.
pub fn class(name: &str, provisioner: &str, reclaim_policy: &str) -> Object {
    let spec = DeploymentTargetClassSpec {
        provisioner: provisioner.into(),
        parameters: None,
        reclaim_policy: reclaim_policy.into(),
    };
    let mut cls = DeploymentTargetClass::new(name, spec);
    cls.metadata = meta(name, None);
    Object::Class(cls)
}

/// A Namespace with these labels.
pub fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    let mut ns = Namespace {
        metadata: meta(name, None),
        ..Namespace::default()
    };
    for (k, v) in labels {
        set_label(&mut ns.metadata, k, v);
    }
    ns
}

/// The world after an outcome's writes, applied as the executor applies them (all must pass).
pub fn applied(mut world: World, outcome: &super::model::Outcome) -> World {
    let refused = super::offline::execute(&mut world, &outcome.writes, &ctx());
    assert_eq!(refused, None, "writes: {:#?}", outcome.writes);
    world
}

/// Type, status, reason and message of the object's first condition.
pub fn first_condition(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> (String, String, String, String) {
    let c = conditions.first().expect("a condition");
    (
        c.type_.clone(),
        c.status.clone(),
        c.reason.clone(),
        c.message.clone(),
    )
}

/// A SpaceRequest of the environment tier with these labels, a `Ready` condition (status,
/// reason) if given, and the namespaces (name, secret) it was given.
pub fn space_request(
    name: &str,
    labels: &[(&str, &str)],
    ready: Option<(&str, &str)>,
    access: &[(&str, &str)],
) -> super::types::SpaceRequest {
    use super::types::{
        NamespaceAccess, SpaceRequest, SpaceRequestSpec, SpaceRequestStatus, ToolchainCondition,
    };
    let spec = SpaceRequestSpec {
        tier_name: super::keys::SPACE_REQUEST_TIER.into(),
        target_cluster_roles: vec![],
    };
    let mut sr = SpaceRequest::new(name, spec);
    sr.metadata = meta(name, Some("ns"));
    for (k, v) in labels {
        set_label(&mut sr.metadata, k, v);
    }
    sr.status = Some(SpaceRequestStatus {
        target_cluster_url: "https://member.example:6443".into(),
        namespace_access: (access.iter())
            .map(|(n, s)| NamespaceAccess {
                name: (*n).into(),
                secret_ref: (*s).into(),
            })
            .collect(),
        conditions: (ready.iter())
            .map(|(status, reason)| ToolchainCondition {
                type_: "Ready".into(),
                status: (*status).into(),
                reason: Some((*reason).into()),
                message: None,
                last_transition_time: None,
            })
            .collect(),
    });
    sr
}
