//! `DeploymentTargetClass.spec.parameters`: what `cvo`'s provisioners read there. Upstream
//! defines none; here the namespace provisioner takes the limits a platform team sets for the
//! namespaces its tenants' claims get. A parameter a provisioner does not know, or a value of
//! the wrong type, is an error on the class ([`super::class`]) and on every claim it would
//! provision, never silently ignored.
//!
//! `appstudio.redhat.com/namespace`:
//!
//! | parameter | type | default | meaning |
//! | --- | --- | --- | --- |
//! | `role` | string | `admin` | the ClusterRole the target's ServiceAccount is bound to in its namespace |
//! | `resourceQuota` | ResourceQuotaSpec | none | the ResourceQuota `deployment-target` of each provisioned namespace |
//! | `limitRange` | LimitRangeSpec | none | the LimitRange `deployment-target` of each provisioned namespace |
//! | `maxClaimsPerNamespace` | integer ≥ 1 | none | at most this many targets of the class provisioned for the claims of one namespace |
//! | `tokenExpirationSeconds` | integer, 600 .. 2^32 | 1 year | the lifetime asked for the target's token (the API server may cap it); it is renewed after 80% of the lifetime it got |
//!
//! `appstudio.redhat.com/devsandbox` takes none.

use k8s_openapi::api::core::v1::{LimitRangeSpec, ResourceQuotaSpec};
use serde::Deserialize;
use serde_json::Value;

use super::fields::{from_value, schema_of, unknown_fields};
use super::keys::{PROVISIONER_DEVSANDBOX, PROVISIONER_NAMESPACE};
use super::meta::name;
use super::types::DeploymentTargetClass;
use crate::suggest::suggest;

/// The parameters of the namespace provisioner, by name.
pub const NAMESPACE_PARAMETERS: [&str; 5] = [
    "limitRange",
    "maxClaimsPerNamespace",
    "resourceQuota",
    "role",
    "tokenExpirationSeconds",
];

/// The ClusterRole bound when the class names none.
pub const DEFAULT_ROLE: &str = "admin";
/// The token lifetime asked for when the class says nothing: a year.
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 365 * 24 * 3600;
/// The TokenRequest API's shortest lifetime (10 minutes).
pub const MIN_TOKEN_EXPIRATION_SECONDS: i64 = 600;
/// The TokenRequest API's longest lifetime (2^32 seconds).
pub const MAX_TOKEN_EXPIRATION_SECONDS: i64 = 1 << 32;

/// What the namespace provisioner makes, as a class's parameters say.
#[derive(Clone, Debug, PartialEq)]
pub struct NamespaceParameters {
    pub role: String,
    pub resource_quota: Option<ResourceQuotaSpec>,
    pub limit_range: Option<LimitRangeSpec>,
    pub max_claims_per_namespace: Option<u32>,
    pub token_expiration_seconds: i64,
}

