//! Reloading the configuration (`SIGHUP`) against the real brokers: an agent added and one
//! removed under load (nothing lost, duplicated, reordered or dead-lettered), a broken file
//! and a change that cannot be live (nothing changes, and the bridge says why), and a reload
//! while the broker is away (a proxy in front of it refuses the bridge, as a restart would).

#[macro_use]
mod common;

use common::bridge::{BridgeProcess, Names, STOP_SECS, WiseAgent, free_port, proxied};
use common::{Broker, Proxy, next_message};
use std::collections::BTreeSet;
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Events, Frame, Message, Subscription};

async fn consume_on(broker: Broker, dest: &str) -> (Client, Events) {
    let (client, events) = broker.connect().await;
    client.subscribe(Subscription::new(dest, AckMode::Auto)).await.unwrap();
    (client, events)
}

fn inbox(names: &Names, agent: &str) -> String {
    names.dest(&format!("civitas.in.{agent}"))
}

/// The text of a Civitas message the bridge delivered (`msg <i>`), or of a Wise Agents body
/// left in its queue.
fn text_of(m: &Message) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(m.body()) {
        return v["payload"]["message"].as_str().unwrap_or_default().to_owned();
    }
    let body = String::from_utf8_lossy(m.body());
    let line = body.lines().find(|l| l.starts_with("_message: ")).unwrap_or_default();
    line.trim_start_matches("_message: ").trim_matches('\'').to_owned()
}

fn config(broker: Broker, names: &Names, agents: &[&str], port: u16) -> Config {
    let specs = agents.iter().map(|a| proxied(a, "civitas")).collect();
    common::bridge::config(broker, names, specs, port)
}

async fn send(client: &Client, destination: &str, text: &str) {
    let body = common::wa_body(serde_json::json!({"_message": text, "_sender": "User",
        "_message_type": "QUERY", "_context_name": "default"}));
    let frame = Frame::new(Command::Send).with("destination", destination).with("persistent", "true");
    client.send_confirmed(frame.with_body(body)).await.unwrap();
}

async fn an_agent_added_under_load_gets_its_messages_and_the_existing_one_loses_none(broker: Broker) {
    const N: usize = 2000;
    const K: usize = 50;
    let names = Names::new(broker);
    let (a, b) = (names.agent("Weather"), names.agent("News"));
    let port = free_port();
    let bridge = BridgeProcess::start(&config(broker, &names, &[&a], port), port, &names.uid);
    let (producer, _) = broker.connect().await;
    let (_ca, mut inbox_a) = consume_on(broker, &inbox(&names, &a)).await;
    let (_cb, mut inbox_b) = consume_on(broker, &inbox(&names, &b)).await;
    for i in 0..K {
        send(&producer, &names.request(&b), &format!("news {i}")).await; // waits: nobody consumes it
    }
    let sender = WiseAgent::spawn(broker, &names, &["send-many", &names.request(&a), &N.to_string()]);
    let mut texts = Vec::with_capacity(N);
    while texts.len() < N {
        texts.push(text_of(&next_message(&mut inbox_a, 60).await));
        if texts.len() == N / 10 {
            bridge.reload_with(&config(broker, &names, &[&a, &b], port));
        }
    }
    sender.wait_success();
    bridge.wait_reloads("applied", 1);
    assert_eq!(texts, (0..N).map(|i| format!("msg {i}")).collect::<Vec<_>>(), "each once, in order");
    let mut news = Vec::new();
    for _ in 0..K {
        news.push(text_of(&next_message(&mut inbox_b, 30).await));
    }
    assert_eq!(news, (0..K).map(|i| format!("news {i}")).collect::<Vec<_>>(), "the new agent's, in order");
    send(&producer, &names.request(&a), "sentinel").await;
    assert_eq!(text_of(&next_message(&mut inbox_a, 30).await), "sentinel", "no duplicate came first");
    let (_, status) = bridge.http_get("/config");
    assert!(status.contains("\"outcome\":\"applied\"") && status.contains(&format!("added {b}")), "{status}");
}

