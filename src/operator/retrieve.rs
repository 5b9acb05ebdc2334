//! Retrieving the release the cluster asks for (spec §5.1): the I/O shell around
//! [`super::desired`]. A registry image is pulled into the image cache on the operator's own
//! runtime; reading and loading the extracted payload (blocking file I/O and YAML parsing) runs
//! on the blocking pool.

use super::desired::{ReleaseSources, release_source, verify_version};
use super::outcome::{LoadFailure, PayloadLoadStep, RequestedUpdate};
use crate::oci;
use crate::payload::source::SourceError;
use crate::payload::{LoadOptions, Payload, PayloadSource, read_image, read_input};
use crate::verify::config::VerifierConfig;
use crate::verify::release::Verification;
use crate::verify::store::{Egress, Store, offer_signatures};

/// A retrieved release.
#[derive(Debug)]
pub struct Retrieved {
    pub payload: Payload,
    /// Its digest's signatures verified (`status.history[].verified`).
    pub verified: bool,
    /// Why it is not verified when `force` let it through (upstream's
    /// `The update cannot be verified: ...`), for the accepted risks.
    pub forced_unverified: Option<String>,
    /// The signatures that verified it (one per keyring at least), to be persisted.
    pub signatures: Vec<Vec<u8>>,
}

/// How a release's signatures are checked: the verifier the current payload declares, the
/// signatures of the signature ConfigMaps, and how the stores are reached.
#[derive(Clone, Copy, Debug)]
pub struct SignatureCheck<'a> {
    pub verifier: &'a VerifierConfig,
    pub local_signatures: &'a [Vec<u8>],
    pub egress: &'a Egress,
}

/// Retrieves, verifies (when the current payload declares a verifier) and loads `release`,
/// rendering `{{.ReleaseImage}}` as the requested image and the manifests for `cluster_profile`.
pub async fn retrieve(
    release: &RequestedUpdate,
    images: &oci::Options,
    sources: ReleaseSources,
    cluster_profile: &str,
    signatures: Option<SignatureCheck<'_>>,
    force: bool,
) -> Result<Retrieved, LoadFailure> {
    let source = match sources {
        ReleaseSources::Registries => release_source(&release.image)?,
        ReleaseSources::RegistriesAndLocalFiles => PayloadSource::from_arg(Some(&release.image)),
    };
    let (verified, forced_unverified, signatures) = match signatures {
        None => (false, None, Vec::new()),
        Some(check) => match verify(&release.image, check).await {
            Ok(signatures) => (true, None, signatures),
            Err(message) if force => {
                tracing::warn!(image = %release.image, "an image that failed verification is used because the update is forced: {message}");
                (false, Some(message), Vec::new())
            }
            Err(message) => {
                return Err(LoadFailure {
                    step: PayloadLoadStep::RetrievePayload,
                    error: message,
                });
            }
        },
    };
    let pulled = match &source {
        PayloadSource::Registry(reference) => Some(
            oci::registry::pull(reference, images)
                .await
                .map_err(|error| {
                    retrieval_failed(SourceError::Oci {
                        source_ref: source.to_string(),
                        error,
                    })
                })?,
        ),
        _ => None,
    };
    let (release, images) = (release.clone(), images.clone());
    let options = LoadOptions {
        release_image: Some(release.image.clone()),
        cluster_profile: cluster_profile.to_string(),
        strict_templates: false,
    };
    let load = move || {
        let input = match &pulled {
            Some(loaded) => read_image(&source, loaded),
            None => read_input(&source, &images),
        }
        .map_err(retrieval_failed)?;
        let payload = Payload::from_input(input, &options).map_err(|e| LoadFailure {
            step: PayloadLoadStep::LoadPayload,
            error: e.to_string(),
        })?;
        verify_version(Some(&release.version), payload.version())?;
        for warning in &payload.warnings {
            tracing::warn!(payload = %payload.origin, "{warning}");
        }
        Ok::<Payload, LoadFailure>(payload)
    };
    let payload = tokio::task::spawn_blocking(load)
        .await
        .map_err(|e| LoadFailure {
            step: PayloadLoadStep::LoadPayload,
            error: format!("the loading task failed: {e}"),
        })??;
    Ok(Retrieved {
        payload,
        verified,
        forced_unverified,
        signatures,
    })
}

/// Upstream `RetrievePayload`'s verification: the digest after the image's `@` must be signed
/// by every keyring of the verifier, through the signature ConfigMaps' signatures first, then
/// its stores; the signatures that did it, else `The update cannot be verified: ...`.
async fn verify(image: &str, check: SignatureCheck<'_>) -> Result<Vec<Vec<u8>>, String> {
    let SignatureCheck {
        verifier,
        local_signatures,
        egress,
    } = check;
    let digest = image.rsplit_once('@').map(|(_, d)| d).unwrap_or("");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let cannot =
        |e: crate::verify::release::VerifyError| format!("The update cannot be verified: {e}");
    let mut verification = Verification::start(digest, &verifier.keyrings, now).map_err(cannot)?;
    for signature in local_signatures {
        if verification.offer(Ok(signature)) {
            return Ok(verification.accepted);
        }
    }
    let stores: Vec<Store> = (verifier.stores.iter())
        .map(|url| match verifier.store_cas.get(url) {
            Some(ca_pem) => Store::HttpWithCa {
                url: url.clone(),
                ca_pem: ca_pem.clone(),
            },
            None => Store::Http(url.clone()),
        })
        .collect();
    offer_signatures(&stores, digest, &mut verification, egress).await;
    verification.finish().map_err(cannot)
}

fn retrieval_failed(error: SourceError) -> LoadFailure {
    LoadFailure {
        step: PayloadLoadStep::RetrievePayload,
        error: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn load_local(image: &str) -> Result<Payload, LoadFailure> {
        let release = RequestedUpdate {
            image: image.into(),
            version: String::new(),
        };
        let cache = tempfile::tempdir().unwrap();
        let images = oci::Options::new(cache.path().into());
        retrieve(
            &release,
            &images,
            ReleaseSources::RegistriesAndLocalFiles,
            "p",
            None,
            false,
        )
        .await
        .map(|r| r.payload)
    }

    #[tokio::test]
    async fn missing_directory_fails_at_retrieval_and_bad_metadata_at_load() {
        let e = load_local("/nonexistent/cvo-payload").await.unwrap_err();
        assert_eq!(e.step, PayloadLoadStep::RetrievePayload);
        assert!(e.error.contains("/nonexistent/cvo-payload"), "{}", e.error);

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("release-manifests")).unwrap();
        std::fs::write(
            dir.path().join("release-manifests/release-metadata"),
            "{not json",
        )
        .unwrap();
        let e = load_local(&dir.path().display().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.step, PayloadLoadStep::LoadPayload, "{e}");
    }

    #[tokio::test]
    async fn a_path_named_by_the_cluster_is_never_read() {
        let dir = format!("{}/payloads/4.18.0", env!("CARGO_MANIFEST_DIR"));
        let release = RequestedUpdate {
            image: dir.clone(),
            version: String::new(),
        };
        let cache = tempfile::tempdir().unwrap();
        let images = oci::Options::new(cache.path().into());
        let e = retrieve(
            &release,
            &images,
            ReleaseSources::Registries,
            "p",
            None,
            false,
        )
        .await
        .unwrap_err();
        assert_eq!(e.step, PayloadLoadStep::RetrievePayload);
        assert!(e.error.contains("is not a release image pullspec"), "{e}");
        assert!(
            load_local(&dir).await.is_ok(),
            "the test-only option reads it"
        );
    }
}
