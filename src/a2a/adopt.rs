//! An answer for a task that no task here waits for, with the tasks in Redis (`[a2a.store]`):
//! the task runs on another bridge of the group (whose reply queue this bridge shares), or ran
//! here before a restart. The answer is written into its task as the executor would have
//! reported it, and the bridge that runs it, if one does, is told ([`Shared::announce_adopted`]),
//! so that its own stream ends with the task. Redis away or paused: the answer waits for it
//! (its message was taken from the broker already), for as long as the bridge runs.

use super::store::Shared;
use crate::envelope::Intent;
use crate::relay::TaskAnswer;
use crate::telemetry::Event as _;
use crate::telemetry::Metrics;
use crate::telemetry::a2a::{Adopted, LateAnswer};
use a2a::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
use std::sync::Arc;
use std::time::Duration;
use tracing::warn;

/// Takes `answer` on a task of its own.
pub fn spawn(shared: Arc<Shared>, metrics: Arc<Metrics>, answer: TaskAnswer) {
    tokio::spawn(adopt(shared, metrics, answer));
}

async fn adopt(shared: Arc<Shared>, metrics: Arc<Metrics>, answer: TaskAnswer) {
    let mut wait = Duration::from_millis(100);
    loop {
        match shared.change(&answer.task, |task| Ok(answered(task, &answer))).await {
            Ok(Some(task)) => {
                let state = serde_json::to_string(&task.status.state).unwrap_or_default();
                Adopted { task: &task.id, state: state.trim_matches('"') }.emit(&metrics.a2a);
                if let Err(e) = shared.announce_adopted(&task.id).await {
                    // The bridge that runs it reads it again on its next wake.
                    warn!(task = %task.id, error = %e, "cannot tell the other bridges that an A2A answer was written");
                }
                return;
            }
            // Unknown (forgotten, or of another group), or ended already.
            Ok(None) => return LateAnswer { task: &answer.task }.emit(&metrics.a2a),
            Err(e) if Shared::is_unavailable(&e) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
            Err(_) => return LateAnswer { task: &answer.task }.emit(&metrics.a2a),
        }
    }
}

/// The task with `answer` in it, as the executor reports answers (`ACK` → WORKING,
/// `CANNOT_ANSWER` → FAILED, else the text as the artifact `answer` and COMPLETED); `None`
/// for a task that ended.
pub fn answered(mut task: Task, answer: &TaskAnswer) -> Option<Task> {
    if task.status.state.is_terminal() {
        return None;
    }
    let text = (!answer.text.is_empty()).then_some(answer.text.as_str());
    let (state, said) = match answer.intent {
        Some(Intent::Ack) => (TaskState::Working, text),
        Some(Intent::CannotAnswer) => (TaskState::Failed, Some(text.unwrap_or("the agent cannot answer"))),
        _ => {
            task.artifacts.get_or_insert_with(Vec::new).push(Artifact {
                artifact_id: a2a::new_artifact_id(),
                name: Some("answer".into()),
                description: None,
                parts: vec![Part::text(answer.text.clone())],
                metadata: None,
                extensions: None,
            });
            (TaskState::Completed, None)
        }
    };
    let message = said.map(|t| {
        let mut m = Message::new(Role::Agent, vec![Part::text(t)]);
        m.task_id = Some(task.id.clone());
        m.context_id = Some(task.context_id.clone());
        m
    });
    task.status = TaskStatus { state, message, timestamp: Some(chrono::Utc::now()) };
    Some(task)
}

#[cfg(test)]
#[path = "adopt_tests.rs"]
mod tests;
