//! The A2A routes, on the operator's listener: `GET /a2a` (the served agents and their
//! cards), `GET /a2a/<Agent>/.well-known/agent-card.json` (a card, cacheable),
//! `POST /a2a/<Agent>` or `/a2a/<Agent>/` (JSON-RPC) and the HTTP+JSON binding under
//! `/a2a/<Agent>/` (`message:send`, `tasks/<id>`, …), both by the SDK's routers over one request
//! handler, so that a task started on one binding is seen on the other. A call is checked here
//! first: the agent is served (else 404), the bearer token is right when one is required (else
//! 401, or 403 for a JWT not allowed this agent: nothing is published), the body is within
//! `a2a.max_body_bytes` (else 413), an HTTP+JSON call names A2A 1.x in `A2A-Version` (as the
//! SDK checks on JSON-RPC), and a message has what A2A 1.0 requires (else `-32602`, or 400
//! `INVALID_ARGUMENT` on HTTP+JSON). A JSON-RPC call of A2A 0.3 is made the 1.0 call it is
//! first, and its answer written back in 0.3 ([`v03`]).

use super::executor::{AGENT_HEADER, Executor};
use super::handler::Handler;
use super::jwt::Refusal;
use super::required::{self, Missing};
use super::store::Webhooks;
use super::{A2aService, auth, cached, card, rest, v03};
use crate::telemetry::Event as _;
use crate::telemetry::a2a::TokenRefused;
use a2a::{A2AError, AgentCapabilities, JsonRpcResponse};
use a2a_server::DefaultRequestHandler;
use axum::Router;
use axum::body::{Body, Bytes, HttpBody as _};
use axum::extract::{OriginalUri, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use std::sync::Arc;
use tower::ServiceExt as _;

/// The routes of `hub`'s agents.
pub fn routes(hub: Arc<A2aService>) -> Router {
    let tasks = hub.tasks.clone();
    let mut sdk = DefaultRequestHandler::new(Executor { hub: hub.clone() }, tasks.clone());
    if tasks.pushes() {
        // The SDK's sender is made but never called: the store lists it no webhook.
        sdk = sdk.with_push_config_store(Webhooks(tasks.clone()));
    }
    let sdk = sdk
        .with_capabilities(AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(tasks.pushes()),
            extensions: None,
            extended_agent_card: Some(false),
        })
        .with_default_input_modes(card::INPUT_MODES.map(String::from).to_vec());
    let handler = Arc::new(Handler { sdk, tasks });
    let guarded = from_fn_with_state(hub.clone(), guard);
    let jsonrpc = a2a_server::jsonrpc::jsonrpc_router(handler.clone()).layer(guarded.clone());
    let rest = a2a_server::rest::rest_router(handler).layer(guarded);
    // JSON-RPC both with and without a trailing slash: the TCK's client, for one, posts to the
    // card's URL with a `/` added.
    Router::new()
        .route("/a2a", get(listing))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card))
        .with_state(hub)
        .nest("/a2a/{agent}", jsonrpc.clone())
        .nest("/a2a/{agent}/", jsonrpc)
        .route("/a2a/{agent}/{*below}", any(move |request: Request| below_agent(rest.clone(), request)))
}

/// An HTTP+JSON call, given to the SDK's REST router anew: its path the part below the agent's
/// (`/message:send`, `/tasks/<id>`), its original URI kept for the guard, nothing else of the
/// outer routing. Nested under `/a2a/{agent}` instead, the router's handlers would be given the
/// agent's path parameter besides their own, which they do not expect (they read theirs as
/// `Path<String>`, and answer 500 "Wrong number of path arguments").
async fn below_agent(rest: Router, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    let below = path.strip_prefix("/a2a/").and_then(|p| p.split_once('/')).map_or("", |(_, below)| below);
    let query = parts.uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let Ok(uri) = format!("/{below}{query}").parse::<axum::http::Uri>() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let deletes = parts.method == axum::http::Method::DELETE;
    let mut anew = Request::new(body);
    *anew.method_mut() = parts.method;
    *anew.uri_mut() = uri;
    *anew.version_mut() = parts.version;
    *anew.headers_mut() = parts.headers;
    anew.extensions_mut().insert(OriginalUri(parts.uri));
    let answer = match rest.oneshot(anew).await {
        Ok(answer) => rest::conformed(answer).await,
        Err(never) => match never {},
    };
    // A delete answers `google.protobuf.Empty`, `{}` in ProtoJSON, which the a2a-sdk's client
    // parses (and the a2a-sdk's server sends); the Rust SDK's router sends no body.
    if deletes && answer.status() == StatusCode::OK && answer.body().size_hint().exact() == Some(0) {
        let json = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        return (json, "{}").into_response();
    }
    answer
}

