//! `gen-payload`: writes a large synthetic release payload for benchmarks and scale tests.
//!
//! Usage: `cargo run --release --example gen-payload -- OUTPUT_DIR [--documents N] [--seed S]
//! [--forms]` (defaults: N = 20000, S = 1), or `hack/gen-payload`. `benches/load.rs` includes
//! this file as a module and calls [`run`].
//!
//! `--forms` writes instead the payload `tests/upstream.rs` compares with upstream for that
//! seed: N small documents in varied YAML and JSON forms (`tests/support/forms.rs`), to look at
//! a difference by hand (`cvo explain -o json` beside `hack/upstream/build.sh`'s binary).
//!
//! The output is a payload root like `payloads/4.18.0/`: `manifests/` holds a few
//! CVO-like documents (Go templates: `{{.ReleaseImage}}`, `{{ .ClusterProfile }}`,
//! `{{index .Images "cluster-version-operator"}}`), `release-manifests/` holds exactly N
//! documents spread over files named `0000_<runlevel>_<component>_<nn>_<name>.yaml`, plus
//! `release-metadata` (version 4.18.0) and `image-references` (an ImageStream named 4.18.0
//! with one tag per component image). The mix of kinds, sizes and annotations follows the
//! real OpenShift payload corpus: about 20% CustomResourceDefinitions with openAPI schemas
//! from a few KB to a few hundred KB (the average document is 10-20 KB), RBAC, ConfigMaps,
//! Deployments, Services, ServiceMonitors and so on; about half of the documents name a
//! capability; a few carry feature-set or feature-gate annotations.
//!
//! The output depends only on N and S (a xorshift64* generator; no clock, no environment).
//! This file uses the standard library only.

#[path = "../tests/support/forms.rs"]
mod forms;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs};

const VERSION: &str = "4.18.0";
const DEFAULT_DOCUMENTS: usize = 20_000;
const DEFAULT_SEED: u64 = 1;
const REGISTRY: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev";

/// `writeln!` into a `String`, which cannot fail.
macro_rules! w {
    ($s:expr, $($arg:tt)*) => {{
        let _ = writeln!($s, $($arg)*);
    }};
}

/// xorshift64* seeded through splitmix64, so that every seed (including 0) works.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        let z = splitmix64(seed);
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// The whitespace-separated words of a list constant.
fn list(text: &'static str) -> Vec<&'static str> {
    text.split_whitespace().collect()
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A made-up but stable `sha256:` digest for an image tag (independent of generation order).
fn digest(tag: &str, seed: u64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tag.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut state = h ^ seed.rotate_left(17);
    let mut out = String::with_capacity(64);
    for _ in 0..4 {
        state = splitmix64(state);
        let _ = write!(out, "{state:016x}");
    }
    out
}

fn pullspec(tag: &str, seed: u64) -> String {
    format!("{REGISTRY}@sha256:{}", digest(tag, seed))
}

/// One component per line: name, run level, namespace, capability (`-` for none). The
/// capabilities are real names; about half of the components have one.
const COMPONENTS: &str = "
config-operator 03 openshift-config-operator -
apiserver 00 openshift-kube-apiserver -
cloud-credential-operator 03 openshift-cloud-credential-operator CloudCredential
marketplace 03 openshift-marketplace marketplace
cluster-network-operator 07 openshift-network-operator -
multus 07 openshift-multus -
dns-operator 08 openshift-dns-operator -
service-ca-operator 09 openshift-service-ca-operator -
cluster-machine-approver 09 openshift-cluster-machine-approver MachineAPI
kube-apiserver-operator 20 openshift-kube-apiserver-operator -
etcd-operator 20 openshift-etcd-operator -
kube-controller-manager-operator 25 openshift-kube-controller-manager-operator -
kube-scheduler-operator 25 openshift-kube-scheduler-operator -
cluster-policy-controller 25 openshift-kube-controller-manager -
cloud-controller-manager-operator 26 openshift-cloud-controller-manager-operator CloudControllerManager
openshift-apiserver-operator 30 openshift-apiserver-operator -
machine-api-operator 30 openshift-machine-api MachineAPI
control-plane-machine-set-operator 30 openshift-machine-api MachineAPI
cluster-capi-operator 30 openshift-cluster-api -
cluster-baremetal-operator 31 openshift-machine-api baremetal
cluster-autoscaler-operator 32 openshift-machine-api MachineAPI
kube-storage-version-migrator-operator 40 openshift-kube-storage-version-migrator-operator -
cluster-authentication-operator 50 openshift-authentication-operator -
openshift-controller-manager-operator 50 openshift-controller-manager-operator -
cluster-image-registry-operator 50 openshift-image-registry ImageRegistry
cluster-ingress-operator 50 openshift-ingress-operator Ingress
cluster-storage-operator 50 openshift-cluster-storage-operator Storage
aws-ebs-csi-driver-operator 50 openshift-cluster-csi-drivers Storage
azure-disk-csi-driver-operator 50 openshift-cluster-csi-drivers Storage
gcp-pd-csi-driver-operator 50 openshift-cluster-csi-drivers Storage
vsphere-problem-detector 50 openshift-cluster-storage-operator Storage
csi-snapshot-controller-operator 50 openshift-cluster-storage-operator CSISnapshot
cluster-node-tuning-operator 50 openshift-cluster-node-tuning-operator NodeTuning
cluster-samples-operator 50 openshift-cluster-samples-operator openshift-samples
console-operator 50 openshift-console-operator Console
monitoring-plugin 50 openshift-monitoring Console
networking-console-plugin 50 openshift-network-console Console
insights-operator 50 openshift-insights Insights
olm 50 openshift-operator-lifecycle-manager OperatorLifecycleManager
operator-marketplace 50 openshift-marketplace marketplace
cluster-monitoring-operator 50 openshift-monitoring -
cluster-olm-operator 51 openshift-cluster-olm-operator OperatorLifecycleManagerV1
operator-controller 51 openshift-operator-controller OperatorLifecycleManagerV1
catalogd 51 openshift-catalogd OperatorLifecycleManagerV1
build-controller 52 openshift-build-controller Build
deploymentconfig-controller 52 openshift-deploymentconfig-controller DeploymentConfig
cluster-update-keys 55 openshift-config-managed -
prometheus-operator 70 openshift-monitoring -
kube-state-metrics 70 openshift-monitoring -
node-exporter 70 openshift-monitoring -
openshift-state-metrics 70 openshift-monitoring -
telemeter-client 70 openshift-monitoring Insights
thanos-querier 70 openshift-monitoring -
dns-node-resolver 70 openshift-dns -
network-diagnostics 70 openshift-network-diagnostics -
machine-config-operator 80 openshift-machine-config-operator -
cluster-etcd-backup 85 openshift-etcd -
image-pruner 90 openshift-image-registry ImageRegistry
ingress-canary 90 openshift-ingress-canary Ingress
cluster-csi-drivers-metrics 90 openshift-cluster-csi-drivers Storage
";

const FEATURE_SETS: &[&str] = &[
    "Default",
    "DevPreviewNoUpgrade",
    "OKD",
    "TechPreviewNoUpgrade",
    "CustomNoUpgrade",
];

/// Gates named by `release.openshift.io/feature-gate`; none of them is enabled in the
/// `Default` FeatureGate documents written below.
const GATED: &str = "GatewayAPIWithoutOLM ClusterAPIMachineManagement InsightsConfig
CRIOCredentialProviderConfig MinimumKubeletVersion ManagedBootImages";

const DEFAULT_ENABLED_GATES: &str = "AdminNetworkPolicy AzureWorkloadIdentity BuildCSIVolumes
ConsolePluginContentSecurityPolicy ExternalOIDC KMSv1 MetricsCollectionProfiles
NetworkDiagnosticsConfig NetworkLiveMigration NetworkSegmentation OpenShiftPodSecurityAdmission
PrivateHostedZoneAWS SetEIPForNLBIngressController VSphereDriverConfiguration
ValidatingAdmissionPolicy";

const PREVIEW_GATES: &str = "AutomatedEtcdBackup BootcNodeManagement ClusterMonitoringConfig
DNSNameResolver ImageStreamImportMode MachineConfigNodes NodeDisruptionPolicy OnClusterBuild
PinnedImages SigstoreImageVerification UpgradeStatus VolumeGroupSnapshot";

/// Words for names and descriptions. None of them is a YAML 1.1 boolean or null on its own.
const WORDS: &str = "cluster node pool endpoint policy route certificate secret volume snapshot
gateway listener backend selector template replica status condition observed generation image
registry mirror digest signature trust bundle proxy network subnet address port protocol timeout
interval threshold limit request resource quota priority toleration taint label annotation owner
reference version channel upgrade rollout strategy surge health probe metric scrape alert rule
receiver storage class driver topology zone region provider credential identity token audience
issuer claim mapping group user role binding scope tenant workload partition profile tuning
kernel sysctl hugepage cpu memory device firmware boot machine instance disk encryption key
rotation backup schedule retention compaction quorum member leader lease webhook conversion
admission audit log level format sink buffer controller operator manager config plugin";

const FILLER: &str = "the a is must be when if this field of to for and or set omitted means
specifies which value default platform chooses reasonable subject change over time valid values
are at most characters long used by with in each entry may not empty";

const ENUMS: &str = "Enabled Disabled Managed Unmanaged Removed Always Never IfNotPresent
Automatic Manual Strict Permissive Ignore Fail Retain Recreate RollingUpdate Internal External
Shared Dedicated Normal Debug Trace";

const VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Crd,
    ConfigMap,
    ClusterRole,
    Role,
    RoleBinding,
    ClusterRoleBinding,
    NetworkPolicy,
    Deployment,
    Service,
    Namespace,
    ServiceMonitor,
    ServiceAccount,
    PrometheusRule,
    CredentialsRequest,
    OperatorConfig,
    ClusterOperator,
}

/// Kind mix of the documents after each component's skeleton (percent).
const KIND_WEIGHTS: &[(Kind, usize)] = &[
    (Kind::Crd, 20),
    (Kind::ConfigMap, 12),
    (Kind::ClusterRole, 9),
    (Kind::Role, 8),
    (Kind::RoleBinding, 9),
    (Kind::ClusterRoleBinding, 6),
    (Kind::NetworkPolicy, 6),
    (Kind::Deployment, 5),
    (Kind::Service, 5),
    (Kind::Namespace, 3),
    (Kind::ServiceMonitor, 4),
    (Kind::ServiceAccount, 4),
    (Kind::PrometheusRule, 3),
    (Kind::CredentialsRequest, 4),
    (Kind::OperatorConfig, 2),
];

struct Component {
    name: &'static str,
    run_level: &'static str,
    namespace: &'static str,
    capability: &'static str,
    ibm_cloud_managed: bool,
    single_node: bool,
    hypershift: bool,
    hosted_excluded: bool,
    next_file: usize,
}

/// Per-document annotation choices.
#[derive(Default)]
struct Ann<'a> {
    feature_set: Option<&'a str>,
    /// May get a random feature-gate or delete annotation.
    plain: bool,
    create_only: bool,
    /// A HyperShift-only variant: lacks the self-managed-high-availability profile.
    hypershift_only: bool,
}

