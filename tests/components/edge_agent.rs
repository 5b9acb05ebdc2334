//! The Open Horizon edge cluster agent's install on a real cluster: the objects
//! `cvo edge agent-install` renders, applied; what the apiserver lets the agent's
//! ServiceAccount do in each scope; and `--check`'s coexistence rules against the agents found.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::Value;

use cvo::components::edge::agent_install::{
    CONFIG_MAP, HubCert, InstallSettings, PVC, Rbac, SECRET, SERVICE_ACCOUNT, Scope,
    cluster_role_binding_name, node_reader_name, render,
};

use super::{Ctx, apply_all, may};

/// Renders and applies an agent; a client authenticated as its ServiceAccount.
async fn install(ctx: &Ctx<'_>, settings: &InstallSettings) -> anyhow::Result<kube::Client> {
    apply_all(&ctx.admin, &render(settings)?).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), &settings.namespace);
    ctx.cluster
        .service_account_client(&accounts, SERVICE_ACCOUNT)
        .await
}

/// Whether the apiserver allows `client` to create Deployments in `namespace`.
async fn may_create_deployments(client: &kube::Client, namespace: &str) -> anyhow::Result<bool> {
    may(client, namespace, ("apps", "deployments", "create")).await
}

/// The access review's answer once RBAC has caught up with the bindings just applied.
async fn eventually_may(client: &kube::Client, namespace: &str, want: bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = may_create_deployments(client, namespace).await?;
        if got == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("create deployments in {namespace}: allowed={got}, want {want}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A real create of a ConfigMap in `namespace` as `client`: Ok(true) created, Ok(false)
/// refused with 403.
async fn creates_config_map(client: &kube::Client, namespace: &str) -> anyhow::Result<bool> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let map: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"generateName": "agent-probe-"}, "data": {"a": "b"}}))?;
    match api.create(&PostParams::default(), &map).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 403 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn cvo_check(ctx: &Ctx<'_>, extra: &[&str]) -> anyhow::Result<(i32, String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
        .args(["edge", "agent-install", "--check", "--kubeconfig"])
        .arg(ctx.cluster.kubeconfig())
        .args(extra)
        .output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A namespace-scoped agent manages its namespace and is refused elsewhere; the cluster-scoped
/// one (and, with `--rbac upstream`, a namespace-scoped one) manages every namespace; `--check`
/// refuses a second cluster-scoped agent and a change of scope, and lets a namespace-scoped one
/// join.
pub async fn agent_scopes_on_a_real_cluster(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let scoped = InstallSettings::new("edge-team-a", Scope::Namespace, Rbac::LeastPrivilege);
    let client = install(ctx, &scoped).await?;
    eventually_may(&client, "edge-team-a", true).await?;
    ensure!(
        creates_config_map(&client, "edge-team-a").await?,
        "own namespace refused"
    );
    ensure!(!may_create_deployments(&client, "default").await?);
    ensure!(
        !creates_config_map(&client, "default").await?,
        "default allowed"
    );
    ensure!(!may_create_deployments(&client, "kube-system").await?);

    let cluster = InstallSettings::new("edge-cluster", Scope::Cluster, Rbac::LeastPrivilege);
    let client = install(ctx, &cluster).await?;
    eventually_may(&client, "kube-system", true).await?;
    ensure!(
        creates_config_map(&client, "default").await?,
        "cluster-scoped refused"
    );

    let upstream = InstallSettings::new("edge-team-b", Scope::Namespace, Rbac::Upstream);
    let client = install(ctx, &upstream).await?;
    eventually_may(&client, "default", true).await?;

    // Agents now: edge-team-a (scoped), edge-cluster (cluster), edge-team-b (scoped).
    let (code, _, stderr) = cvo_check(ctx, &["--namespace", "edge-other"])?;
    ensure!(
        code == 1,
        "second cluster-scoped agent: exit {code}, {stderr}"
    );
    ensure!(
        stderr.contains(
            "A cluster scoped agent detected in edge-cluster. A cluster scoped agent cannot be installed to the same cluster that already has a cluster scoped agent (so not into namespace edge-other"
        ),
        "{stderr}"
    );
    let (code, stdout, stderr) =
        cvo_check(ctx, &["--namespace", "edge-other", "--namespace-scoped"])?;
    ensure!(code == 0, "{stderr}");
    ensure!(stdout.contains("3 agent(s) on the cluster"), "{stdout}");
    let (code, _, stderr) = cvo_check(ctx, &["--namespace", "edge-team-a"])?;
    ensure!(
        code == 1 && stderr.contains("Current agent scope cannot be updated, please run agent-uninstall.sh and re-run agent-install.sh (the agent in namespace edge-team-a is namespace-scoped"),
        "{stderr}"
    );
    let (code, _, stderr) = cvo_check(ctx, &["--namespace", "edge-cluster"])?;
    ensure!(code == 0, "reinstalling the cluster-scoped agent: {stderr}");

    // Leave the cluster as found: the bindings are cluster-scoped.
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.admin.clone());
    for ns in ["edge-team-a", "edge-cluster", "edge-team-b"] {
        namespaces.delete(ns, &DeleteParams::default()).await?;
        let _ = bindings
            .delete(&cluster_role_binding_name(ns), &DeleteParams::default())
            .await;
    }
    Ok(())
}

