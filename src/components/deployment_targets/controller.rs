//! The kube-runtime shell of the component (`cvo controller deployment-targets`): watch
//! caches of every kind the reconciles read, one `Controller` per reconciled kind (claims,
//! targets, SpaceRequests, Environments) with the watch mappings of spec A.5/A.8, and for each
//! reconcile: a [`World`] of the object's namespace from the caches, the pure reconcile, the
//! writes executed in order, its Events recorded. It also keeps the ClusterOperator.
//!
//! Caches lag writes; a reconcile on a stale cache meets a conflict (409), a missing object
//! (404) or an existing one (409) and is simply retried, as controller-runtime's are.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::stream::{self, BoxStream};
use futures_util::{StreamExt, TryStreamExt as _};
use k8s_openapi::api::core::v1::{
    LimitRange, Namespace, ObjectReference, ResourceQuota, Secret, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};

use super::executor::{self, WriteError, Written};
use super::index::{Change, Index};
use super::model::{
    Context, EventType, Kind, NamespaceProvisionerSettings, Next, Object, ObjectRef, Outcome, World,
};
use super::types::{
    DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClass, Environment,
    GitOpsDeploymentManagedEnvironment, SpaceRequest,
};
use super::{binder, class, environment, provisioner, reclaim, space_request, webhook};
use crate::host::backoff::Failures;
use crate::host::cluster_operator::{OperatorSettings, keep_cluster_operator};
use crate::host::controller::{Component, ComponentError, HostHandle};
use crate::host::webhook::{Admission, WebhookOptions};

/// The component's settings, from `cvo controller deployment-targets`'s flags.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The version the ClusterOperator reports (`status.versions[name=operator]`).
    pub version: String,
    pub namespace_provisioner: NamespaceProvisionerSettings,
    /// Provisioned targets get `allowInsecureSkipTLSVerify: true` (upstream's
    /// `DEV_ONLY_IGNORE_SELFSIGNED_CERT_IN_DEPLOYMENT_TARGET`).
    pub insecure_provisioned_targets: bool,
    /// How often the ClusterOperator is refreshed.
    pub status_interval: Duration,
    /// The Environment admission webhook; `None`: not served.
    pub webhook: Option<WebhookOptions>,
}

/// The component's ClusterOperator.
pub const CLUSTER_OPERATOR: &str = "deployment-targets";

/// The path the API server POSTs Environment reviews to (controller-runtime's name for it).
pub const ENVIRONMENT_WEBHOOK_PATH: &str = "/validate-appstudio-redhat-com-v1alpha1-environment";

/// The Environment admission rules (spec A.8), served by the host's webhook server.
struct EnvironmentAdmission;

impl Admission for EnvironmentAdmission {
    fn review(&self, path: &str, body: &[u8]) -> Option<Vec<u8>> {
        if path != ENVIRONMENT_WEBHOOK_PATH {
            return None;
        }
        let request = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        serde_json::to_vec(&webhook::review(&request)).ok()
    }
}

/// The DeploymentTarget component, as the host runs it.
pub struct DeploymentTargets {
    pub settings: Settings,
}

impl Component for DeploymentTargets {
    fn name(&self) -> &'static str {
        "deployment-targets"
    }

    fn webhook(&self) -> Option<(WebhookOptions, Arc<dyn Admission>)> {
        let options = self.settings.webhook.clone()?;
        Some((options, Arc::new(EnvironmentAdmission)))
    }

    fn run(
        self: Arc<Self>,
        host: HostHandle,
        stop: watch::Receiver<bool>,
    ) -> Pin<Box<dyn Future<Output = Result<(), ComponentError>> + Send>> {
        Box::pin(async move { run(self.settings.clone(), host, stop).await })
    }
}

/// The watch caches: kube-runtime's stores (which the controllers look their objects up in)
/// and the index every reconcile's World is cut from.
#[derive(Clone)]
struct Caches {
    index: Arc<Index>,
    classes: Store<DeploymentTargetClass>,
    targets: Store<DeploymentTarget>,
    claims: Store<DeploymentTargetClaim>,
    environments: Store<Environment>,
    managed: Store<GitOpsDeploymentManagedEnvironment>,
    space_requests: Option<Store<SpaceRequest>>,
    secrets: Store<Secret>,
    namespaces: Store<Namespace>,
    service_accounts: Store<ServiceAccount>,
    role_bindings: Store<RoleBinding>,
    resource_quotas: Store<ResourceQuota>,
    limit_ranges: Store<LimitRange>,
}