async fn an_agent_removed_under_load_loses_nothing_and_dead_letters_nothing(broker: Broker) {
    const N: usize = 2000;
    let names = Names::new(broker);
    let (a, b) = (names.agent("Weather"), names.agent("Leaving"));
    let port = free_port();
    let bridge = BridgeProcess::start(&config(broker, &names, &[&a, &b], port), port, &names.uid);
    let (producer, _) = broker.connect().await;
    let (_ca, mut inbox_a) = consume_on(broker, &inbox(&names, &a)).await;
    let (_cb, mut inbox_b) = consume_on(broker, &inbox(&names, &b)).await;
    let sender =
        WiseAgent::spawn(broker, &names, &["send-many", &names.request(&b), &N.to_string(), "--persistent"]);
    let mut delivered = Vec::new();
    while delivered.len() < N / 4 {
        delivered.push(text_of(&next_message(&mut inbox_b, 60).await));
    }
    bridge.reload_with(&config(broker, &names, &[&a], port));
    bridge.wait_reloads("applied", 1);
    // Whatever the bridge published for B was confirmed before the reload answered: a marker
    // sent to B's inbox now comes after all of it.
    producer
        .send_confirmed(Frame::new(Command::Send).with("destination", inbox(&names, &b)).with("marker", "1"))
        .await
        .unwrap();
    loop {
        let m = next_message(&mut inbox_b, 30).await;
        if m.header("marker").is_some() {
            break;
        }
        delivered.push(text_of(&m));
    }
    send(&producer, &names.request(&a), "still served").await;
    assert_eq!(text_of(&next_message(&mut inbox_a, 30).await), "still served");
    sender.wait_success();
    let (_, metrics) = bridge.http_get("/metrics");
    assert!(!metrics.contains("bridge_dead_letters_total{"), "nothing dead-lettered:\n{metrics}");
    let released =
        metrics.lines().find(|l| l.starts_with("bridge_config_reload_released_total")).map(str::to_owned);
    // What the bridge gave back is in the queue again while it runs, except on RabbitMQ, which
    // keeps a cancelled subscription's unacknowledged messages on the connection until it closes.
    let keeps = broker == Broker::RabbitMq;
    let bridge = if keeps {
        assert!(bridge.terminate(STOP_SECS).success());
        None
    } else {
        Some(bridge)
    };
    let (_cq, mut queue) = consume_on(broker, &names.request(&b)).await;
    let mut left = Vec::new();
    while delivered.len() + left.len() < N {
        left.push(text_of(&next_message(&mut queue, 30).await));
    }
    if let Some(bridge) = bridge {
        assert!(bridge.terminate(STOP_SECS).success());
    }
    let all: BTreeSet<&String> = delivered.iter().chain(&left).collect();
    assert_eq!(all.len(), N, "none lost, none twice: {} delivered, {} left", delivered.len(), left.len());
    eprintln!(
        "{}: {} delivered, {} left in the queue, {released:?}",
        broker.name(),
        delivered.len(),
        left.len()
    );
}

async fn a_broken_file_changes_nothing_and_the_bridge_says_why(broker: Broker) {
    let names = Names::new(broker);
    let (a, b) = (names.agent("Weather"), names.agent("News"));
    let port = free_port();
    let mut bridge = BridgeProcess::start(&config(broker, &names, &[&a], port), port, &names.uid);
    // What no Config can hold: a misspelt framework and an unknown key.
    let mut broken = toml::Table::try_from(config(broker, &names, &[&a, &b], port)).unwrap();
    broken["agents"][1]["protocol"] = "civitaz".into();
    broken["delivery"].as_table_mut().unwrap().insert("colour".into(), "red".into());
    bridge.reload_with(&broken);
    bridge.wait_reloads("invalid", 1);
    let line = bridge.wait_log("the file does not validate", 30);
    for problem in ["agents[1].protocol", "expected one of civitas, vox, penguiflow", "delivery.colour"] {
        assert!(line.contains(problem), "the log line names {problem:?}: {line}");
    }
    let (_, status) = bridge.http_get("/config");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["last_reload"]["outcome"], "invalid", "{status}");
    assert!(status["last_reload"]["reason"].as_str().unwrap().contains("civitaz"), "{status}");
    assert_eq!(status["reloads"]["applied"], 0, "{status}");
    // Still running on the old configuration: A is served, B's queue is left alone.
    let (producer, _) = broker.connect().await;
    let (_ca, mut inbox_a) = consume_on(broker, &inbox(&names, &a)).await;
    send(&producer, &names.request(&b), "for b").await;
    send(&producer, &names.request(&a), "for a").await;
    assert_eq!(text_of(&next_message(&mut inbox_a, 30).await), "for a");
    assert_eq!(bridge.http_get("/readyz").0, 200);
    let (_cq, mut queue) = consume_on(broker, &names.request(&b)).await;
    assert_eq!(text_of(&next_message(&mut queue, 30).await), "for b", "B's request was not consumed");
}

