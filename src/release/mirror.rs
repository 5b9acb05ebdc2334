//! Where `cvo payload mirror` puts a release and each image it references, and the
//! ImageDigestMirrorSet that sends a cluster's pulls there, as `oc adm release mirror` does:
//! the release goes to `REPO:VERSION-ARCH`, the image of tag NAME to `REPO:VERSION-ARCH-NAME`,
//! every one by the same digest; each source repository gets REPO as its mirror.

use std::collections::BTreeSet;

use super::pullspec::Pullspec;
use super::references::ImageStream;

/// One image to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorItem {
    /// The image-references tag, or `release`.
    pub name: String,
    pub source: Pullspec,
    /// The tag it gets in the mirror repository.
    pub target_tag: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPlan {
    pub images: Vec<MirrorItem>,
    /// The repositories the release's images come from (and the release's own, when it comes
    /// from a registry): the sources of the mirror set.
    pub source_repositories: BTreeSet<String>,
    /// `REPO:VERSION-ARCH`.
    pub release_tag: String,
}

/// `-x86_64`, `-aarch64`, … for a single-architecture release, `-multi` for an index (oc's
/// `archExt`).
pub fn arch_suffix(architectures: &[String], index: bool) -> String {
    match architectures {
        [one] if !index => format!("-{}", super::openshift_arch(one)),
        _ => "-multi".to_string(),
    }
}

/// Checks `--to` (a repository: no tag, no digest).
pub fn target_repository(to: &str) -> Result<Pullspec, String> {
    let repo =
        Pullspec::parse(to).map_err(|e| format!("--to must be a valid image repository: {e}"))?;
    if repo.tag.is_some() || repo.digest.is_some() {
        return Err(
            "--to must be to an image repository and may not contain a tag or digest".to_string(),
        );
    }
    Ok(repo)
}

/// The images of `stream` (each by digest) and where they go.
pub fn plan(
    stream: &ImageStream,
    version: &str,
    suffix: &str,
    release_source: Option<&Pullspec>,
) -> Result<MirrorPlan, String> {
    let mut images = Vec::new();
    let mut source_repositories = BTreeSet::new();
    for (name, image) in stream.images() {
        let from = Pullspec::parse(image)
            .map_err(|e| format!("release tag {name:?} is not valid: {e}"))?;
        if from.tag.is_some() || from.digest.is_none() {
            return Err(format!(
                "image-references should only contain pointers to images by digest: {image}"
            ));
        }
        source_repositories.insert(from.repository.clone());
        images.push(MirrorItem {
            name: name.to_string(),
            source: from,
            target_tag: format!("{version}{suffix}-{name}"),
        });
    }
    if let Some(release) = release_source {
        source_repositories.insert(release.repository.clone());
    }
    Ok(MirrorPlan {
        images,
        source_repositories,
        release_tag: format!("{version}{suffix}"),
    })
}

/// A YAML scalar as Go's yaml writes these values: plain when it is safe.
fn scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/:@-".contains(&b))
        && value.as_bytes()[0].is_ascii_alphanumeric()
        && value.parse::<f64>().is_err()
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        value.to_string()
    } else {
        serde_json::to_string(value).expect("a string serializes")
    }
}

/// The `imageDigestMirrors` list, `indent` spaces in.
fn mirrors_yaml(sources: &BTreeSet<String>, mirror: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    sources
        .iter()
        .map(|source| {
            format!(
                "{pad}- mirrors:\n{pad}  - {}\n{pad}  source: {}\n",
                scalar(mirror),
                scalar(source)
            )
        })
        .collect()
}

/// The ImageDigestMirrorSet (named `example`, as oc names it) mirroring every source
/// repository to `mirror`.
pub fn image_digest_mirror_set(sources: &BTreeSet<String>, mirror: &str) -> String {
    format!(
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  name: example\nspec:\n  imageDigestMirrors:\n{}",
        mirrors_yaml(sources, mirror, 2)
    )
}

