//! The Agent and InfraEnv admission rules (spec C.4), as assisted-service's
//! `agent_admission_hook.go` and `infraenv_admission_hook.go` judge creates and updates, with
//! their messages. Pure functions: `cvo agent admit` calls them on files, the controller's
//! webhook server calls them on AdmissionReviews (a refusal is answered as upstream's: code
//! 400, reason `BadRequest`, and the message).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::keys::DEFAULT_CPU_ARCHITECTURE;
use super::keys::KIND_ADD_TO_EXISTING_CLUSTER_HOST;
use super::state::HostState;
use super::types::{Agent, ClusterReference, InfraEnv};

/// The refusals' texts, upstream's.
pub mod messages {
    pub const BOTH_INSTALLATION_DISKS: &str =
        "Either InstallationDiskID or InstallationDiskPath can be set, not both.";
    pub const CLUSTER_DEPLOYMENT_IMMUTABLE: &str = "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation.";
    pub const CLUSTER_REF_WITH_OS_IMAGE_VERSION: &str =
        "Either Spec.ClusterRef or Spec.OSImageVersion should be specified (not both).";
    pub const CLUSTER_REF_IMMUTABLE: &str =
        "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.";
    pub const CPU_ARCHITECTURE_IMMUTABLE: &str =
        "Attempted to change Spec.CpuArchitecture which is immutable after InfraEnv creation.";
    pub const OS_IMAGE_VERSION_BEFORE_INSTALL: &str = "spec.OSImageVersion is not valid. It can't be added alongside with a clusterRef when the cluster is not installed yet.";
    /// controller-runtime's decoder on an update without its old object.
    pub const NO_CONTENT: &str = "there is no content to decode";
}

/// An admission request's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub const ALL: &'static [Operation] = &[
        Operation::Create,
        Operation::Update,
        Operation::Delete,
        Operation::Connect,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = String;

    fn from_str(s: &str) -> Result<Operation, String> {
        let valid: Vec<&str> = Operation::ALL.iter().map(|o| o.as_str()).collect();
        (Operation::ALL.iter().copied())
            .find(|o| o.as_str() == s)
            .ok_or_else(|| crate::suggest::unknown_value("operation", s, &valid))
    }
}

/// The verdict: allowed, or refused with the message the user reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Admission {
    pub allowed: bool,
    pub message: String,
}

impl Admission {
    pub fn allowed() -> Admission {
        Admission {
            allowed: true,
            message: String::new(),
        }
    }

    pub fn denied(message: &str) -> Admission {
        Admission {
            allowed: false,
            message: message.to_owned(),
        }
    }
}

/// The Agent webhook. Create and update: not both installation disk fields. Update:
/// `spec.clusterDeploymentName` may not change while the host installs, except a day-2 host's
/// being unset. Delete and connect are allowed. References to other namespaces are allowed
/// (HyperShift's agent provider binds Agents to a ClusterDeployment in another namespace).
pub fn admit_agent(operation: Operation, old: Option<&Agent>, new: &Agent) -> Admission {
    match operation {
        Operation::Create => agent_rules(new).unwrap_or_else(Admission::allowed),
        Operation::Update => {
            let Some(old) = old else {
                return Admission::denied(messages::NO_CONTENT);
            };
            if let Some(refusal) = agent_rules(new) {
                return refusal;
            }
            let (was, is) = (
                &old.spec.cluster_deployment_name,
                &new.spec.cluster_deployment_name,
            );
            let status = new.status.clone().unwrap_or_default();
            if was != is
                && !cluster_ref_change_allowed(is.as_ref(), &status.debug_info.state, &status.kind)
            {
                return Admission::denied(messages::CLUSTER_DEPLOYMENT_IMMUTABLE);
            }
            Admission::allowed()
        }
        Operation::Delete | Operation::Connect => Admission::allowed(),
    }
}

/// The rule creates and updates share.
fn agent_rules(agent: &Agent) -> Option<Admission> {
    let spec = &agent.spec;
    (!spec.installation_disk_id.is_empty() && !spec.installation_disk_path.is_empty())
        .then(|| Admission::denied(messages::BOTH_INSTALLATION_DISKS))
}

/// Upstream's `isClusterRefChangeAllowed`: any change when the host is not installing; while
/// it is, only a day-2 host's reference being unset.
fn cluster_ref_change_allowed(new: Option<&ClusterReference>, state: &str, kind: &str) -> bool {
    let installing = state
        .parse::<HostState>()
        .is_ok_and(HostState::is_installing);
    !installing || (kind == KIND_ADD_TO_EXISTING_CLUSTER_HOST && new.is_none())
}

