//! The checks the bridge makes on an HTTP+JSON call before the SDK's REST router reads it, and
//! their answers in that binding's error shape (the SDK's own: `{"error": {code, status,
//! message, details}}` as `application/problem+json`, A2A 1.0 §11.6). Two checks the SDK makes
//! on JSON-RPC only, or on neither binding: the `A2A-Version` (a request without one is 0.3,
//! which this service does not speak), and what A2A 1.0 requires of a message.

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
        error_code::VERSION_NOT_SUPPORTED => "FAILED_PRECONDITION",
        _ => "INVALID_ARGUMENT",
    };
    let info = TypedDetail::error_info(error_reason(error.code), PROTOCOL_DOMAIN, None);
    let body = json!({"error": {"code": status.as_u16(), "status": grpc, "message": error.message, "details": [info]}});
    let problem = [(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"))];
    (status, problem, body.to_string()).into_response()
}

#[cfg(test)]
#[path = "rest_tests.rs"]
mod tests;
