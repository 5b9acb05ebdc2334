//! A real etcd + kube-apiserver for the cluster test binary (`hack/cluster/`), one per binary.
//!
//! Only `tests/cluster.rs` and `tests/components.rs` declare this module: the other test
//! binaries share `support/` and must never start a cluster.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A running cluster; stopped (and its directory removed) on drop, panics included.
pub struct Cluster {
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Cluster {
    /// Builds the binaries if they are not cached (minutes cold, instant warm) and starts a
    /// cluster in a fresh directory under /dev/shm (etcd is fsync-heavy) or the temp dir.
    pub fn start() -> anyhow::Result<Self> {
        Cluster::start_with_controllers("")
    }

    /// Like [`Cluster::start`], with kube-controller-manager running `controllers` (e.g.
    /// `namespace,garbagecollector`: real namespace deletion and garbage collection).
    pub fn start_with_controllers(controllers: &str) -> anyhow::Result<Self> {
        Cluster::start_with(controllers, "")
    }

    /// Like [`Cluster::start_with_controllers`], kube-apiserver also given `apiserver_args`
    /// (word-split, after any in `CVO_KUBE_APISERVER_EXTRA_ARGS`).
    pub fn start_with(controllers: &str, apiserver_args: &str) -> anyhow::Result<Self> {
        run_script("build.sh", &[], "")?;
        let parent = Path::new("/dev/shm");
        let parent = if parent.is_dir() {
            parent.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        // up.sh wants a directory it owns; keep() hands it over, down.sh removes it.
        let dir = tempfile::Builder::new()
            .prefix("cvo-cluster-test.")
            .tempdir_in(parent)?
            .keep();
        let mut cluster = Cluster {
            kubeconfig: PathBuf::new(),
            dir,
        };
        let extra = std::env::var("CVO_KUBE_APISERVER_EXTRA_ARGS").unwrap_or_default();
        let extra = format!("{extra} {apiserver_args}");
        let out = run_script_with(
            "up.sh",
            &[cluster.dir.as_os_str()],
            controllers,
            &[("CVO_KUBE_APISERVER_EXTRA_ARGS", extra.trim())],
        )?;
        cluster.kubeconfig = PathBuf::from(out.trim());
        Ok(cluster)
    }

    /// A client as `cvo-admin` (system:masters).
    pub async fn admin(&self) -> anyhow::Result<kube::Client> {
        client(&self.kubeconfig).await
    }

    /// The cluster's directory (`pki/ca.crt` and `pki/ca.key`: the client CA).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The admin kubeconfig, for commands run as separate processes.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client as `cvo-restricted`, who has no RBAC bindings.
    pub async fn restricted(&self) -> anyhow::Result<kube::Client> {
        client(&self.dir.join("kubeconfig-restricted")).await
    }

    /// A client that authenticates with a bearer `token` (e.g. a ServiceAccount's, from the
    /// TokenRequest API) instead of the admin's.
    pub async fn client_with_token(&self, token: &str) -> anyhow::Result<kube::Client> {
        let admin_token = std::fs::read_to_string(self.dir.join("admin.token"))?;
        let text = std::fs::read_to_string(&self.kubeconfig)?;
        let text = text.replace(admin_token.trim(), token);
        let kubeconfig = Kubeconfig::from_yaml(&text)?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// A client authenticated as the ServiceAccount `name` of `accounts`, with an hour's token
    /// from the TokenRequest API.
    pub async fn service_account_client(
        &self,
        accounts: &kube::Api<k8s_openapi::api::core::v1::ServiceAccount>,
        name: &str,
    ) -> anyhow::Result<kube::Client> {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: vec![],
                expiration_seconds: Some(3600),
                ..Default::default()
            },
            ..Default::default()
        };
        let token = accounts
            .create_token_request(name, &Default::default(), &request)
            .await?
            .status
            .context("no token in the TokenRequest status")?
            .token;
        self.client_with_token(&token).await
    }

    /// Stops (`"stop"`) or starts (`"start"`) the kube-apiserver alone, on the same port; etcd
    /// and its data stay (`hack/cluster/apiserver.sh`). Blocking.
    pub fn apiserver(&self, action: &str) -> anyhow::Result<()> {
        run_script("apiserver.sh", &[self.dir.as_os_str(), action.as_ref()], "")?;
        Ok(())
    }

    /// Stops the cluster; errors are reported, not raised, as this also runs from `drop`.
    pub fn stop(&mut self) {
        if self.dir.as_os_str().is_empty() {
            return;
        }
        if let Err(e) = run_script("down.sh", &[self.dir.as_os_str()], "") {
            eprintln!(
                "error: stopping the cluster in {}: {e:#}",
                self.dir.display()
            );
        }
        self.dir = PathBuf::new();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// Runs `hack/cluster/<script>`; its standard error (progress, failures) goes to ours.
fn run_script(
    script: &str,
    args: &[&std::ffi::OsStr],
    controllers: &str,
) -> anyhow::Result<String> {
    run_script_with(script, args, controllers, &[])
}

/// [`run_script`] with more environment variables.
fn run_script_with(
    script: &str,
    args: &[&std::ffi::OsStr],
    controllers: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("hack/cluster")
        .join(script);
    let output = Command::new(&path)
        .args(args)
        .envs(env.iter().copied())
        .env("CVO_CLUSTER_CONTROLLERS", controllers)
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", path.display()))?;
    if !output.status.success() {
        bail!("{} failed ({})", path.display(), output.status);
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
