//! Every consumed message ends settled, path by path, against a fake STOMP broker that
//! misbehaves on cue (a COMMIT never confirmed, a SEND refused with an ERROR, a COMMIT held
//! on a live connection) while the real delivery engine runs in-process. Real-broker paths are
//! in tests/bridge_delivery.rs and tests/backpressure.rs. The fake broker is in-process
//! (`stomp+memory://`) and tokio's clock is paused: the receipt timeouts and heart-beat
//! silences these tests wait out pass when nothing else can run, not in real time.

mod common;

use common::fake::{Conn, Pair, start_in_memory as start_bridge, stop, stop_pair, wait_for, weather_config};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use stomp_agent_bridge::config::{Config, DeliveryConfig, DeliveryMode};
use stomp_agent_bridge::stomp::codec::Wire;
use stomp_agent_bridge::stomp::memory::Listener;
use stomp_agent_bridge::stomp::{Command, Frame};
use stomp_agent_bridge::telemetry::Metrics;
use tokio_util::sync::CancellationToken;

const DEAD: &str = "/queue/fake.dead";

/// `[delivery]` of these tests: dead letters to [`DEAD`], receipts awaited 400 ms, in `mode`.
fn delivery(mode: DeliveryMode) -> DeliveryConfig {
    DeliveryConfig { dead_letter: DEAD.into(), receipt_timeout_ms: 400, mode, ..Default::default() }
}

fn config(port: u16) -> Config {
    let delivery = DeliveryConfig { max_attempts: 2, ..delivery(DeliveryMode::Transaction) };
    weather_config(port, [0, 0], delivery)
}

async fn start() -> (Listener, Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    start_bridge("settle", config).await
}

/// The bridge's transaction for one message: BEGIN, the SEND (the receipt barrier), then the
/// ACK and the COMMIT. Returns (SEND, ACK, COMMIT).
async fn transaction(conn: &mut Conn, confirm_send: bool) -> (Frame, Option<(Frame, Frame)>) {
    let begin = conn.expect(Command::Begin).await;
    let tx = begin.header("transaction").expect("a transaction id").to_owned();
    let send = conn.expect(Command::Send).await;
    assert_eq!(send.header("transaction"), Some(tx.as_str()));
    if !confirm_send {
        return (send, None);
    }
    conn.receipt(&send).await;
    let ack = conn.expect(Command::Ack).await;
    assert_eq!(ack.header("transaction"), Some(tx.as_str()), "the ACK is part of the transaction");
    let commit = conn.expect(Command::Commit).await;
    assert_eq!(commit.header("transaction"), Some(tx.as_str()));
    (send, Some((ack, commit)))
}

/// On the connection that replaced a failed one: the message is delivered again, and its
/// transaction acknowledges that redelivery and is committed. Returns /metrics once it counts
/// the message delivered.
async fn the_redelivery_is_settled(second: &mut Conn, metrics: &Metrics) -> String {
    let sub = second.subscriptions().await;
    second.deliver(&sub, "ack-2").await;
    let (_, committed) = transaction(second, true).await;
    let (ack, commit) = committed.unwrap();
    assert_eq!(ack.header("id"), Some("ack-2"), "the redelivery is what is acknowledged");
    second.receipt(&commit).await;
    wait_for(metrics, "bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 1").await
}

/// Refuses `send` as a broker refuses a destination the bridge may not write to: an ERROR
/// naming the SEND's receipt.
async fn refuse(conn: &mut Conn, send: &Frame) {
    let error = Frame::new(Command::Error)
        .with("message", "Not authorized to write to queue://fake.civ.Weather")
        .with("receipt-id", send.header("receipt").expect("the SEND asked for a receipt"));
    conn.send(error).await;
}

