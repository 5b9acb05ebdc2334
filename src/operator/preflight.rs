//! The shell of a preflight (`spec.desiredUpdate.mode: Preflight`): once the loop
//! ([`mod@super::run`]) has retrieved and verified the target release exactly as an update would
//! (signatures, mirrors), [`evaluate`] reads what [`crate::preflight::report`] needs from the
//! live cluster. The loop keeps the result ([`super::preflight_status`]) for the status.
//!
//! It writes nothing: the live objects are read (CRDs, the objects a check lists) and the
//! target's resources are server-side applied with `dryRun=All` only, so admission and
//! defaulting are real and nothing is stored.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};

use super::pass::{PassInput, PassPlan};
use super::precondition::{self, Check as Precondition, ClusterView};
use super::task::{Action, ClusterVersionOwner, FIELD_MANAGER, action, applied_object};
use crate::manifest::Manifest;
use crate::ownership::{foreign_stand_in, webhook_covers_stand_in};
use crate::payload::Payload;
use crate::plan::{Cluster, Resource};
use crate::preflight::schema::{self, LiveCrd};
use crate::preflight::{self, CheckOutcome, CheckTest, Live, checks};
use crate::updates::cache::MatchCache;
use crate::updates::graph::{ClusterCondition, ConditionalUpdateRisk, PromQlClusterCondition};
use crate::updates::prometheus::PrometheusOptions;
use crate::updates::rules::Applies;

/// The preflight of moving from `current` to `next` on this cluster.
pub async fn evaluate(
    client: &kube::Client,
    input: &PassInput<'_>,
    current: &Payload,
    next: &Payload,
    plan: &PassPlan<'_>,
    prometheus: &PrometheusOptions,
) -> preflight::Report {
    let cluster = Cluster {
        config: plan.config.clone(),
        implicitly_enabled: plan.capabilities.implicitly_enabled.clone(),
        capabilities_after: Some(input.capability_filter(next)),
    };
    let plan_of_update = crate::plan::plan(current, next, &cluster);
    let discovery = Discovery::new(client.clone()).run().await;
    let mut incomplete = Vec::new();
    if let Err(e) = &discovery {
        incomplete.push(format!(
            "the server-side apply dry run: API discovery failed: {e}"
        ));
    }
    // What the update would create or change: dry-run, and their CRDs checked.
    let applied = crate::plan::changed_manifests(next, &plan_of_update);
    let crds = preflight::crd_manifests(next, &plan_of_update);
    let mut live_crds = live_crds(client, &crds, &mut incomplete).await;
    // Where the update stands down (another operator's CRD, webhooks on its objects), and what
    // it never applies (ClusterOperators), it changes nothing: nothing to check there.
    let foreign: Vec<&Manifest> = (crds.iter().copied())
        .filter(|m| {
            live_crds
                .get(&m.id.name)
                .is_some_and(|live| is_foreign(m, live))
        })
        .collect();
    live_crds.retain(|name, _| !foreign.iter().any(|m| &m.id.name == name));
    let applied: Vec<&Manifest> = (applied.into_iter())
        .filter(|m| !stands_down(m, &foreign))
        .collect();
    let mut live = Live {
        stored_versions: (live_crds.iter())
            .map(|(name, crd)| (name.clone(), stored_versions_of(crd)))
            .collect(),
        ..Live::default()
    };
    let described: BTreeMap<String, LiveCrd> = (live_crds.iter())
        .map(|(name, crd)| (name.clone(), describe(crd)))
        .collect();
    let listings = schema::listings(&crds, &described);
    let to = next.version().unwrap_or("the target release");
    let mut checker = schema::Checker::new(to, &crds, &listings);
    for listing in listings {
        let crd = &live_crds[&listing.crd];
        if let Err(e) = check_stored(client, crd, &listing, &mut checker).await {
            incomplete.push(format!(
                "CustomResourceDefinition {}: cannot list its {} objects: {e}",
                listing.crd, listing.list_version
            ));
        }
    }
    live.stored = checker.finish();
    if let Ok(discovery) = &discovery {
        let owner = ClusterVersionOwner::of(&input.observed.cluster_version);
        let tried = dry_run(client, discovery, &applied, owner.as_ref()).await;
        (live.dry_run_rejections, live.live_changes) = tried;
    }
    let included = next.included(&plan.config.load_time());
    for check in checks::checks(included) {
        match check {
            Ok(check) => {
                let outcome = run_check(client, discovery.as_ref().ok(), &check, prometheus).await;
                live.checks.push((check, outcome));
            }
            Err(e) => live.invalid_checks.push(e),
        }
    }
    live.preconditions = preconditions(input, current, next);
    live.incomplete = incomplete;
    preflight::report(next, plan_of_update, &live)
}

