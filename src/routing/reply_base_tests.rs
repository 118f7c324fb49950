use super::*;

fn ask() -> Envelope {
    let mut extra = BTreeMap::new();
    extra.insert("penguiflow.meta.session".to_owned(), Value::from("s-9"));
    extra.insert("civitas.priority".to_owned(), Value::from(3));
    Envelope {
        id: Some("pf-1".into()),
        sender: Some("Planner".into()),
        reply_to: Some("_reply.Planner.7".into()),
        route_response_to: Some("Caller".into()),
        context: Some("Trips.é".into()),
        tool_id: Some("call_1".into()),
        correlation_id: Some(String::new()),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        span_id: Some("00f067aa0ba902b7".into()),
        tenant: Some("acme".into()),
        deadline: Some(4102444800.0),
        extra,
        ..Envelope::default()
    }
}

#[test]
fn every_field_an_answer_needs_is_kept_exactly_and_an_empty_one_is_not_lost() {
    let env = ReplyBase::of(&ask(), "Planner").into_envelope();
    assert_eq!(env.direction, Direction::Response);
    assert_eq!(env.recipient.as_deref(), Some("_reply.Planner.7"), "the reply address wins over the asker");
    assert_eq!(env.reply_via.as_deref(), Some("Planner"), "a reply address: the asker's inbox is remembered");
    assert_eq!(env.route_response_to.as_deref(), Some("Caller"));
    assert_eq!(env.context.as_deref(), Some("Trips.é"));
    assert_eq!(env.tool_id.as_deref(), Some("call_1"));
    assert_eq!(env.correlation_id.as_deref(), Some(""), "set but empty stays set");
    assert_eq!(env.in_reply_to.as_deref(), Some("pf-1"));
    assert_eq!(env.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_eq!(env.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!(env.tenant.as_deref(), Some("acme"));
    assert_eq!(env.deadline, Some(4102444800.0));
    assert_eq!(
        env.extra.keys().collect::<Vec<_>>(),
        ["penguiflow.meta.session"],
        "only PenguiFlow meta keys"
    );
    assert_eq!((env.intent, env.sender, env.span_id), (None, None, None));
}

#[test]
fn an_ask_with_nothing_but_an_asker_is_addressed_to_it() {
    let base = ReplyBase::of(&Envelope::default(), "Assistant");
    assert_eq!(base.recipient(), Some("Assistant"));
    assert_eq!(base.context(), None);
    let env = base.into_envelope();
    assert_eq!((env.tool_id, env.correlation_id, env.in_reply_to, env.trace_id), (None, None, None, None));
}

#[test]
fn the_base_wins_for_what_names_the_conversation_and_the_answer_keeps_its_own_content() {
    let mut answer = Envelope {
        recipient: Some("Someone".into()),
        tool_id: Some("forged".into()),
        context: Some("theirs".into()),
        parent_span_id: Some("answer-span".into()),
        content: crate::envelope::Content::Text("Rome".into()),
        intent: Some(Intent::Query),
        ..Envelope::default()
    };
    let mut bare = ask();
    bare.context = None;
    bare.span_id = None;
    ReplyBase::of(&bare, "Planner").apply_to(&mut answer);
    assert_eq!(answer.recipient.as_deref(), Some("_reply.Planner.7"));
    assert_eq!(answer.tool_id.as_deref(), Some("call_1"));
    assert_eq!(answer.context.as_deref(), Some("theirs"), "the base has none: the answer's own stays");
    assert_eq!(answer.parent_span_id.as_deref(), Some("answer-span"));
    assert_eq!(answer.content, crate::envelope::Content::Text("Rome".into()));
    assert_eq!(answer.intent, Some(Intent::Query), "the answer's own type");
}

#[test]
fn a_bridge_token_as_tool_id_is_not_handed_back() {
    let route = ReplyRoute { ask: Some("a-1".into()), ..ReplyRoute::default() };
    let mut env = ask();
    env.tool_id = Some(route.to_token());
    assert_eq!(ReplyBase::of(&env, "Planner").into_envelope().tool_id, None);
}

#[test]
fn a_reply_base_is_a_fraction_of_an_envelope() {
    assert!(std::mem::size_of::<ReplyBase>() <= 128, "{}", std::mem::size_of::<ReplyBase>());
    assert!(std::mem::size_of::<Envelope>() >= 4 * std::mem::size_of::<ReplyBase>());
}

#[test]
fn a_token_fills_a_bare_reply_after_a_restart() {
    let route = ReplyRoute::of_request(&ask(), "pf-1");
    let mut reply = Envelope::default();
    ReplyBase::of_route(&route).apply_to(&mut reply);
    assert_eq!(reply.direction, Direction::Response);
    assert_eq!(reply.recipient.as_deref(), Some("_reply.Planner.7"));
    assert_eq!(reply.reply_via.as_deref(), Some("Planner"));
    assert_eq!(reply.context.as_deref(), Some("Trips.é"));
    assert_eq!(reply.tool_id.as_deref(), Some("call_1"));
    assert_eq!(reply.route_response_to.as_deref(), Some("Caller"));
    assert_eq!(reply.in_reply_to.as_deref(), Some("pf-1"));
    assert_eq!(reply.intent, Some(Intent::Response));
    assert_eq!(
        (reply.trace_id, reply.tenant, reply.deadline),
        (None, None, None),
        "only the table keeps those"
    );
}

/// The rule the daemon follows (the pipeline, tests/conversations.rs: "its own sub-context
/// comes back"): the ask wins over what the reply says for what names the conversation,
/// whether its ask was pending or only its token came back. (A test here once asserted the
/// opposite, "the reply wins", for a function the daemon never called.)
#[test]
fn the_token_wins_over_the_reply_for_what_names_the_conversation_and_the_reply_keeps_its_content() {
    let route = ReplyRoute {
        context: Some("old".into()),
        tool_id: Some("call_1".into()),
        correlation_id: Some("c-1".into()),
        ..Default::default()
    };
    let mut reply = Envelope {
        context: Some("new".into()),
        tool_id: Some("forged".into()),
        recipient: Some("Someone".into()),
        correlation_id: Some(route.to_token()),
        content: crate::envelope::Content::Text("Rome".into()),
        intent: Some(Intent::CannotAnswer),
        ..Default::default()
    };
    ReplyBase::of_route(&route).apply_to(&mut reply);
    assert_eq!(reply.context.as_deref(), Some("old"));
    assert_eq!(reply.tool_id.as_deref(), Some("call_1"));
    assert_eq!(reply.correlation_id.as_deref(), Some("c-1"), "the asker's own, not the token");
    assert_eq!(
        reply.recipient.as_deref(),
        Some("Someone"),
        "the token names no requester: the reply's stays"
    );
    assert_eq!(reply.content, crate::envelope::Content::Text("Rome".into()));
    assert_eq!(reply.intent, Some(Intent::CannotAnswer), "the reply's own type");
}
