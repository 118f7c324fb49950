//! An A2A message as the Wise Agents request that asks it, and the token its answer echoes;
//! pure.

use super::Asking;
use super::error::A2aFailure;
use crate::envelope::Intent;
use crate::envelope::correlation::ReplyRoute;
use crate::envelope::wiseagents::WiseMessage;
use crate::stomp::{Command, Frame};
use a2a::{Message, PartContent};

/// The text a Wise Agents agent reads (`_message`): the message's text parts, and its data
/// parts as JSON text, in order, one per line. A file (raw bytes or a URL) has no place in a
/// Wise Agents message: refused with why.
pub fn question(message: &Message) -> Result<String, A2aFailure> {
    let mut lines = Vec::with_capacity(message.parts.len());
    for part in &message.parts {
        match &part.content {
            PartContent::Text(text) => lines.push(text.clone()),
            PartContent::Data(value) => lines.push(value.to_string()),
            PartContent::Raw(_) => return Err(A2aFailure::Uncarried { what: "a file part (raw bytes)" }),
            PartContent::Url(_) => return Err(A2aFailure::Uncarried { what: "a file part (a URL)" }),
        }
    }
    if lines.is_empty() {
        return Err(A2aFailure::NoText);
    }
    Ok(lines.join("\n"))
}

/// The QUERY that asks `agent` the question of `task` in the Wise Agents `context`: from the
/// bridge's reply agent, its answer routed back to it, and the task's token in `_tool_id`
/// (which Wise Agents agents echo).
pub fn request_frame(asking: &Asking, agent: &str, task: &str, context: &str, text: String) -> Frame {
    let context = context.to_owned();
    let route = ReplyRoute {
        task: Some(task.to_owned()),
        requester: Some(asking.reply_agent.clone()),
        context: Some(context.clone()),
        ..ReplyRoute::default()
    };
    let message = WiseMessage {
        message: text,
        message_type: Some(Intent::Query),
        sender: Some(asking.reply_agent.clone()),
        tool_id: Some(route.to_token()),
        route_response_to: Some(asking.reply_agent.clone()),
        context_name: Some(context),
        extra: Vec::new(),
    };
    Frame::new(Command::Send)
        .with("destination", format!("{}{agent}", asking.request_prefix))
        .with("persistent", "true")
        .with_body(message.to_yaml().into_bytes())
}
