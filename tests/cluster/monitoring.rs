//! Monitoring as the payload ships it, against the real kube-apiserver and a real Prometheus:
//! the operator's `/metrics` over TLS with the serving certificate (rotated while it serves),
//! for the monitoring stack's client certificate only (the cluster's client CA from
//! `kube-system/extension-apiserver-authentication`); Prometheus configured from the payload's
//! ServiceMonitor as prometheus-operator would; the shipped alerts' expressions evaluated on
//! what it scrapes; the TLS settings following the cluster's TLS profile (the APIServer
//! `cluster`); Events about the ClusterVersion.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::sync::watch;

use cvo::cluster::ClusterOperator;
use cvo::host::metrics_auth::MONITORING_IDENTITY;
use cvo::host::metrics_tls::{
    MetricsTls, TlsServing, serve_tls, watch_client_ca, watch_tls_profile,
};
use cvo::host::serve::bind;
use cvo::host::tls_settings::TlsSettings;
use cvo::operator::{Metrics, run};

use super::prometheus_support::Prometheus;
use super::start_tests::{fresh_install, options};
use super::{Ctx, condition};

const SERVER_NAME: &str = "cluster-version-operator.openshift-cluster-version.svc";
const OPERATOR: &str = "monitoring-test";

/// A client certificate for `subject`, signed by the cluster's client CA (openssl, as
/// hack/cluster makes its own); PEM certificate and key.
fn client_certificate(ctx: &Ctx<'_>, dir: &Path, name: &str, subject: &str) -> anyhow::Result<()> {
    let pki = ctx.cluster.dir().join("pki");
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .context("openssl")?;
        ensure!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    let key = format!("{name}.key");
    let csr = format!("{name}.csr");
    let crt = format!("{name}.crt");
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = clientAuth\n",
    )?;
    run(&[
        "req", "-new", "-nodes", "-newkey", "rsa:2048", "-sha256", "-subj", subject, "-keyout",
        &key, "-out", &csr,
    ])?;
    let (ca, ca_key) = (pki.join("ca.crt"), pki.join("ca.key"));
    run(&[
        "x509",
        "-req",
        "-sha256",
        "-days",
        "1",
        "-in",
        &csr,
        "-CA",
        &ca.display().to_string(),
        "-CAkey",
        &ca_key.display().to_string(),
        "-set_serial",
        "0x1234",
        "-extfile",
        "client.ext",
        "-out",
        &crt,
    ])?;
    Ok(())
}

/// An HTTPS client of the metrics server, trusting `ca`, presenting `identity` (PEM cert and
/// key concatenated) when given.
fn https(
    ca: &str,
    identity: Option<String>,
    addr: std::net::SocketAddr,
) -> anyhow::Result<reqwest::Client> {
    cvo::oci::registry::install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem_bundle(ca.as_bytes())?)
        .resolve(SERVER_NAME, addr);
    if let Some(identity) = identity {
        builder = builder.identity(reqwest::Identity::from_pem(identity.as_bytes())?);
    }
    Ok(builder.build()?)
}

async fn get(
    client: &reqwest::Client,
    addr: std::net::SocketAddr,
    path: &str,
) -> anyhow::Result<(u16, String)> {
    let response = client
        .get(format!("https://{SERVER_NAME}:{}{path}", addr.port()))
        .send()
        .await?;
    Ok((response.status().as_u16(), response.text().await?))
}

