use super::*;
use crate::envelope::trace::SpanId;
use crate::telemetry::trace::{HopKind, Party};
use std::time::Duration;

fn hop(trace: u128, kind: HopKind, from: &str, to: &str) -> Hop {
    Hop {
        trace: TraceId(trace),
        kind,
        parent: None,
        link: None,
        process: SpanId(1),
        send: SpanId(2),
        from: Party { name: from.into(), framework: "wiseagents" },
        to: Some(Party { name: to.into(), framework: "civitas" }),
        conversation: Some("Books".into()),
        source: "/queue/request/B".into(),
        destination: "/queue/civitas.B".into(),
        message_id: "m".into(),
        body_size: 10,
        processed: 0.0,
        invocation: None,
        error: None,
        notes: Vec::new(),
    }
}

fn at(ms: u64) -> Times {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
    Times { received: t - Duration::from_millis(2), settled: t }
}

#[test]
fn a_conversation_is_its_trace_with_its_agents_in_order_and_its_events() {
    let log = Conversations::new(10);
    log.record(&hop(7, HopKind::Ask, "A", "B"), at(1_000));
    log.record(&hop(7, HopKind::Answer, "B", "A"), at(1_500));
    let page = log.to_json();
    let c = &page["conversations"][0];
    assert_eq!(c["trace_id"], "00000000000000000000000000000007");
    assert_eq!(c["conversation"], "Books");
    assert_eq!(
        c["participants"],
        serde_json::json!([{"name": "A", "framework": "wiseagents"}, {"name": "B", "framework": "civitas"}])
    );
    let kinds: Vec<_> = c["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ask", "answer"]);
    assert_eq!(c["events"][0]["latency_ms"], 2.0);
    assert_eq!((c["started_ms"].as_u64(), c["updated_ms"].as_u64()), (Some(1_000), Some(1_500)));
}

#[test]
fn memory_is_bounded_by_conversations_events_and_text() {
    let log = Conversations::new(3);
    for trace in 1..=10_000u128 {
        log.record(&hop(trace, HopKind::Ask, &"x".repeat(10_000), "B"), at(trace as u64));
    }
    let text = || log.log.lock().unwrap().slots.iter().map(|c| c.text.len()).sum::<usize>();
    for _ in 0..EVENTS {
        log.record(&hop(10_000, HopKind::Message, "A", "B"), at(20_000));
    }
    let full = text();
    for _ in 0..1_000 {
        log.record(&hop(10_000, HopKind::Message, "A", "B"), at(20_000));
    }
    assert_eq!(text(), full, "a full conversation's events are counted, their texts not kept");
    let page = log.to_json();
    assert_eq!(log.len(), 3);
    assert_eq!(page["forgotten"], 9_997);
    let newest = &page["conversations"][0];
    assert_eq!(newest["events"].as_array().unwrap().len(), EVENTS);
    assert_eq!(newest["truncated"], true);
    let name = newest["participants"][0]["name"].as_str().unwrap();
    assert_eq!(name.chars().count(), TEXT + 1, "cut, with an ellipsis");
}

#[test]
fn a_conversation_writes_each_name_and_repeated_destination_once() {
    let log = Conversations::new(10);
    for _ in 0..3 {
        log.record(&hop(7, HopKind::Message, "Asker", "Weather"), at(1_000));
    }
    let held = log.log.lock().unwrap().slots[0].text.clone();
    assert_eq!(held.matches("Weather").count(), 1, "{held}");
    assert_eq!(held.matches("/queue/request/B").count(), 1, "{held}");
    assert_eq!(held.matches("/queue/civitas.B").count(), 1, "{held}");
    let page = log.to_json();
    let events = page["conversations"][0]["events"].as_array().unwrap().clone();
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e["from"] == "Asker" && e["to"] == "Weather" && e["message_id"] == "m"));
    assert!(events.iter().all(|e| e["destination"] == "/queue/civitas.B"));
}
