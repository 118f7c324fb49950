use super::*;

#[test]
fn a_token_round_trips_and_fills_a_bare_reply() {
    let request = Envelope {
        sender: Some("User".into()),
        context: Some("Weather".into()),
        tool_id: Some("call_1".into()),
        route_response_to: Some("Boss".into()),
        ..Default::default()
    };
    let token = ReplyRoute::of_request(&request, "r-1").to_token();
    assert!(token.starts_with("sab1:{"));
    let mut reply = Envelope { correlation_id: Some(token), ..Default::default() };
    apply_token(&mut reply);
    assert_eq!(reply.recipient.as_deref(), Some("User"));
    assert_eq!(reply.context.as_deref(), Some("Weather"));
    assert_eq!(reply.tool_id.as_deref(), Some("call_1"));
    assert_eq!(reply.route_response_to.as_deref(), Some("Boss"));
    assert_eq!(reply.in_reply_to.as_deref(), Some("r-1"));
}

#[test]
fn what_the_reply_says_itself_wins_and_foreign_ids_are_ignored() {
    let route = ReplyRoute { context: Some("old".into()), ..Default::default() };
    let mut reply = Envelope {
        context: Some("new".into()),
        correlation_id: Some(route.to_token()),
        ..Default::default()
    };
    apply_token(&mut reply);
    assert_eq!(reply.context.as_deref(), Some("new"));
    assert_eq!(ReplyRoute::from_token("0193a1b2-not-a-token"), None);
}
