//! A card's HTTP answer (A2A 1.0 §8.6, SHOULD): its JSON with `Cache-Control` and an `ETag`
//! (a hash of the body), or 304 without a body when the client's `If-None-Match` names that
//! tag.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::hash::{DefaultHasher, Hasher};

/// How long a client or a cache may use a card without asking again. Short, because a card
/// can change while the bridge runs: without an `a2a.descriptions` entry its description is
/// read from the Wise Agents registry on each request; a client sees such a change within a
/// minute. Once it is stale, a client that sends the `ETag` back is answered 304.
pub const CACHE_CONTROL: &str = "public, max-age=60";

/// `card` as JSON, with its caching headers; 304 when `request` already holds it.
pub fn answer(card: &impl Serialize, request: &HeaderMap) -> Response {
    let body = match serde_json::to_vec(card) {
        Ok(body) => body,
        Err(e) => {
            let why = format!("the agent card cannot be written as JSON: {e}\n");
            return (StatusCode::INTERNAL_SERVER_ERROR, why).into_response();
        }
    };
    let tag = etag(&body);
    let Ok(tag_value) = HeaderValue::from_str(&tag) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the card's ETag is not a header value\n")
            .into_response();
    };
    let caching =
        [(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)), (header::ETAG, tag_value)];
    if holds(request, &tag) {
        return (StatusCode::NOT_MODIFIED, caching).into_response();
    }
    let json = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    (caching, json, body).into_response()
}

/// A strong entity tag of `body`: std's SipHash (`DefaultHasher::new()`, fixed keys), the same
/// in every process of one build; another build may hash differently, which costs a client
/// one full answer instead of a 304, never a stale card.
pub fn etag(body: &[u8]) -> String {
    let mut hasher = DefaultHasher::new();
    hasher.write(body);
    format!("\"{:016x}\"", hasher.finish())
}

/// Whether `If-None-Match` names `tag` (or is `*`), compared weakly as RFC 9110 §13.1.2 says.
fn holds(request: &HeaderMap, tag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == tag)
}

#[cfg(test)]
#[path = "cached_tests.rs"]
mod tests;
