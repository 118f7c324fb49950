//! Streamed answers of any length (issue 19), against ActiveMQ: a Civitas `stream_reply()` of
//! far more chunks than the bridge's whole in-flight budget arrives as one answer while other
//! answers on the same ingress pass it, and a bridge killed mid-stream gives the asker an
//! error answer instead of silence. The chunks are acknowledged as they are taken in; only
//! their text waits for the end of the stream (docs/OPERATING.md, "Streams").

mod common;

use common::bridge::{BridgeProcess, Names, config, free_port, proxied};
use common::{Broker, next_message, wise_query};
use serde_json::{Value, json};
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Events, Frame, Subscription};

const BROKER: Broker = Broker::ActiveMq;
/// `delivery.in_flight` of `config`: every message the bridge may hold at once.
const IN_FLIGHT: usize = 64;

/// The bridge for one proxied Civitas agent; `stream_wait_ms`: `stream_max_wait_ms`.
fn start(names: &Names, civ: &str, stream_wait_ms: u64) -> BridgeProcess {
    let port = free_port();
    let mut config = config(BROKER, names, vec![proxied(civ, "civitas")], port);
    config.protocols.penguiflow.as_mut().expect("[protocols.penguiflow]").stream_max_wait_ms = stream_wait_ms;
    assert_eq!(config.delivery.in_flight, IN_FLIGHT);
    BridgeProcess::start(&config, port, &names.uid)
}

async fn consume(destination: &str) -> (Client, Events) {
    let (client, events) = BROKER.connect().await;
    client.subscribe(Subscription::new(destination, AckMode::Auto)).await.unwrap();
    (client, events)
}

/// `asker` (a Wise Agents agent) asks `civ`; returns the ask as the Civitas agent reads it.
async fn ask(
    producer: &Client,
    names: &Names,
    civ: &str,
    asker: &str,
    text: &str,
    inbox: &mut Events,
) -> Value {
    let body = wise_query(text, asker, "default").to_yaml();
    let frame = Frame::new(Command::Send).with("destination", names.request(civ)).with_body(body);
    producer.send_confirmed(frame).await.unwrap();
    let m = next_message(inbox, 30).await;
    let asked: Value = serde_json::from_slice(m.body()).unwrap();
    assert_eq!(asked["payload"]["message"], text, "{asked}");
    asked
}

/// A Civitas frame answering `asked`, as Civitas's `reply()` / `stream_reply()` write them.
fn answer(names: &Names, asked: &Value, kind: &str, seq: Option<u64>, payload: Value) -> Frame {
    let body = json!({"schema_version": 1, "id": uuid::Uuid::now_v7().to_string(), "type": kind,
        "sender": asked["recipient"], "recipient": asked["reply_to"], "correlation_id": asked["correlation_id"],
        "reply_to": null, "payload": payload, "timestamp": 1.8e9, "trace_id": "", "span_id": "",
        "parent_span_id": null, "attempt": 0, "priority": 0, "ttl": null, "seq": seq});
    Frame::new(Command::Send)
        .with("destination", names.dest("civitas.ingress"))
        .with("content-type", "application/json")
        .with_body(body.to_string())
}

/// Chunks `range` of the stream answering `asked`, each `token` its number and a space.
async fn chunks(producer: &Client, names: &Names, asked: &Value, range: std::ops::Range<u64>) {
    for seq in range {
        let frame =
            answer(names, asked, "civitas.stream.chunk", Some(seq), json!({"token": format!("{seq} ")}));
        producer.send(frame).await.unwrap();
    }
}

fn the_text(range: std::ops::Range<u64>) -> String {
    range.map(|seq| format!("{seq} ")).collect()
}

