//! The broker is stopped and started again mid-stream: the client reconnects, re-subscribes,
//! and no message is lost. These tests run alone (see .config/nextest.toml).

mod common;

use common::{Broker, brokers_script, unique_queue, wait_for};
use std::collections::BTreeSet;
use std::time::Duration;
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Event, Events, Frame, SessionError, Subscription};

const MESSAGES: usize = 300;
const RESTART_AFTER: usize = 50;
/// How long a broker restart may take: RabbitMQ's stop and start took over 60 s on a 2-core
/// machine kept busy beside the suite (it is a few seconds on a quiet one).
const RESTART_WITHIN: u64 = 180;

/// Sends `body` until the broker confirms it, waiting out reconnects.
async fn send_until_confirmed(client: &Client, events: &mut Events, queue: &str, body: String) {
    loop {
        let frame = Frame::new(Command::Send)
            .with("destination", queue)
            .with("persistent", "true")
            .with_body(body.clone());
        match client.send_confirmed(frame).await {
            Ok(()) => return,
            Err(SessionError::ReceiptTimeout(_)) => continue,
            Err(_) => {
                wait_for(events, RESTART_WITHIN, |e| matches!(e, Event::Reconnected { .. })).await;
            }
        }
    }
}

/// Receives until every body was seen at least once, acknowledging each; restarts the
/// broker (in the background) once `RESTART_AFTER` distinct bodies were seen.
async fn consume_all(broker: Broker, client: Client, mut events: Events) -> (BTreeSet<String>, usize) {
    let mut seen = BTreeSet::new();
    let mut restart = None;
    let mut deliveries = 0;
    while seen.len() < MESSAGES {
        let event = tokio::time::timeout(Duration::from_secs(RESTART_WITHIN), events.recv())
            .await
            .expect("progress")
            .expect("client");
        let Event::Message(m) = event else { continue };
        deliveries += 1;
        let _ = client.ack(&m.ack).await; // a stale ack is fine: the broker redelivers
        seen.insert(String::from_utf8_lossy(m.body()).into_owned());
        if seen.len() == RESTART_AFTER && restart.is_none() {
            restart = Some(tokio::task::spawn_blocking(move || brokers_script(&["restart", broker.name()])));
        }
    }
    restart.expect("the broker was restarted").await.expect("restart finished");
    (seen, deliveries)
}

async fn broker_restart_mid_stream_loses_nothing(broker: Broker) {
    let queue = unique_queue("restart");
    let (consumer, consumer_events) = broker.connect().await;
    consumer.subscribe(Subscription::new(&queue, AckMode::ClientIndividual)).await.unwrap();
    let consuming = tokio::spawn(consume_all(broker, consumer, consumer_events));

    let (producer, mut producer_events) = broker.connect().await;
    for i in 0..MESSAGES {
        send_until_confirmed(&producer, &mut producer_events, &queue, format!("m{i:04}")).await;
    }
    let (seen, deliveries) = tokio::time::timeout(Duration::from_secs(RESTART_WITHIN), consuming)
        .await
        .expect("all consumed")
        .unwrap();
    let want: BTreeSet<String> = (0..MESSAGES).map(|i| format!("m{i:04}")).collect();
    assert_eq!(seen, want, "every message confirmed by the broker was delivered");
    eprintln!("{}: {MESSAGES} messages, {deliveries} deliveries across a broker restart", broker.name());
}

mod activemq {
    #[tokio::test]
    async fn broker_restart_mid_stream_loses_nothing() {
        super::broker_restart_mid_stream_loses_nothing(super::Broker::ActiveMq).await
    }
}

mod rabbitmq {
    #[tokio::test]
    async fn broker_restart_mid_stream_loses_nothing() {
        super::broker_restart_mid_stream_loses_nothing(super::Broker::RabbitMq).await
    }
}

mod artemis {
    #[tokio::test]
    async fn broker_restart_mid_stream_loses_nothing() {
        super::broker_restart_mid_stream_loses_nothing(super::Broker::Artemis).await
    }
}
