//! A node's status for one node management policy, in the exchange's JSON (anax
//! `NodeManagementPolicyStatus`: `agentUpgradePolicyStatus` as the exchange keeps it,
//! `agentUpgradeInternal` as the agent keeps and sends it), and the status strings as shipped.
//! Pure.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The statuses anax writes (`exchangecommon.STATUS_*`), in its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Status {
    #[serde(rename = "waiting")]
    Waiting,
    #[serde(rename = "download started")]
    DownloadStarted,
    #[serde(rename = "downloaded")]
    Downloaded,
    #[serde(rename = "initiated")]
    Initiated,
    #[serde(rename = "successful")]
    Successful,
    #[serde(rename = "no action required")]
    NoActionRequired,
    #[serde(rename = "precheck failed")]
    PrecheckFailed,
    #[serde(rename = "download failed")]
    DownloadFailed,
    #[serde(rename = "failed")]
    Failed,
    /// Written only from the exchange side, to make the agent evaluate the policy again.
    #[serde(rename = "reset")]
    Reset,
    #[serde(rename = "rollback started")]
    RollbackStarted,
    #[serde(rename = "rollback failed")]
    RollbackFailed,
    #[serde(rename = "rollback successful")]
    RollbackSuccessful,
    #[serde(rename = "unknown")]
    Unknown,
    #[serde(rename = "ha node waiting")]
    HaNodeWaiting,
}

impl Status {
    pub const ALL: [Status; 15] = [
        Status::Waiting,
        Status::DownloadStarted,
        Status::Downloaded,
        Status::Initiated,
        Status::Successful,
        Status::NoActionRequired,
        Status::PrecheckFailed,
        Status::DownloadFailed,
        Status::Failed,
        Status::Reset,
        Status::RollbackStarted,
        Status::RollbackFailed,
        Status::RollbackSuccessful,
        Status::Unknown,
        Status::HaNodeWaiting,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Waiting => "waiting",
            Status::DownloadStarted => "download started",
            Status::Downloaded => "downloaded",
            Status::Initiated => "initiated",
            Status::Successful => "successful",
            Status::NoActionRequired => "no action required",
            Status::PrecheckFailed => "precheck failed",
            Status::DownloadFailed => "download failed",
            Status::Failed => "failed",
            Status::Reset => "reset",
            Status::RollbackStarted => "rollback started",
            Status::RollbackFailed => "rollback failed",
            Status::RollbackSuccessful => "rollback successful",
            Status::Unknown => "unknown",
            Status::HaNodeWaiting => "ha node waiting",
        }
    }

    /// A job in progress: while one is, no other policy's job starts on the node.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            Status::DownloadStarted
                | Status::Downloaded
                | Status::Initiated
                | Status::RollbackStarted
                | Status::HaNodeWaiting
        )
    }

    /// The ends of a job that went wrong; a new `latest` re-arms them only when it was not
    /// the version already tried.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Status::DownloadFailed
                | Status::Failed
                | Status::PrecheckFailed
                | Status::RollbackFailed
                | Status::RollbackSuccessful
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        (Status::ALL.into_iter())
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                let valid: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                crate::suggest::unknown_value("node management status", text, &valid)
            })
    }
}

/// `upgradedVersions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UpgradedVersions {
    pub software_version: String,
    pub cert_version: String,
    pub config_version: String,
}

/// `agentUpgradePolicyStatus`, the part the exchange keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentUpgradePolicyStatus {
    /// RFC 3339, UTC, whole seconds; empty for a policy without `agentUpgradePolicy`.
    pub scheduled_time: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start_time: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub end_time: String,
    #[serde(default)]
    pub upgraded_versions: UpgradedVersions,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error_message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub working_directory: String,
}

/// `latestMap`: which kinds the manifest asked for as `latest` (known once downloaded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LatestMap {
    pub software_latest: bool,
    pub config_latest: bool,
    pub cert_latest: bool,
}

