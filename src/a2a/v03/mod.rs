//! A2A 0.3 on the JSON-RPC binding, for the clients that have not moved to 1.0 (docs/A2A.md,
//! "A2A 0.3"). As the official Python SDK serves it beside 1.0 (its `compat/v0_3` layer): a
//! request whose method is one of 0.3's (`message/send`, `message/stream`, `tasks/get`,
//! `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/*`,
//! `agent/getAuthenticatedExtendedCard`) and whose `A2A-Version` is absent or 0.x is read as 0.3,
//! made the 1.0 call it is ([`shapes`]), and given to the SDK's JSON-RPC router like any other,
//! so that the same checks, tasks, stage, metrics and traces serve it; its answer, or each event
//! of its stream, is written back in 0.3's shapes. The card says both (its 0.3 fields beside
//! 1.0's, [`card`]).

mod shapes;
mod transport;

pub use transport::Transport03;

use a2a::{A2AError, AgentCard, JsonRpcId, JsonRpcResponse, methods};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The protocol version the card's 0.3 interface and fields name.
pub const VERSION: &str = "0.3";

/// A method of A2A 0.3's JSON-RPC binding, each the 1.0 method it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    Send,
    Stream,
    GetTask,
    Cancel,
    Resubscribe,
    SetWebhook,
    GetWebhook,
    ListWebhooks,
    DeleteWebhook,
    ExtendedCard,
}

/// Each 0.3 method's name, its [`Method`] and the 1.0 method it is.
const METHODS: [(&str, Method, &str); 10] = [
    ("message/send", Method::Send, methods::SEND_MESSAGE),
    ("message/stream", Method::Stream, methods::SEND_STREAMING_MESSAGE),
    ("tasks/get", Method::GetTask, methods::GET_TASK),
    ("tasks/cancel", Method::Cancel, methods::CANCEL_TASK),
    ("tasks/resubscribe", Method::Resubscribe, methods::SUBSCRIBE_TO_TASK),
    ("tasks/pushNotificationConfig/set", Method::SetWebhook, methods::CREATE_PUSH_CONFIG),
    ("tasks/pushNotificationConfig/get", Method::GetWebhook, methods::GET_PUSH_CONFIG),
    ("tasks/pushNotificationConfig/list", Method::ListWebhooks, methods::LIST_PUSH_CONFIGS),
    ("tasks/pushNotificationConfig/delete", Method::DeleteWebhook, methods::DELETE_PUSH_CONFIG),
    ("agent/getAuthenticatedExtendedCard", Method::ExtendedCard, methods::GET_EXTENDED_AGENT_CARD),
];

impl Method {
    fn named(name: &str) -> Option<(Method, &'static str)> {
        METHODS.iter().find(|(n, _, _)| *n == name).map(|(_, method, v1)| (*method, *v1))
    }

    /// The 1.0 call's params, from the 0.3 call's.
    fn params_to_v1(self, params: &Value) -> Result<Value, String> {
        match self {
            Method::Send | Method::Stream => shapes::send_params_to_v1(params),
            Method::GetTask => shapes::kept(params, &[("id", "id"), ("historyLength", "history_length")]),
            Method::Cancel => shapes::kept(params, &[("id", "id"), ("metadata", "metadata")]),
            Method::Resubscribe => shapes::kept(params, &[("id", "id")]),
            Method::SetWebhook => shapes::set_webhook_params_to_v1(params),
            Method::GetWebhook | Method::ListWebhooks | Method::DeleteWebhook => {
                shapes::webhook_of_task_to_v1(params)
            }
            Method::ExtendedCard => Ok(json!({})),
        }
    }

    /// The 0.3 result, from the 1.0 call's (a stream's: each event's).
    fn result_to_v03(self, result: &Value) -> Value {
        match self {
            Method::Send => shapes::send_result_to_v03(result),
            Method::Stream | Method::Resubscribe => shapes::event_to_v03(result),
            Method::GetTask | Method::Cancel => shapes::task_to_v03(result),
            Method::SetWebhook | Method::GetWebhook => shapes::webhook_to_v03(result),
            Method::ListWebhooks => shapes::webhooks_to_v03(result),
            Method::DeleteWebhook | Method::ExtendedCard => result.clone(),
        }
    }
}

/// A JSON-RPC request, as far as telling its method.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    method: Option<String>,
}

