use super::request::{question, request_frame};
use super::*;
use crate::envelope::correlation::ReplyRoute;
use crate::envelope::wiseagents::WiseMessage;
use a2a::{Part, Role};

fn hub() -> Arc<TaskRelay> {
    let mut config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    config.a2a = Some(toml::from_str("serve = [\"Echo\", \"Tool*\"]").unwrap());
    config.wiseagents.contexts = vec!["Trips.*".into()];
    TaskRelay::of(&config, Arc::new(Metrics::default())).unwrap()
}

fn answer(task: &str) -> TaskAnswer {
    TaskAnswer { task: task.into(), intent: Some(Intent::Response), text: "a".into(), sender: None }
}

#[test]
fn served_agents_are_the_names_and_the_names_a_glob_matches() {
    let hub = hub();
    assert!(hub.serves("Echo") && hub.serves("ToolBox"));
    assert!(!hub.serves("Other") && !hub.serves("Tool/../x"));
}

#[tokio::test]
async fn an_answer_reaches_its_waiting_task_and_one_for_no_task_is_counted_late() {
    let hub = hub();
    let (waiting, mut answers) = hub.wait("t1");
    hub.answer(answer("t1"));
    assert_eq!(answers.recv().await, Some(answer("t1")));
    hub.answer(answer("t2"));
    drop(waiting);
    hub.answer(answer("t1"));
    let text = hub.metrics.render();
    assert!(text.contains("bridge_a2a_late_answers_total 2"), "{text}");
    assert!(text.contains("bridge_a2a_tasks_waiting 0"), "{text}");
}

#[tokio::test]
async fn a_canceled_task_stops_waiting_and_its_answer_is_late() {
    let hub = hub();
    let (_waiting, mut answers) = hub.wait("t1");
    hub.cancel("t1");
    assert_eq!(answers.recv().await, None, "the task's wait ends");
    hub.answer(answer("t1"));
    assert!(hub.metrics.render().contains("bridge_a2a_late_answers_total 1"));
}

#[test]
fn text_and_data_parts_are_asked_and_a_file_is_refused() {
    let mut m = a2a::Message::new(
        Role::User,
        vec![Part::text("weather?"), Part::data(serde_json::json!({"city": "Rome"}))],
    );
    assert_eq!(question(&m).unwrap(), "weather?\n{\"city\":\"Rome\"}");
    m.parts.push(Part::url("https://example.com/a.pdf"));
    assert!(question(&m).unwrap_err().to_string().contains("file part"));
    assert!(question(&a2a::Message::new(Role::User, vec![])).is_err());
}

#[test]
fn the_request_asks_as_the_reply_agent_with_the_tasks_token_in_tool_id() {
    let hub = hub();
    let frame = request_frame(&hub.asking, "Echo", "t1", "Trips.rome", "hi".into());
    assert_eq!(frame.header("destination"), Some("/queue/request/Echo"));
    let m = WiseMessage::parse(&frame.body).unwrap();
    assert_eq!((m.sender.as_deref(), m.route_response_to.as_deref()), (Some("_bridge"), Some("_bridge")));
    assert_eq!((m.message.as_str(), m.message_type), ("hi", Some(Intent::Query)));
    assert_eq!(m.context_name.as_deref(), Some("Trips.rome"), "a context Wise Agents knows");
    let token = ReplyRoute::from_token(m.tool_id.as_deref().unwrap()).unwrap();
    assert_eq!(token.task.as_deref(), Some("t1"));
}

#[tokio::test]
async fn without_the_registry_an_a2a_context_wise_agents_does_not_know_asks_in_the_default() {
    let hub = hub();
    assert_eq!(hub.context_for("Trips.rome").await, "Trips.rome", "a context Wise Agents knows");
    assert_eq!(hub.context_for("01a2-uuid").await, "default", "an A2A context Wise Agents does not know");
    assert_eq!(
        hub.description("Echo").await,
        hub.config.description("Echo"),
        "the configured or default one"
    );
}