/// The InfraEnv webhook. Create: not `clusterRef` with `osImageVersion`. Update: `clusterRef`
/// (set or not) and `cpuArchitecture` (empty is `x86_64`) are immutable, and
/// `osImageVersion` may be added beside a `clusterRef` only once that cluster is installed:
/// `cluster_installed` is the referenced ClusterDeployment's `spec.installed` (none: it could
/// not be read, which refuses as upstream does).
pub fn admit_infraenv(
    operation: Operation,
    old: Option<&InfraEnv>,
    new: &InfraEnv,
    cluster_installed: Option<bool>,
) -> Admission {
    match operation {
        Operation::Create => {
            if new.spec.cluster_ref.is_some() && !new.spec.os_image_version.is_empty() {
                return Admission::denied(messages::CLUSTER_REF_WITH_OS_IMAGE_VERSION);
            }
            Admission::allowed()
        }
        Operation::Update => {
            let Some(old) = old else {
                return Admission::denied(messages::NO_CONTENT);
            };
            let (was, is) = (&old.spec, &new.spec);
            if was.cluster_ref != is.cluster_ref {
                return Admission::denied(messages::CLUSTER_REF_IMMUTABLE);
            }
            let arch = |a: &str| match a {
                "" => DEFAULT_CPU_ARCHITECTURE.to_owned(),
                other => other.to_owned(),
            };
            if arch(&was.cpu_architecture) != arch(&is.cpu_architecture) {
                return Admission::denied(messages::CPU_ARCHITECTURE_IMMUTABLE);
            }
            let adds_os_image = was.os_image_version.is_empty() && !is.os_image_version.is_empty();
            if was.cluster_ref.is_some()
                && is.cluster_ref.is_some()
                && adds_os_image
                && cluster_installed != Some(true)
            {
                return Admission::denied(messages::OS_IMAGE_VERSION_BEFORE_INSTALL);
            }
            Admission::allowed()
        }
        Operation::Delete | Operation::Connect => Admission::allowed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::agents::types::{
        AgentSpec, AgentStatus, DebugInfo, IgnitionEndpointTokenReference, InfraEnvSpec,
    };

    fn agent(cd: Option<(&str, &str)>, state: &str, kind: &str) -> Agent {
        let mut a = Agent::new(
            "a1",
            AgentSpec {
                cluster_deployment_name: cd.map(|(ns, n)| ClusterReference::new(ns, n)),
                role: "worker".into(),
                approved: true,
                ..AgentSpec::default()
            },
        );
        a.metadata.namespace = Some("team".into());
        a.status = Some(AgentStatus {
            debug_info: DebugInfo {
                state: state.into(),
                ..DebugInfo::default()
            },
            kind: kind.into(),
            ..AgentStatus::default()
        });
        a
    }

    const DENIED: &str = messages::CLUSTER_DEPLOYMENT_IMMUTABLE;

    /// (old reference, new reference, state, kind, refusal)
    type Row = (
        Option<(&'static str, &'static str)>,
        Option<(&'static str, &'static str)>,
        &'static str,
        &'static str,
        Option<&'static str>,
    );

    #[test]
    fn agent_cluster_reference_changes() {
        let a = Some(("team", "a"));
        let b = Some(("team", "b"));
        let rows: &[Row] = &[
            (None, a, "known-unbound", "Host", None),
            (a, None, "known", "Host", None),
            (a, b, "known", "Host", None),
            (a, b, "installed", "Host", None),
            (a, b, "error", "Host", None),
            (a, a, "installing", "Host", None),
            (a, b, "installing", "Host", Some(DENIED)),
            (a, None, "installing-in-progress", "Host", Some(DENIED)),
            (a, None, "preparing-for-installation", "Host", Some(DENIED)),
            (a, None, "preparing-successful", "Host", Some(DENIED)),
            (a, None, "preparing-failed", "Host", Some(DENIED)),
            (
                a,
                None,
                "installing-pending-user-action",
                "Host",
                Some(DENIED),
            ),
            (None, a, "installing", "Host", Some(DENIED)),
            (a, None, "installing", "AddToExistingClusterHost", None),
            (a, b, "installing", "AddToExistingClusterHost", Some(DENIED)),
            (a, b, "", "", None),
            (a, b, "not-a-state", "Host", None),
        ];
        for (was, is, state, kind, refusal) in rows {
            let got = admit_agent(
                Operation::Update,
                Some(&agent(*was, state, kind)),
                &agent(*is, state, kind),
            );
            let want = match refusal {
                None => Admission::allowed(),
                Some(m) => Admission::denied(m),
            };
            assert_eq!(got, want, "{was:?} -> {is:?} in {state} ({kind})");
        }
    }

    #[test]
    fn agent_disks_namespaces_and_other_operations() {
        let mut both = agent(None, "", "");
        both.spec.installation_disk_id = "/dev/sda".into();
        both.spec.installation_disk_path = "/dev/disk/by-path/x".into();
        for op in [Operation::Create, Operation::Update] {
            assert_eq!(
                admit_agent(op, Some(&agent(None, "", "")), &both),
                Admission::denied(messages::BOTH_INSTALLATION_DISKS),
                "{op}"
            );
        }
        // References to other namespaces are upstream's to allow (HyperShift binds Agents
        // to a ClusterDeployment elsewhere), on create and on update.
        let elsewhere = agent(Some(("clusters-hc1", "hc1")), "known-unbound", "");
        assert!(admit_agent(Operation::Create, None, &elsewhere).allowed);
        let unbound = agent(None, "known-unbound", "");
        assert!(admit_agent(Operation::Update, Some(&unbound), &elsewhere).allowed);
        let mut token = agent(None, "", "");
        token.spec.ignition_endpoint_token_reference = Some(IgnitionEndpointTokenReference {
            namespace: "other".into(),
            name: "t".into(),
        });
        assert!(admit_agent(Operation::Create, None, &token).allowed);
        assert!(admit_agent(Operation::Delete, None, &both).allowed);
        assert!(admit_agent(Operation::Connect, None, &both).allowed);
        assert_eq!(
            admit_agent(Operation::Update, None, &agent(None, "", "")),
            Admission::denied(messages::NO_CONTENT)
        );
    }

    fn infraenv(cluster: Option<(&str, &str)>, arch: &str, os: &str) -> InfraEnv {
        InfraEnv::new(
            "ie",
            InfraEnvSpec {
                cluster_ref: cluster.map(|(ns, n)| ClusterReference::new(ns, n)),
                cpu_architecture: arch.into(),
                os_image_version: os.into(),
                ..InfraEnvSpec::default()
            },
        )
    }

    #[test]
    fn infraenv_create() {
        let c = Some(("team", "prod"));
        let rows = [
            (None, "", None),
            (c, "", None),
            (None, "4.18", None),
            (c, "4.18", Some(messages::CLUSTER_REF_WITH_OS_IMAGE_VERSION)),
        ];
        for (cluster, os, refusal) in rows {
            let got = admit_infraenv(Operation::Create, None, &infraenv(cluster, "", os), None);
            assert_eq!(got.allowed, refusal.is_none(), "{cluster:?} {os}");
            assert_eq!(got.message, refusal.unwrap_or(""));
        }
    }

    #[test]
    fn infraenv_update() {
        let c = Some(("team", "prod"));
        let d = Some(("team", "dev"));
        type Row = (
            Option<(&'static str, &'static str)>,
            &'static str,
            &'static str,
            Option<(&'static str, &'static str)>,
            &'static str,
            &'static str,
            Option<bool>,
            Option<&'static str>,
        );
        let immutable_ref = Some(messages::CLUSTER_REF_IMMUTABLE);
        let immutable_arch = Some(messages::CPU_ARCHITECTURE_IMMUTABLE);
        let not_installed = Some(messages::OS_IMAGE_VERSION_BEFORE_INSTALL);
        let rows: &[Row] = &[
            (None, "", "", None, "", "", None, None),
            (None, "", "", c, "", "", None, immutable_ref),
            (c, "", "", None, "", "", None, immutable_ref),
            (c, "", "", d, "", "", None, immutable_ref),
            (c, "", "", c, "", "", None, None),
            (None, "", "", None, "x86_64", "", None, None),
            (None, "x86_64", "", None, "", "", None, None),
            (None, "", "", None, "arm64", "", None, immutable_arch),
            (None, "aarch64", "", None, "arm64", "", None, immutable_arch),
            (None, "", "", None, "", "4.18", None, None),
            (c, "", "", c, "", "4.18", None, not_installed),
            (c, "", "", c, "", "4.18", Some(false), not_installed),
            (c, "", "", c, "", "4.18", Some(true), None),
            (c, "", "4.17", c, "", "4.18", None, None),
        ];
        for (was, was_arch, was_os, is, is_arch, is_os, installed, refusal) in rows {
            let got = admit_infraenv(
                Operation::Update,
                Some(&infraenv(*was, was_arch, was_os)),
                &infraenv(*is, is_arch, is_os),
                *installed,
            );
            let want = match refusal {
                None => Admission::allowed(),
                Some(m) => Admission::denied(m),
            };
            assert_eq!(
                got, want,
                "{was:?}/{was_arch}/{was_os} -> {is:?}/{is_arch}/{is_os}"
            );
        }
        assert_eq!(
            admit_infraenv(Operation::Update, None, &infraenv(None, "", ""), None),
            Admission::denied(messages::NO_CONTENT)
        );
        assert!(admit_infraenv(Operation::Delete, None, &infraenv(c, "", "x"), None).allowed);
    }

    #[test]
    fn operations_parse_with_a_near_miss() {
        assert_eq!("UPDATE".parse::<Operation>(), Ok(Operation::Update));
        let err = "UPDAT".parse::<Operation>().unwrap_err();
        assert_eq!(
            err,
            "unknown operation \"UPDAT\" (did you mean UPDATE?); valid values: CREATE, UPDATE, DELETE, CONNECT"
        );
    }
}
