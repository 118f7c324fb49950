//! `dead-letters list|replay` against real brokers with the bridge running: a stream is
//! poisoned (bodies over `delivery.max_body_bytes`), replayed before the cause is fixed (dead-
//! lettered again, with their replay count), then after the fix, made by a configuration
//! reload (`SIGHUP`, no restart): every message arrives once, none is lost, and the
//! dead-letter queue is empty. On ActiveMQ Classic, RabbitMQ and Artemis.

#[macro_use]
mod common;

use common::bridge::{BridgeProcess, Names, STOP_SECS, VOX_NAMESPACE, config, free_port, proxied, toml_text};
use common::{Broker, next_message, wa_body};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Command as Process;
use stomp_agent_bridge::stomp::{AckMode, Command, Frame, Subscription};
use uuid::{NoContext, Timestamp, Uuid};

const BIN: &str = env!("CARGO_BIN_EXE_stomp-agent-bridge");
const POISONED: usize = 6;

/// Runs `dead-letters ARGS --json` with `config`; its JSON lines.
fn dead_letters(config: &std::path::Path, args: &[&str]) -> Vec<Value> {
    let out = Process::new(BIN)
        .arg("dead-letters")
        .args(args)
        .arg("--json")
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "dead-letters {args:?}: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn request(agent: &str, text: &str) -> Frame {
    let body = wa_body(json!({"_message": text, "_sender": "User", "_message_type": "QUERY",
        "_context_name": "default", "_route_response_to": "User"}));
    Frame::new(Command::Send).with("destination", agent).with("persistent", "true").with_body(body)
}

