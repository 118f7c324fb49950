//! Civitas: `civitas.messages.Message.to_dict()` as JSON or msgpack, read as tolerantly as
//! `from_dict` (unknown keys ignored, missing ones defaulted), and its mapping onto the
//! canonical envelope.

use super::correlation::ReplyRoute;
use super::{
    Clock, Content, Direction, Envelope, EnvelopeError, Intent, checked_time, payload_map, take_content,
    take_intent, take_text,
};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The wire encoding of a Civitas body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    #[default]
    Json,
    Msgpack,
}

impl Encoding {
    pub const fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Msgpack => "application/msgpack",
        }
    }

    /// By `content-type` when it names one; otherwise by the first byte: a JSON object
    /// starts with `{` or white space, a msgpack map with 0x80–0x8f, 0xde or 0xdf.
    pub fn detect(content_type: Option<&str>, body: &[u8]) -> Option<Encoding> {
        Self::claimed(content_type).or_else(|| Self::sniff(body))
    }

    /// What a body is, refusing one whose `content-type` names the other encoding than its
    /// first byte shows, or that is neither.
    pub fn of(content_type: Option<&str>, body: &[u8]) -> Result<Encoding, EnvelopeError> {
        match (Self::claimed(content_type), Self::sniff(body)) {
            (Some(claimed), Some(found)) if claimed != found => Err(EnvelopeError::ContentType {
                claimed: claimed.content_type(),
                found: found.content_type(),
            }),
            (claimed, found) => claimed
                .or(found)
                .ok_or_else(|| EnvelopeError::invalid("body", "neither a JSON object nor a msgpack map")),
        }
    }

    fn claimed(content_type: Option<&str>) -> Option<Encoding> {
        let mime = content_type.map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
        match mime.as_deref()? {
            "application/json" => Some(Encoding::Json),
            "application/msgpack" | "application/x-msgpack" | "application/vnd.msgpack" => {
                Some(Encoding::Msgpack)
            }
            _ => None,
        }
    }

    fn sniff(body: &[u8]) -> Option<Encoding> {
        match body.first()? {
            b'{' | b' ' | b'\t' | b'\r' | b'\n' => Some(Encoding::Json),
            0x80..=0x8f | 0xde | 0xdf => Some(Encoding::Msgpack),
            _ => None,
        }
    }
}

/// `Message.to_dict()`, field for field and in its order (`schema_version` first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CivitasMessage {
    #[serde(default = "schema_version", deserialize_with = "or_default")]
    pub schema_version: i64,
    /// Civitas's `uuid7()` default is the decoder's clock's (see [`to_envelope`]).
    #[serde(default, deserialize_with = "or_default")]
    pub id: String,
    #[serde(rename = "type", default = "message_type", deserialize_with = "or_default")]
    pub kind: String,
    #[serde(default, deserialize_with = "or_default")]
    pub sender: String,
    #[serde(default, deserialize_with = "or_default")]
    pub recipient: String,
    #[serde(default)]
    pub correlation_id: Option<String>,
    #[serde(default)]
    pub reply_to: Option<String>,
    #[serde(default, deserialize_with = "or_default")]
    pub payload: Map<String, Value>,
    /// Civitas's `time.time()` default is the decoder's clock's (see [`to_envelope`]).
    #[serde(default, deserialize_with = "or_default", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    #[serde(default, deserialize_with = "or_default")]
    pub trace_id: String,
    #[serde(default, deserialize_with = "or_default")]
    pub span_id: String,
    #[serde(default)]
    pub parent_span_id: Option<String>,
    #[serde(default, deserialize_with = "or_default")]
    pub attempt: i64,
    #[serde(default, deserialize_with = "or_default")]
    pub priority: i64,
    #[serde(default)]
    pub ttl: Option<f64>,
    #[serde(default)]
    pub seq: Option<i64>,
}

/// How deeply msgpack may nest: as deeply as JSON may (serde_json stops at 128). rmp-serde's
/// own limit, 1024, let a 2.7 KB body of nested arrays overflow a test thread's 2 MiB stack
/// (found by fuzzing the pipeline); a spawned thread's stack is 2 MiB too (the daemon itself
/// runs on its main thread).
const MSGPACK_MAX_DEPTH: usize = 128;

/// Reads msgpack no deeper than [`MSGPACK_MAX_DEPTH`].
fn from_msgpack<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, rmp_serde::decode::Error> {
    let mut de = rmp_serde::Deserializer::from_read_ref(body);
    de.set_max_depth(MSGPACK_MAX_DEPTH);
    T::deserialize(&mut de)
}