/// What `oc adm release mirror` prints once the copy is done: the release's new name, the
/// install-config section and the ImageDigestMirrorSet.
pub fn instructions(plan: &MirrorPlan, mirror: &str) -> String {
    let mut out = format!(
        "\nSuccess\nUpdate image:  {mirror}:{}\nMirror prefix: {mirror}\n",
        plan.release_tag
    );
    if plan.source_repositories.is_empty() {
        return out;
    }
    out.push_str("\nTo use the new mirrored repository to install, add the following section to the install-config.yaml:\n\n");
    out.push_str("imageDigestSources:\n");
    out.push_str(&mirrors_yaml(&plan.source_repositories, mirror, 0));
    out.push_str("\n\nTo use the new mirrored repository for upgrades, use the following to create an ImageDigestMirrorSet:\n\n");
    out.push_str(&image_digest_mirror_set(&plan.source_repositories, mirror));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(images: &[(&str, &str)]) -> ImageStream {
        let tags: Vec<String> = images
            .iter()
            .map(|(n, i)| {
                format!(r#"{{"name":"{n}","from":{{"kind":"DockerImage","name":"{i}"}}}}"#)
            })
            .collect();
        ImageStream::parse(
            format!(
                r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{{"name":"1.0.0"}},"spec":{{"tags":[{}]}}}}"#,
                tags.join(",")
            )
            .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn every_image_gets_a_tag_and_its_repository_a_mirror() {
        let d = format!("sha256:{}", "a".repeat(64));
        let s = stream(&[
            ("cli", &format!("127.0.0.1:5000/images@{d}")),
            ("etcd", &format!("quay.io/art/dev@{d}")),
        ]);
        let release = Pullspec::parse(&format!("127.0.0.1:5000/release@{d}")).unwrap();
        let plan = plan(
            &s,
            "1.0.0",
            &arch_suffix(&["amd64".into()], false),
            Some(&release),
        )
        .unwrap();
        assert_eq!(plan.release_tag, "1.0.0-x86_64");
        assert_eq!(plan.images[0].target_tag, "1.0.0-x86_64-cli");
        assert_eq!(plan.images[1].source.repository, "quay.io/art/dev");
        assert_eq!(
            plan.source_repositories.iter().collect::<Vec<_>>(),
            [
                "127.0.0.1:5000/images",
                "127.0.0.1:5000/release",
                "quay.io/art/dev"
            ]
        );
        let text = instructions(&plan, "127.0.0.1:5001/mirror");
        assert_eq!(
            text,
            "
Success
Update image:  127.0.0.1:5001/mirror:1.0.0-x86_64
Mirror prefix: 127.0.0.1:5001/mirror

To use the new mirrored repository to install, add the following section to the install-config.yaml:

imageDigestSources:
- mirrors:
  - 127.0.0.1:5001/mirror
  source: 127.0.0.1:5000/images
- mirrors:
  - 127.0.0.1:5001/mirror
  source: 127.0.0.1:5000/release
- mirrors:
  - 127.0.0.1:5001/mirror
  source: quay.io/art/dev


To use the new mirrored repository for upgrades, use the following to create an ImageDigestMirrorSet:

apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: example
spec:
  imageDigestMirrors:
  - mirrors:
    - 127.0.0.1:5001/mirror
    source: 127.0.0.1:5000/images
  - mirrors:
    - 127.0.0.1:5001/mirror
    source: 127.0.0.1:5000/release
  - mirrors:
    - 127.0.0.1:5001/mirror
    source: quay.io/art/dev
"
        );
        let idms = image_digest_mirror_set(&plan.source_repositories, "127.0.0.1:5001/mirror");
        let parsed = crate::yaml::parse_value(&idms).unwrap();
        assert_eq!(
            parsed.pointer("/spec/imageDigestMirrors/2/source").unwrap(),
            "quay.io/art/dev"
        );
    }

    #[test]
    fn tags_and_bad_targets_are_refused() {
        let s = stream(&[("cli", "quay.io/x/cli:latest")]);
        let err = plan(&s, "1.0.0", "-x86_64", None).unwrap_err();
        assert_eq!(
            err,
            "image-references should only contain pointers to images by digest: quay.io/x/cli:latest"
        );
        assert!(
            target_repository("r.io/x:tag")
                .unwrap_err()
                .contains("may not contain a tag")
        );
        assert!(target_repository("r.io/x").is_ok());
        assert_eq!(
            arch_suffix(&["amd64".into(), "arm64".into()], true),
            "-multi"
        );
        assert_eq!(arch_suffix(&["arm64".into()], false), "-aarch64");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar("1.5"), "\"1.5\"");
        assert_eq!(scalar("a b"), "\"a b\"");
    }
}
