//! Executes an [`Outcome`]'s writes against the API server, in order, stopping at the first
//! that fails. A write carries the `resourceVersion` its reconcile read; after a write to an
//! object, later writes to the same object in the same outcome carry the version the server
//! returned (upstream's controllers mutate one object and write it several times in a row).
//!
//! [`Outcome`]: super::model::Outcome

use std::collections::HashMap;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec, TokenRequestStatus};
use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource};

use super::model::{Kind, KubeconfigToken, Object, ObjectRef, Write, fill_kubeconfig_secret};
use super::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment,
    GitOpsDeploymentManagedEnvironment, SpaceRequest,
};

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{verb} of {object}: {source}")]
    Api {
        verb: &'static str,
        object: ObjectRef,
        #[source]
        source: kube::Error,
    },
}

impl WriteError {
    /// Whether the next reconcile, on fresher caches, will likely succeed: a conflict (the
    /// object changed since it was read), a missing object (deleted meanwhile), an object that
    /// exists already (created by an earlier reconcile the cache has not shown yet).
    pub fn is_stale_read(&self) -> bool {
        let WriteError::Api { source, .. } = self;
        matches!(source, kube::Error::Api(s) if matches!(s.code, 404 | 409))
    }
}

/// One executed write: the kind and the verb (for metrics), and the object as the API server
/// returned it (none for a delete), for the controller's index.
pub struct Written {
    pub kind: Kind,
    pub verb: &'static str,
    pub object: Option<Object>,
}

/// Executes `writes` in order, telling `on_write` of each done; returns the first failure.
pub async fn execute(
    client: &Client,
    writes: &[Write],
    mut on_write: impl FnMut(Written),
) -> Result<(), WriteError> {
    let mut versions: HashMap<ObjectRef, String> = HashMap::new();
    let version = |o: &Object| o.meta().resource_version.clone();
    for write in writes {
        let reference = write.target();
        let verb = write.verb();
        let result = match write {
            Write::Create(object) => create(client, object).await,
            Write::Update(object) => replace(client, &with_version(object, &versions), false).await,
            Write::UpdateStatus(object) => {
                replace(client, &with_version(object, &versions), true).await
            }
            Write::Delete(reference) => delete(client, reference).await,
            Write::CreateKubeconfigSecret { secret, token } => {
                let secret = with_token(client, secret, token).await?;
                create(client, &Object::Secret(secret)).await
            }
            Write::RenewKubeconfigSecret { secret, token } => {
                let secret = with_token(client, secret, token).await?;
                let secret = with_version(&Object::Secret(secret), &versions);
                replace(client, &secret, false).await
            }
        };
        let object = result.map_err(|source| WriteError::Api {
            verb,
            object: reference.clone(),
            source,
        })?;
        match object.as_ref().and_then(version) {
            Some(version) => versions.insert(reference.clone(), version),
            None => versions.remove(&reference),
        };
        on_write(Written {
            kind: reference.kind,
            verb,
            object,
        });
    }
    Ok(())
}

/// `object` with the resourceVersion an earlier write of this outcome returned, if any.
fn with_version(object: &Object, versions: &HashMap<ObjectRef, String>) -> Object {
    let mut object = object.clone();
    if let Some(version) = versions.get(&object.reference()) {
        object.meta_mut().resource_version = Some(version.clone());
    }
    object
}

/// The Api of `K` where `reference` lives.
fn api<K>(client: &Client, namespace: &str) -> Api<K>
where
    K: Resource<DynamicType = ()>,
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    Api::namespaced(client.clone(), namespace)
}

/// Runs `$body` with `$api` bound to the typed Api of `$object`'s kind, `$typed` to the typed
/// object and `$wrap` to the [`Object`] variant: one place that maps our kinds to the API's
/// resources.
macro_rules! with_typed {
    ($client:expr, $object:expr, |$api:ident, $typed:ident, $wrap:ident| $body:expr) => {{
        let namespace = $object.meta().namespace.clone().unwrap_or_default();
        match $object {
            Object::Class($typed) => {
                let $wrap = Object::Class;
                let $api: Api<DeploymentTargetClass> = Api::all($client.clone());
                $body
            }
            Object::Namespace($typed) => {
                let $wrap = Object::Namespace;
                let $api: Api<Namespace> = Api::all($client.clone());
                $body
            }
            Object::Target($typed) => {
                let $wrap = Object::Target;
                let $api = api::<DeploymentTarget>($client, &namespace);
                $body
            }
            Object::Claim($typed) => {
                let $wrap = Object::Claim;
                let $api = api::<DeploymentTargetClaim>($client, &namespace);
                $body
            }
            Object::Environment($typed) => {
                let $wrap = Object::Environment;
                let $api = api::<Environment>($client, &namespace);
                $body
            }
            Object::ManagedEnvironment($typed) => {
                let $wrap = Object::ManagedEnvironment;
                let $api = api::<GitOpsDeploymentManagedEnvironment>($client, &namespace);
                $body
            }
            Object::SpaceRequest($typed) => {
                let $wrap = Object::SpaceRequest;
                let $api = api::<SpaceRequest>($client, &namespace);
                $body
            }
            Object::ServiceAccount($typed) => {
                let $wrap = Object::ServiceAccount;
                let $api = api::<ServiceAccount>($client, &namespace);
                $body
            }
            Object::RoleBinding($typed) => {
                let $wrap = Object::RoleBinding;
                let $api = api::<RoleBinding>($client, &namespace);
                $body
            }
            Object::ResourceQuota($typed) => {
                let $wrap = Object::ResourceQuota;
                let $api = api::<ResourceQuota>($client, &namespace);
                $body
            }
            Object::LimitRange($typed) => {
                let $wrap = Object::LimitRange;
                let $api = api::<LimitRange>($client, &namespace);
                $body
            }
            Object::Secret($typed) => {
                let $wrap = Object::Secret;
                let $api = api::<Secret>($client, &namespace);
                $body
            }
        }
    }};
}

