//! A real HTTP server for files: Python's `http.server` serving a directory on 127.0.0.1
//! (signature stores in the store layout); stopped on drop.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct StaticServer {
    child: Child,
    pub url: String,
}

impl StaticServer {
    /// Serves `dir`; ready once it accepts connections (up to 5 s).
    pub fn start(dir: &Path) -> std::io::Result<StaticServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
                "--directory",
            ])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(StaticServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