#[tokio::test(start_paused = true)]
async fn a_commit_never_confirmed_resets_the_connection_and_the_redelivery_is_settled() {
    let (listener, metrics, shutdown, bridge) = start().await;

    let mut first = Conn::accept(&listener).await;
    let sub = first.subscriptions().await;
    first.deliver(&sub, "ack-1").await;
    let (send, committed) = transaction(&mut first, true).await;
    assert_eq!(send.header("destination"), Some("/queue/fake.civ.Weather"));
    let (_, commit) = committed.unwrap();
    // No RECEIPT for the COMMIT: the bridge must not leave the message unacknowledged on a
    // live connection. It gives it back by closing the connection.
    assert!(commit.header("receipt").is_some());
    while first.next().await.is_some() {}

    let mut second = Conn::accept(&listener).await;
    let metrics_text = the_redelivery_is_settled(&mut second, &metrics).await;
    assert!(metrics_text.contains("bridge_batch_failures_total 1"), "{metrics_text}");
    assert!(metrics_text.contains("bridge_unsettled_total 0"), "{metrics_text}");
    stop(second, shutdown, bridge).await;
}

#[tokio::test(start_paused = true)]
async fn a_send_the_broker_refuses_is_tried_alone_then_dead_lettered_with_the_broker_reason() {
    let (listener, metrics, shutdown, bridge) = start().await;
    // max_attempts = 2: two refusals, each ending its connection (as STOMP says an ERROR does).
    for attempt in 1..=2 {
        let mut conn = Conn::accept(&listener).await;
        let sub = conn.subscriptions().await;
        conn.deliver(&sub, &format!("ack-{attempt}")).await;
        let (send, _) = transaction(&mut conn, false).await;
        refuse(&mut conn, &send).await;
        while conn.next().await.is_some() {}
    }
    let mut conn = Conn::accept(&listener).await;
    let sub = conn.subscriptions().await;
    conn.deliver(&sub, "ack-3").await;
    let (send, committed) = transaction(&mut conn, true).await;
    assert_eq!(send.header("destination"), Some(DEAD), "the third time it is dead-lettered");
    assert_eq!(send.header("bridge-error-kind"), Some("broker"));
    let reason = send.header("bridge-error").unwrap_or_default();
    assert!(reason.contains("Not authorized") && reason.contains("2 times"), "{reason}");
    assert!(String::from_utf8_lossy(&send.body).contains("Weather in Paris?"), "the body is unchanged");
    let (ack, commit) = committed.unwrap();
    assert_eq!(ack.header("id"), Some("ack-3"));
    conn.receipt(&commit).await;
    wait_for(&metrics, "bridge_dead_letters_total{kind=\"broker\"} 1").await;
    stop(conn, shutdown, bridge).await;
}

/// The bridge with heart-beats both ways every second (silence past 3 s is a dead broker).
async fn start_watched() -> (Listener, Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    start_bridge("settle-watched", |port| {
        weather_config(port, [1000, 1000], delivery(DeliveryMode::Transaction))
    })
    .await
}

async fn accept_watched(listener: &Listener) -> Conn {
    let connected = Frame::new(Command::Connected).with("version", "1.2").with("heart-beat", "1000,1000");
    Conn::accept_with(listener, connected).await
}

/// Plays a broker that is alive but confirms nothing, for `how_long`: a heart-beat every
/// 250 ms. Fails if the bridge sends anything but heart-beats or closes the connection.
async fn alive_but_silent(conn: &mut Conn, how_long: Duration) {
    let end = tokio::time::Instant::now() + how_long;
    let mut beat = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(end) => return,
            _ = beat.tick() => conn.write_raw(b"\n").await,
            read = conn.0.next() => match read {
                Some(Ok(Wire::Heartbeat)) => {}
                other => panic!("the bridge gave up on a live connection: {other:?}"),
            },
        }
    }
}