impl Caches {
    /// What a reconcile of an object in `namespace` may read ([`Index::world`]): shared
    /// objects, not copies, so a World costs a pointer per object.
    fn world(&self, namespace: &str) -> World {
        self.index.world(namespace)
    }
}

/// A watched type, and how the index holds it.
trait Indexed: Resource<DynamicType = ()> + Clone {
    const KIND: Kind;
    fn into_object(self) -> Object;
    fn from_object(object: &Object) -> Option<Self>;
}

macro_rules! indexed {
    ($($ty:ty => $variant:ident, $kind:ident;)*) => {$(
        impl Indexed for $ty {
            const KIND: Kind = Kind::$kind;
            fn into_object(self) -> Object {
                Object::$variant(self)
            }
            fn from_object(object: &Object) -> Option<Self> {
                match object {
                    Object::$variant(o) => Some(o.clone()),
                    _ => None,
                }
            }
        }
    )*};
}

indexed! {
    DeploymentTargetClass => Class, DeploymentTargetClass;
    DeploymentTarget => Target, DeploymentTarget;
    DeploymentTargetClaim => Claim, DeploymentTargetClaim;
    Environment => Environment, Environment;
    GitOpsDeploymentManagedEnvironment => ManagedEnvironment, GitOpsDeploymentManagedEnvironment;
    SpaceRequest => SpaceRequest, SpaceRequest;
    Namespace => Namespace, Namespace;
    ServiceAccount => ServiceAccount, ServiceAccount;
    RoleBinding => RoleBinding, RoleBinding;
    ResourceQuota => ResourceQuota, ResourceQuota;
    LimitRange => LimitRange, LimitRange;
    Secret => Secret, Secret;
}

/// A watch event as the index takes it.
fn change<K: Indexed>(event: &watcher::Event<K>) -> Change {
    match event {
        watcher::Event::Apply(o) => Change::Apply(o.clone().into_object()),
        watcher::Event::Delete(o) => Change::Delete(o.clone().into_object().reference()),
        watcher::Event::Init => Change::Relist(K::KIND),
        watcher::Event::InitApply(o) => Change::RelistApply(o.clone().into_object()),
        watcher::Event::InitDone => Change::RelistDone(K::KIND),
    }
}

/// No reconcile reads `managedFields`; kept, they would be most of a cached object's size.
/// (Writes omit them, and the API server keeps them as they are.)
fn without_managed_fields(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
}

/// What every reconcile shares.
struct Shared {
    caches: Caches,
    client: Client,
    host: HostHandle,
    recorder: Recorder,
    settings: Settings,
    /// Failures in a row of each object, for the backoff of its retries.
    failures: Failures<ObjectRef>,
}

impl Shared {
    fn context(&self) -> Context {
        Context {
            now: k8s_openapi::jiff::Timestamp::now(),
            namespace_provisioner: self.settings.namespace_provisioner.clone(),
            insecure_provisioned_targets: self.settings.insecure_provisioned_targets,
        }
    }
}

/// A reconcile that could not finish; retried with backoff.
#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("{0}")]
    Reported(String),
}

type Reconcile = fn(&ObjectRef, &World, &Context) -> Outcome;

/// The label the namespace provisioner puts on what it makes, and that the caches of
/// ServiceAccounts and RoleBindings select on.
const PROVISIONED_SELECTOR: &str = super::keys::LABEL_CLAIM;

