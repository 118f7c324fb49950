use super::*;

fn msg(message: &str) -> WiseMessage {
    WiseMessage { message: message.into(), context_name: Some("default".into()), ..Default::default() }
}

#[test]
fn writes_all_six_keys_sorted_under_the_tag() {
    let m = WiseMessage {
        message: "Hello".into(),
        message_type: Some(Intent::Ack),
        sender: Some("Agent1".into()),
        tool_id: Some("WeatherAgent".into()),
        route_response_to: Some("Agent1".into()),
        context_name: Some("Weather".into()),
        extra: vec![],
    };
    let want = "!wiseagents.WiseAgentMessage\n_context_name: Weather\n_message: Hello\n_message_type: ACK\n\
                _route_response_to: Agent1\n_sender: Agent1\n_tool_id: WeatherAgent\n";
    assert_eq!(m.to_yaml(), want, "byte for byte what PyYAML writes");
}

#[test]
fn yaml11_lookalikes_are_quoted() {
    for s in [
        "yes",
        "No",
        "ON",
        "off",
        "y",
        "n",
        "true",
        "null",
        "~",
        "123",
        "1_000",
        "0x1F",
        "1:20",
        "2024-01-01",
        "",
        " x",
        "x ",
        "a: b",
        "#c",
        "-",
        "3.5",
        ".inf",
    ] {
        let yaml = msg(s).to_yaml();
        let line = yaml.lines().find(|l| l.starts_with("_message:")).unwrap();
        assert!(line.contains('\'') || line.contains('"'), "{s:?} written unquoted: {line}");
        assert_eq!(WiseMessage::parse(yaml.as_bytes()).unwrap().message, s);
    }
}

#[test]
fn non_ascii_and_controls_are_escaped_like_pyyaml() {
    let yaml = msg("Café — 😀\ttab\u{7}").to_yaml();
    assert!(yaml.contains(r#"_message: "Caf\xE9 \u2014 \U0001F600\ttab\a""#), "{yaml}");
    assert!(yaml.is_ascii());
}

#[test]
fn written_bodies_read_back_to_the_same_fields() {
    let m = WiseMessage {
        message: "line one\nline two\n\n  'quoted' \"double\" back\\slash".into(),
        message_type: Some(Intent::ActionRequest),
        sender: Some("on".into()),
        tool_id: Some("call_1".into()),
        route_response_to: None,
        context_name: Some("ctx.sub".into()),
        extra: vec![],
    };
    assert_eq!(WiseMessage::parse(m.to_yaml().as_bytes()).unwrap(), m);
}

#[test]
fn a_null_context_becomes_the_default_and_is_never_invented() {
    let env = Envelope { content: Content::Text("x".into()), ..Default::default() };
    assert_eq!(from_envelope(&env, "default").context_name.as_deref(), Some("default"));
}

#[test]
fn legacy_keys_travel_in_extra() {
    let m = WiseMessage::parse(b"!wiseagents.WiseAgentMessage\n_chat_id: c1\n_message: hi\n").unwrap();
    let env = to_envelope(m, Direction::Request, "B");
    assert_eq!(env.extra.get("wiseagents._chat_id"), Some(&Value::String("c1".into())));
    assert_eq!(env.recipient.as_deref(), Some("B"));
}

#[test]
fn aliases_and_deep_values_of_unknown_keys_are_refused() {
    let alias = b"!wiseagents.WiseAgentMessage\n_message: &a hi\n_sender: *a\n";
    assert!(matches!(WiseMessage::parse(alias), Err(EnvelopeError::Hostile(_))));
    let deep = b"!wiseagents.WiseAgentMessage\n_message: hi\n_x: [[[[[[1]]]]]]\n";
    assert!(matches!(WiseMessage::parse(deep), Err(EnvelopeError::Hostile(_))));
    let shallow = b"!wiseagents.WiseAgentMessage\n_message: hi\n_x: [[1], {a: b}]\n";
    assert!(WiseMessage::parse(shallow).is_ok());
}

#[test]
fn python_tags_anywhere_are_refused_as_hostile() {
    let tag = "!wiseagents.WiseAgentMessage\n";
    for body in [
        format!("{tag}_message: !!python/object/apply:os.system ['echo pwned']\n"),
        format!("{tag}_message: !!python/name:os.system ''\n"),
        format!("{tag}_message: hi\n_sender: !!python/str A\n"),
        format!("{tag}_message: hi\n_x: !!python/object/new:os.system {{a: b}}\n"),
        format!("{tag}_message: hi\n_x: [1, !!python/name:os.system a]\n"),
        "!!python/object/apply:os.system\n- echo pwned\n".to_owned(),
    ] {
        match WiseMessage::parse(body.as_bytes()) {
            Err(e @ EnvelopeError::Hostile(_)) => assert!(e.to_string().contains("Python"), "{e}"),
            other => panic!("{body}: {other:?}"),
        }
    }
    let legacy = format!(
        "{tag}_message: hi\n_message_type: !!python/object/apply:wiseagents.wise_agent_messaging.WiseAgentMessageType\n- QUERY\n"
    );
    assert_eq!(WiseMessage::parse(legacy.as_bytes()).unwrap().message_type, Some(Intent::Query));
}

/// What PyYAML 6.0.3 writes for `PassThroughClientAgent`'s forward
/// (`WiseAgentMessage(message=request, sender=self.name, context_name=...)`).
const PASS_THROUGH: &str = r#"!wiseagents.WiseAgentMessage
_context_name: CLI.1234
_message: !wiseagents.WiseAgentMessage
  _context_name: CLI.1234
  _message: What is the weather in Paris?
  _message_type: QUERY
  _route_response_to: null
  _sender: Client
  _tool_id: null
_message_type: null
_route_response_to: null
_sender: PassThroughClientAgent1
_tool_id: null
"#;

#[test]
fn a_message_nested_by_a_pass_through_agent_is_read_as_its_text_and_type() {
    let m = WiseMessage::parse(PASS_THROUGH.as_bytes()).unwrap();
    assert_eq!(m.message, "What is the weather in Paris?");
    assert_eq!(m.message_type, Some(Intent::Query), "the nested type, the outer one being null");
    assert_eq!(m.sender.as_deref(), Some("PassThroughClientAgent1"), "the sender is the forwarder");
    assert_eq!(m.context_name.as_deref(), Some("CLI.1234"));
}

#[test]
fn messages_nested_without_end_are_refused_as_hostile() {
    let mut body = String::new();
    for depth in 0..8 {
        let pad = "  ".repeat(depth);
        body.push_str(&format!("{pad}_message: !wiseagents.WiseAgentMessage\n"));
    }
    let body = format!("!wiseagents.WiseAgentMessage\n{}  {}_message: x\n", body, "  ".repeat(7));
    let err = WiseMessage::parse(body.as_bytes()).unwrap_err();
    assert!(matches!(err, EnvelopeError::Hostile(_)), "{err:?}");
}

#[test]
fn a_nested_mapping_that_is_not_a_message_is_refused_with_the_reason() {
    let body = "!wiseagents.WiseAgentMessage\n_message:\n  a: b\n_sender: X\n";
    let err = WiseMessage::parse(body.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("found a mapping"), "{err}");
}