/// A broker that holds a COMMIT back (ActiveMQ's producer flow control does, until a consumer
/// makes room) while it heart-beats: the bridge keeps the connection, reports the stall, and
/// settles the batch once the receipt comes; nothing is redelivered.
#[tokio::test(start_paused = true)]
async fn a_commit_held_on_a_live_connection_is_a_reported_stall_not_a_reset() {
    let (listener, metrics, shutdown, bridge) = start_watched().await;
    metrics.traces.install(&Default::default()).unwrap();
    let mut conn = accept_watched(&listener).await;
    let sub = conn.subscriptions().await;
    conn.deliver(&sub, "ack-1").await;
    let (_, committed) = transaction(&mut conn, true).await;
    let (_, commit) = committed.unwrap();
    assert!(metrics.is_ready(), "{:?}", metrics.readiness());

    // Five receipt timeouts (400 ms) without the COMMIT's receipt.
    alive_but_silent(&mut conn, Duration::from_secs(2)).await;
    let why = metrics.readiness().expect_err("not ready while stalled");
    assert!(why.starts_with("publishing stalled: no confirmation from the broker for "), "{why}");
    assert!(metrics.stalled_for().is_some_and(|d| d >= Duration::from_millis(1500)), "{why}");
    let text = metrics.render();
    for line in
        ["bridge_publish_stalls_total 1", "bridge_reconnects_total 0", "bridge_batch_failures_total 0"]
    {
        assert!(text.lines().any(|l| l == line), "{line} missing in:\n{text}");
    }

    conn.receipt(&commit).await;
    let text =
        wait_for(&metrics, "bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 1")
            .await;
    assert!(text.contains("bridge_batch_failures_total 0"), "{text}");
    assert!(text.contains("bridge_publish_stalled_seconds 0\n"), "{text}");
    assert!(metrics.is_ready(), "ready again: {:?}", metrics.readiness());
    // The message's conversation says what held it (a span event with OTLP on).
    let page = metrics.traces.conversations().unwrap().to_json();
    let events = &page["conversations"][0]["events"];
    assert_eq!(events[0]["kind"], "hold", "{page}");
    assert!(events[0]["detail"].as_str().unwrap().contains("(a publishing stall)"), "{page}");
    assert_eq!(events[1]["kind"], "ask", "{page}");
    stop(conn, shutdown, bridge).await;
}

/// The same held COMMIT, then the broker falls silent: a stall does not hide a dead
/// connection. The heart-beat watch ends it; the message is redelivered and settled.
#[tokio::test(start_paused = true)]
async fn a_stalled_connection_whose_heart_beats_stop_is_replaced_and_the_redelivery_settled() {
    let (listener, metrics, shutdown, bridge) = start_watched().await;
    let mut first = accept_watched(&listener).await;
    let sub = first.subscriptions().await;
    first.deliver(&sub, "ack-1").await;
    let (_, committed) = transaction(&mut first, true).await;
    assert!(committed.is_some());
    alive_but_silent(&mut first, Duration::from_secs(1)).await;
    assert!(metrics.stalled_for().is_some(), "stalled");

    // Silence: past 3 s (twice the promised second, plus one) the bridge gives up on it.
    let silent = tokio::time::Instant::now();
    assert_eq!(first.until_closed_settling_nothing().await, Vec::<Command>::new());
    let closed_after = silent.elapsed();
    assert!(closed_after < Duration::from_secs(5), "closed {closed_after:?} into the silence");

    let mut second = accept_watched(&listener).await;
    let text = the_redelivery_is_settled(&mut second, &metrics).await;
    for line in
        ["bridge_batch_failures_total 1", "bridge_reconnects_total 1", "bridge_publish_stalled_seconds 0"]
    {
        assert!(text.lines().any(|l| l == line), "{line} missing in:\n{text}");
    }
    assert!(metrics.is_ready(), "{:?}", metrics.readiness());
    stop(second, shutdown, bridge).await;
}

// The default mode, `confirm`: a receipt on every SEND, on a publishing connection of its own,
// then the ACK on the consuming connection, outside any transaction.

async fn start_confirming() -> (Listener, Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    start_bridge("settle-confirm", |port| {
        weather_config(port, [0, 0], DeliveryConfig { max_attempts: 2, ..delivery(DeliveryMode::Auto) })
    })
    .await
}

/// The bridge's confirmed SEND for one message, on the publishing connection; if `confirm`,
/// the broker's receipt and then the ACK the bridge writes for it on the consuming one.
/// Returns (SEND, ACK).
async fn confirmed_send(pair: &mut Pair, confirm: bool) -> (Frame, Option<Frame>) {
    let send = pair.publishing.expect(Command::Send).await;
    assert_eq!(send.header("transaction"), None, "no transaction in confirm mode");
    assert!(send.header("receipt").is_some(), "every SEND asks for a receipt");
    if !confirm {
        return (send, None);
    }
    pair.publishing.receipt(&send).await;
    let ack = pair.consuming.expect(Command::Ack).await;
    assert_eq!(ack.header("transaction"), None);
    (send, Some(ack))
}

