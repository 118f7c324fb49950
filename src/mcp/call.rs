//! A tool call: the agent asked on the broker through the [`Relay`] as an A2A task asks it
//! (the same QUERY, reply agent, token and settlement), each `ACK` a progress notification,
//! and the answer, `CANNOT_ANSWER` or the reply timeout the result.

use super::tools::{self, Question, Step};
use crate::envelope::trace::SpanContext;
use crate::relay::trace::TaskTrace;
use crate::relay::{Caller, Relay};
use crate::telemetry::Event;
use crate::telemetry::mcp::CallEnded;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where a call's progress goes: the caller's token, and the peer to notify.
pub struct Progress {
    pub token: ProgressToken,
    pub peer: Peer<RoleServer>,
}

/// What a call brings besides its question.
pub struct Asked {
    /// How long the answer is waited for.
    pub reply_timeout: Duration,
    /// Where each `ACK` goes, when the client asked for progress.
    pub progress: Option<Progress>,
    /// Fires when the client cancels or goes away: the call stops waiting.
    pub gone: CancellationToken,
    /// The client's `traceparent`, continued by the call's trace.
    pub arrived: Option<SpanContext>,
}

/// Asks `agent` the call's `question`; the result is the call's (a tool error for a failure).
pub async fn ask(relay: Arc<Relay>, agent: &str, question: Question, asked: Asked) -> CallToolResult {
    let Asked { reply_timeout, progress, gone, arrived } = asked;
    let call = format!("{}{}", Caller::MCP_PREFIX, uuid::Uuid::now_v7());
    let (_waiting, mut answers) = relay.wait(&call, Caller::Mcp);
    let context = relay.context_for(&question.context).await;
    let mut frame = relay.asking.request_frame(agent, &call, &context, question.text);
    let traced = relay.traced.then(|| TaskTrace::of(arrived, Caller::Mcp, &relay.asking, agent, &context));
    if let Some(trace) = &traced {
        frame = frame.with("traceparent", trace.header());
    }
    let end = |end: &'static str, reason: Option<&str>| {
        CallEnded { tool: agent, call: &call, end, reason }.emit(&relay.metrics.mcp);
        if let Some(trace) = &traced {
            trace.ended(&relay.metrics, &call, (end != "answered").then(|| (end, reason.unwrap_or(end))));
        }
    };
    if let Err(e) = relay.publish(frame).await {
        let why = format!("the broker did not take the request: {e}");
        CallEnded { tool: agent, call: &call, end: "failed", reason: Some(&why) }.emit(&relay.metrics.mcp);
        return tools::failure(why);
    }
    if let Some(trace) = &traced {
        trace.asked(&relay.metrics, &call);
    }
    let deadline = tokio::time::Instant::now() + reply_timeout;
    let mut acks = 0.0;
    loop {
        let answer = tokio::select! {
            answer = tokio::time::timeout_at(deadline, answers.recv()) => answer,
            _ = gone.cancelled() => {
                end("failed", Some("the client canceled the call or went away"));
                return tools::failure("canceled".into());
            }
        };
        let answer = match answer {
            Ok(Some(answer)) => answer,
            Ok(None) | Err(_) => {
                let why = format!(
                    "no answer from {agent} within the reply timeout ({} ms)",
                    reply_timeout.as_millis()
                );
                end("failed", Some(&why));
                return tools::failure(why);
            }
        };
        match tools::step(agent, answer) {
            Step::Progress(text) => {
                acks += 1.0;
                if let Some(Progress { token, peer }) = &progress {
                    let mut note = ProgressNotificationParam::new(token.clone(), acks);
                    note.message = (!text.is_empty()).then_some(text);
                    // A client that stops reading its stream holds the notification: never past
                    // the reply timeout, nor once it went away.
                    tokio::select! {
                        _ = tokio::time::timeout_at(deadline, peer.notify_progress(note)) => {}
                        _ = gone.cancelled() => {}
                    }
                }
            }
            Step::Done(result, answered) => {
                match answered {
                    true => end("answered", None),
                    false => end("failed", result_text(&result).as_deref()),
                }
                return result;
            }
        }
    }
}

/// The text of a result's first content, for the log.
fn result_text(result: &CallToolResult) -> Option<String> {
    result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone())
}
