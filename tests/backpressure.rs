//! Backpressure (issue 12), against ActiveMQ Classic and Artemis: the inbox of a proxied
//! Civitas agent is a queue `backpressure.*`, whose policy (scripts/brokers/activemq.xml:
//! producer flow control, 1 MB in memory; scripts/brokers/artemis.properties: max-size-bytes
//! 1 MB, address-full-policy BLOCK) makes the broker stop confirming what the bridge sends to
//! it once nobody consumes it, until a consumer makes room. The bridge must hold there, say so
//! on `/readyz`, and carry on by itself when a consumer comes. Artemis's BLOCK does not hold a
//! STOMP producer back, and its FAIL refuses SENDs: the last two tests say what happens there.

#[macro_use]
mod common;

use common::bridge::{BridgeProcess, Names, config, free_port, proxied};
use common::{Broker, next_message};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use stomp_agent_bridge::stomp::{AckMode, Command, Events, Frame, Message, Subscription};

/// Requests sent: ActiveMQ takes about 660 of the bridge's Civitas messages into the 1 MB
/// queue before it blocks, and the bridge holds at most `IN_FLIGHT` more.
const N: usize = 3000;
/// `delivery.in_flight` of `config`: the bridge's bound.
const IN_FLIGHT: f64 = 64.0;
/// How long the stalled bridge is watched.
const HOLD: Duration = Duration::from_secs(20);
/// How much the bridge's resident memory may grow over `HOLD` while it holds.
const RSS_TOLERANCE_KIB: u64 = 1024;
/// `delivery.receipt_timeout_ms` here, short on purpose: past it a SEND the broker holds back
/// is reported as a stall (its connection heart-beats, so a late receipt never resets it).
/// The bridge's SUBSCRIBEs wait for their receipts as long, at its start.
const RECEIPT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long past the receipt timeout a stall lasts before the test takes it for the full inbox.
const HELD_FOR: Duration = Duration::from_secs(3);
/// `delivery.shutdown_timeout_ms` here: how long a stopping bridge waits for the batches the
/// broker holds back (they never settle while nobody consumes).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// What a loaded machine adds to a bound made of the bridge's own timeouts: its timers and the
/// process's exit each wait for a core.
const SCHEDULING_SLACK: Duration = Duration::from_secs(3);

/// A value of `/metrics` without labels.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

/// The sum of `bridge_messages_total` for one outcome.
fn messages(text: &str, outcome: &str) -> f64 {
    let outcome = format!("outcome=\"{outcome}\"}} ");
    text.lines()
        .filter(|l| l.starts_with("bridge_messages_total{"))
        .filter_map(|l| l.split_once(&outcome).and_then(|(_, n)| n.parse::<f64>().ok()))
        .sum()
}

/// Resident memory of a process, KiB (`VmRSS` of `/proc/<pid>/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the bridge runs");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of kB")
}

/// The Wise Agents request `msg <i>`, as Wise Agents writes it.
fn request(i: usize) -> String {
    common::wise_query(&format!("msg {i}"), "Producer", "default").to_yaml()
}

