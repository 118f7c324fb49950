//! The SDK's executor: one Wise Agents ask per A2A task. The request is published (and its
//! receipt awaited) before the task is reported SUBMITTED; the task then follows the answers:
//! `ACK` → WORKING, `CANNOT_ANSWER` → FAILED, any other answer → its text as an artifact and
//! COMPLETED; no answer within `a2a.reply_timeout_ms` → FAILED.

use super::A2aService;
use super::error::A2aFailure;
use super::request::question;
use super::store::{Followed, Shared};
use crate::envelope::Intent;
use crate::relay::trace::TaskTrace;
use crate::relay::{Caller, TaskAnswer};
use crate::telemetry::Event;
use crate::telemetry::a2a::TaskEnded;
use a2a::{
    A2AError, Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, ExecutorContext};
use futures_util::stream::{self, BoxStream};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The request header the service sets to the agent the path names (a client's own is
/// replaced).
pub const AGENT_HEADER: &str = "x-bridge-a2a-agent";

/// The metadata key of the agent a task was asked of.
const AGENT_KEY: &str = "wiseagentsAgent";

pub struct Executor {
    pub hub: Arc<A2aService>,
}

type Events = mpsc::UnboundedSender<Result<StreamResponse, A2AError>>;

impl AgentExecutor for Executor {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(ask(self.hub.clone(), ctx, tx));
        events(rx)
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        self.hub.relay.cancel(&ctx.task_id);
        let agent = agent_of(&ctx);
        TaskEnded { agent: &agent, task: &ctx.task_id, end: "canceled", reason: None }
            .emit(&self.hub.relay.metrics.a2a);
        let update = status(&ctx, TaskState::Canceled, None);
        Box::pin(stream::iter([Ok(update)]))
    }
}

fn events(
    rx: mpsc::UnboundedReceiver<Result<StreamResponse, A2AError>>,
) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
    Box::pin(stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }))
}

/// The agent the request's path named.
fn agent_of(ctx: &ExecutorContext) -> String {
    ctx.service_params.get(AGENT_HEADER).and_then(|v| v.first()).cloned().unwrap_or_default()
}

/// Asks the Wise Agents agent and reports the task's course on `tx`.
async fn ask(hub: Arc<A2aService>, ctx: ExecutorContext, tx: Events) {
    let agent = agent_of(&ctx);
    let end = |end: &'static str, reason: Option<&str>| {
        TaskEnded { agent: &agent, task: &ctx.task_id, end, reason }.emit(&hub.relay.metrics.a2a)
    };
    // A message naming a task never reaches this with a2a-server 0.5.3: a running task's is
    // refused -32600 and a finished one's -32004 before (docs/A2A.md). Kept so that an SDK that
    // lets a message continue a task cannot hand one agent's task to another.
    let asked_of = ctx.stored_task.as_ref().and_then(|t| t.metadata.as_ref()).and_then(|m| m.get(AGENT_KEY));
    if asked_of.is_some_and(|a| a.as_str() != Some(agent.as_str())) {
        let why = "the task belongs to another agent";
        end("refused", Some(why));
        let _ = tx.send(Ok(status(&ctx, TaskState::Rejected, Some(why))));
        return;
    }
    let text = match ctx.message.as_ref().ok_or(A2aFailure::NoMessage).and_then(question) {
        Ok(text) => text,
        Err(why) => {
            let why = why.to_string();
            end("refused", Some(&why));
            let _ = tx.send(Ok(status(&ctx, TaskState::Rejected, Some(&why))));
            return;
        }
    };
    let (_waiting, mut answers) = hub.relay.wait(&ctx.task_id, Caller::A2a);
    let context = hub.relay.context_for(&ctx.context_id).await;
    let mut frame = hub.relay.asking.request_frame(&agent, &ctx.task_id, &context, text);
    let arrived = super::trace::arrived(&ctx);
    let traced =
        hub.relay.traced.then(|| TaskTrace::of(arrived, Caller::A2a, &hub.relay.asking, &agent, &context));
    if let Some(trace) = &traced {
        frame = frame.with("traceparent", trace.header());
    }
    if let Err(e) = hub.relay.publish(frame).await {
        let why = format!("the broker did not take the request: {e}");
        end("failed", Some(&why));
        let _ = tx.send(Ok(status(&ctx, TaskState::Failed, Some(&why))));
        return;
    }
    let metrics = hub.relay.metrics.clone();
    let task = ctx.task_id.clone();
    if let Some(trace) = &traced {
        trace.asked(&metrics, &task);
    }
    let end = |end_as: &'static str, reason: Option<&str>| {
        end(end_as, reason);
        if let Some(trace) = &traced {
            let failure = (end_as != "completed").then(|| (end_as, reason.unwrap_or(end_as)));
            trace.ended(&metrics, &task, failure);
        }
    };
    let _ = tx.send(Ok(StreamResponse::Task(submitted(&ctx, &agent))));
    let deadline = tokio::time::Instant::now() + Duration::from_millis(hub.config.reply_timeout_ms);
    // With the tasks shared, another bridge may take the answer and write it into the task.
    let mut adopted = hub.tasks.shared().map(|s| (s.clone(), s.adopted(&task)));
    let mut reported = TaskState::Submitted;
    loop {
        let heard = tokio::select! {
            heard = tokio::time::timeout_at(deadline, answers.recv()) => heard,
            stored = written_elsewhere(&mut adopted, &reported) => {
                let state = stored.status.state.clone();
                let _ = tx.send(Ok(StreamResponse::Task(stored)));
                if let Some(end_as) = ending(&state) {
                    end(end_as, None);
                    return;
                }
                reported = state;
                continue;
            }
        };
        let answer = match heard {
            Ok(Some(answer)) => answer,
            // Canceled: the cancel reported the end; the trace ends here.
            Ok(None) => {
                if let Some(trace) = &traced {
                    trace.ended(&metrics, &task, Some(("canceled", "the task was canceled")));
                }
                return;
            }
            Err(_) => {
                let why = format!("no answer from {agent} within the reply timeout");
                end("failed", Some(&why));
                let _ = tx.send(Ok(status(&ctx, TaskState::Failed, Some(&why))));
                return;
            }
        };
        if tx.is_closed() {
            if let Some(trace) = &traced {
                trace.ended(&metrics, &task, Some(("gone", "the client went away")));
            }
            return;
        }
        for (event, ended) in events_of(&ctx, answer) {
            if let StreamResponse::StatusUpdate(update) = &event {
                reported = update.status.state.clone();
            }
            let _ = tx.send(Ok(event));
            if let Some((end_as, reason)) = ended {
                end(end_as, reason.as_deref());
                return;
            }
        }
    }
}

