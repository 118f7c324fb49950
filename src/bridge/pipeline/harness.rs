//! The tests' pipeline: built from config/bridge.toml, handed the time and ids as the engine
//! hands them, and messages as each framework writes them.

use super::*;
use crate::config::{Config, codecs};
use crate::envelope::new_uuid7;
use crate::envelope::wiseagents::WiseMessage;
use crate::stomp::{AckRef, Frame};
use serde_json::{Value, json};

pub(super) const CIV_IN: &str = "/queue/bridge.civitas";
pub(super) const VOX_IN: &str = "/queue/bridge.vox";
pub(super) const PF_IN: &str = "/queue/bridge.penguiflow";

/// A pipeline handed the time and ids as the engine hands them: tokio's clock (paused in the
/// tests of timing) and ids of its own (counted).
pub(super) struct Tested {
    pub(super) pipeline: Pipeline,
    /// The wall clock it is handed, fixed when it is made.
    pub(super) unix: f64,
}

impl Tested {
    pub(super) fn process(&mut self, m: &Message) -> Result<Processed, MessageError> {
        let mut ids = next_id;
        let mut now = Now { at: tokio::time::Instant::now().into_std(), unix: self.unix, ids: &mut ids };
        self.pipeline.process(Consumed::of(m), &mut now)
    }

    pub(super) fn expire_asks(&mut self) -> Vec<Outgoing> {
        let mut ids = next_id;
        let mut now = Now { at: tokio::time::Instant::now().into_std(), unix: self.unix, ids: &mut ids };
        self.pipeline.expire_asks(&mut now)
    }
}

impl std::ops::Deref for Tested {
    type Target = Pipeline;
    fn deref(&self) -> &Pipeline {
        &self.pipeline
    }
}

impl std::ops::DerefMut for Tested {
    fn deref_mut(&mut self) -> &mut Pipeline {
        &mut self.pipeline
    }
}

/// Ask ids, unique in the process (a second pipeline stands for a restarted bridge).
pub(super) fn next_id() -> uuid::Uuid {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    uuid::Builder::from_unix_timestamp_millis(
        1_767_225_600_000,
        &u128::from(n).to_le_bytes()[..10].try_into().unwrap(),
    )
    .into_uuid()
}

pub(super) fn pipeline_with(edit: impl FnOnce(&mut Config)) -> Tested {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    let mut config = Config::load(&path).unwrap();
    edit(&mut config);
    let d = &config.delivery;
    let table = CorrelationTable::new(d.correlation_capacity, Duration::from_millis(d.correlation_ttl_ms));
    let settings = Settings {
        codecs: codecs(&config),
        router: Router::new(&config),
        conversations: ConversationSettings::of(&config),
        max_hops: 5,
        max_body: usize::MAX,
        tracing: config.traces.enabled(),
    };
    let state = State::new(table, StreamAssembler::new(1 << 20, Duration::from_secs(60)));
    Tested { pipeline: Pipeline::new(settings, state), unix: crate::envelope::now_unix() }
}

pub(super) fn pipeline() -> Tested {
    pipeline_with(|_| {})
}

pub(super) fn msg(destination: &str, body: impl Into<Vec<u8>>) -> Message {
    let frame = Frame::new(Command::Message).with("destination", destination).with_body(body.into());
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ack = AckRef { epoch: 0, subscription: "1".into(), message_id: format!("m{n}"), ack_id: None };
    Message { ack, destination: destination.into(), frame }
}

pub(super) fn wa(fields: &[(&str, &str)]) -> Vec<u8> {
    let get = |k: &str| fields.iter().find(|(key, _)| *key == k).map(|(_, v)| (*v).to_owned());
    WiseMessage {
        message: get("_message").unwrap_or_default(),
        message_type: get("_message_type").and_then(|t| Intent::from_name(&t)),
        sender: get("_sender"),
        tool_id: get("_tool_id"),
        route_response_to: get("_route_response_to"),
        context_name: get("_context_name"),
        extra: vec![],
    }
    .to_yaml()
    .into_bytes()
}

pub(super) fn sent(p: &mut Tested, m: &Message) -> Outgoing {
    match p.process(m).unwrap() {
        Processed::Send(out) => out,
        other => panic!("nothing sent: {other:?}"),
    }
}

pub(super) fn json_of(out: &Outgoing) -> Value {
    serde_json::from_slice(&out.frame.body).unwrap()
}

pub(super) fn wa_of(out: &Outgoing) -> WiseMessage {
    WiseMessage::parse(&out.frame.body).unwrap()
}

pub(super) fn civitas_ask(id: &str, cid: &str, reply_to: Option<&str>, text: &str) -> Vec<u8> {
    civitas_ask_from("WeatherAgent", id, cid, reply_to, text)
}

pub(super) fn civitas_ask_from(
    sender: &str,
    id: &str,
    cid: &str,
    reply_to: Option<&str>,
    text: &str,
) -> Vec<u8> {
    json!({"schema_version": 1, "id": id, "type": "message", "sender": sender, "recipient": "Assistant",
        "correlation_id": cid, "reply_to": reply_to, "payload": {"message": text}, "timestamp": 1.0,
        "trace_id": "", "span_id": "", "parent_span_id": null, "attempt": 0, "priority": 0})
    .to_string()
    .into_bytes()
}

/// A plain Wise Agents answer (core.py's default path): a new message, nothing echoed.
pub(super) fn plain_answer(from: &str, to: &str, text: &str, context: &str) -> Message {
    msg(
        &format!("/queue/response/{to}"),
        wa(&[("_message", text), ("_sender", from), ("_context_name", context)]),
    )
}

pub(super) fn vox_reply(kind: &str, asked: &Value, text: &str) -> Vec<u8> {
    json!({"message_id": new_uuid7().to_string(), "message_source": "ops", "emitted_at": "2026-11-30T10:00:00+00:00",
        "source": asked["target"], "target": asked["source"], "type": kind, "details": {"message": text},
        "reply_to": asked["message_id"]})
    .to_string()
    .into_bytes()
}

pub(super) fn wa_ask(to: &str, tool: Option<&str>, context: &str) -> Message {
    let mut fields = vec![("_message", "do it"), ("_sender", "Assistant"), ("_context_name", context)];
    fields.extend(tool.map(|t| ("_tool_id", t)));
    msg(&format!("/queue/request/{to}"), wa(&fields))
}