/// The live CRDs among `crds` (the target's changed ones) that the cluster has.
async fn live_crds(
    client: &kube::Client,
    crds: &[&Manifest],
    incomplete: &mut Vec<String>,
) -> BTreeMap<String, CustomResourceDefinition> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut live = BTreeMap::new();
    for crd in crds {
        match api.get_opt(&crd.id.name).await {
            Ok(Some(found)) => {
                live.insert(crd.id.name.clone(), found);
            }
            Ok(None) => {}
            Err(e) => incomplete.push(format!(
                "CustomResourceDefinition {}: cannot read it: {e}",
                crd.id.name
            )),
        }
    }
    live
}

fn stored_versions_of(crd: &CustomResourceDefinition) -> Vec<String> {
    (crd.status.as_ref().and_then(|s| s.stored_versions.clone())).unwrap_or_default()
}

/// A stand-in CRD of the target whose live CRD is another operator's: the update does not
/// replace it (as [`super::stand_down`] decides for the apply pass).
fn is_foreign(manifest: &Manifest, live: &CustomResourceDefinition) -> bool {
    let live = serde_json::to_value(live).unwrap_or_default();
    foreign_stand_in(&manifest.object(), Some(&live), FIELD_MANAGER).is_some()
}

/// Whether the update leaves `manifest` unapplied: a ClusterOperator (it waits for the
/// operator), a foreign CRD, or a webhook configuration on a foreign CRD's objects.
fn stands_down(manifest: &Manifest, foreign: &[&Manifest]) -> bool {
    if matches!(action(manifest), Ok(Action::WaitClusterOperator)) {
        return true;
    }
    if foreign.iter().any(|f| f.id == manifest.id) {
        return true;
    }
    let webhook = [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]
    .iter()
    .any(|kind| manifest.gvk.is("admissionregistration.k8s.io", kind));
    webhook && {
        let object = manifest.object();
        (foreign.iter()).any(|crd| webhook_covers_stand_in(&object, &crd.object()))
    }
}

/// What [`schema::listings`] needs of a live CRD.
fn describe(crd: &CustomResourceDefinition) -> LiveCrd {
    let versions = &crd.spec.versions;
    LiveCrd {
        served: (versions.iter().filter(|v| v.served))
            .map(|v| v.name.clone())
            .collect(),
        storage: versions.iter().find(|v| v.storage).map(|v| v.name.clone()),
        no_conversion: (crd.spec.conversion.as_ref()).is_none_or(|c| c.strategy == "None"),
        schemas: (versions.iter())
            .filter_map(|v| {
                let schema = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
                Some((v.name.clone(), serde_json::to_value(schema).ok()?))
            })
            .collect(),
    }
}

/// Every object of `crd` the listing asks for, read in pages of 500 and checked page by page
/// (a CRD with many objects costs one page of memory).
async fn check_stored(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
    listing: &schema::Listing,
    checker: &mut schema::Checker,
) -> Result<(), kube::Error> {
    let version = &listing.list_version;
    let names = &crd.spec.names;
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.to_string(),
        api_version: format!("{}/{version}", crd.spec.group),
        kind: names.kind.clone(),
        plural: names.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        let objects: Vec<serde_json::Value> = (page.items.iter())
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect();
        checker.add(listing, &objects);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(()),
        }
    }
}

