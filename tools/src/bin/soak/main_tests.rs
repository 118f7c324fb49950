use super::*;
use stomp_agent_bridge::stomp::AckRef;

fn dead_letter(body: &str, kind: &str) -> Message {
    let frame = Frame::new(Command::Message)
        .with("destination", DEAD)
        .with("bridge-error-kind", kind)
        .with("bridge-source", INGRESS[0].1)
        .with("bridge-error", "a chunk of a stream given up on")
        .with_body(body.to_owned());
    Message {
        ack: AckRef { epoch: 1, subscription: "sub-2".into(), message_id: "7".into(), ack_id: None },
        destination: DEAD.into(),
        frame,
    }
}

#[test]
fn a_dead_letter_without_a_token_is_a_stranger_that_says_what_it_was() {
    let chunk = r#"{"type":"civitas.stream.chunk","payload":{"token":"answer:so"},"seq":0}"#;
    let stranger = attribute(&dead_letter(chunk, "stream")).expect_err("no soak token in a chunk");
    for part in ["/queue/soak.dead", "bridge-error-kind stream", INGRESS[0].1, "given up on", "answer:so"] {
        assert!(stranger.contains(part), "{part:?} in {stranger}");
    }
    let malformed =
        attribute(&dead_letter("[\"not a PenguiFlow message\", \"soak-bad-penguiflow-37\"]", "json"));
    assert_eq!(malformed.as_deref(), Ok("soak-bad-penguiflow-37"));
}

#[test]
fn a_stranger_fails_the_run_that_would_otherwise_pass() {
    let mut ledger = Ledger::default();
    ledger.sent.insert("soak-bad-vox-237".into(), Kind::Malformed);
    ledger.dead.insert("soak-bad-vox-237".into(), vec!["json".into()]);
    assert!(!report(&ledger, 1, &[], Duration::from_secs(1)), "every message accounted for");
    ledger.strangers.push("a message on /queue/soak.dead the soak did not send".into());
    assert!(report(&ledger, 1, &[], Duration::from_secs(1)), "a stranger fails it");
}

#[test]
fn every_subscription_gives_artemis_a_window_of_many_messages_not_64_bytes() {
    let sub = subscribe(DEAD);
    let header =
        |name: &str| sub.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.parse::<usize>().unwrap());
    assert_eq!(header("activemq.prefetchSize"), Some(PREFETCH), "ActiveMQ counts messages");
    // Artemis counts bytes of its own encoding: about 450 for a 190-byte body (src/bridge/run.rs).
    assert!(header("consumer-window-size").is_some_and(|bytes| bytes >= PREFETCH * 1024));
    assert_eq!(sub.ack, AckMode::ClientIndividual, "each message acknowledged once accounted for");
}

#[test]
fn the_error_answer_of_a_stream_given_up_on_answers_its_ask_and_nothing_else_does() {
    let answer = |text: &str, kind: Intent, tool: Option<&str>| {
        let body = WiseMessage {
            message: text.into(),
            message_type: Some(kind),
            sender: Some(CIV.into()),
            tool_id: tool.map(str::to_owned),
            route_response_to: None,
            context_name: Some("default".into()),
            extra: vec![],
        }
        .to_yaml();
        let mut m = dead_letter("", "-");
        m.destination = format!("/queue/response/{CALLER}");
        m.frame.body = body.into_bytes().into();
        m
    };
    let cut = "the streamed answer could not be delivered: stream civitas:sab1:…: incomplete after 30s";
    assert_eq!(
        cut_stream(&answer(cut, Intent::CannotAnswer, Some("call_5750"))).as_deref(),
        Some("soak-ok-5750")
    );
    assert_eq!(cut_stream(&answer(cut, Intent::CannotAnswer, None)), None, "no ask named");
    assert_eq!(
        cut_stream(&answer("no such agent", Intent::CannotAnswer, Some("call_1"))),
        None,
        "another error"
    );
    assert_eq!(cut_stream(&answer(cut, Intent::Response, Some("call_1"))), None, "not an error answer");
}

#[test]
fn a_connection_never_stops_reading_before_its_subscriptions_windows_are_full() {
    // The native agents' connection has four subscriptions; a message Artemis encodes in
    // fewer than 200 bytes is smaller than any the soak sends.
    let window =
        subscribe(DEAD).headers.iter().find(|(n, _)| n == "consumer-window-size").map(|(_, v)| v.clone());
    let unasked = 4 * window.unwrap().parse::<usize>().unwrap() / 200;
    assert!(MAX_BUFFERED > unasked, "{MAX_BUFFERED} ≤ {unasked}");
}
