//! Civitas's streamed answers (`stream_reply()`): `civitas.stream.chunk` frames (`seq` 0, 1,
//! …), then `civitas.stream.end` (its `seq` the count) or `civitas.stream.error`, all with the
//! ask's `correlation_id`; read as PenguiFlow stream chunks so one assembler joins both.

use super::EnvelopeError;
use super::civitas::CivitasMessage;
use super::penguiflow::stream::StreamChunk;
use super::penguiflow::{Headers, PenguiMessage};
use serde_json::{Map, Value};

/// The types of Civitas's stream frames (`civitas/process.py`).
pub const STREAM_PREFIX: &str = "civitas.stream.";

/// What a Civitas message is, as far as streams go.
pub enum StreamFrame {
    /// Not a stream frame (or one without a correlation id, which nothing can join).
    Message(CivitasMessage),
    /// A chunk or the end, with the assembler's template (the frame rides in its `meta`).
    Part { chunk: StreamChunk, template: PenguiMessage },
    /// The stream failed: this error reply (`status: "error"`) is the answer.
    Failed { stream_id: String, reply: CivitasMessage },
}

/// The assembler's stream id for an ask's correlation id.
fn stream_id(correlation_id: &str) -> String {
    format!("civitas:{correlation_id}")
}

/// Classifies a Civitas message.
pub fn classify(message: CivitasMessage) -> Result<StreamFrame, EnvelopeError> {
    let (Some(kind), Some(cid)) = (message.kind.strip_prefix(STREAM_PREFIX), message.correlation_id.clone())
    else {
        return Ok(StreamFrame::Message(message));
    };
    let (text, done) = match kind {
        "chunk" => (chunk_text(&message.payload), false),
        "end" => (String::new(), true),
        "error" => {
            let mut reply = message;
            reply.kind = "reply".into();
            reply.payload.insert("status".into(), "error".into());
            return Ok(StreamFrame::Failed { stream_id: stream_id(&cid), reply });
        }
        other => {
            let reason = format!("civitas.stream.{other} is not part of an answer");
            return Err(EnvelopeError::Stream { stream_id: cid, reason });
        }
    };
    let Some(seq) = message.seq.and_then(|s| u64::try_from(s).ok()) else {
        return Err(EnvelopeError::Stream { stream_id: cid, reason: "a stream frame without seq".into() });
    };
    let chunk = StreamChunk { stream_id: stream_id(&cid), seq, text, done, meta: Map::new() };
    Ok(StreamFrame::Part { chunk, template: template(&message) })
}

/// A PenguiFlow message standing for the frame: the assembler keeps the first one it sees.
fn template(message: &CivitasMessage) -> PenguiMessage {
    let mut meta = Map::new();
    meta.insert("civitas".into(), serde_json::to_value(message).unwrap_or_default());
    PenguiMessage {
        payload: Value::Null,
        headers: Headers { tenant: String::new(), topic: None, priority: 0 },
        trace_id: None,
        ts: None,
        deadline_s: None,
        meta,
    }
}

/// The one reply a whole stream makes: the first frame, type `reply`, the joined text.
pub fn reply_of(whole: PenguiMessage) -> Result<CivitasMessage, EnvelopeError> {
    let text = whole.payload.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut reply: CivitasMessage =
        serde_json::from_value(whole.meta.get("civitas").cloned().unwrap_or_default())?;
    reply.kind = "reply".into();
    reply.seq = None;
    reply.payload = Map::from_iter([("message".to_owned(), Value::String(text))]);
    Ok(reply)
}

/// A frame's text: its payload's `message`, `text`, `token`, `delta` or `content` string,
/// else the payload as compact JSON.
fn chunk_text(payload: &Map<String, Value>) -> String {
    ["message", "text", "token", "delta", "content"]
        .iter()
        .find_map(|k| payload.get(*k).and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| Value::Object(payload.clone()).to_string())
}
