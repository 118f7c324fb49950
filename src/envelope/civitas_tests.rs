use super::*;
use crate::envelope::Content;
use crate::envelope::{FixedClock, SystemClock};

/// A request as the pipeline sends it on: with its reply-route token.
fn request() -> Envelope {
    let mut env = bare_request();
    let mut route = ReplyRoute::of_request(&env, "r-1");
    route.ask = Some("ask-1".into());
    env.reply_token = Some(route.to_token());
    env
}

fn bare_request() -> Envelope {
    Envelope {
        intent: Some(Intent::Query),
        sender: Some("User".into()),
        recipient: Some("WeatherAgent".into()),
        context: Some("Weather".into()),
        tool_id: Some("call_9f2c".into()),
        route_response_to: Some("Boss".into()),
        content: Content::Text("{\"location\": \"Paris\"}".into()),
        ..Default::default()
    }
}

#[test]
fn a_request_becomes_a_message_with_the_payload_of_the_contract() {
    let msg = from_envelope(&request(), &mut SystemClock).unwrap();
    assert_eq!((msg.schema_version, msg.kind.as_str()), (1, "message"));
    assert_eq!(uuid::Uuid::parse_str(&msg.id).unwrap().get_version_num(), 7);
    assert_eq!((msg.sender.as_str(), msg.recipient.as_str()), ("User", "WeatherAgent"));
    assert_eq!(msg.reply_to.as_deref(), Some("User"));
    let want = serde_json::json!({"message": "{\"location\": \"Paris\"}", "message_type": "QUERY",
        "context_name": "Weather", "tool_id": "call_9f2c", "route_response_to": "Boss"});
    assert_eq!(Value::Object(msg.payload.clone()), want);
    let route = ReplyRoute::from_token(msg.correlation_id.as_deref().unwrap()).unwrap();
    assert_eq!((route.request_id.as_deref(), route.ask.as_deref()), (Some("r-1"), Some("ask-1")));
    let bare = from_envelope(&bare_request(), &mut SystemClock).unwrap();
    assert_eq!(bare.correlation_id, None, "without the pipeline, no token: the envelope's own id");
}

#[test]
fn json_starts_with_schema_version_and_writes_every_key() {
    let body = from_envelope(&request(), &mut SystemClock).unwrap().encode(Encoding::Json).unwrap();
    let text = String::from_utf8(body).unwrap();
    assert!(text.starts_with("{\"schema_version\":1,\"id\":"), "{text}");
    for key in
        ["correlation_id", "reply_to", "parent_span_id", "ttl", "seq", "attempt", "priority", "span_id"]
    {
        assert!(text.contains(&format!("\"{key}\":")), "{key} missing in {text}");
    }
}

#[test]
fn a_reply_echoing_the_token_comes_back_with_the_requests_route() {
    let out = from_envelope(&request(), &mut SystemClock).unwrap();
    let reply = CivitasMessage {
        kind: "reply".into(),
        sender: "WeatherAgent".into(),
        recipient: out.reply_to.clone().unwrap(),
        correlation_id: out.correlation_id.clone(),
        payload: serde_json::from_value(serde_json::json!({"message": "sunny"})).unwrap(),
        ..CivitasMessage::decode(b"{}", Encoding::Json).unwrap()
    };
    let env = to_envelope(reply, &mut SystemClock).unwrap();
    assert_eq!(env.direction, Direction::Response);
    assert_eq!(env.intent, Some(Intent::Response));
    // The reply carries the request's route, which the pipeline fills it in from (from its
    // pending ask, else the token: `ReplyBase::apply_to`).
    let route = env.correlation_id.as_deref().and_then(ReplyRoute::from_token).expect("the token comes back");
    assert_eq!(route.requester.as_deref(), Some("User"));
    assert_eq!(route.context.as_deref(), Some("Weather"));
    assert_eq!(route.tool_id.as_deref(), Some("call_9f2c"));
    assert_eq!(route.route_response_to.as_deref(), Some("Boss"));
    assert_eq!(route.request_id.as_deref(), Some("r-1"));
}

