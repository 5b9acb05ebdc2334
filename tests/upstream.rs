//! Differential test: `cvo` against the upstream oracle (`hack/upstream/`: openshift/library-go's
//! pkg/manifest and the CVO's LoadUpdate), document by document: the inclusion decision, the
//! reason, the raw JSON, and the version hash; and `cvo render --format json` file by file.
//!
//! Cases: the real corpus under several cluster configurations, the bundled payloads, and
//! generated payloads of small documents in varied YAML and JSON forms (`support/forms.rs`).
//!
//! The oracle is built with Go by `hack/upstream/build.sh` (cached). Without Go, or when the
//! build fails, the tests are skipped with a message, unless `CVO_REQUIRE_UPSTREAM=1` (CI).

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cvo::capability::{CapabilitiesSpec, Capability, Registry, set_capabilities};
use cvo::payload::{LoadOptions, Payload, parse_release_metadata, read_directory};
use serde_json::Value;

/// The oracle's path, built once per test run; `None` (skip) when it cannot be built.
fn oracle() -> Option<&'static Path> {
    static ORACLE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = ORACLE.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/upstream/build.sh");
        let out = Command::new(&script)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(PathBuf::from(path))
    });
    match built {
        Ok(path) => Some(path),
        Err(e) => {
            assert!(
                std::env::var("CVO_REQUIRE_UPSTREAM").as_deref() != Ok("1"),
                "cannot build the upstream oracle and CVO_REQUIRE_UPSTREAM=1: {e}"
            );
            eprintln!(
                "skipping: cannot build the upstream oracle ({e}); set CVO_REQUIRE_UPSTREAM=1 to fail instead"
            );
            None
        }
    }
}

/// A cluster configuration, as both programs' flags spell it.
#[derive(Debug, Clone)]
struct Case {
    label: String,
    exclude: Option<&'static str>,
    feature_set: &'static str,
    gates: Vec<&'static str>,
    profile: &'static str,
    baseline: &'static str,
    additional: Vec<&'static str>,
    major: Option<u64>,
    release_image: Option<&'static str>,
}

impl Case {
    fn new(label: &str) -> Case {
        Case {
            label: label.into(),
            exclude: None,
            feature_set: "",
            gates: vec![],
            profile: "self-managed-high-availability",
            baseline: "vCurrent",
            additional: vec![],
            major: None,
            release_image: None,
        }
    }

