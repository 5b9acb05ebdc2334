//! Synthetic payloads of small documents written in as many YAML and JSON forms as real
//! manifests use, for the differential test against upstream (`tests/upstream.rs`) and for
//! `cargo run --example gen-payload -- OUT --forms` (which includes this file).
//!
//! Every document is valid for both readers; what varies is how it is written: block scalars
//! (`|`, `|-`, `|+`, `>`, `>-`, `>+`, indentation indicators, trailing blank lines, at the end of a
//! file with and without a final newline), plain, single- and double-quoted scalars with escapes,
//! YAML 1.1 booleans, numbers and timestamps, anchors, aliases and merge keys, flow collections,
//! comments, non-string keys, `...` document ends, JSON documents and JSON streams, byte-order
//! marks, CRLF line ends and multi-document files with empty documents. The annotations vary
//! too: cluster profiles, feature sets, feature gates, major versions, capabilities, exclusion,
//! quoting, flow style, and annotations that are missing, null, empty or not all strings.
//!
//! The output depends only on the seed and the document count (xorshift64*; std only).

use std::fmt::Write as _;

/// One generated file: `dir` is `manifests` or `release-manifests`.
pub struct GeneratedFile {
    pub dir: &'static str,
    pub name: String,
    pub contents: Vec<u8>,
}

/// A generated payload root: its files (with `release-metadata` and `image-references`), and
/// how many non-empty documents they hold.
pub struct FormsPayload {
    pub files: Vec<GeneratedFile>,
    pub documents: usize,
}

impl FormsPayload {
    pub fn write(&self, root: &std::path::Path) -> std::io::Result<()> {
        for dir in ["manifests", "release-manifests"] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        for file in &self.files {
            std::fs::write(root.join(file.dir).join(&file.name), &file.contents)?;
        }
        Ok(())
    }
}

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

pub const PROFILES: &[&str] = &[
    "self-managed-high-availability",
    "single-node-developer",
    "ibm-cloud-managed",
];
const PROFILE_VALUES: &[&str] = &["true", "false", "false-except-for-the-config-operator"];
const FEATURE_SETS: &[&str] = &[
    "Default",
    "TechPreviewNoUpgrade",
    "DevPreviewNoUpgrade",
    "CustomNoUpgrade",
    "OKD",
    "Bogus",
    "",
];
pub const GATES: &[&str] = &["GateA", "GateB", "GateC"];
const CAPABILITIES: &[&str] = &[
    "Console",
    "Insights",
    "baremetal",
    "marketplace",
    "openshift-samples",
    "Storage",
    "MachineAPI",
    "ImageRegistry",
    "Ingress",
    "NoSuchCapability",
];
const MAJOR_VERSIONS: &[&str] = &[
    "4", "5", "-4", "-5", "4,5", "4,-5", "5,-4", "6", "x", "4,-4",
];
const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "key", "value", "café", "naïve", "日本", "😀", "a<b>&c",
    "x#y", "50%", "@at", "`tick`", "it's",
];
/// Plain scalars that YAML 1.1 (go-yaml v2) resolves to something other than a string, or
/// nearly does.
const PLAIN_SPECIALS: &[&str] = &[
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "n",
    "true",
    "False",
    "~",
    "null",
    "Null",
    "42",
    "-7",
    "+12",
    "0x1F",
    "017",
    "0o17",
    "1_000",
    "0b1010",
    "3.14",
    "1e3",
    "1.0",
    ".5",
    "-.5",
    "1e-7",
    "12e03",
    "6.02e+23",
    "100000000000000000000",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "123456789012345678901234",
    "0.1",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2002-12-14 21:59:43.10 -5",
    "190:20:30",
    "1:2",
    "=",
    "<<",
    "0.0",
    "-0",
    "007",
    "1.",
    "Yes",
    "NO",
    "On",
    "1e400",
    "-1e400",
    "1e-400",
    "!!str 123",
    "!!int \"5\"",
    "!!float 1",
    "!!bool yes",
    "!!binary aGVsbG8=",
    "!!timestamp 2001-12-14",
];
const DQ_ESCAPES: &[&str] = &[
    "\\t",
    "\\n",
    "\\\"",
    "\\\\",
    "\\'",
    "\\u00e9",
    "\\x41",
    "\\U0001F600",
    "\\N",
    "\\_",
    "\\L",
    "\\P",
    "\\0",
    "\\a",
    "\\e",
    "\\ ",
    "\\r",
    "\\b",
    "\\v",
    "\\f",
];

