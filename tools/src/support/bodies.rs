//! The bodies the tools write as the frameworks write them: a Wise Agents ask in YAML, a
//! Civitas message as its `to_dict()` gives it in JSON.

use serde_json::{Value, json};
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;

/// A Wise Agents request (`_message_type: QUERY`, context `default`) in YAML.
pub fn wise_ask(message: String, sender: &str, tool_id: Option<String>, route_to: Option<&str>) -> String {
    WiseMessage {
        message,
        message_type: Some(Intent::Query),
        sender: Some(sender.into()),
        tool_id,
        route_response_to: route_to.map(str::to_owned),
        context_name: Some("default".into()),
        extra: vec![],
    }
    .to_yaml()
}

/// A Civitas message; `new` fills what a fresh one has (no correlation, empty trace).
pub struct Civitas<'a> {
    pub kind: &'a str,
    pub sender: &'a str,
    pub recipient: Value,
    pub payload: Value,
    pub correlation_id: Value,
    pub trace_id: Value,
    pub parent_span_id: Value,
    pub seq: Option<u64>,
}

impl<'a> Civitas<'a> {
    pub fn new(kind: &'a str, sender: &'a str, recipient: Value, payload: Value) -> Civitas<'a> {
        Civitas {
            kind,
            sender,
            recipient,
            payload,
            correlation_id: Value::Null,
            trace_id: json!(""),
            parent_span_id: Value::Null,
            seq: None,
        }
    }

    /// As Civitas's `to_dict()` writes it, with a new UUIDv7 id.
    pub fn to_json(&self) -> Value {
        json!({
            "schema_version": 1, "id": uuid::Uuid::now_v7().to_string(), "type": self.kind,
            "sender": self.sender, "recipient": self.recipient, "correlation_id": self.correlation_id,
            "reply_to": null, "payload": self.payload, "timestamp": 1.8e9, "trace_id": self.trace_id,
            "span_id": "", "parent_span_id": self.parent_span_id, "attempt": 0, "priority": 0,
            "ttl": null, "seq": self.seq
        })
    }
}
