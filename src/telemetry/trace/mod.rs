//! Conversations as traces (docs/OBSERVABILITY.md): the pipeline describes each message's
//! hop through the bridge as a [`Hop`], data only; when the hop is settled, the same event
//! that writes its log line and counts its metric hands it here, to the page's
//! [`conversations::Conversations`] and, when OTLP is configured, to [`otlp::Exporter`] as
//! spans. Neither ever holds a message: the log is a bounded ring under a short lock, and the
//! exporter's queue is bounded, its overflow dropped and counted.

pub mod conversations;
pub mod otlp;

use crate::config::traces::TracesConfig;
use crate::envelope::trace::{Invocation, SpanId, TraceId};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// Where settled hops go: the page's conversations and the OTLP exporter, each when
/// configured (installed once, at start).
#[derive(Debug, Default)]
pub struct Traces {
    conversations: OnceLock<conversations::Conversations>,
    exporter: OnceLock<otlp::Exporter>,
}

impl Traces {
    /// Makes what `[traces]` asks for; an exporter that cannot be made is an error.
    pub fn install(&self, config: &TracesConfig) -> Result<(), String> {
        if config.conversations > 0 {
            let _ = self.conversations.set(conversations::Conversations::new(config.conversations));
        }
        if let Some(exporter) = otlp::Exporter::start(config)? {
            let _ = self.exporter.set(exporter);
        }
        Ok(())
    }

    /// A settled hop: an event of its conversation, and its spans.
    pub fn record(&self, hop: &Hop, times: Times) {
        if let Some(log) = self.conversations.get() {
            log.record(hop, times);
        }
        if let Some(exporter) = self.exporter.get() {
            exporter.offer(hop, times);
        }
    }

    pub fn conversations(&self) -> Option<&conversations::Conversations> {
        self.conversations.get()
    }

    pub fn exporter(&self) -> Option<&otlp::Exporter> {
        self.exporter.get()
    }

    /// `bridge_trace_spans_total` by outcome (an exporter configured) and
    /// `bridge_conversations` (the page on).
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write;
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(exporter) = self.exporter.get() {
            let c = &exporter.counts;
            out.push_str("# HELP bridge_trace_spans_total Spans exported over OTLP, dropped for a full queue, or lost to a failed export.\n");
            out.push_str("# TYPE bridge_trace_spans_total counter\n");
            for (outcome, n) in [("exported", &c.exported), ("dropped", &c.dropped), ("failed", &c.failed)] {
                let _ =
                    writeln!(out, "bridge_trace_spans_total{{outcome=\"{outcome}\"}} {}", n.load(Relaxed));
            }
        }
        if let Some(log) = self.conversations.get() {
            out.push_str("# HELP bridge_conversations Conversations the /conversations page keeps now.\n");
            out.push_str("# TYPE bridge_conversations gauge\n");
            let _ = writeln!(out, "bridge_conversations {}", log.len());
        }
    }
}

/// An agent as a conversation shows it: its name and its framework.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    pub name: Arc<str>,
    pub framework: &'static str,
}

/// What a hop is in its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopKind {
    /// A request sent on: it opens an `invoke_agent` span.
    Ask,
    /// The answer to a pending ask: it ends that ask's `invoke_agent` span.
    Answer,
    /// Neither (a one-way message, an answer no ask awaits).
    Message,
    /// The error answer the bridge sent for an ask with no answer within its reply timeout.
    Timeout,
    /// A message that could not be delivered.
    DeadLetter,
}

impl HopKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            HopKind::Ask => "ask",
            HopKind::Answer => "answer",
            HopKind::Message => "message",
            HopKind::Timeout => "timeout",
            HopKind::DeadLetter => "dead_letter",
        }
    }
}

/// One message's way through the bridge, with the ids of the spans it makes: `process` (the
/// bridge took it in, translated and routed it), `send` (what it published, the span the
/// published message carries), and the ask's `invoke_agent` span it opened or closed.
#[derive(Debug, Clone)]
pub struct Hop {
    pub trace: TraceId,
    pub kind: HopKind,
    /// The process span's parent: the span the consumed message carried, or, for an answer,
    /// the ask's `invoke_agent` span.
    pub parent: Option<SpanId>,
    /// The context an answer carried itself (its agent's span, perhaps in a trace of its
    /// own): linked, as the messaging conventions link a creation context.
    pub link: Option<(TraceId, SpanId)>,
    pub process: SpanId,
    pub send: SpanId,
    pub from: Party,
    pub to: Option<Party>,
    pub conversation: Option<Arc<str>>,
    /// The destination the message was consumed from, and the one it was published to.
    pub source: Box<str>,
    pub destination: Box<str>,
    pub message_id: Box<str>,
    pub body_size: usize,
    /// When the pipeline processed it (Unix seconds).
    pub processed: f64,
    /// The ask's `invoke_agent` span this hop opens (an ask) or ends (an answer, a timeout).
    pub invocation: Option<Invocation>,
    /// Why it was not delivered (a dead letter): the kind and the reason.
    pub error: Option<(&'static str, Box<str>)>,
    /// What happened to it on the way: span events of its process span, notes on the page.
    pub notes: Vec<Note>,
}

/// Something that happened to a message on its way (a span event; a note on the bridge's
/// lifeline on the page).
#[derive(Debug, Clone)]
pub struct Note {
    pub at: SystemTime,
    /// `hold` (waited for the Wise Agents registry), `retry` (published again after a failed
    /// batch, or an A2A call tried again).
    pub kind: &'static str,
    pub detail: Box<str>,
}

impl Hop {
    /// Notes `kind` now, at most [`NOTES`] per hop.
    pub fn note(&mut self, kind: &'static str, detail: impl Into<Box<str>>) {
        if self.notes.len() < NOTES {
            self.notes.push(Note { at: SystemTime::now(), kind, detail: detail.into() });
        }
    }

    /// The wait a note `what` began is over: the note says how long it was.
    pub fn waited(&mut self, what: &str) {
        if let Some(note) = self.notes.iter_mut().rev().find(|n| &*n.detail == what) {
            let ms = note.at.elapsed().map_or(0, |d| d.as_millis());
            note.detail = format!("{what}: {ms} ms").into();
        }
    }

    /// The message will not be delivered: its dead letter goes to `destination`. An answer
    /// still ends its ask's span, with the error; an ask never made opens none.
    pub fn dead_lettered(&mut self, destination: &str, kind: &'static str, reason: &str) {
        if self.kind != HopKind::Answer {
            self.invocation = None;
        }
        self.kind = HopKind::DeadLetter;
        self.to = None;
        self.destination = destination.into();
        self.error = Some((kind, reason.into()));
    }
}

/// Notes kept per hop.
pub const NOTES: usize = 8;

/// When a hop was received and settled, as wall-clock times.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub received: SystemTime,
    pub settled: SystemTime,
}

impl Times {
    /// Times of a message received `ago` before now, settled now.
    pub fn since(ago: std::time::Duration) -> Times {
        let settled = SystemTime::now();
        Times { received: settled.checked_sub(ago).unwrap_or(settled), settled }
    }
}

/// Unix seconds as a wall-clock time.
pub fn system_time(unix: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs_f64(unix.max(0.0))
}
