//! A hostile broker: garbage instead of CONNECTED, absurd heart-beats, a RECEIPT for a frame
//! never sent, an oversized frame, endless headers, garbage mid-stream, an ERROR mid-stream,
//! then silence. The bridge drops each connection cleanly (never settling on a broken one),
//! reconnects, and the message caught in the middle is redelivered and delivered once. In
//! memory, under tokio's paused clock: the silence and the backoffs take no real time.

mod common;

use common::fake::{Conn, REQUEST, start_in_memory, stop, wait_for, weather_config};
use std::time::Duration;
use stomp_agent_bridge::config::{Config, DeliveryConfig, DeliveryMode};
use stomp_agent_bridge::stomp::{Command, Frame};
use tokio::time::timeout;

const INBOX: &str = "/queue/fake.civ.Weather";

fn config(port: u16) -> Config {
    let delivery =
        DeliveryConfig { receipt_timeout_ms: 60000, mode: DeliveryMode::Transaction, ..Default::default() };
    weather_config(port, [1000, 1000], delivery)
}

fn connected(heart_beat: &str) -> Frame {
    Frame::new(Command::Connected).with("version", "1.2").with("heart-beat", heart_beat)
}

#[tokio::test(start_paused = true)]
async fn a_hostile_broker_costs_connections_never_a_message() {
    let (listener, metrics, shutdown, bridge) = start_in_memory("hostile-broker", config).await;

    // Garbage where CONNECTED belongs: the first connection fails, the bridge tries again.
    let mut conn = Conn::accept_raw(&listener).await;
    conn.write_raw(b"\x01\x02HELLO? NOT STOMP\n\n\0").await;
    conn.until_closed_settling_nothing().await;

    // Heart-beats of 2^64-1 ms each way; a message arrives and its transaction starts; a
    // RECEIPT for a frame never sent is ignored; then a frame claiming 100 GB.
    let mut conn = Conn::accept_with(&listener, connected("18446744073709551615,18446744073709551615")).await;
    let request = conn.subscriptions().await;
    conn.deliver(&request, "ack-1").await;
    assert_eq!(conn.expect(Command::Begin).await.command, Command::Begin);
    let send = conn.expect(Command::Send).await;
    assert_eq!(send.header("destination"), Some(INBOX));
    conn.send(Frame::new(Command::Receipt).with("receipt-id", "never-asked-for")).await;
    conn.write_raw(b"MESSAGE\ncontent-length:100000000000\ndestination:/queue/x\n\n").await;
    conn.until_closed_settling_nothing().await;

    // Endless headers.
    let mut conn = Conn::accept(&listener).await;
    conn.subscriptions().await;
    let endless: String = (0..100_000).map(|i| format!("h{i}:{}\n", "x".repeat(64))).collect();
    conn.write_raw(format!("MESSAGE\ndestination:{REQUEST}\n{endless}").as_bytes()).await;
    conn.until_closed_settling_nothing().await;

    // Garbage mid-stream.
    let mut conn = Conn::accept(&listener).await;
    conn.subscriptions().await;
    conn.write_raw(b"\xff\xfe\x00garbage\n\n\0").await;
    conn.until_closed_settling_nothing().await;

    // An ERROR mid-stream.
    let mut conn = Conn::accept(&listener).await;
    conn.subscriptions().await;
    conn.send(Frame::new(Command::Error).with("message", "boom")).await;
    conn.until_closed_settling_nothing().await;

    // Heart-beats promised every second, then silence: presumed dead after 2 x 1 s + 1 s.
    let mut conn = Conn::accept_with(&listener, connected("1000,1000")).await;
    conn.subscriptions().await;
    let silent = timeout(Duration::from_secs(10), conn.until_closed_settling_nothing()).await;
    assert!(silent.is_ok(), "the bridge noticed the silence");

    // A broker that behaves: the message comes again, and is delivered once.
    let mut conn = Conn::accept(&listener).await;
    let request = conn.subscriptions().await;
    conn.deliver(&request, "ack-2").await;
    conn.expect(Command::Begin).await;
    let send = conn.expect(Command::Send).await;
    assert_eq!(send.header("destination"), Some(INBOX));
    conn.receipt(&send).await;
    let ack = conn.expect(Command::Ack).await;
    assert_eq!(ack.header("id"), Some("ack-2"), "the redelivery is what is acknowledged");
    let commit = conn.expect(Command::Commit).await;
    conn.receipt(&commit).await;

    let text =
        wait_for(&metrics, "bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 1")
            .await;
    let reconnects = text
        .lines()
        .find_map(|l| l.strip_prefix("bridge_reconnects_total "))
        .and_then(|n| n.parse::<u64>().ok())
        .expect("bridge_reconnects_total");
    assert!(reconnects >= 5, "{reconnects} reconnects:\n{text}");
    assert!(!text.contains("bridge_dead_letters_total{"), "nothing dead-lettered:\n{text}");

    stop(conn, shutdown, bridge).await;
}
