//! Tests against a real kube-apiserver (`hack/cluster/`): one cluster for the whole binary,
//! started by `main`, always stopped at the end. Without Go (no cluster) the binary skips,
//! unless `CVO_REQUIRE_CLUSTER=1`.

#[path = "support/cluster.rs"]
mod cluster_support;
#[path = "support/foreign_crds.rs"]
mod foreign_crds;
#[path = "support/gnupg.rs"]
mod gnupg;
#[path = "support/hive_crd.rs"]
mod hive_crd;
#[path = "support/prometheus.rs"]
mod prometheus_support;
#[path = "support/registry.rs"]
mod registry_support;
#[path = "support/runner.rs"]
mod runner;
#[path = "support/static_server.rs"]
mod static_server;
#[path = "support/update_service.rs"]
mod update_service_support;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

use cluster_support::Cluster;
use cvo::capability::{CapabilitiesSpec, Capability};
use cvo::cluster::{
    ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatusCondition, ClusterVersion,
    ClusterVersionSpec, crds,
};
use cvo::include::ComponentOverride;
pub use runner::Ctx;
use runner::{Suite, TestFn};

#[path = "cluster/apply.rs"]
mod apply_tests;
use apply_tests::{
    apply_bundled_payload, apply_checks_deployment_health, apply_checks_job_health, apply_command,
    apply_crd_then_custom_resource, apply_create_only_and_delete, apply_reverts_drift,
    apply_sets_owner_references,
};
#[path = "cluster/crd_schema.rs"]
mod crd_schema_tests;
#[path = "cluster/feature_gates.rs"]
mod feature_gates_tests;
#[path = "cluster/hub.rs"]
mod hub_tests;
#[path = "cluster/mirror.rs"]
mod mirror_tests;
#[path = "cluster/monitoring.rs"]
mod monitoring_tests;
#[path = "cluster/opt_in.rs"]
mod opt_in_tests;
#[path = "cluster/preflight.rs"]
mod preflight_tests;
#[path = "cluster/querier.rs"]
mod querier_tests;
#[path = "cluster/start.rs"]
mod start_tests;
#[path = "cluster/update_flow.rs"]
mod update_flow_tests;
#[path = "cluster/upgrade.rs"]
mod upgrade_tests;
use feature_gates_tests::feature_gates_come_from_the_cluster_feature_gate;
use monitoring_tests::{
    events_about_the_cluster_version, metrics_tls_follows_the_cluster_tls_profile,
    monitoring_scrapes_over_tls_and_alerts,
};
use querier_tests::risks_are_evaluated_at_the_cluster_querier;
use start_tests::{
    start_as_restricted_user, start_command, start_creates_or_explains_the_lease_namespace,
    start_enables_then_keeps_a_capability, start_honours_overrides,
    start_installs_the_agents_component, start_installs_the_deployment_targets_component,
    start_installs_with_baseline_none, start_leader_election_hands_over,
    start_reaches_the_update_service_through_the_cluster_proxy, start_serves_metrics_and_readyz,
    start_shows_available_updates, start_wakes_on_spec_change_and_bounds_passes,
};
use upgrade_tests::{
    upgrade_command_requests_and_clears, upgrade_from_release_images,
    upgrade_moves_resources_into_capabilities, upgrade_preconditions_block_until_forced,
    upgrade_recommends_and_accepts_risky_updates, upgrade_status_shows_the_held_operator,
    upgrade_survives_apiserver_restart, upgrade_verifies_release_signatures,
    upgrade_waits_for_upgradeable_risks,
};

const MANAGER: &str = "cluster-version-operator";
/// Bounds every test, so a hung watch fails the test instead of the binary.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

