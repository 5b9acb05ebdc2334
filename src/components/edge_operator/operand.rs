//! What the operator runs once the hub settings are there: the agent's Deployment and its
//! auto-upgrade CronJob as `cvo edge agent-install` renders them for the payload's install (a
//! cluster-scoped agent in the payload's namespace, on OpenShift), with the administrator's
//! organization and hub URLs, marked as the operator's. Pure.

use serde_json::{Value, json};

use super::hub::HubSettings;
use crate::components::edge::agent_install::{
    CRON_JOB, DEPLOYMENT, HubCert, InstallError, InstallSettings, Rbac, Scope, cronjob_image_for,
    render,
};

/// The label that marks the agent objects the operator made: it changes and deletes no other.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "cvo-edge-agent";
/// The pod-template annotation carrying [`HubSettings::digest`]: new settings, new pods.
pub const SETTINGS_ANNOTATION: &str = "edge-agent.cvo.openshift.io/hub-settings";

/// The kinds and names of the objects the operator owns, in the order it applies them.
pub const OPERANDS: [(&str, &str, &str); 2] = [
    ("apps", "Deployment", DEPLOYMENT),
    ("batch", "CronJob", CRON_JOB),
];

/// The agent's Deployment and CronJob for `hub`, with the agent image `image`, in `namespace`.
pub fn agent_objects(
    hub: &HubSettings,
    namespace: &str,
    image: &str,
) -> Result<Vec<Value>, InstallError> {
    let settings = InstallSettings {
        image: image.to_owned(),
        // The payload pins the agent image by digest, from which no auto-upgrade image can be
        // derived; the job then runs the agent image (the payload has no second reference).
        cronjob_image: cronjob_image_for(image).unwrap_or_else(|| image.to_owned()),
        // The operator runs the agent only once the administrator's Secret has the CA.
        hub_cert: HubCert::InSecret,
        org: hub.org.clone(),
        exchange_url: hub.exchange_url.clone(),
        css_url: hub.css_url.clone(),
        openshift: true,
        ..InstallSettings::new(namespace, Scope::Cluster, Rbac::LeastPrivilege)
    };
    let mut objects: Vec<Value> = render(&settings)?
        .into_iter()
        .filter(|o| OPERANDS.iter().any(|(_, kind, _)| o["kind"] == *kind))
        .collect();
    for object in &mut objects {
        object["metadata"]["labels"][MANAGED_BY_LABEL] = json!(MANAGED_BY);
        let template = match object["kind"].as_str() {
            Some("CronJob") => &mut object["spec"]["jobTemplate"]["spec"]["template"],
            _ => &mut object["spec"]["template"],
        };
        template["metadata"]["annotations"][SETTINGS_ANNOTATION] = json!(hub.digest);
    }
    Ok(objects)
}

/// Whether the operator made `labels`' object (else it is someone else's: an agent installed
/// by `agent-install.sh`, say).
pub fn is_ours(labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    labels
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .is_some_and(|v| v == MANAGED_BY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub() -> HubSettings {
        HubSettings {
            exchange_url: "https://hub.example.com/v1".into(),
            css_url: "https://hub.example.com/css/".into(),
            org: "edge-org".into(),
            digest: "0123456789abcdef".into(),
        }
    }

    #[test]
    fn the_agent_with_the_administrators_settings() {
        let objects =
            agent_objects(&hub(), "openhorizon-agent", "quay.io/x/anax@sha256:00").unwrap();
        let kinds: Vec<&str> = objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Deployment", "CronJob"]);
        let deployment = &objects[0];
        assert_eq!(deployment["metadata"]["name"], "agent");
        assert_eq!(deployment["metadata"]["namespace"], "openhorizon-agent");
        assert_eq!(
            deployment["metadata"]["labels"][MANAGED_BY_LABEL],
            MANAGED_BY
        );
        let pod = &deployment["spec"]["template"];
        assert_eq!(
            pod["metadata"]["annotations"][SETTINGS_ANNOTATION],
            "0123456789abcdef"
        );
        // The selector's labels stay those of the install.
        assert_eq!(
            deployment["spec"]["selector"]["matchLabels"],
            pod["metadata"]["labels"]
        );
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["image"], "quay.io/x/anax@sha256:00");
        let org = (container["env"].as_array().unwrap().iter())
            .find(|e| e["name"] == "HZN_ORG_ID")
            .unwrap();
        assert_eq!(org["value"], "edge-org");
        let cron = &objects[1];
        assert_eq!(cron["metadata"]["name"], "auto-upgrade-cronjob");
        assert_eq!(
            cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
                [SETTINGS_ANNOTATION],
            "0123456789abcdef"
        );
        assert!(is_ours(Some(
            &[(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string())].into()
        )));
        assert!(!is_ours(None));
        assert!(!is_ours(Some(
            &[("app".to_string(), "agent".to_string())].into()
        )));
    }
}