/// The agent's identity only (its Namespace, ServiceAccount and bindings; no Deployment, so
/// that `--check` in the other test counts no extra agent), and a kubeconfig for it: `cvo edge
/// deploy` then runs with the rights the agent has.
async fn agent_identity(
    ctx: &Ctx<'_>,
    settings: &InstallSettings,
    dir: &std::path::Path,
) -> anyhow::Result<std::path::PathBuf> {
    let identity: Vec<Value> = render(settings)?
        .into_iter()
        .filter(|d| {
            [
                "Namespace",
                "ServiceAccount",
                "RoleBinding",
                "ClusterRole",
                "ClusterRoleBinding",
            ]
            .contains(&d["kind"].as_str().unwrap_or_default())
        })
        .collect();
    apply_all(&ctx.admin, &identity).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.admin.clone(), &settings.namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    let token = accounts
        .create_token_request(SERVICE_ACCOUNT, &Default::default(), &request)
        .await?
        .status
        .context("no token in the TokenRequest status")?
        .token;
    // The admin kubeconfig with the agent's token (as `Cluster::client_with_token` does).
    let admin = ctx.cluster.kubeconfig();
    let admin_token = std::fs::read_to_string(admin.with_file_name("admin.token"))?;
    let text = std::fs::read_to_string(admin)?.replace(admin_token.trim(), &token);
    let path = dir.join(format!("kubeconfig-{}", settings.namespace));
    std::fs::write(&path, text)?;
    Ok(path)
}

