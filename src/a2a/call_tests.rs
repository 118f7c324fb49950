use super::*;
use crate::a2a::error::A2aFailure;
use crate::envelope::Intent;
use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU32, Ordering};

/// An A2A agent on a local port: its card names `/rpc`, which fails with HTTP 500 `failures`
/// times, then completes every task with "done"; the number of POSTs it took is counted.
async fn agent(failures: u32) -> (String, Arc<AtomicU32>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = json!({
        "name": "Flaky", "description": "fails first", "version": "1.0.0",
        "supportedInterfaces": [{"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s1", "name": "retry", "description": "answers on the second try", "tags": []}]
    });
    let posts = Arc::new(AtomicU32::new(0));
    let seen = posts.clone();
    let app = Router::new()
        .route("/.well-known/agent-card.json", get(move || async move { axum::Json(card) }))
        .route(
            "/rpc",
            post(move |axum::Json(request): axum::Json<Value>| async move {
                if seen.fetch_add(1, Ordering::SeqCst) < failures {
                    return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!("boom")));
                }
                let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
                    "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}]});
                (
                    StatusCode::OK,
                    axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}})),
                )
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, posts)
}

fn stage_for(url: &str, max_attempts: u32) -> (Calls, Arc<Metrics>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    let mut config = Config::load(&path).unwrap();
    let mut flaky = AgentConfig::new("Flaky", Framework::A2a);
    flaky.url = Some(url.to_owned());
    flaky.max_attempts = Some(max_attempts);
    config.agents.push(flaky);
    let metrics = Arc::new(Metrics::default());
    let calls = Calls::spawn(&config, metrics.clone(), CancellationToken::new()).unwrap().unwrap();
    (calls, metrics)
}

fn request(text: &str) -> Bytes {
    let env = crate::envelope::Envelope {
        content: crate::envelope::Content::Text(text.into()),
        ..Default::default()
    };
    crate::envelope::a2a::encode(&env).unwrap().into()
}

async fn call(calls: &mut Calls) -> Called {
    let deadline = Some(tokio::time::Instant::now() + Duration::from_secs(20));
    calls.call(Call {
        id: 7,
        agent: "Flaky".into(),
        request: request("hi"),
        message_id: "m-1".into(),
        deadline,
        traceparent: None,
    });
    tokio::time::timeout(Duration::from_secs(30), calls.next()).await.unwrap().unwrap()
}

fn rendered(metrics: &Metrics) -> String {
    metrics.render()
}

#[tokio::test]
async fn a_500_is_tried_again_and_the_answer_of_the_next_attempt_comes_back() {
    let (base, posts) = agent(1).await;
    let (mut calls, metrics) = stage_for(&base, 3);
    let called = call(&mut calls).await;
    assert_eq!((called.id, called.failure.map(|f| f.to_string())), (7, None));
    let answer = crate::envelope::a2a::to_envelope(&called.answer, "Flaky").unwrap();
    assert_eq!((answer.intent, answer.content.to_text()), (Some(Intent::Response), "done".to_owned()));
    assert_eq!(posts.load(Ordering::SeqCst), 2);
    let m = rendered(&metrics);
    assert!(m.contains("bridge_a2a_call_retries_total{agent=\"Flaky\"} 1\n"), "{m}");
    assert!(m.contains("bridge_a2a_calls_total{agent=\"Flaky\",result=\"answered\"} 1\n"), "{m}");
    assert!(m.contains("bridge_a2a_calls_in_flight{agent=\"Flaky\"} 0\n"), "{m}");
}

