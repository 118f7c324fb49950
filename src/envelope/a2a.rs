//! A2A 1.0 (a2aproject/A2A) as the format of a proxied agent that lives behind HTTP: a request
//! becomes the `SendMessageRequest` the bridge sends it, and what the agent sends back (the
//! `SendMessageResponse`: a Task, or a Message) becomes the answer. Pure; the types are the
//! official SDK's (`a2a-lf`), so the JSON is exactly what its parser reads.

use super::{Content, Direction, Envelope, EnvelopeError, Intent};
use a2a::{Message, Part, PartContent, Role, SendMessageRequest, SendMessageResponse, Task, TaskState};

/// The request that asks the agent `env`'s question: one USER message, its text one text
/// part, its `contextId` the Wise Agents context, its `messageId` the envelope's id (the
/// caller may set a stabler one before sending: the A2A call stage does).
pub fn from_envelope(env: &Envelope) -> SendMessageRequest {
    let message = Message {
        message_id: env.id.clone().unwrap_or_default(),
        context_id: env.context.clone(),
        task_id: None,
        role: Role::User,
        parts: vec![Part::text(env.content.to_text())],
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    };
    SendMessageRequest { message, configuration: None, metadata: None, tenant: None }
}

/// The JSON body of [`from_envelope`].
pub fn encode(env: &Envelope) -> Result<Vec<u8>, EnvelopeError> {
    serde_json::to_vec(&from_envelope(env)).map_err(|e| invalid("request", e.to_string()))
}

/// What an A2A agent answered (the JSON of a `SendMessageResponse`), as the answer of
/// `agent`: a completed task's artifacts (or its status message, or a Message) as a
/// RESPONSE; a task that failed, was rejected or canceled as CANNOT_ANSWER with the agent's
/// reason; a task that stopped for more input or for authorization as CANNOT_ANSWER that says
/// so (a Wise Agents asker cannot continue an A2A task: docs/A2A.md).
pub fn to_envelope(body: &[u8], agent: &str) -> Result<Envelope, EnvelopeError> {
    let response: SendMessageResponse =
        serde_json::from_slice(body).map_err(|e| invalid("SendMessageResponse", e.to_string()))?;
    let (intent, text) = match &response {
        SendMessageResponse::Message(m) => (Intent::Response, texts(&m.parts)),
        SendMessageResponse::Task(task) => answer_of(task)?,
    };
    Ok(Envelope {
        intent: Some(intent),
        direction: Direction::Response,
        sender: Some(agent.to_owned()).filter(|a| !a.is_empty()),
        content: Content::Text(text),
        ..Envelope::default()
    })
}

/// A task's state as a Wise Agents intent, and its text.
fn answer_of(task: &Task) -> Result<(Intent, String), EnvelopeError> {
    let status_text = || task.status.message.as_ref().map(|m| texts(&m.parts)).unwrap_or_default();
    Ok(match &task.status.state {
        TaskState::Completed => {
            let artifacts: Vec<Part> =
                task.artifacts.iter().flatten().flat_map(|a| a.parts.iter().cloned()).collect();
            match artifacts.is_empty() {
                false => (Intent::Response, texts(&artifacts)),
                true => (Intent::Response, status_text()),
            }
        }
        TaskState::Failed | TaskState::Rejected | TaskState::Canceled => {
            let why = status_text();
            let state = state_name(&task.status.state);
            (Intent::CannotAnswer, if why.is_empty() { format!("the A2A task ended {state}") } else { why })
        }
        TaskState::InputRequired => {
            (Intent::CannotAnswer, format!("the A2A agent needs more input: {}", status_text()))
        }
        TaskState::AuthRequired => {
            (Intent::CannotAnswer, format!("the A2A agent requires authorization: {}", status_text()))
        }
        other => {
            return Err(invalid("task", format!("the task is not finished (state {})", state_name(other))));
        }
    })
}

fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// Text parts as they are and data parts as JSON text, one per line; a file part is named,
/// not carried (a Wise Agents message holds text).
fn texts(parts: &[Part]) -> String {
    let lines: Vec<String> = parts
        .iter()
        .map(|part| match &part.content {
            PartContent::Text(text) => text.clone(),
            PartContent::Data(value) => value.to_string(),
            PartContent::Url(url) => format!("[file: {url}]"),
            PartContent::Raw(bytes) => format!("[file: {} bytes]", bytes.len()),
        })
        .collect();
    lines.join("\n")
}

fn invalid(field: &str, reason: String) -> EnvelopeError {
    EnvelopeError::InvalidField { field: format!("A2A {field}"), reason }
}

#[cfg(test)]
#[path = "a2a_tests.rs"]
mod tests;