impl Default for NamespaceParameters {
    fn default() -> Self {
        NamespaceParameters {
            role: DEFAULT_ROLE.into(),
            resource_quota: None,
            limit_range: None,
            max_claims_per_namespace: None,
            token_expiration_seconds: DEFAULT_TOKEN_EXPIRATION_SECONDS,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    role: Option<String>,
    resource_quota: Option<ResourceQuotaSpec>,
    limit_range: Option<LimitRangeSpec>,
    max_claims_per_namespace: Option<u32>,
    token_expiration_seconds: Option<i64>,
}

/// The namespace provisioner's parameters of `class`, or what is wrong with them (in the words
/// of `DeploymentTargetClass <name>: spec.parameters...`).
pub fn namespace_parameters(class: &DeploymentTargetClass) -> Result<NamespaceParameters, String> {
    let at = |problem: String| {
        format!(
            "DeploymentTargetClass {}: spec.parameters{problem}",
            name(&class.metadata)
        )
    };
    let Some(parameters) = &class.spec.parameters else {
        return Ok(NamespaceParameters::default());
    };
    let map = &parameters.0;
    for key in map.keys() {
        if !NAMESPACE_PARAMETERS.contains(&key.as_str()) {
            let hint = suggest(key, &NAMESPACE_PARAMETERS)
                .map(|s| format!(" (did you mean {s}?)"))
                .unwrap_or_default();
            return Err(at(format!(
                ".{key}: the {PROVISIONER_NAMESPACE} provisioner has no such parameter{hint}; its parameters: {}",
                NAMESPACE_PARAMETERS.join(", ")
            )));
        }
    }
    for (key, schema) in [
        ("resourceQuota", schema_of::<ResourceQuotaSpec>()),
        ("limitRange", schema_of::<LimitRangeSpec>()),
    ] {
        if let Some(unknown) = map
            .get(key)
            .and_then(|v| unknown_fields(v, &schema).into_iter().next())
        {
            return Err(at(format!(".{key}: {unknown}")));
        }
    }
    let raw: Raw = from_value(Value::Object(map.clone())).map_err(|e| at(format!(".{e}")))?;
    let role = raw.role.unwrap_or_else(|| DEFAULT_ROLE.into());
    if role.is_empty() || role.contains('/') {
        return Err(at(format!(
            ".role: {role:?} is not the name of a ClusterRole"
        )));
    }
    if raw.max_claims_per_namespace == Some(0) {
        return Err(at(
            ".maxClaimsPerNamespace: must be at least 1 (leave it out for no limit)".into(),
        ));
    }
    let token_expiration_seconds = raw
        .token_expiration_seconds
        .unwrap_or(DEFAULT_TOKEN_EXPIRATION_SECONDS);
    if !(MIN_TOKEN_EXPIRATION_SECONDS..=MAX_TOKEN_EXPIRATION_SECONDS)
        .contains(&token_expiration_seconds)
    {
        return Err(at(format!(
            ".tokenExpirationSeconds: {token_expiration_seconds} is outside what the TokenRequest API allows ({MIN_TOKEN_EXPIRATION_SECONDS} to {MAX_TOKEN_EXPIRATION_SECONDS})"
        )));
    }
    Ok(NamespaceParameters {
        role,
        resource_quota: raw.resource_quota,
        limit_range: raw.limit_range,
        max_claims_per_namespace: raw.max_claims_per_namespace,
        token_expiration_seconds,
    })
}

/// What is wrong with `class` for its provisioner: parameters it does not take, or (when the
/// provisioner is not one of `cvo`'s but a near miss of one) the name. A class of another
/// provisioner is that provisioner's to judge.
pub fn check_class(class: &DeploymentTargetClass) -> Result<(), String> {
    let provisioner = class.spec.provisioner.as_str();
    match provisioner {
        PROVISIONER_NAMESPACE => namespace_parameters(class).map(|_| ()),
        PROVISIONER_DEVSANDBOX => match class.spec.parameters.as_ref().map(|p| p.0.keys()) {
            Some(mut keys) if keys.len() > 0 => Err(format!(
                "DeploymentTargetClass {}: spec.parameters.{}: the {PROVISIONER_DEVSANDBOX} provisioner takes no parameters",
                name(&class.metadata),
                keys.next().map(String::as_str).unwrap_or_default()
            )),
            _ => Ok(()),
        },
        other => {
            let ours = [PROVISIONER_NAMESPACE, PROVISIONER_DEVSANDBOX];
            match suggest(other, &ours) {
                Some(near) => Err(format!(
                    "DeploymentTargetClass {}: spec.provisioner {other:?} is no provisioner this controller runs (did you mean {near}?); claims of this class wait for another controller",
                    name(&class.metadata)
                )),
                None => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::deployment_targets::types::{
        ClassParameters, DeploymentTargetClassSpec,
    };
    use serde_json::json;

    fn class(provisioner: &str, parameters: Value) -> DeploymentTargetClass {
        let parameters = match parameters {
            Value::Object(map) => Some(ClassParameters(map)),
            _ => None,
        };
        DeploymentTargetClass::new(
            "tenants",
            DeploymentTargetClassSpec {
                provisioner: provisioner.into(),
                parameters,
                reclaim_policy: "Delete".into(),
            },
        )
    }

    #[test]
    fn namespace_parameters_are_read_with_their_defaults() {
        let none = namespace_parameters(&class(PROVISIONER_NAMESPACE, Value::Null)).unwrap();
        assert_eq!(none, NamespaceParameters::default());
        assert_eq!(none.role, "admin");
        let all = namespace_parameters(&class(
            PROVISIONER_NAMESPACE,
            json!({
                "role": "edit",
                "maxClaimsPerNamespace": 3,
                "tokenExpirationSeconds": 3600,
                "resourceQuota": {"hard": {"pods": "10", "requests.cpu": "2"}},
                "limitRange": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
            }),
        ))
        .unwrap();
        assert_eq!(all.role, "edit");
        assert_eq!(all.max_claims_per_namespace, Some(3));
        assert_eq!(all.token_expiration_seconds, 3600);
        let hard = all.resource_quota.unwrap().hard.unwrap();
        assert_eq!(hard["pods"].0, "10");
        assert_eq!(all.limit_range.unwrap().limits[0].type_, "Container");
    }

    #[test]
    fn wrong_parameters_are_errors_that_say_what_and_where() {
        let cases = [
            (
                json!({"maxClaimPerNamespace": 3}),
                "DeploymentTargetClass tenants: spec.parameters.maxClaimPerNamespace: the appstudio.redhat.com/namespace provisioner has no such parameter (did you mean maxClaimsPerNamespace?); its parameters: limitRange, maxClaimsPerNamespace, resourceQuota, role, tokenExpirationSeconds",
            ),
            (
                json!({"numOfNodes": 3}),
                "DeploymentTargetClass tenants: spec.parameters.numOfNodes: the appstudio.redhat.com/namespace provisioner has no such parameter; its parameters: limitRange, maxClaimsPerNamespace, resourceQuota, role, tokenExpirationSeconds",
            ),
            (
                json!({"resourceQuota": {"hrd": {"pods": "1"}}}),
                "DeploymentTargetClass tenants: spec.parameters.resourceQuota: unknown field hrd (did you mean hard?)",
            ),
            (
                json!({"limitRange": {"limits": [{"type": "Pod", "defualt": {}}]}}),
                "DeploymentTargetClass tenants: spec.parameters.limitRange: unknown field limits[0].defualt (did you mean default?)",
            ),
            (
                json!({"maxClaimsPerNamespace": "three"}),
                "DeploymentTargetClass tenants: spec.parameters.maxClaimsPerNamespace: invalid type: string \"three\", expected u32",
            ),
            (
                json!({"resourceQuota": {"scopes": "BestEffort"}}),
                "DeploymentTargetClass tenants: spec.parameters.resourceQuota.scopes: invalid type: string \"BestEffort\", expected a sequence",
            ),
            (
                json!({"maxClaimsPerNamespace": 0}),
                "DeploymentTargetClass tenants: spec.parameters.maxClaimsPerNamespace: must be at least 1 (leave it out for no limit)",
            ),
            (
                json!({"tokenExpirationSeconds": 60}),
                "DeploymentTargetClass tenants: spec.parameters.tokenExpirationSeconds: 60 is outside what the TokenRequest API allows (600 to 4294967296)",
            ),
            (
                json!({"role": ""}),
                "DeploymentTargetClass tenants: spec.parameters.role: \"\" is not the name of a ClusterRole",
            ),
        ];
        for (parameters, want) in cases {
            let got = namespace_parameters(&class(PROVISIONER_NAMESPACE, parameters.clone()));
            assert_eq!(got, Err(want.to_owned()), "{parameters}");
            assert_eq!(
                check_class(&class(PROVISIONER_NAMESPACE, parameters)),
                Err(want.to_owned())
            );
        }
    }

    #[test]
    fn classes_are_checked_for_their_provisioner() {
        assert_eq!(
            check_class(&class(PROVISIONER_DEVSANDBOX, json!({}))),
            Ok(())
        );
        assert_eq!(
            check_class(&class(PROVISIONER_DEVSANDBOX, json!({"role": "edit"}))),
            Err("DeploymentTargetClass tenants: spec.parameters.role: the appstudio.redhat.com/devsandbox provisioner takes no parameters".into())
        );
        assert_eq!(
            check_class(&class("appstudio.redhat.com/namspace", json!({"x": 1}))),
            Err("DeploymentTargetClass tenants: spec.provisioner \"appstudio.redhat.com/namspace\" is no provisioner this controller runs (did you mean appstudio.redhat.com/namespace?); claims of this class wait for another controller".into())
        );
        assert_eq!(
            check_class(&class("example.com/hypershift", json!({"numOfNodes": 3}))),
            Ok(()),
            "another controller's class and parameters"
        );
    }
}
