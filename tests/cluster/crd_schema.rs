//! `cvo::crd_schema` (what the preflight uses to find stored objects an update's CRD schema
//! would refuse or prune) against the real kube-apiserver: a CRD whose schema uses each
//! keyword the module checks and `x-kubernetes-validations` rules (CEL: message,
//! messageExpression, fieldPath, reason), and a table of objects each created with `dryRun=All`. The
//! server's refusals (status causes: reason and field) must be the module's violations, and
//! the fields the server drops (the created object it returns) the module's pruned fields.
//! Then what the preflight promises about pruning: once a CRD's schema stops preserving
//! unknown fields, the server drops them from a stored object as it reads it.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};

use cvo::crd_schema::Schema;

use super::Ctx;

const CRD: &str = "gadgets.schema.example.com";

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}}},
            "spec": {
            "type": "object",
            "required": ["size"],
            "maxProperties": 12,
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1, "multipleOf": 0.25,
                          "x-kubernetes-validations": [{"rule": "self < 0.75",
                              "messageExpression": "self > 0.8 ? 'ratio is far too big' : 'ratio is too big'"}]},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                         "x-kubernetes-list-type": "set",
                         "items": {"type": "string", "maxLength": 10},
                         "x-kubernetes-validations": [{"rule": "self.all(t, t.size() < 3)"}]},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"], "properties": {
                              "name": {"type": "string"}, "port": {"type": "integer"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "note": {"type": "string", "nullable": true},
                "when": {"type": "string", "format": "date-time"},
                "addr": {"type": "string", "format": "ipv4"},
                "one": {"type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                "embs": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "steps": {"type": "number", "multipleOf": 0.1},
                "cents": {"type": "number", "multipleOf": 0.01},
                "list": {"type": "array", "items": {"type": "string", "default": "d"}},
                "arr": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                        "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "choice": {"type": "string", "nullable": true, "enum": ["x", "y"]},
                "code": {"type": "string", "pattern": "^\\d+$"},
                "data": {"type": "string", "format": "byte"},
                "child": {"type": "object", "properties": {
                    "count": {"type": "integer", "default": 1},
                    "kind": {"type": "string"}}}
            },
            "x-kubernetes-validations": [
                {"rule": "self.size <= 5 || self.mode == 'b'", "message": "big gadgets need mode b"},
                {"rule": "!has(self.name) || self.name.startsWith('a')", "fieldPath": ".name",
                 "reason": "FieldValueForbidden"}
            ]
        }}
    })
}

