//! `cvo validate` as CI runs it: every check on the bad payloads of `testdata/validate/` (code,
//! file and position), the good payload with no finding at all, the output formats, the exit
//! codes, and the real corpus with zero errors and its warnings pinned and explained.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn cvo() -> Command {
    let mut cmd = Command::cargo_bin("cvo").unwrap();
    cmd.env_remove("CLUSTER_PROFILE")
        .env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn case(name: &str) -> String {
    format!("testdata/validate/{name}")
}

/// Runs `cvo validate` and returns its exit code and standard output.
fn run(args: &[&str]) -> (i32, String) {
    let output = cvo().arg("validate").args(args).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    (output.status.code().unwrap_or(-1), stdout)
}

/// (code, file relative to the payload, line, column) of every finding, via `-o json`.
type Row = (String, String, Option<u64>, Option<u64>);

fn findings(payload: &str, extra: &[&str]) -> (i32, Vec<Row>) {
    let mut args = vec!["--payload", payload, "-o", "json"];
    args.extend_from_slice(extra);
    let (code, out) = run(&args);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let prefix = format!("{payload}/");
    let rows = rows
        .iter()
        .map(|f| {
            let file = f["file"].as_str().unwrap();
            (
                f["code"].as_str().unwrap().to_string(),
                file.strip_prefix(&prefix).unwrap_or(file).to_string(),
                f["line"].as_u64(),
                f["column"].as_u64(),
            )
        })
        .collect();
    (code, rows)
}

fn row(code: &str, file: &str, position: Option<(u64, u64)>) -> Row {
    (
        code.to_string(),
        file.to_string(),
        position.map(|p| p.0),
        position.map(|p| p.1),
    )
}

