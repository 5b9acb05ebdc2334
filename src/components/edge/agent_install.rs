//! The edge cluster agent's install (spec B.1, anax `agent-install.sh` and its `k8s/`
//! templates): the objects it creates in the agent namespace, the RBAC a scope gets, and the
//! coexistence rules the script enforces before it installs. Pure: [`render`] turns settings
//! into documents, [`check_coexistence`] decides over the agents a shell found on the cluster.
//!
//! RBAC: the design (seed 000, anax#3733) gives a namespace-scoped agent namespace permissions
//! only; anax did so for a while (a RoleBinding to `admin`) and then reverted to a
//! `cluster-admin` ClusterRoleBinding for both scopes. [`Rbac::LeastPrivilege`] is the design,
//! [`Rbac::Upstream`] what ships.

use serde_json::{Value, json};

/// `DEFAULT_AGENT_NAMESPACE` of the install script, where a cluster-scoped agent goes.
pub const DEFAULT_AGENT_NAMESPACE: &str = "openhorizon-agent";
pub const SERVICE_ACCOUNT: &str = "agent-service-account";
pub const DEPLOYMENT: &str = "agent";
/// The agent container, which carries the scope in its environment.
pub const CONTAINER: &str = "anax";
pub const SECRET: &str = "openhorizon-agent-secrets";
pub const CONFIG_MAP: &str = "openhorizon-agent-config";
pub const PVC: &str = "openhorizon-agent-pvc";
pub const SERVICE: &str = "agent-service";
pub const CRON_JOB: &str = "auto-upgrade-cronjob";
/// The RoleBinding of anax commit 60aef015 (reverted upstream).
pub const NAMESPACE_ROLE_BINDING: &str = "openhorizon-agent-namespace-admin-rolebinding";
pub const ENV_NAMESPACE: &str = "AGENT_NAMESPACE";
pub const ENV_SCOPED: &str = "HZN_NAMESPACE_SCOPED";
/// Where the Secret's hub certificate is mounted in the agent container.
const CERT_PATH: &str = "/etc/default/cert/agent-install.crt";
/// The agent API port.
const AGENT_PORT: u16 = 8510;

/// `<ns>-openhorizon-agent-cluster-rule`, the ClusterRoleBinding the script creates.
pub fn cluster_role_binding_name(namespace: &str) -> String {
    format!("{namespace}-openhorizon-agent-cluster-rule")
}

/// Whether the agent may deploy services anywhere (cluster) or only in its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Cluster,
    Namespace,
}

impl Scope {
    pub fn from_scoped(namespace_scoped: bool) -> Scope {
        match namespace_scoped {
            true => Scope::Namespace,
            false => Scope::Cluster,
        }
    }

    /// The value of `HZN_NAMESPACE_SCOPED`.
    pub fn env_value(self) -> &'static str {
        match self {
            Scope::Cluster => "false",
            Scope::Namespace => "true",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Scope::Cluster => "cluster-scoped",
            Scope::Namespace => "namespace-scoped",
        }
    }
}

/// Which RBAC a namespace-scoped agent gets (a cluster-scoped one is `cluster-admin` either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rbac {
    /// The design: a RoleBinding to `admin` in the agent namespace only.
    LeastPrivilege,
    /// What anax ships: a ClusterRoleBinding to `cluster-admin` for both scopes.
    Upstream,
}

/// The role the agent's ServiceAccount is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// ClusterRoleBinding `<ns>-openhorizon-agent-cluster-rule` → ClusterRole `cluster-admin`.
    ClusterAdmin,
    /// RoleBinding `openhorizon-agent-namespace-admin-rolebinding` in the agent namespace →
    /// ClusterRole `admin`.
    NamespaceAdmin,
}

/// The binding a scope gets under an RBAC mode.
pub fn binding(scope: Scope, rbac: Rbac) -> Binding {
    match (scope, rbac) {
        (Scope::Namespace, Rbac::LeastPrivilege) => Binding::NamespaceAdmin,
        _ => Binding::ClusterAdmin,
    }
}

/// What the install takes; the flags of `cvo edge agent-install`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallSettings {
    pub namespace: String,
    pub scope: Scope,
    pub rbac: Rbac,
    /// The agent image (`<arch>_anax_k8s`).
    pub image: String,
    /// `HZN_ORG_ID`.
    pub org: String,
    pub exchange_url: String,
    pub css_url: String,
    /// The hub certificate (PEM) for the Secret; empty when the hub needs none.
    pub cert: String,
    /// OpenShift: the Namespace gets the SCC uid-range and supplemental-groups annotations.
    pub openshift: bool,
    pub pvc_size: String,
}