/// Polls `/readyz` until `want(status, body)` holds, failing after `secs`; returns the body.
fn wait_readyz(bridge: &BridgeProcess, secs: u64, want: impl Fn(u16, &str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (code, body) = bridge.http_get("/readyz");
        if want(code, &body) {
            return body;
        }
        assert!(Instant::now() < deadline, "/readyz not as wanted within {secs} s: {code} {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A bridge for one proxied Civitas agent whose inbox is `/queue/<family>.<uid>.<agent>`, and
/// `n` persistent requests sent to it by a Wise Agents producer; returns once all are sent.
async fn bridge_into(broker: Broker, family: &str, n: usize) -> (BridgeProcess, String) {
    let names = Names::new(broker);
    let civ = names.agent("Stalled");
    let port = free_port();
    let inbox = format!("/queue/{family}.{}.{civ}", names.uid);
    let mut config = config(broker, &names, vec![proxied(&civ, "civitas")], port);
    let civitas = config.protocols.civitas.as_mut().expect("[protocols.civitas]");
    civitas.inbox = format!("/queue/{family}.{}.{{agent}}", names.uid);
    config.delivery.receipt_timeout_ms = RECEIPT_TIMEOUT.as_millis() as u64;
    config.delivery.shutdown_timeout_ms = SHUTDOWN_TIMEOUT.as_millis() as u64;
    assert_eq!(config.delivery.in_flight as f64, IN_FLIGHT);
    let bridge = BridgeProcess::start(&config, port, &names.uid);

    let (producer, _) = broker.connect().await;
    for i in 0..n {
        let frame = Frame::new(Command::Send)
            .with("destination", names.request(&civ))
            .with("persistent", "true")
            .with_body(request(i));
        let sent = if i + 1 == n { producer.send_confirmed(frame).await } else { producer.send(frame).await };
        sent.expect("the producer sends");
    }
    (bridge, inbox)
}

/// [`bridge_into`] a `backpressure.*` inbox; returns once the bridge is held at the full inbox,
/// with the inbox and how long after the last send that was.
async fn stalled_bridge(broker: Broker) -> (BridgeProcess, String, Duration) {
    let (bridge, inbox) = bridge_into(broker, "backpressure", N).await;
    // Nobody consumes the inbox: the broker takes what fits in 1 MB, then confirms nothing.
    let sent = Instant::now();
    let deadline = sent + Duration::from_secs(60);
    while !held_at_the_full_inbox(&bridge) {
        assert!(Instant::now() < deadline, "not held within 60 s:\n{}", bridge.http_get("/metrics").1);
        std::thread::sleep(Duration::from_millis(50));
    }
    (bridge, inbox, sent.elapsed())
}

/// Whether the bridge is held by the full inbox, not by a busy broker's late receipt (a stall
/// too, which ends by itself: one of 2 s on a loaded machine once made this test watch a bridge
/// that went on): it says it is stalled, holds its whole bound, and has waited well past the
/// receipt timeout.
fn held_at_the_full_inbox(bridge: &BridgeProcess) -> bool {
    let (code, ready) = bridge.http_get("/readyz");
    let (_, m) = bridge.http_get("/metrics");
    code == 503
        && ready.contains("publishing stalled")
        && metric(&m, "bridge_unacknowledged") == IN_FLIGHT
        && metric(&m, "bridge_publish_stalled_seconds") >= (RECEIPT_TIMEOUT + HELD_FOR).as_secs_f64()
}

/// Consumes `inbox` until every `msg <i>` came; how often each came.
async fn consume_all(broker: Broker, inbox: &str, mut first: impl FnMut()) -> BTreeMap<String, usize> {
    let (consumer, mut events) = broker.connect().await;
    consumer.subscribe(Subscription::new(inbox, AckMode::Auto)).await.unwrap();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    while seen.len() < N {
        let m = next_message(&mut events, 60).await;
        first();
        let v: serde_json::Value = serde_json::from_slice(m.body()).expect("Civitas JSON");
        let text = v["payload"]["message"].as_str().expect("the request's text").to_owned();
        *seen.entry(text).or_default() += 1;
    }
    seen
}

fn every_request_once() -> BTreeMap<String, usize> {
    (0..N).map(|i| (format!("msg {i}"), 1)).collect()
}

async fn a_destination_nobody_consumes_holds_the_bridge_at_its_bound_and_a_consumer_resumes_it(
    broker: Broker,
) {
    let (bridge, inbox, stalled_after) = stalled_bridge(broker).await;
    let (_, first) = bridge.http_get("/metrics");
    let rss_first = rss_kib(bridge.pid());
    let watch = Instant::now();
    let mut polls = 0;
    while watch.elapsed() < HOLD {
        let (code, ready) = bridge.http_get("/readyz");
        let (_, m) = bridge.http_get("/metrics");
        assert_eq!(code, 503, "not ready while stalled: {ready}");
        assert!(
            ready.starts_with("not ready: publishing stalled: no confirmation from the broker for "),
            "{ready}"
        );
        assert!(metric(&m, "bridge_unacknowledged") <= IN_FLIGHT, "over the in-flight bound:\n{m}");
        assert!(metric(&m, "bridge_in_flight") <= IN_FLIGHT, "{m}");
        assert_eq!(metric(&m, "bridge_reconnects_total"), 0.0, "reconnected while stalled:\n{m}");
        assert_eq!(metric(&m, "bridge_batch_failures_total"), 0.0, "gave a batch up:\n{m}");
        assert_eq!(metric(&m, "bridge_ready"), 0.0);
        polls += 1;
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(bridge.http_get("/healthz").0, 200, "stalled is not dead");
    let (_, last) = bridge.http_get("/metrics");
    let rss_last = rss_kib(bridge.pid());
    let held = metric(&last, "bridge_unacknowledged");
    assert!(held > 0.0, "the bridge holds messages it could not publish:\n{last}");
    assert_eq!(held, metric(&first, "bridge_unacknowledged"), "it takes no more while it holds");
    let delivered_while_stalled = messages(&last, "delivered");
    assert_eq!(delivered_while_stalled, messages(&first, "delivered"), "nothing confirmed while stalled");
    assert!((delivered_while_stalled as usize) < N);
    let stalled_for = metric(&last, "bridge_publish_stalled_seconds");
    assert!(
        stalled_for >= metric(&first, "bridge_publish_stalled_seconds") + HOLD.as_secs_f64() - 1.0,
        "the stall is timed:\n{last}"
    );
    assert!(
        rss_last <= rss_first + RSS_TOLERANCE_KIB,
        "memory grew while stalled: {rss_first} KiB, then {rss_last} KiB {HOLD:?} later"
    );

    // A consumer comes: every message arrives, once.
    let resumed = Instant::now();
    let http_port = bridge.http_port;
    let ready_again = std::thread::spawn(move || {
        let deadline = resumed + Duration::from_secs(60);
        while common::bridge::http_get(http_port, "/readyz").0 != 200 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        resumed.elapsed()
    });
    let mut first_in = None;
    let seen = consume_all(broker, &inbox, || {
        first_in.get_or_insert_with(|| resumed.elapsed());
    })
    .await;
    let all_in = resumed.elapsed();
    assert_eq!(seen, every_request_once(), "every request once, by its text");
    let ready_in = ready_again.join().unwrap();
    // Every request is in, but the broker's last receipts may still be on their way (a late one
    // is a stall for as long): waited for, as a probe would.
    wait_readyz(&bridge, 30, |code, _| code == 200);
    let first_in = first_in.unwrap();
    bridge.wait_metric(
        |l| l == format!("bridge_messages_total{{route=\"wiseagents->civitas\",outcome=\"delivered\"}} {N}"),
        30,
    );
    let (_, m) = bridge.http_get("/metrics");
    for (name, want) in [
        ("bridge_reconnects_total", 0.0),
        ("bridge_batch_failures_total", 0.0),
        ("bridge_unsettled_total", 0.0),
        ("bridge_unacknowledged", 0.0),
        ("bridge_in_flight", 0.0),
        ("bridge_publish_stalled_seconds", 0.0),
        ("bridge_ready", 1.0),
    ] {
        assert_eq!(metric(&m, name), want, "{name}:\n{m}");
    }
    assert!(metric(&m, "bridge_publish_stalls_total") >= 1.0, "{m}");
    assert_eq!(messages(&m, "dead_lettered") + messages(&m, "retried"), 0.0, "{m}");
    assert!(!m.contains("bridge_dead_letters_total{"), "nothing dead-lettered:\n{m}");
    eprintln!(
        "backpressure on {}: {delivered_while_stalled} of {N} delivered before the stall ({stalled_after:.1?} after \
         the last send); held {held} unacknowledged (bound {IN_FLIGHT}) for {HOLD:?}, {polls} polls, \
         0 reconnects; RSS {rss_first} KiB then {rss_last} KiB; a consumer: the first message in {first_in:.2?}, \
         ready again in {ready_in:.2?}, all {N} in {all_in:.2?}, no duplicate",
        broker.name()
    );
}

/// What an operator may well do to a bridge that is not ready: restart it. A stalled bridge
/// stops on SIGTERM within its shutdown bounds, and the next one delivers everything (what the
/// stopped one held possibly twice).
async fn a_stalled_bridge_stops_on_sigterm_and_the_next_one_delivers_everything(broker: Broker) {
    let (bridge, inbox, _) = stalled_bridge(broker).await;
    let (config, http_port) = (bridge.config.clone(), bridge.http_port);
    let asked = Instant::now();
    let status = bridge.terminate(60);
    let stopped_in = asked.elapsed();
    assert!(status.success(), "exit status {status}");
    // SHUTDOWN_TIMEOUT for the batches under way, then at most RECEIPT_TIMEOUT for each
    // connection's DISCONNECT (7 s measured: one waits it out), and no UNSUBSCRIBE waiting for a
    // receipt that cannot come: five of those would add 5 × RECEIPT_TIMEOUT, past the bound even
    // with its slack for a loaded machine.
    let bound = SHUTDOWN_TIMEOUT + 2 * RECEIPT_TIMEOUT + SCHEDULING_SLACK;
    assert!(stopped_in < bound, "stopped in {stopped_in:?}, bound {bound:?}");
    let next = BridgeProcess::start_with(config, http_port);
    let seen = consume_all(broker, &inbox, || {}).await;
    assert!(seen.keys().eq(every_request_once().keys()), "every request, by its text");
    // In confirm mode (the default) the SENDs the broker was holding back when the bridge
    // stopped are taken once a consumer makes room, and their sources, never acknowledged,
    // are published again by the next bridge: duplicates, at most what the stopped one held.
    let twice: Vec<String> = seen.iter().filter(|(_, n)| **n > 1).map(|(t, n)| format!("{t} x{n}")).collect();
    assert!(twice.len() <= IN_FLIGHT as usize, "more duplicates than the bridge held: {twice:?}");
    wait_readyz(&next, 30, |code, _| code == 200);
    eprintln!(
        "backpressure on {}: SIGTERM while stalled: exited 0 in {stopped_in:.1?}; the next bridge delivered all {N}, \
         {} of them twice: {twice:?}",
        broker.name(),
        twice.len()
    );
}

/// Artemis's `address-full-policy` BLOCK does not hold a STOMP producer back (STOMP has no
/// way to say "wait"; Artemis blocks Core and AMQP producers only): the address takes every
/// message past its `max-size-bytes`, the bridge delivers all of them at once and never stalls.
/// On Artemis, what holds the bridge back is FAIL (below) or nothing; PAGE, Artemis's default,
/// moves the excess to disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_artemis_an_address_at_max_size_with_block_takes_every_message_and_nothing_stalls() {
    let broker = Broker::Artemis;
    let (bridge, inbox) = bridge_into(broker, "backpressure", N).await;
    let delivered =
        format!("bridge_messages_total{{route=\"wiseagents->civitas\",outcome=\"delivered\"}} {N}");
    bridge.wait_metric(|l| l == delivered, 60);
    let (code, ready) = bridge.http_get("/readyz");
    assert_eq!(code, 200, "never stalled: {ready}");
    let (_, m) = bridge.http_get("/metrics");
    assert_eq!(metric(&m, "bridge_publish_stalls_total"), 0.0, "{m}");
    assert_eq!(metric(&m, "bridge_reconnects_total"), 0.0, "{m}");
    let seen = consume_all(broker, &inbox, || {}).await;
    assert_eq!(seen, every_request_once(), "every request once, by its text");
    eprintln!(
        "backpressure on artemis (BLOCK, 1 MB): all {N} taken past max-size-bytes, no stall, no reconnect"
    );
}

/// The `_message` of a Wise Agents body (the dead-letter queue has the request unchanged).
fn wise_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text.lines().find_map(|l| l.strip_prefix("_message: ")).expect("a Wise Agents body");
    line.to_owned()
}

/// The `n` messages the bridge counted as sent to `events`' destination, each waited for as a
/// broker's answer on a busy machine, then any that follow within 2 s: a short look for copies
/// that should not exist (on a loaded machine a late one may pass by; it never fails a test).
async fn counted_then_more(events: &mut Events, n: usize) -> Vec<Message> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(next_message(events, 30).await);
    }
    while let Ok(Some(m)) = tokio::time::timeout(Duration::from_secs(2), events.next_message()).await {
        all.push(m);
    }
    all
}

