//! Setting or clearing the update channel, as `oc adm upgrade channel` does (`openshift/oc`
//! `pkg/cli/admin/upgrade/channel/channel.go`): a channel that is not among the channels the
//! current release declares (`status.desired.channels`) is refused unless
//! `--allow-explicit-channel`, and clearing a known channel needs it too. Pure: the
//! ClusterVersion and the request in, what to write and say out; `cvo upgrade channel`
//! (`src/cli/upgrade.rs`) patches `spec.channel`.

use crate::cluster::ClusterVersion;
use crate::suggest::did_you_mean;

/// What a `cvo upgrade channel NAME` comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelDecision {
    /// Already there: print `out`, write nothing.
    Nothing { out: String },
    /// Write `spec.channel` (`None` clears it), after printing the warnings `err`.
    Set {
        channel: Option<String>,
        err: String,
    },
}

/// oc's refusals, with its messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error(
        "You are requesting to clear the update channel. The current channel {0:?} is one of the available channels, you must pass --allow-explicit-channel to continue"
    )]
    ClearKnown(String),
    #[error(
        "the requested channel {channel:?} is not one of the available channels ({}), you must pass --allow-explicit-channel to continue{}",
        available.join(", "),
        did_you_mean(channel, &available.iter().map(String::as_str).collect::<Vec<_>>())
    )]
    NotAvailable {
        channel: String,
        available: Vec<String>,
    },
}