#[test]
fn a_good_payload_has_no_findings() {
    let (code, rows) = findings(&case("good"), &[]);
    assert_eq!(rows, vec![]);
    assert_eq!(code, 0);
    let (code, out) = run(&["--payload", &case("good"), "--deny-warnings"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "ok: testdata/validate/good: 8 files, 9 documents: 0 errors, 0 warnings\n"
    );
}

/// Metadata without a manifest is not a payload the CVO can apply.
#[test]
fn a_payload_root_without_manifests() {
    let (code, rows) = findings(&case("empty"), &[]);
    assert_eq!(rows, vec![row("no-manifests", "release-manifests", None)]);
    assert_eq!(code, 1);
}

#[test]
fn files_names_unread_entries_and_unreadable_files() {
    let rm = "release-manifests";
    let (code, rows) = findings(&case("files"), &[]);
    assert_eq!(
        rows,
        vec![
            row("ignored-file", "0000_50_example_00_stray.yaml", None),
            row(
                "ignored-file",
                &format!("{rm}/0000_50_example_02_upper.YAML"),
                None
            ),
            row(
                "unreadable-file",
                &format!("{rm}/0000_50_example_04_latin1.yaml"),
                Some((4, 12))
            ),
            row("ignored-file", &format!("{rm}/NOTES.txt"), None),
            row("file-name", &format!("{rm}/example-config.yaml"), None),
            row("missing-metadata", &format!("{rm}/image-references"), None),
            row("ignored-directory", &format!("{rm}/old"), None),
            row("missing-metadata", &format!("{rm}/release-metadata"), None),
        ]
    );
    assert_eq!(code, 1, "an unreadable file is an error");
}

#[test]
fn documents_syntax_shapes_fields_keys_and_duplicates() {
    let rm = |f: &str| format!("release-manifests/0000_50_example_{f}.yaml");
    let (code, rows) = findings(&case("documents"), &[]);
    assert_eq!(
        rows,
        vec![
            row(
                "template",
                "manifests/0000_00_cluster-version-operator_01_template.yaml",
                Some((9, 13))
            ),
            row("yaml-syntax", &rm("01_syntax"), Some((13, 1))),
            row("not-a-mapping", &rm("02_shapes"), Some((1, 1))),
            row("field-type", &rm("02_shapes"), Some((5, 1))),
            row("missing-field", &rm("02_shapes"), Some((9, 1))),
            row("missing-field", &rm("02_shapes"), Some((14, 1))),
            row("duplicate-key", &rm("03_keys"), Some((11, 3))),
            row("redundant-key", &rm("03_keys"), Some((21, 5))),
            row("duplicate-resource", &rm("04_twice"), Some((9, 1))),
            row("duplicate-resource", &rm("05_elsewhere"), Some((1, 1))),
            row("annotations-not-strings", &rm("06_unquoted"), Some((7, 5))),
        ]
    );
    assert_eq!(code, 1);
}

#[test]
fn annotations() {
    let rm = |f: &str| format!("release-manifests/0000_50_example_{f}.yaml");
    let (code, rows) = findings(&case("annotations"), &[]);
    assert_eq!(
        rows,
        vec![
            row(
                "misspelled-capability",
                &rm("01_capabilities"),
                Some((8, 35))
            ),
            row(
                "misspelled-capability",
                &rm("01_capabilities"),
                Some((8, 43))
            ),
            row("unknown-capability", &rm("01_capabilities"), Some((8, 50))),
            row("empty-capability", &rm("01_capabilities"), Some((17, 5))),
            row("feature-set-and-gate", &rm("02_features"), Some((9, 5))),
            row("unknown-feature-set", &rm("02_features"), Some((18, 5))),
            row("profile-value", &rm("03_profiles"), Some((8, 5))),
            row("no-profile", &rm("03_profiles"), Some((15, 3))),
            row("unknown-profile", &rm("03_profiles"), Some((16, 5))),
            row("no-profile", &rm("03_profiles"), Some((23, 3))),
            row("delete-value", &rm("04_delete"), Some((8, 5))),
            row("major-version-kind", &rm("05_major"), Some((8, 5))),
            row("major-version-invalid", &rm("05_major"), Some((16, 5))),
            row("major-version-overlap", &rm("05_major"), Some((24, 5))),
            row("no-profile", &rm("06_feature-gate"), Some((6, 3))),
            row("profile-value", &rm("06_feature-gate"), Some((7, 5))),
        ]
    );
    assert_eq!(code, 1);
}

#[test]
fn capability_consistency() {
    let rm = |f: &str| format!("release-manifests/0000_50_{f}.yaml");
    let (code, rows) = findings(&case("capabilities"), &[]);
    assert_eq!(
        rows,
        vec![
            row(
                "partial-capability",
                &rm("console-operator_02_rbac"),
                Some((10, 1))
            ),
            row(
                "capability-reference",
                &rm("console-operator_02_rbac"),
                Some((10, 1))
            ),
            row(
                "capability-reference",
                &rm("console-operator_02_rbac"),
                Some((17, 1))
            ),
            row(
                "partial-capability",
                &rm("console-operator_04_clusterrole"),
                Some((2, 1))
            ),
            row(
                "namespace-capability",
                &rm("insights-operator_00_namespace"),
                Some((1, 1))
            ),
        ]
    );
    assert_eq!(code, 0, "capability findings are warnings");
    let (code, _) = findings(&case("capabilities"), &["--deny-warnings"]);
    assert_eq!(code, 1);
}

#[test]
fn metadata_files() {
    let (code, rows) = findings(&case("metadata"), &[]);
    assert_eq!(
        rows,
        vec![
            row(
                "image-references",
                "release-manifests/image-references",
                None
            ),
            row(
                "release-metadata",
                "release-manifests/release-metadata",
                None
            ),
        ]
    );
    assert_eq!(code, 1);
}

#[test]
fn images_and_cluster_operators() {
    let (code, rows) = findings(&case("images"), &[]);
    assert_eq!(
        rows,
        vec![
            row(
                "missing-image-tag",
                "manifests/0000_00_cluster-version-operator_30_deployment.yaml",
                Some((15, 34))
            ),
            row(
                "missing-image",
                "release-manifests/0000_50_example-operator_01_deployment.yaml",
                Some((16, 16))
            ),
            row(
                "cluster-operator-versions",
                "release-manifests/0000_50_example-operator_02_clusteroperator.yaml",
                Some((1, 1))
            ),
            row(
                "release-metadata-value",
                "release-manifests/release-metadata",
                None
            ),
        ]
    );
    assert_eq!(code, 1);
}

/// A payload's own capabilities: the well-declared one is known (its manifests are not an
/// `unknown-capability`); a clash with openshift/api, a double declaration and a missing
/// description are errors. Widgets is in `v4.18` and ships a Deployment: every cluster on
/// `v4.18` or `vCurrent` would run it unasked, which is a warning.
#[test]
fn declared_capabilities() {
    let (code, rows) = findings(&case("declared"), &[]);
    let metadata = "release-manifests/release-metadata";
    let declaration = row("capability-declaration", metadata, None);
    let mut want = vec![declaration; 3];
    want.push(row("capability-baseline", metadata, None));
    assert_eq!(rows, want);
    assert_eq!(code, 1);
    let (_, out) = run(&["--payload", &case("declared")]);
    for message in [
        "capability \"Console\" is already an openshift/api capability",
        "capability \"Widgets\" is declared twice",
        "capability \"Gadgets\" has no description",
        "warning[capability-baseline]: capability \"Widgets\" is in the baseline sets v4.18, vCurrent and runs Deployment widgets/widgets (release-manifests/0000_50_widgets_01_deployment.yaml): every cluster on one of these baselines (vCurrent is the default) runs it, on install and on its next update, without an administrator asking for it",
        "to make it opt-in, declare it with \"sets\": [] so that an administrator turns it on with spec.capabilities.additionalEnabledCapabilities: [\"Widgets\"]",
    ] {
        assert!(out.contains(message), "{message}: {out}");
    }
}

/// CRDs of other operators' API groups: one that does not say it stands in for hive's, one
/// that names a near miss of assisted-service. Warnings: the payload still validates.
#[test]
fn crds_of_another_operators_group() {
    let (code, rows) = findings(&case("foreign"), &[]);
    assert_eq!(code, 0);
    assert_eq!(
        rows,
        vec![
            row(
                "foreign-crd",
                "release-manifests/0000_50_hub-tools_01_agents.crd.yaml",
                Some((8, 5))
            ),
            row(
                "foreign-crd",
                "release-manifests/0000_50_hub-tools_01_clusterdeployments.crd.yaml",
                Some((3, 1))
            ),
        ]
    );
    let (code, out) = run(&["--payload", &case("foreign"), "--deny-warnings"]);
    assert_eq!(code, 1);
    for message in [
        "CustomResourceDefinition clusterdeployments.hive.openshift.io is of hive.openshift.io, hive's API group: where hive runs, its CRD is live and this one must not replace it",
        "say that it stands in for hive's: crds.cvo.openshift.io/stand-in-for: hive",
        "crds.cvo.openshift.io/stand-in-for names \"assisted-servce\" (did you mean assisted-service?), but agent-install.openshift.io is assisted-service's API group",
    ] {
        assert!(out.contains(message), "{message}: {out}");
    }
}

/// A preflight check with a typo: an error in CI, not a surprise when a cluster preflights.
#[test]
fn a_malformed_preflight_check() {
    let (code, rows) = findings(&case("preflight"), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        rows,
        vec![row(
            "preflight-check",
            "release-manifests/0000_90_widgets_01_preflight.yaml",
            Some((8, 5))
        )]
    );
    let (_, out) = run(&["--payload", &case("preflight")]);
    assert!(
        out.contains("unknown key \"knd\" in data.objects (did you mean kind?)"),
        "{out}"
    );
}

#[test]
fn every_code_is_proven_by_a_bad_payload() {
    let mut seen = std::collections::BTreeSet::new();
    for name in [
        "empty",
        "files",
        "documents",
        "annotations",
        "capabilities",
        "metadata",
        "images",
        "declared",
        "foreign",
        "preflight",
    ] {
        seen.extend(findings(&case(name), &[]).1.into_iter().map(|r| r.0));
    }
    let all: std::collections::BTreeSet<String> = cvo::validate::Code::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    assert_eq!(seen, all);
}

#[test]
fn text_output_snapshot() {
    let (code, out) = run(&["--payload", &case("annotations")]);
    assert_eq!(code, 1);
    assert_eq!(out, ANNOTATIONS_TEXT);
}

const ANNOTATIONS_TEXT: &str = r#"error[misspelled-capability]: unrecognized capability names: console: a near miss of Console, so the CVO excludes this document on every cluster
 --> testdata/validate/annotations/release-manifests/0000_50_example_01_capabilities.yaml:8:35
  |
8 |     capability.openshift.io/name: console+Consle+NoSuchThing
  |                                   ^^^^^^^
  = help: did you mean Console? Names are case-sensitive. If console really is a new capability, declare it in capabilities.knownCapabilities of an --inclusion file

error[misspelled-capability]: unrecognized capability names: Consle: a near miss of Console, so the CVO excludes this document on every cluster
 --> testdata/validate/annotations/release-manifests/0000_50_example_01_capabilities.yaml:8:43
  |
8 |     capability.openshift.io/name: console+Consle+NoSuchThing
  |                                           ^^^^^^
  = help: did you mean Console? Names are case-sensitive. If Consle really is a new capability, declare it in capabilities.knownCapabilities of an --inclusion file

warning[unknown-capability]: unrecognized capability names: NoSuchThing
 --> testdata/validate/annotations/release-manifests/0000_50_example_01_capabilities.yaml:8:50
  |
8 |     capability.openshift.io/name: console+Consle+NoSuchThing
  |                                                  ^^^^^^^^^^^
  = help: fine while the capability is being introduced (the CVO excludes the document until openshift/api knows the name); known capabilities: Build, CSISnapshot, CloudControllerManager, CloudCredential, ClusterAPI, CompatibilityRequirements, Console, DeploymentConfig, ImageRegistry, Ingress, Insights, MachineAPI, NodeTuning, OperatorLifecycleManager, OperatorLifecycleManagerV1, Storage, baremetal, marketplace, openshift-samples

error[empty-capability]: capability.openshift.io/name=Console++Insights has an empty capability name: the CVO reports "unrecognized capability names: " and never applies this document
  --> testdata/validate/annotations/release-manifests/0000_50_example_01_capabilities.yaml:17:5
   |
17 |     capability.openshift.io/name: Console++Insights
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = help: remove the extra `+`: names are joined by a single `+` with nothing around them

error[feature-set-and-gate]: both feature set and feature gate annotations are present: manifests may specify either a feature set or a feature gate, but not both
 --> testdata/validate/annotations/release-manifests/0000_50_example_02_features.yaml:9:5
  |
9 |     release.openshift.io/feature-gate: Example
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: keep one of the two: the CVO excludes the document on every cluster

error[unknown-feature-set]: unrecognized value "TechPreview" in release.openshift.io/feature-set=Default,TechPreview; known values are: CustomNoUpgrade,Default,DevPreviewNoUpgrade,OKD,TechPreviewNoUpgrade
  --> testdata/validate/annotations/release-manifests/0000_50_example_02_features.yaml:18:5
   |
18 |     release.openshift.io/feature-set: Default,TechPreview
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = help: did you mean TechPreviewNoUpgrade? Entries are separated by a bare comma, no spaces

warning[profile-value]: unrecognized value include.release.openshift.io/single-node-developer=false
 --> testdata/validate/annotations/release-manifests/0000_50_example_03_profiles.yaml:8:5
  |
8 |     include.release.openshift.io/single-node-developer: "false"
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: only "true" includes the document; any other value is the same as leaving include.release.openshift.io/single-node-developer out

warning[no-profile]: no known cluster profile includes this document (no include.release.openshift.io/<profile>: "true" for self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift): no CVO applies it
  --> testdata/validate/annotations/release-manifests/0000_50_example_03_profiles.yaml:15:3
   |
15 |   annotations:
   |   ^^^^^^^^^^^
   = help: add include.release.openshift.io/<profile>: "true" for each profile that needs it (self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift); if another tool applies it, it does not belong in the payload

warning[unknown-profile]: include.release.openshift.io/self-managed-high-availabilty: no cluster runs with profile self-managed-high-availabilty
  --> testdata/validate/annotations/release-manifests/0000_50_example_03_profiles.yaml:16:5
   |
16 |     include.release.openshift.io/self-managed-high-availabilty: "true"
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = help: did you mean include.release.openshift.io/self-managed-high-availability?

warning[no-profile]: no known cluster profile includes this document (no include.release.openshift.io/<profile>: "true" for self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift): no CVO applies it
  --> testdata/validate/annotations/release-manifests/0000_50_example_03_profiles.yaml:23:3
   |
23 |   annotations:
   |   ^^^^^^^^^^^
   = help: add include.release.openshift.io/<profile>: "true" for each profile that needs it (self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift); if another tool applies it, it does not belong in the payload

error[delete-value]: invalid delete annotation "release.openshift.io/delete" value: "yes"
 --> testdata/validate/annotations/release-manifests/0000_50_example_04_delete.yaml:8:5
  |
8 |     release.openshift.io/delete: "yes"
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: set release.openshift.io/delete: "true" to have the CVO delete the resource, or remove the annotation

error[major-version-kind]: major version filtering is only supported for feature gates and custom resources
 --> testdata/validate/annotations/release-manifests/0000_50_example_05_major.yaml:8:5
  |
8 |     release.openshift.io/major-version: "4"
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: only FeatureGate (config.openshift.io) and CustomResourceDefinition manifests may carry it: the CVO excludes this document on every cluster

error[major-version-invalid]: invalid included major version "five" in annotation: strconv.ParseUint: parsing "five": invalid syntax
  --> testdata/validate/annotations/release-manifests/0000_50_example_05_major.yaml:16:5
   |
16 |     release.openshift.io/major-version: "4,five"
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = help: use comma-separated major versions, `N` to include or `-N` to exclude, e.g. "4,5" or "-4"

error[major-version-overlap]: inclusion and exclusion requirements overlap: [4]
  --> testdata/validate/annotations/release-manifests/0000_50_example_05_major.yaml:24:5
   |
24 |     release.openshift.io/major-version: "4,-4"
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = help: a version cannot be both required and excluded: remove one of the two

warning[no-profile]: no known cluster profile includes this document (no include.release.openshift.io/<profile>: "true" for self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift): no CVO applies it
 --> testdata/validate/annotations/release-manifests/0000_50_example_06_feature-gate.yaml:6:3
  |
6 |   annotations:
  |   ^^^^^^^^^^^
  = help: add include.release.openshift.io/<profile>: "true" for each profile that needs it (self-managed-high-availability, single-node-developer, ibm-cloud-managed, hypershift); if another tool applies it, it does not belong in the payload

warning[profile-value]: unrecognized value include.release.openshift.io/self-managed-high-availability=false-except-for-the-config-operator
 --> testdata/validate/annotations/release-manifests/0000_50_example_06_feature-gate.yaml:7:5
  |
7 |     include.release.openshift.io/self-managed-high-availability: false-except-for-the-config-operator
  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: only "true" includes the document; any other value is the same as leaving include.release.openshift.io/self-managed-high-availability out

error: testdata/validate/annotations: 6 files, 12 documents: 9 errors, 7 warnings
"#;

#[test]
fn json_output_has_every_field() {
    let (_, out) = run(&["--payload", &case("images"), "-o", "json"]);
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        rows[2],
        serde_json::json!({
            "severity": "error",
            "code": "cluster-operator-versions",
            "file": "testdata/validate/images/release-manifests/0000_50_example-operator_02_clusteroperator.yaml",
            "line": 1,
            "column": 1,
            "message": "Cluster operator example does not declare expected versions",
            "help": "add status.versions, e.g. `- name: operator` with `version: \"0.0.1-snapshot\"`, which oc adm release new replaces with the release version"
        })
    );
    assert_eq!(rows[3]["line"], Value::Null);
}