#[test]
fn reading_is_as_tolerant_as_from_dict() {
    let msg = CivitasMessage::decode(br#"{"sender": "A", "unknown": 1, "trace_id": null}"#, Encoding::Json)
        .unwrap();
    assert_eq!((msg.kind.as_str(), msg.sender.as_str(), msg.trace_id.as_str()), ("message", "A", ""));
    // Civitas's own defaults (a new uuid7, time.time()) are the clock's.
    let env = to_envelope(msg, &mut FixedClock { unix: 1_800_000_000.5, last: 6 }).unwrap();
    assert_eq!(env.id, Some(uuid::Uuid::from_u128(7).to_string()));
    assert_eq!(env.timestamp, Some(1_800_000_000.5));
}

#[test]
fn msgpack_round_trips_and_is_detected_by_its_first_byte() {
    let msg = from_envelope(&request(), &mut SystemClock).unwrap();
    let body = msg.encode(Encoding::Msgpack).unwrap();
    assert_eq!(Encoding::detect(None, &body), Some(Encoding::Msgpack));
    assert_eq!(CivitasMessage::decode(&body, Encoding::Msgpack).unwrap(), msg);
    assert_eq!(Encoding::detect(Some("application/json; charset=utf-8"), &body), Some(Encoding::Json));
    assert_eq!(Encoding::detect(None, b" {}"), Some(Encoding::Json));
    assert_eq!(Encoding::detect(None, b"!wiseagents"), None);
}

#[test]
fn reserved_types_are_refused_both_ways() {
    for kind in ["_agency.shutdown", "civitas.stream.chunk"] {
        let body = format!(r#"{{"type": "{kind}"}}"#);
        let msg = CivitasMessage::decode(body.as_bytes(), Encoding::Json).unwrap();
        assert!(matches!(to_envelope(msg, &mut SystemClock), Err(EnvelopeError::ReservedType(_))));
        let mut env = request();
        env.extra.insert("civitas.type".into(), Value::String(kind.into()));
        assert!(matches!(from_envelope(&env, &mut SystemClock), Err(EnvelopeError::ReservedType(_))));
    }
}

#[test]
fn a_json_body_is_read_once_a_repeated_key_the_last_and_a_list_is_not_a_message() {
    // JSON keeps the last of a repeated key: a signed envelope still, not an empty message.
    let body = br#"{"msg": {"sender": "S"}, "sig": null, "sig": {"alg": "ed25519"}}"#;
    assert!(matches!(CivitasMessage::decode(body, Encoding::Json), Err(EnvelopeError::Signed)));
    // A null msg or sig is no signature: a message with defaults, as Civitas would read it.
    let body = br#"{"msg": null, "sig": {"alg": "ed25519"}, "sender": "S"}"#;
    assert_eq!(CivitasMessage::decode(body, Encoding::Json).unwrap().sender, "S");
    // A list of two is no envelope of either kind.
    let body = br#"[{"sender": "S"}, {"alg": "ed25519"}]"#;
    let err = CivitasMessage::decode(body, Encoding::Json).unwrap_err();
    assert!(matches!(err, EnvelopeError::InvalidField { .. }), "{err:?}");
}

#[test]
fn a_signed_envelope_is_refused_in_json_and_in_msgpack_with_binary_nonce() {
    let body =
        br#"{"v": 2, "msg": {"sender": "S", "payload": {"message": "hi"}}, "sig": {"alg": "ed25519"}}"#;
    assert!(matches!(CivitasMessage::decode(body, Encoding::Json), Err(EnvelopeError::Signed)));
    // As civitas/security/signing.py writes it: msgpack, nonce and value as binaries.
    fn bin<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }
    #[derive(serde::Serialize)]
    struct Sig {
        signer: &'static str,
        alg: &'static str,
        #[serde(serialize_with = "bin")]
        value: [u8; 64],
        #[serde(serialize_with = "bin")]
        nonce: [u8; 16],
    }
    #[derive(serde::Serialize)]
    struct SignedEnvelope {
        v: i64,
        msg: Value,
        sig: Sig,
    }
    let signed = SignedEnvelope {
        v: 2,
        msg: serde_json::json!({"sender": "S", "payload": {"message": "hi"}}),
        sig: Sig { signer: "S", alg: "ed25519", value: [7; 64], nonce: [1; 16] },
    };
    let body = rmp_serde::to_vec_named(&signed).unwrap();
    let err = CivitasMessage::decode(&body, Encoding::Msgpack).unwrap_err();
    assert_eq!(err.kind(), "signed", "{err}");
}

#[test]
fn ttl_and_deadline_convert_and_priority_stays_civitas_own() {
    let body = br#"{"payload": {"message": "t"}, "timestamp": 1000.0, "ttl": 5.0, "priority": 1}"#;
    let env = to_envelope(CivitasMessage::decode(body, Encoding::Json).unwrap(), &mut SystemClock).unwrap();
    assert_eq!((env.deadline, env.priority), (Some(1005.0), None));
    let pf = crate::envelope::penguiflow::from_envelope(&env, &Default::default(), &mut SystemClock);
    assert_eq!((pf.deadline_s, pf.headers.priority), (Some(1005.0), 0), "the system lane is not a hint");
    let back = from_envelope(&env, &mut SystemClock).unwrap();
    assert_eq!((back.ttl, back.priority), (Some(5.0), 1));
}

#[test]
fn a_payload_without_text_becomes_json_content_and_extra_keys_survive() {
    let body = br#"{"payload": {"temp": 21, "message_type": "RESPONSE"}}"#;
    let env = to_envelope(CivitasMessage::decode(body, Encoding::Json).unwrap(), &mut SystemClock).unwrap();
    assert_eq!(env.content, Content::Json(serde_json::json!({"temp": 21})));
    let body = br#"{"payload": {"message": "t", "units": "C"}, "ttl": 5.0, "seq": 3}"#;
    let back = from_envelope(
        &to_envelope(CivitasMessage::decode(body, Encoding::Json).unwrap(), &mut SystemClock).unwrap(),
        &mut SystemClock,
    )
    .unwrap();
    assert_eq!(back.payload.get("units"), Some(&Value::String("C".into())));
    assert_eq!((back.ttl, back.seq), (Some(5.0), Some(3)));
}

#[test]
fn a_reply_is_known_by_its_token_whatever_its_type_and_errors_are_cannot_answer() {
    let out = from_envelope(&request(), &mut SystemClock).unwrap();
    let reply = |kind: &str, payload: serde_json::Value| CivitasMessage {
        kind: kind.into(),
        correlation_id: out.correlation_id.clone(),
        payload: serde_json::from_value(payload).unwrap(),
        ..CivitasMessage::decode(b"{}", Encoding::Json).unwrap()
    };
    // reply() takes its type from payload["type"].
    let typed = to_envelope(
        reply("weather_report", serde_json::json!({"type": "weather_report", "message": "sunny"})),
        &mut SystemClock,
    )
    .unwrap();
    assert_eq!((typed.direction, typed.intent), (Direction::Response, Some(Intent::Response)));
    let failed = to_envelope(
        reply("reply", serde_json::json!({"status": "error", "error": "agent 'W' was terminated"})),
        &mut SystemClock,
    )
    .unwrap();
    assert_eq!(failed.intent, Some(Intent::CannotAnswer));
    assert_eq!(failed.content, crate::envelope::Content::Text("agent 'W' was terminated".into()));
    let typed_error =
        to_envelope(reply("tool_error", serde_json::json!({"message": "boom"})), &mut SystemClock).unwrap();
    assert_eq!(typed_error.intent, Some(Intent::CannotAnswer));
    // And CANNOT_ANSWER is written as Civitas's own error reply.
    let back = from_envelope(&failed, &mut SystemClock).unwrap();
    assert_eq!((back.kind.as_str(), back.payload["status"].as_str()), ("reply", Some("error")));
    assert_eq!(back.payload["error"], "agent 'W' was terminated");
}

#[test]
fn msgpack_nested_deeper_than_json_may_be_is_refused_without_exhausting_a_small_stack() {
    // 100,000 nested one-element arrays (0x91) around a nil, decoded on 1 MiB (half a tokio
    // worker's stack) in a debug build: rmp-serde alone recursed 1,024 levels and overflowed
    // it; the bridge stops at 128, like JSON.
    let mut deep = vec![0x91u8; 100_000];
    deep.push(0xc0);
    let shallow = {
        let mut b = vec![0x81, 0xa4, b't', b'y', b'p', b'e'];
        b.extend(std::iter::repeat_n(0x91u8, 100));
        b.push(0xc0);
        b
    };
    let outcome = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || {
            (
                CivitasMessage::decode(&deep, Encoding::Msgpack),
                CivitasMessage::decode(&shallow, Encoding::Msgpack),
            )
        })
        .unwrap()
        .join()
        .expect("no stack overflow, no panic");
    let err = outcome.0.expect_err("too deep").to_string();
    assert!(err.contains("depth limit exceeded"), "{err}");
    // 100 levels are read (and refused for what they are: a map without the Civitas fields).
    let err = outcome.1.expect_err("not a Civitas message").to_string();
    assert!(!err.contains("depth"), "{err}");
}
