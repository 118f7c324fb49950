//! The operator's HTTP endpoint: `/metrics` (Prometheus text), `/healthz` (the process is
//! alive), `/readyz` (connected, subscribed, and the broker confirming what is published,
//! else 503 with the reason) and `/config` (the last configuration reload, JSON). A few lines
//! of HTTP/1.1 on tokio rather than a web framework: four GET routes, one small response
//! each, connection closed after.

use crate::telemetry::Metrics;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

/// Serves until `shutdown` fires.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, shutdown: CancellationToken) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "HTTP endpoint listening (/metrics, /healthz, /readyz)");
    }
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(answer(stream, metrics.clone()));
                }
                Err(e) => debug!(error = %e, "HTTP accept failed"),
            },
        }
    }
}

async fn answer(mut stream: TcpStream, metrics: Arc<Metrics>) {
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), read_head(&mut stream)).await;
    let Ok(Some(head)) = read else { return };
    let request = String::from_utf8_lossy(&head);
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let (status, content_type, body) = respond(request.starts_with("GET "), path, &metrics);
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads until the end of the request's head (a request may come in several packets), at
/// most 8 KiB.
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > 8192 {
            return (!head.is_empty()).then_some(head);
        }
        head.extend_from_slice(&buf[..n]);
    }
    Some(head)
}

fn respond(is_get: bool, path: &str, metrics: &Metrics) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match (is_get, path) {
        (false, _) => ("405 Method Not Allowed", TEXT, "GET only\n".into()),
        (true, "/metrics") => ("200 OK", "text/plain; version=0.0.4", metrics.render()),
        (true, "/healthz") => ("200 OK", TEXT, "ok\n".into()),
        (true, "/readyz") => match metrics.readiness() {
            Ok(()) => ("200 OK", TEXT, "ready\n".into()),
            Err(why) => ("503 Service Unavailable", TEXT, format!("not ready: {why}\n")),
        },
        (true, "/config") => ("200 OK", "application/json", metrics.reload.status()),
        (true, _) => ("404 Not Found", TEXT, "try /metrics, /healthz, /readyz or /config\n".into()),
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
