//! `broker.urls`: a live broker dies and its backup answers on another address. The client
//! walks the list in order (the next address first) with the reconnect backoff, restores its
//! subscriptions there, and says where it is; the bridge redelivers nothing twice, counts the
//! failover and shows the live address; when the old live broker returns and the backup dies,
//! the bridge follows it back. In memory, under tokio's paused clock.

mod common;

use common::fake::{Conn, run_bridge, stop, wait_for, weather_config};
use std::time::Duration;
use stomp_agent_bridge::config::{DeliveryConfig, DeliveryMode};
use stomp_agent_bridge::stomp::memory::Listener;
use stomp_agent_bridge::stomp::{AckMode, Client, ClientConfig, Command, Event, Events, Subscription};

const INBOX: &str = "/queue/fake.civ.Weather";

fn listener(name: &str) -> Listener {
    Listener::bind(&format!("failover-{name}-{}", std::process::id()))
}

/// The next connection event, messages skipped.
async fn next_connection_event(events: &mut Events) -> Event {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("an event within a minute")
            .expect("the client runs");
        if !matches!(event, Event::Message(_)) {
            return event;
        }
    }
}

/// The first address that accepts is used; when it dies (its listener gone, as a killed
/// broker's port), the next is tried and the subscription is made again there; the client
/// says which address it is on.
#[tokio::test(start_paused = true)]
async fn a_subscription_follows_the_live_broker_to_the_backup_and_back() {
    let live = listener("sub-live");
    let backup = listener("sub-backup");
    let mut config = ClientConfig::new(live.url().parse().unwrap(), None, None);
    config.urls = vec![live.url().parse().unwrap(), backup.url().parse().unwrap()];
    let connecting = tokio::spawn(Client::connect(config));
    let mut on_live = Conn::accept(&live).await;
    let (client, mut events) = connecting.await.unwrap().expect("connected to the live broker");
    assert_eq!(client.address().to_string(), live.url());

    let subscribing = {
        let client = client.clone();
        tokio::spawn(async move { client.subscribe(Subscription::new("/queue/x", AckMode::Auto)).await })
    };
    let sub = on_live.expect(Command::Subscribe).await;
    on_live.receipt(&sub).await;
    subscribing.await.unwrap().expect("subscribed");

    // The live broker dies: its connection closes and its address refuses. The event names
    // the address lost (the bridge's one line about it says it).
    let live_url = live.url();
    drop(on_live);
    drop(live);
    match next_connection_event(&mut events).await {
        Event::ConnectionLost { url, .. } => assert_eq!(url.to_string(), live_url),
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
    let mut on_backup = Conn::accept(&backup).await;
    let again = on_backup.expect(Command::Subscribe).await;
    assert_eq!(again.header("destination"), Some("/queue/x"), "the subscription is restored on the backup");
    match next_connection_event(&mut events).await {
        Event::Reconnected { url, .. } => assert_eq!(url.to_string(), backup.url()),
        other => panic!("expected Reconnected, got {other:?}"),
    }
    assert_eq!(client.address().to_string(), backup.url());

    // The old live broker returns and the backup dies: the client follows it back.
    let live = Listener::bind(&format!("failover-sub-live-{}", std::process::id()));
    let backup_url = backup.url();
    drop(on_backup);
    drop(backup);
    match next_connection_event(&mut events).await {
        Event::ConnectionLost { url, .. } => assert_eq!(url.to_string(), backup_url),
        other => panic!("expected ConnectionLost, got {other:?}"),
    }
    let mut back = Conn::accept(&live).await;
    back.expect(Command::Subscribe).await;
    match next_connection_event(&mut events).await {
        Event::Reconnected { url, .. } => assert_eq!(url.to_string(), live.url()),
        other => panic!("expected Reconnected, got {other:?}"),
    }
}

/// With no address accepting, the first connect fails with the last address's error.
#[tokio::test(start_paused = true)]
async fn connecting_fails_only_when_no_address_accepts() {
    let nobody = format!("stomp+memory://failover-nobody-{}", std::process::id());
    let backup = listener("connect-backup");
    let mut config = ClientConfig::new(nobody.parse().unwrap(), None, None);
    config.urls = vec![nobody.parse().unwrap(), backup.url().parse().unwrap()];
    let connecting = tokio::spawn(Client::connect(config.clone()));
    let _conn = Conn::accept(&backup).await;
    let (client, _events) = connecting.await.unwrap().expect("the second address accepts");
    assert_eq!(client.address().to_string(), backup.url());

    drop(backup);
    config.urls = vec![nobody.parse().unwrap()];
    let err = Client::connect(config).await.expect_err("no address accepts");
    assert!(err.to_string().contains("failover-nobody"), "{err}");
}

/// A message a connection delivers, and the bridge's transaction for it settled: returns
/// nothing, asserts the frames.
async fn settle_once(conn: &mut Conn, ack: &str) {
    let request = conn.subscriptions().await;
    conn.deliver(&request, ack).await;
    conn.expect(Command::Begin).await;
    let send = conn.expect(Command::Send).await;
    assert_eq!(send.header("destination"), Some(INBOX));
    conn.receipt(&send).await;
    assert_eq!(conn.expect(Command::Ack).await.header("id"), Some(ack));
    let commit = conn.expect(Command::Commit).await;
    conn.receipt(&commit).await;
}

fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(prefix))
}

