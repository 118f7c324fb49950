//! VOX: the pydantic message of `vox/messaging/models.py` (UUIDs, RFC 3339 times), the agent
//! name ↔ UUID registry it needs, and its mapping onto the canonical envelope.

use super::{
    Clock, Direction, Envelope, EnvelopeError, Intent, payload_map, take_content, take_intent, take_text,
};
use crate::names::{glob_matches, is_agent_name, is_glob};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// A VOX message as pydantic writes it (UUIDs lowercase and hyphenated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoxMessage {
    pub message_id: Uuid,
    pub message_source: String,
    pub emitted_at: String,
    pub source: Uuid,
    pub target: Uuid,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub details: Map<String, Value>,
    #[serde(default)]
    pub reply_to: Option<Uuid>,
}

impl VoxMessage {
    pub fn decode(body: &[u8]) -> Result<Self, EnvelopeError> {
        Ok(serde_json::from_slice(body)?)
    }

    pub fn encode(&self) -> Result<Vec<u8>, EnvelopeError> {
        Ok(serde_json::to_vec(self)?)
    }
}

/// Agent names ↔ UUIDs: a UUID configured for an agent, otherwise UUIDv5 of its name under
/// the namespace. Names known to the registry resolve back; a reply names its recipient
/// through the request it answers. An agent named by a glob (`Vox*`) is known once the bridge
/// has met its name (a queue discovered, a message to it): a glob is never a name itself.
#[derive(Debug, Clone)]
pub struct Registry {
    namespace: Uuid,
    by_name: HashMap<String, Uuid>,
    by_uuid: HashMap<Uuid, String>,
    globs: Vec<String>,
    /// Names met that a glob matches, by UUID; bounded.
    met: HashMap<Uuid, String>,
}

/// Names matched by a glob remembered at most (a name past this still maps to its UUID, but
/// its UUID no longer resolves back).
pub const MAX_MET_NAMES: usize = 10_000;

impl Registry {
    pub fn new(namespace: Uuid) -> Self {
        Registry {
            namespace,
            by_name: HashMap::new(),
            by_uuid: HashMap::new(),
            globs: Vec::new(),
            met: HashMap::new(),
        }
    }

    /// Makes `name` known, with its configured UUID or the derived one; a glob is kept as
    /// one, to recognise the names it matches.
    pub fn add(&mut self, name: &str, uuid: Option<Uuid>) {
        if is_glob(name) {
            self.globs.push(name.to_owned());
            return;
        }
        let uuid = uuid.unwrap_or_else(|| Uuid::new_v5(&self.namespace, name.as_bytes()));
        self.by_name.insert(name.to_owned(), uuid);
        self.by_uuid.insert(uuid, name.to_owned());
    }

    /// The UUID of `name` (a UUID written as a name is itself); a name a glob matches is
    /// remembered, so that its UUID resolves back.
    pub fn uuid_of(&mut self, name: &str) -> Uuid {
        if let Some(uuid) = self.by_name.get(name) {
            return *uuid;
        }
        if let Ok(uuid) = Uuid::parse_str(name) {
            return uuid;
        }
        let uuid = Uuid::new_v5(&self.namespace, name.as_bytes());
        self.meet(name, uuid);
        uuid
    }

    /// Keeps the names `old` met (agents a glob matches, found by discovery) when this
    /// registry replaces it with the same namespace (a configuration reload).
    pub fn keep_met(&mut self, old: &mut Registry) {
        if self.namespace == old.namespace {
            self.met = std::mem::take(&mut old.met);
        }
    }

    /// Remembers a name some glob matches.
    fn meet(&mut self, name: &str, uuid: Uuid) {
        if !is_agent_name(name) || !self.globs.iter().any(|g| glob_matches(g, name)) {
            return;
        }
        if self.met.len() < MAX_MET_NAMES || self.met.contains_key(&uuid) {
            self.met.insert(uuid, name.to_owned());
        }
    }

    /// The agent's name; none for a UUID no configured or met agent has (a native agent
    /// that VOX agents address must be listed in `[wiseagents] agents`).
    pub fn name_of(&self, uuid: &Uuid) -> Option<String> {
        self.by_uuid.get(uuid).or_else(|| self.met.get(uuid)).cloned()
    }
}

/// What the VOX mapping needs besides the message.
#[derive(Debug, Clone)]
pub struct VoxOptions {
    pub registry: Registry,
    /// `message_source` of messages the bridge writes.
    pub message_source: String,
}

/// The VOX `type` for an envelope (see docs/MAPPING.md).
fn vox_type(env: &Envelope) -> String {
    if let Some(Value::String(kind)) = env.extra.get("vox.type") {
        return kind.clone();
    }
    // The contract's four types only. A Wise Agents ACK carries an answer (phased and chat
    // collaborations), so it is a `command_result`, never a receipt; an ALERT is a request
    // (`details.message_type` keeps both).
    match (env.intent, env.direction) {
        (Some(Intent::CannotAnswer), _) => "command_error",
        (Some(Intent::Response), _) | (_, Direction::Response) => "command_result",
        (_, Direction::Request) => "command_request",
    }
    .to_owned()
}

const KNOWN_TYPES: [&str; 5] =
    ["command_request", "alert", "command_result", "message_acknowledged", "command_error"];

