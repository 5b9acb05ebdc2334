//! Agent upgrade files as the hub offers them (spec B.2): the versions available per kind (the
//! exchange's `AgentFileVersions`), the upgrade manifests an NMP names (CSS objects of type
//! `agent_upgrade_manifests`), which version a manifest asks for (anax's download worker:
//! exact, `latest`, or the highest available inside a range) and which files a node needs.
//! Pure: parsed documents in, decisions out.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::version::{self, VersionRange};

/// The manifest's keyword for the highest available version.
pub const LATEST: &str = "latest";
/// The configuration and certificate files, one per kind (anax `HZN_CONFIG_FILE`, `HZN_CERT_FILE`).
pub const CONFIG_FILE: &str = "agent-install.cfg";
pub const CERT_FILE: &str = "agent-install.crt";
/// What an edge cluster agent's software upgrade needs (anax `HZN_CLUSTER_FILE`), with the
/// agent image of the cluster's architecture ([`cluster_image`]).
pub const CLUSTER_FILE: &str = "horizon-agent-edge-cluster-files.tar.gz";

/// The agent image file of an edge cluster (anax `HZN_CLUSTER_IMAGE`, `%v_anax_k8s.tar.gz`,
/// with the node policy's `openhorizon.arch`).
pub fn cluster_image(arch: &str) -> String {
    format!("{arch}_anax_k8s.tar.gz")
}

/// The three kinds of agent files an upgrade handles, each resolved on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    Software,
    Config,
    Cert,
}

impl FileKind {
    pub const ALL: [FileKind; 3] = [FileKind::Software, FileKind::Config, FileKind::Cert];

    /// The key of the node's `softwareVersions` for this kind (anax `persistence`).
    pub fn node_key(self) -> &'static str {
        match self {
            FileKind::Software => "horizon",
            FileKind::Config => "config",
            FileKind::Cert => "cert",
        }
    }

    /// The CSS object type prefix of this kind's files (`<prefix>-<version>`).
    pub fn css_type(self) -> &'static str {
        match self {
            FileKind::Software => "agent_software_files",
            FileKind::Config => "agent_config_files",
            FileKind::Cert => "agent_cert_files",
        }
    }
}

/// The exchange's `/orgs/{org}/AgentFileVersion`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentFileVersions {
    pub agent_software_versions: Vec<String>,
    pub agent_config_versions: Vec<String>,
    pub agent_cert_versions: Vec<String>,
    pub last_updated: String,
}

impl AgentFileVersions {
    pub fn of(&self, kind: FileKind) -> &[String] {
        match kind {
            FileKind::Software => &self.agent_software_versions,
            FileKind::Config => &self.agent_config_versions,
            FileKind::Cert => &self.agent_cert_versions,
        }
    }

    /// The highest valid version of a kind (invalid strings are ignored, as anax does).
    pub fn latest(&self, kind: FileKind) -> Option<String> {
        sorted_valid(self.of(kind)).into_iter().next()
    }
}

/// One kind's part of a manifest: the files (`*` for all) and the version asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UpgradeFiles {
    pub files: Vec<String>,
    pub version: String,
}

/// An upgrade manifest (anax `UpgradeManifest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UpgradeManifest {
    pub software_upgrade: UpgradeFiles,
    pub certificate_upgrade: UpgradeFiles,
    pub configuration_upgrade: UpgradeFiles,
    /// Not the exchange's: the seed's `atLeastVersion X` (a manifest for software from X up),
    /// under which a node whose agent is X or newer is left as it is.
    #[serde(skip)]
    pub software_minimum: Option<String>,
}

impl UpgradeManifest {
    pub fn of(&self, kind: FileKind) -> &UpgradeFiles {
        match kind {
            FileKind::Software => &self.software_upgrade,
            FileKind::Config => &self.configuration_upgrade,
            FileKind::Cert => &self.certificate_upgrade,
        }
    }

    /// Whether the manifest lists a file of a kind (`*` lists them all).
    pub fn lists(&self, kind: FileKind, file: &str) -> bool {
        self.of(kind).files.iter().any(|f| f == file || f == "*")
    }

    /// Whether a kind's version is the `latest` keyword.
    pub fn is_latest(&self, kind: FileKind) -> bool {
        self.of(kind).version == LATEST
    }