/// The bridge on a live/backup pair: a message caught in the middle when the live broker
/// dies (sent on, not yet committed) is redelivered by the backup and delivered once there;
/// the failover is counted and the live address shown in `/metrics` and `/readyz`. When the
/// old live broker returns and the backup dies, the bridge follows it back.
#[tokio::test(start_paused = true)]
async fn the_bridge_fails_over_to_the_backup_and_delivers_what_was_unsettled_once() {
    let live = listener("bridge-live");
    let backup = listener("bridge-backup");
    let delivery =
        DeliveryConfig { receipt_timeout_ms: 60000, mode: DeliveryMode::Transaction, ..Default::default() };
    let mut config = weather_config(0, [0, 0], delivery);
    config.broker.url = String::new();
    config.broker.urls = vec![live.url(), backup.url()];
    let config = common::fake::config("failover-bridge", &config);
    let (metrics, shutdown, bridge) = run_bridge(config);

    // On the live broker: a request arrives, the bridge sends it on; the broker dies before
    // confirming anything.
    let mut on_live = Conn::accept(&live).await;
    let request = on_live.subscriptions().await;
    on_live.deliver(&request, "ack-live").await;
    on_live.expect(Command::Begin).await;
    on_live.expect(Command::Send).await;
    drop(on_live);
    drop(live);

    // The backup has the request (a shared store): it redelivers, and it is delivered once.
    let mut on_backup = Conn::accept(&backup).await;
    settle_once(&mut on_backup, "ack-backup").await;
    let delivered = "bridge_messages_total{route=\"wiseagents->civitas\",outcome=\"delivered\"} 1";
    let text = wait_for(&metrics, delivered).await;
    let on = format!("bridge_broker_connected{{address=\"{}\"}} 1", backup.url());
    let text = match text.contains(&on) {
        true => text,
        false => wait_for(&metrics, &on).await,
    };
    let dead = format!(
        "bridge_broker_connected{{address=\"stomp+memory://failover-bridge-live-{}\"}} 0",
        std::process::id()
    );
    assert!(text.contains(&dead), "the dead address shows 0:\n{text}");
    assert_eq!(
        line(&text, "bridge_broker_failovers_total "),
        Some("bridge_broker_failovers_total 1"),
        "{text}"
    );
    assert!(metrics.broker.live() == vec![backup.url()], "{:?}", metrics.broker.live());

    // Failback: the old live broker returns, the backup dies; the bridge follows.
    let live = listener("bridge-live");
    drop(on_backup);
    drop(backup);
    let mut back = Conn::accept(&live).await;
    let request = back.subscriptions().await;
    back.deliver(&request, "ack-back").await;
    back.expect(Command::Begin).await;
    let send = back.expect(Command::Send).await;
    back.receipt(&send).await;
    back.expect(Command::Ack).await;
    let commit = back.expect(Command::Commit).await;
    back.receipt(&commit).await;
    let text = wait_for(&metrics, "bridge_broker_failovers_total 2").await;
    assert!(text.contains(&format!("bridge_broker_connected{{address=\"{}\"}} 1", live.url())), "{text}");
    stop(back, shutdown, bridge).await;
}
