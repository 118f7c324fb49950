//! The trace of one message through the pipeline (docs/OBSERVABILITY.md), when traces are on
//! (`[traces]` or the conversations page): the trace it continues or starts, the ids of the
//! bridge's spans, and the [`Hop`] the engine reports once the message is settled. Pure, as
//! the pipeline is: the ids come from the `Now` it is handed.

use super::Now;
use crate::envelope::Envelope;
use crate::envelope::codecs::Framework;
use crate::envelope::trace::{Invocation, SpanId, TraceId};
use crate::routing::Target;
use crate::telemetry::trace::{Hop, HopKind, Party};

/// What a message brought with it: its trace context (from a `traceparent` header or its
/// body's fields), who sent it, its id.
pub(super) struct Arrival {
    /// The context it carried: a trace, and the span it was sent in (PenguiFlow carries a
    /// trace alone).
    trace: Option<TraceId>,
    span: Option<SpanId>,
    from: Party,
    message_id: Box<str>,
    source: Box<str>,
    body_size: usize,
}

/// The bridge's spans for one message: it processed it, may have opened an `invoke_agent`
/// span (an ask), and sent something on.
pub(super) struct Spans {
    pub trace: TraceId,
    pub process: SpanId,
    pub invoke: SpanId,
    pub send: SpanId,
}

impl Arrival {
    pub(super) fn of(env: &Envelope, from: Framework, source: &str, body_size: usize) -> Arrival {
        let trace = env.trace_id.as_deref().and_then(TraceId::parse);
        Arrival {
            trace,
            span: env.span_id.as_deref().and_then(SpanId::parse).filter(|_| trace.is_some()),
            from: party(env.sender.as_deref(), from),
            message_id: env.id.as_deref().unwrap_or_default().into(),
            source: source.into(),
            body_size,
        }
    }

    /// The trace this message belongs to, written into the envelope: an answer's is its ask's
    /// (the conversation's; what the answer carried is linked), any other message's the one it
    /// carried (continued, never replaced), else a new one; and new ids for the bridge's spans.
    pub(super) fn spans(&self, env: &mut Envelope, asked_in: Option<TraceId>, now: &mut Now) -> Spans {
        let trace = asked_in.or(self.trace).unwrap_or_else(|| TraceId::new(now));
        env.trace_id = Some(trace.hex());
        Spans { trace, process: SpanId::new(now), invoke: SpanId::new(now), send: SpanId::new(now) }
    }

    /// The `invoke_agent` span an ask to `target` opens.
    pub(super) fn invocation(&self, spans: &Spans, env: &Envelope, target: &Target, now: &Now) -> Invocation {
        Invocation {
            trace: spans.trace,
            span: spans.invoke,
            parent: spans.process,
            started: now.unix,
            agent: env.recipient.as_deref().unwrap_or(&target.destination).into(),
            framework: target.framework.as_str(),
            conversation: env.context.as_deref().map(Into::into),
        }
    }

    /// The hop: the ids written into the envelope that leaves (its span is the send span,
    /// its parent the `invoke_agent` span of an ask or the process span otherwise; an answer
    /// keeps the parent its asker expects), and the record the engine reports.
    pub(super) fn hop(self, spans: Spans, env: &mut Envelope, turn: Turn, target: &Target, now: &Now) -> Hop {
        env.span_id = Some(spans.send.hex());
        // An ask's agent and conversation are its invocation's, shared.
        let (to, conversation) = match &turn {
            Turn::Ask(opened) if env.recipient.is_some() => {
                (opened.agent.clone(), opened.conversation.clone())
            }
            _ => (name(env.recipient.as_deref()), env.context.as_deref().map(Into::into)),
        };
        let (kind, parent, link, invocation) = match turn {
            Turn::Ask(opened) => {
                env.parent_span_id = Some(spans.invoke.hex());
                (HopKind::Ask, self.span, None, Some(opened))
            }
            Turn::Answer(closed) => {
                let link = self.trace.zip(self.span);
                (HopKind::Answer, Some(closed.span), link, Some(closed))
            }
            Turn::Joined(invoked) => (HopKind::Answer, Some(invoked), self.trace.zip(self.span), None),
            Turn::Other => {
                env.parent_span_id = Some(spans.process.hex());
                (HopKind::Message, self.span, None, None)
            }
        };
        Hop {
            trace: spans.trace,
            kind,
            parent,
            link,
            process: spans.process,
            send: spans.send,
            from: self.from,
            to: Some(Party { name: to, framework: target.framework.as_str() }),
            conversation,
            source: self.source,
            destination: target.destination.as_str().into(),
            message_id: self.message_id,
            body_size: self.body_size,
            processed: now.unix,
            invocation,
            error: None,
            notes: Vec::new(),
        }
    }
}

/// What a message is to its conversation's `invoke_agent` spans.
pub(super) enum Turn {
    /// An ask, which opened this span.
    Ask(Invocation),
    /// The answer to the ask that opened this span.
    Answer(Invocation),
    /// An answer whose ask is no longer pending (its token named its `invoke_agent` span): a
    /// child of that span, which it does not end (the bridge that holds the ask, or held it,
    /// does; a second answer must not end it twice).
    Joined(SpanId),
    Other,
}

/// The error answer to an ask whose reply timeout passed: it ends the ask's `invoke_agent`
/// span with an error.
pub(super) fn timeout_hop(
    closed: Invocation,
    asker: &str,
    target: &Target,
    env: &mut Envelope,
    now: &mut Now,
) -> Hop {
    let (process, send) = (SpanId::new(now), SpanId::new(now));
    env.trace_id = Some(closed.trace.hex());
    env.span_id = Some(send.hex());
    Hop {
        trace: closed.trace,
        kind: HopKind::Timeout,
        parent: Some(closed.span),
        link: None,
        process,
        send,
        from: Party { name: closed.agent.clone(), framework: closed.framework },
        to: Some(party(Some(asker), target.framework)),
        conversation: closed.conversation.clone(),
        source: "".into(),
        destination: target.destination.as_str().into(),
        message_id: "".into(),
        body_size: 0,
        processed: now.unix,
        invocation: Some(closed),
        error: Some(("reply_timeout", "no answer within the reply timeout".into())),
        notes: Vec::new(),
    }
}

fn party(name_: Option<&str>, framework: Framework) -> Party {
    Party { name: name(name_), framework: framework.as_str() }
}

/// An agent's name, `?` when the message does not say.
fn name(name: Option<&str>) -> std::sync::Arc<str> {
    name.unwrap_or("?").into()
}