    /// Checks every version: empty (kind not upgraded), `latest`, a version or a range. anax
    /// only finds out when a node downloads; a file given to `cvo` is checked when read.
    pub fn validate(&self) -> Result<(), ResolveError> {
        for kind in FileKind::ALL {
            let wanted = &self.of(kind).version;
            if !wanted.is_empty()
                && wanted != LATEST
                && !version::is_version_string(wanted)
                && VersionRange::parse(wanted).is_err()
            {
                return Err(ResolveError::Unrecognized(wanted.clone()));
            }
        }
        Ok(())
    }
}

/// Why a manifest's version cannot be resolved; the texts are anax's (typos included).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("Version keyword \"latest\" specified but no availible versions found in exchange.")]
    NoVersions,
    #[error("Unrecognized version expression string {0}.")]
    Unrecognized(String),
    #[error("Failed to find matching version.")]
    NoMatch,
}

/// Valid versions, highest first.
fn sorted_valid(available: &[String]) -> Vec<String> {
    let mut valid: Vec<String> = (available.iter())
        .filter(|v| version::is_version_string(v))
        .cloned()
        .collect();
    valid.sort_by(|a, b| version::compare_versions(b, a).unwrap_or(Ordering::Equal));
    valid
}

/// The version a manifest asks for among those available (anax `findBestMatchingVersion`):
/// `latest` is the highest; an exact version is taken as it is (available or not, as anax
/// does); a range gives the highest version inside it.
pub fn best_matching_version(available: &[String], wanted: &str) -> Result<String, ResolveError> {
    let available = sorted_valid(available);
    if wanted == LATEST {
        return available.into_iter().next().ok_or(ResolveError::NoVersions);
    }
    if version::is_version_string(wanted) {
        return Ok(wanted.to_owned());
    }
    let range =
        VersionRange::parse(wanted).map_err(|_| ResolveError::Unrecognized(wanted.to_owned()))?;
    (available.into_iter())
        .find(|v| range.contains(v).unwrap_or(false))
        .ok_or(ResolveError::NoMatch)
}

/// The built-in node property that names a device's operating system.
pub const OS_PROPERTY: &str = "openhorizon.operatingSystem";

/// What decides a device's software package names: the built-in node properties
/// `openhorizon.operatingSystem`, `openhorizon.arch` and `openhorizon.containerized`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceFacts {
    /// `None`: the node policy has no operating system property.
    pub os: Option<String>,
    pub arch: String,
    pub containerized: bool,
}

