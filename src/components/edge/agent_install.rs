//! The edge cluster agent's install (spec B.1, anax `agent-install.sh` and its `k8s/`
//! templates): the objects it creates in the agent namespace, the RBAC a scope gets, and the
//! coexistence rules the script enforces before it installs. Pure: [`render`] turns settings
//! into documents, [`check_coexistence`] decides over the agents a shell found on the cluster.
//!
//! RBAC: the design (seed 000, anax#3733) gives a namespace-scoped agent namespace permissions
//! only; anax did so for a while (a RoleBinding to `admin`) and then reverted to a
//! `cluster-admin` ClusterRoleBinding for both scopes. [`Rbac::LeastPrivilege`] is the design,
//! plus the one cluster-wide read the agent's built-in properties need (anax `cutil/cluster.go`
//! lists the Nodes; refused, the agent publishes an empty namespace); [`Rbac::Upstream`] what
//! ships.
//!
//! The Deployment, PVC, Service and CronJob follow anax main 2f3fa5a's `agent-install/k8s/`
//! templates as `agent-install.sh` fills them; `docs/upstream-differences.md` lists where
//! `cvo` differs and why.

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
/// The agent API port (the `horizon` file's `HZN_AGENT_PORT`; the pod's own, not a Service's).
const AGENT_PORT: u16 = 8510;
/// The agent's ESS (the model management API the services in the cluster call), the one port
/// the pod and the Service `agent-service` expose.
pub const ESS_PORT: u16 = 8443;
pub const ESS_PORT_NAME: &str = "ess-secure";
/// The Service's port name in the template.
pub const ESS_SERVICE_PORT_NAME: &str = "ess-secure-port-name";
/// `DEFAULT_INIT_CONTAINER_IMAGE_PATH` of the install script: the image that chowns the PVC.
pub const DEFAULT_INIT_CONTAINER_IMAGE: &str = "public.ecr.aws/docker/library/alpine:latest";
pub const DEFAULT_IMAGE: &str = "docker.io/openhorizon/amd64_anax_k8s:latest";
/// The label the agent's pods share; the podAffinity keeps them on one node (the RWO PVC).
pub const COMPONENT_LABEL: &str = "openhorizon.org/component";
/// The uid and gid the agent runs as, and the init container gives the PVC to.
const AGENT_UID: i64 = 1000;
/// Storage class prefixes the install script treats as shared file systems: their PVC is
/// `ReadWriteMany`, and on OpenShift they keep the chown init container.
const FILE_STORAGE_CLASSES: [&str; 5] = [
    "csi-cephfs",
    "rook-cephfs",
    "ibmc-file",
    "ibmc-vpc-file",
    "ocs-storagecluster-ceph",
];
/// Those of them for which the script keeps the init container on OpenShift.
const OCP_CHOWN_STORAGE_CLASSES: [&str; 3] =
    ["ibmc-file", "ibmc-vpc-file", "ocs-storagecluster-ceph"];

/// `<ns>-openhorizon-agent-cluster-rule`, the ClusterRoleBinding the script creates.
pub fn cluster_role_binding_name(namespace: &str) -> String {
    format!("{namespace}-openhorizon-agent-cluster-rule")
}

/// `<ns>-openhorizon-agent-node-reader`: the ClusterRole and ClusterRoleBinding that let a
/// least-privilege namespace-scoped agent list the Nodes (and nothing else outside its
/// namespace).
pub fn node_reader_name(namespace: &str) -> String {
    format!("{namespace}-openhorizon-agent-node-reader")
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
    /// ClusterRole `admin`, and ClusterRole/ClusterRoleBinding `<ns>-openhorizon-agent-node-reader`
    /// (`list` on `nodes`).
    NamespaceAdmin,
}

/// The binding a scope gets under an RBAC mode.
pub fn binding(scope: Scope, rbac: Rbac) -> Binding {
    match (scope, rbac) {
        (Scope::Namespace, Rbac::LeastPrivilege) => Binding::NamespaceAdmin,
        _ => Binding::ClusterAdmin,
    }
}