/// Requests sent into an Artemis address with FAIL (64 KiB: 29 of the bridge's Civitas messages
/// fit). Each refusal closes the publishing connection; the bridge publishes the refused
/// message again on the next one, from the frames it kept, and dead-letters it after
/// `max_attempts`.
const FAIL_N: usize = 40;

/// Artemis's FAIL refuses a SEND to a full address with an ERROR and closes the connection:
/// the bridge reconnects, publishes the refused message again, and after `max_attempts`
/// dead-letters it with the broker's reason (kind `broker`). Nothing is lost: each request is in
/// the inbox or in the dead-letter queue, once. The consuming connection is never reset for
/// this: when it was (each refusal made the broker redeliver), Artemis 2.37 kept the last 3 of
/// 40 requests "delivering" to a consumer that no longer existed, and the test timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_artemis_an_address_at_max_size_with_fail_dead_letters_the_refused_with_the_brokers_reason() {
    let broker = Broker::Artemis;
    let (bridge, inbox) = bridge_into(broker, "backpressure.fail", FAIL_N).await;
    let dead_letter = std::fs::read_to_string(&bridge.config).unwrap();
    let dead_letter = dead_letter
        .lines()
        .find_map(|l| l.strip_prefix("dead_letter = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("the config names its dead-letter queue")
        .to_owned();
    let (dead_client, mut dead) = broker.connect().await;
    dead_client.subscribe(Subscription::new(&dead_letter, AckMode::Auto)).await.unwrap();
    let (consumer, mut events) = broker.connect().await;
    let deadline = Instant::now() + Duration::from_secs(150);
    let (delivered, dead_lettered) = loop {
        let (_, m) = bridge.http_get("/metrics");
        let (delivered, dead_lettered) = (messages(&m, "delivered"), messages(&m, "dead_lettered"));
        if delivered + dead_lettered >= FAIL_N as f64 {
            break (delivered as usize, dead_lettered as usize);
        }
        assert!(Instant::now() < deadline, "not all settled in time:\n{m}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    for msg in counted_then_more(&mut dead, dead_lettered).await {
        assert_eq!(msg.header("bridge-error-kind"), Some("broker"), "{:?}", msg.frame.headers);
        let reason = msg.header("bridge-error").unwrap_or_default().to_owned();
        assert!(reason.contains("AMQ"), "the broker's own reason: {reason}");
        *refused.entry(wise_text(msg.body())).or_default() += 1;
    }
    consumer.subscribe(Subscription::new(&inbox, AckMode::Auto)).await.unwrap();
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for m in counted_then_more(&mut events, delivered).await {
        let v: serde_json::Value = serde_json::from_slice(m.body()).expect("Civitas JSON");
        *taken.entry(v["payload"]["message"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert!(taken.values().all(|n| *n == 1), "no request delivered twice: {taken:?}");
    for i in 0..FAIL_N {
        let text = format!("msg {i}");
        assert!(
            taken.contains_key(&text) || refused.contains_key(&text),
            "{text} lost: {taken:?} {refused:?}"
        );
    }
    let delivered = taken.len();
    assert!(delivered > 0 && !refused.is_empty(), "{delivered} delivered, {} refused", refused.len());
    eprintln!(
        "backpressure on artemis (FAIL, 64 KiB): {delivered} of {FAIL_N} delivered, {} dead-lettered with the broker's reason",
        refused.len()
    );
}

mod activemq {
    on!(ActiveMq:
        a_destination_nobody_consumes_holds_the_bridge_at_its_bound_and_a_consumer_resumes_it,
        a_stalled_bridge_stops_on_sigterm_and_the_next_one_delivers_everything,
    );
}