const fn schema_version() -> i64 {
    1
}

fn message_type() -> String {
    "message".to_owned()
}

/// A null where Civitas has a non-null default reads as that default.
fn or_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Types that only Civitas's runtime may send (`SYSTEM_MESSAGE_TYPES`, `STREAM_MESSAGE_TYPES`).
pub fn is_reserved_type(kind: &str) -> bool {
    kind.starts_with("_agency.") || kind.starts_with("civitas.stream.")
}

impl CivitasMessage {
    /// Reads a body. A signed envelope `{"v":2,"msg":{…},"sig":{…}}` is refused
    /// ([`EnvelopeError::Signed`], dead-lettered with kind `signed`): the bridge has no key
    /// to verify it (see docs/MAPPING.md).
    pub fn decode(body: &[u8], encoding: Encoding) -> Result<Self, EnvelopeError> {
        /// The keys of a signed msgpack envelope, read before anything else: its `sig` holds
        /// msgpack binaries (nonce, signature) that JSON values cannot.
        #[derive(Deserialize)]
        struct Signed {
            msg: Option<serde::de::IgnoredAny>,
            sig: Option<serde::de::IgnoredAny>,
        }
        let value: Value = match encoding {
            // JSON is read once: its signed envelope is a map like any other.
            Encoding::Json => serde_json::from_slice(body)?,
            Encoding::Msgpack => {
                let signed: Option<Signed> = from_msgpack(body).ok();
                if signed.is_some_and(|s| s.msg.is_some() && s.sig.is_some()) {
                    return Err(EnvelopeError::Signed);
                }
                from_msgpack(body).map_err(|e| EnvelopeError::Msgpack(e.to_string()))?
            }
        };
        let Value::Object(map) = value else {
            return Err(EnvelopeError::invalid("body", "a Civitas message is a map"));
        };
        let present = |key| map.get(key).is_some_and(|v: &Value| !v.is_null());
        if present("msg") && present("sig") {
            return Err(EnvelopeError::Signed);
        }
        Ok(serde_json::from_value(Value::Object(map))?)
    }

    pub fn encode(&self, encoding: Encoding) -> Result<Vec<u8>, EnvelopeError> {
        match encoding {
            Encoding::Json => Ok(serde_json::to_vec(self)?),
            Encoding::Msgpack => {
                rmp_serde::to_vec_named(self).map_err(|e| EnvelopeError::Msgpack(e.to_string()))
            }
        }
    }
}

/// A Civitas message in the bridge's terms. Reserved types are refused: the bridge never
/// carries Civitas's control traffic out.
pub fn to_envelope(msg: CivitasMessage, clock: &mut impl Clock) -> Result<Envelope, EnvelopeError> {
    if is_reserved_type(&msg.kind) {
        return Err(EnvelopeError::ReservedType(msg.kind));
    }
    // A reply is known by its correlation (the bridge's token), whatever its type: Civitas's
    // reply() takes the type from `payload["type"]` when there is one.
    let bridge_reply = msg.correlation_id.as_deref().and_then(ReplyRoute::from_token).is_some();
    let timestamp = checked_time("timestamp", msg.timestamp.unwrap_or_else(|| clock.unix()))?;
    // `ttl` is relative to the message's own timestamp; the envelope's deadline is absolute.
    let deadline = msg.ttl.map(|ttl| checked_time("ttl", timestamp + ttl)).transpose()?;
    let direction =
        if msg.kind == "reply" || bridge_reply { Direction::Response } else { Direction::Request };
    let mut payload = msg.payload;
    let error = is_error(&msg.kind, &payload);
    let intent = match take_intent(&mut payload, "message_type")? {
        Some(said) => said,
        None if error => Some(Intent::CannotAnswer),
        None if direction == Direction::Response => Some(Intent::Response),
        None => None,
    };
    let context = take_text(&mut payload, "context_name");
    let tool_id = take_text(&mut payload, "tool_id");
    let route_response_to = take_text(&mut payload, "route_response_to");
    let content = match payload.get("error") {
        Some(Value::String(text)) if error && !payload.contains_key("message") => Content::Text(text.clone()),
        _ => take_content(&mut payload),
    };
    let mut env = Envelope {
        id: Some(non_empty(msg.id).unwrap_or_else(|| clock.id7().to_string())),
        intent,
        direction,
        sender: non_empty(msg.sender),
        recipient: non_empty(msg.recipient),
        route_response_to,
        context,
        tool_id,
        content,
        correlation_id: msg.correlation_id,
        reply_to: msg.reply_to,
        trace_id: non_empty(msg.trace_id),
        span_id: non_empty(msg.span_id),
        parent_span_id: msg.parent_span_id,
        timestamp: Some(timestamp),
        attempt: Some(msg.attempt),
        deadline,
        ..Envelope::default()
    };
    // Civitas's priority is a lane (> 0: the system lane, run even while the agent is
    // suspended), not a hint: it stays Civitas's own and is never given to another format.
    if msg.priority != 0 {
        env.extra.insert("civitas.priority".into(), msg.priority.into());
    }
    if !matches!(msg.kind.as_str(), "message" | "reply") {
        env.extra.insert("civitas.type".into(), Value::String(msg.kind));
    }
    msg.seq.map(|s| env.extra.insert("civitas.seq".into(), s.into()));
    for (key, value) in payload {
        env.extra.insert(format!("civitas.payload.{key}"), value);
    }
    Ok(env)
}

