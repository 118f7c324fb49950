use super::*;
use crate::envelope::SystemClock;

fn request() -> Envelope {
    Envelope {
        intent: Some(Intent::Query),
        sender: Some("User".into()),
        recipient: Some("Planner".into()),
        context: Some("Trips".into()),
        tool_id: Some("call_7".into()),
        content: Content::Text("plan a trip".into()),
        ..Default::default()
    }
}

#[test]
fn a_request_carries_text_tenant_topic_and_exactly_the_meta_keys() {
    let msg = from_envelope(&request(), &PenguiOptions::default(), &mut SystemClock);
    assert_eq!(msg.payload, json!("plan a trip"));
    assert_eq!((msg.headers.tenant.as_str(), msg.headers.topic.as_deref()), ("default", Some("Trips")));
    assert!(msg.trace_id.as_deref().is_some_and(|t| is_hex(t, 32)));
    let keys: Vec<&str> = msg.meta.keys().map(String::as_str).collect();
    let mut want = META_KEYS.to_vec();
    want.sort();
    assert_eq!(keys, want);
    assert_eq!(msg.meta["reply_to"], json!("User"));
    let text = String::from_utf8(msg.encode().unwrap()).unwrap();
    assert!(text.starts_with("{\"payload\":"), "{text}");
}

#[test]
fn a_reply_with_copied_meta_goes_back_to_the_requester_with_its_route() {
    let request = from_envelope(&request(), &PenguiOptions::default(), &mut SystemClock);
    let mut reply = request.clone();
    reply.payload = json!({"text": "Rome, 3 days", "citations": ["guide"]});
    let env = to_envelope(reply, &mut SystemClock).unwrap();
    assert_eq!((env.direction, env.intent), (Direction::Response, Some(Intent::Response)));
    assert_eq!(env.sender.as_deref(), Some("Planner"));
    assert_eq!(env.recipient.as_deref(), Some("User"));
    assert_eq!((env.context.as_deref(), env.tool_id.as_deref()), (Some("Trips"), Some("call_7")));
    assert_eq!(env.in_reply_to, request.meta["message_id"].as_str().map(str::to_owned));
    assert_eq!(env.content.to_text(), "Rome, 3 days");
    assert_eq!(env.extra["penguiflow.citations"], json!(["guide"]));
}

#[test]
fn a_response_is_written_as_a_final_answer_unless_configured_otherwise() {
    let mut env = request();
    env.direction = Direction::Response;
    env.intent = Some(Intent::Response);
    assert_eq!(
        from_envelope(&env, &PenguiOptions::default(), &mut SystemClock).payload,
        json!({"text": "plan a trip", "citations": []})
    );
    let plain = PenguiOptions { response_as_final_answer: false, ..Default::default() };
    assert_eq!(from_envelope(&env, &plain, &mut SystemClock).payload, json!("plan a trip"));
}