/// The binding a request under `/a2a/<Agent>` is for, by its path: JSON-RPC at the agent's URL
/// itself, HTTP+JSON below it.
#[derive(Clone, Copy, PartialEq)]
enum Binding {
    JsonRpc,
    HttpJson,
}

impl Binding {
    fn of(path: &str) -> Binding {
        let below = path.strip_prefix("/a2a/").and_then(|p| p.split_once('/')).map_or("", |(_, rest)| rest);
        if below.is_empty() { Binding::JsonRpc } else { Binding::HttpJson }
    }
}

/// The agent a path names, if it is served.
fn served<'a>(hub: &A2aService, path: &'a str) -> Option<&'a str> {
    let agent = path.strip_prefix("/a2a/")?.split('/').next()?;
    hub.serves(agent).then_some(agent)
}

async fn guard(State(hub): State<Arc<A2aService>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match admit(&hub, parts, body).await {
        Ok((request, None)) => next.run(request).await,
        Ok((request, Some(legacy))) => v03::answer(legacy, next.run(request).await).await,
        Err(refused) => last(refused),
    }
}

/// The request, with its body read and its agent named in [`AGENT_HEADER`], if it may reach
/// the SDK (an A2A 0.3 call made the 1.0 call it is, and its method, whose answer is written
/// back in 0.3's shapes); else what it is answered.
async fn admit(
    hub: &A2aService,
    mut parts: Parts,
    body: Body,
) -> Result<(Request, Option<v03::Method>), Response> {
    // Inside the nest the path is `/`: the agent is in the path as the client sent it.
    let path = parts.extensions.get::<OriginalUri>().map_or(parts.uri.path(), |o| o.0.path());
    let Some(agent) = served(hub, path).map(str::to_owned) else {
        return Err((StatusCode::NOT_FOUND, "no such A2A agent here (GET /a2a lists them)\n").into_response());
    };
    if let Err(refused) = auth::authorize(hub, &parts.headers, &agent).await {
        return Err(refusal(hub, &agent, refused));
    }
    let Ok(body) = axum::body::to_bytes(body, hub.config.max_body_bytes).await else {
        let why = format!("the request is larger than a2a.max_body_bytes ({})\n", hub.config.max_body_bytes);
        return Err((StatusCode::PAYLOAD_TOO_LARGE, why).into_response());
    };
    let (legacy, body) = match Binding::of(path) {
        Binding::JsonRpc => v1_of(&mut parts.headers, body).map_err(|refused| *refused)?,
        Binding::HttpJson => (None, body),
    };
    let refused = match Binding::of(path) {
        Binding::JsonRpc => invalid_params(hub, &parts.headers, &body),
        Binding::HttpJson => rest::refused(&parts.headers, path, &body).or_else(|| {
            let url = required::webhook_in_request(&body).filter(|_| rest::is_send(path))?;
            unwanted_webhook(hub, &url).map(rest::answer)
        }),
    };
    if let Some(refused) = refused {
        return Err(refused);
    }
    let value = HeaderValue::from_str(&agent).map_err(|_| StatusCode::NOT_FOUND.into_response())?;
    parts.headers.insert(AGENT_HEADER, value);
    Ok((Request::from_parts(parts, Body::from(body)), legacy))
}

/// A JSON-RPC `body` as A2A 1.0: an A2A 0.3 call is made the 1.0 call it is (its `A2A-Version`
/// in `headers` 1.0 now), with its method, whose answer is written back in 0.3's shapes.
fn v1_of(headers: &mut HeaderMap, body: Bytes) -> Result<(Option<v03::Method>, Bytes), Box<Response>> {
    let Some(read) = v03::read(headers, &body) else { return Ok((None, body)) };
    let (method, v1) = read.map_err(Box::new)?;
    headers.insert("a2a-version", v03::v1_version());
    Ok((Some(method), v1.into()))
}