struct Gen {
    rng: Rng,
    seed: u64,
    next_name: usize,
    anchors: Vec<String>,
    documents: usize,
}

/// A payload of about `documents` non-empty documents (exactly that many in
/// `release-manifests/`, plus a few templates in `manifests/`).
pub fn forms_payload(seed: u64, documents: usize) -> FormsPayload {
    let mut g = Gen {
        rng: Rng::new(seed),
        seed,
        next_name: 0,
        anchors: Vec::new(),
        documents: 0,
    };
    let version = if g.rng.chance(20) { "5.0.0" } else { "4.18.0" };
    let mut files = vec![
        GeneratedFile {
            dir: "release-manifests",
            name: "release-metadata".into(),
            contents: format!("{{\"kind\":\"cincinnati-metadata-v0\",\"version\":\"{version}\"}}")
                .into_bytes(),
        },
        GeneratedFile {
            dir: "release-manifests",
            name: "image-references".into(),
            contents: format!(
                "kind: ImageStream\napiVersion: image.openshift.io/v1\nmetadata:\n  name: {version}\nspec:\n  tags:\n  - name: cli\n    from:\n      kind: DockerImage\n      name: quay.io/example/cli@sha256:{:064x}\n",
                seed
            )
            .into_bytes(),
        },
    ];
    for i in 0..3 {
        let text = g.template_document(i);
        g.documents += 1;
        files.push(GeneratedFile {
            dir: "manifests",
            name: format!("0000_00_cluster-version-operator_{i:02}_template.yaml"),
            contents: text.into_bytes(),
        });
    }
    let mut file_no = 0;
    let mut remaining = documents;
    while remaining > 0 {
        let count = (1 + g.rng.below(4)).min(remaining);
        remaining -= count;
        let json = g.rng.chance(8);
        let (name, contents) = if json {
            g.json_file(file_no, count)
        } else {
            g.yaml_file(file_no, count)
        };
        files.push(GeneratedFile {
            dir: "release-manifests",
            name,
            contents,
        });
        file_no += 1;
    }
    FormsPayload {
        files,
        documents: g.documents,
    }
}

impl Gen {
    fn name(&mut self) -> String {
        self.next_name += 1;
        format!("f{}-{}", self.seed, self.next_name)
    }