const TESTS: &[(&str, TestFn)] = &[
    ("crds_apply_and_become_established", |c| {
        Box::pin(crds_apply_and_become_established(c))
    }),
    ("cluster_version_spec_and_status_round_trip", |c| {
        Box::pin(cluster_version_spec_and_status_round_trip(c))
    }),
    ("cluster_operator_status_round_trips", |c| {
        Box::pin(cluster_operator_status_round_trips(c))
    }),
    ("restricted_user_is_forbidden", |c| {
        Box::pin(restricted_user_is_forbidden(c))
    }),
    ("apply_bundled_payload", |c| {
        Box::pin(apply_bundled_payload(c))
    }),
    ("apply_crd_then_custom_resource", |c| {
        Box::pin(apply_crd_then_custom_resource(c))
    }),
    ("apply_create_only_and_delete", |c| {
        Box::pin(apply_create_only_and_delete(c))
    }),
    ("apply_reverts_drift", |c| Box::pin(apply_reverts_drift(c))),
    ("apply_command", |c| Box::pin(apply_command(c))),
    ("apply_checks_deployment_health", |c| {
        Box::pin(apply_checks_deployment_health(c))
    }),
    ("apply_checks_job_health", |c| {
        Box::pin(apply_checks_job_health(c))
    }),
    ("apply_sets_owner_references", |c| {
        Box::pin(apply_sets_owner_references(c))
    }),
    // After the apply tests: they expect no ClusterOperator to exist.
    ("start_installs_with_baseline_none", |c| {
        Box::pin(start_installs_with_baseline_none(c))
    }),
    ("start_enables_then_keeps_a_capability", |c| {
        Box::pin(start_enables_then_keeps_a_capability(c))
    }),
    // Before the component tests: they expect no component to be installed, and these remove
    // what they install.
    ("update_installs_no_component_until_enabled", |c| {
        Box::pin(opt_in_tests::update_installs_no_component_until_enabled(c))
    }),
    ("enabling_the_edge_agent_waits_for_hub_settings", |c| {
        Box::pin(opt_in_tests::enabling_the_edge_agent_waits_for_hub_settings(c))
    }),
    ("start_installs_the_deployment_targets_component", |c| {
        Box::pin(start_installs_the_deployment_targets_component(c))
    }),
    ("start_installs_the_agents_component", |c| {
        Box::pin(start_installs_the_agents_component(c))
    }),
    ("start_leaves_another_operators_crds_alone", |c| {
        Box::pin(hub_tests::start_leaves_another_operators_crds_alone(c))
    }),
    ("start_command", |c| Box::pin(start_command(c))),
    ("start_serves_metrics_and_readyz", |c| {
        Box::pin(start_serves_metrics_and_readyz(c))
    }),
    ("monitoring_scrapes_over_tls_and_alerts", |c| {
        Box::pin(monitoring_scrapes_over_tls_and_alerts(c))
    }),
    ("metrics_tls_follows_the_cluster_tls_profile", |c| {
        Box::pin(metrics_tls_follows_the_cluster_tls_profile(c))
    }),
    ("feature_gates_come_from_the_cluster_feature_gate", |c| {
        Box::pin(feature_gates_come_from_the_cluster_feature_gate(c))
    }),
    ("events_about_the_cluster_version", |c| {
        Box::pin(events_about_the_cluster_version(c))
    }),
    ("start_honours_overrides", |c| {
        Box::pin(start_honours_overrides(c))
    }),
    ("start_wakes_on_spec_change_and_bounds_passes", |c| {
        Box::pin(start_wakes_on_spec_change_and_bounds_passes(c))
    }),
    ("start_shows_available_updates", |c| {
        Box::pin(start_shows_available_updates(c))
    }),
    (
        "start_reaches_the_update_service_through_the_cluster_proxy",
        |c| {
            Box::pin(start_reaches_the_update_service_through_the_cluster_proxy(
                c,
            ))
        },
    ),
    ("start_leader_election_hands_over", |c| {
        Box::pin(start_leader_election_hands_over(c))
    }),
    ("start_creates_or_explains_the_lease_namespace", |c| {
        Box::pin(start_creates_or_explains_the_lease_namespace(c))
    }),
    ("upgrade_moves_resources_into_capabilities", |c| {
        Box::pin(upgrade_moves_resources_into_capabilities(c))
    }),
    ("upgrade_survives_apiserver_restart", |c| {
        Box::pin(upgrade_survives_apiserver_restart(c))
    }),
    ("upgrade_command_requests_and_clears", |c| {
        Box::pin(upgrade_command_requests_and_clears(c))
    }),
    ("upgrade_status_shows_the_held_operator", |c| {
        Box::pin(upgrade_status_shows_the_held_operator(c))
    }),
    ("upgrade_waits_for_upgradeable_risks", |c| {
        Box::pin(upgrade_waits_for_upgradeable_risks(c))
    }),
    ("upgrade_preconditions_block_until_forced", |c| {
        Box::pin(upgrade_preconditions_block_until_forced(c))
    }),
    ("upgrade_from_release_images", |c| {
        Box::pin(upgrade_from_release_images(c))
    }),
    ("start_pulls_releases_through_the_mirror", |c| {
        Box::pin(mirror_tests::start_pulls_releases_through_the_mirror(c))
    }),
    (
        "start_pulls_releases_through_a_content_source_policy",
        |c| Box::pin(mirror_tests::start_pulls_releases_through_a_content_source_policy(c)),
    ),
    ("start_pulls_releases_with_the_pull_secret", |c| {
        Box::pin(mirror_tests::start_pulls_releases_with_the_pull_secret(c))
    }),
    ("upgrade_verifies_release_signatures", |c| {
        Box::pin(upgrade_verifies_release_signatures(c))
    }),
    ("crd_schema_agrees_with_the_api_server", |c| {
        Box::pin(crd_schema_tests::crd_schema_agrees_with_the_api_server(c))
    }),
    ("preflight_reports_without_writing", |c| {
        Box::pin(preflight_tests::preflight_reports_without_writing(c))
    }),
    ("upgrade_recommends_and_accepts_risky_updates", |c| {
        Box::pin(upgrade_recommends_and_accepts_risky_updates(c))
    }),
    ("update_risks_from_alerts_and_upgradeable", |c| {
        Box::pin(update_flow_tests::update_risks_from_alerts_and_upgradeable(
            c,
        ))
    }),
    ("risks_are_evaluated_at_the_cluster_querier", |c| {
        Box::pin(risks_are_evaluated_at_the_cluster_querier(c))
    }),
    ("start_as_restricted_user", |c| {
        Box::pin(start_as_restricted_user(c))
    }),
];

