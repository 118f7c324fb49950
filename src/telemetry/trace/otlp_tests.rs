use super::*;
use crate::envelope::SystemClock;
use crate::telemetry::trace::{Note, Party};

#[test]
fn the_sampling_ratio_is_the_share_of_new_traces_exported() {
    for ratio in [0.01, 0.25, 0.5, 0.9] {
        let n = 20_000;
        let kept = (0..n).filter(|_| sampled(bound(ratio), TraceId::new(&mut SystemClock))).count();
        let share = kept as f64 / n as f64;
        assert!((share - ratio).abs() < 0.02 + ratio * 0.2, "{ratio}: {share}");
    }
    assert!(sampled(bound(1.0), TraceId(u128::MAX)), "1.0 keeps every trace");
    assert!(!sampled(bound(0.0), TraceId(1)), "0.0 none");
}

fn invocation(parent: u64) -> Invocation {
    Invocation {
        trace: TraceId(7),
        span: SpanId(20),
        parent: SpanId(parent),
        started: 1.0,
        agent: "Weather".into(),
        framework: "civitas",
        conversation: Some("Weather".into()),
    }
}

fn hop(kind: HopKind, source: &str, process: u64, send: u64, parent: Option<u64>) -> Hop {
    Hop {
        trace: TraceId(7),
        kind,
        parent: parent.map(SpanId),
        link: None,
        process: SpanId(process),
        send: SpanId(send),
        from: Party { name: "Caller".into(), framework: "wiseagents" },
        to: Some(Party { name: "Weather".into(), framework: "civitas" }),
        conversation: Some("Weather".into()),
        source: source.into(),
        destination: "/queue/civitas.Weather".into(),
        message_id: "m1".into(),
        body_size: 3,
        processed: 2.0,
        invocation: None,
        error: None,
        notes: Vec::new(),
    }
}

/// (name, span id, parent span id) of each span, in order.
fn tree(spans: &[SpanData]) -> Vec<(String, u64, u64)> {
    let id = |s: OtelSpanId| u64::from_be_bytes(s.to_bytes());
    spans.iter().map(|s| (s.name.to_string(), id(s.span_context.span_id()), id(s.parent_span_id))).collect()
}

#[test]
fn an_ask_is_process_receive_ack_and_send_under_its_invocation_and_its_answer_ends_it() {
    let times = Times::since(std::time::Duration::from_millis(5));
    let mut ask = hop(HopKind::Ask, "/queue/request/Weather", 10, 11, None);
    ask.invocation = Some(invocation(10));
    let exported = tree(&spans(&ask, times, "activemq"));
    let receive = 10 ^ 0x5eed_0001;
    let ack = 10 ^ 0x5eed_0002;
    assert_eq!(
        exported,
        [
            ("process /queue/request/Weather".into(), 10, 0),
            ("receive /queue/request/Weather".into(), receive, 10),
            ("ack /queue/request/Weather".into(), ack, 10),
            ("send /queue/civitas.Weather".into(), 11, 20),
        ],
        "the invoke_agent span is exported when it ends"
    );

    let mut answer = hop(HopKind::Answer, "/queue/bridge.civitas", 30, 31, Some(20));
    answer.invocation = Some(invocation(10));
    answer.notes.push(Note { at: times.received, kind: "hold", detail: "waiting: 3 ms".into() });
    let exported = spans(&answer, times, "rabbitmq");
    let names = tree(&exported);
    assert_eq!(
        names[0],
        ("process /queue/bridge.civitas".into(), 30, 20),
        "the answer is the ask's invocation's child"
    );
    assert_eq!(names[3], ("send /queue/civitas.Weather".into(), 31, 30));
    assert_eq!(names[4], ("invoke_agent Weather".into(), 20, 10), "ended by its answer");
    assert_eq!(exported[0].events.events[0].name, "hold");
    let system = exported[0].attributes.iter().find(|kv| kv.key.as_str() == "messaging.system").unwrap();
    assert_eq!(system.value.as_str(), "rabbitmq");
}

#[test]
fn a_dead_lettered_answer_ends_its_ask_with_the_error_and_values_from_messages_are_cut() {
    let times = Times::since(std::time::Duration::ZERO);
    let mut dead = hop(HopKind::Answer, "/queue/bridge.civitas", 30, 31, Some(20));
    dead.invocation = Some(invocation(10));
    dead.from.name = "x".repeat(10_000).into();
    dead.dead_lettered("/queue/dead", "too_large", "the body is too large");
    let exported = spans(&dead, times, "activemq");
    let process = &exported[0];
    let error = process.attributes.iter().find(|kv| kv.key.as_str() == "error.type").unwrap();
    assert_eq!(error.value.as_str(), "too_large");
    let from = process.attributes.iter().find(|kv| kv.key.as_str() == "bridge.from.agent").unwrap();
    assert_eq!(from.value.as_str().chars().count(), VALUE + 1);
    let invoke = exported.iter().find(|s| s.name == "invoke_agent Weather").expect("ended");
    assert!(matches!(invoke.status, Status::Error { .. }));
}

#[test]
fn an_a2a_task_has_no_receive_or_ack_span() {
    let times = Times::since(std::time::Duration::ZERO);
    let task = hop(HopKind::Ask, "/a2a/Weather", 10, 11, None);
    let names: Vec<_> = spans(&task, times, "activemq").into_iter().map(|s| s.name.to_string()).collect();
    assert_eq!(names, ["process /a2a/Weather", "send /queue/civitas.Weather"]);
}
