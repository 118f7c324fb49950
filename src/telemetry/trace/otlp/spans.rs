//! A hop's spans, written as the `spans` of an OTLP `ScopeSpans` (docs/OBSERVABILITY.md has
//! them as a table): `process <source>` (CONSUMER) with, for a message from the broker, its
//! `receive` and `ack` (CLIENT); `send <destination>` (PRODUCER); and the `invoke_agent
//! <agent>` (CLIENT) span an answer, a timeout or an answer's dead letter ends.

use super::proto::{Value, Writer};
use crate::envelope::trace::{Invocation, SpanId, TraceId};
use crate::telemetry::trace::{Hop, HopKind, Times, system_time};
use std::time::SystemTime;

/// Characters kept of an attribute's value taken from a message (a name, a context, a reason).
pub const VALUE: usize = 256;

/// `ScopeSpans.spans`.
const SPANS: u32 = 2;
/// `Span` fields.
const TRACE_ID: u32 = 1;
const SPAN_ID: u32 = 2;
const PARENT: u32 = 4;
const NAME: u32 = 5;
const KIND: u32 = 6;
const START: u32 = 7;
const END: u32 = 8;
const ATTRIBUTES: u32 = 9;
const EVENTS: u32 = 11;
const LINKS: u32 = 13;
const STATUS: u32 = 15;
const FLAGS: u32 = 16;
/// `Span.flags` and `Link.flags`: sampled, and whether the context is remote is known (it is
/// not, for the bridge's own spans; it is, for a link to the context a message carried).
const LOCAL: u32 = 0x101;
const REMOTE: u32 = 0x301;

/// `Span.SpanKind`.
#[derive(Clone, Copy)]
enum Kind {
    Client = 3,
    Producer = 4,
    Consumer = 5,
}

/// Appends the hop's spans to `out`; how many.
pub fn write(hop: &Hop, times: Times, system: &'static str, out: &mut Vec<u8>) -> usize {
    let messaging = Messaging { system, conversation: hop.conversation.as_deref() };
    let mut w = Writer { buf: out };
    let mut n = 0;
    if !hop.source.is_empty() {
        process(&mut w, hop, times, &messaging);
        n += 1;
        if from_broker(&hop.source) {
            receive_and_ack(&mut w, hop, times, &messaging);
            n += 2;
        }
    }
    if !hop.destination.is_empty() {
        send(&mut w, hop, times, &messaging);
        n += 1;
    }
    let ended = system_time(hop.processed);
    match (hop.kind, &hop.invocation) {
        (HopKind::Answer, Some(closed)) => invocation(&mut w, closed, ended, None),
        (HopKind::Timeout | HopKind::DeadLetter, Some(closed)) => {
            let kind = hop.error.as_ref().map_or("timeout", |(kind, _)| *kind);
            invocation(&mut w, closed, ended, Some(kind));
        }
        _ => return n,
    }
    n + 1
}

/// What every messaging span of a hop says.
struct Messaging<'a> {
    system: &'static str,
    conversation: Option<&'a str>,
}

impl Messaging<'_> {
    fn attributes(&self, s: &mut Writer<'_>, operation: &str, name: &str, destination: &str) {
        s.attribute(ATTRIBUTES, "messaging.system", Value::Str(self.system));
        s.attribute(ATTRIBUTES, "messaging.operation.type", Value::Str(operation));
        s.attribute(ATTRIBUTES, "messaging.operation.name", Value::Str(name));
        s.attribute(ATTRIBUTES, "messaging.destination.name", Value::Cut(destination, VALUE));
        if let Some(conversation) = self.conversation {
            s.attribute(ATTRIBUTES, "messaging.message.conversation_id", Value::Cut(conversation, VALUE));
        }
    }
}

/// Whether a hop's source is a broker's destination (not an A2A or MCP route, or an A2A answer).
fn from_broker(source: &str) -> bool {
    !["/a2a/", "/mcp/", crate::routing::A2A_ANSWERS].iter().any(|http| source.starts_with(http))
}