struct Gen {
    rng: Rng,
    seed: u64,
    dir: PathBuf,
    comps: Vec<Component>,
    target: usize,
    docs: usize,
    files: usize,
    bytes: u64,
    serial: usize,
    namespaces: HashSet<&'static str>,
    operators: HashSet<String>,
    words: Vec<&'static str>,
    filler: Vec<&'static str>,
    enums: Vec<&'static str>,
    gated: Vec<&'static str>,
}

impl Gen {
    fn remaining(&self) -> usize {
        self.target - self.docs
    }

    fn unique(&mut self, base: &str) -> String {
        self.serial += 1;
        format!("{base}-{}", self.serial)
    }

    fn word(&mut self) -> &'static str {
        self.rng.pick(&self.words)
    }

    fn camel(&mut self, words: usize) -> String {
        let mut s = String::new();
        for i in 0..words {
            let w = self.word();
            if i == 0 {
                s.push_str(w);
            } else {
                let mut cs = w.chars();
                if let Some(c) = cs.next() {
                    s.push(c.to_ascii_uppercase());
                    s.push_str(cs.as_str());
                }
            }
        }
        s
    }

    fn sentence(&mut self) -> String {
        let n = self.rng.range(6, 16);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            let w = if self.rng.chance(0.45) {
                self.word()
            } else {
                self.rng.pick(&self.filler)
            };
            s.push_str(w);
        }
        s.push('.');
        s
    }

    /// `description: |-` with 1-4 sentences wrapped at about 90 columns.
    fn description(&mut self, s: &mut String, ind: usize) {
        let n = self.rng.range(1, 4);
        let mut text = String::new();
        for i in 0..n {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(&self.sentence());
        }
        w!(s, "{:ind$}description: |-", "");
        let mut line = String::new();
        for word in text.split(' ') {
            if !line.is_empty() && line.len() + word.len() > 90 {
                w!(s, "{:w$}{line}", "", w = ind + 2);
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        w!(s, "{:w$}{line}", "", w = ind + 2);
    }

    fn annotations(&mut self, ci: usize, kind: Kind, a: &Ann) -> String {
        let c = &self.comps[ci];
        let (cap, ibm, snd, hyper, hosted) = (
            c.capability,
            c.ibm_cloud_managed,
            c.single_node,
            c.hypershift,
            c.hosted_excluded,
        );
        let mut s = String::new();
        let mut cap = cap.to_string();
        if kind == Kind::CredentialsRequest {
            cap = if cap.is_empty() || cap == "CloudCredential" {
                "CloudCredential".to_string()
            } else {
                format!("{cap}+CloudCredential")
            };
        }
        if !cap.is_empty() {
            w!(s, "    capability.openshift.io/name: \"{cap}\"");
        }
        let hosted_kind = matches!(
            kind,
            Kind::Deployment
                | Kind::Service
                | Kind::ServiceMonitor
                | Kind::PrometheusRule
                | Kind::ConfigMap
        );
        if hosted && hosted_kind {
            w!(
                s,
                "    exclude.release.openshift.io/internal-openshift-hosted: \"true\""
            );
        }
        if a.hypershift_only {
            w!(s, "    include.release.openshift.io/hypershift: \"true\"");
        } else {
            if hyper {
                w!(s, "    include.release.openshift.io/hypershift: \"true\"");
            }
            if ibm {
                w!(
                    s,
                    "    include.release.openshift.io/ibm-cloud-managed: \"true\""
                );
            }
            w!(
                s,
                "    include.release.openshift.io/self-managed-high-availability: \"true\""
            );
            if snd {
                w!(
                    s,
                    "    include.release.openshift.io/single-node-developer: \"true\""
                );
            }
        }
        if a.create_only {
            w!(s, "    release.openshift.io/create-only: \"true\"");
        }
        if let Some(fs) = a.feature_set {
            w!(s, "    release.openshift.io/feature-set: \"{fs}\"");
        } else if a.plain && self.rng.chance(0.006) {
            let gate = self.rng.pick(&self.gated);
            let neg = if self.rng.chance(0.3) { "-" } else { "" };
            w!(s, "    release.openshift.io/feature-gate: \"{neg}{gate}\"");
        }
        if a.plain && self.rng.chance(0.015) {
            w!(s, "    release.openshift.io/delete: \"true\"");
        }
        s
    }

    fn write_file(
        &mut self,
        ci: usize,
        run_level: &str,
        local: &str,
        docs: &[String],
    ) -> std::io::Result<()> {
        let c = &mut self.comps[ci];
        let idx = c.next_file;
        c.next_file += 1;
        let name = format!("0000_{run_level}_{}_{idx:02}_{local}.yaml", c.name);
        let text = docs.join("---\n");
        fs::write(self.dir.join(name), &text)?;
        self.files += 1;
        self.docs += docs.len();
        self.bytes += text.len() as u64;
        Ok(())
    }

    fn head(s: &mut String, api: &str, kind: &str, name: &str, ns: Option<&str>, ann: &str) {
        w!(s, "apiVersion: {api}");
        w!(s, "kind: {kind}");
        w!(s, "metadata:");
        w!(s, "  name: {name}");
        if let Some(ns) = ns {
            w!(s, "  namespace: {ns}");
        }
        w!(s, "  annotations:");
        s.push_str(ann);
    }

    // ---- document builders -------------------------------------------------------------

    fn namespace(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::Namespace, a);
        let mut s = String::new();
        Self::head(&mut s, "v1", "Namespace", name, None, &ann);
        w!(s, "    openshift.io/node-selector: \"\"");
        w!(s, "    workload.openshift.io/allowed: \"management\"");
        w!(s, "  labels:");
        w!(s, "    openshift.io/cluster-monitoring: \"true\"");
        w!(s, "    openshift.io/run-level: \"\"");
        let level = self.rng.pick(&["privileged", "restricted", "baseline"]);
        for m in ["audit", "enforce", "warn"] {
            w!(s, "    pod-security.kubernetes.io/{m}: {level}");
        }
        s
    }

    fn service_account(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::ServiceAccount, a);
        let ns = self.comps[ci].namespace;
        let mut s = String::new();
        Self::head(&mut s, "v1", "ServiceAccount", name, Some(ns), &ann);
        s
    }

    fn rules(&mut self, s: &mut String) {
        for _ in 0..self.rng.range(2, 9) {
            let group = if self.rng.chance(0.3) {
                "\"\"".to_string()
            } else {
                format!("{}.openshift.io", self.word())
            };
            w!(s, "- apiGroups:");
            w!(s, "  - {group}");
            w!(s, "  resources:");
            for _ in 0..self.rng.range(1, 5) {
                let r = self.word();
                w!(s, "  - {r}s");
            }
            w!(s, "  verbs:");
            let n = self.rng.range(1, VERBS.len());
            for v in &VERBS[..n] {
                w!(s, "  - {v}");
            }
        }
    }

    fn role(&mut self, ci: usize, kind: Kind, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, kind, a);
        let mut s = String::new();
        if kind == Kind::ClusterRole {
            Self::head(
                &mut s,
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                name,
                None,
                &ann,
            );
        } else {
            let ns = self.comps[ci].namespace;
            Self::head(
                &mut s,
                "rbac.authorization.k8s.io/v1",
                "Role",
                name,
                Some(ns),
                &ann,
            );
        }
        w!(s, "rules:");
        self.rules(&mut s);
        s
    }

    fn binding(
        &mut self,
        ci: usize,
        kind: Kind,
        name: &str,
        role: &str,
        sa: &str,
        a: &Ann,
    ) -> String {
        let ann = self.annotations(ci, kind, a);
        let ns = self.comps[ci].namespace;
        let mut s = String::new();
        let role_kind = if kind == Kind::ClusterRoleBinding {
            Self::head(
                &mut s,
                "rbac.authorization.k8s.io/v1",
                "ClusterRoleBinding",
                name,
                None,
                &ann,
            );
            "ClusterRole"
        } else {
            Self::head(
                &mut s,
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                name,
                Some(ns),
                &ann,
            );
            if self.rng.chance(0.3) {
                "ClusterRole"
            } else {
                "Role"
            }
        };
        w!(s, "roleRef:");
        w!(s, "  apiGroup: rbac.authorization.k8s.io");
        w!(s, "  kind: {role_kind}");
        w!(s, "  name: {role}");
        w!(s, "subjects:");
        w!(s, "- kind: ServiceAccount");
        w!(s, "  name: {sa}");
        w!(s, "  namespace: {ns}");
        s
    }

    fn network_policy(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::NetworkPolicy, a);
        let ns = self.comps[ci].namespace;
        let app = self.comps[ci].name;
        let mut s = String::new();
        Self::head(
            &mut s,
            "networking.k8s.io/v1",
            "NetworkPolicy",
            name,
            Some(ns),
            &ann,
        );
        w!(s, "spec:");
        if self.rng.chance(0.3) {
            w!(s, "  podSelector: {{}}");
            w!(s, "  policyTypes:");
            w!(s, "  - Ingress");
            w!(s, "  - Egress");
            return s;
        }
        w!(s, "  podSelector:");
        w!(s, "    matchLabels:");
        w!(s, "      app: {app}");
        w!(s, "  ingress:");
        for _ in 0..self.rng.range(1, 3) {
            let port = self.rng.range(8000, 9999);
            w!(s, "  - ports:");
            w!(s, "    - protocol: TCP");
            w!(s, "      port: {port}");
        }
        w!(s, "  egress:");
        w!(s, "  - {{}}");
        w!(s, "  policyTypes:");
        w!(s, "  - Ingress");
        w!(s, "  - Egress");
        s
    }

    fn service(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::Service, a);
        let ns = self.comps[ci].namespace;
        let app = self.comps[ci].name;
        let mut s = String::new();
        Self::head(&mut s, "v1", "Service", name, Some(ns), &ann);
        w!(
            s,
            "    service.beta.openshift.io/serving-cert-secret-name: {name}-tls"
        );
        w!(s, "  labels:");
        w!(s, "    app: {app}");
        w!(s, "spec:");
        w!(s, "  type: ClusterIP");
        w!(s, "  selector:");
        w!(s, "    app: {app}");
        w!(s, "  ports:");
        w!(s, "  - name: https");
        w!(s, "    port: 443");
        let port = self.rng.range(8000, 9999);
        w!(s, "    targetPort: {port}");
        s
    }

    fn service_monitor(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::ServiceMonitor, a);
        let ns = self.comps[ci].namespace;
        let app = self.comps[ci].name;
        let mut s = String::new();
        Self::head(
            &mut s,
            "monitoring.coreos.com/v1",
            "ServiceMonitor",
            name,
            Some(ns),
            &ann,
        );
        w!(s, "  labels:");
        w!(s, "    app: {app}");
        w!(s, "spec:");
        w!(s, "  endpoints:");
        for _ in 0..self.rng.range(1, 3) {
            w!(s, "  - interval: 30s");
            w!(s, "    port: https");
            w!(s, "    scheme: https");
            w!(
                s,
                "    bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"
            );
            w!(s, "    tlsConfig:");
            w!(
                s,
                "      caFile: /etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
            );
            w!(s, "      serverName: {name}.{ns}.svc");
        }
        w!(s, "  jobLabel: app");
        w!(s, "  namespaceSelector:");
        w!(s, "    matchNames:");
        w!(s, "    - {ns}");
        w!(s, "  selector:");
        w!(s, "    matchLabels:");
        w!(s, "      app: {app}");
        s
    }

    fn prometheus_rule(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::PrometheusRule, a);
        let ns = self.comps[ci].namespace;
        let comp = self.comps[ci].name;
        let mut s = String::new();
        Self::head(
            &mut s,
            "monitoring.coreos.com/v1",
            "PrometheusRule",
            name,
            Some(ns),
            &ann,
        );
        w!(s, "spec:");
        w!(s, "  groups:");
        for _ in 0..self.rng.range(1, 3) {
            let g = self.unique(comp);
            w!(s, "  - name: {g}");
            w!(s, "    rules:");
            for _ in 0..self.rng.range(1, 6) {
                let alert = self.camel(3);
                let mut alert_name = String::new();
                let mut cs = alert.chars();
                if let Some(c) = cs.next() {
                    alert_name.push(c.to_ascii_uppercase());
                    alert_name.push_str(cs.as_str());
                }
                let summary = self.sentence();
                let desc = self.sentence();
                let metric = format!("{}_{}_total", self.word(), self.word());
                let sev = self.rng.pick(&["info", "warning", "critical"]);
                let minutes = self.rng.range(1, 60);
                w!(s, "    - alert: {alert_name}");
                w!(s, "      annotations:");
                w!(s, "        summary: \"{summary}\"");
                w!(
                    s,
                    "        description: \"{desc} Check the {{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} logs.\""
                );
                w!(s, "      expr: |");
                w!(
                    s,
                    "        sum by (namespace, pod) (rate({metric}{{job=\"{comp}\"}}[5m])) > 0"
                );
                w!(s, "      for: {minutes}m");
                w!(s, "      labels:");
                w!(s, "        severity: {sev}");
            }
        }
        s
    }

    fn credentials_request(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::CredentialsRequest, a);
        let ns = self.comps[ci].namespace;
        let mut s = String::new();
        Self::head(
            &mut s,
            "cloudcredential.openshift.io/v1",
            "CredentialsRequest",
            name,
            Some("openshift-cloud-credential-operator"),
            &ann,
        );
        w!(s, "spec:");
        w!(s, "  serviceAccountNames:");
        w!(s, "  - {}", self.comps[ci].name);
        w!(s, "  secretRef:");
        w!(s, "    name: {name}-credentials");
        w!(s, "    namespace: {ns}");
        w!(s, "  providerSpec:");
        let provider = self.rng.pick(&[
            "AWSProviderSpec",
            "GCPProviderSpec",
            "AzureProviderSpec",
            "IBMCloudProviderSpec",
        ]);
        w!(s, "    apiVersion: cloudcredential.openshift.io/v1");
        w!(s, "    kind: {provider}");
        if provider == "AWSProviderSpec" {
            w!(s, "    statementEntries:");
            for _ in 0..self.rng.range(1, 4) {
                w!(s, "    - effect: Allow");
                w!(s, "      resource: \"*\"");
                w!(s, "      action:");
                for _ in 0..self.rng.range(2, 10) {
                    let svc = self.rng.pick(&[
                        "ec2",
                        "s3",
                        "elasticloadbalancing",
                        "iam",
                        "kms",
                        "route53",
                    ]);
                    let act = self.camel(2);
                    let mut cs = act.chars();
                    let first = cs.next().map(|c| c.to_ascii_uppercase()).unwrap_or('X');
                    w!(s, "      - {svc}:{first}{}", cs.as_str());
                }
            }
        } else {
            w!(s, "    permissions:");
            for _ in 0..self.rng.range(2, 10) {
                let p = format!("{}.{}.{}", self.word(), self.word(), self.rng.pick(VERBS));
                w!(s, "    - {p}");
            }
        }
        s
    }

    fn operator_config(&mut self, ci: usize, name: &str) -> String {
        let a = Ann {
            create_only: true,
            ..Ann::default()
        };
        let ann = self.annotations(ci, Kind::OperatorConfig, &a);
        let kind = {
            let k = self.camel(2);
            let mut cs = k.chars();
            let first = cs.next().map(|c| c.to_ascii_uppercase()).unwrap_or('X');
            format!("{first}{}", cs.as_str())
        };
        let mut s = String::new();
        Self::head(&mut s, "operator.openshift.io/v1", &kind, name, None, &ann);
        w!(s, "spec:");
        w!(s, "  managementState: Managed");
        w!(s, "  logLevel: Normal");
        w!(s, "  operatorLogLevel: Normal");
        s
    }

    fn cluster_operator(&mut self, ci: usize, name: &str) -> String {
        let ann = self.annotations(ci, Kind::ClusterOperator, &Ann::default());
        let ns = self.comps[ci].namespace;
        let mut s = String::new();
        Self::head(
            &mut s,
            "config.openshift.io/v1",
            "ClusterOperator",
            name,
            None,
            &ann,
        );
        w!(s, "spec: {{}}");
        w!(s, "status:");
        w!(s, "  versions:");
        w!(s, "  - name: operator");
        w!(s, "    version: \"0.0.1-snapshot\"");
        w!(s, "  relatedObjects:");
        w!(s, "  - group: \"\"");
        w!(s, "    name: {ns}");
        w!(s, "    resource: namespaces");
        w!(s, "  - group: operator.openshift.io");
        w!(s, "    name: cluster");
        w!(s, "    resource: {name}s");
        s
    }

    fn deployment(&mut self, ci: usize, name: &str, sa: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::Deployment, a);
        let ns = self.comps[ci].namespace;
        let image = pullspec(self.comps[ci].name, self.seed);
        let mut s = String::new();
        Self::head(&mut s, "apps/v1", "Deployment", name, Some(ns), &ann);
        w!(s, "  labels:");
        w!(s, "    app: {name}");
        w!(s, "spec:");
        w!(s, "  replicas: 1");
        w!(s, "  selector:");
        w!(s, "    matchLabels:");
        w!(s, "      app: {name}");
        w!(s, "  strategy:");
        w!(s, "    type: Recreate");
        w!(s, "  template:");
        w!(s, "    metadata:");
        w!(s, "      annotations:");
        w!(
            s,
            "        target.workload.openshift.io/management: '{{\"effect\": \"PreferredDuringScheduling\"}}'"
        );
        w!(s, "        openshift.io/required-scc: restricted-v2");
        w!(s, "      labels:");
        w!(s, "        app: {name}");
        w!(s, "    spec:");
        w!(s, "      serviceAccountName: {sa}");
        w!(s, "      priorityClassName: system-cluster-critical");
        w!(s, "      securityContext:");
        w!(s, "        runAsNonRoot: true");
        w!(s, "        seccompProfile:");
        w!(s, "          type: RuntimeDefault");
        w!(s, "      containers:");
        for c in 0..self.rng.range(1, 2) {
            let cname = if c == 0 {
                name.to_string()
            } else {
                "kube-rbac-proxy".to_string()
            };
            w!(s, "      - name: {cname}");
            w!(s, "        image: {image}");
            w!(s, "        imagePullPolicy: IfNotPresent");
            w!(s, "        command:");
            w!(s, "        - {}", self.comps[ci].name);
            w!(s, "        - operator");
            w!(s, "        args:");
            w!(
                s,
                "        - --config=/var/run/configmaps/config/config.yaml"
            );
            w!(s, "        - -v=2");
            w!(s, "        env:");
            w!(s, "        - name: RELEASE_VERSION");
            w!(s, "          value: \"0.0.1-snapshot\"");
            w!(s, "        - name: OPERATOR_IMAGE");
            w!(s, "          value: {image}");
            w!(s, "        - name: POD_NAME");
            w!(s, "          valueFrom:");
            w!(s, "            fieldRef:");
            w!(s, "              fieldPath: metadata.name");
            for _ in 0..self.rng.range(0, 5) {
                let k = format!("{}_{}", self.word(), self.word()).to_ascii_uppercase();
                let v = self.rng.range(1, 600);
                w!(s, "        - name: {k}");
                w!(s, "          value: \"{v}\"");
            }
            w!(s, "        ports:");
            w!(s, "        - containerPort: {}", self.rng.range(8000, 9999));
            w!(s, "          name: metrics");
            w!(s, "        resources:");
            w!(s, "          requests:");
            w!(s, "            cpu: {}m", self.rng.range(5, 100));
            w!(s, "            memory: {}Mi", self.rng.range(20, 300));
            w!(s, "        securityContext:");
            w!(s, "          allowPrivilegeEscalation: false");
            w!(s, "          readOnlyRootFilesystem: true");
            w!(s, "          capabilities:");
            w!(s, "            drop:");
            w!(s, "            - ALL");
            w!(s, "        terminationMessagePolicy: FallbackToLogsOnError");
            w!(s, "        volumeMounts:");
            w!(s, "        - mountPath: /var/run/configmaps/config");
            w!(s, "          name: config");
            w!(s, "        - mountPath: /var/run/secrets/serving-cert");
            w!(s, "          name: serving-cert");
        }
        w!(s, "      nodeSelector:");
        w!(s, "        node-role.kubernetes.io/master: \"\"");
        w!(s, "      tolerations:");
        w!(s, "      - key: node-role.kubernetes.io/master");
        w!(s, "        operator: Exists");
        w!(s, "        effect: NoSchedule");
        w!(s, "      - key: node.kubernetes.io/unreachable");
        w!(s, "        operator: Exists");
        w!(s, "        effect: NoExecute");
        w!(s, "        tolerationSeconds: 120");
        w!(s, "      - key: node.kubernetes.io/not-ready");
        w!(s, "        operator: Exists");
        w!(s, "        effect: NoExecute");
        w!(s, "        tolerationSeconds: 120");
        w!(s, "      volumes:");
        w!(s, "      - name: config");
        w!(s, "        configMap:");
        w!(s, "          name: {name}-config");
        w!(s, "          optional: true");
        w!(s, "      - name: serving-cert");
        w!(s, "        secret:");
        w!(s, "          secretName: {name}-serving-cert");
        w!(s, "          optional: true");
        s
    }

    fn config_map(&mut self, ci: usize, name: &str, a: &Ann) -> String {
        let ann = self.annotations(ci, Kind::ConfigMap, a);
        let ns = self.comps[ci].namespace;
        let mut s = String::new();
        Self::head(&mut s, "v1", "ConfigMap", name, Some(ns), &ann);
        w!(s, "data:");
        if self.rng.chance(0.15) {
            // A Grafana-style dashboard: tens of KB of JSON in a block scalar.
            let target = s.len() + self.rng.range(15_000, 110_000);
            w!(s, "  {name}.json: |-");
            w!(s, "    {{");
            w!(s, "      \"title\": \"{}\",", self.sentence());
            w!(s, "      \"panels\": [");
            let mut id = 0;
            while s.len() < target {
                id += 1;
                let metric = format!("{}_{}_seconds", self.word(), self.word());
                w!(s, "        {{");
                w!(s, "          \"id\": {id},");
                w!(s, "          \"type\": \"timeseries\",");
                w!(s, "          \"title\": \"{}\",", self.sentence());
                w!(
                    s,
                    "          \"gridPos\": {{ \"h\": 8, \"w\": 12, \"x\": {}, \"y\": {} }},",
                    (id % 2) * 12,
                    id * 8
                );
                w!(s, "          \"targets\": [");
                w!(
                    s,
                    "            {{ \"expr\": \"histogram_quantile(0.99, sum by (le, instance) (rate({metric}_bucket{{namespace=\\\"{ns}\\\"}}[5m])))\", \"legendFormat\": \"{{{{instance}}}}\" }}"
                );
                w!(s, "          ]");
                w!(s, "        }},");
            }
            w!(
                s,
                "        {{ \"id\": 0, \"type\": \"row\", \"title\": \"end\" }}"
            );
            w!(s, "      ]");
            w!(s, "    }}");
        } else {
            w!(s, "  config.yaml: |");
            w!(s, "    apiVersion: operator.openshift.io/v1alpha1");
            w!(s, "    kind: GenericOperatorConfig");
            for _ in 0..self.rng.range(2, 25) {
                let k = self.camel(2);
                let v = self.rng.range(1, 1000);
                w!(s, "    {k}: {v}");
            }
        }
        s
    }

    // ---- CustomResourceDefinitions -----------------------------------------------------

    /// Emits object properties at indent `ind` until `s` reaches `limit` bytes (top level) or
    /// a handful of fields were written (nested levels).
    fn props(&mut self, s: &mut String, ind: usize, depth: usize, limit: usize) {
        let mut seen = HashSet::new();
        let fields = if depth == 0 {
            usize::MAX
        } else {
            self.rng.range(2, 7)
        };
        let mut n = 0;
        while n < fields && (depth > 0 || s.len() < limit) {
            n += 1;
            let words = self.rng.range(1, 3);
            let mut name = self.camel(words);
            while !seen.insert(name.clone()) {
                name.push('X');
            }
            w!(s, "{:ind$}{name}:", "");
            let i2 = ind + 2;
            self.description(s, i2);
            let r = self.rng.unit();
            let room = s.len() < limit;
            if depth < 4 && room && r < 0.22 {
                w!(s, "{:i2$}type: object", "");
                w!(s, "{:i2$}properties:", "");
                self.props(s, i2 + 2, depth + 1, limit);
                if self.rng.chance(0.3) {
                    let other = self.camel(1);
                    w!(s, "{:i2$}x-kubernetes-validations:", "");
                    w!(s, "{:i2$}- message: {}", "", self.sentence());
                    w!(
                        s,
                        "{:i2$}  rule: 'has(self.{other}) || !has(oldSelf.{other})'",
                        ""
                    );
                }
            } else if depth < 4 && room && r < 0.32 {
                w!(s, "{:i2$}type: array", "");
                w!(s, "{:i2$}maxItems: {}", "", self.rng.range(8, 128));
                w!(s, "{:i2$}items:", "");
                w!(s, "{:w$}type: object", "", w = i2 + 2);
                w!(s, "{:w$}properties:", "", w = i2 + 2);
                self.props(s, i2 + 4, depth + 1, limit);
                w!(s, "{:i2$}x-kubernetes-list-type: atomic", "");
            } else if r < 0.42 {
                w!(s, "{:i2$}type: array", "");
                w!(s, "{:i2$}items:", "");
                w!(s, "{:w$}type: string", "", w = i2 + 2);
                w!(s, "{:i2$}x-kubernetes-list-type: set", "");
            } else if r < 0.57 {
                w!(s, "{:i2$}type: string", "");
                w!(s, "{:i2$}enum:", "");
                let k = self.rng.range(2, 5);
                let start = self.rng.below(self.enums.len());
                for j in 0..k {
                    w!(
                        s,
                        "{:i2$}- {}",
                        "",
                        self.enums[(start + j) % self.enums.len()]
                    );
                }
            } else if r < 0.77 {
                w!(s, "{:i2$}type: string", "");
                w!(s, "{:i2$}maxLength: {}", "", self.rng.range(16, 1024));
                if self.rng.chance(0.4) {
                    w!(s, "{:i2$}minLength: 1", "");
                    w!(s, "{:i2$}pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'", "");
                }
            } else if r < 0.9 {
                w!(s, "{:i2$}type: integer", "");
                w!(s, "{:i2$}format: int32", "");
                w!(s, "{:i2$}minimum: 0", "");
                w!(s, "{:i2$}maximum: {}", "", self.rng.range(10, 65535));
            } else {
                w!(s, "{:i2$}type: boolean", "");
            }
        }
    }

    /// The `spec.versions` list of a CRD, with a schema of about `size` bytes.
    fn crd_versions(&mut self, size: usize) -> String {
        let mut s = String::new();
        w!(s, "  versions:");
        w!(s, "  - name: v1");
        w!(s, "    served: true");
        w!(s, "    storage: true");
        w!(s, "    subresources:");
        w!(s, "      status: {{}}");
        w!(s, "    schema:");
        w!(s, "      openAPIV3Schema:");
        self.description(&mut s, 8);
        w!(s, "        type: object");
        w!(s, "        required:");
        w!(s, "        - spec");
        w!(s, "        properties:");
        w!(s, "          apiVersion:");
        w!(
            s,
            "            description: APIVersion defines the versioned schema of this representation of an object."
        );
        w!(s, "            type: string");
        w!(s, "          kind:");
        w!(
            s,
            "            description: Kind is a string value representing the REST resource this object represents."
        );
        w!(s, "            type: string");
        w!(s, "          metadata:");
        w!(s, "            type: object");
        w!(s, "          spec:");
        self.description(&mut s, 12);
        w!(s, "            type: object");
        w!(s, "            properties:");
        let limit = size.saturating_sub(1_500);
        self.props(&mut s, 14, 0, limit);
        w!(s, "          status:");
        w!(
            s,
            "            description: status holds observed values from the cluster. They may not be overridden."
        );
        w!(s, "            type: object");
        w!(s, "            properties:");
        w!(s, "              conditions:");
        w!(
            s,
            "                description: conditions represent the observations of the current state."
        );
        w!(s, "                type: array");
        w!(s, "                items:");
        w!(s, "                  type: object");
        w!(s, "                  required:");
        w!(s, "                  - lastTransitionTime");
        w!(s, "                  - status");
        w!(s, "                  - type");
        w!(s, "                  properties:");
        w!(s, "                    lastTransitionTime:");
        w!(s, "                      type: string");
        w!(s, "                      format: date-time");
        w!(s, "                    message:");
        w!(s, "                      type: string");
        w!(s, "                      maxLength: 32768");
        w!(s, "                    reason:");
        w!(s, "                      type: string");
        w!(s, "                      maxLength: 1024");
        w!(s, "                    status:");
        w!(s, "                      type: string");
        w!(s, "                      enum:");
        w!(s, "                      - \"True\"");
        w!(s, "                      - \"False\"");
        w!(s, "                      - Unknown");
        w!(s, "                    type:");
        w!(s, "                      type: string");
        w!(s, "                      maxLength: 316");
        w!(s, "                x-kubernetes-list-map-keys:");
        w!(s, "                - type");
        w!(s, "                x-kubernetes-list-type: map");
        s
    }

    /// One CRD file, or (about 12% of the time) a family of per-feature-set variant files.
    fn crd_files(&mut self, ci: usize, run_level: &str) -> std::io::Result<()> {
        let singular = self.camel(2).to_ascii_lowercase();
        let plural = self.unique(&singular).replace('-', "");
        let plural = format!("{plural}s");
        let kind = {
            let mut cs = singular.chars();
            let first = cs.next().map(|c| c.to_ascii_uppercase()).unwrap_or('X');
            format!("{first}{}", cs.as_str())
        };
        let group = format!("{}.openshift.io", self.word());
        let scope = if self.rng.chance(0.6) {
            "Cluster"
        } else {
            "Namespaced"
        };
        // Log-uniform between 3 KB and about 270 KB: median ~28 KB, mean ~60 KB.
        let size = (3_000.0 * 2f64.powf(self.rng.unit() * 6.5)) as usize;
        let versions = self.crd_versions(size);
        let variants: Vec<Option<&str>> = if self.rng.chance(0.12) {
            let n = self.remaining().min(FEATURE_SETS.len());
            FEATURE_SETS[..n].iter().map(|f| Some(*f)).collect()
        } else {
            vec![None]
        };
        for fs in variants {
            let a = Ann {
                feature_set: fs,
                ..Ann::default()
            };
            let ann = self.annotations(ci, Kind::Crd, &a);
            let mut s = String::new();
            Self::head(
                &mut s,
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                &format!("{plural}.{group}"),
                None,
                &ann,
            );
            w!(
                s,
                "    api-approved.openshift.io: https://github.com/openshift/api/pull/{}",
                self.rng.range(100, 2500)
            );
            w!(s, "spec:");
            w!(s, "  group: {group}");
            w!(s, "  names:");
            w!(s, "    kind: {kind}");
            w!(s, "    listKind: {kind}List");
            w!(s, "    plural: {plural}");
            w!(s, "    singular: {singular}");
            w!(s, "  scope: {scope}");
            s.push_str(&versions);
            let local = match fs {
                Some(f) => format!("{plural}-{f}.crd"),
                None => format!("{plural}.crd"),
            };
            self.write_file(ci, run_level, &local, &[s])?;
        }
        Ok(())
    }

    // ---- files -------------------------------------------------------------------------

    /// The first files of a component: namespace, service account, RBAC, operator
    /// Deployment and ClusterOperator (each only while documents remain).
    fn skeleton(&mut self, ci: usize) -> std::io::Result<()> {
        let rl = self.comps[ci].run_level;
        let comp = self.comps[ci].name;
        let ns = self.comps[ci].namespace;
        let plain = Ann::default();
        if ci == 0 && self.remaining() >= 4 {
            self.feature_gates(ci)?;
        }
        if self.remaining() > 0 && self.namespaces.insert(ns) {
            let d = self.namespace(ci, ns, &plain);
            self.write_file(ci, rl, "namespace", &[d])?;
        }
        if self.remaining() > 0 {
            let d = self.service_account(ci, comp, &plain);
            self.write_file(ci, rl, "serviceaccount", &[d])?;
        }
        if self.remaining() > 0 {
            let role = self.role(ci, Kind::ClusterRole, comp, &plain);
            let mut docs = vec![role];
            if self.remaining() > 1 {
                let b = self.binding(
                    ci,
                    Kind::ClusterRoleBinding,
                    &format!("system:openshift:operator:{comp}"),
                    comp,
                    comp,
                    &plain,
                );
                docs.push(b);
            }
            self.write_file(ci, rl, "rbac", &docs)?;
        }
        if self.remaining() > 0 {
            let d = self.deployment(ci, comp, comp, &plain);
            self.write_file(ci, rl, "deployment", &[d])?;
        }
        let co = comp.strip_suffix("-operator").unwrap_or(comp).to_string();
        if self.remaining() > 0 && self.operators.insert(co.clone()) {
            let d = self.cluster_operator(ci, &co);
            self.write_file(ci, rl, "clusteroperator", &[d])?;
        }
        Ok(())
    }

    /// FeatureGate documents as the config operator ships them: JSON, applied by the
    /// config operator only (`false-except-for-the-config-operator`).
    fn feature_gates(&mut self, ci: usize) -> std::io::Result<()> {
        for fs in [
            "Default",
            "DevPreviewNoUpgrade",
            "OKD",
            "TechPreviewNoUpgrade",
        ] {
            let preview = fs != "Default" && fs != "OKD";
            let mut enabled = list(DEFAULT_ENABLED_GATES);
            let mut disabled = list(GATED);
            if preview {
                enabled.extend(list(PREVIEW_GATES));
            } else {
                disabled.extend(list(PREVIEW_GATES));
            }
            enabled.sort_unstable();
            disabled.sort_unstable();
            let list = |names: &[&str]| {
                names.iter().map(|n| format!("                    {{\n                        \"name\": \"{n}\"\n                    }}")).collect::<Vec<_>>().join(",\n")
            };
            let mut s = String::new();
            w!(s, "{{");
            w!(s, "    \"apiVersion\": \"config.openshift.io/v1\",");
            w!(s, "    \"kind\": \"FeatureGate\",");
            w!(s, "    \"metadata\": {{");
            w!(s, "        \"annotations\": {{");
            w!(
                s,
                "            \"include.release.openshift.io/self-managed-high-availability\": \"false-except-for-the-config-operator\","
            );
            w!(
                s,
                "            \"release.openshift.io/feature-set\": \"{fs}\""
            );
            w!(s, "        }},");
            w!(s, "        \"name\": \"cluster\"");
            w!(s, "    }},");
            w!(s, "    \"spec\": {{");
            w!(
                s,
                "        \"featureSet\": \"{}\"",
                if fs == "Default" { "" } else { fs }
            );
            w!(s, "    }},");
            w!(s, "    \"status\": {{");
            w!(s, "        \"featureGates\": [");
            w!(s, "            {{");
            w!(s, "                \"disabled\": [");
            w!(s, "{}", list(&disabled));
            w!(s, "                ],");
            w!(s, "                \"enabled\": [");
            w!(s, "{}", list(&enabled));
            w!(s, "                ],");
            w!(s, "                \"version\": \"\"");
            w!(s, "            }}");
            w!(s, "        ]");
            w!(s, "    }}");
            w!(s, "}}");
            self.write_file(ci, "50", &format!("featureGate-SelfManagedHA-{fs}"), &[s])?;
        }
        Ok(())
    }

    fn pick_kind(&mut self) -> Kind {
        let total: usize = KIND_WEIGHTS.iter().map(|(_, w)| w).sum();
        let mut r = self.rng.below(total);
        for &(k, w) in KIND_WEIGHTS {
            if r < w {
                return k;
            }
            r -= w;
        }
        Kind::ConfigMap
    }

    /// One more file for component `ci` (a CRD may produce a family of files).
    fn random_file(&mut self, ci: usize) -> std::io::Result<()> {
        let kind = self.pick_kind();
        let comp = self.comps[ci].name;
        let mut rl = self.comps[ci].run_level;
        let mut a = Ann {
            plain: true,
            ..Ann::default()
        };
        if self.rng.chance(0.02) {
            a.hypershift_only = true;
        }
        let room = self.remaining();
        let mut docs = Vec::new();
        let local: String;
        match kind {
            Kind::Crd => {
                self.crd_files(ci, rl)?;
                return Ok(());
            }
            Kind::ClusterRole | Kind::Role => {
                let name = self.unique(comp);
                docs.push(self.role(ci, kind, &name, &a));
                if room > 1 && self.rng.chance(0.35) {
                    let bk = if kind == Kind::Role {
                        Kind::RoleBinding
                    } else {
                        Kind::ClusterRoleBinding
                    };
                    let b = self.binding(ci, bk, &name, &name, comp, &a);
                    docs.push(b);
                    local = "rbac".to_string();
                } else {
                    local = if kind == Kind::Role {
                        "role"
                    } else {
                        "clusterrole"
                    }
                    .to_string();
                }
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                let name = self.unique(comp);
                docs.push(self.binding(ci, kind, &name, &name, comp, &a));
                local = if kind == Kind::RoleBinding {
                    "rolebinding"
                } else {
                    "clusterrolebinding"
                }
                .to_string();
            }
            Kind::NetworkPolicy => {
                let n = if self.rng.chance(0.3) {
                    self.rng.range(2, 5).min(room)
                } else {
                    1
                };
                for _ in 0..n {
                    let name = self.unique("allow");
                    docs.push(self.network_policy(ci, &name, &a));
                }
                local = "networkpolicy".to_string();
            }
            Kind::Deployment => {
                let name = self.unique(comp);
                docs.push(self.deployment(ci, &name, comp, &a));
                local = "deployment".to_string();
            }
            Kind::Service => {
                let name = self.unique(comp);
                docs.push(self.service(ci, &name, &a));
                local = "service".to_string();
            }
            Kind::Namespace => {
                let name = self.unique(self.comps[ci].namespace);
                docs.push(self.namespace(ci, &name, &a));
                local = "namespace".to_string();
            }
            Kind::ServiceMonitor | Kind::PrometheusRule => {
                if self.rng.chance(0.6) {
                    rl = "90";
                }
                let name = self.unique(comp);
                if kind == Kind::ServiceMonitor {
                    docs.push(self.service_monitor(ci, &name, &a));
                    local = "servicemonitor".to_string();
                } else {
                    docs.push(self.prometheus_rule(ci, &name, &a));
                    local = "prometheusrule".to_string();
                }
            }
            Kind::ServiceAccount => {
                let name = self.unique(comp);
                docs.push(self.service_account(ci, &name, &a));
                local = "serviceaccount".to_string();
            }
            Kind::CredentialsRequest => {
                let name = self.unique(comp);
                docs.push(self.credentials_request(ci, &name, &a));
                local = "credentials-request".to_string();
            }
            Kind::OperatorConfig => {
                let name = self.unique("cluster");
                docs.push(self.operator_config(ci, &name));
                local = "operator.cr".to_string();
            }
            Kind::ConfigMap | Kind::ClusterOperator => {
                let name = self.unique(comp);
                let a = Ann {
                    create_only: self.rng.chance(0.2),
                    ..a
                };
                docs.push(self.config_map(ci, &name, &a));
                local = "configmap".to_string();
            }
        }
        let local = if a.hypershift_only {
            format!("{local}-hypershift")
        } else {
            local
        };
        self.write_file(ci, rl, &local, &docs)
    }
}

