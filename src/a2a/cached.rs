//! A card's HTTP answer (A2A 1.0 §8.6, SHOULD): its JSON with `Cache-Control`, an `ETag` (a
//! hash of the body) and `Last-Modified` (MAY: when this process first served that body), or
//! 304 without a body when the client's `If-None-Match` names that tag, or, without
//! `If-None-Match`, its `If-Modified-Since` is not before `Last-Modified` (RFC 9110 §13.2.2).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{LazyLock, Mutex};
use time::OffsetDateTime;
use time::format_description::BorrowedFormatItem;

/// HTTP's date (IMF-fixdate, RFC 9110 §5.6.7), always in GMT.
static HTTP_DATE: LazyLock<Vec<BorrowedFormatItem<'static>>> = LazyLock::new(|| {
    let format = "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT";
    time::format_description::parse_borrowed::<2>(format).unwrap_or_default()
});

/// Cards kept at most in [`Versions`] (served agents may be globs); past it, it starts over,
/// which costs a client one full answer.
const MAX_VERSIONS: usize = 10_000;

/// When each card's current body was first served, by agent: its `Last-Modified`. A body not
/// seen before (the first request since the start, or a description that changed) is modified
/// now.
#[derive(Debug, Default)]
pub struct Versions(Mutex<HashMap<String, (String, OffsetDateTime)>>);

impl Versions {
    /// When the body of `agent`'s card tagged `tag` was first served, as of `now`.
    pub fn since(&self, agent: &str, tag: &str, now: OffsetDateTime) -> OffsetDateTime {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, at)) = seen.get(agent)
            && held == tag
        {
            return *at;
        }
        if seen.len() >= MAX_VERSIONS {
            seen.clear();
        }
        // Whole seconds, as the header says it: an If-Modified-Since of this value matches.
        let at = now.replace_nanosecond(0).unwrap_or(now);
        seen.insert(agent.to_owned(), (tag.to_owned(), at));
        at
    }
}

/// How long a client or a cache may use a card without asking again. Short, because a card
/// can change while the bridge runs: without an `a2a.descriptions` entry its description is
/// read from the Wise Agents registry on each request; a client sees such a change within a
/// minute. Once it is stale, a client that sends the `ETag` back is answered 304.
pub const CACHE_CONTROL: &str = "public, max-age=60";

/// `card` as JSON, with its caching headers; 304 when `request` already holds it. `modified`:
/// when the body of a tag was first served.
pub fn answer(
    card: &impl Serialize,
    request: &HeaderMap,
    modified: impl FnOnce(&str) -> OffsetDateTime,
) -> Response {
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
    let since = modified(&tag);
    let date = since.format(&HTTP_DATE).ok().and_then(|d| HeaderValue::from_str(&d).ok());
    let Some(date) = date else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the card's date is not a header value\n")
            .into_response();
    };
    let caching = [
        (header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)),
        (header::ETAG, tag_value),
        (header::LAST_MODIFIED, date),
    ];
    let unchanged = match request.contains_key(header::IF_NONE_MATCH) {
        true => holds(request, &tag),
        false => unmodified_since(request, since),
    };
    if unchanged {
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

/// Whether `If-Modified-Since` is a date not before `since` (one that cannot be read is not).
fn unmodified_since(request: &HeaderMap, since: OffsetDateTime) -> bool {
    let Some(text) = request.get(header::IF_MODIFIED_SINCE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let held = time::PrimitiveDateTime::parse(text.trim(), &HTTP_DATE).map(|d| d.assume_utc());
    held.is_ok_and(|held| held >= since)
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