/// A span's fields every span has; `body` writes the rest.
fn span(
    w: &mut Writer<'_>,
    (trace, id, parent): (TraceId, SpanId, Option<SpanId>),
    name: [&str; 2],
    kind: Kind,
    (start, end): (SystemTime, SystemTime),
    body: impl FnOnce(&mut Writer<'_>),
) {
    w.message(SPANS, |s| {
        s.bytes(TRACE_ID, &trace.0.to_be_bytes());
        s.bytes(SPAN_ID, &id.0.to_be_bytes());
        if let Some(parent) = parent {
            s.bytes(PARENT, &parent.0.to_be_bytes());
        }
        s.string(NAME, &name);
        s.varint(KIND, kind as u64);
        s.fixed64(START, nanos(start));
        s.fixed64(END, nanos(end.max(start)));
        body(s);
        s.fixed32(FLAGS, LOCAL);
    });
}

fn process(w: &mut Writer<'_>, hop: &Hop, times: Times, messaging: &Messaging<'_>) {
    let ids = (hop.trace, hop.process, hop.parent);
    span(w, ids, ["process ", &hop.source], Kind::Consumer, (times.received, times.settled), |s| {
        messaging.attributes(s, "process", "process", &hop.source);
        s.attribute(ATTRIBUTES, "messaging.message.id", Value::Cut(&hop.message_id, VALUE));
        s.attribute(ATTRIBUTES, "messaging.message.body.size", Value::Int(hop.body_size as i64));
        s.attribute(ATTRIBUTES, "bridge.hop", Value::Str(hop.kind.as_str()));
        s.attribute(ATTRIBUTES, "bridge.from.agent", Value::Cut(&hop.from.name, VALUE));
        s.attribute(ATTRIBUTES, "bridge.from.framework", Value::Str(hop.from.framework));
        if let Some((kind, _)) = &hop.error {
            s.attribute(ATTRIBUTES, "error.type", Value::Str(kind));
        }
        for note in &hop.notes {
            s.message(EVENTS, |e| {
                e.fixed64(1, nanos(note.at));
                e.string(2, &[note.kind]);
                e.attribute(3, "bridge.detail", Value::Cut(&note.detail, VALUE));
            });
        }
        if let Some((trace, span)) = hop.link {
            s.message(LINKS, |l| {
                l.bytes(1, &trace.0.to_be_bytes());
                l.bytes(2, &span.0.to_be_bytes());
                l.fixed32(6, REMOTE);
            });
        }
        if let Some((_, reason)) = &hop.error {
            error_status(s, &[reason]);
        }
    });
}

/// The instants the frame arrived and its acknowledgement went out (their ids derived from the
/// process span's: unique within the trace, nothing to remember).
fn receive_and_ack(w: &mut Writer<'_>, hop: &Hop, times: Times, messaging: &Messaging<'_>) {
    let (receive, ack) = (SpanId(hop.process.0 ^ 0x5eed_0001), SpanId(hop.process.0 ^ 0x5eed_0002));
    let ids = (hop.trace, receive, Some(hop.process));
    span(w, ids, ["receive ", &hop.source], Kind::Client, (times.received, times.received), |s| {
        messaging.attributes(s, "receive", "receive", &hop.source);
    });
    let ids = (hop.trace, ack, Some(hop.process));
    span(w, ids, ["ack ", &hop.source], Kind::Client, (times.settled, times.settled), |s| {
        messaging.attributes(s, "settle", "ack", &hop.source);
    });
}

fn send(w: &mut Writer<'_>, hop: &Hop, times: Times, messaging: &Messaging<'_>) {
    // An ask's send is its invocation's child; with no process span (an error answer, an A2A
    // task's answer), the invocation it ends is the parent.
    let parent = match (hop.kind, &hop.invocation) {
        (HopKind::Ask, Some(opened)) => opened.span,
        (_, Some(closed)) if hop.source.is_empty() => closed.span,
        _ => hop.process,
    };
    let ids = (hop.trace, hop.send, Some(parent));
    let start = system_time(hop.processed).min(times.settled);
    span(w, ids, ["send ", &hop.destination], Kind::Producer, (start, times.settled), |s| {
        messaging.attributes(s, "send", "send", &hop.destination);
        if let Some(to) = &hop.to {
            s.attribute(ATTRIBUTES, "bridge.to.agent", Value::Cut(&to.name, VALUE));
            s.attribute(ATTRIBUTES, "bridge.to.framework", Value::Str(to.framework));
        }
    });
}

/// The `invoke_agent` span of an ask, ended at `end`; `error`: how it failed.
fn invocation(w: &mut Writer<'_>, ask: &Invocation, end: SystemTime, error: Option<&'static str>) {
    let ids = (ask.trace, ask.span, Some(ask.parent));
    let start = system_time(ask.started).min(end);
    span(w, ids, ["invoke_agent ", &ask.agent], Kind::Client, (start, end), |s| {
        s.attribute(ATTRIBUTES, "gen_ai.operation.name", Value::Str("invoke_agent"));
        s.attribute(ATTRIBUTES, "gen_ai.provider.name", Value::Str(ask.framework));
        s.attribute(ATTRIBUTES, "gen_ai.agent.name", Value::Cut(&ask.agent, VALUE));
        if let Some(conversation) = &ask.conversation {
            s.attribute(ATTRIBUTES, "gen_ai.conversation.id", Value::Cut(conversation, VALUE));
        }
        if let Some(kind) = error {
            s.attribute(ATTRIBUTES, "error.type", Value::Str(kind));
            let agent = cut(&ask.agent);
            error_status(s, &["no answer from ", agent.0, agent.1, ": ", kind]);
        }
    });
}

/// `Status{message, code: ERROR}`, the message cut to [`VALUE`] characters.
fn error_status(s: &mut Writer<'_>, message: &[&str]) {
    s.message(STATUS, |st| {
        match message {
            [one] => st.cut(2, one, VALUE),
            parts => st.string(2, parts),
        }
        st.varint(3, 2);
    });
}

/// At most [`VALUE`] characters of `text`, and `…` if it was cut.
fn cut(text: &str) -> (&str, &'static str) {
    match text.char_indices().nth(VALUE).filter(|_| text.len() > VALUE) {
        Some((end, _)) => (&text[..end], "…"),
        None => (text, ""),
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
