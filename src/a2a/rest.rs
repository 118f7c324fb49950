//! The checks the bridge makes on an HTTP+JSON call before the SDK's REST router reads it, and
//! their answers in that binding's error shape (`{"error": {code, status, message, details}}`,
//! A2A 1.0 §11.6). Two checks the SDK makes on JSON-RPC only, or on neither binding: the
//! `A2A-Version` (a request without one is 0.3, which this service does not speak), and what
//! A2A 1.0 requires of a message. And what the router answers, made what A2A 1.0 says (§11.1)
//! and the a2a-sdk's server sends ([`conformed`]).

use super::required;
use a2a::{A2AError, PROTOCOL_DOMAIN, TypedDetail, error_code, error_reason};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The paths, below the agent's, that send a message (A2A 1.0's and the SDK's older ones).
const SENDS: [&str; 4] = ["/message:send", "/message:stream", "/message/send", "/message/stream"];

/// What an HTTP+JSON call to `path` is answered when it may not reach the SDK.
pub fn refused(headers: &HeaderMap, path: &str, body: &[u8]) -> Option<Response> {
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok()).unwrap_or("0.3").trim();
    if version.split('.').next() != Some("1") {
        return Some(answer(A2AError::version_not_supported(version)));
    }
    if !is_send(path) {
        return None;
    }
    let why = required::missing_in_request(body)?;
    Some(answer(A2AError::invalid_params(format!("invalid params: {why}"))))
}

/// Whether `path` sends a message.
pub fn is_send(path: &str) -> bool {
    SENDS.iter().any(|send| path.ends_with(send))
}

/// `error` as the HTTP+JSON binding answers it.
pub fn answer(error: A2AError) -> Response {
    let status = StatusCode::from_u16(error.http_status_code()).unwrap_or(StatusCode::BAD_REQUEST);
    let grpc = match error.code {
        error_code::VERSION_NOT_SUPPORTED
        | error_code::PUSH_NOTIFICATION_NOT_SUPPORTED
        | error_code::UNSUPPORTED_OPERATION => "FAILED_PRECONDITION",
        _ => "INVALID_ARGUMENT",
    };
    shaped(status, grpc, error_reason(error.code), &error.message)
}

/// An error of the binding's shape.
fn shaped(status: StatusCode, grpc: &str, reason: &str, message: &str) -> Response {
    let info = TypedDetail::error_info(reason, PROTOCOL_DOMAIN, None);
    let body =
        json!({"error": {"code": status.as_u16(), "status": grpc, "message": message, "details": [info]}});
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static(JSON))], body.to_string()).into_response()
}

/// The media type of every JSON answer of the binding (A2A 1.0 §11.1; the a2a-sdk's server, the
/// TCK's HTTP_JSON-SVC-001 and HTTP_JSON-ERR-001).
const JSON: &str = "application/json";

/// What the SDK's REST router answered, as A2A 1.0 and the a2a-sdk's server answer it: JSON as
/// `application/json` (the router says `application/a2a+json`, and `application/problem+json`
/// for a body that is not RFC 9457's), and a request the router's extractors refused (a body
/// that is not JSON, a request not said to be JSON: axum's plain-text 400, 415 or 422) as an
/// error of the binding's shape. Streams (`text/event-stream`) and 2xx bodies are untouched.
pub async fn conformed(mut answer: Response) -> Response {
    let media = answer.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if media.starts_with("application/a2a+json") || media.starts_with("application/problem+json") {
        answer.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
        return answer;
    }
    let status = answer.status();
    if !status.is_client_error() || !media.starts_with("text/plain") {
        return answer;
    }
    let body = axum::body::to_bytes(std::mem::take(answer.body_mut()), 64 * 1024).await.unwrap_or_default();
    let why = String::from_utf8_lossy(&body);
    shaped(status, "INVALID_ARGUMENT", "INVALID_REQUEST", why.trim())
}

#[cfg(test)]
#[path = "rest_tests.rs"]
mod tests;
