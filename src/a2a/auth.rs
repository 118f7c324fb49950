//! Who may call a served agent: anyone when neither `a2a.token_file` nor `[a2a.jwt]` is set;
//! else the holder of the static token (every agent), or of a JWT that `[a2a.jwt]` accepts
//! for this agent.

use super::A2aService;
use super::jwt::{Refusal, bearer};
use crate::telemetry::Event as _;
use crate::telemetry::a2a::KeysUnread;
use axum::http::HeaderMap;

/// Whether the request with `headers` may call `agent`.
pub async fn authorize(hub: &A2aService, headers: &HeaderMap, agent: &str) -> Result<(), Refusal> {
    let static_token = hub.config.token.as_ref();
    if static_token.is_none() && hub.jwt.is_none() {
        return Ok(());
    }
    let Some(given) = bearer(headers) else {
        return Err(Refusal::Missing);
    };
    if static_token.is_some_and(|t| t.matches(given)) {
        return Ok(());
    }
    let Some(jwt) = &hub.jwt else {
        return Err(Refusal::Invalid("it is not the token of a2a.token_file".into()));
    };
    let metrics = &hub.relay.metrics.a2a;
    jwt.check(given, agent, |u| KeysUnread { from: &u.from, why: &u.why }.emit(metrics)).await
}