#[test]
fn a_message_without_tenant_is_refused_and_unknown_meta_survives() {
    assert!(PenguiMessage::decode(br#"{"payload": "x", "headers": {}}"#).is_err());
    let body = br#"{"payload": {"q": 1}, "headers": {"tenant": "acme"}, "meta": {"sender": "P", "run": 9}}"#;
    let env = to_envelope(PenguiMessage::decode(body).unwrap(), &mut SystemClock).unwrap();
    assert_eq!(env.content, Content::Json(json!({"q": 1})));
    let back = from_envelope(&env, &PenguiOptions::default(), &mut SystemClock);
    assert_eq!((back.meta["run"].clone(), back.headers.tenant.as_str()), (json!(9), "acme"));
}

#[test]
fn a_chunk_is_refused_until_reassembled() {
    let body = br#"{"payload": {"stream_id": "s", "seq": 0, "text": "a"}, "headers": {"tenant": "t"}}"#;
    assert!(matches!(
        to_envelope(PenguiMessage::decode(body).unwrap(), &mut SystemClock),
        Err(EnvelopeError::Stream { .. })
    ));
}

#[test]
fn a_bus_envelope_is_read_as_the_message_it_carries() {
    let message = json!({"payload": {"text": "Rome", "citations": []}, "headers": {"tenant": "acme",
        "topic": null, "priority": 0}, "trace_id": "995ab2f90da84424bdda4810c6221488", "ts": 1.0,
        "deadline_s": null, "meta": {"sender": "Planner", "reply_to": "User", "message_type": "QUERY"}});
    let bus = json!({"edge": "plan->Rookery", "source": "plan", "target": "Rookery",
        "trace_id": message["trace_id"], "payload": message, "headers": message["headers"], "meta": message["meta"]});
    let read = PenguiMessage::decode(bus.to_string().as_bytes()).unwrap();
    assert_eq!(read, PenguiMessage::decode(message.to_string().as_bytes()).unwrap());
    let env = to_envelope(read, &mut SystemClock).unwrap();
    assert_eq!((env.direction, env.content.clone()), (Direction::Response, Content::Text("Rome".into())));
}

#[test]
fn a_bus_envelope_with_a_bare_payload_takes_headers_trace_and_meta_from_the_envelope() {
    let bus = json!({"edge": "ask->bridge", "source": null, "target": null, "trace_id": "ab",
        "payload": "find dune", "headers": {"tenant": "acme"}, "meta": {"recipient": "Librarian"}});
    let read = PenguiMessage::decode(bus.to_string().as_bytes()).unwrap();
    assert_eq!(
        (read.payload.clone(), read.headers.tenant.as_str(), read.trace_id.as_deref().unwrap_or_default()),
        (json!("find dune"), "acme", "ab")
    );
    assert_eq!(read.meta["recipient"], json!("Librarian"));
    let headless = json!({"edge": "a->b", "payload": "x", "headers": null, "meta": null});
    assert!(matches!(
        PenguiMessage::decode(headless.to_string().as_bytes()),
        Err(EnvelopeError::MissingField("headers.tenant"))
    ));
}

/// docs/PENGUIFLOW.md's answer: `meta.sender` the agent itself, `meta.recipient` the asker,
/// the ask's `meta.correlation_id` (the bridge's token) kept.
#[test]
fn an_answer_that_names_its_own_sender_comes_from_the_agent_that_was_asked() {
    let mut ask = request();
    ask.correlation_id = Some(
        crate::envelope::correlation::ReplyRoute {
            ask: Some("ask-1".into()),
            requester: Some("User".into()),
            ..Default::default()
        }
        .to_token(),
    );
    let request = from_envelope(&ask, &PenguiOptions::default(), &mut SystemClock);
    let mut reply = request.clone();
    reply.meta.insert("sender".into(), json!("Planner"));
    reply.meta.insert("recipient".into(), json!("User"));
    reply.meta.insert("message_type".into(), json!("RESPONSE"));
    reply.payload = json!({"text": "Rome, 3 days", "citations": []});
    let env = to_envelope(reply, &mut SystemClock).unwrap();
    assert_eq!(env.direction, Direction::Response);
    assert_eq!(env.sender.as_deref(), Some("Planner"), "the answer's sender is the agent asked");
    assert_eq!(env.recipient.as_deref(), Some("User"));
}

#[test]
fn an_answer_with_the_token_and_meta_copied_unchanged_is_still_turned_round() {
    let mut ask = request();
    ask.correlation_id = Some(
        crate::envelope::correlation::ReplyRoute { requester: Some("User".into()), ..Default::default() }
            .to_token(),
    );
    let mut reply = from_envelope(&ask, &PenguiOptions::default(), &mut SystemClock);
    reply.payload = json!("Rome");
    let env = to_envelope(reply, &mut SystemClock).unwrap();
    assert_eq!((env.sender.as_deref(), env.recipient.as_deref()), (Some("Planner"), Some("User")));
}