async fn a_change_that_cannot_be_live_is_refused_and_named(broker: Broker) {
    let names = Names::new(broker);
    let (a, b) = (names.agent("Weather"), names.agent("News"));
    let port = free_port();
    let started = config(broker, &names, &[&a], port);
    let mut bridge = BridgeProcess::start(&started, port, &names.uid);
    let mut refused = config(broker, &names, &[&a, &b], port);
    refused.broker.url = "stomp://127.0.0.1:1".into();
    refused.delivery.in_flight = 128;
    bridge.reload_with(&refused);
    bridge.wait_reloads("refused", 1);
    let line = bridge.wait_log("configuration reload refused", 30);
    assert!(line.contains("broker.url cannot change without a restart"), "{line}");
    assert!(line.contains("delivery.in_flight cannot change without a restart"), "{line}");
    let (_, status) = bridge.http_get("/config");
    assert!(status.contains("\"outcome\":\"refused\"") && status.contains("broker.url"), "{status}");
    // The whole reload is refused: B, which could have been added live, is not.
    let (producer, _) = broker.connect().await;
    let (_ca, mut inbox_a) = consume_on(broker, &inbox(&names, &a)).await;
    send(&producer, &names.request(&b), "for b").await;
    send(&producer, &names.request(&a), "for a").await;
    assert_eq!(text_of(&next_message(&mut inbox_a, 30).await), "for a");
    let (_cq, mut queue) = consume_on(broker, &names.request(&b)).await;
    assert_eq!(text_of(&next_message(&mut queue, 30).await), "for b", "B's request was not consumed");
    // Put back, a later reload applies.
    bridge.reload_with(&config(broker, &names, &[&a, &b], port));
    bridge.wait_reloads("applied", 1);
}

/// The broker goes away (for this bridge), a reload adds B and removes C meanwhile, the broker
/// comes back: B's waiting messages are delivered, A is served, and C's message, sent while
/// the broker was away, is left in its queue.
async fn a_reload_while_the_broker_is_away_applies_once_it_is_back(broker: Broker) {
    const K: usize = 20;
    let names = Names::new(broker);
    let (a, b, c) = (names.agent("Weather"), names.agent("News"), names.agent("Gone"));
    let proxy = Proxy::start(broker.port()).await;
    let port = free_port();
    let config = |agents: &[&str]| {
        let mut config = config(broker, &names, agents, port);
        config.broker.url = format!("stomp://127.0.0.1:{}", proxy.port);
        config
    };
    let mut bridge = BridgeProcess::start(&config(&[&a, &c]), port, &names.uid);
    let (producer, _) = broker.connect().await;
    let (_ca, mut inbox_a) = consume_on(broker, &inbox(&names, &a)).await;
    let (_cb, mut inbox_b) = consume_on(broker, &inbox(&names, &b)).await;

    proxy.go_down();
    bridge.wait_log("broker connection lost", 30);
    bridge.reload_with(&config(&[&a, &b]));
    bridge.wait_reloads("applied", 1);
    assert_eq!(bridge.http_get("/readyz").0, 503, "still away");
    for i in 0..K {
        send(&producer, &names.request(&b), &format!("news {i}")).await;
    }
    send(&producer, &names.request(&c), "for the removed one").await;
    proxy.come_back();
    // Sent once both connections are back: a message taken while the publishing connection is
    // still down fails its batch and resets the consuming connection, and Artemis 2.37 may keep
    // such a message "delivering" to a consumer that no longer exists (docs/OPERATING.md, the
    // Artemis table's open problem): a message to A sent while away did not arrive in one run
    // of three on Artemis, after such a reset (not a reload's doing, most likely that problem).
    bridge.wait_metric(|l| l == "bridge_ready 1", 30);
    send(&producer, &names.request(&a), "for a").await;
    // B's messages arriving show its SUBSCRIBE made (written after the reconnect, or, when
    // the consuming connection was still draining when the reload came, restored by it).
    let mut news = Vec::new();
    for _ in 0..K {
        news.push(text_of(&next_message(&mut inbox_b, 30).await));
    }
    assert_eq!(news, (0..K).map(|i| format!("news {i}")).collect::<Vec<_>>());
    assert_eq!(text_of(&next_message(&mut inbox_a, 30).await), "for a");
    let (_cq, mut queue) = consume_on(broker, &names.request(&c)).await;
    assert_eq!(text_of(&next_message(&mut queue, 30).await), "for the removed one", "left for C");
    assert!(!bridge.http_get("/metrics").1.contains("bridge_dead_letters_total{"), "nothing dead-lettered");
}