impl InstallSettings {
    /// The script's defaults in `namespace`.
    pub fn new(namespace: &str, scope: Scope, rbac: Rbac) -> InstallSettings {
        InstallSettings {
            namespace: namespace.to_owned(),
            scope,
            rbac,
            image: "docker.io/openhorizon/amd64_anax_k8s:latest".to_owned(),
            org: "myorg".to_owned(),
            exchange_url: String::new(),
            css_url: String::new(),
            cert: String::new(),
            openshift: false,
            pvc_size: "10Gi".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    #[error(
        "--namespace {0:?} is not a valid namespace name: {1} (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)"
    )]
    Namespace(String, &'static str),
    #[error("--{0} must not be empty")]
    Empty(&'static str),
    #[error("cannot write {0} as YAML: {1}")]
    Yaml(String, String),
}

/// Kubernetes's DNS-1123 label rule for namespace names.
fn check_namespace(name: &str) -> Result<(), InstallError> {
    let bad = |why| Err(InstallError::Namespace(name.to_owned(), why));
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > 63 {
        return bad("it is longer than 63 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return bad("it has a character other than a-z, 0-9 and '-'");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return bad("it starts or ends with '-'");
    }
    Ok(())
}

/// The agent's objects, in the order the script creates them: Namespace, ServiceAccount, the
/// binding, Secret, ConfigMap, PVC, Deployment, Service, CronJob.
pub fn render(settings: &InstallSettings) -> Result<Vec<Value>, InstallError> {
    check_namespace(&settings.namespace)?;
    for (flag, value) in [("image", &settings.image), ("org", &settings.org)] {
        if value.is_empty() {
            return Err(InstallError::Empty(flag));
        }
    }
    let ns = settings.namespace.as_str();
    Ok(vec![
        namespace(settings),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns}}),
        rbac(settings),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": SECRET, "namespace": ns},
               "data": {"agent-install.crt": base64_of(&settings.cert)}}),
        config_map(settings),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": PVC, "namespace": ns},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": settings.pvc_size}}}}),
        deployment(settings),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": SERVICE, "namespace": ns},
               "spec": {"selector": {"app": DEPLOYMENT},
                        "ports": [{"name": "agent-api", "port": AGENT_PORT,
                                   "targetPort": AGENT_PORT, "protocol": "TCP"}]}}),
        cron_job(settings),
    ])
}

/// Secret `data` rather than `stringData`: the API server keeps no `stringData`, so an apply
/// of it would differ from what it reads back on every pass.
fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn namespace(settings: &InstallSettings) -> Value {
    let mut metadata = json!({"name": settings.namespace});
    if settings.openshift {
        metadata["annotations"] = json!({
            "openshift.io/sa.scc.uid-range": "1000/1000",
            "openshift.io/sa.scc.supplemental-groups": "1000/1000",
        });
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
}

fn rbac(settings: &InstallSettings) -> Value {
    let ns = settings.namespace.as_str();
    let subject = json!([{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}]);
    match binding(settings.scope, settings.rbac) {
        Binding::ClusterAdmin => json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": cluster_role_binding_name(ns)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
            "subjects": subject,
        }),
        Binding::NamespaceAdmin => json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": NAMESPACE_ROLE_BINDING, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "admin"},
            "subjects": subject,
        }),
    }
}

/// The `horizon` file the agent reads from `/etc/default/horizon`.
fn config_map(settings: &InstallSettings) -> Value {
    let horizon = format!(
        "HZN_EXCHANGE_URL={}\nHZN_FSS_CSSURL={}\nHZN_MGMT_HUB_CERT_PATH={CERT_PATH}\nHZN_AGENT_PORT={AGENT_PORT}\n",
        settings.exchange_url, settings.css_url
    );
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": CONFIG_MAP, "namespace": settings.namespace},
           "data": {"horizon": horizon}})
}

/// The restricted security context of the shipped templates (uid/gid 1000, nothing else).
fn security_context() -> Value {
    json!({"allowPrivilegeEscalation": false, "runAsNonRoot": true,
           "runAsUser": 1000, "runAsGroup": 1000,
           "seccompProfile": {"type": "RuntimeDefault"},
           "capabilities": {"drop": ["ALL"]}})
}