fn cvo_deploy(args: &[&str]) -> anyhow::Result<(i32, String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
        .args(["edge", "deploy"])
        .args(args)
        .output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

const OPERATOR_YAML: &str = "apiVersion: v1
kind: ServiceAccount
metadata:
  name: svc-operator
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: svc-config
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-operator
spec:
  selector:
    matchLabels: {app: svc-operator}
  template:
    metadata:
      labels: {app: svc-operator}
    spec:
      serviceAccountName: svc-operator
      containers:
      - name: operator
        image: quay.io/example/operator:1.0
";

/// `cvo edge deploy` as the agents' own identities: a namespace-scoped agent installs into
/// its namespace and is refused another one with anax's message, before any request; a
/// cluster-scoped agent installs into the namespace the operator YAML declares, creating it
/// and the NetworkPolicy between the two namespaces; the apiserver refuses anax's own name for
/// that NetworkPolicy.
pub async fn deploy_as_the_agent_would(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let agreement = "a".repeat(63) + "1";
    let scoped = InstallSettings::new("edge-dep-team", Scope::Namespace, Rbac::LeastPrivilege);
    let scoped_kubeconfig = agent_identity(ctx, &scoped, dir.path()).await?;
    let yaml = dir.path().join("operator.yaml");
    std::fs::write(&yaml, OPERATOR_YAML)?;
    let kubeconfig = scoped_kubeconfig.to_str().context("path")?;
    let yaml_path = yaml.to_str().context("path")?;
    let scoped_args = [
        "-f",
        yaml_path,
        "--agreement",
        &agreement,
        "--agent-namespace",
        "edge-dep-team",
        "--namespace-scoped",
        "--kubeconfig",
        kubeconfig,
    ];
    // RBAC catches up with the RoleBinding: retry until the apply is allowed.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, stdout, stderr) = cvo_deploy(&scoped_args)?;
        if code == 0 {
            ensure!(
                stdout.ends_with(&format!("agreement {agreement}: namespace edge-dep-team\n")),
                "{stdout}"
            );
            break;
        }
        if Instant::now() > deadline {
            bail!("namespace-scoped deploy: exit {code}: {stderr}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let maps: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), "edge-dep-team");
    ensure!(
        maps.get_opt("svc-config").await?.is_some(),
        "no ConfigMap in edge-dep-team"
    );

    let mut elsewhere = scoped_args.to_vec();
    elsewhere.extend(["--agreement-namespace", "edge-dep-other"]);
    let (code, _, stderr) = cvo_deploy(&elsewhere)?;
    ensure!(code == 1, "deploy elsewhere: exit {code}");
    ensure!(
        stderr.contains(&format!("Service failed to start for agreement {agreement}. Could not deploy service into namespace edge-dep-other because the agent's namespace is namespace scoped, and it restricts all services to the agent namespace edge-dep-team")),
        "{stderr}"
    );
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    ensure!(namespaces.get_opt("edge-dep-other").await?.is_none());

    // The cluster-scoped agent, an operator YAML that declares its Namespace and binds its
    // ServiceAccount cluster-wide without saying where the account lives.
    let cluster = InstallSettings::new("edge-dep-home", Scope::Cluster, Rbac::LeastPrivilege);
    let cluster_kubeconfig = agent_identity(ctx, &cluster, dir.path()).await?;
    let declared = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: edge-dep-svc\n---\n{OPERATOR_YAML}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: edge-dep-svc-operator
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
subjects:
- {{kind: ServiceAccount, name: svc-operator}}
"
    );
    std::fs::write(&yaml, declared)?;
    let kubeconfig = cluster_kubeconfig.to_str().context("path")?;
    let cluster_args = [
        "-f",
        yaml_path,
        "--agreement",
        &agreement,
        "--agent-namespace",
        "edge-dep-home",
        "--kubeconfig",
        kubeconfig,
        "-o",
        "json",
    ];
    let deadline = Instant::now() + Duration::from_secs(20);
    let report: Value = loop {
        let (code, stdout, stderr) = cvo_deploy(&cluster_args)?;
        if code == 0 {
            break serde_json::from_str(&stdout)?;
        }
        if Instant::now() > deadline {
            bail!("cluster-scoped deploy: exit {code}: {stderr}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let policy_name = format!("{agreement}-networkpolicy");
    ensure!(report["namespace"] == "edge-dep-svc", "{report}");
    let applied: Vec<String> = (report["objects"].as_array().context("objects")?.iter())
        .map(|o| {
            format!(
                "{} {} {}",
                o["kind"].as_str().unwrap_or_default(),
                o["name"].as_str().unwrap_or_default(),
                o["namespace"].as_str().unwrap_or_default()
            )
        })
        .collect();
    ensure!(
        applied
            == [
                "Namespace edge-dep-svc ".to_owned(),
                format!("NetworkPolicy {policy_name} edge-dep-home"),
                "ServiceAccount svc-operator edge-dep-svc".to_owned(),
                "ConfigMap svc-config edge-dep-svc".to_owned(),
                "Deployment svc-operator edge-dep-svc".to_owned(),
                "ClusterRoleBinding edge-dep-svc-operator ".to_owned(),
            ],
        "{applied:?}"
    );
    ensure!(namespaces.get_opt("edge-dep-svc").await?.is_some());
    let maps: Api<ConfigMap> = Api::namespaced(ctx.admin.clone(), "edge-dep-svc");
    ensure!(
        maps.get_opt("svc-config").await?.is_some(),
        "no ConfigMap in edge-dep-svc"
    );
    let policies: Api<NetworkPolicy> = Api::namespaced(ctx.admin.clone(), "edge-dep-home");
    let policy = policies.get(&policy_name).await?;
    let spec = policy.spec.context("NetworkPolicy spec")?;
    let peer_label = |peers: Option<Vec<NetworkPolicyPeer>>| {
        peers
            .and_then(|p| p.into_iter().next())
            .and_then(|p| p.namespace_selector)
            .and_then(|s| s.match_labels)
            .and_then(|l| l.get("kubernetes.io/metadata.name").cloned())
    };
    let ingress = spec
        .ingress
        .clone()
        .unwrap_or_default()
        .into_iter()
        .next()
        .context("ingress")?;
    let egress = spec
        .egress
        .clone()
        .unwrap_or_default()
        .into_iter()
        .next()
        .context("egress")?;
    ensure!(
        peer_label(ingress.from).as_deref() == Some("edge-dep-svc"),
        "ingress {spec:?}"
    );
    ensure!(
        peer_label(egress.to).as_deref() == Some("edge-dep-svc"),
        "egress {spec:?}"
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.admin.clone());
    let binding = bindings.get("edge-dep-svc-operator").await?;
    let subject = binding
        .subjects
        .unwrap_or_default()
        .into_iter()
        .next()
        .context("subject")?;
    ensure!(
        subject.namespace.as_deref() == Some("edge-dep-svc"),
        "{subject:?}"
    );

    // anax's name for the policy, `<agreement>-networkPolicy`: not a valid name.
    let mut upstream = policies.get(&policy_name).await?;
    upstream.metadata = kube::api::ObjectMeta {
        name: Some(format!("{agreement}-networkPolicy")),
        ..Default::default()
    };
    match policies.create(&PostParams::default(), &upstream).await {
        Err(kube::Error::Api(e)) if e.code == 422 && e.message.contains("RFC 1123") => {}
        other => bail!("anax's NetworkPolicy name: {other:?}"),
    }

    for ns in ["edge-dep-team", "edge-dep-home", "edge-dep-svc"] {
        namespaces.delete(ns, &DeleteParams::default()).await?;
    }
    for binding in [
        cluster_role_binding_name("edge-dep-home"),
        "edge-dep-svc-operator".to_owned(),
    ] {
        let _ = bindings.delete(&binding, &DeleteParams::default()).await;
    }
    Ok(())
}

fn cvo_properties(
    kubeconfig: &std::path::Path,
    namespace: &str,
) -> anyhow::Result<(i32, String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cvo"))
        .args([
            "edge",
            "agent-install",
            "--properties",
            "--namespace-scoped",
            "-o",
            "json",
        ])
        .args(["--namespace", namespace, "--kubeconfig"])
        .arg(kubeconfig)
        .output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// `--properties` until it exits `want` (RBAC catches up with a binding's change): its stdout
/// and stderr.
async fn properties_exit(
    kubeconfig: &std::path::Path,
    namespace: &str,
    want: i32,
) -> anyhow::Result<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, stdout, stderr) = cvo_properties(kubeconfig, namespace)?;
        if code == want {
            return Ok((stdout, stderr));
        }
        if Instant::now() > deadline {
            bail!("--properties: exit {code}, want {want}: {stderr}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether a real request as `client` is refused with 403 (Ok(false): it was allowed).
async fn refused<T, F>(request: F) -> anyhow::Result<bool>
where
    F: std::future::Future<Output = kube::Result<T>>,
{
    match request.await {
        Ok(_) => Ok(false),
        Err(kube::Error::Api(e)) if e.code == 403 => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// The least-privilege namespace-scoped agent, as its own ServiceAccount: it computes the
/// built-in properties anax computes (it lists the Nodes: the same answer the admin gets), reads
/// its ConfigMap, Secret and PVC, and is refused everything else outside its namespace: a Node
/// by name, Secrets and ConfigMaps elsewhere, Namespaces, Pods cluster-wide, writes to Nodes
/// and RBAC. Without the node reader binding the computation fails and says what anax would
/// publish instead.
pub async fn least_privilege_agent_reads_its_properties(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod, Secret};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let ns = "edge-props";
    let dir = tempfile::tempdir()?;
    let nodes: Api<Node> = Api::all(ctx.admin.clone());
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "edge-props-node"},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi"},
                   "allocatable": {"cpu": "3500m", "memory": "7Gi"},
                   "nodeInfo": {"architecture": "arm64", "bootID": "", "containerRuntimeVersion": "",
                                "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "",
                                "machineID": "", "operatingSystem": "linux", "osImage": "",
                                "systemUUID": ""}}}))?;
    nodes.create(&PostParams::default(), &node).await?;

    let mut settings = InstallSettings::new(ns, Scope::Namespace, Rbac::LeastPrivilege);
    settings.hub_cert = HubCert::Pem("-----BEGIN CERTIFICATE-----\n".into());
    // Everything but what runs the agent (no Deployment: `--check` in the other test counts them).
    let objects: Vec<Value> = render(&settings)?
        .into_iter()
        .filter(|d| !["Deployment", "CronJob"].contains(&d["kind"].as_str().unwrap_or_default()))
        .collect();
    apply_all(&ctx.admin, &objects).await?;
    let kubeconfig = agent_identity(ctx, &settings, dir.path()).await?;
    let agent = {
        let config = kube::config::Kubeconfig::read_from(&kubeconfig)?;
        let options = kube::config::KubeConfigOptions::default();
        kube::Client::try_from(kube::Config::from_custom_kubeconfig(config, &options).await?)?
    };

    // The properties, as the agent computes them, once RBAC has the bindings.
    let (stdout, _) = properties_exit(&kubeconfig, ns, 0).await?;
    let properties: Value = serde_json::from_str(&stdout)?;
    let value = |name: &str| {
        (properties.as_array().into_iter().flatten())
            .find(|p| p["name"] == name)
            .map(|p| p["value"].clone())
    };
    ensure!(
        value("openhorizon.kubernetesNamespace") == Some("edge-props".into()),
        "{properties}"
    );
    ensure!(
        value("openhorizon.kubernetesNamespaceScoped") == Some(true.into()),
        "{properties}"
    );
    ensure!(
        value("openhorizon.kubernetesVersion")
            .is_some_and(|v| v.as_str().is_some_and(|v| v.starts_with("v1."))),
        "{properties}"
    );
    ensure!(
        value("openhorizon.allowPrivileged") == Some(true.into()),
        "{properties}"
    );
    ensure!(
        value("openhorizon.cpu")
            .and_then(|v| v.as_f64())
            .is_some_and(|c| c >= 4.0),
        "{properties}"
    );
    ensure!(
        value("openhorizon.memory")
            .and_then(|v| v.as_f64())
            .is_some_and(|m| m >= 8590.0),
        "{properties}"
    );
    // The same answer the cluster's admin gets: the agent sees every Node.
    let (code, admin_stdout, stderr) = cvo_properties(ctx.cluster.kubeconfig(), ns)?;
    ensure!(code == 0, "{stderr}");
    ensure!(
        admin_stdout == stdout,
        "agent {stdout} admin {admin_stdout}"
    );
    if nodes.list(&Default::default()).await?.items.len() == 1 {
        ensure!(
            value("openhorizon.arch") == Some("arm64".into()),
            "{properties}"
        );
        ensure!(value("openhorizon.cpu") == Some(4.0.into()), "{properties}");
        ensure!(
            value("openhorizon.memory") == Some(8590.0.into()),
            "{properties}"
        );
    }

    // Its own objects: read with real requests.
    let own_maps: Api<ConfigMap> = Api::namespaced(agent.clone(), ns);
    own_maps.get(CONFIG_MAP).await.context("its ConfigMap")?;
    let own_secrets: Api<Secret> = Api::namespaced(agent.clone(), ns);
    own_secrets.get(SECRET).await.context("its Secret")?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(agent.clone(), ns);
    claims.get(PVC).await.context("its PVC")?;

    // Nothing broader: real requests refused, and what the apiserver would refuse.
    let agent_nodes: Api<Node> = Api::all(agent.clone());
    ensure!(
        refused(agent_nodes.get("edge-props-node")).await?,
        "get a Node allowed"
    );
    for other in ["default", "kube-system"] {
        let secrets: Api<Secret> = Api::namespaced(agent.clone(), other);
        ensure!(
            refused(secrets.list(&Default::default())).await?,
            "Secrets of {other} readable"
        );
        let maps: Api<ConfigMap> = Api::namespaced(agent.clone(), other);
        ensure!(
            refused(maps.list(&Default::default())).await?,
            "ConfigMaps of {other} readable"
        );
    }
    let all_secrets: Api<Secret> = Api::all(agent.clone());
    ensure!(
        refused(all_secrets.list(&Default::default())).await?,
        "every Secret readable"
    );
    let all_pods: Api<Pod> = Api::all(agent.clone());
    ensure!(
        refused(all_pods.list(&Default::default())).await?,
        "every Pod readable"
    );
    let namespaces: Api<Namespace> = Api::all(agent.clone());
    ensure!(
        refused(namespaces.list(&Default::default())).await?,
        "Namespaces readable"
    );
    for (group, resource, verb) in [
        ("", "nodes", "get"),
        ("", "nodes", "watch"),
        ("", "nodes", "update"),
        ("", "nodes", "delete"),
        ("", "nodes/status", "patch"),
        ("rbac.authorization.k8s.io", "clusterroles", "create"),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "create"),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "create",
        ),
    ] {
        ensure!(
            !may(&agent, "", (group, resource, verb)).await?,
            "{verb} {resource} allowed"
        );
    }
    ensure!(may(&agent, "", ("", "nodes", "list")).await?);

    // Without the node reader binding: the computation fails and says what anax publishes.
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.admin.clone());
    bindings
        .delete(&node_reader_name(ns), &DeleteParams::default())
        .await?;
    let (_, stderr) = properties_exit(&kubeconfig, ns, 1).await?;
    ensure!(
        stderr.contains("cannot list the Nodes")
            && stderr.contains("an agent with these rights publishes openhorizon.arch=\"\", openhorizon.cpu=0.0, openhorizon.allowPrivileged=true, openhorizon.kubernetesNamespace=\"\"")
            && stderr.contains("as `cvo edge agent-install` does with ClusterRole edge-props-openhorizon-agent-node-reader"),
        "{stderr}"
    );

    let admin_namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    admin_namespaces
        .delete(ns, &DeleteParams::default())
        .await?;
    let roles: Api<ClusterRole> = Api::all(ctx.admin.clone());
    roles
        .delete(&node_reader_name(ns), &DeleteParams::default())
        .await?;
    nodes
        .delete("edge-props-node", &DeleteParams::default())
        .await?;
    Ok(())
}