/// The task as another bridge wrote it, once it is past what this one `reported` (woken by
/// that bridge's word, or by the subscription coming back); never, with the tasks in memory.
async fn written_elsewhere(adopted: &mut Option<(Arc<Shared>, Followed)>, reported: &TaskState) -> Task {
    let Some((shared, followed)) = adopted else { return std::future::pending().await };
    loop {
        followed.woken().await;
        let Ok(Some((stored, _))) = shared.get_versioned(followed.id()).await else { continue };
        let state = &stored.status.state;
        if state.is_terminal() || (*state == TaskState::Working && *reported == TaskState::Submitted) {
            return stored;
        }
    }
}

/// How a task in `state` ended, as [`TaskEnded`] counts it; `None` while it runs.
fn ending(state: &TaskState) -> Option<&'static str> {
    match state {
        TaskState::Completed => Some("completed"),
        TaskState::Canceled => Some("canceled"),
        TaskState::Rejected => Some("refused"),
        s if s.is_terminal() => Some("failed"),
        _ => None,
    }
}

type Ending = Option<(&'static str, Option<String>)>;

/// What one answer does to the task: the events, and whether (and how) it ended the task.
fn events_of(ctx: &ExecutorContext, answer: TaskAnswer) -> Vec<(StreamResponse, Ending)> {
    let text = (!answer.text.is_empty()).then_some(answer.text.as_str());
    match answer.intent {
        Some(Intent::Ack) => vec![(status(ctx, TaskState::Working, text), None)],
        Some(Intent::CannotAnswer) => {
            let why = text.unwrap_or("the agent cannot answer").to_owned();
            vec![(status(ctx, TaskState::Failed, Some(&why)), Some(("failed", Some(why))))]
        }
        _ => {
            let artifact = TaskArtifactUpdateEvent {
                task_id: ctx.task_id.clone(),
                context_id: ctx.context_id.clone(),
                artifact: Artifact {
                    artifact_id: a2a::new_artifact_id(),
                    name: Some("answer".into()),
                    description: None,
                    parts: vec![Part::text(answer.text)],
                    metadata: None,
                    extensions: None,
                },
                append: None,
                last_chunk: Some(true),
                metadata: None,
            };
            vec![
                (StreamResponse::ArtifactUpdate(artifact), None),
                (status(ctx, TaskState::Completed, None), Some(("completed", None))),
            ]
        }
    }
}

/// The task as it stands once its request is on the broker.
fn submitted(ctx: &ExecutorContext, agent: &str) -> Task {
    let mut task = ctx.stored_task.clone().unwrap_or_else(|| Task {
        id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: None },
        artifacts: None,
        history: ctx.message.clone().map(|m| vec![m]),
        metadata: None,
    });
    task.status = TaskStatus { state: TaskState::Submitted, message: None, timestamp: None };
    task.metadata.get_or_insert_with(Default::default).insert(AGENT_KEY.into(), agent.into());
    task
}

/// A status update, with the agent's words when there are some.
fn status(ctx: &ExecutorContext, state: TaskState, text: Option<&str>) -> StreamResponse {
    let message = text.map(|t| {
        let mut m = Message::new(Role::Agent, vec![Part::text(t)]);
        m.task_id = Some(ctx.task_id.clone());
        m.context_id = Some(ctx.context_id.clone());
        m
    });
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus { state, message, timestamp: None },
        metadata: None,
    })
}