/// Where the agent finds the hub's CA certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubCert {
    /// None (a hub with a publicly signed certificate): as the script without a certificate
    /// file, no Secret, no volume, no `HZN_MGMT_HUB_CERT_PATH`.
    None,
    /// This PEM, rendered into the Secret `openhorizon-agent-secrets`.
    Pem(String),
    /// The Secret exists already (the payload's install: the administrator creates it).
    InSecret,
}

/// What the install takes; the flags of `cvo edge agent-install`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallSettings {
    pub namespace: String,
    pub scope: Scope,
    pub rbac: Rbac,
    /// The agent image (`<arch>_anax_k8s`).
    pub image: String,
    /// The auto-upgrade CronJob's image (`<arch>_auto-upgrade-cronjob_k8s`).
    pub cronjob_image: String,
    /// The image of the init container that gives the PVC to uid 1000.
    pub init_container_image: String,
    /// `HZN_ORG_ID`.
    pub org: String,
    pub exchange_url: String,
    pub css_url: String,
    pub hub_cert: HubCert,
    /// OpenShift: the Namespace gets the SCC uid-range and supplemental-groups annotations,
    /// and the pod no chown init container (the SCC gives the volume its group).
    pub openshift: bool,
    pub pvc_size: String,
    /// The PVC's `storageClassName`; none: the cluster's default class.
    pub storage_class: Option<String>,
    /// A docker-registry Secret in the agent namespace the pods pull their images with (the
    /// script's `registry-creds`, for a private remote registry).
    pub image_pull_secret: Option<String>,
}

impl InstallSettings {
    /// The script's defaults in `namespace`.
    pub fn new(namespace: &str, scope: Scope, rbac: Rbac) -> InstallSettings {
        InstallSettings {
            namespace: namespace.to_owned(),
            scope,
            rbac,
            image: DEFAULT_IMAGE.to_owned(),
            cronjob_image: cronjob_image_for(DEFAULT_IMAGE).unwrap_or_default(),
            init_container_image: DEFAULT_INIT_CONTAINER_IMAGE.to_owned(),
            org: "myorg".to_owned(),
            exchange_url: String::new(),
            css_url: String::new(),
            hub_cert: HubCert::None,
            openshift: false,
            pvc_size: "10Gi".to_owned(),
            storage_class: None,
            image_pull_secret: None,
        }
    }
}

/// The auto-upgrade CronJob's image for an agent image, as the install script derives it
/// (`${IMAGE%%_*}_auto-upgrade-cronjob_k8s`, same tag): `quay.io/o/arm64_anax_k8s:2.31.0` →
/// `quay.io/o/arm64_auto-upgrade-cronjob_k8s:2.31.0`. None when the image's name is not
/// `<arch>_anax_k8s` or the image is pinned by digest (a digest names one image only).
pub fn cronjob_image_for(image: &str) -> Option<String> {
    let (path, name) = image.rsplit_once('/').unwrap_or(("", image));
    if name.contains('@') {
        return None;
    }
    let (repository, tag) = match name.split_once(':') {
        Some((repository, tag)) => (repository, Some(tag)),
        None => (name, None),
    };
    let arch = repository.strip_suffix("_anax_k8s")?;
    if arch.is_empty() || arch.contains('_') {
        return None;
    }
    let prefix = match path {
        "" => String::new(),
        path => format!("{path}/"),
    };
    Some(match tag {
        Some(tag) => format!("{prefix}{arch}_auto-upgrade-cronjob_k8s:{tag}"),
        None => format!("{prefix}{arch}_auto-upgrade-cronjob_k8s"),
    })
}

/// `AGENT_CLUSTER_IMAGE_REGISTRY_HOST`: where the agent's images live, the image's path before
/// its `/<arch>_anax_k8s` (the script's `REMOTE_IMAGE_REGISTRY_PATH`); the agent pulls its
/// upgrades from there.
pub fn image_registry_host(image: &str) -> &str {
    image.rsplit_once('/').map_or("", |(path, _)| path)
}

/// Whether the pod gets the root init container that chowns the PVC to 1000:1000: always off
/// OpenShift (k3s, microk8s and most provisioners hand out root-owned volumes), and on
/// OpenShift only for the shared file system classes the script names (elsewhere the SCC's
/// fsGroup does it, and the container would break the volume's permissions).
pub fn needs_chown_init(openshift: bool, storage_class: Option<&str>) -> bool {
    !openshift
        || storage_class.is_some_and(|class| {
            OCP_CHOWN_STORAGE_CLASSES
                .iter()
                .any(|p| class.starts_with(p))
        })
}