/// The software files a node needs (anax `formAgentUpgradePackageNames`): for a cluster the
/// edge cluster files and the agent image of its architecture (`arm64_anax_k8s.tar.gz`); for a
/// device its container image when containerized, and the package for its operating system.
/// `None`: the node has no node policy. A node without a node policy, a device without the
/// operating system property, or with an operating system that has no package type is an
/// error (the job's `precheck failed`). An empty operating system names no package.
pub fn software_files(cluster: bool, device: Option<&DeviceFacts>) -> Result<Vec<String>, String> {
    let device = device.ok_or("No node policy found in the local db.")?;
    if cluster {
        return Ok(vec![CLUSTER_FILE.to_owned(), cluster_image(&device.arch)]);
    }
    let os = device.os.as_deref().ok_or_else(|| {
        format!("Failed to find node os property: Error: property {OS_PROPERTY} not found in list.")
    })?;
    let mut files = Vec::new();
    if device.containerized {
        files.push(format!("{}_anax.tar.gz", device.arch));
    }
    if os.is_empty() {
        return Ok(files);
    }
    let package = match os {
        "mac" => "pkg",
        "ubuntu" | "debian" | "raspbian" => "deb",
        "rhel" | "centos" | "fedora" | "suse" => "rpm",
        other => {
            return Err(format!(
                "Failed to find package type for install type {other}"
            ));
        }
    };
    let arch = match (device.arch.as_str(), package) {
        ("arm", _) => "armhf",
        ("amd64", "pkg" | "rpm") => "x86_64",
        (arch, _) => arch,
    };
    let os = if os == "mac" { "mac" } else { "linux" };
    files.push(format!("horizon-agent-{os}-{package}-{arch}.tar.gz"));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(versions: &[&str]) -> Vec<String> {
        versions.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn best_matching_versions() {
        let available = list(&["1.0.0", "2.31.0", "bad", "2.4", "2.30.1", "3.0.0-rc1"]);
        let cases: &[(&str, Result<&str, ResolveError>)] = &[
            // anax sorts prereleases in: the highest is 3.0.0-rc1.
            ("latest", Ok("3.0.0-rc1")),
            // Exact versions are taken as they are.
            ("2.30.1", Ok("2.30.1")),
            ("9.9.9", Ok("9.9.9")),
            // Ranges: the highest inside.
            ("[2.0.0,2.31.0)", Ok("2.30.1")),
            ("[2.0.0,2.31.0]", Ok("2.31.0")),
            ("(1.0.0,2.4.0]", Ok("2.4")),
            ("[4.0.0,INFINITY)", Err(ResolveError::NoMatch)),
            ("current", Err(ResolveError::Unrecognized("current".into()))),
            (
                "[1.0.0, 2.0.0]",
                Err(ResolveError::Unrecognized("[1.0.0, 2.0.0]".into())),
            ),
        ];
        for (wanted, want) in cases {
            let got = best_matching_version(&available, wanted);
            assert_eq!(got, want.clone().map(str::to_owned), "{wanted}");
        }
        assert_eq!(
            best_matching_version(&list(&["x"]), "latest"),
            Err(ResolveError::NoVersions)
        );
        assert_eq!(
            ResolveError::NoVersions.to_string(),
            "Version keyword \"latest\" specified but no availible versions found in exchange."
        );
    }

    #[test]
    fn manifests() {
        let m: UpgradeManifest = serde_json::from_str(
            r#"{"softwareUpgrade": {"files": ["*"], "version": "latest"},
                "configurationUpgrade": {"files": ["agent-install.cfg"], "version": "[1,2)"},
                "certificateUpgrade": {"files": [], "version": ""}}"#,
        )
        .unwrap();
        assert!(m.validate().is_ok());
        assert!(m.lists(FileKind::Software, "anything.tar.gz"));
        assert!(m.lists(FileKind::Config, CONFIG_FILE));
        assert!(!m.lists(FileKind::Cert, CERT_FILE));
        assert!(m.is_latest(FileKind::Software) && !m.is_latest(FileKind::Config));
        let mut bad = m.clone();
        bad.certificate_upgrade.version = "latset".into();
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "Unrecognized version expression string latset."
        );
    }

    #[test]
    fn package_names() {
        let device = |os: Option<&str>, arch: &str, containerized| DeviceFacts {
            os: os.map(str::to_owned),
            arch: arch.into(),
            containerized,
        };
        let cases = [
            (
                device(Some("ubuntu"), "amd64", false),
                vec!["horizon-agent-linux-deb-amd64.tar.gz"],
            ),
            (
                device(Some("rhel"), "amd64", false),
                vec!["horizon-agent-linux-rpm-x86_64.tar.gz"],
            ),
            (
                device(Some("raspbian"), "arm", false),
                vec!["horizon-agent-linux-deb-armhf.tar.gz"],
            ),
            (
                device(Some("mac"), "amd64", false),
                vec!["horizon-agent-mac-pkg-x86_64.tar.gz"],
            ),
            (
                device(Some("debian"), "arm64", true),
                vec!["arm64_anax.tar.gz", "horizon-agent-linux-deb-arm64.tar.gz"],
            ),
            (device(Some(""), "amd64", true), vec!["amd64_anax.tar.gz"]),
        ];
        for (facts, want) in cases {
            assert_eq!(
                software_files(false, Some(&facts)).unwrap(),
                want,
                "{facts:?}"
            );
        }
        let arm = DeviceFacts {
            arch: "arm64".into(),
            ..DeviceFacts::default()
        };
        assert_eq!(
            software_files(true, Some(&arm)).unwrap(),
            [CLUSTER_FILE, "arm64_anax_k8s.tar.gz"]
        );
        let errors = [
            (
                Some(device(Some("windows"), "amd64", false)),
                "Failed to find package type for install type windows",
            ),
            // No files is not "nothing to upgrade": the job fails its precheck.
            (None, "No node policy found in the local db."),
            (
                Some(device(None, "amd64", true)),
                "Failed to find node os property: Error: property openhorizon.operatingSystem not found in list.",
            ),
        ];
        for (facts, want) in errors {
            assert_eq!(
                software_files(false, facts.as_ref()).unwrap_err(),
                want,
                "{facts:?}"
            );
        }
    }

    #[test]
    fn latest_per_kind() {
        let v: AgentFileVersions = serde_json::from_str(
            r#"{"agentSoftwareVersions": ["2.30.0", "2.31.0"], "agentConfigVersions": ["1.0"],
                "agentCertVersions": [], "lastUpdated": "x"}"#,
        )
        .unwrap();
        assert_eq!(v.latest(FileKind::Software).as_deref(), Some("2.31.0"));
        assert_eq!(v.latest(FileKind::Config).as_deref(), Some("1.0"));
        assert_eq!(v.latest(FileKind::Cert), None);
    }
}
