use super::*;
use crate::envelope::correlation::ReplyRoute;
use crate::envelope::wiseagents::WiseMessage;

fn relay() -> Arc<Relay> {
    let mut config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    config.mcp = Some(crate::config::mcp::McpConfig::new(vec!["Echo".into()]));
    config.wiseagents.contexts = vec!["Trips.*".into()];
    Relay::of(&config, Arc::new(Metrics::default())).unwrap()
}

fn answer(task: &str) -> TaskAnswer {
    TaskAnswer { task: task.into(), intent: Some(Intent::Response), text: "a".into(), sender: None }
}

#[test]
fn there_is_no_relay_without_a2a_or_mcp() {
    let config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    assert!(Relay::of(&config, Arc::new(Metrics::default())).is_none());
}

#[tokio::test]
async fn an_answer_reaches_its_waiting_request_and_one_for_none_is_counted_late_by_its_caller() {
    let relay = relay();
    relay.metrics.a2a.served.enable();
    relay.metrics.mcp.served.enable();
    let (waiting, mut answers) = relay.wait("t1", Caller::A2a);
    let (_call, mut called) = relay.wait("mcp-1", Caller::Mcp);
    assert!(relay.metrics.render().contains("bridge_mcp_calls_waiting 1"));
    relay.answer(answer("t1"));
    relay.answer(answer("mcp-1"));
    assert_eq!(answers.recv().await, Some(answer("t1")));
    assert_eq!(called.recv().await, Some(answer("mcp-1")));
    relay.answer(answer("t2"));
    drop(waiting);
    relay.answer(answer("t1"));
    relay.answer(answer("mcp-2"));
    let text = relay.metrics.render();
    assert!(text.contains("bridge_a2a_late_answers_total 2"), "{text}");
    assert!(text.contains("bridge_a2a_tasks_waiting 0"), "{text}");
    assert!(text.contains("bridge_mcp_late_answers_total 1"), "{text}");
}

#[tokio::test]
async fn a_canceled_request_stops_waiting_and_its_answer_is_late() {
    let relay = relay();
    relay.metrics.a2a.served.enable();
    let (_waiting, mut answers) = relay.wait("t1", Caller::A2a);
    relay.cancel("t1");
    assert_eq!(answers.recv().await, None, "the request's wait ends");
    relay.answer(answer("t1"));
    assert!(relay.metrics.render().contains("bridge_a2a_late_answers_total 1"));
}

#[test]
fn the_request_asks_as_the_reply_agent_with_the_token_in_tool_id() {
    let relay = relay();
    let frame = relay.asking.request_frame("Echo", "t1", "Trips.rome", "hi".into());
    assert_eq!(frame.header("destination"), Some("/queue/request/Echo"));
    let m = WiseMessage::parse(&frame.body).unwrap();
    assert_eq!((m.sender.as_deref(), m.route_response_to.as_deref()), (Some("_bridge"), Some("_bridge")));
    assert_eq!((m.message.as_str(), m.message_type), ("hi", Some(Intent::Query)));
    assert_eq!(m.context_name.as_deref(), Some("Trips.rome"), "a context Wise Agents knows");
    let token = ReplyRoute::from_token(m.tool_id.as_deref().unwrap()).unwrap();
    assert_eq!(token.task.as_deref(), Some("t1"));
}

#[tokio::test]
async fn without_the_registry_a_context_wise_agents_does_not_know_asks_in_the_default() {
    let relay = relay();
    assert_eq!(relay.context_for("Trips.rome").await, "Trips.rome", "a context Wise Agents knows");
    assert_eq!(relay.context_for("01a2-uuid").await, "default", "one Wise Agents does not know");
    assert_eq!(relay.context_for("").await, "default", "none");
}

#[tokio::test]
async fn a_request_before_the_bridge_is_connected_is_refused_with_why() {
    let relay = relay();
    let frame = relay.asking.request_frame("Echo", "t1", "default", "hi".into());
    let error = relay.publish(frame).await.unwrap_err();
    assert!(error.to_string().contains("not connected"), "{error}");
}

#[test]
fn a_reload_is_followed() {
    let relay = relay();
    let mut config = (*relay.running()).clone();
    config.mcp = Some(crate::config::mcp::McpConfig::new(vec!["Echo".into(), "News".into()]));
    relay.follow(&config);
    assert_eq!(relay.running().mcp.as_ref().unwrap().tools, ["Echo", "News"]);
}

#[tokio::test(start_paused = true)]
async fn once_the_registry_did_not_answer_in_time_the_next_requests_do_not_wait_for_it() {
    use crate::telemetry::registry::RegistryAnswered;
    use tokio::time::Instant;
    // Connections to it are made (the kernel's backlog) and never answered: a paused Redis.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut config = (*relay().running()).clone();
    config.wiseagents.registry = Some(crate::config::registry::RegistryConfig { port, ..Default::default() });
    let relay = Relay::of(&config, Arc::new(Metrics::default())).unwrap();
    relay.attach_registry(WiseRegistry::of(&config, &HashMap::new()).map(Arc::new));

    let first = Instant::now();
    assert_eq!(relay.context_for("01a2-uuid").await, "default");
    assert!(first.elapsed() >= REGISTRY_WAIT, "the first request waits for it");
    assert!(relay.metrics.registry.is_down());
    let second = Instant::now();
    assert_eq!(relay.context_for("01b3-uuid").await, "default");
    assert_eq!(relay.registered_description("Echo").await, None);
    assert_eq!(second.elapsed(), Duration::ZERO, "the next ones do not");

    // Redis answers again (the keeper's or the stage's call): requests use the registry again.
    RegistryAnswered.emit(&relay.metrics.registry);
    assert!(relay.registry().is_some());
}