fn main() -> ExitCode {
    let suite = Suite {
        what: "cluster",
        tests: TESTS,
        timeout: TEST_TIMEOUT,
        setup: None,
    };
    suite.main(Cluster::start)
}

/// Server-side applies both CRDs as the CVO's field manager and waits until they serve.
async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(MANAGER).force();
    for crd in crds() {
        let name = crd.metadata.name.clone().context("a CRD without a name")?;
        api.patch(&name, &params, &Patch::Apply(&crd)).await?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .with_context(|| format!("{name} not Established after 30s"))??;
    }
    Ok(())
}

async fn crds_apply_and_become_established(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    install_crds(&ctx.admin).await?;
    let api: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    for crd in crds() {
        let name = crd.metadata.name.unwrap_or_default();
        let live = api.get(&name).await?;
        let managers: Vec<_> = (live.metadata.managed_fields.iter().flatten())
            .filter_map(|m| m.manager.clone())
            .collect();
        ensure!(
            managers.iter().any(|m| m == MANAGER),
            "{name}: managers {managers:?}"
        );
        ensure!(live.spec.scope == "Cluster", "{name} is not cluster-scoped");
    }
    // Applying again is a no-op, as it is on every CVO sync.
    install_crds(&ctx.admin).await
}

fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> ClusterOperatorStatusCondition {
    let at = Time("2025-01-02T03:04:05Z".parse().expect("a valid timestamp"));
    ClusterOperatorStatusCondition::new(type_, status, at).because(reason, message)
}

fn version_spec() -> ClusterVersionSpec {
    ClusterVersionSpec {
        cluster_id: "0b4b1d5e-8f0c-4a4e-9d8a-3c1f9e2b7a61".into(),
        channel: Some("stable-4.18".into()),
        capabilities: Some(CapabilitiesSpec {
            baseline_capability_set: Some("None".into()),
            additional_enabled_capabilities: vec![Capability::new("Console")],
        }),
        overrides: vec![ComponentOverride {
            kind: "Deployment".into(),
            group: "apps".into(),
            namespace: "openshift-etcd-operator".into(),
            name: "etcd-operator".into(),
            unmanaged: true,
        }],
        ..Default::default()
    }
}