/// The payload's ServiceMonitor endpoint as prometheus-operator turns it into a scrape job:
/// `job` is the Service's name, `scheme` and the TLS server name are the endpoint's, the
/// `tls-client-certificate-auth` scrape class presents the monitoring stack's certificate.
fn scrape_config(
    payload: &cvo::payload::Payload,
    target: std::net::SocketAddr,
) -> anyhow::Result<String> {
    let find = |kind: &str, name: &str| {
        (payload.manifests.iter())
            .find(|m| m.gvk.kind == kind && m.id.name == name)
            .map(|m| m.object())
            .with_context(|| format!("the payload ships no {kind} {name}"))
    };
    let monitor = find("ServiceMonitor", "cluster-version-operator")?;
    let service = find("Service", "cluster-version-operator")?;
    let endpoint = &monitor["spec"]["endpoints"][0];
    let port = endpoint["port"].as_str().context("endpoint port")?;
    ensure!(
        (service["spec"]["ports"].as_array().into_iter().flatten()).any(|p| p["name"] == port),
        "the Service has no port {port}"
    );
    ensure!(
        monitor["spec"]["scrapeClass"] == "tls-client-certificate-auth",
        "{monitor}"
    );
    let job = service["metadata"]["name"]
        .as_str()
        .context("service name")?;
    let scheme = endpoint["scheme"].as_str().context("scheme")?;
    let server_name = endpoint["tlsConfig"]["serverName"]
        .as_str()
        .context("serverName")?;
    let namespace = monitor["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    let labels = format!("{{namespace: {namespace}, endpoint: {port}, service: {job}}}");
    Ok(format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n\
         - job_name: {job}\n  scheme: {scheme}\n  tls_config:\n    ca_file: {{dir}}/ca.crt\n    server_name: {server_name}\n    cert_file: {{dir}}/prometheus.crt\n    key_file: {{dir}}/prometheus.key\n  static_configs:\n  - targets: ['{target}']\n    labels: {labels}\n\
         - job_name: unauthenticated\n  scheme: {scheme}\n  tls_config:\n    ca_file: {{dir}}/ca.crt\n    server_name: {server_name}\n  static_configs:\n  - targets: ['{target}']\n    labels: {labels}\n"
    ))
}

/// The shipped alerts' expressions, by name.
fn alert_expressions(payload: &cvo::payload::Payload) -> anyhow::Result<BTreeMap<String, String>> {
    let rule = (payload.manifests.iter())
        .find(|m| m.gvk.kind == "PrometheusRule" && m.id.name == "cluster-version-operator")
        .context("the payload ships no PrometheusRule")?
        .object();
    let mut found = BTreeMap::new();
    for group in rule["spec"]["groups"].as_array().into_iter().flatten() {
        for r in group["rules"].as_array().into_iter().flatten() {
            if let (Some(alert), Some(expr)) = (r["alert"].as_str(), r["expr"].as_str()) {
                found.insert(alert.to_string(), expr.to_string());
            }
        }
    }
    Ok(found)
}

/// Sets the test operator's conditions (reasons kept, so its series stay the same ones).
async fn report(
    ctx: &Ctx<'_>,
    available: &str,
    degraded: &str,
    upgradeable: &str,
) -> anyhow::Result<()> {
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    let params = PatchParams::apply("cvo-test-operator").force();
    let object = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                        "metadata": {"name": OPERATOR}, "spec": {}});
    api.patch(OPERATOR, &params, &Patch::Apply(&object)).await?;
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "status": {"versions": [{"name": "operator", "version": "4.18.0"}],
                   "conditions": [condition("Available", available, "Test", ""),
                                  condition("Degraded", degraded, "Test", ""),
                                  condition("Upgradeable", upgradeable, "Test", "")]}});
    api.patch_status(OPERATOR, &params, &Patch::Apply(&status))
        .await?;
    Ok(())
}