/// Whether and how `spec.channel` becomes `requested` (empty: cleared).
pub fn decide_channel(
    cv: &ClusterVersion,
    requested: &str,
    allow_explicit_channel: bool,
) -> Result<ChannelDecision, ChannelError> {
    let current = cv.spec.channel.clone().unwrap_or_default();
    if requested == current {
        let out = if current.is_empty() {
            "info: Cluster channel is already clear (no change)\n".to_string()
        } else {
            format!("info: Cluster is already in {current} (no change)\n")
        };
        return Ok(ChannelDecision::Nothing { out });
    }
    let desired = cv.status.as_ref().and_then(|s| s.desired.clone());
    let available = desired
        .as_ref()
        .map(|d| d.channels.clone())
        .unwrap_or_default();
    let mut err = String::new();
    if !available.is_empty() {
        let found = available.iter().any(|c| c == requested);
        let known = available.contains(&current);
        if requested.is_empty() {
            if known && !allow_explicit_channel {
                return Err(ChannelError::ClearKnown(current));
            }
        } else if !found {
            if !allow_explicit_channel {
                return Err(ChannelError::NotAvailable {
                    channel: requested.into(),
                    available,
                });
            }
            err.push_str(&format!(
                "warning: The requested channel {requested:?} is not one of the available channels ({}). You have used --allow-explicit-channel to proceed anyway. Setting the update channel to {requested:?}.\n",
                available.join(", ")
            ));
        }
    } else if !requested.is_empty() {
        let version = desired.and_then(|d| d.version).unwrap_or_default();
        err.push_str(&format!(
            "warning: No channels known to be compatible with the current version {version:?}; unable to validate {requested:?}. Setting the update channel to {requested:?} anyway.\n"
        ));
    }
    if requested.is_empty() {
        err.push_str(&format!(
            "warning: Clearing channel {current:?}; cluster will no longer request available update recommendations.\n"
        ));
    }
    Ok(ChannelDecision::Set {
        channel: (!requested.is_empty()).then(|| requested.to_string()),
        err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{ClusterVersionSpec, ClusterVersionStatus, Release};

    fn cluster(channel: Option<&str>, available: &[&str]) -> ClusterVersion {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                channel: channel.map(String::from),
                ..Default::default()
            },
        );
        cv.status = Some(ClusterVersionStatus {
            desired: Some(Release {
                version: Some("4.17.0".into()),
                channels: available.iter().map(|c| c.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        });
        cv
    }

    fn set(channel: Option<&str>, err: &str) -> Result<ChannelDecision, ChannelError> {
        Ok(ChannelDecision::Set {
            channel: channel.map(String::from),
            err: err.into(),
        })
    }

    /// (name, cluster, requested channel, --allow-explicit-channel, decision)
    type Case = (
        &'static str,
        ClusterVersion,
        &'static str,
        bool,
        Result<ChannelDecision, ChannelError>,
    );

    #[test]
    fn channels_are_set_and_cleared_as_oc_does() {
        let known = ["stable-4.17", "stable-4.18"];
        let cases: Vec<Case> = vec![
            (
                "same channel",
                cluster(Some("stable-4.17"), &known),
                "stable-4.17",
                false,
                Ok(ChannelDecision::Nothing {
                    out: "info: Cluster is already in stable-4.17 (no change)\n".into(),
                }),
            ),
            (
                "already clear",
                cluster(None, &known),
                "",
                false,
                Ok(ChannelDecision::Nothing {
                    out: "info: Cluster channel is already clear (no change)\n".into(),
                }),
            ),
            (
                "an available channel",
                cluster(Some("stable-4.17"), &known),
                "stable-4.18",
                false,
                set(Some("stable-4.18"), ""),
            ),
            (
                "from no channel",
                cluster(None, &known),
                "stable-4.18",
                false,
                set(Some("stable-4.18"), ""),
            ),
            (
                "an unknown channel",
                cluster(Some("stable-4.17"), &known),
                "stabel-4.18",
                false,
                Err(ChannelError::NotAvailable {
                    channel: "stabel-4.18".into(),
                    available: vec!["stable-4.17".into(), "stable-4.18".into()],
                }),
            ),
            (
                "an unknown channel, allowed",
                cluster(Some("stable-4.17"), &known),
                "candidate-4.19",
                true,
                set(
                    Some("candidate-4.19"),
                    "warning: The requested channel \"candidate-4.19\" is not one of the available channels (stable-4.17, stable-4.18). You have used --allow-explicit-channel to proceed anyway. Setting the update channel to \"candidate-4.19\".\n",
                ),
            ),
            (
                "clearing a known channel",
                cluster(Some("stable-4.17"), &known),
                "",
                false,
                Err(ChannelError::ClearKnown("stable-4.17".into())),
            ),
            (
                "clearing a known channel, allowed",
                cluster(Some("stable-4.17"), &known),
                "",
                true,
                set(
                    None,
                    "warning: Clearing channel \"stable-4.17\"; cluster will no longer request available update recommendations.\n",
                ),
            ),
            (
                "clearing an unknown channel",
                cluster(Some("mine"), &known),
                "",
                false,
                set(
                    None,
                    "warning: Clearing channel \"mine\"; cluster will no longer request available update recommendations.\n",
                ),
            ),
            (
                "no channels known",
                cluster(Some("stable-4.17"), &[]),
                "fast-4.18",
                false,
                set(
                    Some("fast-4.18"),
                    "warning: No channels known to be compatible with the current version \"4.17.0\"; unable to validate \"fast-4.18\". Setting the update channel to \"fast-4.18\" anyway.\n",
                ),
            ),
            (
                "no channels known, cleared",
                cluster(Some("stable-4.17"), &[]),
                "",
                false,
                set(
                    None,
                    "warning: Clearing channel \"stable-4.17\"; cluster will no longer request available update recommendations.\n",
                ),
            ),
        ];
        for (name, cv, requested, allow, want) in cases {
            assert_eq!(decide_channel(&cv, requested, allow), want, "{name}");
        }
    }

    #[test]
    fn refusals_read_as_ocs() {
        let e = decide_channel(&cluster(Some("stable-4.17"), &["stable-4.17"]), "x", false)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the requested channel \"x\" is not one of the available channels (stable-4.17), you must pass --allow-explicit-channel to continue"
        );
        let e = decide_channel(
            &cluster(None, &["stable-4.17", "fast-4.17"]),
            "stabel-4.17",
            false,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the requested channel \"stabel-4.17\" is not one of the available channels (stable-4.17, fast-4.17), you must pass --allow-explicit-channel to continue (did you mean stable-4.17?)"
        );
        let e =
            decide_channel(&cluster(Some("stable-4.17"), &["stable-4.17"]), "", false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "You are requesting to clear the update channel. The current channel \"stable-4.17\" is one of the available channels, you must pass --allow-explicit-channel to continue"
        );
    }
}
