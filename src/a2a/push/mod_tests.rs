//! The webhooks' workers against a receiver on a local port (`allow_private`), through the
//! store as the SDK's handler uses it.

use super::*;
use crate::a2a::store::{MAX_WEBHOOKS, Memory, Tasks, Webhooks};
use a2a::{AuthenticationInfo, TaskState, TaskStatus};
use a2a_server::{PushConfigStore, TaskStore};
use axum::http::{HeaderMap, StatusCode};
use tokio::sync::mpsc;

fn task(state: TaskState, text: &str) -> Task {
    let message = a2a::Message::new(a2a::Role::Agent, vec![a2a::Part::text(text)]);
    Task {
        id: "t1".into(),
        context_id: "c".into(),
        status: TaskStatus { state, message: Some(message), timestamp: None },
        artifacts: None,
        history: None,
        metadata: None,
    }
}

/// What the receiver was sent: the headers the test looks at, and the body as JSON.
type Received = (HeaderMap, serde_json::Value);

/// A webhook on a local port that answers each call with the next of `answers` (then 200),
/// and hands every call it takes or refuses to the test.
async fn receiver(answers: Vec<StatusCode>) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let answers = Arc::new(std::sync::Mutex::new(answers.into_iter()));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let (tx, answers) = (tx.clone(), answers.clone());
            async move {
                let _ = tx.send((headers, serde_json::from_slice(&body).unwrap_or_default()));
                answers.lock().unwrap().next().unwrap_or(StatusCode::OK)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

fn store(allow_private: bool) -> (Tasks, Arc<crate::telemetry::Metrics>) {
    let metrics = Arc::new(crate::telemetry::Metrics::default());
    let config = PushConfig {
        allow_private,
        backoff_ms: 10,
        max_backoff_ms: 40,
        attempts: 3,
        ..PushConfig::default()
    };
    let pusher = Pusher::new(&config, metrics.clone()).unwrap();
    (Tasks::Memory(Memory::new(10, Duration::from_secs(60), Some(Arc::new(pusher)))), metrics)
}

fn webhook(url: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        url: url.into(),
        id: Some("w1".into()),
        task_id: "t1".into(),
        token: Some("tok-1".into()),
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: Some("cred".into()),
        }),
        tenant: None,
    }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.expect("a call in time").expect("a call")
}

