//! The trace of a task an A2A client gives a Wise Agents agent (docs/OBSERVABILITY.md): the
//! client's own trace, continued from its `traceparent` HTTP header (or, without one, a
//! `traceparent` key in the message's metadata), else a new one. The task is recorded as two
//! hops, the ask when the broker took the request and the answer when the task ends, so that
//! the page and the OTLP export show it as they show any conversation.

use super::Asking;
use crate::envelope::SystemClock;
use crate::envelope::trace::{Invocation, SpanContext, SpanId, TraceId};
use crate::telemetry::Metrics;
use crate::telemetry::trace::{Hop, HopKind, Party, Times};
use a2a_server::ExecutorContext;
use std::time::SystemTime;

/// The key of a message's metadata read for a `traceparent` when the request has no header.
pub const METADATA_KEY: &str = "traceparent";

/// A task's trace: its ids, and what its hops name.
pub struct TaskTrace {
    arrived: Option<SpanContext>,
    process: SpanId,
    send: SpanId,
    invocation: Invocation,
    received: SystemTime,
    source: Box<str>,
    request_queue: Box<str>,
}

impl TaskTrace {
    /// The trace of the task `ctx` gives `agent`, in the Wise Agents context `context`.
    pub fn of(ctx: &ExecutorContext, asking: &Asking, agent: &str, context: &str) -> TaskTrace {
        let header = ctx.service_params.get("traceparent").and_then(|v| v.first()).map(String::as_str);
        let metadata =
            ctx.message.as_ref().and_then(|m| m.metadata.as_ref()).and_then(|m| m.get(METADATA_KEY));
        let arrived = header.or(metadata.and_then(|v| v.as_str())).and_then(SpanContext::parse);
        let clock = &mut SystemClock;
        let trace = arrived.map_or_else(|| TraceId::new(clock), |cx| cx.trace);
        let (process, invoke, send) = (SpanId::new(clock), SpanId::new(clock), SpanId::new(clock));
        let invocation = Invocation {
            trace,
            span: invoke,
            parent: process,
            started: crate::envelope::now_unix(),
            agent: agent.into(),
            framework: "wiseagents",
            conversation: Some(context.into()),
        };
        TaskTrace {
            arrived,
            process,
            send,
            invocation,
            received: SystemTime::now(),
            source: format!("/a2a/{agent}").into(),
            request_queue: format!("{}{agent}", asking.request_prefix).into(),
        }
    }

    /// The `traceparent` of the request published to the agent (the send span).
    pub fn header(&self) -> String {
        SpanContext { trace: self.invocation.trace, span: self.send, flags: 1 }.header()
    }

    /// The broker took the request: the ask.
    pub fn asked(&self, metrics: &Metrics, task: &str) {
        let hop = Hop {
            trace: self.invocation.trace,
            kind: HopKind::Ask,
            parent: self.arrived.map(|cx| cx.span),
            link: None,
            process: self.process,
            send: self.send,
            from: Party { name: "A2A client".into(), framework: "a2a" },
            to: Some(Party { name: self.invocation.agent.clone(), framework: "wiseagents" }),
            conversation: self.invocation.conversation.clone(),
            source: self.source.clone(),
            destination: self.request_queue.clone(),
            message_id: task.into(),
            body_size: 0,
            processed: self.invocation.started,
            invocation: Some(self.invocation.clone()),
            error: None,
            notes: Vec::new(),
        };
        metrics.traces.record(&hop, Times { received: self.received, settled: SystemTime::now() });
    }

    /// The task ended: the answer, or (`failure`) why there is none.
    pub fn ended(&self, metrics: &Metrics, task: &str, failure: Option<(&'static str, &str)>) {
        let clock = &mut SystemClock;
        let hop = Hop {
            trace: self.invocation.trace,
            kind: if failure.is_some() { HopKind::Timeout } else { HopKind::Answer },
            parent: Some(self.invocation.span),
            link: None,
            process: SpanId::new(clock),
            send: SpanId::new(clock),
            from: Party { name: self.invocation.agent.clone(), framework: "wiseagents" },
            to: Some(Party { name: "A2A client".into(), framework: "a2a" }),
            conversation: self.invocation.conversation.clone(),
            source: "".into(),
            destination: self.source.clone(),
            message_id: task.into(),
            body_size: 0,
            processed: crate::envelope::now_unix(),
            invocation: Some(self.invocation.clone()),
            error: failure.map(|(kind, why)| (kind, why.into())),
            notes: Vec::new(),
        };
        let now = SystemTime::now();
        metrics.traces.record(&hop, Times { received: now, settled: now });
    }
}
