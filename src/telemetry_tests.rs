use super::*;

#[test]
fn events_count_what_they_log_and_render_as_prometheus_text() {
    let m = Metrics::default();
    let d = Delivered {
        route: "wiseagents->civitas",
        source: "/q",
        destination: "/d",
        message_id: "1",
        latency: Duration::from_millis(3),
        correlated: true,
        unmatched_reply: false,
        hop: None,
    };
    d.emit(&m);
    DeadLettered {
        route: "civitas->?",
        source: "/q",
        message_id: "2",
        kind: "json",
        reason: "bad",
        hop: None,
        latency: Duration::ZERO,
    }
    .emit(&m);
    Reconnected.emit(&m);
    let text = m.render();
    assert!(
        text.contains("bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 1"),
        "{text}"
    );
    assert!(text.contains("bridge_dead_letters_total{kind=\"json\"} 1"));
    assert!(text.contains("bridge_reconnects_total 1"));
    assert!(text.contains("bridge_latency_seconds_bucket{le=\"0.005\"} 1"));
    assert!(text.contains("bridge_latency_seconds_bucket{le=\"0.0025\"} 0"));
    assert_eq!(m.messages("wiseagents->civitas", "delivered"), 1);
}

#[test]
fn conversation_events_count_under_their_own_outcomes() {
    let m = Metrics::default();
    LateReply { route: "civitas->late", source: "/q", message_id: "1", ask: "a" }.emit(&m);
    Acknowledgement { route: "vox->receipt", source: "/q", message_id: "2" }.emit(&m);
    ReplyTimedOut { route: "timeout->wiseagents", destination: "/d", hop: None }.emit(&m);
    m.set_pending_asks(7);
    assert_eq!(m.messages("civitas->late", "late_reply"), 1);
    assert_eq!(m.messages("civitas->late", "delivered"), 0);
    assert_eq!(m.messages("vox->receipt", "receipt"), 1);
    assert_eq!(m.messages("timeout->wiseagents", "reply_timeout"), 1);
    let text = m.render();
    for line in [
        "bridge_late_replies_total 1",
        "bridge_receipts_total 1",
        "bridge_reply_timeouts_total 1",
        "bridge_pending_asks 7",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing in {text}");
    }
}

#[test]
fn ready_needs_connection_and_subscriptions() {
    let m = Metrics::default();
    m.set_connected(true);
    assert!(!m.is_ready());
    m.set_subscribed(true);
    assert!(m.is_ready());
    Disconnected { reason: "x" }.emit(&m);
    assert!(!m.is_ready());
}

#[test]
fn a_stall_makes_the_bridge_not_ready_with_the_reason_until_it_ends() {
    let m = Arc::new(Metrics::default());
    m.set_connected(true);
    m.set_subscribed(true);
    m.unacknowledged(12);
    let since = Instant::now() - Duration::from_secs(7);
    let stall = PublishStalled { since, messages: 12 }.emit(&m);
    let later = PublishStalled { since: Instant::now(), messages: 1 }.emit(&m);
    assert_eq!(
        m.readiness(),
        Err("publishing stalled: no confirmation from the broker for 7 s; holding 12 messages".into()),
        "the oldest stall is the one told"
    );
    let text = m.render();
    assert!(text.contains("bridge_publish_stalls_total 2\n"), "{text}");
    assert!(text.contains("bridge_ready 0\n") && text.contains("bridge_unacknowledged 12\n"), "{text}");
    assert!(text.contains("bridge_publish_stalled_seconds 7."), "{text}");
    stall.resumed();
    assert!(m.stalled_for().is_some_and(|d| d < Duration::from_secs(7)), "the later one remains");
    drop(later);
    assert_eq!(m.readiness(), Ok(()));
    assert!(m.render().contains("bridge_publish_stalled_seconds 0\n"));
}