/// The intent and direction a VOX `type` stands for, read backwards from [`vox_type`].
fn read_type(kind: &str, has_reply_to: bool) -> (Option<Intent>, Direction) {
    match kind {
        "command_request" => (Some(Intent::Query), Direction::Request),
        "alert" => (Some(Intent::Alert), Direction::Request),
        "command_result" => (Some(Intent::Response), Direction::Response),
        "message_acknowledged" => (Some(Intent::Ack), Direction::Response),
        "command_error" => (Some(Intent::CannotAnswer), Direction::Response),
        _ if has_reply_to => (None, Direction::Response),
        _ => (None, Direction::Request),
    }
}

/// A VOX message in the bridge's terms. `details.message_type`, when valid, says which
/// Wise Agents type a `command_request` (or any other) is.
pub fn to_envelope(msg: VoxMessage, opts: &VoxOptions) -> Result<Envelope, EnvelopeError> {
    let (table_intent, direction) = read_type(&msg.kind, msg.reply_to.is_some());
    let mut details = msg.details;
    let intent = take_intent(&mut details, "message_type")?.unwrap_or(table_intent);
    let mut text = |k: &str| take_text(&mut details, k);
    let (context, tool_id, route_response_to) =
        (text("context_name"), text("tool_id"), text("route_response_to"));
    let sender = text("sender").or_else(|| opts.registry.name_of(&msg.source));
    let recipient = text("recipient").or_else(|| opts.registry.name_of(&msg.target));
    let content = take_content(&mut details);
    let mut env = Envelope {
        id: Some(msg.message_id.to_string()),
        intent,
        direction,
        sender,
        recipient,
        route_response_to,
        context,
        tool_id,
        content,
        in_reply_to: msg.reply_to.map(|u| u.to_string()),
        timestamp: Some(parse_time(&msg.emitted_at)?),
        ..Envelope::default()
    };
    env.acknowledgement = msg.kind == "message_acknowledged";
    env.extra.insert("vox.message_source".into(), Value::String(msg.message_source));
    if !KNOWN_TYPES.contains(&msg.kind.as_str()) {
        env.extra.insert("vox.type".into(), Value::String(msg.kind));
    }
    for (key, value) in details {
        env.extra.insert(format!("vox.details.{key}"), value);
    }
    Ok(env)
}

/// The VOX message for an envelope; `reply_to` is the `message_id` of the request a
/// response answers.
pub fn from_envelope(
    env: &Envelope,
    opts: &mut VoxOptions,
    clock: &mut impl Clock,
) -> Result<VoxMessage, EnvelopeError> {
    let mut name = |n: &Option<String>| n.as_deref().map_or(Uuid::nil(), |n| opts.registry.uuid_of(n));
    let (source, target) = (name(&env.sender), name(&env.recipient));
    Ok(VoxMessage {
        message_id: env.id.as_deref().and_then(|id| Uuid::parse_str(id).ok()).unwrap_or_else(|| clock.id7()),
        message_source: match env.extra.get("vox.message_source") {
            Some(Value::String(s)) => s.clone(),
            _ => opts.message_source.clone(),
        },
        emitted_at: format_time(env.timestamp.unwrap_or_else(|| clock.unix()))?,
        source,
        target,
        kind: vox_type(env),
        details: details(env),
        reply_to: env.in_reply_to.as_deref().and_then(|id| Uuid::parse_str(id).ok()),
    })
}

/// Like Civitas's payload, plus the `sender` and `recipient` names; nulls left out.
fn details(env: &Envelope) -> Map<String, Value> {
    let fields = [
        ("context_name", env.context.clone()),
        ("tool_id", env.tool_id.clone()),
        ("route_response_to", env.route_response_to.clone()),
        ("sender", env.sender.clone()),
        ("recipient", env.recipient.clone()),
    ];
    payload_map(env, "vox.details.", &fields)
}

/// RFC 3339 in UTC with microseconds, as pydantic writes an aware datetime; a time beyond
/// what it can write is an error (never a wrapped or made-up time).
fn format_time(unix: f64) -> Result<String, EnvelopeError> {
    let unix = super::checked_time("timestamp", unix)?;
    // In range, the microseconds fit an i64 exactly enough and the nanoseconds an i128.
    let nanos = i128::from((unix * 1e6).round() as i64).checked_mul(1000);
    nanos
        .and_then(|n| OffsetDateTime::from_unix_timestamp_nanos(n).ok())
        .and_then(|t| t.format(&Rfc3339).ok())
        .ok_or_else(|| EnvelopeError::invalid("timestamp", format!("{unix} cannot be written as a time")))
}

/// RFC 3339; a time without an offset (a naive pydantic datetime) is taken as UTC.
fn parse_time(text: &str) -> Result<f64, EnvelopeError> {
    let with_zone = |t: &str| OffsetDateTime::parse(t, &Rfc3339).ok();
    let parsed = with_zone(text).or_else(|| with_zone(&format!("{text}Z")));
    let time = parsed
        .ok_or_else(|| EnvelopeError::invalid("emitted_at", format!("{text:?} is not an ISO-8601 time")))?;
    Ok(time.unix_timestamp_nanos() as f64 / 1e9)
}

#[cfg(test)]
#[path = "vox_tests.rs"]
mod tests;
