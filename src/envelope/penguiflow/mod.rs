//! PenguiFlow: `penguiflow.types.Message` (pydantic) as JSON, its payload models
//! (`FinalAnswer`, `StreamChunk`), and its mapping onto the canonical envelope. Stream
//! reassembly is in [`stream`].

pub mod stream;

use super::correlation::ReplyRoute;
use super::{Clock, Content, Direction, Envelope, EnvelopeError, Intent, checked_time, is_hex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `penguiflow.types.Headers`: `tenant` is required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Headers {
    pub tenant: String,
    #[serde(default)]
    pub topic: Option<String>,
    #[serde(default)]
    pub priority: i64,
}

/// `penguiflow.types.Message`, fields in pydantic's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PenguiMessage {
    pub payload: Value,
    pub headers: Headers,
    /// pydantic's `uuid4().hex` default is the decoder's clock's (see [`to_envelope`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// pydantic's `time.time()` default is the decoder's clock's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    #[serde(default)]
    pub deadline_s: Option<f64>,
    #[serde(default)]
    pub meta: Map<String, Value>,
}

fn new_trace_id(clock: &mut impl Clock) -> String {
    clock.id4().simple().to_string()
}

impl PenguiMessage {
    /// A `Message`, bare or inside a `penguiflow.bus.BusEnvelope` (see [`BusEnvelope`]).
    pub fn decode(body: &[u8]) -> Result<Self, EnvelopeError> {
        let value: Value = serde_json::from_slice(body)?;
        if BusEnvelope::is_one(&value) {
            return serde_json::from_value::<BusEnvelope>(value)?.into_message();
        }
        Ok(serde_json::from_value(value)?)
    }

    pub fn encode(&self) -> Result<Vec<u8>, EnvelopeError> {
        Ok(serde_json::to_vec(self)?)
    }
}

/// `penguiflow.bus.BusEnvelope{edge, source, target, trace_id, payload, headers, meta}` as
/// JSON, what a PenguiFlow `MessageBus` adapter publishes. Recognised by its `edge` key (a
/// `Message` has none). `edge`, `source` and `target` name nodes inside a flow, not agents,
/// and are not read.
#[derive(Debug, Deserialize)]
pub struct BusEnvelope {
    pub payload: Value,
    #[serde(default)]
    pub headers: Option<Headers>,
    #[serde(default)]
    pub trace_id: Option<String>,
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
}

impl BusEnvelope {
    fn is_one(value: &Value) -> bool {
        value.as_object().is_some_and(|map| map.contains_key("edge") && map.contains_key("payload"))
    }

    /// The message it carries: `payload` itself when it is a whole `Message` (it has
    /// `headers`), else a `Message` made of the envelope's `payload`, `headers`, `trace_id`
    /// and `meta` (`headers.tenant` is then required, as in PenguiFlow).
    fn into_message(self) -> Result<PenguiMessage, EnvelopeError> {
        if self.payload.get("headers").is_some() && self.payload.get("payload").is_some() {
            return Ok(serde_json::from_value(self.payload)?);
        }
        let headers = self.headers.ok_or(EnvelopeError::MissingField("headers.tenant"))?;
        Ok(PenguiMessage {
            payload: self.payload,
            headers,
            trace_id: self.trace_id.filter(|t| !t.is_empty()),
            ts: None,
            deadline_s: None,
            meta: self.meta.unwrap_or_default(),
        })
    }
}

/// The payload models the bridge recognises.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Text(String),
    /// `FinalAnswer{text, citations}`: ends a run.
    FinalAnswer {
        text: String,
        citations: Vec<Value>,
    },
    /// `StreamChunk{stream_id, seq, text, done, meta}`: part of a streamed answer.
    StreamChunk(stream::StreamChunk),
    Other(Value),
}

impl Payload {
    pub fn classify(payload: &Value) -> Payload {
        if let Value::String(s) = payload {
            return Payload::Text(s.clone());
        }
        let maybe_chunk = payload.get("stream_id").is_some();
        if let Some(chunk) =
            maybe_chunk.then(|| serde_json::from_value::<stream::StreamChunk>(payload.clone()).ok()).flatten()
        {
            return Payload::StreamChunk(chunk);
        }
        match payload.as_object() {
            Some(map) if is_final_answer(map) => Payload::FinalAnswer {
                text: map["text"].as_str().unwrap_or_default().to_owned(),
                citations: map.get("citations").and_then(Value::as_array).cloned().unwrap_or_default(),
            },
            _ => Payload::Other(payload.clone()),
        }
    }
}