async fn run(
    settings: Settings,
    host: HostHandle,
    stop: watch::Receiver<bool>,
) -> Result<(), ComponentError> {
    let client = host.client.clone();
    let has_space_requests = api_exists::<SpaceRequest>(&client).await;
    let mut tasks = Vec::new();
    let index = Arc::new(Index::new());
    let all = watcher::Config::default;
    let provisioned = || watcher::Config::default().labels(PROVISIONED_SELECTOR);
    // One watch per kind, feeding both the caches every World is built from and the
    // controllers' triggers (a trigger is dispatched after its cache has the object, so a
    // reconcile never reads an older state than the event that caused it).
    let (classes, mut class_events) =
        cache::<DeploymentTargetClass>(&client, &index, all(), 1, &mut tasks);
    let (targets, mut target_events) =
        cache::<DeploymentTarget>(&client, &index, all(), 3, &mut tasks);
    let (claims, mut claim_events) =
        cache::<DeploymentTargetClaim>(&client, &index, all(), 2, &mut tasks);
    let (environments, mut environment_events) =
        cache::<Environment>(&client, &index, all(), 2, &mut tasks);
    let (managed, mut managed_events) =
        cache::<GitOpsDeploymentManagedEnvironment>(&client, &index, all(), 2, &mut tasks);
    let (secrets, mut secret_events) = cache::<Secret>(&client, &index, all(), 2, &mut tasks);
    let (namespaces, mut namespace_events) =
        cache::<Namespace>(&client, &index, all(), 1, &mut tasks);
    let (service_accounts, _) =
        cache::<ServiceAccount>(&client, &index, provisioned(), 0, &mut tasks);
    let (role_bindings, _) = cache::<RoleBinding>(&client, &index, provisioned(), 0, &mut tasks);
    let (resource_quotas, _) =
        cache::<ResourceQuota>(&client, &index, provisioned(), 0, &mut tasks);
    let (limit_ranges, _) = cache::<LimitRange>(&client, &index, provisioned(), 0, &mut tasks);
    let (space_requests, mut space_request_events) = match has_space_requests {
        true => {
            let (store, events) = cache::<SpaceRequest>(&client, &index, all(), 2, &mut tasks);
            (Some(store), events)
        }
        false => {
            tracing::info!(
                "SpaceRequests (toolchain.dev.openshift.com) are not served: the devsandbox provisioner is off"
            );
            (None, Vec::new())
        }
    };
    let caches = Caches {
        index,
        classes,
        targets,
        claims,
        environments,
        managed,
        space_requests,
        secrets,
        namespaces,
        service_accounts,
        role_bindings,
        resource_quotas,
        limit_ranges,
    };
    let running = Arc::new(AtomicBool::new(false));
    let operator = OperatorSettings {
        name: CLUSTER_OPERATOR,
        subject: "DeploymentTarget controllers",
        version: settings.version.clone(),
        interval: settings.status_interval,
    };
    tasks.push(tokio::spawn(keep_cluster_operator(
        client.clone(),
        operator,
        running.clone(),
        stop.clone(),
    )));
    wait_for_caches(&caches).await;
    host.metrics.set_synced();
    running.store(true, Ordering::Relaxed);
    tracing::info!("caches synced; reconciling");
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone(), host.reporter.clone()),
        caches: caches.clone(),
        client: client.clone(),
        host,
        settings,
        failures: Failures::default(),
    });
    let stopped = |mut stop: watch::Receiver<bool>| async move {
        let _ = stop.wait_for(|s| *s).await;
    };

    let claims = {
        let c = caches.clone();
        Controller::for_shared_stream(take(&mut claim_events), caches.claims.clone())
            .watches_shared_stream(take(&mut target_events), move |dt| {
                refs(binder::claims_for_target(
                    &dt,
                    &c.world(&namespace_of(&*dt)),
                ))
            })
            .with_config(one_at_a_time())
            .graceful_shutdown_on(stopped(stop.clone()))
            .run(
                |o, s| {
                    reconcile(
                        o,
                        s,
                        Kind::DeploymentTargetClaim,
                        "claims",
                        binder::reconcile_claim,
                    )
                },
                error_policy,
                shared.clone(),
            )
            .for_each(|_| async {})
    };

    let mut targets =
        Controller::for_shared_stream(take(&mut target_events), caches.targets.clone());
    {
        // A target being deprovisioned hears when its namespace goes (labels name it).
        let c = caches.clone();
        targets = targets.watches_shared_stream(take(&mut namespace_events), move |n| {
            let claim_ns = (n.labels())
                .get(provisioner::namespace::LABEL_CLAIM_NAMESPACE)
                .cloned();
            match claim_ns {
                Some(ns) => refs(provisioner::namespace::targets_for_namespace(
                    &n,
                    &c.world(&ns),
                )),
                None => Vec::new(),
            }
        });
    }
    // A target hears of its kubeconfig Secret (the namespace provisioner renews its token).
    targets = targets.watches_shared_stream(take(&mut secret_events), |s| {
        provisioner::namespace::target_for_secret(&s)
            .map(|r| reflector::ObjectRef::new(&r.name).within(&r.namespace))
    });
    if has_space_requests {
        let c = caches.clone();
        targets = targets.watches_shared_stream(take(&mut space_request_events), move |sr| {
            refs(space_request::targets_for_space_request(
                &sr,
                &c.world(&namespace_of(&*sr)),
            ))
        });
    }
    let targets = targets
        .with_config(one_at_a_time())
        .graceful_shutdown_on(stopped(stop.clone()))
        .run(
            |o, s| {
                reconcile(
                    o,
                    s,
                    Kind::DeploymentTarget,
                    "targets",
                    reclaim::reconcile_target,
                )
            },
            error_policy,
            shared.clone(),
        )
        .for_each(|_| async {});

    let environments = {
        let (c1, c2, c3) = (caches.clone(), caches.clone(), caches.clone());
        Controller::for_shared_stream(take(&mut environment_events), caches.environments.clone())
            .watches_shared_stream(take(&mut secret_events), move |s| {
                refs(environment::environments_for_secret(
                    &s,
                    &c1.world(&namespace_of(&*s)),
                ))
            })
            .watches_shared_stream(take(&mut claim_events), move |c| {
                refs(environment::environments_for_claim(
                    &c,
                    &c2.world(&namespace_of(&*c)),
                ))
            })
            .watches_shared_stream(take(&mut target_events), move |t| {
                refs(environment::environments_for_target(
                    &t,
                    &c3.world(&namespace_of(&*t)),
                ))
            })
            .watches_shared_stream(take(&mut managed_events), |m| {
                refs(environment::environment_for_managed_environment(&m))
            })
            .with_config(one_at_a_time())
            .graceful_shutdown_on(stopped(stop.clone()))
            .run(
                |o, s| {
                    reconcile(
                        o,
                        s,
                        Kind::Environment,
                        "environments",
                        environment::reconcile_environment,
                    )
                },
                error_policy,
                shared.clone(),
            )
            .for_each(|_| async {})
    };

    // kube-runtime reconciles only objects that exist, so an Environment that is gone is
    // reconciled through its managed environment: the Environment's reconcile deletes it.
    let orphans = Controller::for_shared_stream(take(&mut managed_events), caches.managed.clone())
        .watches_shared_stream(take(&mut environment_events), |env| {
            let namespace = namespace_of(&*env);
            let name = environment::managed_environment_name(&env.name_any());
            Some(reflector::ObjectRef::new(&name).within(&namespace))
        })
        .with_config(one_at_a_time())
        .graceful_shutdown_on(stopped(stop.clone()))
        .run(reconcile_orphan, error_policy, shared.clone())
        .for_each(|_| async {});

    let space_requests = async {
        if let Some(store) = caches.space_requests.clone() {
            Controller::for_shared_stream(take(&mut space_request_events), store)
                .with_config(one_at_a_time())
                .graceful_shutdown_on(stopped(stop.clone()))
                .run(
                    |o, s| {
                        reconcile(
                            o,
                            s,
                            Kind::SpaceRequest,
                            "spacerequests",
                            space_request::reconcile_space_request,
                        )
                    },
                    error_policy,
                    shared.clone(),
                )
                .for_each(|_| async {})
                .await;
        }
    };
    let classes = Controller::for_shared_stream(take(&mut class_events), caches.classes.clone())
        .with_config(one_at_a_time())
        .graceful_shutdown_on(stopped(stop.clone()))
        .run(
            |o, s| {
                reconcile(
                    o,
                    s,
                    Kind::DeploymentTargetClass,
                    "classes",
                    class::reconcile_class,
                )
            },
            error_policy,
            shared.clone(),
        )
        .for_each(|_| async {});
    tokio::join!(
        claims,
        targets,
        environments,
        orphans,
        space_requests,
        classes
    );
    for task in tasks {
        task.abort();
    }
    Ok(())
}