fn deployment(settings: &InstallSettings) -> Value {
    let labels = json!({"app": DEPLOYMENT, "openhorizon.org/component": "agent"});
    let container = json!({
        "name": CONTAINER,
        "image": settings.image,
        "imagePullPolicy": "Always",
        "ports": [{"containerPort": AGENT_PORT}],
        "securityContext": security_context(),
        "envFrom": [{"configMapRef": {"name": CONFIG_MAP}}],
        "env": [
            {"name": "HZN_ORG_ID", "value": settings.org},
            {"name": ENV_NAMESPACE, "value": settings.namespace},
            {"name": ENV_SCOPED, "value": settings.scope.env_value()},
            {"name": "HZN_MGMT_HUB_CERT_PATH", "value": CERT_PATH},
        ],
        "volumeMounts": [
            {"mountPath": "/etc/default/horizon", "subPath": "horizon", "name": "agent-etc-vol"},
            {"mountPath": "/etc/default/cert", "name": "agent-cert-volume"},
            {"mountPath": "/var/horizon", "subPath": "horizon", "name": "agent-pvc-storage"},
            {"mountPath": "/etc/horizon/policy.d", "subPath": "policy", "name": "agent-pvc-storage"},
        ],
    });
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": settings.namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "volumes": [
                        {"name": "agent-etc-vol", "configMap": {"name": CONFIG_MAP}},
                        // Optional: the bundled payload leaves the Secret to the administrator.
                        {"name": "agent-cert-volume",
                         "secret": {"secretName": SECRET, "optional": true}},
                        {"name": "agent-pvc-storage",
                         "persistentVolumeClaim": {"claimName": PVC}},
                    ],
                    "containers": [container],
                },
            },
        },
    })
}

/// The auto-upgrade job the node management worker's status files drive (spec B.2).
fn cron_job(settings: &InstallSettings) -> Value {
    let container = json!({
        "name": "agent-auto-upgrade",
        "image": settings.image,
        "imagePullPolicy": "Always",
        "command": ["/bin/sh", "-c", "/usr/local/bin/auto-upgrade-cronjob.sh"],
        "securityContext": security_context(),
        "volumeMounts": [{"mountPath": "/var/horizon", "name": "agent-pvc-storage",
                          "subPath": "horizon"}],
        "env": [
            {"name": "CRONJOB_POD_NAME",
             "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": ENV_NAMESPACE, "value": settings.namespace},
        ],
    });
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": CRON_JOB, "namespace": settings.namespace},
        "spec": {
            "schedule": "*/1 * * * *",
            "concurrencyPolicy": "Forbid",
            "failedJobsHistoryLimit": 0,
            "successfulJobsHistoryLimit": 0,
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "serviceAccountName": SERVICE_ACCOUNT,
                "volumes": [{"name": "agent-pvc-storage",
                             "persistentVolumeClaim": {"claimName": PVC}}],
                "containers": [container],
            }}}},
        },
    })
}

/// An agent Deployment found on the cluster: its namespace and its `HZN_NAMESPACE_SCOPED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingAgent {
    pub namespace: String,
    /// The variable's value; absent or anything but `true` is a cluster-scoped agent.
    pub scoped_env: Option<String>,
}

impl ExistingAgent {
    pub fn scope(&self) -> Scope {
        Scope::from_scoped(self.scoped_env.as_deref() == Some("true"))
    }
}

/// Why the install script refuses, in its words (anax main 2f3fa5a `agent-install.sh`:
/// `check_agent_deployment_exist`, `check_cluster_agent_scope`), then what `cvo` found and the
/// way out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoexistenceError {
    #[error(
        "Current agent scope cannot be updated, please run agent-uninstall.sh and re-run agent-install.sh (the agent in namespace {namespace} is {existing}, {wanted} was requested: uninstall it first, or {fix})"
    )]
    ScopeChange {
        namespace: String,
        existing: &'static str,
        wanted: &'static str,
        fix: &'static str,
    },
    #[error(
        "A cluster scoped agent detected in {existing}. A cluster scoped agent cannot be installed to the same cluster that already has a cluster scoped agent (so not into namespace {namespace}: install this one with --namespace-scoped)"
    )]
    SecondClusterScoped { existing: String, namespace: String },
}