#[tokio::test]
async fn after_max_attempts_the_call_fails_with_why_and_the_asker_is_answered_cannot_answer() {
    let (base, posts) = agent(u32::MAX).await;
    let (mut calls, metrics) = stage_for(&base, 2);
    let called = call(&mut calls).await;
    let why = called.failure.expect("no answer came").to_string();
    assert!(why.contains("Flaky did not answer (2 attempts)"), "{why}");
    assert_eq!(posts.load(Ordering::SeqCst), 2, "max_attempts bounds the calls");
    let answer = crate::envelope::a2a::to_envelope(&called.answer, "Flaky").unwrap();
    assert_eq!((answer.intent, answer.content.to_text()), (Some(Intent::CannotAnswer), why));
    let m = rendered(&metrics);
    assert!(m.contains("bridge_a2a_calls_total{agent=\"Flaky\",result=\"failed\"} 1\n"), "{m}");
}

#[tokio::test]
async fn an_agent_nobody_listens_for_fails_after_its_attempts() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (mut calls, _) = stage_for(&format!("http://127.0.0.1:{port}"), 2);
    let why = call(&mut calls).await.failure.expect("nobody answers").to_string();
    assert!(why.contains("Flaky did not answer (2 attempts)") && why.contains("agent card"), "{why}");
}

#[test]
fn only_internal_errors_are_tried_again() {
    assert!(again(&A2AError::internal("HTTP request failed: connection refused")));
    assert!(!again(&A2AError::new(a2a::error_code::INVALID_PARAMS, "bad params")));
    assert!(!again(&A2AError::new(a2a::error_code::CONTENT_TYPE_NOT_SUPPORTED, "no text")));
}

#[tokio::test]
async fn the_registry_describes_an_agent_by_its_cards_description_and_skills() {
    let (base, _) = agent(0).await;
    let (calls, _) = stage_for(&base, 1);
    let described = calls.descriptions().await;
    assert_eq!(
        described.get("Flaky").map(String::as_str),
        Some("fails first Skills: retry (answers on the second try).")
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (away, _) = stage_for(&format!("http://127.0.0.1:{port}"), 1);
    assert!(away.descriptions().await.is_empty(), "no card, no description: the default stands");
}

#[tokio::test]
async fn a_reload_has_every_card_read_again_at_the_next_call() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let reads = Arc::new(AtomicU32::new(0));
    let (counted, url) = (reads.clone(), base.clone());
    let app = Router::new().route(
        "/.well-known/agent-card.json",
        get(move || async move {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            axum::Json(json!({"name": "Flaky", "description": format!("card {n}"), "version": "1",
                "supportedInterfaces": [{"url": format!("{url}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []}))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (calls, _) = stage_for(&base, 1);
    assert_eq!(calls.descriptions().await["Flaky"], "card 0");
    assert_eq!(calls.descriptions().await["Flaky"], "card 0", "kept, not read again");
    calls.forget_cards();
    assert_eq!(calls.descriptions().await["Flaky"], "card 1", "read again after a reload");
    assert_eq!(reads.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_call_that_panics_is_a_failed_call_that_answers_and_leaves_nothing_in_flight() {
    let metrics = Metrics::default();
    metrics.a2a_calls.agents(["Buggy"]);
    let called = unless_panicked(9, "Buggy", &metrics, async {
        let _in_flight = metrics.a2a_calls.in_flight("Buggy");
        assert!(rendered(&metrics).contains("bridge_a2a_calls_in_flight{agent=\"Buggy\"} 1\n"));
        panic!("a bug inside the client");
    })
    .await;
    assert_eq!(called.id, 9);
    assert!(matches!(called.failure, Some(A2aFailure::Panicked)), "{:?}", called.failure);
    let answer = crate::envelope::a2a::to_envelope(&called.answer, "Buggy").unwrap();
    assert_eq!(answer.intent, Some(Intent::CannotAnswer), "the asker is answered");
    let m = rendered(&metrics);
    assert!(m.contains("bridge_a2a_calls_in_flight{agent=\"Buggy\"} 0\n"), "{m}");
    assert!(m.contains("bridge_a2a_calls_total{agent=\"Buggy\",result=\"failed\"} 1\n"), "{m}");
}
