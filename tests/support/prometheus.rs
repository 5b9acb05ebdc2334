//! A real Prometheus (Debian's `prometheus` package) on 127.0.0.1 with a throwaway storage
//! directory, scraping one target every second. `None` when the binary is missing, unless
//! `CVO_REQUIRE_PROMETHEUS=1` (`.ci/run`), which fails.

// Each test binary uses its own part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};

pub struct Prometheus {
    /// `http://127.0.0.1:PORT`, or `https://localhost:PORT` when serving TLS.
    pub url: String,
    client: reqwest::Client,
    child: Child,
    _dir: tempfile::TempDir,
}

/// PEM: the serving certificate and key, and the CA that signed them.
pub struct Tls {
    pub certificate: String,
    pub key: String,
    pub ca: String,
}

impl Prometheus {
    /// Starts Prometheus scraping `http://<target>/metrics` (job `cvo`) and waits until it is
    /// ready.
    pub async fn start(target: SocketAddr) -> anyhow::Result<Option<Prometheus>> {
        Self::start_with(target, None).await
    }

    /// Prometheus with the whole configuration `config` (`{dir}` in it stands for a directory
    /// holding `files`, name and contents), over plain HTTP.
    pub async fn start_config(
        config: &str,
        files: &[(&str, &str)],
    ) -> anyhow::Result<Option<Prometheus>> {
        Self::start_inner(None, None, Some((config, files))).await
    }

    /// Like [`Prometheus::start`], serving HTTPS with `tls` when given.
    pub async fn start_with(
        target: SocketAddr,
        tls: Option<&Tls>,
    ) -> anyhow::Result<Option<Prometheus>> {
        Self::start_inner(Some(target), tls, None).await
    }

    /// Like [`Prometheus::start`], evaluating the alerting `rules` (a rule file's YAML) every
    /// second.
    pub async fn start_with_rules(
        target: SocketAddr,
        rules: &str,
    ) -> anyhow::Result<Option<Prometheus>> {
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n- job_name: cvo\n  static_configs:\n  - targets: ['{target}']\nrule_files:\n- {{dir}}/rules.yml\n"
        );
        Self::start_inner(None, None, Some((&config, &[("rules.yml", rules)]))).await
    }

    async fn start_inner(
        target: Option<SocketAddr>,
        tls: Option<&Tls>,
        custom: Option<(&str, &[(&str, &str)])>,
    ) -> anyhow::Result<Option<Prometheus>> {
        if Command::new("prometheus")
            .arg("--version")
            .output()
            .is_err()
        {
            ensure!(
                std::env::var("CVO_REQUIRE_PROMETHEUS").as_deref() != Ok("1"),
                "prometheus is missing and CVO_REQUIRE_PROMETHEUS=1 (hack/install-deps.sh installs it)"
            );
            eprintln!("skipping: prometheus is not installed");
            return Ok(None);
        }
        cvo::oci::registry::install_crypto_provider();
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("prometheus.yml");
        let text = match (custom, target) {
            (Some((config, files)), _) => {
                for (name, contents) in files {
                    std::fs::write(dir.path().join(name), contents)?;
                }
                config.replace("{dir}", &dir.path().display().to_string())
            }
            (None, Some(target)) => format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n- job_name: cvo\n  static_configs:\n  - targets: ['{target}']\n"
            ),
            (None, None) => anyhow::bail!("no scrape target"),
        };
        std::fs::write(&config, text)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut command = Command::new("prometheus");
        let mut client = reqwest::Client::builder();
        let mut url = format!("http://127.0.0.1:{port}");
        if let Some(tls) = tls {
            let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
            std::fs::write(&cert, &tls.certificate)?;
            std::fs::write(&key, &tls.key)?;
            let web = dir.path().join("web.yml");
            std::fs::write(
                &web,
                format!(
                    "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
                    cert.display(),
                    key.display()
                ),
            )?;
            command.arg(format!("--web.config.file={}", web.display()));
            client =
                client.tls_certs_only(reqwest::Certificate::from_pem_bundle(tls.ca.as_bytes())?);
            url = format!("https://localhost:{port}");
        }
        let child = command
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start prometheus")?;
        let prometheus = Prometheus {
            url,
            client: client.build()?,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !prometheus.ready().await {
            ensure!(Instant::now() < deadline, "prometheus not ready after 20s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Some(prometheus))
    }

    async fn ready(&self) -> bool {
        let url = format!("{}/-/ready", self.url);
        self.client
            .get(&url)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    /// The number of samples `query` returns now.
    pub async fn samples(&self, query: &str) -> anyhow::Result<usize> {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/v1/query", self.url),
            [("query", query)],
        )?;
        let response = self.client.get(url).send().await?;
        let body: serde_json::Value = serde_json::from_slice(&response.bytes().await?)?;
        Ok(body["data"]["result"].as_array().map_or(0, Vec::len))
    }

    /// The label sets of the samples `query` returns now.
    pub async fn label_sets(
        &self,
        query: &str,
    ) -> anyhow::Result<Vec<std::collections::BTreeMap<String, String>>> {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/v1/query", self.url),
            [("query", query)],
        )?;
        let response = self.client.get(url).send().await?;
        let body: serde_json::Value = serde_json::from_slice(&response.bytes().await?)?;
        ensure!(body["status"] == "success", "{query}: {body}");
        let results = body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(results
            .iter()
            .map(|r| serde_json::from_value(r["metric"].clone()).unwrap_or_default())
            .collect())
    }

    /// Waits until the alert `name` fires.
    pub async fn wait_for_alert(&self, name: &str) -> anyhow::Result<()> {
        self.wait_for(&format!(
            r#"ALERTS{{alertname="{name}",alertstate="firing"}}"#
        ))
        .await
    }

    /// Waits until `query` returns a sample (Prometheus has scraped what it needs).
    pub async fn wait_for(&self, query: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.samples(query).await? == 0 {
            ensure!(Instant::now() < deadline, "no {query} after 20s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
