//! The probe and metrics server every long-running command shares (`cvo start`, `cvo
//! controller NAME`): `/metrics` (Prometheus text), `/healthz` (the process serves) and
//! `/readyz` (what "ready" means is the caller's: a completed pass, running controllers),
//! over a small HTTP/1 server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What the server shows: the metrics, and whether the process is ready (else why not).
pub trait Endpoints: Send + Sync + 'static {
    /// The Prometheus text exposition.
    fn metrics_text(&self) -> String;
    fn readiness(&self) -> Result<(), String>;
}

/// The answer to a GET of `path`.
pub fn respond(endpoints: &dyn Endpoints, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            endpoints.metrics_text(),
        ),
        "/healthz" => (StatusCode::OK, "text/plain", "ok\n".into()),
        "/readyz" => match endpoints.readiness() {
            Ok(()) => (StatusCode::OK, "text/plain", "ok\n".into()),
            Err(why) => (StatusCode::SERVICE_UNAVAILABLE, "text/plain", why + "\n"),
        },
        _ => (StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

/// Binds `addr` (port 0: any free port); the returned address is the bound one.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    endpoints: Arc<dyn Endpoints>,
    shutdown: watch::Receiver<bool>,
) {
    accept_each(listener, shutdown, "metrics server", move |stream| {
        let endpoints = endpoints.clone();
        async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let response = respond(endpoints.as_ref(), req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            serve_http1(stream, service, "metrics server").await;
        }
    })
    .await
}

/// Accepts connections on `listener` until `shutdown` turns true, handling each in a task of
/// its own (an accept error is logged and retried after a pause).
pub(super) async fn accept_each<F, Fut>(
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    server: &'static str,
    mut handle: F,
) where
    F: FnMut(tokio::net::TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(handle(stream));
            }
            Err(e) => {
                tracing::warn!(error = %e, server, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Serves HTTP/1 requests on one connection with `service`.
pub(super) async fn serve_http1<IO, S>(io: IO, service: S, server: &'static str)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let io = hyper_util::rt::TokioIo::new(io);
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await
    {
        tracing::debug!(error = %e, server, "connection error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Result<(), String>);

    impl Endpoints for Fixed {
        fn metrics_text(&self) -> String {
            "m 1\n".into()
        }
        fn readiness(&self) -> Result<(), String> {
            self.0.clone()
        }
    }

    #[test]
    fn answers_each_path() {
        let ready = Fixed(Ok(()));
        assert_eq!(respond(&ready, "/metrics").status(), StatusCode::OK);
        assert_eq!(respond(&ready, "/healthz").status(), StatusCode::OK);
        assert_eq!(respond(&ready, "/readyz").status(), StatusCode::OK);
        assert_eq!(respond(&ready, "/nope").status(), StatusCode::NOT_FOUND);
        let waiting = Fixed(Err("no pass has completed yet".into()));
        assert_eq!(
            respond(&waiting, "/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(respond(&waiting, "/healthz").status(), StatusCode::OK);
    }
}