/// What a JSON-RPC request is to this layer: `None` for one that is not A2A 0.3's (a 1.0 call,
/// or one the SDK refuses as it is); else the 1.0 call it is (its body, and the method whose
/// answer is written back), or the answer that refuses it: `-32009` for a 0.3 method sent with
/// an `A2A-Version` of 1.0 or later (as the Python SDK answers it), `-32602` for params that
/// 0.3 does not give that shape.
pub fn read(headers: &HeaderMap, body: &[u8]) -> Option<Result<(Method, Vec<u8>), Response>> {
    let name = serde_json::from_slice::<Head>(body).ok()?.method?;
    let (method, v1) = Method::named(&name)?;
    let call: Map<String, Value> = serde_json::from_slice(body).ok()?;
    let id = call.get("id").cloned().and_then(|id| serde_json::from_value::<JsonRpcId>(id).ok());
    let id = id.unwrap_or(JsonRpcId::Null);
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or(VERSION);
    if !version.is_empty() && version.split('.').next() != Some("0") {
        let why = format!("{name} is A2A 0.3's; this request names A2A-Version {version}");
        return Some(Err(refused(id, A2AError::new(a2a::error_code::VERSION_NOT_SUPPORTED, why))));
    }
    let params = call.get("params").unwrap_or(&Value::Null);
    let params = match method.params_to_v1(params) {
        Ok(params) => params,
        Err(why) => {
            return Some(Err(refused(id, A2AError::invalid_params(format!("invalid params: {why}")))));
        }
    };
    let v1 = json!({"jsonrpc": call.get("jsonrpc").cloned().unwrap_or(Value::Null), "id": call.get("id"),
        "method": v1, "params": params});
    Some(Ok((method, serde_json::to_vec(&v1).unwrap_or_default())))
}

/// The A2A-Version a 0.3 call is given to the SDK's router with: it is a 1.0 call now.
pub fn v1_version() -> HeaderValue {
    HeaderValue::from_static("1.0")
}

fn refused(id: JsonRpcId, error: A2AError) -> Response {
    axum::Json(JsonRpcResponse::error(id, error.to_jsonrpc_error())).into_response()
}

/// The SDK's `answer` to the 1.0 call that `method` became, in 0.3's shapes: its result, or each
/// event of its stream (errors have the same codes in both versions and pass as they are).
pub async fn answer(method: Method, answer: Response) -> Response {
    let streams = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    let (mut parts, body) = answer.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    if streams {
        return Response::from_parts(parts, Body::from_stream(events(method, body)));
    }
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => Response::from_parts(parts, Body::from(rewritten(method, &bytes))),
        Err(e) => refused(JsonRpcId::Null, A2AError::internal(format!("the answer could not be read: {e}"))),
    }
}

/// A JSON-RPC response with its result in 0.3's shape; anything else as it is.
fn rewritten(method: Method, response: &[u8]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(response) else { return response.to_vec() };
    let Some(result) = value.get_mut("result") else { return response.to_vec() };
    *result = method.result_to_v03(result);
    serde_json::to_vec(&value).unwrap_or_else(|_| response.to_vec())
}

/// An SSE body whose events' `data` are rewritten: whole events are taken as they complete,
/// comments and ids pass as they are.
fn events(method: Method, body: Body) -> impl futures_util::Stream<Item = Result<Bytes, axum::Error>> {
    let mut cut = Events::default();
    body.into_data_stream().filter_map(move |chunk| {
        let out = chunk.and_then(|chunk| {
            let events = cut.feed(&chunk).map_err(axum::Error::new)?;
            Ok(Bytes::from(
                events.iter().flat_map(|event| rewritten_event(method, event)).collect::<Vec<u8>>(),
            ))
        });
        std::future::ready(match out {
            Ok(bytes) if bytes.is_empty() => None,
            other => Some(other),
        })
    })
}

/// The largest SSE event taken, as the SDK's client takes them (a2a-go's `MaxSSETokenSize`).
const MAX_EVENT_BYTES: usize = 10 << 20;

/// An SSE byte stream cut into its events, whatever its chunks. Lines end at `\n`, `\r\n` or a
/// lone `\r` (as SSE allows; sse-starlette writes `\r\n`), each made `\n`; an event ends at a
/// blank line.
#[derive(Default)]
pub struct Events {
    pending: Vec<u8>,
    /// How much of `pending` holds no event's end (not scanned again).
    scanned: usize,
    /// The last byte taken was a `\r`: a `\n` right after it belongs to it.
    after_cr: bool,
}

