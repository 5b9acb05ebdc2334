//! Connecting to a cluster from the command line: the kubeconfig, then one request to the
//! API server, so that an unreachable or unauthorized server is one error that names it
//! instead of a failure per manifest.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::causes::{innermost, with_causes};
use crate::retry::RetryNotice;

/// A client for `kubeconfig` (else `$KUBECONFIG`, `~/.kube/config` or the in-cluster config).
/// With `wait`, its server must answer `/version` within that time (asked every second).
pub async fn connect(
    kubeconfig: Option<&Path>,
    wait: Option<Duration>,
) -> anyhow::Result<kube::Client> {
    let config = load_config(kubeconfig).await?;
    client_for(config, wait).await
}

/// The client configuration of `kubeconfig` (else `$KUBECONFIG`, `~/.kube/config` or the
/// in-cluster config).
pub async fn load_config(kubeconfig: Option<&Path>) -> anyhow::Result<kube::Config> {
    Ok(match kubeconfig {
        Some(path) => {
            // Read here so a missing file is said once (kube's error repeats its cause).
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow!("cannot read kubeconfig {}: {e}", path.display()))?;
            let kubeconfig = Kubeconfig::from_yaml(&text)
                .map_err(|e| anyhow!("kubeconfig {}: {}", path.display(), with_causes(&e)))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| anyhow!("kubeconfig {}: {}", path.display(), with_causes(&e)))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| match std::env::var_os("KUBECONFIG") {
                Some(path) => anyhow!(
                    "$KUBECONFIG {}: {}",
                    path.to_string_lossy(),
                    with_causes(&e)
                ),
                None => anyhow!(
                    "no cluster configured ({}); pass --kubeconfig FILE or set $KUBECONFIG",
                    with_causes(&e)
                ),
            })?,
    })
}

/// A client for `config`; with `wait`, its server must answer `/version` within that time.
pub async fn client_for(
    config: kube::Config,
    wait: Option<Duration>,
) -> anyhow::Result<kube::Client> {
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config)
        .with_context(|| format!("cannot make a client for the API server {server}"))?;
    let Some(wait) = wait else {
        return Ok(client);
    };
    let started = Instant::now();
    let mut notice = RetryNotice::new(format!("waiting for the API server {server}"), Some(wait));
    loop {
        // Each attempt is bounded too: a server that accepts connections and never answers.
        let left = wait
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(1));
        let problem = match tokio::time::timeout(left, client.apiserver_version()).await {
            Ok(Ok(_)) => {
                if let Some(line) = notice.succeeded() {
                    tracing::info!("{line}");
                }
                return Ok(client);
            }
            Ok(Err(e)) => describe(&e),
            Err(_) => format!("no answer within {}s", left.as_secs()),
        };
        if started.elapsed() >= wait {
            let attempts = notice.failures() + 1;
            return Err(anyhow!(
                "cannot reach the Kubernetes API server {server}: {problem} (gave up after {attempts} attempt{} in {}s)",
                if attempts == 1 { "" } else { "s" },
                wait.as_secs()
            ));
        }
        if let Some(line) = notice.failed(&problem) {
            tracing::warn!("{line}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// What went wrong, in a user's words: the server's answer, or the innermost cause
/// (connection refused, DNS, TLS) with a hint.
fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.code == 401 => format!(
            "401 Unauthorized: the kubeconfig's credentials were rejected ({})",
            status.message
        ),
        kube::Error::Api(status) if status.code == 403 => format!(
            "403 Forbidden: the kubeconfig's user may not read /version ({})",
            status.message
        ),
        kube::Error::Api(status) => format!("{} {}", status.code, status.message),
        other => innermost(other),
    }
}