async fn next_answer(answers: &mut Events, secs: u64) -> WiseMessage {
    WiseMessage::parse(next_message(answers, secs).await.body()).expect("a Wise Agents answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_ten_thousand_chunks_arrives_as_one_answer_and_other_answers_pass_it() {
    const N: u64 = 10_000;
    assert!(N as usize > 100 * IN_FLIGHT);
    let names = Names::new(BROKER);
    let (civ, asker) = (names.agent("Streamer"), names.agent("Asker"));
    let bridge = start(&names, &civ, 120_000);
    let (_i, mut inbox) = consume(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (_a, mut answers) = consume(&names.response(&asker)).await;
    let (producer, _) = BROKER.connect().await;
    let long = ask(&producer, &names, &civ, &asker, "tell me a long story", &mut inbox).await;
    let short = ask(&producer, &names, &civ, &asker, "and the weather?", &mut inbox).await;

    chunks(&producer, &names, &long, 0..N / 2).await;
    // Another conversation's answer on the same ingress, mid-stream: it is not held behind.
    producer
        .send_confirmed(answer(&names, &short, "reply", None, json!({"message": "sunny"})))
        .await
        .unwrap();
    let first = next_answer(&mut answers, 60).await;
    assert_eq!((first.message.as_str(), first.message_type), ("sunny", Some(Intent::Response)));
    chunks(&producer, &names, &long, N / 2..N).await;
    producer.send_confirmed(answer(&names, &long, "civitas.stream.end", Some(N), json!({}))).await.unwrap();

    let whole = next_answer(&mut answers, 120).await;
    assert_eq!(whole.message_type, Some(Intent::Response));
    assert!(whole.message == the_text(0..N), "the whole stream, in order ({} bytes)", whole.message.len());
    let chunk_line = format!("bridge_messages_total{{route=\"civitas->stream\",outcome=\"chunk\"}} {N}");
    bridge.wait_metric(|l| l == chunk_line, 30);
    // The answer can reach the asker before its source's ACK is written (CI saw in_flight 1,
    // unacknowledged 1 at that moment): the gauges are waited for, as a probe would.
    for gauge in ["bridge_unacknowledged 0", "bridge_in_flight 0", "bridge_unsettled_total 0"] {
        bridge.wait_metric(|l| l == gauge, 30);
    }
    let (_, m) = bridge.http_get("/metrics");
    assert!(!m.contains("bridge_dead_letters_total{"), "nothing dead-lettered:\n{m}");
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(2), answers.next_message()).await.is_err(),
        "one answer for the stream, not one per chunk"
    );
}

/// A crash loses what the killed bridge had joined (its chunks were acknowledged): the next
/// bridge sees a stream without its start, gives up on it after `stream_max_wait_ms`, and the
/// asker gets an error answer, never a part of the text taken for the whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_killed_mid_stream_gives_the_asker_an_error_answer() {
    const N: u64 = 1_000;
    let names = Names::new(BROKER);
    let (civ, asker) = (names.agent("Streamer"), names.agent("Asker"));
    let bridge = start(&names, &civ, 3_000);
    let (config, http_port) = (bridge.config.clone(), bridge.http_port);
    let (_i, mut inbox) = consume(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (_a, mut answers) = consume(&names.response(&asker)).await;
    let (producer, _) = BROKER.connect().await;
    let asked = ask(&producer, &names, &civ, &asker, "tell me a long story", &mut inbox).await;

    chunks(&producer, &names, &asked, 0..N / 2).await;
    let taken = format!("bridge_messages_total{{route=\"civitas->stream\",outcome=\"chunk\"}} {}", N / 2);
    bridge.wait_metric(|l| l == taken, 60);
    bridge.kill9();

    let next = BridgeProcess::start_with(config, http_port);
    chunks(&producer, &names, &asked, N / 2..N).await;
    producer.send_confirmed(answer(&names, &asked, "civitas.stream.end", Some(N), json!({}))).await.unwrap();
    let answer = next_answer(&mut answers, 60).await;
    assert_eq!(answer.message_type, Some(Intent::CannotAnswer), "{answer:?}");
    assert!(answer.message.contains("could not be delivered"), "{}", answer.message);
    assert!(answer.message.contains("incomplete"), "{}", answer.message);
    let (_, m) = next.http_get("/metrics");
    assert!(m.lines().any(|l| l == "bridge_unacknowledged 0"), "{m}");
}