/// The publishing connection ends with nothing settled; the consuming one stays up, holding
/// the message unacknowledged: it is published again on the next publishing connection, never
/// acknowledged blind, and never given back to the broker (on Artemis, resetting the consuming
/// connection for that stranded messages "delivering" to consumers that no longer existed).
async fn publishing_closed_settling_nothing(pair: &mut Pair) {
    assert_eq!(pair.publishing.until_closed_settling_nothing().await, Vec::<Command>::new());
}

#[tokio::test(start_paused = true)]
async fn in_confirm_mode_a_send_never_confirmed_is_not_acknowledged_and_is_published_again() {
    let (listener, metrics, shutdown, bridge) = start_confirming().await;
    let (mut pair, sub) = Pair::accept(&listener).await;
    pair.consuming.deliver(&sub, "ack-1").await;
    let (send, _) = confirmed_send(&mut pair, false).await;
    assert_eq!(send.header("destination"), Some("/queue/fake.civ.Weather"));
    // No RECEIPT and no heart-beats: the bridge closes the publishing connection; no ACK.
    publishing_closed_settling_nothing(&mut pair).await;
    pair.publishing = Conn::accept(&listener).await;
    let (again, ack) = confirmed_send(&mut pair, true).await;
    assert_eq!(again.body, send.body, "the same SEND, from the frames the bridge kept");
    assert_eq!(again.header("_AMQ_DUPL_ID"), send.header("_AMQ_DUPL_ID"), "with the same duplicate id");
    assert_eq!(
        ack.unwrap().header("id"),
        Some("ack-1"),
        "acknowledged on the consuming connection it came on"
    );
    let text =
        wait_for(&metrics, "bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 1")
            .await;
    for line in ["bridge_unsettled_total 0", "bridge_reconnects_total 1"] {
        assert!(text.lines().any(|l| l == line), "{line} missing in:\n{text}");
    }
    // The batch that timed out, and at most one started again before the engine heard that
    // the publishing connection was down.
    let failures = text.lines().find_map(|l| l.strip_prefix("bridge_batch_failures_total "));
    assert!(matches!(failures, Some("1" | "2")), "{text}");
    stop_pair(pair, shutdown, bridge).await;
}

#[tokio::test(start_paused = true)]
async fn in_confirm_mode_a_send_the_broker_refuses_is_dead_lettered_with_the_broker_reason() {
    let (listener, metrics, shutdown, bridge) = start_confirming().await;
    let (mut pair, sub) = Pair::accept(&listener).await;
    pair.consuming.deliver(&sub, "ack-1").await;
    for attempt in 1..=2 {
        if attempt > 1 {
            pair.publishing = Conn::accept(&listener).await;
        }
        let (send, _) = confirmed_send(&mut pair, false).await;
        assert_eq!(send.header("destination"), Some("/queue/fake.civ.Weather"), "attempt {attempt}");
        refuse(&mut pair.publishing, &send).await;
        publishing_closed_settling_nothing(&mut pair).await;
    }
    pair.publishing = Conn::accept(&listener).await;
    let (send, ack) = confirmed_send(&mut pair, true).await;
    assert_eq!(send.header("destination"), Some(DEAD), "the third time it is dead-lettered");
    assert_eq!(send.header("bridge-error-kind"), Some("broker"));
    assert!(send.header("bridge-error").unwrap_or_default().contains("Not authorized"));
    assert_eq!(ack.unwrap().header("id"), Some("ack-1"));
    wait_for(&metrics, "bridge_dead_letters_total{kind=\"broker\"} 1").await;
    stop_pair(pair, shutdown, bridge).await;
}