/// How often a managed environment is looked at again, so that one whose Environment's
/// deletion was not watched (it happened while the watch was down) goes all the same.
const ORPHAN_RESYNC: Duration = Duration::from_secs(60);

/// A managed environment whose Environment is gone is deleted (the Environment's reconcile
/// does it, as upstream's does on the Environment's deletion event).
async fn reconcile_orphan(
    managed: Arc<GitOpsDeploymentManagedEnvironment>,
    shared: Arc<Shared>,
) -> Result<Action, ReconcileError> {
    for env in environment::environment_for_managed_environment(&managed) {
        let world = shared.caches.world(&env.namespace);
        if world.environment(&env.namespace, &env.name).is_some() {
            continue;
        }
        let outcome = environment::reconcile_environment(&env, &world, &shared.context());
        execute(&shared, "environments", &outcome).await?;
    }
    let meta = managed.meta();
    shared.failures.succeeded(&ObjectRef::new(
        Kind::GitOpsDeploymentManagedEnvironment,
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    ));
    Ok(Action::requeue(ORPHAN_RESYNC))
}

/// One reconcile at a time per controller, as controller-runtime's default
/// (`MaxConcurrentReconciles: 1`) runs upstream's: claims reconciled together read the same
/// cache and all pick the first eligible target (BENCHMARKS.md, "DeploymentTarget binding"),
/// and each concurrent reconcile holds its own copy of the namespace.
fn one_at_a_time() -> kube::runtime::controller::Config {
    kube::runtime::controller::Config::default().concurrency(1)
}