async fn cluster_version_spec_and_status_round_trip(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    install_crds(&ctx.admin).await?;
    let api: Api<ClusterVersion> = Api::all(ctx.admin.clone());
    // Clean slate: a cluster-scoped object without finalizers is gone at once.
    if api.get_opt("version").await?.is_some() {
        api.delete("version", &DeleteParams::default()).await?;
    }
    let created = api
        .create(
            &PostParams::default(),
            &ClusterVersion::new("version", version_spec()),
        )
        .await?;
    ensure!(created.status.is_none(), "status is ignored on create");
    let read = api.get("version").await?;
    ensure!(
        read.spec == version_spec(),
        "spec read back: {:?}",
        read.spec
    );

    let status = json!({
        "desired": {"version": "4.18.0", "image": "quay.io/openshift-release-dev/ocp-release@sha256:0"},
        "history": [{"state": "Partial", "startedTime": "2025-01-02T03:04:05Z", "completionTime": null,
                     "version": "4.18.0", "image": "quay.io/openshift-release-dev/ocp-release@sha256:0",
                     "verified": false}],
        "observedGeneration": read.metadata.generation,
        "versionHash": "Qy3bYjvcBBs=",
        "capabilities": {"enabledCapabilities": ["Console"], "knownCapabilities": ["Console", "baremetal"]},
        "conditions": [condition("Available", "False", "", ""), condition("Progressing", "True", "", "Working towards 4.18.0")],
        "availableUpdates": null,
    });
    let patch =
        json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "status": status});
    let params = PatchParams::apply(MANAGER).force();
    api.patch_status("version", &params, &Patch::Apply(&patch))
        .await?;

    let read = api.get_status("version").await?;
    ensure!(
        read.spec == version_spec(),
        "status writes leave spec alone"
    );
    let status = read.status.context("no status after patch_status")?;
    ensure!(
        status.version_hash.as_deref() == Some("Qy3bYjvcBBs="),
        "{status:?}"
    );
    let caps = status.capabilities.context("no status.capabilities")?;
    ensure!(
        caps.enabled_capabilities == [Capability::new("Console")],
        "{caps:?}"
    );
    ensure!(caps.known_capabilities.len() == 2, "{caps:?}");
    let types: Vec<_> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
    ensure!(types == ["Available", "Progressing"], "{types:?}");
    ensure!(
        status.history[0].completion_time.is_none(),
        "{:?}",
        status.history
    );
    ensure!(
        status.observed_generation == read.metadata.generation,
        "observedGeneration"
    );
    Ok(())
}

async fn cluster_operator_status_round_trips(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    install_crds(&ctx.admin).await?;
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let name = "cvo-test-etcd";
    if api.get_opt(name).await?.is_some() {
        api.delete(name, &DeleteParams::default()).await?;
    }
    let params = PatchParams::apply(MANAGER).force();
    api.patch(
        name,
        &params,
        &Patch::Apply(&ClusterOperator::new(name, ClusterOperatorSpec {})),
    )
    .await?;
    let status = json!({
        "conditions": [condition("Available", "True", "AsExpected", ""),
                       condition("Degraded", "False", "AsExpected", "")],
        "versions": [{"name": "operator", "version": "4.18.0"}, {"name": "etcd", "version": "3.5.16"}],
        "relatedObjects": [{"group": "", "resource": "namespaces", "name": "openshift-etcd"},
                           {"group": "operator.openshift.io", "resource": "etcds", "name": "cluster"}],
    });
    let patch = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "status": status});
    api.patch_status(name, &params, &Patch::Apply(&patch))
        .await?;

    let status = api.get(name).await?.status.context("no status")?;
    let versions: Vec<_> = (status.versions.iter())
        .map(|v| (v.name.as_str(), v.version.as_str()))
        .collect();
    ensure!(
        versions == [("operator", "4.18.0"), ("etcd", "3.5.16")],
        "{versions:?}"
    );
    ensure!(status.conditions.len() == 2, "{:?}", status.conditions);
    ensure!(
        status.related_objects[1].resource == "etcds",
        "{:?}",
        status.related_objects
    );
    ensure!(
        status.related_objects[0].namespace.is_none(),
        "cluster-scoped reference"
    );
    Ok(())
}

async fn restricted_user_is_forbidden(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    install_crds(&ctx.admin).await?;
    let restricted = ctx.cluster.restricted().await?;
    let api: Api<ClusterVersion> = Api::all(restricted);
    match api.list(&Default::default()).await {
        Err(kube::Error::Api(status)) if status.code == 403 && status.is_forbidden() => Ok(()),
        Err(e) => bail!("expected a 403 Forbidden, got {e:?}"),
        Ok(list) => bail!(
            "the restricted user listed {} ClusterVersions",
            list.items.len()
        ),
    }
}
