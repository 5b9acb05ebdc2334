//! What the benchmarks against a real kube-apiserver share (`apply`, `dt_bind`). The kubeconfig
//! comes from `$CVO_BENCH_KUBECONFIG`, never from `$KUBECONFIG`: they create and delete objects,
//! so a `cargo bench` in a shell pointed at a real cluster must not touch it. Without it they
//! say how to run them and exit 0, so `cargo bench` without a cluster does not fail.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The bench's `main`: `run` with its parsed arguments and the kubeconfig's path on a
/// multi-threaded runtime, or, without `$CVO_BENCH_KUBECONFIG`, a line saying that `bench` is
/// skipped, that `script` starts a throwaway cluster for it, and what a cluster of one's own
/// must allow (`allows`).
pub fn main<A, F>(
    bench: &str,
    script: &str,
    allows: &str,
    parse_args: impl FnOnce() -> anyhow::Result<A>,
    run: impl FnOnce(A, PathBuf) -> F,
) -> ExitCode
where
    F: Future<Output = anyhow::Result<()>>,
{
    let Some(kubeconfig) = std::env::var_os("CVO_BENCH_KUBECONFIG").filter(|v| !v.is_empty())
    else {
        println!(
            "benches/{bench}: skipped: no CVO_BENCH_KUBECONFIG; run {script} (it starts a \
             throwaway cluster), or CVO_BENCH_KUBECONFIG=PATH cargo bench --bench {bench} with \
             a cluster {allows}"
        );
        return ExitCode::SUCCESS;
    };
    let result = parse_args().and_then(|args| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?
            .block_on(run(args, PathBuf::from(kubeconfig)))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A client of the kubeconfig's cluster, and the apiserver's version (`1.34 (v1.34.4)`).
pub async fn connect(kubeconfig: &Path) -> anyhow::Result<(kube::Client, String)> {
    cvo::oci::registry::install_crypto_provider();
    let what = || format!("CVO_BENCH_KUBECONFIG={}", kubeconfig.display());
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).with_context(what)?,
        &KubeConfigOptions::default(),
    )
    .await
    .with_context(what)?;
    let client = kube::Client::try_from(config).with_context(what)?;
    let version = client
        .apiserver_version()
        .await
        .with_context(|| format!("{}: the apiserver does not answer", what()))?;
    let version = format!(
        "{}.{} ({})",
        version.major, version.minor, version.git_version
    );
    Ok((client, version))
}