/// `answer` as the last on its connection when its request's body was not read whole (a
/// refusal before the body, or a body past the limit): the server closes the connection after
/// it, and `Connection: close` says so, so that a client does not send its next request on a
/// connection that is closing (httpx's pool did, and got "Server disconnected").
fn last(mut answer: Response) -> Response {
    if answer.status() != StatusCode::OK {
        answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}

/// The answer to a request refused for its token (RFC 6750 §3): 401 with the `Bearer`
/// challenge, and `invalid_token` when a token was given; 403 `insufficient_scope`. Neither
/// says the token, nor does the line logged.
fn refusal(hub: &A2aService, agent: &str, refused: Refusal) -> Response {
    let (status, challenge, why) = match &refused {
        Refusal::Missing => (StatusCode::UNAUTHORIZED, "Bearer", "a bearer token is required"),
        Refusal::Invalid(why) => (StatusCode::UNAUTHORIZED, "Bearer error=\"invalid_token\"", why.as_str()),
        Refusal::NotAllowed(why) => {
            (StatusCode::FORBIDDEN, "Bearer error=\"insufficient_scope\"", why.as_str())
        }
    };
    let forbidden = status == StatusCode::FORBIDDEN;
    TokenRefused { agent, forbidden, why }.emit(&hub.relay.metrics.a2a);
    let challenge = [(header::WWW_AUTHENTICATE, challenge)];
    (status, challenge, format!("{why}\n")).into_response()
}

/// A message that lacks what A2A 1.0 requires, answered as the SDK answers invalid params
/// (`-32602`, HTTP 200) before it can become a task. Only for an A2A 1.x request: the SDK
/// answers any other version `-32009` first, and so it still does.
fn invalid_params(hub: &A2aService, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok()).unwrap_or("0.3");
    if version.trim().split('.').next() != Some("1") {
        return None;
    }
    let (id, error) = match required::missing(body) {
        Some(Missing { id, why }) => (id, A2AError::invalid_params(format!("invalid params: {why}"))),
        None => {
            let (id, url) = required::webhook_in_call(body)?;
            (id, unwanted_webhook(hub, &url)?)
        }
    };
    Some(axum::Json(JsonRpcResponse::error(id, error.to_jsonrpc_error())).into_response())
}

/// Why the webhook at `url` that a message sets cannot be, if it cannot: push notifications
/// are not offered (`-32003`, as the SDK answers), or its address is not allowed.
fn unwanted_webhook(hub: &A2aService, url: &str) -> Option<A2AError> {
    let Some(pusher) = &hub.pusher else { return Some(A2AError::push_notification_not_supported()) };
    super::push::refusal(url, pusher.config.allow_private).map(A2AError::invalid_params)
}

async fn agent_card(
    State(hub): State<Arc<A2aService>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !hub.serves(&agent) {
        return (StatusCode::NOT_FOUND, "no such A2A agent here (GET /a2a lists them)\n").into_response();
    }
    let description = hub.description(&agent).await;
    let card = v03::card(&card::card(&hub, &agent, &hub.base_url, description));
    cached::answer(&card, &headers, |tag| hub.cards.since(&agent, tag, time::OffsetDateTime::now_utc()))
}

/// The agents named in `a2a.serve` and, with the Wise Agents registry, the agents in it that
/// its globs match (`serve = ["*"]`: every agent in the registry); where their cards are.
/// Without the registry a glob is served as asked for, not listed.
async fn listing(State(hub): State<Arc<A2aService>>) -> Response {
    let base = hub.base_url.trim_end_matches('/');
    let mut named: Vec<String> =
        hub.config.serve.iter().filter(|s| !crate::names::is_glob(s)).cloned().collect();
    for agent in hub.registered().await {
        if !named.contains(&agent) {
            named.push(agent);
        }
    }
    let agents: Vec<serde_json::Value> = named
        .iter()
        .map(
            |a| serde_json::json!({"name": a, "card": format!("{base}/a2a/{a}/.well-known/agent-card.json")}),
        )
        .collect();
    let globs: Vec<&String> = hub.config.serve.iter().filter(|s| crate::names::is_glob(s)).collect();
    axum::Json(serde_json::json!({"agents": agents, "globs": globs})).into_response()
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