fn cvo_manifests(dir: &Path) -> std::io::Result<(usize, usize, u64)> {
    let ann = "    include.release.openshift.io/self-managed-high-availability: \"true\"\n    include.release.openshift.io/single-node-developer: \"true\"\n";
    let files = [
        (
            "0000_00_cluster-version-operator_00_namespace.yaml",
            format!(
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-cluster-version\n  annotations:\n{ann}    openshift.io/node-selector: \"\"\n  labels:\n    openshift.io/run-level: \"\"\n    openshift.io/cluster-monitoring: \"true\"\n"
            ),
        ),
        (
            "0000_00_cluster-version-operator_02_service_account.yaml",
            format!(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: cluster-version-operator\n  namespace: openshift-cluster-version\n  annotations:\n{ann}"
            ),
        ),
        (
            "0000_00_cluster-version-operator_03_roles.yaml",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: cluster-version-operator\n  annotations:\n{ann}roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: cluster-version-operator\n  namespace: openshift-cluster-version\n"
            ),
        ),
        (
            "0000_00_cluster-version-operator_30_deployment.yaml",
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cluster-version-operator\n  namespace: openshift-cluster-version\n  annotations:\n    exclude.release.openshift.io/internal-openshift-hosted: \"true\"\n{ann}spec:\n  selector:\n    matchLabels:\n      k8s-app: cluster-version-operator\n  strategy:\n    type: Recreate\n  template:\n    metadata:\n      labels:\n        k8s-app: cluster-version-operator\n    spec:\n      serviceAccountName: cluster-version-operator\n      containers:\n      - name: cluster-version-operator\n        image: '{{{{.ReleaseImage}}}}'\n        args:\n        - \"start\"\n        - \"--release-image={{{{.ReleaseImage}}}}\"\n        - \"--listen=0.0.0.0:9099\"\n        env:\n        - name: OPERATOR_IMAGE\n          value: '{{{{index .Images \"cluster-version-operator\"}}}}'\n        - name: CLUSTER_PROFILE\n          value: '{{{{ .ClusterProfile }}}}'\n      hostNetwork: true\n      nodeSelector:\n        node-role.kubernetes.io/master: \"\"\n"
            ),
        ),
        (
            "0000_00_cluster-version-operator_40_service.yaml",
            format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: cluster-version-operator\n  namespace: openshift-cluster-version\n  annotations:\n{ann}spec:\n  selector:\n    k8s-app: cluster-version-operator\n  ports:\n  - name: metrics\n    port: 9099\n    targetPort: metrics\n"
            ),
        ),
    ];
    let mut bytes = 0;
    for (name, text) in &files {
        fs::write(dir.join(name), text)?;
        bytes += text.len() as u64;
    }
    Ok((files.len(), files.len(), bytes))
}