impl LatestMap {
    pub fn any(self) -> bool {
        self.software_latest || self.config_latest || self.cert_latest
    }
}

/// `agentUpgradeInternal`, the agent's own bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentUpgradeInternal {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_downgrade: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// Unix seconds; JSON as RFC 3339 (Go's `time.Time`).
    #[serde(with = "unix_rfc3339")]
    pub scheduled_unix_time: i64,
    #[serde(default)]
    pub latest_map: LatestMap,
    #[serde(default)]
    pub download_attempts: u32,
}

/// One policy's status on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyStatus {
    #[serde(rename = "agentUpgradePolicyStatus")]
    pub agent_upgrade: AgentUpgradePolicyStatus,
    #[serde(rename = "agentUpgradeInternal")]
    pub internal: AgentUpgradeInternal,
}

impl PolicyStatus {
    pub fn status(&self) -> Status {
        self.agent_upgrade.status
    }
}

/// Go's zero `time.Time` (`0001-01-01T00:00:00Z`) in Unix seconds: the scheduled time of a
/// policy without `agentUpgradePolicy`, which anax leaves unset.
pub const ZERO_TIME: i64 = -62_135_596_800;

/// Unix seconds as RFC 3339 in UTC (`2026-03-01T00:00:05Z`).
pub fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

mod unix_rfc3339 {
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(seconds: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::rfc3339(*seconds))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let text = String::deserialize(d)?;
        (text.parse::<jiff::Timestamp>())
            .map(|t| t.as_second())
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_strings_round_trip() {
        for status in Status::ALL {
            let text = serde_json::to_value(status).unwrap();
            assert_eq!(text, json!(status.as_str()));
            assert_eq!(status.as_str().parse::<Status>(), Ok(status));
        }
        let active: Vec<&str> = (Status::ALL.into_iter())
            .filter(|s| s.is_active())
            .map(Status::as_str)
            .collect();
        assert_eq!(
            active,
            [
                "download started",
                "downloaded",
                "initiated",
                "rollback started",
                "ha node waiting"
            ]
        );
        assert_eq!(
            "downloadeded".parse::<Status>().unwrap_err(),
            "unknown node management status \"downloadeded\" (did you mean downloaded?); valid values: waiting, download started, downloaded, initiated, successful, no action required, precheck failed, download failed, failed, reset, rollback started, rollback failed, rollback successful, unknown, ha node waiting"
        );
    }

    #[test]
    fn the_exchange_json() {
        let status = PolicyStatus {
            agent_upgrade: AgentUpgradePolicyStatus {
                scheduled_time: rfc3339(1_772_323_205),
                start_time: String::new(),
                end_time: String::new(),
                upgraded_versions: UpgradedVersions::default(),
                status: Status::Waiting,
                k8s: None,
                error_message: String::new(),
                working_directory: "/var/horizon/nmp".into(),
            },
            internal: AgentUpgradeInternal {
                allow_downgrade: false,
                manifest: "m".into(),
                scheduled_unix_time: 1_772_323_205,
                latest_map: LatestMap::default(),
                download_attempts: 0,
            },
        };
        let value = serde_json::to_value(&status).unwrap();
        assert_eq!(
            value,
            json!({
                "agentUpgradePolicyStatus": {
                    "scheduledTime": "2026-03-01T00:00:05Z",
                    "upgradedVersions": {"softwareVersion": "", "certVersion": "", "configVersion": ""},
                    "status": "waiting",
                    "workingDirectory": "/var/horizon/nmp"
                },
                "agentUpgradeInternal": {
                    "manifest": "m",
                    "scheduledUnixTime": "2026-03-01T00:00:05Z",
                    "latestMap": {"softwareLatest": false, "configLatest": false, "certLatest": false},
                    "downloadAttempts": 0
                }
            })
        );
        let back: PolicyStatus = serde_json::from_value(value).unwrap();
        assert_eq!(back, status);
        assert_eq!(rfc3339(ZERO_TIME), "0001-01-01T00:00:00Z");
    }
}