/// `log.level` changes live: a delivered message is logged at `debug` only after the reload
/// (unless `RUST_LOG` is set, which keeps precedence, and the reload says so).
async fn the_log_level_changes_live(broker: Broker) {
    let names = Names::new(broker);
    let a = names.agent("Weather");
    let port = free_port();
    let started = config(broker, &names, &[&a], port);
    let mut bridge = BridgeProcess::start(&started, port, &names.uid);
    let (producer, _) = broker.connect().await;
    let (_ca, mut inbox_a) = consume_on(broker, &inbox(&names, &a)).await;
    let delivered = |n: u32| {
        move |l: &str| {
            l == format!("bridge_messages_total{{route=\"wiseagents->civitas\",outcome=\"delivered\"}} {n}")
        }
    };
    send(&producer, &names.request(&a), "at info").await;
    next_message(&mut inbox_a, 30).await;
    bridge.wait_metric(delivered(1), 30);
    assert_eq!(bridge.logged("\"message delivered\""), Vec::<String>::new(), "not logged at info");
    let mut debug = started;
    debug.log.level = "debug".into();
    bridge.reload_with(&debug);
    bridge.wait_reloads("applied", 1);
    send(&producer, &names.request(&a), "at debug").await;
    next_message(&mut inbox_a, 30).await;
    if std::env::var_os("RUST_LOG").is_some() {
        let (_, status) = bridge.http_get("/config");
        assert!(status.contains("log.level not applied"), "{status}");
        return;
    }
    let line = bridge.wait_log("\"message delivered\"", 30);
    assert!(line.contains("\"level\":\"DEBUG\""), "{line}");
}

/// What the engine gives back rests on this: a subscription's unacknowledged messages go back
/// to the queue (10 prefetched, 1 acknowledged, then UNSUBSCRIBE). ActiveMQ and Artemis put
/// them back at the UNSUBSCRIBE; RabbitMQ may keep them on the connection until it closes (and
/// refuses a NACK for them then: "Subscription not found", an ERROR that ends the connection).
async fn an_unsubscribed_consumers_unacknowledged_messages_go_back_to_the_queue(broker: Broker) {
    let queue = common::unique_queue("unsubscribed");
    let (producer, _) = broker.connect().await;
    for i in 0..20 {
        send(&producer, &queue, &format!("m {i}")).await;
    }
    let (first, mut held) = broker.connect().await;
    let sub = Subscription::new(&queue, AckMode::ClientIndividual)
        .with("prefetch-count", "10")
        .with("activemq.prefetchSize", "10")
        .with("consumer-window-size", "20480");
    let id = first.subscribe(sub).await.unwrap();
    let m = next_message(&mut held, 30).await;
    first.ack(&m.ack).await.unwrap();
    first.unsubscribe(&id).await.unwrap();
    if broker == Broker::RabbitMq {
        first.disconnect().await.unwrap();
    }
    let (_second, mut other) = consume_on(broker, &queue).await;
    let mut got = BTreeSet::new();
    while got.len() < 19 {
        let next = tokio::time::timeout(std::time::Duration::from_secs(30), other.next_message()).await;
        let m = next.unwrap_or_else(|_| panic!("{} of 19 back in the queue", got.len())).unwrap();
        got.insert(text_of(&m));
    }
    assert!(!got.contains(&text_of(&m)), "the acknowledged one is gone");
    let _ = first.disconnect().await;
}

mod activemq {
    on!(ActiveMq:
        the_log_level_changes_live,
        an_unsubscribed_consumers_unacknowledged_messages_go_back_to_the_queue,
        an_agent_added_under_load_gets_its_messages_and_the_existing_one_loses_none,
        an_agent_removed_under_load_loses_nothing_and_dead_letters_nothing,
        a_broken_file_changes_nothing_and_the_bridge_says_why,
        a_change_that_cannot_be_live_is_refused_and_named,
        a_reload_while_the_broker_is_away_applies_once_it_is_back,
    );
}

mod rabbitmq {
    on!(RabbitMq:
        the_log_level_changes_live,
        an_unsubscribed_consumers_unacknowledged_messages_go_back_to_the_queue,
        an_agent_added_under_load_gets_its_messages_and_the_existing_one_loses_none,
        an_agent_removed_under_load_loses_nothing_and_dead_letters_nothing,
        a_broken_file_changes_nothing_and_the_bridge_says_why,
        a_change_that_cannot_be_live_is_refused_and_named,
        a_reload_while_the_broker_is_away_applies_once_it_is_back,
    );
}

mod artemis {
    on!(Artemis:
        the_log_level_changes_live,
        an_unsubscribed_consumers_unacknowledged_messages_go_back_to_the_queue,
        an_agent_added_under_load_gets_its_messages_and_the_existing_one_loses_none,
        an_agent_removed_under_load_loses_nothing_and_dead_letters_nothing,
        a_broken_file_changes_nothing_and_the_bridge_says_why,
        a_change_that_cannot_be_live_is_refused_and_named,
        a_reload_while_the_broker_is_away_applies_once_it_is_back,
    );
}