/// The coexistence rules: re-installing in a namespace keeps the scope of the agent there; a
/// cluster-scoped agent may not join a cluster-scoped agent in another namespace; a
/// namespace-scoped agent may join anything.
pub fn check_coexistence(
    existing: &[ExistingAgent],
    namespace: &str,
    scope: Scope,
) -> Result<(), CoexistenceError> {
    if let Some(here) = existing.iter().find(|a| a.namespace == namespace) {
        if here.scope() != scope {
            return Err(CoexistenceError::ScopeChange {
                namespace: namespace.to_owned(),
                existing: here.scope().describe(),
                wanted: scope.describe(),
                fix: match here.scope() {
                    Scope::Namespace => "keep --namespace-scoped",
                    Scope::Cluster => "leave out --namespace-scoped",
                },
            });
        }
        return Ok(());
    }
    if scope == Scope::Cluster
        && let Some(other) = existing.iter().find(|a| a.scope() == Scope::Cluster)
    {
        return Err(CoexistenceError::SecondClusterScoped {
            existing: other.namespace.clone(),
            namespace: namespace.to_owned(),
        });
    }
    Ok(())
}

/// The capability the bundled payload ships the agent under.
pub const CAPABILITY: &str = "EdgeAgent";

/// One file of the payload's agent component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadFile {
    pub name: String,
    pub text: String,
}

/// The settings the bundled payload renders: the script's default, a cluster-scoped agent in
/// `openhorizon-agent`, on OpenShift, with the image the payload's `image-references` pins.
pub fn payload_settings(image: &str) -> InstallSettings {
    InstallSettings {
        image: image.to_owned(),
        openshift: true,
        ..InstallSettings::new(
            DEFAULT_AGENT_NAMESPACE,
            Scope::Cluster,
            Rbac::LeastPrivilege,
        )
    }
}

/// What an install has that the payload leaves out: the Secret (the hub certificate is the
/// administrator's, and a CVO that could write Secrets would hold every namespace's: its RBAC
/// is a ClusterRole), and what runs the agent, which the edge agent's operator
/// (`crate::components::edge_operator`) creates once the hub settings are there.
pub const NOT_IN_PAYLOAD: [&str; 3] = ["Secret", "Deployment", "CronJob"];

