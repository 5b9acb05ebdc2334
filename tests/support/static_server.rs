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
        let port = free_port()?;
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
        Ok(Self::ready(child, port, "http://127.0.0.1"))
    }

    /// Serves `dir` over HTTPS with the PEM `certificate` and `key` files; `url` is
    /// `https://localhost:PORT`, the name such test certificates carry.
    #[allow(dead_code)] // tests/signatures.rs uses it; tests/cluster.rs shares this file.
    pub fn start_tls(dir: &Path, certificate: &Path, key: &Path) -> std::io::Result<StaticServer> {
        let port = free_port()?;
        let script = "import functools, http.server, ssl, sys\n\
            port, directory, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]\n\
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)\n\
            server = http.server.HTTPServer(('127.0.0.1', port), handler)\n\
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
            context.load_cert_chain(cert, key)\n\
            server.socket = context.wrap_socket(server.socket, server_side=True)\n\
            server.serve_forever()\n";
        let child = Command::new("python3")
            .args(["-c", script, &port.to_string()])
            .args([dir, certificate, key])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Self::ready(child, port, "https://localhost"))
    }

    fn ready(child: Child, port: u16, base: &str) -> StaticServer {
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        StaticServer {
            child,
            url: format!("{base}:{port}"),
        }
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