    fn word(&mut self) -> &'static str {
        self.rng.pick(WORDS)
    }

    fn template_document(&mut self, i: usize) -> String {
        let name = self.name();
        let body = match i {
            0 => "  image: '{{.ReleaseImage}}'\n  profile: {{ .ClusterProfile }}\n".to_string(),
            1 => "  cli: \"{{index .Images \"cli\"}}\"\n  missing: \"{{index .Images \"nope\"}}\"\n"
                .to_string(),
            _ => "  rule: '{{ \"{{ $labels.instance }}\" }}'\n  both: {{.ReleaseImage}}/{{.ClusterProfile}}"
                .to_string(),
        };
        let ann = self.annotations();
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: openshift-cluster-version\n{ann}data:\n{body}"
        )
    }

    /// `metadata.annotations` (with its key line, at column 2), or nothing.
    fn annotations(&mut self) -> String {
        let roll = self.rng.below(100);
        if roll < 2 {
            return String::new();
        }
        if roll < 4 {
            return format!("  annotations:{}\n", self.rng.pick(&["", " ~", " null"]));
        }
        if roll < 5 {
            return "  annotations: {}\n".to_string();
        }
        let mut entries: Vec<(String, String)> = Vec::new();
        for profile in PROFILES {
            let p = if *profile == PROFILES[0] { 85 } else { 40 };
            if self.rng.chance(p) {
                let value = if self.rng.chance(85) {
                    "true"
                } else {
                    self.rng.pick(PROFILE_VALUES)
                };
                entries.push((
                    format!("include.release.openshift.io/{profile}"),
                    value.into(),
                ));
            }
        }
        if self.rng.chance(15) {
            let n = 1 + self.rng.below(2);
            let sets: Vec<&str> = (0..n).map(|_| self.rng.pick(FEATURE_SETS)).collect();
            entries.push(("release.openshift.io/feature-set".into(), sets.join(",")));
        }
        if self.rng.chance(12) {
            let n = 1 + self.rng.below(2);
            let gates: Vec<String> = (0..n)
                .map(|_| {
                    let gate = self.rng.pick(GATES);
                    let minus = if self.rng.chance(40) { "-" } else { "" };
                    let space = if self.rng.chance(20) { " " } else { "" };
                    format!("{space}{minus}{gate}")
                })
                .collect();
            entries.push(("release.openshift.io/feature-gate".into(), gates.join(",")));
        }
        if self.rng.chance(10) {
            entries.push((
                "release.openshift.io/major-version".into(),
                self.rng.pick(MAJOR_VERSIONS).into(),
            ));
        }
        if self.rng.chance(45) {
            let value = match self.rng.below(10) {
                0 => String::new(),
                1 => format!("{}+", self.rng.pick(CAPABILITIES)),
                2 | 3 => format!(
                    "{}+{}",
                    self.rng.pick(CAPABILITIES),
                    self.rng.pick(CAPABILITIES)
                ),
                _ => self.rng.pick(CAPABILITIES).to_string(),
            };
            entries.push(("capability.openshift.io/name".into(), value));
        }
        if self.rng.chance(8) {
            entries.push((
                "exclude.release.openshift.io/internal-openshift-hosted".into(),
                self.rng.pick(&["true", "false", "True"]).into(),
            ));
        }
        if self.rng.chance(20) {
            entries.push(("example.com/note".into(), self.word().into()));
        }
        if entries.is_empty() {
            return "  annotations: {}\n".to_string();
        }
        if self.rng.chance(10) {
            let items: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", self.flow_key(k), self.quoted(v)))
                .collect();
            return format!("  annotations: {{{}}}\n", items.join(", "));
        }
        let mut out = String::from("  annotations:\n");
        if self.anchors.iter().any(|a| a == "labels") && self.rng.chance(30) {
            // Merged strings are annotations like any other.
            out.push_str("    <<: *labels\n");
        }
        // A value written once and aliased for the next annotation holding the same value.
        let mut anchored: Option<(String, String)> = None;
        for (k, v) in entries {
            if self.rng.chance(5) {
                let _ = writeln!(out, "    # {}", self.word());
            }
            let key = if self.rng.chance(15) {
                format!("\"{k}\"")
            } else {
                k
            };
            let value = match &anchored {
                Some((name, value)) if *value == v && self.rng.chance(50) => format!(" *{name}\n"),
                _ if v == "true" && anchored.is_none() && self.rng.chance(20) => {
                    let name = format!("t{}", self.next_name);
                    anchored = Some((name.clone(), v.clone()));
                    format!(" &{name} \"true\"\n")
                }
                _ => self.annotation_value(&v),
            };
            let _ = write!(out, "    {key}:{value}");
        }
        if self.rng.chance(2) {
            // Not a string: the CVO then sees no annotations at all.
            let _ = writeln!(out, "    example.com/count: {}", self.rng.below(9));
        }
        out
    }

    fn flow_key(&mut self, key: &str) -> String {
        if self.rng.chance(50) {
            format!("\"{key}\"")
        } else {
            key.to_string()
        }
    }

    /// Quoted, as annotation values must be to stay strings.
    fn quoted(&mut self, value: &str) -> String {
        if self.rng.chance(50) {
            format!("'{}'", value.replace('\'', "''"))
        } else {
            format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
        }
    }

    /// The text after `key:` for an annotation value that must stay a string.
    fn annotation_value(&mut self, value: &str) -> String {
        let indent = 6;
        let plain_ok = !value.is_empty()
            && value.parse::<f64>().is_err()
            && !PLAIN_SPECIALS.contains(&value)
            && !value.starts_with([
                ' ', '-', '\'', '"', '{', '[', '*', '&', '!', '|', '>', '%', '@', ',', '#', '`',
            ])
            && !value.contains(": ")
            && !value.contains(" #")
            && !["true", "false", "True", "False"].contains(&value);
        let comment = if self.rng.chance(5) { " # note" } else { "" };
        match self.rng.below(10) {
            0..=3 if plain_ok => format!(" {value}{comment}\n"),
            4 if !value.is_empty() && !value.starts_with(' ') => {
                let pad = " ".repeat(indent);
                format!(" |-\n{pad}{value}\n")
            }
            5 if !value.is_empty() && !value.starts_with(' ') => {
                let pad = " ".repeat(indent);
                format!(" >-\n{pad}{value}\n")
            }
            _ => format!(" {}{comment}\n", self.quoted(value)),
        }
    }

    fn yaml_file(&mut self, file_no: usize, count: usize) -> (String, Vec<u8>) {
        let ext = self.rng.pick(&[".yaml", ".yaml", ".yaml", ".yml", ".json"]);
        let name = format!("0000_50_forms_{file_no:05}{ext}");
        let mut out = String::new();
        if self.rng.chance(15) {
            out.push_str(
                self.rng
                    .pick(&["---\n", "--- # first\n", "# header comment\n"]),
            );
        }
        for i in 0..count {
            if i > 0 {
                out.push_str(
                    self.rng
                        .pick(&["---\n", "---\n", "--- # next\n", "---   \n"]),
                );
                if self.rng.chance(5) {
                    out.push_str(
                        self.rng
                            .pick(&["---\n", "# only a comment\n---\n", "\n---\n"]),
                    );
                }
            }
            let last = i + 1 == count;
            out.push_str(&self.yaml_document(last));
            self.documents += 1;
            if !last && self.rng.chance(5) {
                out.push_str("...\n");
            }
        }
        if self.rng.chance(8) {
            out.push_str(
                self.rng
                    .pick(&["---\n", "\n\n", "# trailing comment\n", "---\n# c\n"]),
            );
        }
        // The file's end: with or without a final newline (what upstream's reader adds back).
        if self.rng.chance(35) {
            while out.ends_with('\n') {
                out.pop();
            }
        }
        // Other line ends: Windows', a doubled CR (each line as an editor that adds a CR to a
        // CRLF file writes it), and old Mac's lone CR, which Kubernetes' line reader does not
        // split on but go-yaml does.
        if self.rng.chance(9) {
            let ending = self.rng.pick(&["\r\n", "\r\n", "\r\r\n", "\r"]);
            // With lone CRs the whole file is one line to the reader: a file opening with a
            // bare `---` would then be an invalid separator, which upstream refuses to load.
            let bare_start = out.starts_with("---") && !out.starts_with("--- #");
            if ending != "\r" || !bare_start {
                out = out.replace('\n', ending);
            }
        }
        let mut bytes = Vec::new();
        if self.rng.chance(4) {
            bytes.extend_from_slice("\u{feff}".as_bytes());
        }
        bytes.extend_from_slice(out.as_bytes());
        (name, bytes)
    }

    /// A document; `last` puts a block scalar at its very end more often.
    fn yaml_document(&mut self, last: bool) -> String {
        self.anchors.clear();
        let (api_version, kind, namespaced) = self.rng.pick(&[
            ("v1", "ConfigMap", true),
            ("v1", "ConfigMap", true),
            ("v1", "ConfigMap", true),
            ("v1", "Namespace", false),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition", false),
            ("config.openshift.io/v1", "FeatureGate", false),
            ("example.com/v1", "Widget", true),
        ]);
        let name = self.name();
        let mut metadata = String::from("metadata:\n");
        let name_line = if self.rng.chance(20) {
            format!("  name: \"{name}\"\n")
        } else {
            format!("  name: {name}\n")
        };
        metadata.push_str(&name_line);
        if namespaced {
            metadata.push_str("  namespace: openshift-forms\n");
        }
        if self.rng.chance(15) {
            metadata.push_str("  labels: &labels\n    app: forms\n    tier: \"1\"\n");
            self.anchors.push("labels".into());
        }
        let ann = self.annotations();
        metadata.push_str(&ann);
        let mut parts = vec![
            format!("apiVersion: {api_version}\n"),
            format!("kind: {kind}\n"),
            metadata,
        ];
        if self.rng.chance(15) {
            parts.swap(0, 2);
        }
        if self.rng.chance(10) {
            parts.insert(
                self.rng.below(parts.len() + 1),
                format!("# {}\n", self.word()),
            );
        }
        let mut out: String = parts.concat();
        let body_key = self.rng.pick(&["data", "spec", "status"]);
        out.push_str(body_key);
        out.push_str(":\n");
        let entries = 1 + self.rng.below(5);
        for i in 0..entries {
            let key = self.key(i);
            let end = last && i + 1 == entries && self.rng.chance(60);
            let value = if end {
                self.block_scalar(2)
            } else {
                self.value(2, 0)
            };
            let _ = write!(out, "  {key}:{value}");
        }
        out
    }

    fn key(&mut self, i: usize) -> String {
        match self.rng.below(30) {
            0 => format!("\"quoted key {i}\""),
            1 => format!("'single {i}'"),
            2 => format!("{}", 100 + i),
            3 => ["true", "yes", "off", "1.5", "0x10", "-3"][i % 6].to_string(),
            _ => format!("k{i}"),
        }
    }

    /// The text after `key:` at `indent` (the key's column): inline, or nested lines.
    fn value(&mut self, indent: usize, depth: usize) -> String {
        let pad = " ".repeat(indent + 2);
        let comment = if self.rng.chance(5) { " # c" } else { "" };
        match self.rng.below(if depth >= 2 { 9 } else { 12 }) {
            0 => format!(" {}{comment}\n", self.rng.pick(PLAIN_SPECIALS)),
            1 => format!(" {} {}{comment}\n", self.plain_word(), self.plain_word()),
            2 => {
                let text = format!("{} '{}' {}", self.word(), self.word(), self.word());
                format!(" '{}'{comment}\n", text.replace('\'', "''"))
            }
            3 => format!(" {}{comment}\n", self.double_quoted()),
            4 | 5 => self.block_scalar(indent),
            6 => format!(
                " {}\n{pad}{} {}\n",
                self.plain_word(),
                self.plain_word(),
                self.plain_word()
            ),
            7 => format!(
                " \"{}\\\n{pad}{} \\\n{pad}{}\"\n",
                self.word(),
                self.word(),
                self.word()
            ),
            8 => self.flow(),
            9 => {
                let mut out = String::new();
                // Pushed once the mapping is written: an alias inside it would recurse.
                let anchor = self
                    .rng
                    .chance(30)
                    .then(|| format!("a{}", self.anchors.len()));
                if let Some(anchor) = &anchor {
                    let _ = write!(out, " &{anchor}");
                }
                out.push('\n');
                if self.rng.chance(20) && self.anchors.iter().any(|a| a == "labels") {
                    let _ = writeln!(out, "{pad}<<: *labels");
                }
                for i in 0..1 + self.rng.below(3) {
                    let v = self.value(indent + 2, depth + 1);
                    let _ = write!(out, "{pad}m{i}:{v}");
                }
                self.anchors.extend(anchor);
                out
            }
            10 => {
                let mut out = String::from("\n");
                for _ in 0..1 + self.rng.below(3) {
                    if self.rng.chance(30) {
                        let _ = writeln!(out, "{pad}- name: {}", self.plain_word());
                        let _ = writeln!(out, "{pad}  value: {}", self.double_quoted());
                    } else {
                        let _ = writeln!(out, "{pad}- {}", self.double_quoted());
                    }
                }
                out
            }
            _ => match self.anchors.iter().find(|a| *a != "labels").cloned() {
                Some(anchor) => format!(" *{anchor}\n"),
                None => format!(" {}\n", self.rng.pick(&["", "~", "\"\""])),
            },
        }
    }

    fn plain_word(&mut self) -> &'static str {
        self.rng.pick(&[
            "alpha", "beta", "gamma", "café", "日本", "x-y", "a.b", "path/to",
        ])
    }

    fn double_quoted(&mut self) -> String {
        let mut out = String::from("\"");
        for _ in 0..1 + self.rng.below(3) {
            out.push_str(&self.word().replace('"', "\\\""));
            if self.rng.chance(60) {
                out.push_str(self.rng.pick(DQ_ESCAPES));
            }
        }
        if self.rng.chance(3) {
            // A long string: bufio and YAMLReader buffer boundaries.
            out.push_str(&"0123456789abcdef".repeat(300 + self.rng.below(300)));
        }
        out.push('"');
        out
    }

    fn flow(&mut self) -> String {
        match self.rng.below(4) {
            0 => format!(
                " [{}, \"{}\", {}]\n",
                self.plain_word(),
                self.word(),
                self.rng.pick(PLAIN_SPECIALS)
            ),
            1 => format!(
                " {{a: {}, \"b\": [x, y], c: {{}}}}\n",
                self.rng.pick(PLAIN_SPECIALS)
            ),
            2 => " []\n".to_string(),
            _ => format!(" [\n    {},\n    {{k: v}}\n  ]\n", self.plain_word()),
        }
    }

    /// A block scalar value (header and lines) for a key at `indent`.
    fn block_scalar(&mut self, indent: usize) -> String {
        let style = self.rng.pick(&["|", ">"]);
        let chomp = self.rng.pick(&["", "-", "+"]);
        let explicit = self.rng.chance(15);
        let content_indent = indent + 2;
        let header = if explicit {
            format!("{style}2{chomp}")
        } else {
            format!("{style}{chomp}")
        };
        let comment = if self.rng.chance(10) {
            " # header comment"
        } else {
            ""
        };
        let mut out = format!(" {header}{comment}\n");
        let pad = " ".repeat(content_indent);
        let lines = 1 + self.rng.below(4);
        for i in 0..lines {
            match self.rng.below(10) {
                0 if i > 0 => out.push('\n'),
                1 if i > 0 => {
                    let _ = writeln!(out, "{pad}  more indented {}", self.word());
                }
                2 => {
                    let _ = writeln!(out, "{pad}# not a comment {}", self.word());
                }
                _ => {
                    let _ = writeln!(out, "{pad}{} {}", self.word(), self.word());
                }
            }
        }
        for _ in 0..self.rng.below(3) {
            if self.rng.chance(50) {
                out.push('\n');
            } else {
                let _ = writeln!(out, "{pad}");
            }
        }
        out
    }

    fn json_file(&mut self, file_no: usize, count: usize) -> (String, Vec<u8>) {
        let ext = self.rng.pick(&[".json", ".json", ".yaml"]);
        let name = format!("0000_50_forms_{file_no:05}{ext}");
        let mut out = String::new();
        let mut count = count;
        if self.rng.chance(10) {
            let lines = self.rng.pick(&[1, 3, 600]);
            out.push_str(&" \n".repeat(lines));
            if lines == 600 {
                // Past the 1024 bytes the decoder peeks at, the file is read as YAML: one
                // document only, as a JSON stream is not one YAML document.
                count = 1;
            }
        }
        for i in 0..count {
            if i > 0 {
                out.push_str(self.rng.pick(&["\n", " ", "\n\n", ""]));
            }
            out.push_str(&self.json_document());
            self.documents += 1;
        }
        if self.rng.chance(70) {
            out.push('\n');
        }
        let mut bytes = Vec::new();
        if self.rng.chance(5) {
            // A byte-order mark makes the decoder read the file as YAML.
            bytes.extend_from_slice("\u{feff}".as_bytes());
            if count > 1 {
                out = out.replace("}{", "}\n---\n{").replace("}\n{", "}\n---\n{");
                out = out
                    .replace("} {", "}\n---\n{")
                    .replace("}\n\n{", "}\n---\n{");
            }
        }
        bytes.extend_from_slice(out.as_bytes());
        (name, bytes)
    }

    fn json_document(&mut self) -> String {
        let name = self.name();
        let mut ann = Vec::new();
        for profile in PROFILES {
            if self
                .rng
                .chance(if *profile == PROFILES[0] { 85 } else { 40 })
            {
                ann.push(format!(
                    "\"include.release.openshift.io/{profile}\": \"{}\"",
                    if self.rng.chance(90) { "true" } else { "false" }
                ));
            }
        }
        if self.rng.chance(40) {
            ann.push(format!(
                "\"capability.openshift.io/name\":\"{}\"",
                self.rng.pick(CAPABILITIES)
            ));
        }
        if self.rng.chance(10) {
            ann.push(format!(
                "\"release.openshift.io/feature-set\": \"{}\"",
                self.rng.pick(FEATURE_SETS)
            ));
        }
        let number = self
            .rng
            .pick(&["1", "1.0", "1e3", "-0.0", "12345678901234567890", "2.5E-3"]);
        let text = self.rng.pick(&[
            "plain",
            "tab\\tnew\\nline",
            "\\u00e9\\u263a",
            "<b>&amp;</b>",
            "a/b",
            "\\u2028",
        ]);
        if self.rng.chance(50) {
            format!(
                "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"openshift-forms\",\"annotations\":{{{}}}}},\"data\":{{\"n\":{number},\"s\":\"{text}\",\"z\":null,\"b\":true,\"a\":[]}}}}",
                ann.join(",")
            )
        } else {
            format!(
                "{{\n  \"kind\" : \"ConfigMap\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {{\n    \"name\": \"{name}\",\n    \"namespace\": \"openshift-forms\",\n    \"annotations\": {{ {} }}\n  }},\n  \"data\": {{ \"s\": \"{text}\", \"n\": {number} }}\n}}",
                ann.join(",\n      ")
            )
        }
    }
}