/// The payload files of `settings`: one file per object, `0000_50_openhorizon-agent_NN_KIND.yaml`,
/// each document under [`CAPABILITY`] and the profiles that run a CVO, without the kinds of
/// [`NOT_IN_PAYLOAD`]. The ConfigMap is `create-only`, so the hub settings an administrator sets
/// there survive every pass, and its `horizon` file has an empty `HZN_ORG_ID` line beside the
/// hub URLs: the organization is the administrator's too.
pub fn payload_files(settings: &InstallSettings) -> Result<Vec<PayloadFile>, InstallError> {
    let header = "# The Open Horizon edge cluster agent (src/components/edge/agent_install.rs), shipped under\n# the EdgeAgent capability this payload declares. Generated: `cvo edge agent-install\n# --write-payload DIR` writes these files, and tests/bundled.rs checks they match.\n";
    let mut files = Vec::new();
    let documents = render(settings)?
        .into_iter()
        .filter(|d| !NOT_IN_PAYLOAD.iter().any(|k| d["kind"] == *k));
    for (index, mut document) in documents.enumerate() {
        let kind = document["kind"].as_str().unwrap_or_default().to_lowercase();
        let create_only = kind == "configmap";
        if create_only {
            let horizon = document["data"]["horizon"].as_str().unwrap_or_default();
            document["data"]["horizon"] = json!(format!("HZN_ORG_ID=\n{horizon}"));
        }
        let annotations = &mut document["metadata"]["annotations"];
        if annotations.is_null() {
            *annotations = json!({});
        }
        if create_only {
            annotations["release.openshift.io/create-only"] = json!("true");
        }
        for (key, value) in [
            ("capability.openshift.io/name", CAPABILITY),
            (
                "include.release.openshift.io/self-managed-high-availability",
                "true",
            ),
            ("include.release.openshift.io/single-node-developer", "true"),
        ] {
            annotations[key] = json!(value);
        }
        let name = format!("0000_50_openhorizon-agent_{index:02}_{kind}.yaml");
        let yaml = serde_saphyr::to_string(&document)
            .map_err(|e| InstallError::Yaml(name.clone(), e.to_string()))?;
        files.push(PayloadFile {
            name,
            text: format!("{header}{yaml}"),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(documents: &[Value]) -> Vec<&str> {
        documents
            .iter()
            .map(|d| d["kind"].as_str().unwrap_or_default())
            .collect()
    }

    fn env(documents: &[Value], name: &str) -> Option<String> {
        let deployment = documents.iter().find(|d| d["kind"] == "Deployment")?;
        let env = deployment["spec"]["template"]["spec"]["containers"][0]["env"].as_array()?;
        env.iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_str().map(str::to_owned))
    }

    #[test]
    fn the_objects_of_the_install_script() {
        let settings = InstallSettings::new("team-a", Scope::Namespace, Rbac::LeastPrivilege);
        let documents = render(&settings).unwrap();
        assert_eq!(
            kinds(&documents),
            [
                "Namespace",
                "ServiceAccount",
                "RoleBinding",
                "Secret",
                "ConfigMap",
                "PersistentVolumeClaim",
                "Deployment",
                "Service",
                "CronJob"
            ]
        );
        for d in &documents[1..] {
            assert_eq!(d["metadata"]["namespace"], "team-a", "{d}");
        }
        assert_eq!(env(&documents, ENV_NAMESPACE).as_deref(), Some("team-a"));
        assert_eq!(env(&documents, ENV_SCOPED).as_deref(), Some("true"));
        let cluster =
            InstallSettings::new("openhorizon-agent", Scope::Cluster, Rbac::LeastPrivilege);
        assert_eq!(
            env(&render(&cluster).unwrap(), ENV_SCOPED).as_deref(),
            Some("false")
        );
    }

    #[test]
    fn rbac_per_scope_and_mode() {
        let cases = [
            (
                Scope::Namespace,
                Rbac::LeastPrivilege,
                "RoleBinding",
                "admin",
                Some("ns1"),
            ),
            (
                Scope::Cluster,
                Rbac::LeastPrivilege,
                "ClusterRoleBinding",
                "cluster-admin",
                None,
            ),
            (
                Scope::Namespace,
                Rbac::Upstream,
                "ClusterRoleBinding",
                "cluster-admin",
                None,
            ),
            (
                Scope::Cluster,
                Rbac::Upstream,
                "ClusterRoleBinding",
                "cluster-admin",
                None,
            ),
        ];
        for (scope, rbac, kind, role, namespace) in cases {
            let documents = render(&InstallSettings::new("ns1", scope, rbac)).unwrap();
            let binding = &documents[2];
            assert_eq!(binding["kind"], kind, "{scope:?} {rbac:?}");
            assert_eq!(binding["roleRef"]["name"], role);
            assert_eq!(binding["metadata"]["namespace"].as_str(), namespace);
            assert_eq!(binding["subjects"][0]["name"], SERVICE_ACCOUNT);
            assert_eq!(binding["subjects"][0]["namespace"], "ns1");
            if kind == "ClusterRoleBinding" {
                assert_eq!(
                    binding["metadata"]["name"],
                    "ns1-openhorizon-agent-cluster-rule"
                );
            }
        }
    }

    #[test]
    fn openshift_annotates_the_namespace() {
        let mut settings = InstallSettings::new("x", Scope::Cluster, Rbac::Upstream);
        assert!(render(&settings).unwrap()[0]["metadata"]["annotations"].is_null());
        settings.openshift = true;
        assert_eq!(
            render(&settings).unwrap()[0]["metadata"]["annotations"],
            json!({"openshift.io/sa.scc.uid-range": "1000/1000",
                   "openshift.io/sa.scc.supplemental-groups": "1000/1000"})
        );
    }

    #[test]
    fn bad_namespaces_are_refused() {
        for bad in ["", "Team", "a_b", "-a", "a-", &"a".repeat(64)] {
            let settings = InstallSettings::new(bad, Scope::Cluster, Rbac::Upstream);
            assert!(
                matches!(render(&settings), Err(InstallError::Namespace(..))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_documents_are_kubernetes_objects() {
        use k8s_openapi::api::{apps, batch, core, rbac};
        let settings = InstallSettings::new("n", Scope::Namespace, Rbac::LeastPrivilege);
        let d = render(&settings).unwrap();
        serde_json::from_value::<core::v1::Namespace>(d[0].clone()).unwrap();
        serde_json::from_value::<core::v1::ServiceAccount>(d[1].clone()).unwrap();
        serde_json::from_value::<rbac::v1::RoleBinding>(d[2].clone()).unwrap();
        serde_json::from_value::<core::v1::Secret>(d[3].clone()).unwrap();
        serde_json::from_value::<core::v1::ConfigMap>(d[4].clone()).unwrap();
        serde_json::from_value::<core::v1::PersistentVolumeClaim>(d[5].clone()).unwrap();
        serde_json::from_value::<apps::v1::Deployment>(d[6].clone()).unwrap();
        serde_json::from_value::<core::v1::Service>(d[7].clone()).unwrap();
        serde_json::from_value::<batch::v1::CronJob>(d[8].clone()).unwrap();
    }

    fn agent(namespace: &str, env: Option<&str>) -> ExistingAgent {
        ExistingAgent {
            namespace: namespace.to_owned(),
            scoped_env: env.map(str::to_owned),
        }
    }

    #[test]
    fn coexistence() {
        use Scope::{Cluster, Namespace};
        let cluster_a = agent("a", None);
        let cluster_a_false = agent("a", Some("false"));
        let scoped_b = agent("b", Some("true"));
        let odd_c = agent("c", Some("TRUE")); // not `true`: cluster-scoped, as the script reads it
        let cases: Vec<(Vec<ExistingAgent>, &str, Scope, bool)> = vec![
            (vec![], "x", Cluster, true),
            (vec![], "x", Namespace, true),
            (vec![cluster_a.clone()], "x", Cluster, false),
            (vec![cluster_a_false.clone()], "x", Cluster, false),
            (vec![odd_c.clone()], "x", Cluster, false),
            (vec![cluster_a.clone()], "x", Namespace, true),
            (vec![scoped_b.clone()], "x", Cluster, true),
            (
                vec![scoped_b.clone(), agent("d", Some("true"))],
                "x",
                Namespace,
                true,
            ),
            // Reinstall: same scope only.
            (vec![cluster_a.clone()], "a", Cluster, true),
            (vec![cluster_a.clone()], "a", Namespace, false),
            (vec![scoped_b.clone()], "b", Namespace, true),
            (vec![scoped_b.clone()], "b", Cluster, false),
            // Reinstalling the cluster-scoped one next to namespace-scoped ones.
            (
                vec![cluster_a.clone(), scoped_b.clone()],
                "a",
                Cluster,
                true,
            ),
        ];
        for (existing, namespace, scope, ok) in &cases {
            assert_eq!(
                check_coexistence(existing, namespace, *scope).is_ok(),
                *ok,
                "{existing:?} {namespace} {scope:?}"
            );
        }
        assert_eq!(
            check_coexistence(&[cluster_a], "x", Cluster)
                .unwrap_err()
                .to_string(),
            "A cluster scoped agent detected in a. A cluster scoped agent cannot be installed to the same cluster that already has a cluster scoped agent (so not into namespace x: install this one with --namespace-scoped)"
        );
        assert_eq!(
            check_coexistence(&[scoped_b], "b", Cluster)
                .unwrap_err()
                .to_string(),
            "Current agent scope cannot be updated, please run agent-uninstall.sh and re-run agent-install.sh (the agent in namespace b is namespace-scoped, cluster-scoped was requested: uninstall it first, or keep --namespace-scoped)"
        );
    }

    #[test]
    fn payload_files_carry_the_capability() {
        let files = payload_files(&payload_settings("quay.io/x/anax@sha256:00")).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "0000_50_openhorizon-agent_00_namespace.yaml",
                "0000_50_openhorizon-agent_01_serviceaccount.yaml",
                "0000_50_openhorizon-agent_02_clusterrolebinding.yaml",
                "0000_50_openhorizon-agent_03_configmap.yaml",
                "0000_50_openhorizon-agent_04_persistentvolumeclaim.yaml",
                "0000_50_openhorizon-agent_05_service.yaml",
            ]
        );
        assert!(
            files[3]
                .text
                .contains("release.openshift.io/create-only: \"true\"")
        );
        assert!(
            files[3]
                .text
                .contains("    HZN_ORG_ID=\n    HZN_EXCHANGE_URL=\n")
        );
        assert_eq!(
            files[2].name,
            "0000_50_openhorizon-agent_02_clusterrolebinding.yaml"
        );
        for f in &files {
            assert!(
                f.text.contains("capability.openshift.io/name: EdgeAgent"),
                "{}",
                f.name
            );
        }
    }
}