/// `{text, citations?}` and nothing else.
fn is_final_answer(map: &Map<String, Value>) -> bool {
    map.get("text").is_some_and(Value::is_string)
        && map.keys().all(|k| k == "text" || k == "citations")
        && map.get("citations").is_none_or(Value::is_array)
}

/// The texts of PenguiFlow's own budget answers (`penguiflow/core.py`: hop, deadline and
/// token budgets), read as CANNOT_ANSWER.
pub const BUDGET_TEXTS: [&str; 3] = ["Hop budget exhausted", "Deadline exceeded", "Token budget exhausted"];

/// The `meta` keys the bridge writes, always all of them.
pub const META_KEYS: [&str; 9] = [
    "message_id",
    "sender",
    "recipient",
    "message_type",
    "context_name",
    "tool_id",
    "route_response_to",
    "correlation_id",
    "reply_to",
];

/// What the PenguiFlow mapping needs besides the message.
#[derive(Debug, Clone)]
pub struct PenguiOptions {
    /// `headers.tenant` when the envelope has none.
    pub tenant: String,
    /// Write a response as `FinalAnswer{text}` (else as plain text).
    pub response_as_final_answer: bool,
}

impl Default for PenguiOptions {
    fn default() -> Self {
        PenguiOptions { tenant: "default".into(), response_as_final_answer: true }
    }
}

/// The PenguiFlow message for an envelope.
pub fn from_envelope(env: &Envelope, opts: &PenguiOptions, clock: &mut impl Clock) -> PenguiMessage {
    let payload = match (&env.content, env.direction) {
        (Content::Text(text), Direction::Response) if opts.response_as_final_answer => {
            json!({"text": text, "citations": env.extra.get("penguiflow.citations").cloned().unwrap_or(json!([]))})
        }
        (content, _) => content.to_json(),
    };
    PenguiMessage {
        payload,
        headers: Headers {
            tenant: env.tenant.clone().unwrap_or_else(|| opts.tenant.clone()),
            topic: env.context.clone().or_else(|| env.topic.clone()),
            // A hint of PenguiFlow's own: never another format's priority (Civitas's is a lane).
            priority: env.extra.get("penguiflow.priority").and_then(Value::as_i64).unwrap_or(0),
        },
        trace_id: Some(env.trace_id.clone().filter(|t| is_hex(t, 32)).unwrap_or_else(|| new_trace_id(clock))),
        ts: Some(env.timestamp.unwrap_or_else(|| clock.unix())),
        deadline_s: env.deadline,
        meta: meta(env, clock),
    }
}

fn meta(env: &Envelope, clock: &mut impl Clock) -> Map<String, Value> {
    let message_id = env.id.clone().unwrap_or_else(|| clock.id7().to_string());
    let correlation_id = match env.direction {
        Direction::Request => env.reply_token.clone().or_else(|| env.correlation_id.clone()),
        Direction::Response => env.correlation_id.clone(),
    };
    let reply_to = match env.direction {
        Direction::Request => env.reply_to.clone().or_else(|| env.sender.clone()),
        Direction::Response => env.reply_to.clone(),
    };
    let values = [
        Some(message_id),
        env.sender.clone(),
        env.recipient.clone(),
        env.intent.map(|i| i.as_str().to_owned()),
        env.context.clone(),
        env.tool_id.clone(),
        env.route_response_to.clone(),
        correlation_id,
        reply_to,
    ];
    let mut meta: Map<String, Value> = env
        .extra
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("penguiflow.meta.").map(|k| (k.to_owned(), v.clone())))
        .collect();
    for (key, value) in META_KEYS.iter().zip(values) {
        meta.insert((*key).to_owned(), value.map_or(Value::Null, Value::String));
    }
    if let (Direction::Response, Some(asked)) = (env.direction, &env.in_reply_to) {
        // The link to the ask (PenguiFlow itself correlates by `trace_id`, which is kept too).
        meta.insert("in_reply_to".into(), Value::String(asked.clone()));
    }
    meta
}

