//! Upstream's update flow as it is on main (issue 24): the cluster's own risk sources join the
//! update service's conditional updates (`status.conditionalUpdateRisks`), a not-recommended
//! update is the client's to refuse, and the admin's `cvo upgrade accept|recommend`.

use std::sync::Arc;

use anyhow::ensure;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tokio::sync::watch;

use cvo::cluster::ClusterVersionStatus;
use cvo::host::serve::{bind, serve};
use cvo::operator::Metrics;

use super::Ctx;
use super::prometheus_support::Prometheus;
use super::start_tests::{clean_pass, status};
use super::update_service_support::{Reply, UpdateService, graph};
use super::upgrade_tests::{NEW, OLD, install_old, set_console_upgradeable};

/// An alert upstream's `Alert` risk source takes (a node alert, whatever its severity), firing
/// from the first evaluation.
const NODE_ALERT: &str = r#"groups:
- name: cvo-test
  rules:
  - alert: KubeNodeNotReady
    expr: vector(1)
    labels:
      severity: warning
    annotations:
      summary: Node worker-0 is not ready
      description: The kubelet stopped posting its status.
      runbook_url: https://github.com/openshift/runbooks/blob/master/alerts/KubeNodeNotReady.md
"#;

/// `(status, reason)` of a conditional update's `Recommended` condition.
fn recommended(s: &ClusterVersionStatus, version: &str) -> (String, String) {
    (s.conditional_updates.iter())
        .find(|u| u.release.version.as_deref() == Some(version))
        .and_then(|u| u.conditions.iter().find(|c| c.type_ == "Recommended"))
        .map(|c| (c.status.clone(), c.reason.clone()))
        .unwrap_or_default()
}

fn risk_names(s: &ClusterVersionStatus, version: &str) -> Vec<String> {
    (s.conditional_updates.iter())
        .find(|u| u.release.version.as_deref() == Some(version))
        .map(|u| u.risk_names.clone())
        .unwrap_or_default()
}

/// The cluster's risk sources, as upstream's `Aggregate(Alert, Upgradeable)`: a firing node
/// alert (a real Prometheus evaluating a real rule) turns every recommended update into a
/// conditional one, its risk `Applies` with the alert's reason and text; a ClusterOperator
/// that is `Upgradeable=False` joins only the minor update. Accepting the alert's risk
/// recommends the patch update again; the minor one stays held by the operator.
pub async fn update_risks_from_alerts_and_upgradeable(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let (listener, addr) = bind("127.0.0.1:0".parse()?).await?;
    let (stop, stopped) = watch::channel(false);
    let server = tokio::spawn(serve(listener, metrics.clone(), stopped));
    let Some(prometheus) = Prometheus::start_with_rules(addr, NODE_ALERT).await? else {
        return Ok(());
    };
    let body = graph(
        &[
            ("4.17.0", OLD),
            ("4.17.1", "quay.io/r@sha256:171"),
            ("4.18.0", NEW),
        ],
        &[(0, 1), (0, 2)],
        json!([]),
    );
    let service = UpdateService::start(move |_| Reply::Graph(body.clone())).await;
    let result = async {
        let (api, mut options, mut state) = install_old(ctx).await?;
        let c = &ctx.admin;
        options.metrics = Some(metrics.clone());
        options.prometheus.url = Some(prometheus.url.clone());
        prometheus.wait_for_alert("KubeNodeNotReady").await?;
        set_console_upgradeable(ctx, &options.payload, Some("Plugins need 4.18 APIs.")).await?;
        let upstream = json!({"spec": {"channel": "stable-4.18", "upstream": service.url}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&upstream))
            .await?;
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        ensure!(s.available_updates.is_none(), "{:?}", s.available_updates);
        ensure!(
            risk_names(&s, "4.17.1") == ["KubeNodeNotReady"]
                && risk_names(&s, "4.18.0")
                    == ["ClusterOperatorUpgradeable-console", "KubeNodeNotReady"],
            "{:#?}",
            s.conditional_updates
        );
        ensure!(
            recommended(&s, "4.17.1") == ("False".into(), "KubeNodeNotReady".into())
                && recommended(&s, "4.18.0") == ("False".into(), "MultipleReasons".into()),
            "{:#?}",
            s.conditional_updates
        );
        let alert = (s.conditional_update_risks.iter())
            .find(|r| r.name == "KubeNodeNotReady")
            .ok_or_else(|| anyhow::anyhow!("{:#?}", s.conditional_update_risks))?;
        let applies = &alert.conditions[0];
        ensure!(
            alert.url
                == "https://github.com/openshift/runbooks/blob/master/alerts/KubeNodeNotReady.md"
                && alert.message == "Node worker-0 is not ready."
                && (applies.type_.as_str(), applies.status.as_str(), applies.reason.as_str())
                    == ("Applies", "True", "Alert:firing")
                && applies.message == "warning alert KubeNodeNotReady firing, which may slow workload redistribution during rolling node updates. Node worker-0 is not ready. The alert description is: The kubelet stopped posting its status. https://github.com/openshift/runbooks/blob/master/alerts/KubeNodeNotReady.md",
            "{alert:#?}"
        );

        // Accepted: the patch update is recommended again; the minor one still waits for the
        // operator.
        let accept = json!({"spec": {"desiredUpdate": {"acceptRisks": [{"name": "KubeNodeNotReady"}]}}});
        api.patch("version", &PatchParams::default(), &Patch::Merge(&accept))
            .await?;
        clean_pass(c, &options, &mut state).await?;
        let s = status(ctx).await?;
        let available: Vec<_> = (s.available_updates.iter().flatten())
            .filter_map(|r| r.version.clone())
            .collect();
        ensure!(available == ["4.17.1"], "{available:?}");
        ensure!(
            recommended(&s, "4.17.1") == ("True".into(), "AllExposedRisksAccepted".into())
                // The operator's risk name is no condition reason (`-`).
                && recommended(&s, "4.18.0") == ("False".into(), "ExposedToRisks".into()),
            "{:#?}",
            s.conditional_updates
        );
        set_console_upgradeable(ctx, &options.payload, None).await?;
        let cv = api.get("version").await?;
        ensure!(
            cv.spec.desired_update.is_some(),
            "a desiredUpdate of accepted risks alone is kept"
        );
        anyhow::Ok(())
    }
    .await;
    stop.send(true)?;
    server.await?;
    drop(prometheus);
    result
}
