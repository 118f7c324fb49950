use super::*;
use serde_json::json;

fn answer(response: serde_json::Value) -> Envelope {
    to_envelope(response.to_string().as_bytes(), "Translator").unwrap()
}

fn task(state: &str, status_text: Option<&str>, artifacts: serde_json::Value) -> serde_json::Value {
    let mut status = json!({"state": state});
    if let Some(text) = status_text {
        status["message"] = json!({"messageId": "s1", "role": "ROLE_AGENT", "parts": [{"text": text}]});
    }
    json!({"task": {"id": "t1", "contextId": "c1", "status": status, "artifacts": artifacts}})
}

#[test]
fn a_request_is_one_user_message_with_the_text_and_the_context() {
    let env = Envelope {
        id: Some("m-1".into()),
        context: Some("Books".into()),
        content: Content::Text("what is the capital of Italy?".into()),
        ..Envelope::default()
    };
    let body: serde_json::Value = serde_json::from_slice(&encode(&env).unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"message": {"messageId": "m-1", "contextId": "Books", "role": "ROLE_USER",
                           "parts": [{"text": "what is the capital of Italy?"}]}})
    );
}

#[test]
fn a_completed_task_answers_with_its_artifacts_text_in_order() {
    let artifacts = json!([
        {"artifactId": "a1", "parts": [{"text": "Rome"}, {"data": {"population": 2.8}}]},
        {"artifactId": "a2", "parts": [{"text": "(capital since 1871)"}]}
    ]);
    let env = answer(task("TASK_STATE_COMPLETED", Some("done"), artifacts));
    assert_eq!(env.intent, Some(Intent::Response));
    assert_eq!(env.direction, Direction::Response);
    assert_eq!(env.sender.as_deref(), Some("Translator"));
    assert_eq!(env.content.to_text(), "Rome\n{\"population\":2.8}\n(capital since 1871)");
}

#[test]
fn a_completed_task_without_artifacts_answers_with_its_status_message() {
    let env = answer(task("TASK_STATE_COMPLETED", Some("Rome"), json!(null)));
    assert_eq!((env.intent, env.content.to_text()), (Some(Intent::Response), "Rome".to_owned()));
}

#[test]
fn a_message_answer_is_a_response() {
    let env = answer(json!({"message": {"messageId": "x", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}));
    assert_eq!((env.intent, env.content.to_text()), (Some(Intent::Response), "hi".to_owned()));
}

#[test]
fn failed_rejected_and_canceled_tasks_cannot_answer_with_the_agents_reason() {
    for state in ["TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"] {
        let env = answer(task(state, Some("no such city"), json!(null)));
        assert_eq!(env.intent, Some(Intent::CannotAnswer), "{state}");
        assert_eq!(env.content.to_text(), "no such city", "{state}");
    }
    let env = answer(task("TASK_STATE_FAILED", None, json!(null)));
    assert_eq!(env.content.to_text(), "the A2A task ended TASK_STATE_FAILED");
}

#[test]
fn a_task_that_wants_input_or_authorization_cannot_answer_and_says_so() {
    let env = answer(task("TASK_STATE_INPUT_REQUIRED", Some("which year?"), json!(null)));
    assert_eq!(env.intent, Some(Intent::CannotAnswer));
    assert_eq!(env.content.to_text(), "the A2A agent needs more input: which year?");
    let env = answer(task("TASK_STATE_AUTH_REQUIRED", Some("log in first"), json!(null)));
    assert_eq!(env.content.to_text(), "the A2A agent requires authorization: log in first");
}

#[test]
fn an_unfinished_task_or_garbage_is_refused_with_why() {
    let working = task("TASK_STATE_WORKING", None, json!(null)).to_string();
    let e = to_envelope(working.as_bytes(), "T").unwrap_err().to_string();
    assert!(e.contains("not finished") && e.contains("TASK_STATE_WORKING"), "{e}");
    let e = to_envelope(b"<html>502</html>", "T").unwrap_err().to_string();
    assert!(e.contains("SendMessageResponse"), "{e}");
}