    fn cvo_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--feature-set={}", self.feature_set),
            format!("--cluster-profile={}", self.profile),
            format!("--capabilities-baseline={}", self.baseline),
        ];
        if !self.gates.is_empty() {
            args.push(format!("--feature-gates={}", self.gates.join(",")));
        }
        if !self.additional.is_empty() {
            args.push(format!(
                "--additional-capabilities={}",
                self.additional.join(",")
            ));
        }
        args.extend(self.common_args());
        args
    }

    /// The oracle takes the known and enabled capabilities; cvo's own capability computation
    /// (what `--capabilities-baseline` does) over `registry` gives them.
    fn oracle_args(&self, registry: &Registry) -> Vec<String> {
        let gates: BTreeSet<String> = self.gates.iter().map(|g| g.to_string()).collect();
        let spec = CapabilitiesSpec {
            baseline_capability_set: Some(self.baseline.into()),
            additional_enabled_capabilities: self
                .additional
                .iter()
                .map(|c| Capability::from(*c))
                .collect(),
        };
        let filter = set_capabilities(registry, Some(&spec), &[], &gates).filter();
        let names = |set: &BTreeSet<Capability>| {
            set.iter()
                .map(|c| c.as_str().to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut args = vec![
            format!("--feature-set={}", self.feature_set),
            format!("--cluster-profile={}", self.profile),
            format!("--feature-gates={}", self.gates.join(",")),
            format!("--known-capabilities={}", names(&filter.known_capabilities)),
            format!(
                "--enabled-capabilities={}",
                names(&filter.enabled_capabilities)
            ),
        ];
        args.extend(self.common_args());
        args
    }

    fn common_args(&self) -> Vec<String> {
        let mut args = vec![];
        if let Some(exclude) = self.exclude {
            args.push(format!("--exclude={exclude}"));
        }
        if let Some(major) = self.major {
            args.push(format!("--major-version={major}"));
        }
        if let Some(image) = self.release_image {
            args.push(format!("--release-image={image}"));
        }
        args
    }
}

fn run(mut command: Command) -> Result<Vec<u8>, String> {
    let out = command
        .env_remove("CLUSTER_PROFILE")
        .env("RUST_LOG", "error")
        .output()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn cvo(subcommand: &str, root: &Path, case: &Case, extra: &[&str]) -> Result<Vec<u8>, String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cvo"));
    command
        .arg(subcommand)
        .arg("--payload")
        .arg(root)
        .args(case.cvo_args())
        .args(extra);
    run(command)
}

/// The capabilities a CVO running the payload at `root` knows: openshift/api's and those its
/// release-metadata declares (the bundled 4.18.0 declares DeploymentTargets). The oracle is
/// told them, as a CVO that knows them would be.
fn registry(root: &Path) -> Registry {
    let declared = std::fs::read(root.join("release-manifests/release-metadata"))
        .ok()
        .and_then(|bytes| parse_release_metadata(&bytes).ok())
        .map(|(release, _)| release.capabilities)
        .unwrap_or_default();
    Registry::standard().with_declared(&declared)
}

fn upstream(mode: &str, root: &Path, case: &Case, extra: &[&str]) -> Result<Vec<u8>, String> {
    let mut command = Command::new(oracle().expect("checked by the caller"));
    command
        .arg(mode)
        .arg("--payload")
        .arg(root)
        .args(case.oracle_args(&registry(root)))
        .args(extra);
    run(command)
}

/// The first difference of two texts, with some context.
fn first_difference(expected: &str, actual: &str) -> String {
    let at = expected
        .bytes()
        .zip(actual.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let window = |s: &str| {
        let mut start = at.saturating_sub(80);
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 80).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        format!("{:?}", &s[start..end])
    };
    format!(
        "at byte {at}: upstream …{}… cvo …{}…",
        window(expected),
        window(actual)
    )
}

/// Everything the two programs say about one payload under one configuration; the mismatches.
fn compare(root: &Path, case: &Case, render: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let label = &case.label;
    let up = match upstream("explain", root, case, &[]) {
        Ok(out) => serde_json::from_slice::<Value>(&out).unwrap(),
        Err(e) => {
            // Every payload here is one the CVO loads: a failure is the test's own.
            let cvo = match cvo("explain", root, case, &["-o", "json"]) {
                Ok(_) => "cvo loads it",
                Err(_) => "so does cvo",
            };
            return vec![format!("{label}: upstream fails to load ({cvo}): {e}")];
        }
    };
    let rows: Vec<Value> = match cvo("explain", root, case, &["-o", "json"]) {
        Ok(out) => serde_json::from_slice(&out).unwrap(),
        Err(e) => return vec![format!("{label}: upstream loads, cvo fails: {e}")],
    };
    let documents = up["documents"].as_array().unwrap();
    let release_image = up["releaseImage"].as_str().unwrap();
    let input = read_directory(root).unwrap();
    let options = LoadOptions {
        release_image: Some(release_image.to_string()),
        cluster_profile: case.profile.to_string(),
        strict_templates: false,
    };
    let payload = Payload::from_input(input, &options).unwrap();
    let key = |v: &Value| {
        (
            v["dir"].as_str().unwrap().to_string(),
            v["file"].as_str().unwrap().to_string(),
            v["index"].as_u64().unwrap(),
        )
    };
    if documents.len() != rows.len() || documents.len() != payload.manifests.len() {
        problems.push(format!(
            "{label}: upstream has {} documents, cvo explain {}, cvo's payload {}",
            documents.len(),
            rows.len(),
            payload.manifests.len()
        ));
    }
    for ((u, c), m) in documents.iter().zip(&rows).zip(&payload.manifests) {
        let where_ = format!("{label}: {}/{}#{}", u["dir"], u["file"], u["index"]);
        let loaded = (m.dir.to_string(), m.file.to_string(), m.index as u64);
        if key(u) != key(c) || key(u) != loaded {
            problems.push(format!(
                "{where_}: documents out of step: upstream {:?}, cvo explain {:?}, cvo {}#{}",
                key(u),
                key(c),
                m.path(),
                m.index
            ));
            break;
        }
        if u["included"] != c["included"] || u["reason"] != c["reason"] {
            problems.push(format!(
                "{where_}: upstream included={} reason={}, cvo included={} reason={}",
                u["included"], u["reason"], c["included"], c["reason"]
            ));
        }
        let raw = String::from_utf8_lossy(&m.raw);
        let expected = u["raw"].as_str().unwrap();
        if raw != expected {
            problems.push(format!(
                "{where_}: raw JSON differs {}",
                first_difference(expected, &raw)
            ));
        }
    }
    let up_hash = up["versionHash"].as_str().unwrap();
    match cvo("hash", root, case, &[]) {
        Ok(out) => {
            let hash = String::from_utf8_lossy(&out).trim().to_string();
            if hash != up_hash {
                problems.push(format!(
                    "{label}: versionHash upstream {up_hash}, cvo {hash}"
                ));
            }
        }
        Err(e) => problems.push(format!("{label}: cvo hash: {e}")),
    }
    if render {
        let out = tempfile::tempdir().unwrap();
        let (cvo_dir, up_dir) = (out.path().join("cvo"), out.path().join("upstream"));
        let cvo_out = cvo(
            "render",
            root,
            case,
            &[
                "--format",
                "json",
                "--output-dir",
                cvo_dir.to_str().unwrap(),
            ],
        );
        let up_out = upstream(
            "render",
            root,
            case,
            &["--output-dir", up_dir.to_str().unwrap()],
        );
        match (cvo_out, up_out) {
            (Ok(_), Ok(_)) => {
                // Upstream creates no directory when nothing is kept.
                // `.cvo-render` is cvo's record of what it wrote (so that it refuses to replace
                // a directory it did not write); manifests are the rest.
                let files = |dir: PathBuf| match dir.is_dir() {
                    true => (support::tree_files(&dir).into_iter())
                        .filter(|(name, _)| name.as_os_str() != ".cvo-render")
                        .collect(),
                    false => vec![],
                };
                let (c, u) = (
                    files(cvo_dir.join("manifests")),
                    files(up_dir.join("manifests")),
                );
                let names =
                    |t: &[(PathBuf, Vec<u8>)]| t.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
                if names(&c) != names(&u) {
                    problems.push(format!("{label}: render writes other files than upstream"));
                }
                for ((name, cb), (_, ub)) in c.iter().zip(&u) {
                    if cb != ub {
                        problems.push(format!(
                            "{label}: render {}: {}",
                            name.display(),
                            first_difference(
                                &String::from_utf8_lossy(ub),
                                &String::from_utf8_lossy(cb)
                            )
                        ));
                    }
                }
            }
            (Err(e), Ok(_)) => {
                problems.push(format!("{label}: cvo render fails, upstream renders: {e}"))
            }
            (Ok(_), Err(e)) => {
                problems.push(format!("{label}: upstream render fails, cvo renders: {e}"))
            }
            (Err(_), Err(_)) => {}
        }
    }
    problems
}

fn check(problems: Vec<String>) {
    if !problems.is_empty() {
        let shown: Vec<&String> = problems.iter().take(40).collect();
        panic!(
            "{} difference(s) between cvo and upstream:\n{}",
            problems.len(),
            shown
                .iter()
                .map(|p| format!("  {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// A copy of a corpus payload with the `release-metadata` it lacks (so that, as in a real
/// release image, templates see a version and the major-version filter is on).
fn corpus_payload(version: &str) -> Option<tempfile::TempDir> {
    let corpus = support::corpus()?;
    let dir = tempfile::tempdir().unwrap();
    for sub in ["manifests", "release-manifests"] {
        support::copy_dir(
            &corpus.join("openshift-payload").join(sub),
            &dir.path().join(sub),
        );
    }
    std::fs::write(
        dir.path().join("release-manifests/release-metadata"),
        format!("{{\"kind\":\"cincinnati-metadata-v0\",\"version\":\"{version}\"}}"),
    )
    .unwrap();
    Some(dir)
}

#[test]
fn corpus_matches_upstream() {
    if oracle().is_none() {
        return;
    }
    let Some(payload) = corpus_payload("4.18.0") else {
        return;
    };
    let root = payload.path();
    let mut default = Case::new("corpus/default");
    default.release_image = Some("quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64");
    // The discrepancy this test was written for: a block scalar on the last line of a file
    // without a final newline (cvo said n6NlUw7a9Zg=).
    let hash = cvo("hash", root, &default, &[]).unwrap();
    assert_eq!(String::from_utf8_lossy(&hash).trim(), "wubifXWv73o=");

    let mut none = Case::new("corpus/baseline-None");
    none.baseline = "None";
    none.additional = vec!["Console", "Ingress"];
    let mut snd = Case::new("corpus/single-node-developer");
    snd.profile = "single-node-developer";
    let mut hypershift = Case::new("corpus/hypershift");
    hypershift.profile = "hypershift";
    let mut tech = Case::new("corpus/TechPreviewNoUpgrade");
    tech.feature_set = "TechPreviewNoUpgrade";
    let mut gates = Case::new("corpus/feature-gates");
    gates.gates = vec![
        "GatewayAPIWithoutOLM",
        "InsightsConfig",
        "ClusterUpdateAcceptRisks",
    ];
    let mut hosted = Case::new("corpus/exclude+major-5");
    hosted.exclude = Some("internal-openshift-hosted");
    hosted.major = Some(5);
    let mut problems = compare(root, &default, true);
    for case in [none, snd, hypershift, tech, gates, hosted] {
        let render = case.label.ends_with("None");
        problems.extend(compare(root, &case, render));
    }
    check(problems);
}

#[test]
fn bundled_payloads_match_upstream() {
    if oracle().is_none() {
        return;
    }
    let mut problems = Vec::new();
    for version in ["4.17.0", "4.18.0"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("payloads")
            .join(version);
        let default = Case::new(&format!("{version}/default"));
        let mut tech = Case::new(&format!("{version}/TechPreviewNoUpgrade+None"));
        tech.feature_set = "TechPreviewNoUpgrade";
        tech.baseline = "None";
        problems.extend(compare(&root, &default, true));
        problems.extend(compare(&root, &tech, false));
    }
    check(problems);
}

/// The configurations generated payloads are read under, two per seed.
fn generated_cases(seed: u64) -> Vec<Case> {
    let all = || -> Vec<Case> {
        let mut cases = vec![Case::new("default")];
        let mut c = Case::new("single-node-developer/TechPreview");
        c.profile = "single-node-developer";
        c.feature_set = "TechPreviewNoUpgrade";
        cases.push(c);
        let mut c = Case::new("gates-A-C/None+Console");
        c.gates = vec!["GateA", "GateC"];
        c.baseline = "None";
        c.additional = vec!["Console", "Insights"];
        cases.push(c);
        let mut c = Case::new("ibm-cloud-managed/exclude/gate-B");
        c.profile = "ibm-cloud-managed";
        c.exclude = Some("internal-openshift-hosted");
        c.gates = vec!["GateB"];
        cases.push(c);
        let mut c = Case::new("DevPreview/major-5/v4.14");
        c.feature_set = "DevPreviewNoUpgrade";
        c.major = Some(5);
        c.baseline = "v4.14";
        cases.push(c);
        let mut c = Case::new("OKD/all-gates/release-image");
        c.feature_set = "OKD";
        c.gates = support::forms::GATES.to_vec();
        c.release_image = Some("registry.example.com/ocp/release@sha256:0123");
        cases.push(c);
        let mut c = Case::new("CustomNoUpgrade/major-4");
        c.feature_set = "CustomNoUpgrade";
        c.major = Some(4);
        cases.push(c);
        cases
    };
    let cases = all();
    let first = (seed as usize * 2) % cases.len();
    [first, (first + 1) % cases.len()]
        .iter()
        .map(|&i| {
            let mut case = cases[i].clone();
            case.label = format!("seed {seed}/{}", case.label);
            case
        })
        .collect()
}

const SEEDS: u64 = 10;
const DOCUMENTS_PER_SEED: usize = 1100;

#[test]
fn generated_payloads_match_upstream() {
    if oracle().is_none() {
        return;
    }
    let mut problems = Vec::new();
    let mut documents = 0;
    for seed in 1..=SEEDS {
        let payload = support::forms::forms_payload(seed, DOCUMENTS_PER_SEED);
        documents += payload.documents;
        let dir = tempfile::tempdir().unwrap();
        payload.write(dir.path()).unwrap();
        for (i, case) in generated_cases(seed).iter().enumerate() {
            let found = compare(dir.path(), case, i == 0);
            if !found.is_empty() && std::env::var_os("CVO_KEEP_FAILED").is_some() {
                let keep = std::env::temp_dir().join(format!("cvo-upstream-seed-{seed}"));
                let _ = std::fs::remove_dir_all(&keep);
                support::copy_dir(dir.path(), &keep);
                eprintln!("kept seed {seed} in {}", keep.display());
            }
            problems.extend(found);
        }
    }
    eprintln!("compared {documents} generated documents over {SEEDS} seeds");
    assert!(documents >= 10_000, "{documents} generated documents");
    check(problems);
}

/// Files at the edges of what the decoder takes, one payload each (a file that fails fails the
/// whole payload): both programs must load the same ones, and read those the same way.
#[test]
fn odd_files_match_upstream() {
    if oracle().is_none() {
        return;
    }
    let doc = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"
        )
    };
    let loads: Vec<(&str, Vec<u8>)> = vec![
        ("a null document", format!("~\n---\n{}", doc("a")).into()),
        (
            "a `null` document",
            format!("null\n---\n{}", doc("a")).into(),
        ),
        ("only comments", b"# c\n# d\n".to_vec()),
        ("an empty file", vec![]),
        (
            "`...` ends",
            format!("{}...\n---\n{}", doc("a"), doc("b")).into(),
        ),
        (
            "a 70,000-character line",
            format!("{}data:\n  k: {}\n", doc("a"), "x".repeat(70_000)).into(),
        ),
        ("CR line ends only", doc("a").replace('\n', "\r").into()),
        (
            "annotations as a list",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations: [a]\n".to_vec(),
        ),
        (
            "a null annotation",
            format!("{}    x: ~\n", doc("a")).into(),
        ),
        (
            "a number as namespace",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: 5\n".to_vec(),
        ),
        (
            "a merge key list",
            format!(
                "{}data:\n  b: &b {{x: 1}}\n  c:\n    <<: [*b]\n    y: 2\n",
                doc("a")
            )
            .into(),
        ),
        (
            "1e400 and y",
            format!("{}data:\n  f: 1e400\n  y: n\n", doc("a")).into(),
        ),
    ];
    let fails: Vec<(&str, Vec<u8>)> = vec![
        (
            "a scalar on the separator line",
            b"--- |\n  text\n".to_vec(),
        ),
        ("a sequence document", b"- a\n- b\n".to_vec()),
        (
            "a List",
            b"apiVersion: v1\nkind: List\nitems: []\n".to_vec(),
        ),
        (
            "a resource twice in a file",
            format!("{}---\n{}", doc("a"), doc("a")).into(),
        ),
        (
            "no name",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n".to_vec(),
        ),
        (
            "a number as name",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 5\n".to_vec(),
        ),
        (
            "a tab as indentation",
            format!("{}data:\n\tk: v\n", doc("a")).into(),
        ),
        (
            "JSON with trailing text",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}} x"#.to_vec(),
        ),
        ("a JSON array", br#"[{"apiVersion":"v1"}]"#.to_vec()),
        (
            "a %YAML directive",
            format!("%YAML 1.1\n---\n{}", doc("a")).into(),
        ),
        (
            "a number as apiVersion",
            b"apiVersion: 1\nkind: ConfigMap\nmetadata:\n  name: a\n".to_vec(),
        ),
        (
            "\\/ in a double-quoted scalar",
            format!("{}data:\n  k: \"a\\/b\"\n", doc("a")).into(),
        ),
        ("+.inf", format!("{}data:\n  k: +.inf\n", doc("a")).into()),
    ];
    let mut problems = Vec::new();
    for (expect_load, (label, contents)) in loads
        .into_iter()
        .map(|c| (true, c))
        .chain(fails.into_iter().map(|c| (false, c)))
    {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("release-manifests")).unwrap();
        std::fs::write(
            dir.path().join("release-manifests/0000_50_odd.yaml"),
            contents,
        )
        .unwrap();
        let case = Case::new(label);
        if expect_load {
            problems.extend(compare(dir.path(), &case, true));
        } else {
            let up = upstream("explain", dir.path(), &case, &[]);
            let ours = cvo("explain", dir.path(), &case, &["-o", "json"]);
            match (up, ours) {
                (Err(_), Err(_)) => {}
                (up, ours) => problems.push(format!(
                    "{label}: expected both to refuse it; upstream loads: {}, cvo loads: {}",
                    up.is_ok(),
                    ours.is_ok()
                )),
            }
        }
    }
    check(problems);
}

/// `manifests/` files are Go templates. cvo implements the part of `text/template` the CVO's
/// own manifests use (`src/payload/template.rs`); within it, the output must be upstream's, and
/// a template upstream cannot render skips its file in both (a warning at load; render fails).
#[test]
fn templates_match_upstream() {
    if oracle().is_none() {
        return;
    }
    let templates = [
        ("trim markers", "  a: '{{- .ReleaseImage -}}'\n"),
        ("a comment", "  a: x{{/* c */}}y\n"),
        ("the profile", "  a: {{ .ClusterProfile }}\n"),
        ("an image", "  a: '{{ index .Images \"cli\" }}'\n"),
        ("a missing image", "  a: '{{index .Images \"nope\"}}'\n"),
        ("escaped braces", "  a: '{{ \"{{\" }}x{{ \"}}\" }}'\n"),
        ("a raw string", "  a: '{{ `{{raw}}` }}'\n"),
        ("an unknown field", "  a: '{{ .Future }}'\n"),
        ("an unclosed action", "  a: '{{ .ReleaseImage '\n"),
        ("no final newline", "  a: |\n    {{.ReleaseImage}}"),
    ];
    let mut problems = Vec::new();
    for (label, body) in templates {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["manifests", "release-manifests"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(
            root.join("manifests/0000_00_template.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\ndata:\n{body}"
            ),
        )
        .unwrap();
        std::fs::write(
            root.join("release-manifests/release-metadata"),
            r#"{"kind":"cincinnati-metadata-v0","version":"4.18.0"}"#,
        )
        .unwrap();
        std::fs::write(
            root.join("release-manifests/image-references"),
            "kind: ImageStream\napiVersion: image.openshift.io/v1\nmetadata:\n  name: 4.18.0\nspec:\n  tags:\n  - name: cli\n    from:\n      kind: DockerImage\n      name: quay.io/x/cli@sha256:1\n",
        )
        .unwrap();
        let mut case = Case::new(&format!("template: {label}"));
        case.release_image = Some("quay.io/openshift-release-dev/ocp-release@sha256:0123");
        problems.extend(compare(root, &case, true));
    }
    check(problems);
}
