//! The operator's HTTP endpoint, on axum (hyper): `/metrics` (Prometheus text), `/healthz`
//! (the process is alive), `/readyz` (connected, subscribed, and the broker confirming what is
//! published, else 503 with the reason) and `/config` (the last configuration reload, JSON);
//! HTTPS with `http.cert_file` and `http.key_file` ([`tls`]). Beside them, the A2A routes
//! (`[a2a]`) and the MCP route (`[mcp]`).

pub mod tls;

use crate::a2a::A2aService;
use crate::telemetry::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

const TEXT: &str = "text/plain; charset=utf-8";

/// What the listener serves besides the operator's routes.
#[derive(Default)]
pub struct Services {
    /// The A2A service (`[a2a]`).
    pub a2a: Option<Arc<A2aService>>,
    /// The MCP server (`[mcp]`).
    pub mcp: Option<crate::mcp::McpService>,
}

/// Serves until `shutdown` fires.
/// `tls`: HTTPS with this server configuration ([`tls::server_config`]), else plain HTTP.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<tls::ServerConfig>>,
    metrics: Arc<Metrics>,
    services: Services,
    shutdown: CancellationToken,
) {
    if let Ok(addr) = listener.local_addr() {
        let a2a = if services.a2a.is_some() { ", /a2a" } else { "" };
        let mcp = if services.mcp.is_some() { ", /mcp" } else { "" };
        let scheme = if tls.is_some() { "https" } else { "http" };
        info!(%addr, scheme, "HTTP endpoint listening (/metrics, /healthz, /readyz, /config{a2a}{mcp})");
    }
    let mut routes = router(metrics);
    if let Some(tasks) = services.a2a {
        routes = routes.merge(crate::a2a::serve::routes(tasks));
    }
    if let Some(mcp) = services.mcp {
        routes = routes.merge(crate::mcp::serve::routes(mcp, shutdown.child_token()));
    }
    let stopped = shutdown.cancelled_owned();
    let served = match tls {
        None => axum::serve(listener, routes).with_graceful_shutdown(stopped).await,
        Some(config) => match tls::TlsListener::new(listener, config) {
            Ok(listener) => axum::serve(listener, routes).with_graceful_shutdown(stopped).await,
            Err(error) => Err(error),
        },
    };
    if let Err(error) = served {
        warn!(%error, "the HTTP endpoint stopped");
    }
}

/// The routes; any other path is 404, any other method 405.
pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { (StatusCode::OK, [(header::CONTENT_TYPE, TEXT)], "ok\n") }))
        .route("/readyz", get(readyz))
        .route("/config", get(config))
        .route("/conversations", get(conversations_page))
        .route("/conversations.json", get(conversations_json))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, TEXT)],
                "try /metrics, /healthz, /readyz, /config or /conversations\n",
            )
        })
        .with_state(metrics)
}

/// The page that draws the last conversations (docs/OBSERVABILITY.md): one file, built into
/// the binary, that reads `conversations.json` beside it.
const CONVERSATIONS_PAGE: &str = include_str!("http/conversations.html");

async fn conversations_page(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.traces.conversations() {
        Some(_) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")],
            CONVERSATIONS_PAGE,
        )
            .into_response(),
        None => page_off(),
    }
}

async fn conversations_json(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.traces.conversations() {
        Some(log) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store")],
            log.to_json().to_string(),
        )
            .into_response(),
        None => page_off(),
    }
}

fn page_off() -> Response {
    let why = "the conversations page is off ([traces] conversations = 0)\n";
    (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, TEXT)], why).into_response()
}

async fn metrics_text(State(metrics): State<Arc<Metrics>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], metrics.render()).into_response()
}

async fn readyz(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.readiness() {
        Ok(()) => (StatusCode::OK, [(header::CONTENT_TYPE, TEXT)], ready_text(&metrics)).into_response(),
        Err(why) => {
            (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, TEXT)], format!("not ready: {why}\n"))
                .into_response()
        }
    }
}

/// `ready`, then the broker address each connection is on (`broker: stomp://...`).
fn ready_text(metrics: &Metrics) -> String {
    let mut text = "ready\n".to_owned();
    for address in metrics.broker.live() {
        text.push_str("broker: ");
        text.push_str(&address);
        text.push('\n');
    }
    text
}

async fn config(State(metrics): State<Arc<Metrics>>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], metrics.reload.status()).into_response()
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
