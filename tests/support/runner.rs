//! The runner of the test binaries that share one real cluster (`tests/cluster.rs`,
//! `tests/components.rs`): start the cluster (or skip without Go, unless
//! `CVO_REQUIRE_CLUSTER=1`), run a setup, then each test in order under a timeout, catching
//! panics, printing `test NAME ... ok|FAILED` lines like libtest's; the first non-flag argument
//! filters tests by name. `CVO_TEST_LOG=cvo=debug` shows in-process controllers' logs.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::cluster_support::Cluster;

/// What a test gets: an admin client and the cluster.
pub struct Ctx<'a> {
    pub admin: kube::Client,
    pub cluster: &'a Cluster,
}

pub type TestFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;
pub type TestFn = for<'a> fn(&'a Ctx<'a>) -> TestFuture<'a>;
/// What runs once before the tests, with the admin client.
pub type Setup = for<'a> fn(&'a kube::Client) -> TestFuture<'a>;

/// One binary's tests.
pub struct Suite {
    /// What the lines say: "cluster", "component".
    pub what: &'static str,
    pub tests: &'static [(&'static str, TestFn)],
    /// Bounds each test.
    pub timeout: Duration,
    pub setup: Option<Setup>,
}

impl Suite {
    /// Runs the suite on the cluster `start` starts; the binary's exit code.
    pub fn main(&self, start: impl FnOnce() -> anyhow::Result<Cluster>) -> ExitCode {
        if let Ok(filter) = std::env::var("CVO_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_writer(std::io::stderr)
                .try_init();
        }
        let started = Instant::now();
        let mut cluster = match start() {
            Ok(cluster) => cluster,
            Err(e) if std::env::var("CVO_REQUIRE_CLUSTER").as_deref() == Ok("1") => {
                eprintln!("error: cannot start the test cluster and CVO_REQUIRE_CLUSTER=1: {e:#}");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                println!(
                    "skipping the {} tests: cannot start a cluster ({e:#}); set CVO_REQUIRE_CLUSTER=1 to fail instead",
                    self.what
                );
                return ExitCode::SUCCESS;
            }
        };
        let (ran, failed) = self.run_all(&cluster);
        cluster.stop();
        println!("{} passed, {failed} failed", ran - failed);
        eprintln!(
            "{} tests took {:.1}s",
            self.what,
            started.elapsed().as_secs_f64()
        );
        match failed {
            0 => ExitCode::SUCCESS,
            _ => ExitCode::FAILURE,
        }
    }

    /// Runs every test (or those whose name contains the first argument); returns how many ran
    /// and how many failed.
    fn run_all(&self, cluster: &Cluster) -> (usize, usize) {
        let all = self.tests.len();
        let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("error: cannot build a tokio runtime: {e}");
                return (all, all);
            }
        };
        let admin = match runtime.block_on(cluster.admin()) {
            Ok(admin) => admin,
            Err(e) => {
                eprintln!("error: cannot build the admin client: {e:#}");
                return (all, all);
            }
        };
        if let Some(setup) = self.setup
            && let Err(e) = runtime.block_on(setup(&admin))
        {
            eprintln!("error: the {} tests' setup failed: {e:#}", self.what);
            return (all, all);
        }
        let ctx = Ctx { admin, cluster };
        let (mut ran, mut failed) = (0, 0);
        for (name, test) in self.tests {
            if filter.as_deref().is_some_and(|f| !name.contains(f)) {
                continue;
            }
            ran += 1;
            let t0 = Instant::now();
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                runtime.block_on(async { tokio::time::timeout(self.timeout, test(&ctx)).await })
            }));
            let error = match outcome {
                Ok(Ok(Ok(()))) => None,
                Ok(Ok(Err(e))) => Some(format!("{e:#}")),
                Ok(Err(_)) => Some(format!("timed out after {:?}", self.timeout)),
                Err(_) => Some("panicked (message above)".to_string()),
            };
            let secs = t0.elapsed().as_secs_f64();
            match error {
                None => println!("test {name} ... ok ({secs:.2}s)"),
                Some(e) => {
                    failed += 1;
                    println!("test {name} ... FAILED ({secs:.2}s): {e}");
                }
            }
        }
        (ran, failed)
    }
}
