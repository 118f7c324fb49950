//! The canonical envelope as JSON: the mirror's one-format copy for tools that want the
//! bridge's own reading of a message rather than one framework's.

use crate::envelope::{Content, Direction, Envelope};
use serde_json::{Map, Value, json};

/// `env` as a JSON object; absent fields are left out, `extra` kept as it is.
pub fn to_json(env: &Envelope, conversation: &str, queue: &str) -> Value {
    let text = |v: &Option<String>| v.clone().map(Value::String);
    let mut map = Map::new();
    let fields = [
        ("conversation", Some(Value::String(conversation.to_owned()))),
        ("queue", Some(Value::String(queue.to_owned()))),
        (
            "direction",
            Some(json!(match env.direction {
                Direction::Request => "request",
                Direction::Response => "response",
            })),
        ),
        ("intent", env.intent.map(|i| json!(i.as_str()))),
        ("sender", text(&env.sender)),
        ("recipient", text(&env.recipient)),
        ("route_response_to", text(&env.route_response_to)),
        ("context_name", text(&env.context)),
        ("tool_id", text(&env.tool_id)),
        (
            "content",
            Some(match &env.content {
                Content::Text(t) => json!({"text": t}),
                Content::Json(v) => json!({"json": v}),
            }),
        ),
        ("id", text(&env.id)),
        ("correlation_id", text(&env.correlation_id)),
        ("in_reply_to", text(&env.in_reply_to)),
        ("reply_to", text(&env.reply_to)),
        ("trace_id", text(&env.trace_id)),
        ("timestamp", env.timestamp.map(|t| json!(t))),
        ("deadline", env.deadline.map(|t| json!(t))),
        ("tenant", text(&env.tenant)),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            map.insert(key.to_owned(), v);
        }
    }
    if !env.extra.is_empty() {
        map.insert(
            "extra".into(),
            Value::Object(env.extra.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        );
    }
    Value::Object(map)
}

#[cfg(test)]
#[path = "canonical_tests.rs"]
mod tests;
