//! What ActiveMQ Artemis's STOMP does differently from ActiveMQ Classic and RabbitMQ, measured
//! on the Artemis of `scripts/brokers.sh start` (config/artemis/etc-override/broker.xml, the
//! file docker-compose.yml mounts). docs/OPERATING.md's per-broker table cites these tests;
//! where the bridge handles a difference, the test shows what it relies on.

mod common;

use common::{Broker, next_message, unique_queue};
use std::time::{Duration, Instant};
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Events, Frame, Item, Subscription};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ARTEMIS: Broker = Broker::Artemis;

fn send(queue: &str, body: &str) -> Frame {
    Frame::new(Command::Send).with("destination", queue).with("persistent", "true").with_body(body.to_owned())
}

async fn subscribed(broker: Broker, queue: &str, ack: AckMode) -> (Client, Events) {
    let (client, events) = broker.connect().await;
    client.subscribe(Subscription::new(queue, ack)).await.expect("subscribed");
    (client, events)
}

/// Nothing more arrives on `events` within `wait`: a look for what should not come, short on
/// purpose (one too short on a loaded machine misses a late message, it never fails a test).
async fn nothing_within(events: &mut Events, wait: Duration) -> bool {
    tokio::time::timeout(wait, events.next_message()).await.is_err()
}

/// Artemis's auto-created addresses are MULTICAST by default, where a message nobody is
/// subscribed to is dropped; broker.xml makes them ANYCAST, so a Wise Agents request sent
/// before its agent (or the bridge) subscribes waits for it.
#[tokio::test]
async fn a_request_sent_before_anyone_subscribes_waits_on_its_queue() {
    let queue = format!("/queue/request/Early_{}", unique_queue("early").rsplit('.').next().unwrap());
    let (producer, _) = ARTEMIS.connect().await;
    producer.send_confirmed(send(&queue, "early")).await.unwrap();
    let (_c, mut events) = subscribed(ARTEMIS, &queue, AckMode::Auto).await;
    let m = next_message(&mut events, 30).await;
    assert_eq!(m.body(), b"early");
    assert_eq!(m.destination, queue, "the destination as sent, prefix and slash kept");
    assert_eq!(m.header("destination-type"), Some("ANYCAST"));
}

/// Every subscriber of a topic gets its own temporary queue. With `default-queue-routing-type`
/// ANYCAST in broker.xml (as it once was), the first such queue added ANYCAST to the
/// MULTICAST address, and every later subscription to it failed with AMQ339016: the mirror
/// could subscribe once per broker start.
#[tokio::test]
async fn a_topic_takes_a_second_and_a_third_subscriber() {
    let topic = unique_queue("topic").replacen("/queue/", "/topic/", 1);
    let mut subscribers = Vec::new();
    for _ in 0..3 {
        subscribers.push(subscribed(ARTEMIS, &topic, AckMode::ClientIndividual).await);
    }
    let (producer, _) = ARTEMIS.connect().await;
    producer.send_confirmed(send(&topic, "to all")).await.unwrap();
    for (_, events) in &mut subscribers {
        assert_eq!(next_message(events, 30).await.body(), b"to all");
    }
}

/// Artemis deletes an auto-created queue once it is empty and has no consumer (a Wise Agents
/// response queue between two conversations); the next message creates it again and waits.
/// The consumer acknowledges, as the bridge does: with `ack:auto` (Wise Agents' subscriptions)
/// Artemis may still hand a message sent just after the DISCONNECT's RECEIPT to the closing
/// consumer, which auto-acknowledges it, and it is gone (measured with a raw client: 62 of
/// 2,192 tries with `auto`, 0 of 649 with `client-individual`).
#[tokio::test]
async fn a_message_to_a_queue_that_emptied_and_lost_its_consumer_still_waits() {
    let queue = unique_queue("emptied");
    let (producer, _) = ARTEMIS.connect().await;
    let (consumer, mut events) = subscribed(ARTEMIS, &queue, AckMode::ClientIndividual).await;
    producer.send_confirmed(send(&queue, "first")).await.unwrap();
    let first = next_message(&mut events, 30).await;
    assert_eq!(first.body(), b"first");
    consumer.ack(&first.ack).await.unwrap();
    consumer.disconnect().await.unwrap();
    producer.send_confirmed(send(&queue, "second")).await.unwrap();
    let (_c, mut events) = subscribed(ARTEMIS, &queue, AckMode::Auto).await;
    assert_eq!(next_message(&mut events, 30).await.body(), b"second");
}

