//! A streamed answer (`SendStreamingMessage`'s events) folded into the one answer a Wise
//! Agents asker reads: the task as its last status says, with every artifact as the updates
//! built it (appended where the agent said `append`). Pure.

use a2a::{Artifact, SendMessageResponse, StreamResponse, Task, TaskState, TaskStatus};

/// The events of one stream, so far.
#[derive(Debug, Default)]
pub struct Folded {
    task: Option<Task>,
    answer: Option<SendMessageResponse>,
}

impl Folded {
    /// Takes one event; the answer once the stream has given it (a Message, or a task in a
    /// final or an interrupted state: more input or authorization wanted).
    pub fn take(&mut self, event: StreamResponse) -> Option<SendMessageResponse> {
        match event {
            StreamResponse::Message(message) => self.answer = Some(SendMessageResponse::Message(message)),
            StreamResponse::Task(task) => self.task = Some(task),
            StreamResponse::StatusUpdate(update) => {
                let task = self.task_of(&update.task_id, &update.context_id);
                task.status = update.status;
            }
            StreamResponse::ArtifactUpdate(update) => {
                let append = update.append.unwrap_or(false);
                let task = self.task_of(&update.task_id, &update.context_id);
                merge(task.artifacts.get_or_insert_with(Vec::new), update.artifact, append);
            }
        }
        if self.answer.is_none() && self.task.as_ref().is_some_and(|t| ends(&t.status.state)) {
            self.answer = self.task.take().map(SendMessageResponse::Task);
        }
        self.answer.clone()
    }

    /// The task the events name, made from its ids if no Task event came first.
    fn task_of(&mut self, id: &a2a::TaskId, context_id: &str) -> &mut Task {
        self.task.get_or_insert_with(|| Task {
            id: id.clone(),
            context_id: context_id.to_owned(),
            status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: None },
            artifacts: None,
            history: None,
            metadata: None,
        })
    }
}

/// Whether a stream ends with this state: a final one, or one that waits for the asker.
pub fn ends(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// `artifact` into `artifacts`: its parts after those of the artifact with its id when
/// `append`, else in its place (or last, when new).
fn merge(artifacts: &mut Vec<Artifact>, artifact: Artifact, append: bool) {
    match artifacts.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
        Some(known) if append => known.parts.extend(artifact.parts),
        Some(known) => *known = artifact,
        None => artifacts.push(artifact),
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
