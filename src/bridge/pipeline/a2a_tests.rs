//! A proxied A2A agent through the pipeline: the request it is sent (a SendMessageRequest,
//! the token on the frame), and its answer, handed over from the call stage, routed back as
//! every proxied agent's answer is.

use super::harness::*;
use super::*;
use crate::config::{AgentConfig, Config};
use crate::routing::{A2A_AGENT_HEADER, A2A_ANSWERS};
use serde_json::{Value, json};

fn with_a2a_agent(c: &mut Config) {
    let mut agent = AgentConfig::new("Translator", Framework::A2a);
    agent.url = Some("http://127.0.0.1:9/a2a/Translator".into());
    c.agents.push(agent);
}

/// The call stage's hand-over: `response` (a SendMessageResponse) for the request `asked`.
fn answer(asked: &Outgoing, response: Value) -> Message {
    let mut m = msg(A2A_ANSWERS, response.to_string());
    m.frame = m.frame.with(A2A_AGENT_HEADER, "Translator");
    if let Some(token) = asked.frame.header("correlation-id") {
        m.frame = m.frame.with("correlation-id", token);
    }
    m
}

fn completed(text: &str) -> Value {
    json!({"task": {"id": "t1", "contextId": "default", "status": {"state": "TASK_STATE_COMPLETED"},
                    "artifacts": [{"artifactId": "a1", "parts": [{"text": text}]}]}})
}

#[test]
fn a_wise_agents_request_to_an_a2a_agent_is_a_send_message_request_for_the_call_stage() {
    let mut p = pipeline_with(with_a2a_agent);
    let asked = sent(&mut p, &wa_ask("Translator", Some("tool-7"), "Books"));
    assert_eq!(asked.frame.header("destination"), Some("a2a-call:Translator"));
    assert!(
        asked.frame.header("correlation-id").is_some_and(|t| !t.is_empty()),
        "the token rides on the frame"
    );
    let request = json_of(&asked);
    assert_eq!(request["message"]["role"], "ROLE_USER");
    assert_eq!(request["message"]["parts"], json!([{"text": "do it"}]));
    assert_eq!(request["message"]["contextId"], "Books");
    assert_eq!(p.pending_asks(), 1);
}

#[test]
fn the_agents_answer_goes_back_to_the_asker_with_its_tool_id_and_context() {
    let mut p = pipeline_with(with_a2a_agent);
    let asked = sent(&mut p, &wa_ask("Translator", Some("tool-7"), "default"));
    let out = sent(&mut p, &answer(&asked, completed("Roma")));
    assert!(out.correlated);
    assert_eq!(out.route, "a2a->wiseagents");
    assert_eq!(out.frame.header("destination"), Some("/queue/response/Assistant"));
    let wa = wa_of(&out);
    assert_eq!(wa.message, "Roma");
    assert_eq!(wa.message_type, Some(crate::envelope::Intent::Response));
    assert_eq!(wa.sender.as_deref(), Some("Translator"));
    assert_eq!(wa.tool_id.as_deref(), Some("tool-7"));
    assert_eq!(wa.context_name.as_deref(), Some("default"));
    assert_eq!(p.pending_asks(), 0);
}

#[test]
fn a_failed_task_is_cannot_answer_to_the_asker() {
    let mut p = pipeline_with(with_a2a_agent);
    let asked = sent(&mut p, &wa_ask("Translator", None, "default"));
    let failed = json!({"task": {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_FAILED",
        "message": {"messageId": "s", "role": "ROLE_AGENT", "parts": [{"text": "no dictionary"}]}}}});
    let wa = wa_of(&sent(&mut p, &answer(&asked, failed)));
    assert_eq!(wa.message_type, Some(crate::envelope::Intent::CannotAnswer));
    assert_eq!(wa.message, "no dictionary");
}

#[tokio::test(start_paused = true)]
async fn an_answer_after_the_reply_timeout_is_late_and_sends_nothing() {
    let mut p = pipeline_with(|c| {
        with_a2a_agent(c);
        c.agents.last_mut().unwrap().reply_timeout_ms = Some(1000);
    });
    let asked = sent(&mut p, &wa_ask("Translator", None, "default"));
    assert!(p.expire_asks().is_empty());
    tokio::time::advance(std::time::Duration::from_secs(2)).await;
    let timed_out = p.expire_asks();
    assert_eq!(wa_of(&timed_out[0]).message_type, Some(crate::envelope::Intent::CannotAnswer));
    match p.process(&answer(&asked, completed("too late"))).unwrap() {
        Processed::Absorbed { why: Absorbed::LateReply { route, .. }, .. } => assert_eq!(route, "a2a->late"),
        other => panic!("not late: {other:?}"),
    }
}

#[test]
fn an_answer_the_bridge_did_not_ask_for_is_not_taken_from_a2a_answers_without_a2a_agents() {
    let mut p = pipeline();
    let e = p.process(&msg(A2A_ANSWERS, completed("x").to_string())).unwrap_err();
    assert_eq!(e.kind(), "unknown_source");
}

#[test]
fn an_a2a_agents_response_queue_is_not_consumed() {
    let p = pipeline_with(with_a2a_agent);
    let subscriptions = p.router().subscriptions();
    assert!(subscriptions.contains(&"/queue/request/Translator".to_owned()), "{subscriptions:?}");
    assert!(!subscriptions.contains(&"/queue/response/Translator".to_owned()), "{subscriptions:?}");
}

#[test]
fn the_request_carries_the_asks_reply_deadline_for_the_call() {
    let mut p = pipeline_with(|c| {
        with_a2a_agent(c);
        c.agents.last_mut().unwrap().reply_timeout_ms = Some(5000);
    });
    let asked = sent(&mut p, &wa_ask("Translator", None, "default"));
    let left = asked.reply_deadline.expect("a deadline").saturating_duration_since(std::time::Instant::now());
    assert!(
        left > std::time::Duration::from_secs(4) && left <= std::time::Duration::from_secs(5),
        "{left:?}"
    );
}