#[test]
fn junit_output_snapshot() {
    let (code, out) = run(&["--payload", &case("metadata"), "-o", "junit"]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="cvo validate testdata/validate/metadata" tests="3" failures="2" errors="0">
  <testsuite name="cvo validate testdata/validate/metadata" tests="3" failures="2" errors="0" skipped="0">
    <testcase classname="release-manifests" name="testdata/validate/metadata/release-manifests/image-references">
      <failure type="image-references" message="[image-references] image-references is a image.openshift.io/v1 ImageStreamList, not a v1 ImageStream">error[image-references]: image-references is a image.openshift.io/v1 ImageStreamList, not a v1 ImageStream
  help: image-references must be an image.openshift.io/v1 ImageStream whose metadata.name is the release version</failure>
    </testcase>
    <testcase classname="release-manifests" name="testdata/validate/metadata/release-manifests/release-metadata">
      <failure type="release-metadata" message="[release-metadata] unrecognized Cincinnati metadata kind &quot;cincinnati-metadata-v1&quot;">error[release-metadata]: unrecognized Cincinnati metadata kind &quot;cincinnati-metadata-v1&quot;
  help: release-metadata must be JSON with &quot;kind&quot;: &quot;cincinnati-metadata-v0&quot; and a semantic &quot;version&quot;</failure>
    </testcase>
    <testcase classname="release-manifests" name="testdata/validate/metadata/release-manifests/0000_50_example_00_config.yaml"/>
  </testsuite>
</testsuites>
"#
    );
}