/// The metrics once they hold `line` (a worker counts a call after its answer, which the
/// receiver has sent by then), within a bound.
async fn rendered(metrics: &crate::telemetry::Metrics, line: &str) -> String {
    let counted = async {
        loop {
            let text = metrics.render();
            if text.contains(line) {
                return text;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), counted)
        .await
        .unwrap_or_else(|_| panic!("never counted: {line}"))
}

fn state_of(body: &serde_json::Value) -> String {
    body["task"]["status"]["state"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn each_new_state_is_posted_with_the_clients_token_and_credentials() {
    let (url, mut calls) = receiver(vec![]).await;
    let (tasks, metrics) = store(true);
    tasks.create(task(TaskState::Submitted, "")).await.unwrap();
    Webhooks(tasks.clone()).save(webhook(&url)).await.unwrap();
    tasks.update(task(TaskState::Working, "thinking")).await.unwrap();
    let (headers, body) = next(&mut calls).await;
    assert_eq!(headers["a2a-notification-token"], "tok-1");
    assert_eq!(headers["authorization"], "Bearer cred");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["task"]["id"], "t1", "{body}");
    assert_eq!(state_of(&body), "TASK_STATE_WORKING", "{body}");
    // A message added to the history only is not an update of the state.
    let mut same = task(TaskState::Working, "thinking");
    same.history = Some(vec![]);
    tasks.update(same).await.unwrap();
    tasks.update(task(TaskState::Completed, "done")).await.unwrap();
    let (_, body) = next(&mut calls).await;
    assert_eq!(state_of(&body), "TASK_STATE_COMPLETED", "{body}");
    rendered(&metrics, "bridge_a2a_push_total{result=\"delivered\"} 2").await;
}

#[tokio::test]
async fn a_webhook_that_fails_is_called_again_and_given_up_on_after_the_attempts() {
    let fails = vec![StatusCode::SERVICE_UNAVAILABLE; 5];
    let (url, mut calls) = receiver(fails).await;
    let (tasks, metrics) = store(true);
    tasks.create(task(TaskState::Submitted, "")).await.unwrap();
    Webhooks(tasks.clone()).save(webhook(&url)).await.unwrap();
    tasks.update(task(TaskState::Completed, "done")).await.unwrap();
    for _ in 0..3 {
        assert_eq!(state_of(&next(&mut calls).await.1), "TASK_STATE_COMPLETED");
    }
    // The third failure ends it: counted once as failed, twice retried, and no fourth call.
    let text = rendered(&metrics, "bridge_a2a_push_total{result=\"failed\"} 1").await;
    assert!(text.contains("bridge_a2a_push_retries_total 2"), "{text}");
    assert!(calls.try_recv().is_err(), "a call after the last attempt");
}

#[tokio::test]
async fn a_webhook_that_answers_after_a_failure_gets_the_newest_state_and_a_client_error_is_final() {
    let (url, mut calls) =
        receiver(vec![StatusCode::BAD_GATEWAY, StatusCode::OK, StatusCode::FORBIDDEN]).await;
    let (tasks, metrics) = store(true);
    tasks.create(task(TaskState::Submitted, "")).await.unwrap();
    Webhooks(tasks.clone()).save(webhook(&url)).await.unwrap();
    tasks.update(task(TaskState::Working, "a")).await.unwrap();
    assert_eq!(state_of(&next(&mut calls).await.1), "TASK_STATE_WORKING");
    assert_eq!(state_of(&next(&mut calls).await.1), "TASK_STATE_WORKING", "called again after the 502");
    tasks.update(task(TaskState::Failed, "b")).await.unwrap();
    assert_eq!(state_of(&next(&mut calls).await.1), "TASK_STATE_FAILED");
    // The 403 is final: counted as failed, after one call made again (the one after the 502).
    let text = rendered(&metrics, "bridge_a2a_push_total{result=\"failed\"} 1").await;
    assert!(text.contains("bridge_a2a_push_retries_total 1"), "{text}");
}

#[tokio::test]
async fn webhooks_are_set_read_and_deleted_within_their_bounds() {
    let (tasks, _) = store(false);
    let hooks = Webhooks(tasks.clone());
    let public = webhook("https://hooks.example.com/a2a");
    let unknown = hooks.save(public.clone()).await.unwrap_err();
    assert_eq!(unknown.code, a2a::error_code::TASK_NOT_FOUND, "{unknown:?}");
    tasks.create(task(TaskState::Submitted, "")).await.unwrap();
    let private = hooks.save(webhook("http://127.0.0.1:9/hook")).await.unwrap_err();
    assert_eq!(private.code, a2a::error_code::INVALID_PARAMS, "{private:?}");
    assert!(private.message.contains("a2a.push.allow_private"), "{private:?}");

    assert_eq!(hooks.save(public.clone()).await.unwrap(), public);
    let unnamed = hooks.save(TaskPushNotificationConfig { id: None, ..public.clone() }).await.unwrap();
    assert!(unnamed.id.is_some(), "an id is given to a webhook without one");
    assert_eq!(hooks.get("t1", "w1").await.unwrap(), public);
    assert_eq!(tasks.webhooks("t1").await.unwrap().len(), 2);
    assert!(hooks.list("t1").await.unwrap().is_empty(), "the SDK's sender is listed none");
    for i in 2..MAX_WEBHOOKS {
        hooks.save(TaskPushNotificationConfig { id: Some(format!("n{i}")), ..public.clone() }).await.unwrap();
    }
    let over = hooks.save(TaskPushNotificationConfig { id: Some("over".into()), ..public.clone() }).await;
    assert!(over.unwrap_err().message.contains("at most"), "more than {MAX_WEBHOOKS}");
    // Set again under its id, a webhook is replaced, not added.
    hooks.save(TaskPushNotificationConfig { token: Some("new".into()), ..public.clone() }).await.unwrap();
    assert_eq!(hooks.get("t1", "w1").await.unwrap().token.as_deref(), Some("new"));

    hooks.delete("t1", "w1").await.unwrap();
    hooks.delete("t1", "w1").await.unwrap();
    assert_eq!(hooks.get("t1", "w1").await.unwrap_err().code, a2a::error_code::TASK_NOT_FOUND);
    assert_eq!(tasks.webhooks("t1").await.unwrap().len(), MAX_WEBHOOKS - 1);
}