/// Specs the server and the module must agree on.
fn cases() -> Vec<Value> {
    vec![
        json!({"size": 3}),
        json!({}),
        json!({"size": "3"}),
        json!({"size": 11}),
        json!({"size": 0}),
        // Not `{"size": 2.0}`: CEL sees that integer field as a double there, and cel-go
        // (without cross-type comparisons) refuses `self.size <= 5` where cel-rust compares.
        // A stored object never holds it: the server writes the number back as 2.
        json!({"size": 1, "ratio": 1}),
        json!({"size": 1, "ratio": 0.3}),
        json!({"size": 1, "ratio": 0.5}),
        json!({"size": 1, "mode": "c"}),
        json!({"size": 1, "mode": null}),
        json!({"size": 1, "name": "abcdef"}),
        json!({"size": 1, "name": "a"}),
        json!({"size": 1, "name": "AB"}),
        json!({"size": 1, "port": "http"}),
        json!({"size": 1, "port": 8080}),
        json!({"size": 1, "port": true}),
        json!({"size": 1, "tags": ["a", "b", "a"]}),
        json!({"size": 1, "tags": []}),
        json!({"size": 1, "tags": ["a", "a"]}),
        json!({"size": 1, "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}),
        json!({"size": 1, "ports": [{"port": 1}]}),
        json!({"size": 1, "ports": [{"name": "a", "proto": "TCP"}]}),
        json!({"size": 1, "labels": {"a": "b", "c": 1, "d": "long"}}),
        json!({"size": 1, "extra": {"anything": [1, {"x": null}]}}),
        json!({"size": 1, "note": null}),
        json!({"size": 1, "when": "2024-05-01T12:00:00Z"}),
        json!({"size": 1, "when": "yesterday"}),
        json!({"size": 1, "addr": "10.0.0.1"}),
        json!({"size": 1, "addr": "::1"}),
        json!({"size": 1, "one": {"a": "x"}}),
        json!({"size": 1, "one": {"a": "x", "b": "y"}}),
        json!({"size": 1, "one": {}}),
        json!({"size": 1, "child": {}}),
        json!({"size": 1, "child": {"count": "many"}}),
        json!({"size": 1, "colour": "red", "child": {"colour": "blue"}}),
        json!({"size": [1], "mode": 3, "name": 4, "tags": "x"}),
        json!({"size": 7, "mode": "a"}),
        json!({"size": 1, "embs": {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {"a": "x", "b": "y"}}}),
        json!({"size": 1, "embs": {"apiVersion": "v1", "spec": {}}}),
        json!({"size": 1, "steps": 0.3, "cents": 0.07}),
        json!({"size": 1, "steps": 0.35}),
        json!({"size": 1, "list": ["a", null]}),
        json!({"size": 1, "arr": [{"a": "x", "b": "y"}]}),
        json!({"size": 1, "choice": null}),
        json!({"size": 1, "choice": "z"}),
        json!({"size": 1, "child": {"count": 18446744073709551615u64}}),
        json!({"size": 1, "code": "12"}),
        json!({"size": 1, "code": "\u{0661}\u{0662}"}),
        json!({"size": 1, "when": "2024-05-01T12:00:00"}),
        json!({"size": 1, "when": "2024-05-01 12:00:00Z"}),
        json!({"size": 1, "when": "2024-05-01T25:00:00Z"}),
        json!({"size": 1, "when": "2024-05-01T12:00:00.123+02:00"}),
        json!({"size": 1, "data": ""}),
        json!({"size": 1, "data": "YR=="}),
        json!({"size": 1, "data": "aGVsbG8"}),
        json!({"size": 1, "tags": ["a", "a", "a"]}),
        json!({"size": 7, "mode": "b"}),
        json!({"size": 7}),
        json!({"size": 1, "name": "bc"}),
        json!({"size": 1, "tags": ["abc"]}),
        json!({"size": 1, "ratio": 0.75}),
        json!({"size": 1, "ratio": 0.5, "name": "ab", "tags": ["ab"]}),
        json!({"size": 1, "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6",
               "g": "7", "h": "8", "i": "9", "j": "10", "k": "11", "l": "12"}),
    ]
}

fn resource(version: &str) -> ApiResource {
    ApiResource {
        group: "schema.example.com".into(),
        version: version.into(),
        api_version: format!("schema.example.com/{version}"),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    }
}

fn gadget(name: &str, spec: &Value) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "schema.example.com/v1", "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec
    }))?)
}