#[test]
fn github_output_snapshot() {
    let (code, out) = run(&["--payload", &case("capabilities"), "-o", "github"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6);
    assert!(
        lines[0].starts_with(
            "::warning file=testdata/validate/capabilities/release-manifests/0000_50_console-operator_02_rbac.yaml,line=10,col=1,title=partial-capability::RoleBinding openshift-console-operator/console-operator carries no capability"
        ),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("%0Ahelp: add capability.openshift.io/name: Console"));
    assert_eq!(
        lines[5],
        "ok: testdata/validate/capabilities: 7 files, 9 documents: 0 errors, 5 warnings"
    );
    // Denied warnings become errors in the annotations too.
    let (_, out) = run(&[
        "--payload",
        &case("capabilities"),
        "-o",
        "github",
        "--deny-warnings",
    ]);
    assert!(out.starts_with("::error file="), "{out}");
}

#[test]
fn usage_errors_exit_2() {
    let (code, _) = run(&["-o", "xml"]);
    assert_eq!(code, 2);
}

#[test]
fn a_missing_payload_directory_exits_1_with_a_message() {
    let output = cvo()
        .args(["validate", "--payload", "testdata/validate/nope"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("no such directory"), "{stderr}");
}

#[test]
fn a_plain_directory_is_checked_as_the_cvo_reads_it() {
    // The good payload's release-manifests/ as a plain directory: its metadata files are
    // then never read, and paths have no directory part.
    let dir = case("good/release-manifests");
    let (code, rows) = findings(&dir, &[]);
    assert_eq!(
        rows,
        vec![
            row("ignored-file", "image-references", None),
            row("ignored-file", "release-metadata", None),
        ]
    );
    assert_eq!(code, 0);
}

#[test]
fn inclusion_flags_narrow_the_configurations_checked() {
    let rm = "release-manifests/0000_50_example_05_elsewhere.yaml";
    let cross_file = |rows: &[Row]| {
        rows.iter()
            .any(|r| r.0 == "duplicate-resource" && r.1 == rm)
    };
    let (_, rows) = findings(&case("documents"), &[]);
    assert!(cross_file(&rows));
    // Neither copy is in single-node-developer.
    let (_, rows) = findings(
        &case("documents"),
        &["--cluster-profile", "single-node-developer"],
    );
    assert!(!cross_file(&rows), "{rows:?}");
    // An inclusion file's knownCapabilities declares names openshift/api does not have yet.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("inclusion.json");
    std::fs::write(
        &file,
        r#"{"capabilities": {"knownCapabilities": ["NoSuchThing"], "enabledCapabilities": []}}"#,
    )
    .unwrap();
    let unknown = |rows: &[Row]| rows.iter().filter(|r| r.0 == "unknown-capability").count();
    assert_eq!(unknown(&findings(&case("annotations"), &[]).1), 1);
    let (_, rows) = findings(
        &case("annotations"),
        &["--inclusion", file.to_str().unwrap()],
    );
    assert_eq!(unknown(&rows), 0);
}

#[test]
fn the_bundled_payload_validates() {
    let (code, out) = run(&["-o", "json"]);
    assert_eq!(code, 0);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let codes: Vec<&str> = rows.iter().map(|r| r["code"].as_str().unwrap()).collect();
    // openshift-machine-api holds baremetal and MachineAPI objects, so its Namespace rightly
    // carries no capability: the bundled payload is clean.
    assert!(codes.is_empty(), "{codes:?}");
}

fn corpus_payload() -> Option<PathBuf> {
    Some(support::corpus()?.join("openshift-payload"))
}

/// The real payload: zero errors, and every warning accounted for.
#[test]
fn the_real_corpus_has_no_errors_and_known_warnings() {
    let Some(dir) = corpus_payload() else {
        return;
    };
    let dir = dir.to_str().unwrap().to_string();
    let (code, rows) = findings(&dir, &[]);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *counts.entry(r.0.as_str()).or_insert(0) += 1;
    }
    let expected = BTreeMap::from([
        // 0000_50_olm_01-networkpolicies.yaml: two OLM NetworkPolicies (capability
        // OperatorLifecycleManager) live in openshift-marketplace, whose Namespace carries
        // `marketplace`. OLM without marketplace is an allowed configuration, and then the CVO
        // cannot create them (namespace not found): a real cross-capability reference.
        ("capability-reference", 2),
        // The corpus is a repository of manifests, not a release image: oc adm release new
        // writes release-metadata and image-references when it builds one (SOURCES.md).
        ("missing-metadata", 2),
        // 13 documents with no annotations at all: the nine `*-hypershift.yaml` files of the
        // storage and CSI snapshot operators (HyperShift's control-plane operator applies them,
        // not the CVO) and four insights-operator NetworkPolicies. No CVO applies any of them;
        // that is deliberate for the first nine and worth a look for the last four.
        ("no-profile", 13),
        // Components that are mostly one capability ship documents without it, which stay
        // when the capability is disabled: five RBAC objects of the CSI snapshot operator,
        // the storage operator's ValidatingAdmissionPolicy and binding, a console ClusterRole
        // and StorageVersionMigration, and nine payload ImageStreams (cli, must-gather, ...)
        // of the samples operator, which are kept on purpose. A linter cannot tell intent;
        // the partial labelling the enhancement warns about looks exactly like this.
        ("partial-capability", 18),
        // 0000_50_cluster-csi-snapshot-controller-operator_04_serviceaccount.yaml writes
        // capability.openshift.io/name twice with the same value: harmless, but yamllint
        // (which upstream CI runs on the CVO's manifests) rejects it.
        ("redundant-key", 1),
    ]);
    assert_eq!(counts, expected, "{rows:#?}");
    assert_eq!(code, 0, "warnings only");
}

#[test]
fn the_junit_report_of_the_corpus_has_a_case_per_file() {
    let Some(dir) = corpus_payload() else {
        return;
    };
    let (code, out) = run(&["--payload", dir.to_str().unwrap(), "-o", "junit"]);
    assert_eq!(code, 0);
    // 753 files plus the two missing metadata files, none failing.
    assert!(
        out.contains(r#"tests="755" failures="0" errors="0""#),
        "{}",
        &out[..300]
    );
    assert_eq!(out.matches("<testcase ").count(), 755);
    assert!(Path::new(&dir).is_dir());
}
