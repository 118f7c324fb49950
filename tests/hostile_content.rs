//! Hostile content through the whole bridge, against the fake broker: each body is refused
//! with its reason on the dead-letter queue (`bridge-error-kind`) and counted by kind, and the
//! stream carries on; Civitas control types cannot be reached from Wise Agents text. In
//! memory, under tokio's paused clock.

mod common;

use common::fake::{Conn, Pair, start_in_memory, stop_pair, wait_for, weather_config};
use serde_json::{Value, json};
use std::collections::HashMap;
use stomp_agent_bridge::config::{Config, DeliveryConfig, DeliveryMode};
use stomp_agent_bridge::stomp::{Command, Frame};

const REQUEST: &str = "/queue/request/Weather";
const INGRESS: &str = "/queue/fake.civ.ingress";
const DEAD: &str = "/queue/fake.dead";
const INBOX: &str = "/queue/fake.civ.Weather";

/// The fake broker's configuration with `Asker` a native agent.
fn config(port: u16) -> Config {
    let delivery = DeliveryConfig {
        dead_letter: DEAD.into(),
        mode: DeliveryMode::Confirm,
        batch_max: 1,
        max_body_bytes: 4096,
        ..Default::default()
    };
    let mut config = weather_config(port, [0, 0], delivery);
    config.wiseagents.agents = vec!["Asker".into()];
    config.protocols.civitas.as_mut().expect("[protocols.civitas]").ingress = INGRESS.into();
    config
}

fn wise(fields: &str) -> String {
    format!(
        "!wiseagents.WiseAgentMessage\n_context_name: default\n{fields}_message_type: QUERY\n_route_response_to: Asker\n_sender: Asker\n_tool_id: call_1\n"
    )
}

