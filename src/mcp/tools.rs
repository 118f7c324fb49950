//! The tools: which agents are tools, how each is described, what a call's arguments ask and
//! what an answer makes of the result; pure.

use crate::config::Config;
use crate::envelope::Intent;
use crate::names::is_glob;
use crate::relay::TaskAnswer;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use std::sync::Arc;

/// The tools `config` serves: the exact names of `mcp.tools`, and the agents its globs match
/// among the agents the bridge knows (`wiseagents.agents`, the proxied `[[agents]]`) and
/// `registered` (the Wise Agents registry's); those whose name MCP cannot carry left out;
/// sorted, each once.
pub fn names(config: &Config, registered: &[String]) -> Vec<String> {
    let Some(mcp) = &config.mcp else { return Vec::new() };
    let known =
        config.wiseagents.agents.iter().chain(config.agents.iter().map(|a| &a.name)).chain(registered);
    let mut names: Vec<String> = mcp.tools.iter().filter(|t| !is_glob(t)).cloned().collect();
    names.extend(known.filter(|a| mcp.serves(a)).cloned());
    names.retain(|n| is_tool_name(n));
    names.sort();
    names.dedup();
    names
}

/// Whether MCP can carry `name` as a tool's name: 1 to 128 of `A-Z a-z 0-9 _ - .`.
pub fn is_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// What `agent`'s tool says it does when neither `mcp.descriptions` nor the registry says.
pub fn default_description(agent: &str) -> String {
    format!("Asks the agent {agent} of the Wise Agents society, through stomp-agent-bridge")
}

/// The input every tool takes: the question's `text`, and an optional Wise Agents `context`.
fn input_schema() -> Arc<JsonObject> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to ask the agent (its message's text)."},
            "context": {
                "type": "string",
                "description": "The Wise Agents context to ask in (one the society knows; else its default)."
            }
        },
        "required": ["text"],
        "additionalProperties": false
    });
    match schema {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// `agent`'s tool.
pub fn tool(agent: &str, description: String) -> Tool {
    Tool::new(agent.to_owned(), description, input_schema())
}

/// What a call asks: the text, and the caller's context (empty when none).
#[derive(Debug, PartialEq, Eq)]
pub struct Question {
    pub text: String,
    pub context: String,
}

/// The call's arguments as a question, or why they are not one (said to the caller as a tool
/// error, as MCP asks of input errors).
pub fn question(arguments: Option<&JsonObject>) -> Result<Question, String> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    if let Some(other) = arguments.keys().find(|k| !matches!(k.as_str(), "text" | "context")) {
        return Err(format!("unknown argument {other:?}: a tool takes text and, optionally, context"));
    }
    let text = match arguments.get("text") {
        Some(serde_json::Value::String(text)) if !text.is_empty() => text.clone(),
        Some(serde_json::Value::String(_)) => return Err("text is empty".into()),
        Some(_) => return Err("text must be a string".into()),
        None => return Err("text is required".into()),
    };
    let context = match arguments.get("context") {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(context)) => context.clone(),
        Some(_) => return Err("context must be a string".into()),
    };
    Ok(Question { text, context })
}

/// What one answer does to the call.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// The agent acknowledged (an `ACK`): its words, as a progress notification.
    Progress(String),
    /// The call's result, and whether it is the agent's answer (else a tool error).
    Done(CallToolResult, bool),
}

/// The step `answer` makes: an `ACK` is progress; `CANNOT_ANSWER` a tool error with the
/// agent's words; any other answer the result, its text as text content and, when it is a JSON
/// object, as structured content too.
pub fn step(agent: &str, answer: TaskAnswer) -> Step {
    match answer.intent {
        Some(Intent::Ack) => Step::Progress(answer.text),
        Some(Intent::CannotAnswer) => {
            let why = if answer.text.is_empty() { format!("{agent} cannot answer") } else { answer.text };
            Step::Done(failure(why), false)
        }
        _ => {
            let structured = match serde_json::from_str::<serde_json::Value>(&answer.text) {
                Ok(value @ serde_json::Value::Object(_)) => Some(value),
                _ => None,
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
            result.structured_content = structured;
            Step::Done(result, true)
        }
    }
}

/// A tool error saying `why`.
pub fn failure(why: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why)])
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
