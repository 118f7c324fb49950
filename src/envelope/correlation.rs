//! The reply route: what a reply needs to find its way back (requester, context, tool id,
//! route_response_to, the request's id and correlation id), carried out inside the request
//! as an opaque token that the other framework echoes verbatim (Civitas `correlation_id`,
//! PenguiFlow `meta.correlation_id`). State travels in the messages, so replies stay
//! routable after a bridge restart and across several bridge instances. An answer is filled in
//! from its token by the one rule of `routing::reply_base::ReplyBase::apply_to`.

use super::Envelope;
use serde::{Deserialize, Serialize};

const PREFIX: &str = "sab1:";

/// Where a reply goes and what it must echo.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReplyRoute {
    /// The bridge's id of the ask, by which its pending entry is found.
    #[serde(rename = "ask", default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,
    #[serde(rename = "id", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(rename = "from", default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    #[serde(rename = "ctx", default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(rename = "tool", default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    #[serde(rename = "rrt", default, skip_serializing_if = "Option::is_none")]
    pub route_response_to: Option<String>,
    /// The correlation id the requester itself used, to give back on the reply.
    #[serde(rename = "cid", default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The request's `sender`, when its `reply_to` (the requester above) is another address:
    /// a Civitas `_reply.*` answer is delivered to this agent's inbox.
    #[serde(rename = "via", default, skip_serializing_if = "Option::is_none")]
    pub asker: Option<String>,
    /// The A2A task a request was asked for (the bridge's A2A service, docs/A2A.md): its
    /// answer completes that task instead of being published.
    #[serde(rename = "a2a", default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The `invoke_agent` span the ask opened (traces on), as a `traceparent`: an answer whose
    /// pending ask is gone (taken back after a failover, a restart, another bridge) is still
    /// its child.
    #[serde(rename = "span", default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<String>,
}

impl ReplyRoute {
    /// The route of a request that is being sent out with id `request_id`.
    pub fn of_request(env: &Envelope, request_id: &str) -> Self {
        ReplyRoute {
            ask: None,
            request_id: Some(request_id.to_owned()),
            requester: env.reply_to.clone().or_else(|| env.sender.clone()),
            context: env.context.clone(),
            tool_id: env.tool_id.clone(),
            route_response_to: env.route_response_to.clone(),
            correlation_id: env.correlation_id.clone(),
            asker: reply_via(env),
            task: None,
            invocation: None,
        }
    }

    /// The token: `sab1:` and compact JSON.
    pub fn to_token(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned());
        format!("{PREFIX}{json}")
    }

    /// Reads a token; `None` for any other correlation id.
    pub fn from_token(token: &str) -> Option<Self> {
        serde_json::from_str(token.strip_prefix(PREFIX)?).ok()
    }
}

/// For a request whose `reply_to` is not its `sender`: the sender, whose inbox an answer to
/// that address goes to (see [`Envelope::reply_via`]).
pub fn reply_via(request: &Envelope) -> Option<String> {
    let sender = request.sender.as_deref().filter(|s| !s.is_empty())?;
    let reply_to = request.reply_to.as_deref().filter(|r| !r.is_empty())?;
    (reply_to != sender).then(|| sender.to_owned())
}

#[cfg(test)]
#[path = "correlation_tests.rs"]
mod tests;
