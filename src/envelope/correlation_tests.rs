use super::*;

#[test]
fn a_token_round_trips_with_the_route_of_its_request() {
    let request = Envelope {
        sender: Some("User".into()),
        context: Some("Weather".into()),
        tool_id: Some("call_1".into()),
        route_response_to: Some("Boss".into()),
        ..Default::default()
    };
    let route = ReplyRoute::of_request(&request, "r-1");
    let token = route.to_token();
    assert!(token.starts_with("sab1:{"));
    let back = ReplyRoute::from_token(&token).unwrap();
    assert_eq!(back, route);
    assert_eq!(back.requester.as_deref(), Some("User"));
    assert_eq!(back.context.as_deref(), Some("Weather"));
    assert_eq!(back.tool_id.as_deref(), Some("call_1"));
    assert_eq!(back.route_response_to.as_deref(), Some("Boss"));
    assert_eq!(back.request_id.as_deref(), Some("r-1"));
}

#[test]
fn foreign_ids_are_not_tokens() {
    assert_eq!(ReplyRoute::from_token("0193a1b2-not-a-token"), None);
    assert_eq!(ReplyRoute::from_token("sab1:not json"), None);
}