/// Creates or replaces the CRD with `schema` for v1 and waits until it serves.
async fn install(ctx: &Ctx<'_>, schema: &Value) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.admin.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {"group": "schema.example.com", "scope": "Namespaced",
                 "names": {"kind": "Gadget", "plural": "gadgets"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": schema}}]}
    }))?;
    let params = PatchParams::apply("cvo-test").force();
    crds.patch(CRD, &params, &Patch::Apply(&crd)).await?;
    let established = await_condition(crds, CRD, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .context("the CRD did not become Established")??;
    // The schema is served once the handler has it: retry the first request below if not.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

/// The fields of `sent` that `returned` lacks (paths as the module writes them).
fn dropped(sent: &Value, returned: &Value, path: &str, out: &mut BTreeSet<String>) {
    match (sent, returned) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    Some(w) => dropped(v, w, &p, out),
                    // A null the server dropped is not a pruned field (nor for the module).
                    None if !v.is_null() => {
                        out.insert(p);
                    }
                    None => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                dropped(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

pub async fn crd_schema_agrees_with_the_api_server(ctx: &Ctx<'_>) -> anyhow::Result<()> {
    install(ctx, &schema()).await?;
    let compiled = Schema::new(&schema())?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.admin.clone(), "default", &resource("v1"));
    // The server's default field validation (Warn): unknown fields are pruned, not refused.
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut disagreements = Vec::new();
    let mut refused = 0;
    for (i, spec) in cases().iter().enumerate() {
        let object = gadget(&format!("g{i}"), spec)?;
        let sent = serde_json::to_value(&object)?;
        let ours = compiled.check(&sent);
        let our_errors: BTreeSet<(String, String)> = (ours.violations.iter())
            .map(|v| (v.error.reason().to_string(), v.field.clone()))
            .collect();
        let our_pruned: BTreeSet<String> = ours.pruned.iter().cloned().collect();
        let mut attempt = 0;
        let server = loop {
            match api.create(&params, &object).await {
                // A CRD just made may not be served yet.
                Err(kube::Error::Api(s)) if s.code == 404 && attempt < 20 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                other => break other,
            }
        };
        let (server_errors, server_pruned) = match server {
            Ok(created) => {
                let mut pruned = BTreeSet::new();
                dropped(&sent, &serde_json::to_value(&created)?, "", &mut pruned);
                (BTreeSet::new(), pruned)
            }
            Err(kube::Error::Api(s)) if s.code == 422 => {
                refused += 1;
                let causes = s.details.map(|d| d.causes).unwrap_or_default();
                let errors = (causes.into_iter())
                    .map(|c| (c.reason, c.field))
                    .collect::<BTreeSet<_>>();
                (errors, our_pruned.clone())
            }
            Err(e) => return Err(e).with_context(|| format!("creating {spec}")),
        };
        if server_errors != our_errors || server_pruned != our_pruned {
            disagreements.push(format!(
                "{spec}\n  server: {server_errors:?} pruned {server_pruned:?}\n  cvo:    {our_errors:?} pruned {our_pruned:?} ({})",
                (ours.violations.iter())
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
    }
    ensure!(
        disagreements.is_empty(),
        "cvo's schema check and the API server disagree on {} of {} objects:\n{}",
        disagreements.len(),
        cases().len(),
        disagreements.join("\n")
    );
    ensure!(
        refused >= 20,
        "only {refused} of the cases were refused: the table tests too little"
    );

    // A stored field the new schema does not declare is gone as soon as the schema is
    // installed: the server prunes what it reads, not only what it is sent.
    let preserving = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true}}});
    install(ctx, &preserving).await?;
    let stored = gadget("stored", &json!({"size": 1, "colour": "red"}))?;
    let mut attempt = 0;
    loop {
        match api.create(&PostParams::default(), &stored).await {
            Err(kube::Error::Api(s)) if s.code == 404 && attempt < 20 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            other => {
                other?;
                break;
            }
        }
    }
    let strict = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "integer"}}}}});
    let outcome = Schema::new(&strict)?.check(&serde_json::to_value(api.get("stored").await?)?);
    ensure!(outcome.pruned == ["spec.colour"], "{outcome:?}");
    install(ctx, &strict).await?;
    let mut read = Value::Null;
    for _ in 0..40 {
        read = serde_json::to_value(api.get("stored").await?)?;
        if read.pointer("/spec/colour").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ensure!(
        read.pointer("/spec/colour").is_none() && read.pointer("/spec/size") == Some(&json!(1)),
        "the stored gadget after the schema change: {read}"
    );
    api.delete("stored", &DeleteParams::default()).await?;
    Api::<CustomResourceDefinition>::all(ctx.admin.clone())
        .delete(CRD, &DeleteParams::default())
        .await?;
    Ok(())
}