/// Server-side applies each manifest with `dryRun=All`, as an update would apply it (forced,
/// with the CVO's owner reference): the refusals, with the server's message, and the live
/// objects the result differs from, with the fields that change. A resource whose API the
/// cluster does not serve yet (its CRD comes with the update) cannot be tried and is left out.
async fn dry_run(
    client: &kube::Client,
    discovery: &Discovery,
    manifests: &[&Manifest],
    owner: Option<&ClusterVersionOwner>,
) -> (Vec<(Resource, String)>, Vec<(Resource, Vec<String>)>) {
    let mut rejected = Vec::new();
    let mut changes = Vec::new();
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = true;
    for manifest in manifests {
        let gvk = GroupVersionKind::gvk(
            &manifest.gvk.group,
            &manifest.gvk.version,
            &manifest.gvk.kind,
        );
        let Some((resource, caps)) = discovery.resolve_gvk(&gvk) else {
            continue;
        };
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Cluster => Api::all_with(client.clone(), &resource),
            Scope::Namespaced => {
                let ns = Some(manifest.id.namespace.as_str()).filter(|n| !n.is_empty());
                Api::namespaced_with(client.clone(), ns.unwrap_or("default"), &resource)
            }
        };
        let object = applied_object(manifest, owner);
        // What the cluster has now; a read that fails only costs the comparison.
        let mut before = api.get_opt(&manifest.id.name).await.ok().flatten();
        // Create-only: an object that exists is left as it is.
        if before.is_some() && matches!(action(manifest), Ok(Action::CreateOnly)) {
            continue;
        }
        match api
            .patch(&manifest.id.name, &params, &Patch::Apply(&object))
            .await
        {
            Ok(after) => {
                // Written in between (a controller): compare with what the dry run saw.
                if before
                    .as_ref()
                    .and_then(|b| b.metadata.resource_version.as_ref())
                    != after.metadata.resource_version.as_ref()
                {
                    before = api.get_opt(&manifest.id.name).await.ok().flatten();
                }
                let fields = match (before, serde_json::to_value(&after)) {
                    (Some(before), Ok(after)) => serde_json::to_value(&before)
                        .map(|b| preflight::changed_fields(&b, &after))
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                if !fields.is_empty() {
                    changes.push((Resource::of(manifest), fields));
                }
            }
            // The namespace comes with the update: the object cannot be tried before it.
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(kube::Error::Api(s)) => rejected.push((Resource::of(manifest), s.message)),
            Err(e) => rejected.push((Resource::of(manifest), e.to_string())),
        }
    }
    (rejected, changes)
}

