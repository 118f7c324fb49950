use super::*;
use crate::telemetry::capture::{FLOOD, assert_flood_limited, logged};

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
    Reconnected { link: "consuming", broker: "stomp://a:61613", ready: true }.emit(&m);
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
    RepeatedAnswer { route: "penguiflow->repeated", source: "/q", message_id: "3", ask: "b" }.emit(&m);
    Acknowledgement { route: "vox->receipt", source: "/q", message_id: "2" }.emit(&m);
    ReplyTimedOut { route: "timeout->wiseagents", destination: "/d", hop: None }.emit(&m);
    m.set_pending_asks(7);
    assert_eq!(m.messages("civitas->late", "late_reply"), 1);
    assert_eq!(m.messages("civitas->late", "delivered"), 0);
    assert_eq!(m.messages("vox->receipt", "receipt"), 1);
    assert_eq!(m.messages("penguiflow->repeated", "repeated_answer"), 1);
    assert_eq!(m.messages("timeout->wiseagents", "reply_timeout"), 1);
    let text = m.render();
    for line in [
        "bridge_late_replies_total 1",
        "bridge_repeated_answers_total 1",
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
    Disconnected { link: "consuming", broker: "stomp://a:61613", reason: "x" }.emit(&m);
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

/// `name value`, as `/metrics` renders a counter without labels.
fn counter(m: &Metrics, name: &str) -> String {
    let text = m.render();
    text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_default().to_owned()
}

fn flooded(name: &str) -> String {
    format!("{name} {}", FLOOD + 1)
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_dead_letters_logs_a_burst_and_counts_every_one() {
    let m = Metrics::default();
    let dead = DeadLettered {
        route: "civitas->?",
        source: "/q",
        message_id: "2",
        kind: "json",
        reason: "bad",
        hop: None,
        latency: Duration::ZERO,
    };
    assert_flood_limited("message dead-lettered", || dead.emit(&m)).await;
    assert_eq!(m.messages("civitas->?", "dead_lettered"), FLOOD as u64 + 1);
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_late_replies_logs_a_burst_and_counts_every_one() {
    let m = Metrics::default();
    let late = LateReply { route: "civitas->late", source: "/q", message_id: "1", ask: "a" };
    assert_flood_limited("after its reply timeout", || late.emit(&m)).await;
    assert_eq!(counter(&m, "bridge_late_replies_total"), flooded("bridge_late_replies_total"));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_repeated_answers_logs_a_burst_and_counts_every_one() {
    // PenguiFlow re-running a node sends hundreds of copies a second.
    let m = Metrics::default();
    let again = RepeatedAnswer { route: "penguiflow->repeated", source: "/q", message_id: "1", ask: "a" };
    assert_flood_limited("an answer came again", || again.emit(&m)).await;
    assert_eq!(counter(&m, "bridge_repeated_answers_total"), flooded("bridge_repeated_answers_total"));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_reply_timeouts_logs_a_burst_and_counts_every_one() {
    let m = Metrics::default();
    let timeout = ReplyTimedOut { route: "timeout->wiseagents", destination: "/d", hop: None };
    assert_flood_limited("no answer within the reply timeout", || timeout.emit(&m)).await;
    assert_eq!(counter(&m, "bridge_reply_timeouts_total"), flooded("bridge_reply_timeouts_total"));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_failed_batches_logs_a_burst_and_counts_every_one() {
    let m = Metrics::default();
    let failed = BatchFailed { messages: 3, mode: "confirm", reason: "connection lost" };
    assert_flood_limited("batch not confirmed", || failed.emit(&m)).await;
    assert_eq!(counter(&m, "bridge_batch_failures_total"), flooded("bridge_batch_failures_total"));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_unsettled_messages_logs_a_burst_and_counts_every_one() {
    let m = Metrics::default();
    assert_flood_limited("message left unsettled", || Unsettled { message_id: "1" }.emit(&m)).await;
    assert_eq!(counter(&m, "bridge_unsettled_total"), flooded("bridge_unsettled_total"));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_stalls_logs_a_burst_and_counts_every_one() {
    let m = Arc::new(Metrics::default());
    let stall = || drop(PublishStalled { since: Instant::now(), messages: 1 }.emit(&m));
    assert_flood_limited("publishing stalled", stall).await;
    assert_eq!(counter(&m, "bridge_publish_stalls_total"), flooded("bridge_publish_stalls_total"));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_error_answers_not_published_logs_a_burst() {
    let m = Metrics::default();
    let lost =
        ErrorAnswerUnpublished { route: "timeout->civitas", destination: "/d", error: "not connected" };
    assert_flood_limited("cannot publish an error answer", || lost.emit(&m)).await;
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_streams_given_up_on_logs_a_burst() {
    let limit = limit::LogLimit::new();
    let given_up = StreamGivenUp { error: &"the stream's sender stopped" };
    assert_flood_limited("a stream was given up on", || {
        event::emit_within(&given_up, &(), Some(&limit));
    })
    .await;
    let unanswered = StreamUnanswered { error: &"no route" };
    let limit = limit::LogLimit::new();
    assert_flood_limited("no error answer for a stream", || {
        event::emit_within(&unanswered, &(), Some(&limit));
    })
    .await;
}

/// A connection lost and restored is one line each, with the connection, its address and why;
/// back on another address it is a failover, said at `warn` and counted.
#[test]
fn a_lost_connection_and_its_return_are_one_line_each_with_the_address() {
    let m = Metrics::default();
    m.set_subscribed(true);
    let lost = Disconnected { link: "consuming", broker: "stomp://a:61613", reason: "nothing heard" };
    let log = logged(|| lost.emit(&m));
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.contains("WARN") && log.contains("broker connection lost"), "{log}");
    assert!(
        log.contains("stomp://a:61613") && log.contains("nothing heard") && log.contains("consuming"),
        "{log}"
    );
    assert!(!m.is_ready());
    let back = |broker, ready| {
        Reconnected { link: "consuming", broker, ready }.emit(&m);
    };
    let log = logged(|| back("stomp://a:61613", false));
    assert!(log.contains("INFO") && log.contains("restored; waiting for the other connection"), "{log}");
    assert!(!m.is_ready(), "the other connection is still down");
    let log = logged(|| back("stomp://a:61613", true));
    assert!(log.contains("INFO") && log.contains("broker connection restored; ready"), "{log}");
    assert!(m.is_ready());
    let log = logged(|| {
        lost.emit(&m);
        back("stomp://b:61613", true);
    });
    assert_eq!(log.lines().count(), 2, "{log}");
    let failover = log.lines().nth(1).unwrap_or_default();
    assert!(failover.contains("WARN") && failover.contains("broker failover"), "{log}");
    assert!(
        failover.contains("from=\"stomp://a:61613\"") && failover.contains("to=\"stomp://b:61613\""),
        "{log}"
    );
    assert_eq!(
        (counter(&m, "bridge_reconnects_total"), m.broker.failovers()),
        ("bridge_reconnects_total 2".into(), 1)
    );
    assert_eq!(m.broker.live(), ["stomp://b:61613"]);
}