/// A Civitas error answer: `payload.status == "error"` (what Civitas's own runtime sends for
/// a failed ask) or a type naming an error (`error`, `*.error`, `*_error`).
fn is_error(kind: &str, payload: &Map<String, Value>) -> bool {
    payload.get("status").and_then(Value::as_str) == Some("error")
        || kind == "error"
        || kind.ends_with(".error")
        || kind.ends_with("_error")
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// The Civitas message for an envelope. A request's `reply_to` is the requester's name (so
/// Civitas's own `reply()` addresses it by name) and its `correlation_id` the bridge's
/// reply-route token when the pipeline made one (else the envelope's own); a response
/// carries the correlation id it answers.
pub fn from_envelope(env: &Envelope, clock: &mut impl Clock) -> Result<CivitasMessage, EnvelopeError> {
    let kind = match (env.extra.get("civitas.type"), env.direction) {
        (Some(Value::String(kind)), _) => kind.clone(),
        (_, Direction::Request) => "message".to_owned(),
        (_, Direction::Response) => "reply".to_owned(),
    };
    if is_reserved_type(&kind) {
        return Err(EnvelopeError::ReservedType(kind));
    }
    let id = clock.id7().to_string();
    let (correlation_id, reply_to) = match env.direction {
        Direction::Request => (
            env.reply_token.clone().or_else(|| env.correlation_id.clone()),
            env.reply_to.clone().or_else(|| env.sender.clone()),
        ),
        Direction::Response => (env.correlation_id.clone(), None),
    };
    let timestamp = env.timestamp.unwrap_or_else(|| clock.unix());
    Ok(CivitasMessage {
        schema_version: 1,
        id,
        kind,
        sender: env.sender.clone().unwrap_or_default(),
        recipient: env.recipient.clone().unwrap_or_default(),
        correlation_id,
        reply_to,
        payload: payload(env),
        timestamp: Some(timestamp),
        trace_id: env.trace_id.clone().unwrap_or_default(),
        span_id: env.span_id.clone().unwrap_or_default(),
        parent_span_id: env.parent_span_id.clone(),
        attempt: env.attempt.unwrap_or(0),
        priority: env.extra.get("civitas.priority").and_then(Value::as_i64).unwrap_or(0),
        ttl: env.deadline.map(|deadline| (deadline - timestamp).max(0.0)),
        seq: env.extra.get("civitas.seq").and_then(Value::as_i64),
    })
}

/// `{"message", "message_type", "context_name", "tool_id", "route_response_to"}`, nulls left
/// out but for `message_type`, plus payload keys a Civitas source had beyond those.
fn payload(env: &Envelope) -> Map<String, Value> {
    let fields = [
        ("context_name", env.context.clone()),
        ("tool_id", env.tool_id.clone()),
        ("route_response_to", env.route_response_to.clone()),
    ];
    let mut map = payload_map(env, "civitas.payload.", &fields);
    if env.direction == Direction::Response && env.intent == Some(Intent::CannotAnswer) {
        // What Civitas's own runtime writes for a failed ask.
        map.insert("status".into(), Value::String("error".into()));
        map.insert("error".into(), Value::String(env.content.to_text()));
    }
    map
}

#[cfg(test)]
#[path = "civitas_tests.rs"]
mod tests;