fn vector(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../shared/vectors/wiseagents/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn civitas(kind: &str) -> Vec<u8> {
    json!({"type": kind, "sender": "CivAgent", "recipient": "Asker", "correlation_id": "c1", "seq": 0,
        "payload": {"message": "hi"}})
    .to_string()
    .into_bytes()
}

/// What it is, destination, content-type, body, the dead-letter kind expected.
type HostileCase = (&'static str, &'static str, Option<&'static str>, Vec<u8>, &'static str);

fn hostile() -> Vec<HostileCase> {
    let msgpack = rmp_serde::to_vec_named(&json!({"sender": "CivAgent", "recipient": "Asker"})).unwrap();
    let alias_bomb = "!wiseagents.WiseAgentMessage\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
         c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n_message: *c\n"
        .to_owned();
    vec![
        ("python tag", REQUEST, None, vector("24_python_exec.yaml"), "hostile"),
        ("billion laughs, untagged", REQUEST, None, vector("25_billion_laughs.yaml"), "wrong_shape"),
        ("alias bomb in _message", REQUEST, None, alias_bomb.into_bytes(), "hostile"),
        (
            "python object as _message",
            REQUEST,
            None,
            wise("_message: !!python/object/apply:os.system ['echo pwned']\n").into_bytes(),
            "hostile",
        ),
        ("_agency.shutdown", INGRESS, None, civitas("_agency.shutdown"), "reserved_type"),
        ("_agency.register", INGRESS, None, civitas("_agency.register"), "reserved_type"),
        ("civitas.stream.credit", INGRESS, None, civitas("civitas.stream.credit"), "stream"),
        ("civitas.stream.cancel", INGRESS, None, civitas("civitas.stream.cancel"), "stream"),
        ("msgpack said to be JSON", INGRESS, Some("application/json"), msgpack, "content_type"),
        ("JSON said to be msgpack", INGRESS, Some("application/msgpack"), civitas("message"), "content_type"),
        (
            "YAML said to be JSON",
            INGRESS,
            Some("application/json"),
            wise("_message: hi\n").into_bytes(),
            "json",
        ),
        (
            "over max_body_bytes once translated",
            REQUEST,
            Some("application/json"),
            wise(&format!("_message: \"{}\"\n", "\\x01".repeat(1000))).into_bytes(),
            "too_large",
        ),
    ]
}

async fn deliver(conn: &mut Conn, subscriptions: &HashMap<String, String>, n: usize, case: &HostileCase) {
    let (_, destination, content_type, body, _) = case;
    let mut msg = Frame::new(Command::Message)
        .with("subscription", subscriptions[*destination].as_str())
        .with("message-id", format!("ID:hostile-{n}"))
        .with("ack", format!("ack-{n}"))
        .with("destination", *destination)
        .with_body(body.clone());
    if let Some(ct) = content_type {
        msg = msg.with("content-type", *ct);
    }
    conn.send(msg).await;
}

/// Plays the broker until the bridge has settled the message just delivered: the SEND
/// (confirmed) on the publishing connection, then its ACK on the consuming one. Returns the
/// SEND.
async fn settled(pair: &mut Pair, n: usize) -> Frame {
    let sent = pair.publishing.expect(Command::Send).await;
    pair.publishing.receipt(&sent).await;
    let ack = pair.consuming.expect(Command::Ack).await;
    assert_eq!(ack.header("id"), Some(format!("ack-{n}").as_str()));
    sent
}

#[tokio::test(start_paused = true)]
async fn hostile_bodies_are_dead_lettered_with_their_reason_counted_and_the_stream_goes_on() {
    let (listener, metrics, shutdown, bridge) = start_in_memory("hostile", config).await;
    let mut conn = Conn::accept(&listener).await;
    let publishing = Conn::accept(&listener).await;
    let mut subscriptions = HashMap::new();
    // Ingress, request, response, and the response queue of the bridge's reply name.
    for _ in 0..4 {
        let sub = conn.expect(Command::Subscribe).await;
        conn.receipt(&sub).await;
        subscriptions
            .insert(sub.header("destination").unwrap().to_owned(), sub.header("id").unwrap().to_owned());
    }
    let mut pair = Pair { consuming: conn, publishing };
    let cases = hostile();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (n, case) in cases.iter().enumerate() {
        deliver(&mut pair.consuming, &subscriptions, n, case).await;
        let sent = settled(&mut pair, n).await;
        let (what, destination, _, body, kind) = case;
        assert_eq!(sent.header("destination"), Some(DEAD), "{what}");
        assert_eq!(
            sent.header("bridge-error-kind"),
            Some(*kind),
            "{what}: {:?}",
            sent.header("bridge-error")
        );
        assert_eq!(sent.header("bridge-source"), Some(*destination), "{what}");
        assert!(!sent.header("bridge-error").unwrap_or_default().is_empty(), "{what}: a reason");
        assert_eq!(sent.body.as_ref(), body.as_slice(), "{what}: the body unchanged");
        *counts.entry(kind).or_default() += 1;
    }
    // The stream goes on: Wise Agents text naming Civitas control types reaches the agent as
    // what it is, an ordinary message.
    let injection = wise("_message: '{\"type\": \"_agency.shutdown\"}'\n")
        .replace("_sender: Asker", "_sender: _agency.register")
        .replace("_context_name: default", "_context_name: civitas.stream.end");
    let case: HostileCase = ("injection", REQUEST, None, injection.into_bytes(), "");
    deliver(&mut pair.consuming, &subscriptions, cases.len(), &case).await;
    let sent = settled(&mut pair, cases.len()).await;
    assert_eq!(sent.header("destination"), Some(INBOX));
    let civitas: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(civitas["type"], "message", "{civitas}");
    assert!(civitas["payload"].get("type").is_none(), "{civitas}");
    assert_eq!(civitas["payload"]["message"], "{\"type\": \"_agency.shutdown\"}");

    for (kind, n) in counts {
        wait_for(&metrics, &format!("bridge_dead_letters_total{{kind=\"{kind}\"}} {n}")).await;
    }
    stop_pair(pair, shutdown, bridge).await;
}
