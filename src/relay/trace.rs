//! The trace of a request a caller over HTTP gives a Wise Agents agent (an A2A task, an MCP
//! tool call; docs/OBSERVABILITY.md): the caller's own trace, continued from the
//! `traceparent` it sent, else a new one. The request is recorded as two hops, the ask when
//! the broker took it and the answer when it ends, so that the page and the OTLP export show
//! it as they show any conversation.

use super::{Asking, Caller};
use crate::envelope::SystemClock;
use crate::envelope::trace::{Invocation, SpanContext, SpanId, TraceId};
use crate::telemetry::Metrics;
use crate::telemetry::trace::{Hop, HopKind, Party, Times};
use std::time::SystemTime;

/// A request's trace: its ids, and what its hops name.
pub struct TaskTrace {
    arrived: Option<SpanContext>,
    caller: Party,
    process: SpanId,
    send: SpanId,
    invocation: Invocation,
    received: SystemTime,
    source: Box<str>,
    request_queue: Box<str>,
}

impl TaskTrace {
    /// The trace of the request `caller` gives `agent` in the Wise Agents context `context`,
    /// continuing `arrived` (the caller's `traceparent`) when it sent one.
    pub fn of(
        arrived: Option<SpanContext>,
        caller: Caller,
        asking: &Asking,
        agent: &str,
        context: &str,
    ) -> TaskTrace {
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
        let (name, framework, source) = match caller {
            Caller::A2a => ("A2A client", "a2a", format!("/a2a/{agent}")),
            Caller::Mcp => ("MCP client", "mcp", format!("/mcp/{agent}")),
        };
        TaskTrace {
            arrived,
            caller: Party { name: name.into(), framework },
            process,
            send,
            invocation,
            received: SystemTime::now(),
            source: source.into(),
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
            from: self.caller.clone(),
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

    /// The request ended: the answer, or (`failure`) why there is none.
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
            to: Some(self.caller.clone()),
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
