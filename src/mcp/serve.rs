//! The MCP route, on the operator's listener: `/mcp`, the SDK's Streamable HTTP service,
//! stateless (no session to lose on a restart or to share between bridges; a request of the
//! 2025 versions with `initialize` is served so too). A request is checked here first: with
//! `mcp.token_file` or `[mcp.jwt]`, it carries that token or a JWT the table accepts (else 401:
//! nothing is asked; which of them it was goes with the request, a JWT's claims for the tools it
//! may list and call, and as the owner of the tasks it makes);
//! the body limit and the `Host` check are the SDK's (413, 403).

use super::{McpService, Principal, Tools};
use crate::a2a::jwt::{Jwt, Refusal, bearer};
use crate::stomp::Secret;
use crate::telemetry::Event as _;
use crate::telemetry::mcp::{KeysUnread, TokenRefused};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The route of `mcp`'s tools (its token, JWT, body limit and hosts, fixed at start).
pub fn routes(mcp: McpService, shutdown: CancellationToken) -> Router {
    let McpService { relay, config, jwt } = mcp;
    let tools = Tools::new(relay.clone(), config.max_calls, jwt.clone());
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
    let guard = Guard { relay, token: config.token.clone(), jwt };
    Router::new().route_service("/mcp", service).layer(from_fn_with_state(Arc::new(guard), check_token))
}

/// `jwt`'s checker, its keys read again on a period beside the server (on the runtime).
pub fn checker(jwt: &crate::config::jwt::JwtConfig, relay: &crate::relay::Relay) -> Result<Arc<Jwt>, String> {
    let jwt = Arc::new(Jwt::new(jwt, "mcp.jwt")?);
    let metrics = relay.metrics.clone();
    crate::a2a::jwt::spawn_refresh(&jwt, move |u| {
        KeysUnread { from: &u.from, why: &u.why }.emit(&metrics.mcp)
    });
    Ok(jwt)
}

struct Guard {
    relay: Arc<crate::relay::Relay>,
    token: Option<Secret>,
    jwt: Option<Arc<Jwt>>,
}

async fn check_token(State(guard): State<Arc<Guard>>, mut request: Request, next: Next) -> Response {
    if guard.token.is_none() && guard.jwt.is_none() {
        return next.run(request).await;
    }
    let refused = match bearer(request.headers()) {
        None => Refusal::Missing,
        Some(given) if guard.token.as_ref().is_some_and(|t| t.matches(given)) => {
            return next.run(request).await;
        }
        Some(given) => match &guard.jwt {
            None => Refusal::Invalid("it is not the token of mcp.token_file".into()),
            Some(jwt) => {
                let metrics = &guard.relay.metrics.mcp;
                match jwt.verify(given, |u| KeysUnread { from: &u.from, why: &u.why }.emit(metrics)).await {
                    Ok(claims) => {
                        request.extensions_mut().insert(Principal::Jwt(claims));
                        return next.run(request).await;
                    }
                    Err(refused) => refused,
                }
            }
        },
    };
    refusal(&guard, refused)
}

/// 401 with the `Bearer` challenge (`invalid_token` when a token was given), and why; the
/// body unread, the connection closes after the answer, and says so (src/a2a/serve.rs).
fn refusal(guard: &Guard, refused: Refusal) -> Response {
    let (challenge, why) = match &refused {
        Refusal::Missing => ("Bearer", "a bearer token is required (mcp.token_file or mcp.jwt)"),
        Refusal::Invalid(why) | Refusal::NotAllowed(why) => ("Bearer error=\"invalid_token\"", why.as_str()),
    };
    TokenRefused { why }.emit(&guard.relay.metrics.mcp);
    let headers = [(header::WWW_AUTHENTICATE, challenge), (header::CONNECTION, "close")];
    (StatusCode::UNAUTHORIZED, headers, format!("{why}\n")).into_response()
}