/// Waits until `expr` has (`fires`) or has not a sample about `name`.
async fn expect(
    prometheus: &Prometheus,
    alert: &str,
    expr: &str,
    name: &str,
    fires: bool,
) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let samples = prometheus.label_sets(expr).await?;
        let about = samples
            .iter()
            .any(|l| l.get("name").map(String::as_str) == Some(name));
        if about == fires {
            return Ok(());
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "{alert} {} for {name} after 20s: {expr} gives {samples:?}",
            if fires {
                "does not fire"
            } else {
                "still fires"
            }
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The payload's ServiceMonitor and the operator agree: Prometheus, configured from it, scrapes
/// `/metrics` over TLS with the monitoring stack's client certificate; a scrape without one
/// is refused (and `ClusterVersionOperatorDown`'s expression fires for it), another identity
/// is forbidden. The serving certificate is rotated on disk and served without a restart. The
/// ClusterOperator alerts fire when a test operator goes down, degraded and flapping, and are
/// quiet while it is healthy (the ClusterVersion's own alerts are `tests/alerts.rs`'s).
pub async fn monitoring_scrapes_over_tls_and_alerts(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let mut options = options()?;
    fresh_install(ctx, &options).await?;
    report(ctx, "True", "False", "True").await?;
    let metrics = Arc::new(Metrics::new());
    options.metrics = Some(metrics.clone());
    let dir = tempfile::tempdir()?;
    let now = Timestamp::now();
    let (serving, _) = cvo::host::webhook::make_certificate(&[SERVER_NAME.to_string()], now)?;
    let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_file, &serving.certificate)?;
    std::fs::write(&key_file, &serving.key)?;
    let tls = MetricsTls::new(&TlsServing {
        cert_file: cert_file.clone(),
        key_file: key_file.clone(),
        settings: TlsSettings::default(),
        reload_interval: Duration::from_millis(200),
    })?;
    let (tx, rx) = watch::channel(false);
    let client_ca = watch_client_ca(ctx.admin.clone(), rx.clone());
    let (listener, addr) = bind("127.0.0.1:0".parse()?).await?;
    let server = tokio::spawn(serve_tls(
        listener,
        metrics.clone(),
        tls,
        client_ca,
        rx.clone(),
    ));
    let (client, run_options, run_rx) = (ctx.admin.clone(), options.clone(), rx.clone());
    let operator = tokio::spawn(async move { run(&client, &run_options, run_rx).await });
    let checks = async {
        client_certificate(
            ctx,
            dir.path(),
            "prometheus",
            &format!("/CN={MONITORING_IDENTITY}"),
        )?;
        client_certificate(
            ctx,
            dir.path(),
            "nosy",
            "/CN=system:serviceaccount:default:nosy",
        )?;
        let identity = |name: &str| -> anyhow::Result<String> {
            Ok(
                std::fs::read_to_string(dir.path().join(format!("{name}.crt")))?
                    + &std::fs::read_to_string(dir.path().join(format!("{name}.key")))?,
            )
        };
        // Refusals come as HTTP statuses, with upstream's messages.
        let anonymous = https(&serving.ca, None, addr)?;
        ensure!(get(&anonymous, addr, "/healthz").await? == (200, "ok\n".into()));
        ensure!(
            get(&anonymous, addr, "/metrics").await?
                == (401, "client certificate required\n".into())
        );
        let nosy = https(&serving.ca, Some(identity("nosy")?), addr)?;
        let (code, body) = get(&nosy, addr, "/metrics").await?;
        ensure!(
            (code, body.as_str())
                == (
                    403,
                    "unauthorized common name: system:serviceaccount:default:nosy\n"
                ),
            "{code} {body}"
        );
        let monitoring = https(&serving.ca, Some(identity("prometheus")?), addr)?;
        // The client CA arrives by watch: wait for it.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let text = loop {
            let (code, text) = get(&monitoring, addr, "/metrics").await?;
            // The operators come from the watch, the installer from a pass.
            if code == 200
                && text.contains("cluster_operator_up{name=\"monitoring-test\"")
                && text.contains("cluster_installer{")
            {
                break text;
            }
            ensure!(
                std::time::Instant::now() < deadline,
                "/metrics: {code} {text}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        ensure!(
            text.contains("cluster_installer{type=\"\",version=\"\",invoker=\"\"} 1"),
            "{text}"
        );

        // Prometheus from the ServiceMonitor.
        let config = scrape_config(&options.payload, addr)?;
        let files = [
            ("ca.crt", serving.ca.as_str()),
            (
                "prometheus.crt",
                &std::fs::read_to_string(dir.path().join("prometheus.crt"))?,
            ),
            (
                "prometheus.key",
                &std::fs::read_to_string(dir.path().join("prometheus.key"))?,
            ),
        ];
        let Some(prometheus) = Prometheus::start_config(&config, &files).await? else {
            return anyhow::Ok(());
        };
        prometheus
            .wait_for(r#"up{job="cluster-version-operator"} == 1"#)
            .await?;
        prometheus
            .wait_for(r#"up{job="unauthenticated"} == 0"#)
            .await?;
        let alerts = alert_expressions(&options.payload)?;
        let down = &alerts["ClusterVersionOperatorDown"];
        ensure!(
            prometheus.samples(down).await? == 0,
            "{down} fires while scraped"
        );
        let refused = down.replace("cluster-version-operator", "unauthenticated");
        ensure!(
            prometheus.samples(&refused).await? == 1,
            "{refused} is quiet"
        );

        // The operator's alerts, quiet while it is healthy.
        for alert in [
            "ClusterOperatorDown",
            "ClusterOperatorDegraded",
            "ClusterOperatorFlapping",
        ] {
            expect(&prometheus, alert, &alerts[alert], OPERATOR, false).await?;
        }
        report(ctx, "False", "True", "False").await?;
        expect(
            &prometheus,
            "ClusterOperatorDown",
            &alerts["ClusterOperatorDown"],
            OPERATOR,
            true,
        )
        .await?;
        expect(
            &prometheus,
            "ClusterOperatorDegraded",
            &alerts["ClusterOperatorDegraded"],
            OPERATOR,
            true,
        )
        .await?;
        for available in ["True", "False", "True"] {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            report(ctx, available, "False", "True").await?;
        }
        expect(
            &prometheus,
            "ClusterOperatorFlapping",
            &alerts["ClusterOperatorFlapping"],
            OPERATOR,
            true,
        )
        .await?;
        prometheus
            .wait_for(r#"cluster_operator_condition_transitions{name="monitoring-test",condition="Available"} >= 4"#)
            .await?;

        // A rotated serving certificate is served without a restart.
        let (rotated, _) = cvo::host::webhook::make_certificate(&[SERVER_NAME.to_string()], now)?;
        std::fs::write(&key_file, &rotated.key)?;
        std::fs::write(&cert_file, &rotated.certificate)?;
        let renewed = https(&rotated.ca, None, addr)?;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while get(&renewed, addr, "/healthz").await.is_err() {
            ensure!(
                std::time::Instant::now() < deadline,
                "the rotated certificate is not served"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A new connection (the pooled ones keep their session).
        let old = https(&serving.ca, None, addr)?;
        ensure!(
            get(&old, addr, "/healthz").await.is_err(),
            "the old certificate is still served"
        );
        anyhow::Ok(())
    };
    let checked = checks.await;
    tx.send(true)?;
    operator.await??;
    server.await?;
    let api: Api<ClusterOperator> = Api::all(ctx.admin.clone());
    api.delete(OPERATOR, &Default::default()).await?;
    checked
}

/// Events about the ClusterVersion, as `kubectl get events -n openshift-cluster-version` lists
/// them (core/v1 Events): loading the operator's own payload, then a requested release whose
/// image cannot be retrieved.
pub async fn events_about_the_cluster_version(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Event;
    let options = options()?;
    fresh_install(ctx, &options).await?;
    super::start_tests::cvo_namespace(ctx).await?;
    let cv: Api<cvo::cluster::ClusterVersion> = Api::all(ctx.admin.clone());
    // Installed first: upstream ignores a request while it initializes.
    let mut state = cvo::operator::SyncState::default();
    super::start_tests::clean_pass(&ctx.admin, &options, &mut state).await?;
    let events: Api<Event> = Api::namespaced(ctx.admin.clone(), "openshift-cluster-version");
    let wanted = [
        (
            "Normal",
            "RetrievePayload",
            r#"Retrieving and verifying payload version="4.18.0" image="#,
        ),
        (
            "Normal",
            "LoadPayload",
            r#"Loading payload version="4.18.0" image="#,
        ),
        (
            "Normal",
            "PayloadLoaded",
            r#"Payload loaded version="4.18.0" image="#,
        ),
        (
            "Normal",
            "RetrievePayload",
            r#"Retrieving and verifying payload version="4.19.0" image="/nonexistent/release""#,
        ),
        (
            "Warning",
            "RetrievePayloadFailed",
            r#"Retrieving payload failed version="4.19.0" image="/nonexistent/release" failure="#,
        ),
    ];
    let request =
        json!({"spec": {"desiredUpdate": {"image": "/nonexistent/release", "version": "4.19.0"}}});
    cv.patch("version", &PatchParams::default(), &Patch::Merge(&request))
        .await?;
    let (tx, rx) = watch::channel(false);
    let (client, run_options) = (ctx.admin.clone(), options.clone());
    let operator = tokio::spawn(async move { run(&client, &run_options, rx).await });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let checked = loop {
        let listed = events.list(&Default::default()).await?.items;
        let about: Vec<(String, String, String)> = (listed.iter())
            .filter(|e| {
                e.involved_object.kind.as_deref() == Some("ClusterVersion")
                    && e.involved_object.name.as_deref() == Some("version")
            })
            .map(|e| {
                (
                    e.type_.clone().unwrap_or_default(),
                    e.reason.clone().unwrap_or_default(),
                    e.message.clone().unwrap_or_default(),
                )
            })
            .collect();
        let missing: Vec<_> = (wanted.iter())
            .filter(|(t, r, m)| {
                !about
                    .iter()
                    .any(|(at, ar, am)| at == t && ar == r && am.starts_with(m))
            })
            .collect();
        if missing.is_empty() {
            break Ok(());
        }
        if std::time::Instant::now() > deadline {
            break Err(anyhow::anyhow!("missing Events {missing:#?} in {about:#?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    tx.send(true)?;
    operator.await??;
    cv.patch(
        "version",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"desiredUpdate": null}})),
    )
    .await?;
    checked
}

/// The metrics server's TLS over `/healthz` (which needs no client certificate): whether a
/// client limited to TLS 1.2 (`tls12`) or any client completes a request.
async fn answers(ca: &str, addr: std::net::SocketAddr, tls12: bool) -> bool {
    let Ok(certs) = reqwest::Certificate::from_pem_bundle(ca.as_bytes()) else {
        return false;
    };
    let mut builder = reqwest::Client::builder()
        .tls_certs_only(certs)
        .resolve(SERVER_NAME, addr)
        .timeout(Duration::from_secs(5));
    if tls12 {
        builder = builder.tls_version_max(reqwest::tls::Version::TLS_1_2);
    }
    let Ok(client) = builder.build() else {
        return false;
    };
    get(&client, addr, "/healthz")
        .await
        .is_ok_and(|(code, _)| code == 200)
}

/// Waits until a TLS 1.2 client is served (`served`) or refused by the server at `addr`, while
/// any client is served.
async fn expect_tls12(
    ca: &str,
    addr: std::net::SocketAddr,
    served: bool,
    when: &str,
) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (tls12, any) = (
            answers(ca, addr, true).await,
            answers(ca, addr, false).await,
        );
        if tls12 == served && any {
            return Ok(());
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "{when}: after 20s a TLS 1.2 client is {} and a TLS 1.3 one {}",
            if tls12 { "served" } else { "refused" },
            if any { "served" } else { "refused" }
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The cluster's TLS profile (the APIServer `cluster`, as upstream's `ProfileManager` reads
/// it) is served once `spec.tlsAdherence` is `StrictAllComponents`, changes with it without a
/// restart, and the flags override it: `Modern` refuses TLS 1.2 unless `--tls-min-version
/// VersionTLS12` was given; a `Custom` TLS 1.2 profile with only RSA suites cannot serve this
/// ECDSA certificate over TLS 1.2; `LegacyAdheringComponentsOnly` gives the defaults back.
pub async fn metrics_tls_follows_the_cluster_tls_profile(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use kube::api::{DeleteParams, DynamicObject};
    use kube::core::GroupVersionKind;
    use kube::discovery::ApiResource;
    super::foreign_crds::install_foreign_crds(&ctx.admin).await?;
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "APIServer");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "apiservers");
    let apiservers: Api<DynamicObject> = Api::all_with(ctx.admin.clone(), &resource);
    let delete = || async {
        match apiservers.delete("cluster", &DeleteParams::default()).await {
            Ok(_) => anyhow::Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    };
    delete().await?;
    let dir = tempfile::tempdir()?;
    let (serving, _) =
        cvo::host::webhook::make_certificate(&[SERVER_NAME.to_string()], Timestamp::now())?;
    let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_file, &serving.certificate)?;
    std::fs::write(&key_file, &serving.key)?;
    let (tx, rx) = watch::channel(false);
    let client_ca = watch_client_ca(ctx.admin.clone(), rx.clone());
    let metrics = Arc::new(Metrics::new());
    // One server without TLS flags, one with --tls-min-version VersionTLS12.
    let mut servers = Vec::new();
    for settings in [
        TlsSettings::default(),
        TlsSettings::parse("VersionTLS12", &[])?,
    ] {
        let tls = MetricsTls::new(&TlsServing {
            cert_file: cert_file.clone(),
            key_file: key_file.clone(),
            settings,
            reload_interval: Duration::from_secs(60),
        })?;
        watch_tls_profile(ctx.admin.clone(), tls.clone(), rx.clone());
        let (listener, addr) = bind("127.0.0.1:0".parse()?).await?;
        let task = tokio::spawn(serve_tls(
            listener,
            metrics.clone(),
            tls,
            client_ca.clone(),
            rx.clone(),
        ));
        servers.push((addr, task));
    }
    let (plain, pinned) = (servers[0].0, servers[1].0);
    let ca = serving.ca.as_str();
    let set = |spec: serde_json::Value| {
        let apiservers = apiservers.clone();
        async move {
            let object = json!({"apiVersion": "config.openshift.io/v1", "kind": "APIServer",
                                "metadata": {"name": "cluster"}, "spec": spec});
            apiservers
                .patch(
                    "cluster",
                    &PatchParams::apply("cvo-test").force(),
                    &Patch::Apply(&object),
                )
                .await?;
            anyhow::Ok(())
        }
    };
    let checks = async {
        expect_tls12(ca, plain, true, "no APIServer").await?;
        // A profile nobody is asked to adhere to is not served: Modern arrives only with
        // StrictAllComponents (set after it, so that a wrongly served Modern would show first).
        set(json!({"tlsSecurityProfile": {"type": "Modern", "modern": {}}})).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        expect_tls12(ca, plain, true, "Modern without tlsAdherence").await?;
        set(json!({"tlsAdherence": "StrictAllComponents",
                   "tlsSecurityProfile": {"type": "Modern", "modern": {}}}))
        .await?;
        expect_tls12(ca, plain, false, "Modern, StrictAllComponents").await?;
        expect_tls12(
            ca,
            pinned,
            true,
            "Modern under --tls-min-version VersionTLS12",
        )
        .await?;
        set(json!({"tlsAdherence": "StrictAllComponents",
                   "tlsSecurityProfile": {"type": "Custom", "custom": {
                       "minTLSVersion": "VersionTLS12",
                       "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"]}}}))
        .await?;
        expect_tls12(ca, plain, false, "Custom, RSA suites only").await?;
        set(json!({"tlsAdherence": "StrictAllComponents",
                   "tlsSecurityProfile": {"type": "Custom", "custom": {
                       "minTLSVersion": "VersionTLS12",
                       "ciphers": ["ECDHE-ECDSA-AES128-GCM-SHA256"]}}}))
        .await?;
        expect_tls12(ca, plain, true, "Custom, an ECDSA suite").await?;
        set(json!({"tlsAdherence": "LegacyAdheringComponentsOnly",
                   "tlsSecurityProfile": {"type": "Modern", "modern": {}}}))
        .await?;
        expect_tls12(ca, plain, true, "LegacyAdheringComponentsOnly").await?;
        anyhow::Ok(())
    };
    let result = checks.await;
    tx.send(true)?;
    for (_, task) in servers {
        task.await?;
    }
    delete().await?;
    result
}