/// The PVC's access mode: `ReadWriteMany` for the shared file system classes, else
/// `ReadWriteOnce` (the script also asks for more than one Ready node, which a renderer cannot
/// see; on one node either mode works).
pub fn pvc_access_mode(storage_class: Option<&str>) -> &'static str {
    match storage_class {
        Some(class) if FILE_STORAGE_CLASSES.iter().any(|p| class.starts_with(p)) => "ReadWriteMany",
        _ => "ReadWriteOnce",
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
    #[error(
        "--image {0}: cannot derive the auto-upgrade CronJob's image from it (the install script replaces `_anax_k8s` in `<arch>_anax_k8s:TAG` with `_auto-upgrade-cronjob_k8s`); give it with --cronjob-image"
    )]
    CronJobImage(String),
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
    for (flag, value) in [
        ("image", &settings.image),
        ("cronjob-image", &settings.cronjob_image),
        ("init-container-image", &settings.init_container_image),
        ("org", &settings.org),
        ("pvc-size", &settings.pvc_size),
    ] {
        if value.is_empty() {
            return Err(InstallError::Empty(flag));
        }
    }
    for (flag, value) in [
        ("storage-class", &settings.storage_class),
        ("image-pull-secret", &settings.image_pull_secret),
    ] {
        if value.as_deref() == Some("") {
            return Err(InstallError::Empty(flag));
        }
    }
    let ns = settings.namespace.as_str();
    let mut documents = vec![
        namespace(settings),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns}}),
    ];
    documents.extend(rbac(settings));
    if let HubCert::Pem(pem) = &settings.hub_cert {
        documents.push(
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": SECRET, "namespace": ns},
               "data": {"agent-install.crt": base64_of(pem)}}),
        );
    }
    let mut pvc_spec = json!({
        "accessModes": [pvc_access_mode(settings.storage_class.as_deref())],
        "resources": {"requests": {"storage": settings.pvc_size}},
    });
    if let Some(class) = &settings.storage_class {
        pvc_spec["storageClassName"] = json!(class);
    }
    documents.extend([
        config_map(settings),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": PVC, "namespace": ns}, "spec": pvc_spec}),
        deployment(settings),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": SERVICE, "namespace": ns, "labels": agent_labels()},
               "spec": {"selector": agent_labels(),
                        "ports": [{"name": ESS_SERVICE_PORT_NAME, "protocol": "TCP",
                                   "port": ESS_PORT, "targetPort": ESS_PORT}]}}),
        cron_job(settings),
    ]);
    Ok(documents)
}

/// The labels of the agent's Deployment, pods and Service.
fn agent_labels() -> Value {
    json!({"app": DEPLOYMENT, COMPONENT_LABEL: "agent"})
}

/// Every agent pod (the agent's, the CronJob's) on the node of the others: the PVC is
/// `ReadWriteOnce` on most classes.
fn pod_affinity() -> Value {
    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [
            {"key": COMPONENT_LABEL, "operator": "In", "values": ["agent"]}]},
        "topologyKey": "kubernetes.io/hostname",
    }]}})
}

/// `imagePullSecrets` when the settings name one.
fn set_pull_secret(pod: &mut Value, settings: &InstallSettings) {
    if let Some(secret) = &settings.image_pull_secret {
        pod["imagePullSecrets"] = json!([{"name": secret}]);
    }
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

fn rbac(settings: &InstallSettings) -> Vec<Value> {
    let ns = settings.namespace.as_str();
    let subject = json!([{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}]);
    match binding(settings.scope, settings.rbac) {
        Binding::ClusterAdmin => vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": cluster_role_binding_name(ns)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
            "subjects": subject,
        })],
        Binding::NamespaceAdmin => vec![
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": NAMESPACE_ROLE_BINDING, "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "admin"},
                "subjects": subject,
            }),
            // anax `cutil.GetClusterCountInfo`: the built-in properties (cpu, memory, arch,
            // and, because a failure zeroes them all, the namespace) come from listing Nodes.
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": node_reader_name(ns)},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": node_reader_name(ns)},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": node_reader_name(ns)},
                "subjects": subject,
            }),
        ],
    }
}