impl Events {
    /// The events `chunk` completes, each with the blank line that ends it; what is left is
    /// kept for the next chunk. An event longer than [`MAX_EVENT_BYTES`] is an error.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' => (self.pending.push(b'\n'), self.after_cr = true).1,
                _ => (self.pending.push(b), self.after_cr = false).1,
            }
        }
        let mut events = Vec::new();
        loop {
            let from = self.scanned.saturating_sub(1);
            match self.pending[from..].windows(2).position(|w| w == b"\n\n") {
                Some(at) => {
                    events.push(self.pending.drain(..from + at + 2).collect());
                    self.scanned = 0;
                }
                None => {
                    self.scanned = self.pending.len();
                    break;
                }
            }
        }
        if self.pending.len() > MAX_EVENT_BYTES {
            return Err(format!("an SSE event longer than {MAX_EVENT_BYTES} bytes"));
        }
        Ok(events)
    }

    /// What was left when the stream ended, as its last event (a server may end it without the
    /// blank line); `None` when nothing but line ends was left.
    pub fn rest(&mut self) -> Option<Vec<u8>> {
        self.scanned = 0;
        let rest = std::mem::take(&mut self.pending);
        rest.iter().any(|b| *b != b'\n').then_some(rest)
    }
}

/// One SSE event (its lines and the blank line that ends it) with its `data` line rewritten.
fn rewritten_event(method: Method, event: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(event.len() + 64);
    for line in event.split_inclusive(|b| *b == b'\n') {
        match line.strip_prefix(b"data:") {
            Some(data) => {
                let json = data.strip_prefix(b" ").unwrap_or(data);
                let json = json.strip_suffix(b"\n").unwrap_or(json);
                out.extend_from_slice(b"data: ");
                out.extend(rewritten(method, json));
                out.push(b'\n');
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// `card` as JSON with A2A 0.3's fields beside 1.0's, as the Python SDK writes its cards: the
/// 0.3 interface's `url`, `preferredTransport` and `protocolVersion`, `security` (0.3's
/// `securityRequirements`, each a map of scheme to scopes), and each HTTP scheme's 0.3 fields
/// (`type`, `scheme`) beside its `httpAuthSecurityScheme`. A 1.0 reader ignores the 0.3 fields, a 0.3 reader the 1.0 ones.
pub fn card(card: &AgentCard) -> Value {
    let mut value = serde_json::to_value(card).unwrap_or_default();
    let legacy = card.supported_interfaces.iter().find(|i| i.protocol_version == VERSION);
    let Some(object) = value.as_object_mut() else { return value };
    if let Some(legacy) = legacy {
        object.insert("url".into(), legacy.url.clone().into());
        object.insert("preferredTransport".into(), legacy.protocol_binding.clone().into());
        object.insert("protocolVersion".into(), VERSION.into());
    }
    if let Some(required) = object.get("securityRequirements").and_then(Value::as_array) {
        let security: Vec<Value> = required.iter().map(security_to_v03).collect();
        object.insert("security".into(), security.into());
    }
    if let Some(schemes) = object.get_mut("securitySchemes").and_then(Value::as_object_mut) {
        for scheme in schemes.values_mut().filter_map(Value::as_object_mut) {
            let Some(http) = scheme.get("httpAuthSecurityScheme").and_then(Value::as_object).cloned() else {
                continue;
            };
            scheme.insert("type".into(), "http".into());
            scheme.extend(http);
        }
    }
    value
}

/// The URL of an A2A 0.3 card's JSON-RPC interface: its `url` when its `preferredTransport` is
/// JSON-RPC (0.3's default), else the one of `additionalInterfaces` whose transport is. `None`
/// for a card of another version.
pub fn jsonrpc_url(card: &Value) -> Option<String> {
    let version = card.get("protocolVersion").and_then(Value::as_str).unwrap_or("0.3");
    if !version.starts_with("0.") {
        return None;
    }
    let url = |i: &Value| i.get("url").and_then(Value::as_str).map(str::to_owned);
    match card.get("preferredTransport").and_then(Value::as_str).unwrap_or("JSONRPC") {
        "JSONRPC" => url(card),
        _ => card
            .get("additionalInterfaces")?
            .as_array()?
            .iter()
            .find(|i| i.get("transport").and_then(Value::as_str) == Some("JSONRPC"))
            .and_then(url),
    }
}

/// A 1.0 security requirement (`{"schemes": {name: {"list": [scope, …]}}}`) as 0.3's
/// (`{name: [scope, …]}`).
fn security_to_v03(required: &Value) -> Value {
    let schemes = required.get("schemes").and_then(Value::as_object).cloned().unwrap_or_default();
    let scopes = |s: Value| s.get("list").cloned().unwrap_or_else(|| json!([]));
    Value::Object(schemes.into_iter().map(|(name, s)| (name, scopes(s))).collect())
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