/// A PenguiFlow message in the bridge's terms. It is a reply when `meta.message_type` is
/// `RESPONSE` or its payload is a `FinalAnswer`. PenguiFlow copies `meta` forward, so a
/// `FinalAnswer` whose meta still has the request's type and a `reply_to` is the answer to
/// that request: it comes from `meta.recipient`, goes to `meta.reply_to`, and
/// `meta.correlation_id` names the request.
pub fn to_envelope(msg: PenguiMessage, clock: &mut impl Clock) -> Result<Envelope, EnvelopeError> {
    let mut meta = msg.meta;
    let said_type = super::take_intent(&mut meta, "message_type")?;
    let mut text = |k: &str| super::take_text(&mut meta, k);
    let (message_id, sender, recipient) = (text("message_id"), text("sender"), text("recipient"));
    let (context, tool_id, route_response_to) =
        (text("context_name"), text("tool_id"), text("route_response_to"));
    let (correlation_id, reply_to) = (text("correlation_id"), text("reply_to"));
    let payload = Payload::classify(&msg.payload);
    let final_answer = matches!(payload, Payload::FinalAnswer { .. });
    // The bridge's own token in `meta.correlation_id` marks a message derived from the
    // bridge's request (`message.model_copy(update={"payload": ...})` keeps `meta`): it is the
    // answer, whatever its payload.
    let token = correlation_id.as_deref().and_then(ReplyRoute::from_token);
    let said_answer = matches!(said_type, Some(Some(Intent::Response | Intent::CannotAnswer)));
    let answer = token.is_some() || (final_answer && reply_to.is_some() && !said_answer);
    let asker = token.and_then(|t| t.requester).or_else(|| reply_to.clone());
    // Copied unchanged when the sender is still the asker (or unsaid); an answer that names
    // its own sender (the agent that was asked) is read as it says.
    let copied_meta = answer && (sender.is_none() || sender == asker || sender == reply_to);
    let budget =
        matches!(&payload, Payload::FinalAnswer { text, .. } if BUDGET_TEXTS.contains(&text.as_str()));
    let intent = match said_type {
        _ if budget => Some(Intent::CannotAnswer),
        Some(said) if said_answer => said,
        _ if answer => Some(Intent::Response),
        Some(said) => said,
        None => final_answer.then_some(Intent::Response),
    };
    let is_reply = answer || final_answer || matches!(intent, Some(Intent::Response | Intent::CannotAnswer));
    let (content, citations) = content(payload)?;
    let mut env = Envelope {
        intent,
        direction: if is_reply { Direction::Response } else { Direction::Request },
        route_response_to,
        context,
        tool_id,
        correlation_id,
        content,
        trace_id: Some(msg.trace_id.unwrap_or_else(|| new_trace_id(clock))),
        timestamp: Some(checked_time("ts", msg.ts.unwrap_or_else(|| clock.unix()))?),
        deadline: msg.deadline_s.map(|d| checked_time("deadline_s", d)).transpose()?,
        tenant: Some(msg.headers.tenant),
        topic: msg.headers.topic,
        ..Envelope::default()
    };
    if msg.headers.priority != 0 {
        env.extra.insert("penguiflow.priority".into(), msg.headers.priority.into());
    }
    if !citations.is_empty() {
        env.extra.insert("penguiflow.citations".into(), Value::Array(citations));
    }
    if copied_meta {
        (env.sender, env.recipient, env.in_reply_to) = (recipient, reply_to, message_id);
    } else {
        (env.id, env.sender, env.recipient, env.reply_to) = (message_id, sender, recipient, reply_to);
    }
    for (key, value) in meta {
        env.extra.insert(format!("penguiflow.meta.{key}"), value);
    }
    Ok(env)
}

/// The content of a payload, and a `FinalAnswer`'s citations.
fn content(payload: Payload) -> Result<(Content, Vec<Value>), EnvelopeError> {
    Ok(match payload {
        Payload::Text(text) => (Content::Text(text), Vec::new()),
        Payload::FinalAnswer { text, citations } => (Content::Text(text), citations),
        Payload::Other(value) => (Content::Json(value), Vec::new()),
        Payload::StreamChunk(c) => {
            let reason = "a chunk must be reassembled first".to_owned();
            return Err(EnvelopeError::Stream { stream_id: c.stream_id, reason });
        }
    })
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