/// A controller's trigger: the objects of a kind as they change, and as they are deleted.
type Trigger<K> = BoxStream<'static, Arc<K>>;

/// One of the triggers [`cache`] made: as many were made as there are uses.
fn take<K>(triggers: &mut Vec<Trigger<K>>) -> Trigger<K> {
    triggers.pop().expect("cache() makes one trigger per use")
}

fn namespace_of<K: Resource>(object: &K) -> String {
    object.meta().namespace.clone().unwrap_or_default()
}

/// Kube-runtime object references for `refs` (all of one kind).
fn refs<K>(refs: impl IntoIterator<Item = ObjectRef>) -> Vec<reflector::ObjectRef<K>>
where
    K: Resource<DynamicType = ()>,
{
    refs.into_iter()
        .map(|r| reflector::ObjectRef::new(&r.name).within(&r.namespace))
        .collect()
}

/// A watch of every `K` the client may see (with `config`), fed by a task pushed on `tasks`
/// into `index` and into a kube-runtime store, with `subscribers` triggers for controllers.
/// The index takes an event before the store dispatches it, so a reconcile never reads an
/// older state than the event that caused it.
///
/// A trigger carries deletions too: kube-runtime's shared streams carry only objects the store
/// still holds, yet a deleted namespace is what a deprovisioning target waits for, and a
/// deleted Environment what its managed environment waits for.
fn cache<K>(
    client: &Client,
    index: &Arc<Index>,
    config: watcher::Config,
    subscribers: usize,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> (Store<K>, Vec<Trigger<K>>)
where
    K: Indexed + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store_shared(CHANGE_BUFFER);
    let mut triggers = Vec::new();
    let mut deletions = Vec::new();
    for handle in (0..subscribers).filter_map(|_| writer.subscribe()) {
        let (sender, receiver) = mpsc::channel::<Arc<K>>(DELETION_BUFFER);
        let deleted = stream::unfold(receiver, |mut r| async move { Some((r.recv().await?, r)) });
        triggers.push(stream::select(handle, deleted).boxed());
        deletions.push(sender);
    }
    let api: Api<K> = Api::all(client.clone());
    let index = index.clone();
    // What the index removed, announced once the store has removed it too (so a reconcile a
    // deletion triggers finds it gone in both).
    let removed = Arc::new(std::sync::Mutex::new(Vec::<Arc<Object>>::new()));
    let removing = removed.clone();
    let events = (watcher(api, config).default_backoff())
        .modify(|o| without_managed_fields(o.meta_mut()))
        .map_ok(move |event| {
            let gone = index.apply(change(&event));
            if !gone.is_empty() {
                removing
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(gone);
            }
            event
        });
    let stream = reflector::reflector(writer, events)
        .inspect_ok(move |_| {
            let gone = std::mem::take(&mut *removed.lock().unwrap_or_else(|e| e.into_inner()));
            for object in gone.iter().filter_map(|o| K::from_object(o)).map(Arc::new) {
                for sender in &deletions {
                    // Only a trigger: a controller that far behind reconciles it on its resync.
                    if sender.try_send(object.clone()).is_err() {
                        tracing::debug!(kind = %K::kind(&()), "a deletion trigger was dropped");
                    }
                }
            }
        })
        .applied_objects()
        .for_each({
            let mut log = crate::host::controller::watch_error_logger(&K::kind(&()));
            move |r| {
                log(&r);
                async {}
            }
        });
    tasks.push(tokio::spawn(stream));
    (reader, triggers)
}

/// How many deletions a controller may lag behind before further ones are dropped.
const DELETION_BUFFER: usize = 1024;

/// How many changes a slow controller may lag behind its cache before the cache waits for it.
const CHANGE_BUFFER: usize = 4096;