/// Artemis's `message-id` is `<consumer>,<message>`: a redelivery comes with another one
/// (ActiveMQ Classic keeps it), while the part after the comma, the broker's id of the
/// message, stays. The bridge's duplicate ids are built on that part.
#[tokio::test]
async fn a_redelivered_message_has_a_new_message_id_whose_message_part_stays() {
    let queue = unique_queue("ids");
    let (producer, _) = ARTEMIS.connect().await;
    producer.send_confirmed(send(&queue, "again")).await.unwrap();
    let (first, mut events) = subscribed(ARTEMIS, &queue, AckMode::ClientIndividual).await;
    let m1 = next_message(&mut events, 30).await;
    first.disconnect().await.unwrap(); // not acknowledged: redelivered
    let (second, mut events) = subscribed(ARTEMIS, &queue, AckMode::ClientIndividual).await;
    let m2 = next_message(&mut events, 30).await;
    second.ack(&m2.ack).await.unwrap();
    let (id1, id2) = (m1.ack.message_id.clone(), m2.ack.message_id.clone());
    assert_eq!(m2.header("redelivered"), Some("true"));
    assert_ne!(id1, id2, "Artemis names the consumer in message-id");
    let message_part = |id: &str| id.rsplit_once(',').map(|(_, m)| m.to_owned());
    assert!(message_part(&id1).is_some(), "{id1}");
    assert_eq!(message_part(&id1), message_part(&id2), "{id1} then {id2}");
}

/// Duplicate detection: a SEND whose `_AMQ_DUPL_ID` the address has seen is confirmed (a
/// RECEIPT comes) and dropped.
#[tokio::test]
async fn a_send_with_a_duplicate_id_already_seen_is_confirmed_and_dropped() {
    let queue = unique_queue("dupl");
    let (_c, mut events) = subscribed(ARTEMIS, &queue, AckMode::Auto).await;
    let (producer, _) = ARTEMIS.connect().await;
    let id = format!("{queue}|once");
    producer.send_confirmed(send(&queue, "one").with("_AMQ_DUPL_ID", id.as_str())).await.unwrap();
    producer.send_confirmed(send(&queue, "two").with("_AMQ_DUPL_ID", id.as_str())).await.unwrap();
    producer.send_confirmed(send(&queue, "marker")).await.unwrap();
    assert_eq!(next_message(&mut events, 30).await.body(), b"one");
    assert_eq!(next_message(&mut events, 30).await.body(), b"marker", "the second was dropped");
}

/// Receives one message on `queue` (client-individual), ACKs it inside a transaction that is
/// then aborted, disconnects, and subscribes again: the new subscription, on which the message
/// comes again if the ABORT undid its ACK.
async fn acked_in_an_aborted_transaction_then_subscribed_again(broker: Broker) -> (Client, Events) {
    let queue = unique_queue("txack");
    let (producer, _) = broker.connect().await;
    producer.send_confirmed(send(&queue, "source")).await.unwrap();
    let (consumer, mut events) = subscribed(broker, &queue, AckMode::ClientIndividual).await;
    let m = next_message(&mut events, 30).await;
    let tx = "probe-tx".to_owned();
    let items = vec![
        Item::Frame { frame: Frame::new(Command::Begin).with("transaction", tx.as_str()), receipt: false },
        Item::Ack { msg: m.ack.clone(), nack: false, transaction: Some(tx.clone()) },
        Item::Frame { frame: Frame::new(Command::Abort).with("transaction", tx.as_str()), receipt: true },
    ];
    for receipt in consumer.submit(items).await.unwrap() {
        receipt.confirmed().await.unwrap();
    }
    consumer.disconnect().await.unwrap();
    subscribed(broker, &queue, AckMode::ClientIndividual).await
}