/// The `horizon` file the agent reads from `/etc/default/horizon`.
fn config_map(settings: &InstallSettings) -> Value {
    let cert = match settings.hub_cert {
        HubCert::None => String::new(),
        _ => format!("HZN_MGMT_HUB_CERT_PATH={CERT_PATH}\n"),
    };
    let horizon = format!(
        "HZN_EXCHANGE_URL={}\nHZN_FSS_CSSURL={}\n{cert}HZN_AGENT_PORT={AGENT_PORT}\n",
        settings.exchange_url, settings.css_url
    );
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": CONFIG_MAP, "namespace": settings.namespace},
           "data": {"horizon": horizon}})
}

/// The restricted security context of the shipped templates (uid/gid 1000, nothing else).
fn security_context() -> Value {
    json!({"allowPrivilegeEscalation": false, "runAsNonRoot": true,
           "runAsUser": AGENT_UID, "runAsGroup": AGENT_UID,
           "seccompProfile": {"type": "RuntimeDefault"},
           "capabilities": {"drop": ["ALL"]}})
}

/// The root init container that gives the PVC to the agent's uid (k3s, microk8s and the like
/// hand out root-owned volumes the agent cannot write).
fn chown_init_container(settings: &InstallSettings) -> Value {
    json!({
        "name": "initcontainer",
        "image": settings.init_container_image,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"runAsUser": 0, "capabilities": {"add": ["CHOWN"]}},
        "command": ["sh", "-c", format!("(chown {AGENT_UID}:{AGENT_UID} /mount)")],
        "volumeMounts": [{"mountPath": "/mount", "name": "agent-pvc-storage"}],
    })
}

fn deployment(settings: &InstallSettings) -> Value {
    let labels = agent_labels();
    let with_cert = settings.hub_cert != HubCert::None;
    let mut env = vec![
        json!({"name": "HZN_ORG_ID", "value": settings.org}),
        json!({"name": ENV_NAMESPACE, "value": settings.namespace}),
        json!({"name": ENV_SCOPED, "value": settings.scope.env_value()}),
        json!({"name": "AGENT_CLUSTER_IMAGE_REGISTRY_HOST",
               "value": image_registry_host(&settings.image)}),
    ];
    let mut mounts = vec![json!(
        {"mountPath": "/etc/default/horizon", "subPath": "horizon", "name": "agent-etc-vol"}
    )];
    let mut volumes = vec![json!({"name": "agent-etc-vol", "configMap": {"name": CONFIG_MAP}})];
    if with_cert {
        env.push(json!({"name": "HZN_MGMT_HUB_CERT_PATH", "value": CERT_PATH}));
        mounts.push(json!({"mountPath": "/etc/default/cert", "name": "agent-cert-volume"}));
        volumes.push(json!({"name": "agent-cert-volume", "secret": {"secretName": SECRET}}));
    }
    mounts.push(json!({"mountPath": "/var/horizon", "name": "agent-pvc-storage"}));
    volumes.push(json!({"name": "agent-pvc-storage", "persistentVolumeClaim": {"claimName": PVC}}));
    let container = json!({
        "name": CONTAINER,
        "image": settings.image,
        "imagePullPolicy": "IfNotPresent",
        "volumeMounts": mounts,
        "ports": [{"containerPort": ESS_PORT, "name": ESS_PORT_NAME}],
        "securityContext": security_context(),
        "envFrom": [{"configMapRef": {"name": CONFIG_MAP}}],
        "env": env,
    });
    let mut pod = json!({
        "affinity": pod_affinity(),
        "serviceAccountName": SERVICE_ACCOUNT,
        "volumes": volumes,
        "containers": [container],
    });
    if needs_chown_init(settings.openshift, settings.storage_class.as_deref()) {
        pod["initContainers"] = json!([chown_init_container(settings)]);
    }
    set_pull_secret(&mut pod, settings);
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": settings.namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    })
}

