use super::*;
use crate::config::mcp::McpConfig;
use crate::config::{AgentConfig, BrokerConfig};
use crate::envelope::codecs::Framework;

fn config(tools: &[&str]) -> Config {
    let mut config = Config::new(BrokerConfig::new("stomp://127.0.0.1:61613"));
    config.wiseagents.agents = vec!["Assistant".into(), "WeatherWise".into()];
    config.agents = vec![AgentConfig::new("WeatherCiv", Framework::Civitas)];
    config.mcp = Some(McpConfig::new(tools.iter().map(|t| t.to_string()).collect()));
    config
}

fn answer(intent: Option<Intent>, text: &str) -> TaskAnswer {
    TaskAnswer { task: "mcp-1".into(), intent, text: text.into(), sender: None }
}

#[test]
fn the_tools_are_the_names_and_the_known_agents_a_glob_matches() {
    let registered = ["WeatherRedis".to_owned(), "Other".to_owned(), "Weather Bad".to_owned()];
    assert_eq!(
        names(&config(&["Assistant", "Weather*"]), &registered),
        ["Assistant", "WeatherCiv", "WeatherRedis", "WeatherWise"],
        "native, proxied and registered agents; a name MCP cannot carry is left out"
    );
    assert_eq!(names(&config(&["*"]), &[]), ["Assistant", "WeatherCiv", "WeatherWise"]);
    assert_eq!(names(&Config::new(BrokerConfig::new("stomp://h:1")), &registered), Vec::<String>::new());
}

#[test]
fn a_tool_name_is_what_mcp_can_carry() {
    assert!(is_tool_name("Weather_Agent-2.v1"));
    assert!(
        !is_tool_name("") && !is_tool_name("a b") && !is_tool_name("a/b") && !is_tool_name(&"a".repeat(129))
    );
}

#[test]
fn a_tool_takes_text_and_an_optional_context() {
    let tool = tool("Assistant", "Answers".into());
    assert_eq!((tool.name.as_ref(), tool.description.as_deref()), ("Assistant", Some("Answers")));
    assert_eq!(tool.input_schema["required"], serde_json::json!(["text"]));
    let args = |v: serde_json::Value| v.as_object().cloned();
    let asked = question(args(serde_json::json!({"text": "Rome?", "context": "Trips"})).as_ref());
    assert_eq!(asked, Ok(Question { text: "Rome?".into(), context: "Trips".into() }));
    let asked = question(args(serde_json::json!({"text": "Rome?"})).as_ref());
    assert_eq!(asked, Ok(Question { text: "Rome?".into(), context: String::new() }));
}

#[test]
fn bad_arguments_say_what_is_wrong() {
    let args = |v: serde_json::Value| v.as_object().cloned();
    for (arguments, says) in [
        (None, "text is required"),
        (args(serde_json::json!({"text": 3})), "text must be a string"),
        (args(serde_json::json!({"text": ""})), "text is empty"),
        (args(serde_json::json!({"text": "a", "context": 1})), "context must be a string"),
        (args(serde_json::json!({"text": "a", "city": "Rome"})), "unknown argument \"city\""),
    ] {
        let why = question(arguments.as_ref()).unwrap_err();
        assert!(why.contains(says), "{why} says {says}");
    }
}

#[test]
fn an_ack_is_progress_cannot_answer_a_tool_error_and_an_answer_the_result() {
    assert_eq!(step("A", answer(Some(Intent::Ack), "on it")), Step::Progress("on it".into()));
    let Step::Done(failed, false) = step("A", answer(Some(Intent::CannotAnswer), "")) else {
        panic!("a failure")
    };
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(failed.content[0].as_text().unwrap().text, "A cannot answer");
    let Step::Done(result, true) = step("A", answer(Some(Intent::Response), "sunny")) else {
        panic!("an answer")
    };
    assert_eq!((result.is_error, result.structured_content), (Some(false), None));
    assert_eq!(result.content[0].as_text().unwrap().text, "sunny");
}

#[test]
fn an_answer_that_is_a_json_object_is_structured_content_too() {
    let text = r#"{"city": "Rome", "sky": "clear"}"#;
    let Step::Done(result, true) = step("A", answer(None, text)) else { panic!("an answer") };
    assert_eq!(result.structured_content, Some(serde_json::json!({"city": "Rome", "sky": "clear"})));
    assert_eq!(result.content[0].as_text().unwrap().text, text, "the agent's text as it came");
    let Step::Done(list, true) = step("A", answer(None, "[1, 2]")) else { panic!("an answer") };
    assert_eq!(list.structured_content, None, "only an object is structured content");
}