/// ARTEMIS-406 notwithstanding, Artemis 2.37 applies a STOMP ACK sent inside a transaction at
/// once: an ABORT (or a crash before the COMMIT) does not bring the message back, while the
/// transaction's SENDs are discarded. So `delivery.mode = "transaction"` is not atomic on
/// Artemis (README, docs/OPERATING.md); ActiveMQ Classic undoes the ACK.
#[tokio::test]
async fn an_ack_inside_an_aborted_transaction_is_undone_by_activemq_classic_and_not_by_artemis() {
    // ActiveMQ Classic: the message comes again, waited for as any broker's answer.
    let (_c, mut events) = acked_in_an_aborted_transaction_then_subscribed_again(Broker::ActiveMq).await;
    assert_eq!(next_message(&mut events, 30).await.body(), b"source", "ActiveMQ Classic");
    let (_c, mut events) = acked_in_an_aborted_transaction_then_subscribed_again(ARTEMIS).await;
    assert!(nothing_within(&mut events, Duration::from_secs(3)).await, "Artemis");
}

/// Artemis reads the prefetch headers (`activemq.prefetchSize`, `consumer-window-size`) as a
/// window in bytes, and always lets one message through: a prefetch of N messages would be one
/// message at a time per subscription, and a PenguiFlow stream held by the bridge could never
/// complete. So the bridge also sends `consumer-window-size`, 1 KiB per prefetched message.
#[tokio::test]
async fn a_prefetch_of_ten_is_ten_bytes_on_artemis_one_message_at_a_time() {
    let queue = unique_queue("window");
    let (producer, _) = ARTEMIS.connect().await;
    for i in 0..20 {
        producer.send(send(&queue, &format!("m{i}"))).await.unwrap();
    }
    producer.send_confirmed(send(&queue, "m20")).await.unwrap();
    let (consumer, mut events) = ARTEMIS.connect().await;
    let sub = Subscription::new(&queue, AckMode::ClientIndividual).with("activemq.prefetchSize", "10");
    consumer.subscribe(sub).await.unwrap();
    let first = next_message(&mut events, 30).await;
    assert!(nothing_within(&mut events, Duration::from_secs(2)).await, "one unacknowledged message at most");
    consumer.ack(&first.ack).await.unwrap();
    assert_eq!(next_message(&mut events, 30).await.body(), b"m1", "the next once the first is acknowledged");
}

/// Artemis enforces the heart-beats a client promises: one that promised a beat a second and
/// sends none is disconnected after about twice that (its connection TTL), which is why the
/// bridge keeps `heartbeat_ms` non-zero and keeps writing them while it is stalled.
#[tokio::test]
async fn a_client_that_promised_heart_beats_and_sends_none_is_disconnected_within_twice_the_interval() {
    const PROMISED: Duration = Duration::from_secs(1);
    // The TTL is twice the promise (`heartBeatToConnectionTtlModifier` 2.0), checked every 2 s
    // (`connection-ttl-check-interval`): closed 2 to 4 s in on a quiet machine. The slack is for
    // a loaded one (the broker's checker and this test each wait for a core); the bound stays
    // far below Artemis's default connection TTL (60 s), what a promise ignored would give.
    let bound = PROMISED * 2 + Duration::from_secs(2) + Duration::from_secs(4);
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", ARTEMIS.port())).await.unwrap();
    let (login, passcode) = ARTEMIS.credentials();
    let connect = format!(
        "CONNECT\naccept-version:1.2\nhost:/\nlogin:{login}\npasscode:{passcode}\nheart-beat:{},0\n\n\0",
        PROMISED.as_millis()
    );
    socket.write_all(connect.as_bytes()).await.unwrap();
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let after = start.elapsed();
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("CONNECTED") && text.contains("heart-beat:0,1000"), "{text}");
    assert!(closed.is_ok(), "still open after 30 s");
    assert!(after >= PROMISED && after <= bound, "closed after {after:?}, bound {bound:?}");
    eprintln!("artemis: a client silent after promising 1 s heart-beats was disconnected after {after:.1?}");
}
