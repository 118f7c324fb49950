//! Wise Agents: the YAML `!wiseagents.WiseAgentMessage` body and its mapping onto the
//! canonical envelope. Reading is in [`read`], writing in [`write`](mod@write).

pub mod fast;
pub mod read;
pub mod write;

use super::{Content, Direction, Envelope, EnvelopeError, Intent};
use serde_json::Value;

/// A Wise Agents message: the six fields its receivers read by name, plus keys of older
/// writers (such as `_chat_id`) kept as read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WiseMessage {
    pub message: String,
    pub message_type: Option<Intent>,
    pub sender: Option<String>,
    pub tool_id: Option<String>,
    pub route_response_to: Option<String>,
    pub context_name: Option<String>,
    pub extra: Vec<(String, Option<String>)>,
}

impl WiseMessage {
    pub fn parse(body: &[u8]) -> Result<Self, EnvelopeError> {
        read::parse(body)
    }

    pub fn to_yaml(&self) -> String {
        write::to_yaml(self)
    }
}

/// A message read from `/queue/request/<recipient>` (`Request`) or
/// `/queue/response/<recipient>` (`Response`).
pub fn to_envelope(msg: WiseMessage, direction: Direction, recipient: &str) -> Envelope {
    let mut env = Envelope {
        intent: msg.message_type,
        direction,
        sender: msg.sender,
        recipient: Some(recipient.to_owned()),
        route_response_to: msg.route_response_to,
        context: msg.context_name,
        tool_id: msg.tool_id,
        content: Content::Text(msg.message),
        ..Envelope::default()
    };
    for (key, value) in msg.extra {
        env.extra.insert(format!("wiseagents.{key}"), value.map_or(Value::Null, Value::String));
    }
    env
}

/// The Wise Agents message for an envelope. A missing context becomes `default_context`: a
/// Wise Agents agent looks the context up and must never meet one that was invented.
pub fn from_envelope(env: &Envelope, default_context: &str) -> WiseMessage {
    WiseMessage {
        message: env.content.to_text(),
        message_type: env.intent,
        sender: env.sender.clone(),
        tool_id: env.tool_id.clone(),
        route_response_to: env.route_response_to.clone(),
        context_name: Some(env.context.clone().unwrap_or_else(|| default_context.to_owned())),
        extra: Vec::new(),
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
