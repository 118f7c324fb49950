//! The canonical envelope every framework's message is translated through, and one module
//! per framework that maps its own format onto it. Field mappings: docs/MAPPING.md.

pub mod a2a;
pub mod civitas;
pub mod civitas_stream;
pub mod codecs;
pub mod correlation;
pub mod penguiflow;
pub mod trace;
pub mod vox;
pub mod wiseagents;

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The seven Wise Agents message types; every framework's kinds map onto these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Intent {
    Ack,
    Alert,
    CannotAnswer,
    Query,
    Response,
    ActionRequest,
    Human,
}

impl Intent {
    /// In the order of the Wise Agents enum (its legacy integers are index + 1).
    pub const ALL: [Intent; 7] = [
        Intent::Ack,
        Intent::Alert,
        Intent::CannotAnswer,
        Intent::Query,
        Intent::Response,
        Intent::ActionRequest,
        Intent::Human,
    ];

    /// The Wise Agents name (`QUERY`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Intent::Ack => "ACK",
            Intent::Alert => "ALERT",
            Intent::CannotAnswer => "CANNOT_ANSWER",
            Intent::Query => "QUERY",
            Intent::Response => "RESPONSE",
            Intent::ActionRequest => "ACTION_REQUEST",
            Intent::Human => "HUMAN",
        }
    }

    pub fn from_name(name: &str) -> Option<Intent> {
        Self::ALL.into_iter().find(|i| i.as_str() == name)
    }

    /// The integers of Wise Agents before 2024-09 (`auto()`: ACK = 1 … HUMAN = 7).
    pub fn from_legacy_number(n: i64) -> Option<Intent> {
        usize::try_from(n).ok().and_then(|n| n.checked_sub(1)).and_then(|i| Self::ALL.get(i).copied())
    }
}

impl fmt::Display for Intent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a message asks or answers. Wise Agents tells by the queue it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    #[default]
    Request,
    Response,
}

/// What a message says: text, or structured JSON when the source had no text.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Json(Value),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl Content {
    /// The content as text: the text itself, or the compact JSON of structured content.
    pub fn to_text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Json(v) => v.to_string(),
        }
    }

    /// The content as a JSON value (text becomes a JSON string).
    pub fn to_json(&self) -> Value {
        match self {
            Content::Text(t) => Value::String(t.clone()),
            Content::Json(v) => v.clone(),
        }
    }
}

/// One message in the bridge's own terms: what all four formats can say.
///
/// Agent names are names (VOX UUIDs are resolved through the registry). `extra` keeps the
/// source format's fields that have no home here, keyed `<format>.<field>`, so that a trip
/// through another format and back loses nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Envelope {
    /// The id of this message (a UUID, or whatever the source used).
    pub id: Option<String>,
    pub intent: Option<Intent>,
    pub direction: Direction,
    pub sender: Option<String>,
    pub recipient: Option<String>,
    /// Wise Agents' `_route_response_to`: who gets the final answer.
    pub route_response_to: Option<String>,
    /// Wise Agents' `_context_name`.
    pub context: Option<String>,
    /// Wise Agents' `_tool_id`: the tool-call id a tool agent must echo.
    pub tool_id: Option<String>,
    pub content: Content,
    /// The token a reply carries back to name the request it answers.
    pub correlation_id: Option<String>,
    /// The id of the message this one answers.
    pub in_reply_to: Option<String>,
    /// The agent name (or address) replies go to.
    pub reply_to: Option<String>,
    /// On an answer to a Civitas ephemeral `_reply.*` address: the agent that asked (the
    /// ask's `sender`), whose inbox the answer is delivered to when the bridge stands in
    /// for it (the recipient stays the `_reply.*` address). Bridge-internal: no format
    /// carries it except inside the reply-route token.
    pub reply_via: Option<String>,
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
    pub parent_span_id: Option<String>,
    /// When the message was made, Unix seconds.
    pub timestamp: Option<f64>,
    /// When the message stops mattering, absolute Unix seconds.
    pub deadline: Option<f64>,
    pub priority: Option<i64>,
    pub tenant: Option<String>,
    pub topic: Option<String>,
    pub attempt: Option<i64>,
    pub extra: BTreeMap<String, Value>,
    /// On a request the bridge sends on: its reply-route token, written where the target
    /// echoes it (Civitas `correlation_id`, PenguiFlow `meta.correlation_id`).
    pub reply_token: Option<String>,
    /// A receipt, not an answer (VOX `message_acknowledged`).
    pub acknowledgement: bool,
}