/// Creates `object`; returns it as created.
async fn create(client: &Client, object: &Object) -> Result<Option<Object>, kube::Error> {
    with_typed!(client, object, |api, typed, wrap| {
        let mut typed = typed.clone();
        typed.meta_mut().resource_version = None;
        let created = api.create(&PostParams::default(), &typed).await?;
        Ok(Some(wrap(created)))
    })
}

/// Replaces `object` (its status subresource with `status`); returns it as written.
async fn replace(
    client: &Client,
    object: &Object,
    status: bool,
) -> Result<Option<Object>, kube::Error> {
    let name = object.meta().name.clone().unwrap_or_default();
    with_typed!(client, object, |api, typed, wrap| {
        let written = match status {
            true => {
                api.replace_status(&name, &PostParams::default(), typed)
                    .await?
            }
            false => api.replace(&name, &PostParams::default(), typed).await?,
        };
        Ok(Some(wrap(written)))
    })
}

/// Deletes the object (a missing one is deleted already).
async fn delete(client: &Client, reference: &ObjectRef) -> Result<Option<Object>, kube::Error> {
    let dp = DeleteParams::background();
    let ns = reference.namespace.as_str();
    let name = reference.name.as_str();
    let result = match reference.kind {
        Kind::DeploymentTargetClass => gone(
            Api::<DeploymentTargetClass>::all(client.clone())
                .delete(name, &dp)
                .await,
        ),
        Kind::Namespace => gone(
            Api::<Namespace>::all(client.clone())
                .delete(name, &dp)
                .await,
        ),
        Kind::DeploymentTarget => gone(api::<DeploymentTarget>(client, ns).delete(name, &dp).await),
        Kind::DeploymentTargetClaim => gone(
            api::<DeploymentTargetClaim>(client, ns)
                .delete(name, &dp)
                .await,
        ),
        Kind::Environment => gone(api::<Environment>(client, ns).delete(name, &dp).await),
        Kind::GitOpsDeploymentManagedEnvironment => gone(
            api::<GitOpsDeploymentManagedEnvironment>(client, ns)
                .delete(name, &dp)
                .await,
        ),
        Kind::SpaceRequest => gone(api::<SpaceRequest>(client, ns).delete(name, &dp).await),
        Kind::ServiceAccount => gone(api::<ServiceAccount>(client, ns).delete(name, &dp).await),
        Kind::RoleBinding => gone(api::<RoleBinding>(client, ns).delete(name, &dp).await),
        Kind::ResourceQuota => gone(api::<ResourceQuota>(client, ns).delete(name, &dp).await),
        Kind::LimitRange => gone(api::<LimitRange>(client, ns).delete(name, &dp).await),
        Kind::Secret => gone(api::<Secret>(client, ns).delete(name, &dp).await),
    };
    result.map(|()| None)
}

/// A delete's result, with "not found" counted as done.
fn gone<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// `secret` with a kubeconfig holding a new token, and when it was issued and expires (as the
/// API server says: it may cap the lifetime asked for).
async fn with_token(
    client: &Client,
    secret: &Secret,
    token: &KubeconfigToken,
) -> Result<Secret, WriteError> {
    let issued = Timestamp::now();
    let answer = request_token(client, &token.service_account, token.expiration_seconds)
        .await
        .map_err(|source| WriteError::Api {
            verb: "request a token",
            object: token.service_account.clone(),
            source,
        })?;
    let Time(expires) = answer.expiration_timestamp;
    let mut secret = secret.clone();
    fill_kubeconfig_secret(
        &mut secret,
        &token.kubeconfig,
        &answer.token,
        issued,
        expires,
    );
    Ok(secret)
}

/// A token for the ServiceAccount (TokenRequest), asked to be valid `expiration_seconds`.
async fn request_token(
    client: &Client,
    service_account: &ObjectRef,
    expiration_seconds: i64,
) -> Result<TokenRequestStatus, kube::Error> {
    let api = api::<ServiceAccount>(client, &service_account.namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(expiration_seconds),
            bound_object_ref: None,
        },
        ..TokenRequest::default()
    };
    let answer = api
        .create_token_request(&service_account.name, &PostParams::default(), &request)
        .await?;
    answer.status.ok_or_else(|| {
        kube::Error::Api(Box::new(kube::core::Status::failure(
            "the TokenRequest was answered without a token",
            "InternalError",
        )))
    })
}