async fn wait_for_caches(c: &Caches) {
    let _ = c.classes.wait_until_ready().await;
    let _ = c.targets.wait_until_ready().await;
    let _ = c.claims.wait_until_ready().await;
    let _ = c.environments.wait_until_ready().await;
    let _ = c.managed.wait_until_ready().await;
    if let Some(s) = &c.space_requests {
        let _ = s.wait_until_ready().await;
    }
    let _ = c.secrets.wait_until_ready().await;
    let _ = c.namespaces.wait_until_ready().await;
    let _ = c.service_accounts.wait_until_ready().await;
    let _ = c.role_bindings.wait_until_ready().await;
    let _ = c.resource_quotas.wait_until_ready().await;
    let _ = c.limit_ranges.wait_until_ready().await;
}

/// Whether the API server serves `K` (an optional CRD such as SpaceRequest).
async fn api_exists<K>(client: &Client) -> bool
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    !matches!(api.list(&kube::api::ListParams::default().limit(1)).await, Err(kube::Error::Api(s)) if s.code == 404)
}

/// One reconcile: the pure decision on a World of the object's namespace, then its writes
/// and Events.
async fn reconcile<K>(
    object: Arc<K>,
    shared: Arc<Shared>,
    kind: Kind,
    controller: &'static str,
    decide: Reconcile,
) -> Result<Action, ReconcileError>
where
    K: Resource<DynamicType = ()>,
{
    let started = Instant::now();
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    let reference = ObjectRef::new(
        kind,
        &namespace,
        &object.meta().name.clone().unwrap_or_default(),
    );
    let world = shared.caches.world(&namespace);
    let outcome = decide(&reference, &world, &shared.context());
    let written = execute(&shared, controller, &outcome).await;
    publish_events(&shared, &world, &outcome).await;
    let soon = Duration::from_millis(200);
    let (result, label) = match (written, outcome.error) {
        (Err(e), _) if e.is_stale_read() => {
            tracing::debug!(object = %reference, error = %e, "stale cache; retrying");
            (Ok(Action::requeue(soon)), "requeue")
        }
        (Err(e), _) => (Err(ReconcileError::Write(e)), "error"),
        (Ok(()), Some(error)) => (Err(ReconcileError::Reported(error)), "error"),
        (Ok(()), None) => match outcome.next {
            Next::Done => (Ok(Action::await_change()), "success"),
            Next::Requeue => (Ok(Action::requeue(soon)), "requeue"),
            Next::RequeueAfter(after) => (Ok(Action::requeue(after)), "requeue"),
        },
    };
    match &result {
        Err(e) => tracing::warn!(object = %reference, error = %e, "reconcile failed"),
        Ok(_) => shared.failures.succeeded(&reference),
    }
    shared
        .host
        .metrics
        .observe_reconcile(controller, label, started.elapsed());
    result
}

/// Executes an outcome's writes, counting them and putting what the API server returned in
/// the index (so the next reconcile reads this one's writes even before their watch events).
async fn execute(
    shared: &Shared,
    controller: &'static str,
    outcome: &Outcome,
) -> Result<(), WriteError> {
    executor::execute(&shared.client, &outcome.writes, |written: Written| {
        (shared.host.metrics).observe_write(controller, written.kind.as_str(), written.verb);
        if let Some(mut object) = written.object {
            without_managed_fields(object.meta_mut());
            shared.caches.index.wrote(object);
        }
    })
    .await
}

/// A failed reconcile is retried after a delay that doubles with each failure of the object in
/// a row (5 ms up to 1000 s, as controller-runtime's default rate limiter retries upstream's).
fn error_policy<K: Indexed>(
    object: Arc<K>,
    _error: &ReconcileError,
    shared: Arc<Shared>,
) -> Action {
    let meta = object.meta();
    let reference = ObjectRef::new(
        K::KIND,
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    );
    Action::requeue(shared.failures.failed(reference))
}

/// Records the outcome's Events on the objects they regard (those the World knows: an
/// Event needs the object's uid).
async fn publish_events(shared: &Shared, world: &World, outcome: &Outcome) {
    for event in &outcome.events {
        let Some(object) = world.get(&event.regarding) else {
            continue;
        };
        let reference = object_reference(object);
        let kube_event = KubeEvent {
            type_: match event.type_ {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: event.reason.clone(),
            note: Some(event.message.clone()),
            action: event.reason.clone(),
            secondary: None,
        };
        if let Err(e) = shared.recorder.publish(&kube_event, &reference).await {
            tracing::debug!(error = %e, object = %event.regarding, "cannot record an Event");
        }
    }
}

fn object_reference(object: &Object) -> ObjectReference {
    let meta = object.meta();
    ObjectReference {
        api_version: Some(object.kind().api_version().into()),
        kind: Some(object.kind().as_str().into()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}
