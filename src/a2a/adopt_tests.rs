use super::*;

fn running() -> Task {
    Task {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: None },
        artifacts: None,
        history: None,
        metadata: None,
    }
}

fn answer(intent: Option<Intent>, text: &str) -> TaskAnswer {
    TaskAnswer { task: "t".into(), intent, text: text.into(), sender: None }
}

#[test]
fn an_answer_completes_the_task_with_its_text_as_the_artifact() {
    let task = answered(running(), &answer(Some(Intent::Response), "42")).unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(task.status.timestamp.is_some(), "a stored status carries its time");
    let artifacts = task.artifacts.unwrap();
    assert_eq!((artifacts.len(), artifacts[0].name.as_deref()), (1, Some("answer")));
    assert_eq!(serde_json::to_value(&artifacts[0].parts).unwrap()[0]["text"], "42");
}

#[test]
fn an_ack_keeps_it_working_and_cannot_answer_fails_it_with_the_words() {
    let working = answered(running(), &answer(Some(Intent::Ack), "on it")).unwrap();
    assert_eq!(working.status.state, TaskState::Working);
    assert!(working.artifacts.is_none());
    let failed = answered(working, &answer(Some(Intent::CannotAnswer), "")).unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    let said = serde_json::to_value(failed.status.message.unwrap().parts).unwrap();
    assert_eq!(said[0]["text"], "the agent cannot answer");
}

#[test]
fn a_task_that_ended_takes_no_answer() {
    let done = answered(running(), &answer(None, "x")).unwrap();
    assert!(answered(done, &answer(None, "again")).is_none());
}