/// Why one message cannot be read or written. The message is dead-lettered with this as its
/// reason; the stream carries on.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("the body is not UTF-8 (invalid byte at offset {0})")]
    NotUtf8(usize),
    #[error("the YAML is not well-formed: {0}")]
    Yaml(String),
    #[error("refused: {0}")]
    Hostile(&'static str),
    #[error("the body is not a !wiseagents.WiseAgentMessage: {0}")]
    NotWiseAgentMessage(String),
    #[error("required field {0} is missing")]
    MissingField(&'static str),
    #[error("field {field} is invalid: {reason}")]
    InvalidField { field: String, reason: String },
    #[error("unknown message type {0:?}")]
    UnknownType(String),
    #[error("the JSON is not valid for this format: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the msgpack is not valid for this format: {0}")]
    Msgpack(String),
    #[error("type {0:?} is reserved for Civitas's own control messages")]
    ReservedType(String),
    #[error(
        "a signed Civitas envelope (v2): the bridge has no key to verify it and passes on nothing unverified"
    )]
    Signed,
    #[error("stream {stream_id}: {reason}")]
    Stream { stream_id: String, reason: String },
    #[error("the content-type says {claimed}, but the body is {found}")]
    ContentType { claimed: &'static str, found: &'static str },
}

impl EnvelopeError {
    /// A short stable name for the `bridge-error-kind` header and metrics labels.
    pub fn kind(&self) -> &'static str {
        match self {
            EnvelopeError::NotUtf8(_) => "not_utf8",
            EnvelopeError::Yaml(_) => "yaml",
            EnvelopeError::Hostile(_) => "hostile",
            EnvelopeError::NotWiseAgentMessage(_) => "wrong_shape",
            EnvelopeError::MissingField(_) => "missing_field",
            EnvelopeError::InvalidField { .. } => "invalid_field",
            EnvelopeError::UnknownType(_) => "unknown_type",
            EnvelopeError::Json(_) => "json",
            EnvelopeError::Msgpack(_) => "msgpack",
            EnvelopeError::ReservedType(_) => "reserved_type",
            EnvelopeError::Stream { .. } => "stream",
            EnvelopeError::Signed => "signed",
            EnvelopeError::ContentType { .. } => "content_type",
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        EnvelopeError::InvalidField { field: field.into(), reason: reason.into() }
    }
}

/// Removes `key` from a JSON map and returns it if it was a string.
pub(crate) fn take_text(map: &mut serde_json::Map<String, Value>, key: &str) -> Option<String> {
    match map.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Removes a message type from a JSON map: `None` when the key is absent, `Some(None)` for
/// an explicit null (or `""`), so that "no type" and "not said" stay apart.
pub(crate) fn take_intent(
    map: &mut serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<Option<Intent>>, EnvelopeError> {
    match map.remove(key) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(name)) if name.is_empty() => Ok(Some(None)),
        Some(Value::String(name)) => {
            Intent::from_name(&name).map(|i| Some(Some(i))).ok_or(EnvelopeError::UnknownType(name))
        }
        Some(_) => Err(EnvelopeError::invalid(key, "must be a message type name")),
    }
}

/// The content of a Civitas payload or VOX details (routing keys already taken out): its
/// `message` text, else its `message` as JSON, else what is left of the map as JSON.
pub(crate) fn take_content(map: &mut serde_json::Map<String, Value>) -> Content {
    match map.remove("message") {
        Some(Value::String(s)) => Content::Text(s),
        Some(Value::Null) | None if map.is_empty() => Content::Text(String::new()),
        Some(Value::Null) | None => Content::Json(Value::Object(std::mem::take(map))),
        Some(other) => Content::Json(other),
    }
}

