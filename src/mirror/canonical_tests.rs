use super::*;
use crate::envelope::Intent;

#[test]
fn carries_routing_fields_and_leaves_absent_ones_out() {
    let env = Envelope {
        intent: Some(Intent::Response),
        direction: Direction::Response,
        sender: Some("Tool".into()),
        recipient: Some("Asker".into()),
        route_response_to: Some("Asker".into()),
        tool_id: Some("call_1".into()),
        context: Some("default".into()),
        content: Content::Text("sunny".into()),
        ..Envelope::default()
    };
    let v = to_json(&env, "abc", "/queue/response/Asker");
    assert_eq!(v["direction"], "response");
    assert_eq!(v["content"]["text"], "sunny");
    assert_eq!((v["tool_id"].as_str(), v["context_name"].as_str()), (Some("call_1"), Some("default")));
    assert_eq!(v["conversation"], "abc");
    assert!(v.get("correlation_id").is_none() && v.get("extra").is_none());
}
