//! The MCP route, on the operator's listener: `/mcp`, the SDK's Streamable HTTP service,
//! stateless (no session to lose on a restart or to share between bridges; a request of the
//! 2025 versions with `initialize` is served so too). A request is checked here first: the
//! bearer token is right when one is set (else 401: nothing is asked); the body limit and the
//! `Host` check are the SDK's (413, 403).

use super::Tools;
use crate::config::mcp::McpConfig;
use crate::relay::Relay;
use crate::stomp::Secret;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The route of `relay`'s tools under `config` (its token, body limit and hosts, fixed at start).
pub fn routes(relay: Arc<Relay>, config: &McpConfig, shutdown: CancellationToken) -> Router {
    let tools = Tools::new(relay.clone(), config.max_calls);
    let settings = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_allowed_hosts(config.allowed_hosts.clone());
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        settings,
    );
    let guard = Guard { relay, token: config.token.clone() };
    Router::new().route_service("/mcp", service).layer(from_fn_with_state(Arc::new(guard), check_token))
}

struct Guard {
    relay: Arc<Relay>,
    token: Option<Secret>,
}

async fn check_token(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(token) = &guard.token {
        let given = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let bearer = given.and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")));
        if !bearer.is_some_and(|b| token.matches(b.trim())) {
            guard.relay.metrics.mcp.served.unauthorized();
            // Its body unread, the connection closes after the answer: say so (src/a2a/serve.rs).
            let challenge = [(header::WWW_AUTHENTICATE, "Bearer"), (header::CONNECTION, "close")];
            return (StatusCode::UNAUTHORIZED, challenge, "a bearer token is required (mcp.token_file)\n")
                .into_response();
        }
    }
    next.run(request).await
}
