use super::*;
use crate::envelope::Intent;
use serde_json::Value;

fn tapped(direction: Direction, agent: &str) -> Original {
    let kind = if direction == Direction::Request { "request" } else { "response" };
    Original { queue: format!("/queue/{kind}/{agent}"), direction, agent: agent.into() }
}

fn body(sender: &str, rrt: Option<&str>, tool: Option<&str>, intent: Intent) -> Vec<u8> {
    WiseMessage {
        message: "weather in Paris?".into(),
        message_type: Some(intent),
        sender: Some(sender.into()),
        tool_id: tool.map(Into::into),
        route_response_to: rrt.map(Into::into),
        context_name: Some("Trips".into()),
        extra: vec![],
    }
    .to_yaml()
    .into_bytes()
}

fn json_of(frame: &Frame) -> Value {
    serde_json::from_slice(&frame.body).unwrap()
}

#[test]
fn every_format_carries_the_routing_fields_and_the_conversation() {
    let mut t = Translator::new(Codecs::default(), &MirrorTopics::default(), 100);
    let call = body("Assistant", Some("User"), Some("call_7"), Intent::Query);
    let copies = t.copies(&tapped(Direction::Request, "Weather"), &call).unwrap();
    assert!(copies.failed.is_empty(), "{:?}", copies.failed);
    let destinations: Vec<&str> = copies.frames.iter().filter_map(|(_, f)| f.header("destination")).collect();
    assert_eq!(
        destinations,
        [
            "/topic/mirror.civitas.request.Weather",
            "/topic/mirror.vox.request.Weather",
            "/topic/mirror.penguiflow.request.Weather",
            "/topic/mirror.canonical.request.Weather"
        ]
    );
    let conversation = copies.frames[0].1.header(CONVERSATION).unwrap().to_owned();
    assert!(copies.frames.iter().all(|(_, f)| f.header(CONVERSATION) == Some(conversation.as_str())));
    assert!(copies.frames.iter().all(|(_, f)| f.header("reply-to").is_none()));
    let [civitas, vox, penguiflow, canonical] = [0, 1, 2, 3].map(|i| json_of(&copies.frames[i].1));
    for fields in [&civitas["payload"], &vox["details"], &penguiflow["meta"], &canonical] {
        assert_eq!(fields["tool_id"], "call_7", "{fields}");
        assert_eq!(fields["route_response_to"], "User", "{fields}");
        assert_eq!(fields["context_name"], "Trips", "{fields}");
        assert_eq!(fields["conversation"], conversation.as_str(), "{fields}");
    }
    assert_eq!(civitas["correlation_id"], Value::Null, "a copy is never an ask");
    assert_eq!(civitas["trace_id"], conversation.as_str());
    assert_eq!(penguiflow["trace_id"], conversation.as_str());
}

#[test]
fn the_answer_to_a_tool_call_is_in_the_same_conversation() {
    let mut t = Translator::new(Codecs::default(), &MirrorTopics::default(), 100);
    let key = |c: &Copies| c.frames[0].1.header(CONVERSATION).unwrap().to_owned();
    let ask =
        t.copies(&tapped(Direction::Request, "Assistant"), &body("User", None, None, Intent::Query)).unwrap();
    let answer = body("Assistant", Some("User"), None, Intent::Response);
    let final_answer = t.copies(&tapped(Direction::Response, "User"), &answer).unwrap();
    assert_eq!(key(&ask), key(&final_answer));
}

#[test]
fn a_body_that_is_not_wise_agents_yaml_is_an_error_and_empty_patterns_publish_nothing() {
    let topics = MirrorTopics { vox: String::new(), penguiflow: String::new(), ..MirrorTopics::default() };
    let mut t = Translator::new(Codecs::default(), &topics, 100);
    assert!(t.copies(&tapped(Direction::Request, "A"), b"- not: [a message").is_err());
    let copies = t.copies(&tapped(Direction::Request, "A"), &body("B", None, None, Intent::Query)).unwrap();
    assert_eq!(copies.frames.len(), 2);
}
