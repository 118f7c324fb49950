//! What A2A 1.0 marks REQUIRED in a `SendMessage` or `SendStreamingMessage` request
//! (`SendMessageRequest.message`; `Message.messageId`, `role`, `parts`), checked on the JSON-RPC
//! body, or the HTTP+JSON one (`POST …/message:send`), before the SDK reads it: its ProtoJSON decoding gives a missing field its default (a
//! missing message becomes an empty one with a new id and `ROLE_USER`), so such a request would
//! otherwise become a task. Pure.

use a2a::{JsonRpcId, methods};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// A request this check refuses: its JSON-RPC id, and why (the `-32602` error's message).
#[derive(Debug, PartialEq)]
pub struct Missing {
    pub id: JsonRpcId,
    pub why: String,
}

/// The JSON-RPC envelope, as far as the check reads it (the rest is skipped unread).
#[derive(Deserialize)]
struct Call {
    jsonrpc: String,
    #[serde(default)]
    id: Option<JsonRpcId>,
    method: String,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    message: Option<Shape>,
    #[serde(default)]
    configuration: Option<Configuration>,
}

/// A request's `configuration`, as far as the webhook it may set.
#[derive(Deserialize)]
struct Configuration {
    #[serde(default, alias = "task_push_notification_config", rename = "taskPushNotificationConfig")]
    webhook: Option<Webhook>,
}

#[derive(Deserialize)]
struct Webhook {
    #[serde(default)]
    url: String,
}

/// A message's REQUIRED fields, by either name ProtoJSON accepts (lowerCamelCase or the proto's).
#[derive(Deserialize)]
struct Shape {
    #[serde(default, alias = "message_id", rename = "messageId")]
    message_id: Option<Value>,
    #[serde(default)]
    role: Option<Value>,
    #[serde(default)]
    parts: Option<Vec<PartShape>>,
}

/// Which of a part's `content` members (a proto `oneof`) are there.
#[derive(Deserialize)]
struct PartShape {
    #[serde(default)]
    text: Option<IgnoredAny>,
    #[serde(default)]
    raw: Option<IgnoredAny>,
    #[serde(default)]
    url: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    data: bool,
}

/// `data` holds any JSON value, `null` included: present is present.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// Why `body`, a `SendMessage` or `SendStreamingMessage` call, lacks what A2A 1.0 requires.
/// `None` for a call that has it all, for another method, and for a body this cannot read (the
/// SDK answers that one: -32700, -32600 or -32602 with its own reason).
pub fn missing(body: &[u8]) -> Option<Missing> {
    let call: Call = serde_json::from_slice(body).ok()?;
    if call.jsonrpc != "2.0"
        || !matches!(call.method.as_str(), methods::SEND_MESSAGE | methods::SEND_STREAMING_MESSAGE)
    {
        return None;
    }
    let why = why(call.params, "params.")?;
    Some(Missing { id: call.id.unwrap_or(JsonRpcId::Null), why })
}

/// Why `body`, the `SendMessageRequest` of an HTTP+JSON `message:send` or `message:stream`,
/// lacks what A2A 1.0 requires. `None` for one that has it all and for a body this cannot read
/// (the SDK answers that one, 400 with its own reason).
pub fn missing_in_request(body: &[u8]) -> Option<String> {
    let request: Option<Params> = serde_json::from_slice(body).ok()?;
    why(request, "")
}

/// The URL of the webhook `body`, a `SendMessage` or `SendStreamingMessage` call, sets
/// (`configuration.taskPushNotificationConfig`), and the call's id. The SDK makes the task
/// before it stores the webhook, and leaves it made, never to run, when it cannot: a webhook it
/// would refuse is refused before it reads the request.
pub fn webhook_in_call(body: &[u8]) -> Option<(JsonRpcId, String)> {
    let call: Call = serde_json::from_slice(body).ok()?;
    if !matches!(call.method.as_str(), methods::SEND_MESSAGE | methods::SEND_STREAMING_MESSAGE) {
        return None;
    }
    let url = call.params?.configuration?.webhook?.url;
    Some((call.id.unwrap_or(JsonRpcId::Null), url))
}

/// The same for an HTTP+JSON `message:send` or `message:stream` request.
pub fn webhook_in_request(body: &[u8]) -> Option<String> {
    let request: Params = serde_json::from_slice(body).ok()?;
    Some(request.configuration?.webhook?.url)
}

/// What the request `params` (its fields named under `path`) lack, if anything.
fn why(params: Option<Params>, path: &str) -> Option<String> {
    match params.and_then(|p| p.message) {
        None => Some(format!("{path}message is required (A2A 1.0 SendMessageRequest)")),
        Some(message) => lacking(&message, path),
    }
}

/// What `message` lacks, if anything: all it lacks, in one sentence.
fn lacking(message: &Shape, path: &str) -> Option<String> {
    let mut lacks = Vec::new();
    let named = message.message_id.as_ref().and_then(Value::as_str).is_some_and(|id| !id.is_empty());
    if !named {
        lacks.push("messageId (a non-empty string)");
    }
    if !message.role.as_ref().is_some_and(has_role) {
        lacks.push("role (ROLE_USER or ROLE_AGENT)");
    }
    match &message.parts {
        Some(parts) if parts.iter().any(|p| !has_content(p)) => {
            lacks.push("parts each with one of text, raw, url or data")
        }
        Some(parts) if !parts.is_empty() => {}
        _ => lacks.push("parts (at least one)"),
    }
    (!lacks.is_empty()).then(|| format!("{path}message lacks what A2A 1.0 requires: {}", lacks.join(", ")))
}

/// A role that is given and not `ROLE_UNSPECIFIED` (ProtoJSON also takes an enum's number).
fn has_role(role: &Value) -> bool {
    match role {
        Value::String(name) => !name.is_empty() && name != "ROLE_UNSPECIFIED",
        Value::Number(n) => n.as_i64() != Some(0),
        _ => false,
    }
}

fn has_content(part: &PartShape) -> bool {
    part.text.is_some() || part.raw.is_some() || part.url.is_some() || part.data
}

#[cfg(test)]
#[path = "required_tests.rs"]
mod tests;