fn metadata_files(dir: &Path, tags: &[&str], seed: u64) -> std::io::Result<u64> {
    let meta = format!(
        "{{\"kind\":\"cincinnati-metadata-v0\",\"version\":\"{VERSION}\",\"previous\":[\"4.17.0\",\"4.17.1\"],\"metadata\":{{\"url\":\"https://access.redhat.com/errata/RHSA-2025:0000\",\"io.openshift.upgrades.graph.release.channels\":\"candidate-4.18,fast-4.18,stable-4.18\"}}}}\n"
    );
    let mut s = String::new();
    w!(s, "{{");
    w!(s, "  \"kind\": \"ImageStream\",");
    w!(s, "  \"apiVersion\": \"image.openshift.io/v1\",");
    w!(s, "  \"metadata\": {{");
    w!(s, "    \"name\": \"{VERSION}\",");
    w!(s, "    \"creationTimestamp\": null,");
    w!(s, "    \"annotations\": {{");
    w!(
        s,
        "      \"release.openshift.io/from-image-stream\": \"ocp/4.18-art-latest\""
    );
    w!(s, "    }}");
    w!(s, "  }},");
    w!(s, "  \"spec\": {{");
    w!(s, "    \"lookupPolicy\": {{");
    w!(s, "      \"local\": false");
    w!(s, "    }},");
    w!(s, "    \"tags\": [");
    for (i, tag) in tags.iter().enumerate() {
        let commit = &digest(&format!("commit/{tag}"), seed)[..40];
        w!(s, "      {{");
        w!(s, "        \"name\": \"{tag}\",");
        w!(s, "        \"annotations\": {{");
        w!(
            s,
            "          \"io.openshift.build.commit.id\": \"{commit}\","
        );
        w!(s, "          \"io.openshift.build.commit.ref\": \"\",");
        w!(
            s,
            "          \"io.openshift.build.source-location\": \"https://github.com/openshift/{tag}\""
        );
        w!(s, "        }},");
        w!(s, "        \"from\": {{");
        w!(s, "          \"kind\": \"DockerImage\",");
        w!(s, "          \"name\": \"{}\"", pullspec(tag, seed));
        w!(s, "        }},");
        w!(s, "        \"generation\": null,");
        w!(s, "        \"importPolicy\": {{}},");
        w!(s, "        \"referencePolicy\": {{");
        w!(s, "          \"type\": \"\"");
        w!(s, "        }}");
        w!(s, "      }}{}", if i + 1 < tags.len() { "," } else { "" });
    }
    w!(s, "    ]");
    w!(s, "  }},");
    w!(s, "  \"status\": {{");
    w!(s, "    \"dockerImageRepository\": \"\"");
    w!(s, "  }}");
    w!(s, "}}");
    fs::write(dir.join("release-metadata"), &meta)?;
    fs::write(dir.join("image-references"), &s)?;
    Ok((meta.len() + s.len()) as u64)
}

