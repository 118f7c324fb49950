//! What an answer takes from its ask: the ask's reply base, kept in the correlation table
//! until the answer comes. Up to `correlation_capacity` of them are held at once, so the
//! strings are packed into one allocation (an `Envelope` of mostly empty fields was 512
//! bytes before its ten strings, each its own allocation).

use crate::envelope::correlation::{ReplyRoute, reply_via};
use crate::envelope::{Direction, Envelope, Intent};
use serde_json::Value;
use std::collections::BTreeMap;

/// The string fields of a reply base, in packing order.
#[derive(Clone, Copy)]
enum Field {
    Recipient,
    ReplyVia,
    RouteResponseTo,
    Context,
    ToolId,
    CorrelationId,
    InReplyTo,
    TraceId,
    ParentSpanId,
    Tenant,
}

const FIELDS: usize = 10;

/// The response an ask's answer will need: addressed to the asker (its `reply_to` address if
/// it gave one), with the ask's context, tool id, route_response_to, the asker's own message
/// id and correlation id, trace, tenant, deadline and PenguiFlow `meta` keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyBase {
    /// The fields that are set, one after another.
    text: Box<str>,
    /// Where each field ends in `text`; a field not set is empty and its bit in `set` clear.
    ends: [u32; FIELDS],
    set: u16,
    deadline: Option<f64>,
    /// PenguiFlow `meta` keys (`penguiflow.meta.*`); empty, and unallocated, for the others.
    extra: BTreeMap<String, Value>,
}

impl ReplyBase {
    /// The reply base of `ask`, asked by `asker`.
    pub fn of(ask: &Envelope, asker: &str) -> ReplyBase {
        let extra = ask
            .extra
            .iter()
            .filter(|(k, _)| k.starts_with("penguiflow.meta."))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let recipient = ask.reply_to.as_deref().unwrap_or(asker);
        let via = reply_via(ask);
        // A bridge's token in the ask's tool id is that hop's routing, not the asker's: not
        // echoed; but a token naming a task (an A2A task's, an MCP call's, asked by the bridge
        // of a proxied agent) is how its answer finds the task: echoed.
        let tool_id = ask
            .tool_id
            .as_deref()
            .filter(|t| ReplyRoute::from_token(t).is_none_or(|route| route.task.is_some()));
        let fields: [Option<&str>; FIELDS] = [
            Some(recipient),
            via.as_deref(),
            ask.route_response_to.as_deref(),
            ask.context.as_deref(),
            tool_id,
            ask.correlation_id.as_deref(),
            ask.id.as_deref(),
            ask.trace_id.as_deref(),
            ask.span_id.as_deref(),
            ask.tenant.as_deref(),
        ];
        ReplyBase::pack(fields, ask.deadline, extra)
    }

    /// The reply base a reply-route token carries, for an answer whose ask is no longer
    /// pending (a restart, another bridge instance): what names the conversation, without
    /// the trace, tenant and deadline that only the table keeps.
    pub fn of_route(route: &ReplyRoute) -> ReplyBase {
        let fields: [Option<&str>; FIELDS] = [
            route.requester.as_deref(),
            route.asker.as_deref(),
            route.route_response_to.as_deref(),
            route.context.as_deref(),
            route.tool_id.as_deref(),
            route.correlation_id.as_deref(),
            route.request_id.as_deref(),
            None,
            None,
            None,
        ];
        ReplyBase::pack(fields, None, BTreeMap::new())
    }

    fn pack(
        fields: [Option<&str>; FIELDS],
        deadline: Option<f64>,
        extra: BTreeMap<String, Value>,
    ) -> ReplyBase {
        let mut text = String::with_capacity(fields.iter().flatten().map(|f| f.len()).sum());
        let mut ends = [0u32; FIELDS];
        let mut set = 0u16;
        for (i, field) in fields.iter().enumerate() {
            if let Some(f) = field {
                text.push_str(f);
                set |= 1 << i;
            }
            // A body is bounded by delivery.max_body_bytes (at most 4 GiB), and so is the text.
            ends[i] = u32::try_from(text.len()).unwrap_or(u32::MAX);
        }
        ReplyBase { text: text.into_boxed_str(), ends, set, deadline, extra }
    }

    fn get(&self, field: Field) -> Option<&str> {
        let i = field as usize;
        if self.set & (1 << i) == 0 {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.text.get(start..self.ends[i] as usize)
    }

    fn owned(&self, field: Field) -> Option<String> {
        self.get(field).map(str::to_owned)
    }

    /// Who the answer goes to: the asker, or the reply address it gave.
    pub fn recipient(&self) -> Option<&str> {
        self.get(Field::Recipient)
    }

    /// The ask's Wise Agents context.
    pub fn context(&self) -> Option<&str> {
        self.get(Field::Context)
    }

    /// The one rule by which an answer is filled in from its ask, whether the ask was found
    /// pending or only its token came back (docs/MAPPING.md, "Conversations"): **the ask
    /// wins** for what names the conversation. Always the ask's: the tool id, correlation id
    /// and message id (`in_reply_to`), and the asker's inbox (`reply_via`), each cleared when
    /// the ask had none; the ask's recipient, context, route_response_to, trace, tenant,
    /// parent span and deadline when it has them, the answer's own otherwise; PenguiFlow `meta`
    /// keys fill in what the answer lacks. The answer keeps its own content and type (a
    /// RESPONSE when it has none).
    pub fn apply_to(self, env: &mut Envelope) {
        env.direction = Direction::Response;
        env.recipient = self.owned(Field::Recipient).or(env.recipient.take());
        env.tool_id = self.owned(Field::ToolId);
        env.correlation_id = self.owned(Field::CorrelationId);
        env.in_reply_to = self.owned(Field::InReplyTo);
        env.reply_to = None;
        env.reply_via = self.owned(Field::ReplyVia);
        for (slot, field) in [
            (&mut env.context, Field::Context),
            (&mut env.route_response_to, Field::RouteResponseTo),
            (&mut env.trace_id, Field::TraceId),
            (&mut env.tenant, Field::Tenant),
        ] {
            if let Some(value) = self.owned(field) {
                *slot = Some(value);
            }
        }
        env.parent_span_id = self.owned(Field::ParentSpanId).or(env.parent_span_id.take());
        env.deadline = self.deadline.or(env.deadline);
        env.intent = env.intent.or(Some(Intent::Response));
        for (k, v) in self.extra {
            env.extra.entry(k).or_insert(v);
        }
    }

    /// The reply base alone, as a response envelope (an error answer starts from it).
    pub fn into_envelope(self) -> Envelope {
        let mut env = Envelope::default();
        self.apply_to(&mut env);
        env.intent = None;
        env
    }
}

#[cfg(test)]
#[path = "reply_base_tests.rs"]
mod tests;