async fn a_poisoned_stream_replayed_after_the_fix_arrives_once_and_nothing_is_lost(broker: Broker) {
    let names = Names::new(broker);
    let agent = names.agent("Indexer");
    let port = free_port();
    let fixed = config(broker, &names, vec![proxied(&agent, "civitas")], port);
    let mut poisoned = fixed.clone();
    poisoned.delivery.max_body_bytes = 1000;
    let bridge = BridgeProcess::start(&poisoned, port, &format!("{}-poisoned", names.uid));
    let (client, mut inbox) = broker.connect().await;
    client
        .subscribe(Subscription::new(names.dest(&format!("civitas.in.{agent}")), AckMode::Auto))
        .await
        .unwrap();

    // Two small requests pass; six large ones are dead-lettered as too_large.
    let padding = "x".repeat(700);
    let texts: Vec<String> = (0..POISONED + 2)
        .map(|i| if i < 2 { format!("small-{i}") } else { format!("large-{i}-{padding}") })
        .collect();
    for text in &texts {
        client.send_confirmed(request(&names.request(&agent), text)).await.unwrap();
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut arrived = |body: &[u8]| {
        let text = String::from_utf8_lossy(body);
        let hit =
            texts.iter().find(|t| text.contains(t.as_str())).unwrap_or_else(|| panic!("unknown: {text}"));
        *seen.entry(hit.chars().take(12).collect()).or_default() += 1;
    };
    for _ in 0..2 {
        arrived(next_message(&mut inbox, 30).await.body());
    }
    bridge.wait_metric(|l| l == format!("bridge_dead_letters_total{{kind=\"too_large\"}} {POISONED}"), 30);
    let listed = dead_letters(&bridge.config, &["list", "--kind", "too_large"]);
    assert_eq!(listed.len(), POISONED, "{listed:?}");
    assert!(listed.iter().all(|d| d["source"] == names.request(&agent) && d["replays"] == 0), "{listed:?}");

    // Replayed before the fix: dead-lettered again, each with its replay count.
    let dry = dead_letters(&bridge.config, &["replay", "--dry-run"]);
    assert_eq!(dry.len(), POISONED, "a dry run names every dead letter: {dry:?}");
    assert!(dry.iter().all(|r| r["outcome"] == "would_replay"), "{dry:?}");
    assert_eq!(dead_letters(&bridge.config, &["list"]).len(), POISONED, "a dry run removes nothing");
    let replayed = dead_letters(&bridge.config, &["replay", "--rate", "0"]);
    assert_eq!(replayed.len(), POISONED);
    assert!(replayed.iter().all(|r| r["outcome"] == "replayed" && r["replays"] == 1), "{replayed:?}");
    bridge.wait_metric(
        |l| l == format!("bridge_dead_letters_total{{kind=\"too_large\"}} {}", 2 * POISONED),
        30,
    );
    let again = dead_letters(&bridge.config, &["list"]);
    assert_eq!(again.len(), POISONED, "{again:?}");
    assert!(again.iter().all(|d| d["replays"] == 1), "the count is kept: {again:?}");

    // The cause fixed by a reload (the default limit: `max_body_bytes` changes live), replayed
    // again: every message arrives, once.
    bridge.reload_with(&fixed);
    bridge.wait_reloads("applied", 1);
    let replayed = dead_letters(&bridge.config, &["replay", "--source", &names.request(&agent)]);
    assert!(replayed.iter().all(|r| r["outcome"] == "replayed" && r["replays"] == 2), "{replayed:?}");
    assert_eq!(replayed.len(), POISONED);
    for _ in 0..POISONED {
        arrived(next_message(&mut inbox, 30).await.body());
    }
    // A last request, sent after everything: nothing arrives between the replays and it.
    client.send_confirmed(request(&names.request(&agent), "sentinel")).await.unwrap();
    let last = next_message(&mut inbox, 30).await;
    assert!(String::from_utf8_lossy(last.body()).contains("sentinel"), "a duplicate came first");
    assert_eq!(seen.len(), texts.len(), "{seen:?}");
    assert!(seen.values().all(|n| *n == 1), "each once: {seen:?}");
    assert_eq!(dead_letters(&bridge.config, &["list"]), Vec::<Value>::new(), "the queue is empty");
    bridge.terminate(STOP_SECS);
}

/// A VOX agent's asks to `Archivist`, an agent the bridge does not know yet, are
/// dead-lettered (`no_recipient`: its UUID names nobody). The missing agent is added by a
/// configuration reload, and the dead letters replayed: each ask arrives once in its inbox,
/// before an ask sent after them, and the queue is empty.
async fn asks_to_a_missing_agent_replayed_after_a_reload_adds_it_arrive_once(broker: Broker) {
    const N: usize = 5;
    let names = Names::new(broker);
    let (known, missing) = (names.agent("Indexer"), names.agent("Archivist"));
    let port = free_port();
    let before = config(broker, &names, vec![proxied(&known, "civitas")], port);
    let after = config(broker, &names, vec![proxied(&known, "civitas"), proxied(&missing, "civitas")], port);
    let bridge = BridgeProcess::start(&before, port, &format!("{}-missing", names.uid));
    let (client, mut inbox) = broker.connect().await;
    let to_missing = Subscription::new(names.dest(&format!("civitas.in.{missing}")), AckMode::Auto);
    client.subscribe(to_missing).await.unwrap();
    let namespace = Uuid::parse_str(VOX_NAMESPACE).unwrap();
    let target = Uuid::new_v5(&namespace, missing.as_bytes());
    let ask = |text: &str| {
        let body = json!({"message_id": Uuid::now_v7(), "message_source": "ops", "emitted_at":
            "2026-12-02T00:00:00+00:00", "source": Uuid::now_v7(), "target": target,
            "type": "command_request", "details": {"message": text}, "reply_to": null});
        Frame::new(Command::Send)
            .with("destination", names.dest("vox.ingress"))
            .with("content-type", "application/json")
            .with("persistent", "true")
            .with_body(body.to_string())
    };
    for i in 0..N {
        client.send_confirmed(ask(&format!("ask {i}"))).await.unwrap();
    }
    bridge.wait_metric(|l| l == format!("bridge_dead_letters_total{{kind=\"no_recipient\"}} {N}"), 30);
    assert_eq!(dead_letters(&bridge.config, &["list", "--kind", "no_recipient"]).len(), N);

    bridge.reload_with(&after);
    bridge.wait_reloads("applied", 1);
    let replayed = dead_letters(&bridge.config, &["replay", "--rate", "0"]);
    assert_eq!(replayed.len(), N, "{replayed:?}");
    assert!(replayed.iter().all(|r| r["outcome"] == "replayed"), "{replayed:?}");
    client.send_confirmed(ask("sent after")).await.unwrap();
    let mut texts = BTreeMap::new();
    for _ in 0..=N {
        let m = next_message(&mut inbox, 30).await;
        let v: Value = serde_json::from_slice(m.body()).unwrap();
        *texts.entry(v["payload"]["message"].as_str().unwrap_or_default().to_owned()).or_insert(0) += 1;
        if v["payload"]["message"] == "sent after" {
            break;
        }
    }
    let want: BTreeMap<String, i32> =
        (0..N).map(|i| format!("ask {i}")).chain(["sent after".to_owned()]).map(|t| (t, 1)).collect();
    assert_eq!(texts, want, "each once, the replays before the later ask");
    assert_eq!(dead_letters(&bridge.config, &["list"]), Vec::<Value>::new(), "the queue is empty");
    bridge.terminate(STOP_SECS);
}

/// A marker of a reading that stopped before reaching it (two hours old), one of a reading
/// that may still be running, and one dead letter; a replay removes the dead letter and the
/// stale marker, and leaves the fresh one.
async fn a_stale_marker_of_a_stopped_reading_is_removed_and_a_fresh_one_is_left(broker: Broker) {
    let names = Names::new(broker);
    let config = config(broker, &names, vec![proxied(&names.agent("Indexer"), "civitas")], free_port());
    let path = std::env::temp_dir().join(format!("sab-dl-markers-{}.toml", names.uid));
    std::fs::write(&path, toml_text(&config)).unwrap();
    let dead = names.dest("dead");
    let (client, mut events) = broker.connect().await;
    let two_hours_ago = stomp_agent_bridge::deadletter::now_ms() / 1000 - 7200;
    let stale = Uuid::new_v7(Timestamp::from_unix(NoContext, two_hours_ago, 0)).to_string();
    let fresh = Uuid::now_v7().to_string();
    for marker in [&stale, &fresh] {
        let frame =
            Frame::new(Command::Send).with("destination", &dead).with("bridge-dead-letters-marker", marker);
        client.send_confirmed(frame).await.unwrap();
    }
    let letter = Frame::new(Command::Send)
        .with("destination", &dead)
        .with("bridge-source", names.dest("back"))
        .with("bridge-error-kind", "too_large")
        .with_body(&b"x"[..]);
    client.send_confirmed(letter).await.unwrap();

    let replayed = dead_letters(&path, &["replay", "--rate", "0"]);
    assert_eq!(replayed.len(), 1, "markers are not dead letters: {replayed:?}");
    assert_eq!(replayed[0]["outcome"], "replayed", "{replayed:?}");

    client
        .send_confirmed(Frame::new(Command::Send).with("destination", &dead).with("test-end", "1"))
        .await
        .unwrap();
    client.subscribe(Subscription::new(&dead, AckMode::Auto)).await.unwrap();
    let mut left = Vec::new();
    loop {
        let m = next_message(&mut events, 30).await;
        if m.header("test-end").is_some() {
            break;
        }
        left.push(m.header("bridge-dead-letters-marker").unwrap_or("a dead letter").to_owned());
    }
    assert_eq!(left, [fresh], "the stale marker and the replay's own are gone");
    std::fs::remove_file(&path).unwrap();
}

mod activemq {
    on!(ActiveMq:
        asks_to_a_missing_agent_replayed_after_a_reload_adds_it_arrive_once,
        a_stale_marker_of_a_stopped_reading_is_removed_and_a_fresh_one_is_left,
        a_poisoned_stream_replayed_after_the_fix_arrives_once_and_nothing_is_lost,
    );
}

mod rabbitmq {
    on!(RabbitMq:
        asks_to_a_missing_agent_replayed_after_a_reload_adds_it_arrive_once,
        a_stale_marker_of_a_stopped_reading_is_removed_and_a_fresh_one_is_left,
        a_poisoned_stream_replayed_after_the_fix_arrives_once_and_nothing_is_lost,
    );
}

/// Artemis 2.37 ignores `browser:true` over STOMP: the dead letters are read as on RabbitMQ
/// (consumed without acknowledging, up to a marker, and given back by the disconnect).
mod artemis {
    on!(Artemis:
        asks_to_a_missing_agent_replayed_after_a_reload_adds_it_arrive_once,
        a_stale_marker_of_a_stopped_reading_is_removed_and_a_fresh_one_is_left,
        a_poisoned_stream_replayed_after_the_fix_arrives_once_and_nothing_is_lost,
    );
}