pub struct Args {
    pub out: PathBuf,
    pub documents: usize,
    pub seed: u64,
    /// The YAML-form payload of `tests/support/forms.rs` instead of the realistic one.
    pub forms: bool,
}

const USAGE: &str = "usage: gen-payload OUTPUT_DIR [--documents N] [--seed S] [--forms]";

fn parse_args() -> Result<Args, String> {
    let mut out = None;
    let mut documents = DEFAULT_DOCUMENTS;
    let mut seed = DEFAULT_SEED;
    let mut forms = false;
    let mut it = env::args().skip(1);
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--forms" => forms = true,
            "--documents" => {
                let v = inline
                    .or_else(|| it.next())
                    .ok_or("--documents needs a value")?;
                documents = v
                    .parse()
                    .map_err(|_| format!("invalid --documents value {v:?}"))?;
            }
            "--seed" => {
                let v = inline.or_else(|| it.next()).ok_or("--seed needs a value")?;
                seed = v
                    .parse()
                    .map_err(|_| format!("invalid --seed value {v:?}"))?;
            }
            f if f.starts_with('-') => return Err(format!("unknown flag {f}")),
            _ if out.is_none() => out = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    let out = out.ok_or("missing OUTPUT_DIR")?;
    Ok(Args {
        out,
        documents,
        seed,
        forms,
    })
}