/// Evaluates one of the target's checks against the live cluster.
async fn run_check(
    client: &kube::Client,
    discovery: Option<&Discovery>,
    check: &preflight::Check,
    prometheus: &PrometheusOptions,
) -> CheckOutcome {
    match &check.test {
        CheckTest::Promql(query) => {
            let risk = ConditionalUpdateRisk {
                url: check.url.clone(),
                name: check.risk.clone(),
                message: check.message.clone(),
                matching_rules: vec![ClusterCondition {
                    type_: "PromQL".into(),
                    promql: Some(PromQlClusterCondition {
                        promql: query.clone(),
                    }),
                }],
            };
            let target = crate::updates::promql_target::resolve(client, prometheus).await;
            let mut cache = MatchCache::default();
            match crate::updates::prometheus::evaluate_risk(&risk, &mut cache, &target).await {
                Applies::Match => CheckOutcome::Applies(format!("{query} returned 1")),
                Applies::NotMatch => CheckOutcome::DoesNotApply,
                Applies::EvaluationFailed(e) => CheckOutcome::Failed(e),
            }
        }
        CheckTest::Objects(test) => {
            let Some(discovery) = discovery else {
                return CheckOutcome::Failed("API discovery failed".into());
            };
            let (group, version) = match test.api_version.split_once('/') {
                Some((g, v)) => (g, v),
                None => ("", test.api_version.as_str()),
            };
            let gvk = GroupVersionKind::gvk(group, version, &test.kind);
            let Some((resource, caps)) = discovery.resolve_gvk(&gvk) else {
                // Nothing of a kind the cluster does not serve exists.
                return CheckOutcome::DoesNotApply;
            };
            let api: Api<DynamicObject> = match (&caps.scope, &test.namespace) {
                (Scope::Namespaced, Some(ns)) => {
                    Api::namespaced_with(client.clone(), ns, &resource)
                }
                _ => Api::all_with(client.clone(), &resource),
            };
            let mut params = ListParams::default();
            if let Some(selector) = &test.label_selector {
                params = params.labels(selector);
            }
            match api.list(&params).await {
                Ok(list) => {
                    let objects: Vec<serde_json::Value> = (list.items.iter())
                        .filter_map(|o| serde_json::to_value(o).ok())
                        .collect();
                    checks::match_objects(test, &objects)
                }
                Err(e) => CheckOutcome::Failed(format!("cannot list {}: {e}", resource.plural)),
            }
        }
    }
}

/// The rollback and giant-hop preconditions as an update to `next` would run them (the
/// `Upgradeable` ones are risks of their own already; the recommended-update one is what the
/// preflight informs): (name, upstream's summary line, blocking).
fn preconditions(
    input: &PassInput<'_>,
    current: &Payload,
    next: &Payload,
) -> Vec<(String, String, bool)> {
    let cv = &input.observed.cluster_version;
    let view = ClusterView::new(
        cv,
        current.version().unwrap_or_default(),
        &current.release_image,
    );
    precondition::run_all(&view, next.version().unwrap_or_default())
        .into_iter()
        .filter(|f| matches!(f.check, Precondition::Rollback | Precondition::GiantHop))
        .map(|f| {
            let blocking = f.blocking();
            (f.check.name().to_string(), f.message, blocking)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INCLUDE: &str =
        "    include.release.openshift.io/self-managed-high-availability: \"true\"\n";

    #[test]
    fn what_the_update_would_not_apply_is_not_tried() {
        let crd = format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: agents.example.com\n  annotations:\n{INCLUDE}    crds.cvo.openshift.io/stand-in-for: example-operator\nspec:\n  group: example.com\n  names:\n    kind: Agent\n    plural: agents\n  scope: Namespaced\n  versions: []\n"
        );
        let webhook = |plural: &str| {
            format!(
                "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: {plural}\n  annotations:\n{INCLUDE}webhooks:\n- name: x.example.com\n  rules:\n  - apiGroups: [example.com]\n    resources: [{plural}]\n"
            )
        };
        let co = format!(
            "apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: x\n  annotations:\n{INCLUDE}"
        );
        let cm = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: ns\n  annotations:\n{INCLUDE}"
        );
        let payload = crate::payload::of_release_manifests(
            "4.18.0",
            &[
                ("0000_10_a_1.yaml", crd),
                ("0000_10_a_2.yaml", webhook("agents")),
                ("0000_10_a_3.yaml", webhook("widgets")),
                ("0000_10_a_4.yaml", co),
                ("0000_10_a_5.yaml", cm),
            ],
        );
        let m = &payload.manifests;
        let foreign = [&m[0]];
        let tried: Vec<&str> = (m.iter())
            .filter(|manifest| !stands_down(manifest, &foreign))
            .map(|manifest| manifest.file.as_ref())
            .collect();
        // The webhook on another object and the ConfigMap; with no foreign CRD, all but the
        // ClusterOperator.
        assert_eq!(tried, ["0000_10_a_3.yaml", "0000_10_a_5.yaml"]);
        let tried = (m.iter())
            .filter(|manifest| !stands_down(manifest, &[]))
            .count();
        assert_eq!(tried, 4);
    }
}
