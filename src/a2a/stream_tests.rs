use super::*;
use serde_json::{Value, json};

fn event(value: Value) -> StreamResponse {
    serde_json::from_value(value).unwrap()
}

fn status(state: &str) -> StreamResponse {
    event(json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}}))
}

fn chunk(id: &str, text: &str, append: bool) -> StreamResponse {
    event(json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": append,
        "artifact": {"artifactId": id, "parts": [{"text": text}]}}}))
}

fn texts(answer: &SendMessageResponse) -> Vec<String> {
    let SendMessageResponse::Task(task) = answer else { panic!("not a task: {answer:?}") };
    task.artifacts.iter().flatten().flat_map(|a| &a.parts).map(|p| format!("{:?}", p.content)).collect()
}

#[test]
fn the_answer_is_the_task_once_it_completes_with_its_artifacts_as_the_updates_built_them() {
    let mut folded = Folded::default();
    let task = json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"}}});
    assert!(folded.take(event(task)).is_none());
    assert!(folded.take(status("TASK_STATE_WORKING")).is_none());
    assert!(folded.take(chunk("a", "Ro", false)).is_none());
    assert!(folded.take(chunk("a", "ma", true)).is_none(), "appended to the artifact a");
    assert!(folded.take(chunk("b", "draft", false)).is_none());
    assert!(folded.take(chunk("b", "final", false)).is_none(), "replaces the artifact b");
    let answer = folded.take(status("TASK_STATE_COMPLETED")).expect("completed");
    assert_eq!(texts(&answer), ["Text(\"Ro\")", "Text(\"ma\")", "Text(\"final\")"]);
}

#[test]
fn a_stream_that_starts_with_an_update_and_stops_for_input_answers_with_that_state() {
    let mut folded = Folded::default();
    assert!(folded.take(status("TASK_STATE_WORKING")).is_none());
    let Some(SendMessageResponse::Task(task)) = folded.take(status("TASK_STATE_INPUT_REQUIRED")) else {
        panic!("an interrupted task ends the stream")
    };
    assert_eq!((task.id.as_ref(), task.status.state), ("t1", TaskState::InputRequired));
}

#[test]
fn a_message_is_the_answer() {
    let mut folded = Folded::default();
    let message = json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}});
    assert!(matches!(folded.take(event(message)), Some(SendMessageResponse::Message(_))));
}