/// Creates `dir`, refusing to mix output into a non-empty directory.
fn fresh_dir(dir: &Path) -> Result<(), String> {
    if let Ok(mut entries) = fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(format!("{} is not empty; remove it first", dir.display()));
    }
    fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))
}

/// Writes the payload `args` describes; the summary line to print.
pub fn run(args: &Args) -> Result<String, String> {
    let manifests = args.out.join("manifests");
    let release = args.out.join("release-manifests");
    fresh_dir(&manifests)?;
    fresh_dir(&release)?;
    let io = |e: std::io::Error| format!("write {}: {e}", args.out.display());
    if args.forms {
        let payload = forms::forms_payload(args.seed, args.documents);
        payload.write(&args.out).map_err(io)?;
        return Ok(format!(
            "gen-payload: wrote {}: {} files, {} documents in varied YAML/JSON forms (seed {})",
            args.out.display(),
            payload.files.len(),
            payload.documents,
            args.seed,
        ));
    }

    let mut rng = Rng::new(args.seed);
    // About 60 components for a real-sized payload (~1000 documents) or more; fewer for
    // tiny ones, spread over the whole run-level range.
    let table: Vec<Vec<&'static str>> = COMPONENTS
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 4)
        .collect();
    let ncomp = (args.documents / 16).clamp(1, table.len());
    let mut comps = Vec::with_capacity(ncomp);
    for i in 0..ncomp {
        let row = &table[i * table.len() / ncomp];
        comps.push(Component {
            name: row[0],
            run_level: row[1],
            namespace: row[2],
            capability: if row[3] == "-" { "" } else { row[3] },
            ibm_cloud_managed: rng.chance(0.8),
            single_node: rng.chance(0.65),
            hypershift: rng.chance(0.35),
            hosted_excluded: rng.chance(0.25),
            next_file: 0,
        });
    }
    let mut g = Gen {
        rng,
        seed: args.seed,
        dir: release.clone(),
        comps,
        target: args.documents,
        docs: 0,
        files: 0,
        bytes: 0,
        serial: 0,
        namespaces: HashSet::new(),
        operators: HashSet::new(),
        words: list(WORDS),
        filler: list(FILLER),
        enums: list(ENUMS),
        gated: list(GATED),
    };
    for ci in 0..g.comps.len() {
        if g.remaining() == 0 {
            break;
        }
        g.skeleton(ci).map_err(io)?;
    }
    while g.remaining() > 0 {
        let ci = g.rng.below(g.comps.len());
        g.random_file(ci).map_err(io)?;
    }

    let mut tags: Vec<&str> = g.comps.iter().map(|c| c.name).collect();
    tags.push("cluster-version-operator");
    tags.sort_unstable();
    let meta_bytes = metadata_files(&release, &tags, args.seed).map_err(io)?;
    let (cvo_files, cvo_docs, cvo_bytes) = cvo_manifests(&manifests).map_err(io)?;

    Ok(format!(
        "gen-payload: wrote {}: {} files, {} documents ({} in release-manifests/, {} in manifests/), {} bytes (seed {})",
        args.out.display(),
        g.files + cvo_files + 2,
        g.docs + cvo_docs,
        g.docs,
        cvo_docs,
        g.bytes + cvo_bytes + meta_bytes,
        args.seed,
    ))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("gen-payload: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    match run(&args) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen-payload: {e}");
            ExitCode::FAILURE
        }
    }
}