/// A payload-like map: keys under `extra_prefix` in `env.extra`, then `message` and
/// `message_type` (null when there is none, so that it is not read as a default), then the
/// given fields that are not null.
pub(crate) fn payload_map(
    env: &Envelope,
    extra_prefix: &str,
    fields: &[(&str, Option<String>)],
) -> serde_json::Map<String, Value> {
    let mut map = serde_json::Map::new();
    for (key, value) in &env.extra {
        if let Some(k) = key.strip_prefix(extra_prefix) {
            map.insert(k.to_owned(), value.clone());
        }
    }
    map.insert("message".into(), env.content.to_json());
    map.insert("message_type".into(), env.intent.map_or(Value::Null, |i| Value::String(i.as_str().into())));
    for (key, value) in fields {
        if let Some(v) = value {
            map.insert((*key).into(), Value::String(v.clone()));
        }
    }
    map
}

/// What a codec needs that a message may lack: the time now and new ids. The codecs never
/// read the system's clock themselves; the bridge's pipeline hands them its own `Now`, and
/// tools and tests hand them [`SystemClock`] or a fixed clock.
pub trait Clock {
    /// Seconds since the Unix epoch.
    fn unix(&mut self) -> f64;
    /// A new UUIDv7 (time-ordered).
    fn id7(&mut self) -> uuid::Uuid;
    /// A new random-looking UUIDv4 (PenguiFlow's `trace_id`), made of a new [`Clock::id7`]'s
    /// bytes: unique as that one is, and as fixed as it in tests.
    fn id4(&mut self) -> uuid::Uuid {
        uuid::Builder::from_random_bytes(*self.id7().as_bytes()).into_uuid()
    }
}

/// The system's clock and [`new_uuid7`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn unix(&mut self) -> f64 {
        now_unix()
    }

    fn id7(&mut self) -> uuid::Uuid {
        new_uuid7()
    }
}

/// A clock that says what it was told: one time, and ids counting up from 1 (tests).
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct FixedClock {
    pub unix: f64,
    pub last: u128,
}

#[cfg(test)]
impl Clock for FixedClock {
    fn unix(&mut self) -> f64 {
        self.unix
    }

    fn id7(&mut self) -> uuid::Uuid {
        self.last += 1;
        uuid::Uuid::from_u128(self.last)
    }
}

/// A new UUIDv7 (time-ordered). Ids need to be unique, not secret: the random bits come
/// from a fast non-cryptographic generator, which saves a system call per message.
pub fn new_uuid7() -> uuid::Uuid {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(
        millis,
        &fastrand::u128(..).to_le_bytes()[..10].try_into().unwrap_or([0; 10]),
    )
    .into_uuid()
}

/// The Unix seconds a time from a message may be: the range of Python's `datetime` (years 1
/// to 9999), which pydantic and VOX write; beyond it, or not finite, a time is refused.
const UNIX_TIME_RANGE: std::ops::RangeInclusive<f64> = -62_135_596_800.0..=253_402_300_799.0;

/// `secs` if it is a time a message can carry; else an error naming `field`.
pub(crate) fn checked_time(field: &str, secs: f64) -> Result<f64, EnvelopeError> {
    match UNIX_TIME_RANGE.contains(&secs) {
        true => Ok(secs),
        false => {
            Err(EnvelopeError::invalid(field, format!("{secs} is not a Unix time of the years 1 to 9999")))
        }
    }
}

/// Now, as Unix seconds.
pub(crate) fn now_unix() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// A W3C `traceparent` header from the envelope's trace id and span id, when both fit.
pub fn traceparent(envelope: &Envelope) -> Option<String> {
    trace::SpanContext::of(envelope).map(|cx| cx.header())
}

/// Reads a W3C `traceparent` header into the envelope's trace and span ids, where the body
/// carried none; a header that does not fit is ignored ([`trace::SpanContext::parse`]).
pub fn apply_traceparent(envelope: &mut Envelope, header: &str) {
    if let Some(cx) = trace::SpanContext::parse(header) {
        envelope.trace_id.get_or_insert_with(|| cx.trace.hex());
        envelope.span_id.get_or_insert_with(|| cx.span.hex());
    }
}

pub(crate) fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