/// The auto-upgrade job the node management worker's status files drive (spec B.2).
fn cron_job(settings: &InstallSettings) -> Value {
    let mut labels = agent_labels();
    labels["type"] = json!(CRON_JOB);
    let container = json!({
        "name": "agent-auto-upgrade",
        "securityContext": security_context(),
        "image": settings.cronjob_image,
        "command": ["/bin/sh", "-c", "/usr/local/bin/auto-upgrade-cronjob.sh"],
        "imagePullPolicy": "IfNotPresent",
        "volumeMounts": [{"mountPath": "/var/horizon", "name": "agent-pvc-storage"}],
        "env": [
            {"name": "CRONJOB_POD_NAME",
             "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": ENV_NAMESPACE, "value": settings.namespace},
        ],
    });
    let mut pod = json!({
        "affinity": pod_affinity(),
        "volumes": [{"name": "agent-pvc-storage", "persistentVolumeClaim": {"claimName": PVC}}],
        "containers": [container],
        "restartPolicy": "Never",
        "serviceAccountName": SERVICE_ACCOUNT,
    });
    set_pull_secret(&mut pod, settings);
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": CRON_JOB, "namespace": settings.namespace, "labels": labels},
        "spec": {
            "schedule": "*/1 * * * *",
            "concurrencyPolicy": "Forbid",
            "failedJobsHistoryLimit": 0,
            "successfulJobsHistoryLimit": 0,
            "startingDeadlineSeconds": 120,
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {
                "metadata": {"labels": labels},
                "spec": pod,
            }}},
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
        hub_cert: HubCert::InSecret,
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

    fn kind<'a>(documents: &'a [Value], kind: &str) -> &'a Value {
        documents
            .iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
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
                "ClusterRole",
                "ClusterRoleBinding",
                "ConfigMap",
                "PersistentVolumeClaim",
                "Deployment",
                "Service",
                "CronJob"
            ]
        );
        for d in documents[1..].iter().filter(|d| {
            !["ClusterRole", "ClusterRoleBinding"].contains(&d["kind"].as_str().unwrap())
        }) {
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

    /// anax main 2f3fa5a `agent-install/k8s/deployment-template.yml`,
    /// `auto-upgrade-cronjob-template.yml` and `persistentClaim-template.yml` as
    /// `agent-install.sh` fills them (off OpenShift, with a certificate), field by field.
    #[test]
    fn the_fields_of_anax_mains_templates() {
        let mut settings = InstallSettings::new("ns1", Scope::Cluster, Rbac::Upstream);
        settings.image = "quay.io/edge/arm64_anax_k8s:2.31.0-1498".into();
        settings.cronjob_image = cronjob_image_for(&settings.image).unwrap();
        settings.hub_cert = HubCert::Pem("PEM".into());
        settings.org = "org1".into();
        let documents = render(&settings).unwrap();
        let affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [
                {"key": "openhorizon.org/component", "operator": "In", "values": ["agent"]}]},
            "topologyKey": "kubernetes.io/hostname"}]}});
        let restricted = json!({"runAsUser": 1000, "runAsGroup": 1000,
            "allowPrivilegeEscalation": false, "runAsNonRoot": true,
            "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": ["ALL"]}});
        let labels = json!({"app": "agent", "openhorizon.org/component": "agent"});

        let deployment = kind(&documents, "Deployment");
        assert_eq!(deployment["metadata"]["labels"], labels);
        assert_eq!(deployment["spec"]["selector"]["matchLabels"], labels);
        assert_eq!(deployment["spec"]["replicas"], 1);
        let pod = &deployment["spec"]["template"];
        assert_eq!(pod["metadata"]["labels"], labels);
        let pod = &pod["spec"];
        assert_eq!(pod["affinity"], affinity);
        assert_eq!(pod["serviceAccountName"], "agent-service-account");
        assert_eq!(
            pod["volumes"],
            json!([
                {"name": "agent-etc-vol", "configMap": {"name": "openhorizon-agent-config"}},
                {"name": "agent-cert-volume", "secret": {"secretName": "openhorizon-agent-secrets"}},
                {"name": "agent-pvc-storage",
                 "persistentVolumeClaim": {"claimName": "openhorizon-agent-pvc"}}
            ])
        );
        assert_eq!(
            pod["initContainers"],
            json!([{"name": "initcontainer",
                "image": "public.ecr.aws/docker/library/alpine:latest",
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {"runAsUser": 0, "capabilities": {"add": ["CHOWN"]}},
                "command": ["sh", "-c", "(chown 1000:1000 /mount)"],
                "volumeMounts": [{"mountPath": "/mount", "name": "agent-pvc-storage"}]}])
        );
        assert!(pod["imagePullSecrets"].is_null());
        let anax = &pod["containers"][0];
        assert_eq!(pod["containers"].as_array().unwrap().len(), 1);
        assert_eq!(anax["name"], "anax");
        assert_eq!(anax["image"], "quay.io/edge/arm64_anax_k8s:2.31.0-1498");
        assert_eq!(anax["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            anax["volumeMounts"],
            json!([
                {"mountPath": "/etc/default/horizon", "name": "agent-etc-vol", "subPath": "horizon"},
                {"mountPath": "/etc/default/cert", "name": "agent-cert-volume"},
                {"mountPath": "/var/horizon", "name": "agent-pvc-storage"}
            ])
        );
        assert_eq!(
            anax["ports"],
            json!([{"containerPort": 8443, "name": "ess-secure"}])
        );
        assert_eq!(anax["securityContext"], restricted);
        assert_eq!(
            anax["envFrom"],
            json!([{"configMapRef": {"name": "openhorizon-agent-config"}}])
        );
        assert_eq!(
            anax["env"],
            json!([
                {"name": "HZN_ORG_ID", "value": "org1"},
                {"name": "AGENT_NAMESPACE", "value": "ns1"},
                {"name": "HZN_NAMESPACE_SCOPED", "value": "false"},
                {"name": "AGENT_CLUSTER_IMAGE_REGISTRY_HOST", "value": "quay.io/edge"},
                {"name": "HZN_MGMT_HUB_CERT_PATH", "value": "/etc/default/cert/agent-install.crt"}
            ])
        );

        let service = kind(&documents, "Service");
        assert_eq!(service["metadata"]["name"], "agent-service");
        assert_eq!(service["metadata"]["labels"], labels);
        assert_eq!(
            service["spec"],
            json!({"selector": labels, "ports": [{"name": "ess-secure-port-name",
                "protocol": "TCP", "port": 8443, "targetPort": 8443}]})
        );

        let pvc = kind(&documents, "PersistentVolumeClaim");
        assert_eq!(pvc["metadata"]["name"], "openhorizon-agent-pvc");
        assert_eq!(pvc["spec"]["accessModes"], json!(["ReadWriteOnce"]));
        assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "10Gi");

        let cron = kind(&documents, "CronJob");
        let cron_labels = json!({"app": "agent", "openhorizon.org/component": "agent",
                                 "type": "auto-upgrade-cronjob"});
        assert_eq!(cron["metadata"]["labels"], cron_labels);
        let spec = &cron["spec"];
        assert_eq!(spec["schedule"], "*/1 * * * *");
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(spec["failedJobsHistoryLimit"], 0);
        assert_eq!(spec["successfulJobsHistoryLimit"], 0);
        assert_eq!(spec["startingDeadlineSeconds"], 120);
        assert_eq!(spec["jobTemplate"]["spec"]["backoffLimit"], 0);
        let template = &spec["jobTemplate"]["spec"]["template"];
        assert_eq!(template["metadata"]["labels"], cron_labels);
        let pod = &template["spec"];
        assert_eq!(pod["affinity"], affinity);
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["serviceAccountName"], "agent-service-account");
        assert!(pod["imagePullSecrets"].is_null());
        let job = &pod["containers"][0];
        assert_eq!(job["name"], "agent-auto-upgrade");
        assert_eq!(
            job["image"],
            "quay.io/edge/arm64_auto-upgrade-cronjob_k8s:2.31.0-1498"
        );
        assert_eq!(job["imagePullPolicy"], "IfNotPresent");
        assert_eq!(job["securityContext"], restricted);
        assert_eq!(
            job["command"],
            json!(["/bin/sh", "-c", "/usr/local/bin/auto-upgrade-cronjob.sh"])
        );
        assert_eq!(
            job["volumeMounts"],
            json!([{"mountPath": "/var/horizon", "name": "agent-pvc-storage"}])
        );
        assert_eq!(
            job["env"],
            json!([
                {"name": "CRONJOB_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "AGENT_NAMESPACE", "value": "ns1"}
            ])
        );
        // The Secret `kubectl create secret generic --from-file=agent-install.crt` makes.
        assert_eq!(
            kind(&documents, "Secret")["data"],
            json!({"agent-install.crt": "UEVN"})
        );
        assert!(
            kind(&documents, "ConfigMap")["data"]["horizon"]
                .as_str()
                .unwrap()
                .contains("HZN_MGMT_HUB_CERT_PATH=/etc/default/cert/agent-install.crt\n")
        );
    }

    /// The script's switches: no certificate file, OpenShift, a storage class, a private
    /// remote registry.
    #[test]
    fn the_template_sections_the_script_cuts() {
        // No certificate: START_CERT_VOL..END_CERT_VOL gone, no Secret, no cert path anywhere.
        let plain = InstallSettings::new("ns1", Scope::Cluster, Rbac::Upstream);
        let documents = render(&plain).unwrap();
        assert!(!kinds(&documents).contains(&"Secret"));
        let text = serde_json::to_string(&documents).unwrap();
        assert!(!text.contains("agent-cert-volume"), "{text}");
        assert!(!text.contains("HZN_MGMT_HUB_CERT_PATH"), "{text}");
        // Off OpenShift the chown init container; on OpenShift not, but for the shared file
        // system classes (START_NOT_FOR_OCP).
        for (openshift, class, init) in [
            (false, None, true),
            (false, Some("local-path"), true),
            (true, None, false),
            (true, Some("gp3-csi"), false),
            (true, Some("ibmc-file-gold"), true),
            (true, Some("ibmc-vpc-file-dp2"), true),
            (true, Some("ocs-storagecluster-cephfs"), true),
            (true, Some("csi-cephfs"), false),
        ] {
            let settings = InstallSettings {
                openshift,
                storage_class: class.map(str::to_owned),
                ..plain.clone()
            };
            let documents = render(&settings).unwrap();
            let pod = &kind(&documents, "Deployment")["spec"]["template"]["spec"];
            assert_eq!(
                !pod["initContainers"].is_null(),
                init,
                "{openshift} {class:?}"
            );
            assert_eq!(needs_chown_init(openshift, class), init);
        }
        // storageClassName and the access mode.
        for (class, mode) in [
            (None, "ReadWriteOnce"),
            (Some("gp2"), "ReadWriteOnce"),
            (Some("rook-cephfs"), "ReadWriteMany"),
            (Some("csi-cephfs-sc"), "ReadWriteMany"),
            (Some("ocs-storagecluster-cephfs"), "ReadWriteMany"),
            (Some("ibmc-vpc-file-dp2"), "ReadWriteMany"),
        ] {
            let settings = InstallSettings {
                storage_class: class.map(str::to_owned),
                ..plain.clone()
            };
            let documents = render(&settings).unwrap();
            let spec = &kind(&documents, "PersistentVolumeClaim")["spec"];
            assert_eq!(spec["storageClassName"].as_str(), class);
            assert_eq!(spec["accessModes"], json!([mode]), "{class:?}");
        }
        // A private registry: imagePullSecrets on both pods (START_REMOTE_ICR).
        let settings = InstallSettings {
            image_pull_secret: Some("registry-creds".into()),
            ..plain.clone()
        };
        let documents = render(&settings).unwrap();
        let pull = json!([{"name": "registry-creds"}]);
        assert_eq!(
            kind(&documents, "Deployment")["spec"]["template"]["spec"]["imagePullSecrets"],
            pull
        );
        assert_eq!(
            kind(&documents, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["imagePullSecrets"],
            pull
        );
        // The payload's install: the administrator's Secret, mounted, not optional.
        let payload = render(&payload_settings("quay.io/x/anax@sha256:00")).unwrap();
        assert!(!kinds(&payload).contains(&"Secret"));
        let pod = &kind(&payload, "Deployment")["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][1],
            json!({"name": "agent-cert-volume", "secret": {"secretName": "openhorizon-agent-secrets"}})
        );
        assert!(pod["initContainers"].is_null());
    }

    #[test]
    fn images_derived_as_the_script_does() {
        for (image, cron, host) in [
            (
                "docker.io/openhorizon/amd64_anax_k8s:latest",
                Some("docker.io/openhorizon/amd64_auto-upgrade-cronjob_k8s:latest"),
                "docker.io/openhorizon",
            ),
            (
                "localhost:32000/openhorizon-agent/arm64_anax_k8s:2.31.0-1498",
                Some(
                    "localhost:32000/openhorizon-agent/arm64_auto-upgrade-cronjob_k8s:2.31.0-1498",
                ),
                "localhost:32000/openhorizon-agent",
            ),
            (
                "quay.io/o/s390x_anax_k8s",
                Some("quay.io/o/s390x_auto-upgrade-cronjob_k8s"),
                "quay.io/o",
            ),
            ("quay.io/x/anax@sha256:00", None, "quay.io/x"),
            ("quay.io/x/arm64_anax_k8s@sha256:00", None, "quay.io/x"),
            ("quay.io/x/agent:1.0", None, "quay.io/x"),
            (
                "amd64_anax_k8s:1",
                Some("amd64_auto-upgrade-cronjob_k8s:1"),
                "",
            ),
        ] {
            assert_eq!(cronjob_image_for(image).as_deref(), cron, "{image}");
            assert_eq!(image_registry_host(image), host, "{image}");
        }
    }

    #[test]
    fn empty_values_are_refused() {
        let plain = InstallSettings::new("ns1", Scope::Cluster, Rbac::Upstream);
        for (settings, flag) in [
            (
                InstallSettings {
                    cronjob_image: String::new(),
                    ..plain.clone()
                },
                "cronjob-image",
            ),
            (
                InstallSettings {
                    storage_class: Some(String::new()),
                    ..plain.clone()
                },
                "storage-class",
            ),
            (
                InstallSettings {
                    org: String::new(),
                    ..plain.clone()
                },
                "org",
            ),
        ] {
            assert_eq!(render(&settings), Err(InstallError::Empty(flag)));
        }
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
                assert_eq!(documents[3]["kind"], "ConfigMap");
            }
        }
        // The least-privilege namespace-scoped agent: `list nodes`, nothing else cluster-wide.
        let documents = render(&InstallSettings::new(
            "ns1",
            Scope::Namespace,
            Rbac::LeastPrivilege,
        ))
        .unwrap();
        assert_eq!(
            documents[3],
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "ns1-openhorizon-agent-node-reader"},
                   "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]})
        );
        assert_eq!(
            documents[4]["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                   "name": "ns1-openhorizon-agent-node-reader"})
        );
        assert_eq!(documents[4]["subjects"], documents[2]["subjects"]);
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
        let mut settings = InstallSettings::new("n", Scope::Namespace, Rbac::LeastPrivilege);
        settings.hub_cert = HubCert::Pem("pem".into());
        settings.image_pull_secret = Some("registry-creds".into());
        settings.storage_class = Some("local-path".into());
        for d in render(&settings).unwrap() {
            let ok = match d["kind"].as_str().unwrap() {
                "Namespace" => serde_json::from_value::<core::v1::Namespace>(d.clone()).is_ok(),
                "ServiceAccount" => {
                    serde_json::from_value::<core::v1::ServiceAccount>(d.clone()).is_ok()
                }
                "RoleBinding" => serde_json::from_value::<rbac::v1::RoleBinding>(d.clone()).is_ok(),
                "ClusterRole" => serde_json::from_value::<rbac::v1::ClusterRole>(d.clone()).is_ok(),
                "ClusterRoleBinding" => {
                    serde_json::from_value::<rbac::v1::ClusterRoleBinding>(d.clone()).is_ok()
                }
                "Secret" => serde_json::from_value::<core::v1::Secret>(d.clone()).is_ok(),
                "ConfigMap" => serde_json::from_value::<core::v1::ConfigMap>(d.clone()).is_ok(),
                "PersistentVolumeClaim" => {
                    serde_json::from_value::<core::v1::PersistentVolumeClaim>(d.clone()).is_ok()
                }
                "Deployment" => serde_json::from_value::<apps::v1::Deployment>(d.clone()).is_ok(),
                "Service" => serde_json::from_value::<core::v1::Service>(d.clone()).is_ok(),
                "CronJob" => serde_json::from_value::<batch::v1::CronJob>(d.clone()).is_ok(),
                other => panic!("unexpected kind {other}"),
            };
            assert!(ok, "{d}");
        }
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
