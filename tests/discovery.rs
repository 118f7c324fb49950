//! Discovery of the queues of agents named by a glob, against the fake broker (in memory,
//! under tokio's paused clock): each queue is subscribed once, whatever the broker's receipts
//! do, and unsubscribed at the end.

mod common;

use common::fake::{Conn, Pair, start_in_memory, stop_pair, weather_config};
use stomp_agent_bridge::config::{Config, DeliveryConfig};
use stomp_agent_bridge::stomp::{Command, Frame};

const ADVISORY: &str = "/topic/ActiveMQ.Advisory.Queue";

/// The fake broker's configuration with the agents `Civ*` in place of `Weather`.
fn config(port: u16) -> Config {
    // The default receipt timeout (5 s): the clock is paused, so waiting it out takes no time.
    let mut config = weather_config(port, [0, 0], DeliveryConfig::default());
    config.agents[0].name = "Civ*".into();
    config
}

/// ActiveMQ's advisory for a new queue, as `jms-advisory-json` writes it.
async fn announce(conn: &mut Conn, subscription: &str, n: u32, queue: &str) {
    let body =
        format!(r#"{{"DestinationInfo":{{"operationType":0,"destination":{{"physicalName":"{queue}"}}}}}}"#);
    let advisory = Frame::new(Command::Message)
        .with("subscription", subscription)
        .with("message-id", format!("ID:advisory-{n}"))
        .with("destination", ADVISORY)
        .with_body(body);
    conn.send(advisory).await;
}

/// The next SUBSCRIBE (its destination and id), confirmed or not.
async fn subscribed(conn: &mut Conn, confirm: bool) -> (String, String) {
    let sub = conn.expect(Command::Subscribe).await;
    if confirm {
        conn.receipt(&sub).await;
    }
    let header = |name| sub.header(name).unwrap_or_default().to_owned();
    (header("destination"), header("id"))
}

#[tokio::test(start_paused = true)]
async fn a_discovered_queue_whose_receipt_is_late_is_subscribed_once_and_unsubscribed_at_the_end() {
    let (listener, _metrics, shutdown, bridge) = start_in_memory("discovery", config).await;
    let mut conn = Conn::accept(&listener).await;
    // Confirm mode publishes on a connection of its own; nothing is published here.
    let publishing = Conn::accept(&listener).await;
    assert_eq!(subscribed(&mut conn, true).await.0, "/queue/fake.civ.ingress");
    assert_eq!(subscribed(&mut conn, true).await.0, "/queue/response/_bridge", "the bridge's reply name");
    let (advisory, advisory_id) = subscribed(&mut conn, true).await;
    assert_eq!(advisory, ADVISORY);

    announce(&mut conn, &advisory_id, 1, "request/CivScout").await;
    // No RECEIPT: the bridge's wait (`receipt_timeout_ms`) runs out. STOMP 1.2 would have
    // ended the connection with an ERROR had the broker refused the SUBSCRIBE, so it stands.
    let (late, late_id) = subscribed(&mut conn, false).await;
    assert_eq!(late, "/queue/request/CivScout");

    // The broker announces it again (ActiveMQ does, to every new advisory subscriber), then
    // another queue: the next SUBSCRIBE must be the other queue's.
    announce(&mut conn, &advisory_id, 2, "request/CivScout").await;
    announce(&mut conn, &advisory_id, 3, "request/CivOther").await;
    assert_eq!(subscribed(&mut conn, true).await.0, "/queue/request/CivOther", "CivScout once only");

    let stopping = stop_pair(Pair { consuming: conn, publishing }, shutdown, bridge).await;
    let unsubscribed: Vec<&str> = stopping
        .iter()
        .filter(|f| f.command == Command::Unsubscribe)
        .map(|f| f.header("id").unwrap_or_default())
        .collect();
    assert_eq!(stopping.len(), unsubscribed.len() + 1, "UNSUBSCRIBEs, then DISCONNECT: {stopping:?}");
    assert!(unsubscribed.contains(&late_id.as_str()), "the late subscription {late_id} in {unsubscribed:?}");
    assert_eq!(unsubscribed.len(), 5, "ingress, _bridge, advisory, CivScout, CivOther: {unsubscribed:?}");
}