#[tokio::test(start_paused = true)]
async fn the_asks_of_rolled_back_batches_are_forgotten_and_only_the_redeliveries_wait_for_answers() {
    // One batch of one at a time: the second request waits, already asked, behind the first;
    // when the first fails it is started on the broken connection and rolled back too.
    let (listener, metrics, shutdown, bridge) = start_bridge("settle-forget", |port| {
        let delivery =
            DeliveryConfig { batch_max: 1, batches_in_flight: 1, ..delivery(DeliveryMode::Transaction) };
        weather_config(port, [0, 0], delivery)
    })
    .await;
    let mut first = Conn::accept(&listener).await;
    let sub = first.subscriptions().await;
    first.deliver(&sub, "ack-1").await;
    first.deliver(&sub, "ack-2").await;
    let (_, confirmed) = transaction(&mut first, false).await;
    assert!(confirmed.is_none());
    first.until_closed_settling_nothing().await;

    // Both come again; each is published once and settled. The table holds the asks of what
    // was published (the two redeliveries), not those of the attempts rolled back.
    let mut second = Conn::accept(&listener).await;
    let sub = second.subscriptions().await;
    for ack in ["ack-3", "ack-4"] {
        second.deliver(&sub, ack).await;
    }
    for ack in ["ack-3", "ack-4"] {
        let (_, committed) = transaction(&mut second, true).await;
        let (acked, commit) = committed.unwrap();
        assert_eq!(acked.header("id"), Some(ack));
        second.receipt(&commit).await;
    }
    let text =
        wait_for(&metrics, "bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 2")
            .await;
    let pending = text.lines().find(|l| l.starts_with("bridge_pending_asks ")).unwrap_or_default();
    assert_eq!(pending, "bridge_pending_asks 2", "in:\n{text}");
    stop(second, shutdown, bridge).await;
}

/// Delivers `body` on `subscription` (its destination `destination`), acknowledged by `ack`.
async fn deliver_body(conn: &mut Conn, (subscription, destination): (&str, &str), ack: &str, body: &str) {
    let msg = Frame::new(Command::Message)
        .with("subscription", subscription)
        .with("message-id", format!("ID:fake-{ack}"))
        .with("ack", ack)
        .with("destination", destination)
        .with_body(body.to_owned());
    conn.send(msg).await;
}

#[tokio::test(start_paused = true)]
async fn an_answer_given_back_before_it_was_published_answers_when_it_comes_again_and_only_then() {
    const INGRESS: &str = "/queue/fake.civ.ingress";
    let (listener, metrics, shutdown, bridge) = start_bridge("settle-answer", |port| {
        let delivery =
            DeliveryConfig { batch_max: 1, batches_in_flight: 1, ..delivery(DeliveryMode::Transaction) };
        weather_config(port, [0, 0], delivery)
    })
    .await;
    let mut first = Conn::accept(&listener).await;
    let ids = first.subscribed(None).await;
    first.deliver(&ids[common::fake::REQUEST], "ack-1").await;
    let (ask, committed) = transaction(&mut first, true).await;
    first.receipt(&committed.expect("the ask is committed").1).await;
    let asked: serde_json::Value = serde_json::from_slice(&ask.body).expect("a Civitas message");
    let answer = serde_json::json!({"type": "reply", "sender": "Weather", "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"message": "sunny"}})
    .to_string();

    // The answer's SEND is never confirmed: rolled back, the message given back to the broker.
    deliver_body(&mut first, (&ids[INGRESS], INGRESS), "ack-2", &answer).await;
    let (send, confirmed) = transaction(&mut first, false).await;
    assert_eq!((send.header("destination"), confirmed.is_none()), (Some("/queue/response/Asker"), true));
    first.until_closed_settling_nothing().await;

    // Its redelivery answers (it is not a repeat: nothing was published); a copy after that is.
    let mut second = Conn::accept(&listener).await;
    let ids = second.subscribed(None).await;
    deliver_body(&mut second, (&ids[INGRESS], INGRESS), "ack-3", &answer).await;
    let (send, committed) = transaction(&mut second, true).await;
    assert_eq!(send.header("destination"), Some("/queue/response/Asker"), "the redelivery answers");
    second.receipt(&committed.expect("committed").1).await;
    deliver_body(&mut second, (&ids[INGRESS], INGRESS), "ack-4", &answer).await;
    let begin = second.expect(Command::Begin).await;
    let ack = second.expect(Command::Ack).await;
    assert_eq!(ack.header("id"), Some("ack-4"), "the copy is acknowledged, nothing published: {begin:?}");
    let commit = second.expect(Command::Commit).await;
    second.receipt(&commit).await;
    let text = wait_for(&metrics, "bridge_repeated_answers_total 1").await;
    assert!(
        text.contains("bridge_messages_total{route=\"civitas->wiseagents\",outcome=\"delivered\"} 1"),
        "{text}"
    );
    stop(second, shutdown, bridge).await;
}
