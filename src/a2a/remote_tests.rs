use super::*;
use a2a::{Artifact, Part, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent};
use futures_util::stream;

#[test]
fn the_origin_of_a_url_is_its_scheme_host_and_port() {
    assert_eq!(origin("https://Agent.example:8443/a2a/T?x=1"), "https://agent.example:8443");
    assert_ne!(origin("http://agent.example/a2a"), origin("https://agent.example/a2a"), "no downgrade");
    assert_ne!(origin("https://agent.example/a2a"), origin("https://agent.example.evil/a2a"));
}

fn status(task: &str, state: TaskState) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.into(),
        context_id: "c".into(),
        status: TaskStatus { state, message: None, timestamp: None },
        metadata: None,
    })
}

#[tokio::test]
async fn a_stream_that_breaks_leaves_the_id_of_the_task_it_opened() {
    let opened = StdMutex::new(None);
    let events = vec![Ok(status("t-1", TaskState::Working)), Err(A2AError::internal("connection reset"))];
    let broken = fold(Box::pin(stream::iter(events)), &opened).await;
    assert!(broken.is_err());
    assert_eq!(opened.lock().unwrap().as_deref(), Some("t-1"), "the next attempt resumes it");
}

#[tokio::test]
async fn a_stream_that_ends_its_task_is_the_answer() {
    let opened = StdMutex::new(None);
    let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: "t-2".into(),
        context_id: "c".into(),
        artifact: Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::text("done")],
            metadata: None,
            extensions: None,
        },
        append: None,
        last_chunk: Some(true),
        metadata: None,
    });
    let events = vec![Ok(artifact), Ok(status("t-2", TaskState::Completed))];
    let Ok(SendMessageResponse::Task(task)) = fold(Box::pin(stream::iter(events)), &opened).await else {
        panic!("the task")
    };
    assert_eq!((task.id.as_str(), task.status.state), ("t-2", TaskState::Completed));
    assert_eq!(opened.lock().unwrap().as_deref(), Some("t-2"));
}
