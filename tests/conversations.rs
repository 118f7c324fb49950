//! Conversations as the real frameworks hold them (issue 9), end to end: the bridge as a
//! process on a real broker, Wise Agents agents played by stomp.py + PyYAML as core.py and
//! the coordinators behave (tests/e2e/wa_agent.py), Civitas, VOX and PenguiFlow agents by
//! their own message code (tests/e2e/peer_agent.py). Each test names the rule of
//! docs/MAPPING.md ("Conversations") it checks.

#[macro_use]
mod common;

use common::bridge::{BridgeProcess, Names, WiseAgent, body_file, proxied, start_bridge};
use common::{Broker, wa_body};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use stomp_agent_bridge::config::AgentConfig;

/// A Wise Agents tool call (as utility_wise_agents.py sends one) from `caller` to `to`;
/// returns the caller listening on its response queue for `n` answers.
fn tool_call(broker: Broker, names: &Names, caller: &str, to: &str, n: usize) -> WiseAgent {
    let listener =
        WiseAgent::spawn(broker, names, &["receive", &names.response(caller), &n.to_string(), "30"]);
    listener.subscribed();
    let request = json!({"_message": "{\"city\": \"Paris\"}", "_sender": caller, "_tool_id": "call_9f2c",
        "_route_response_to": "User", "_context_name": "default"});
    let file = body_file(names, "call.yaml", &wa_body(request));
    WiseAgent::run(broker, names, &["send", &names.request(to), file.to_str().unwrap()]);
    listener
}

/// Waits until `/metrics` shows `line` (an event the bridge counts).
fn wait_metric(bridge: &BridgeProcess, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, text) = bridge.http_get("/metrics");
        if text.lines().any(|l| l == line) {
            return;
        }
        assert!(Instant::now() < deadline, "no {line:?} in /metrics:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Rules 1, 2 and 7: a Civitas agent asks a plain Wise Agents agent (which echoes nothing)
/// thirty things at once with request(): each answer reaches the asker's own inbox (not a
/// queue per `_reply.*` address) with its own `_reply.*` recipient and correlation id; the
/// unknown context it named is not written.
async fn concurrent_civitas_asks_reach_their_own_reply_addresses(broker: Broker) {
    let names = Names::new(broker);
    let civ = names.agent("Researcher");
    let native = names.agent("Librarian");
    let bridge = start_bridge(broker, &names, vec![proxied(&civ, "civitas")], |_| ());
    let server = WiseAgent::spawn(broker, &names, &["plain", &native, "30", "60"]);
    server.subscribed();
    let asker = WiseAgent::spawn_peer(
        broker,
        &names,
        &["civitas-ask", &civ, &native, "30", "dune", "foundation", "hyperion", "solaris", "ubik"],
        &[("CIVITAS_CONTEXT", "Invented")],
    );
    asker.subscribed();
    let asks = asker.next(30)["asks"].as_array().unwrap().clone();
    for _ in 0..30 {
        let seen = server.next(30);
        assert_eq!(seen["_context_name"], "default", "an unknown context is never written: {seen}");
        assert_eq!(seen["_sender"], civ.as_str());
    }
    let mut replies = HashMap::new();
    for _ in 0..30 {
        let line = asker.next(30);
        replies.insert(line["reply"]["correlation_id"].as_str().unwrap().to_owned(), line);
    }
    for ask in &asks {
        let cid = ask["correlation_id"].as_str().unwrap();
        let line = replies.get(cid).unwrap_or_else(|| panic!("no answer for {cid}: {replies:?}"));
        let reply_to = ask["reply_to"].as_str().unwrap();
        assert!(reply_to.starts_with("_reply."));
        // On the asker's inbox, never a queue per ask; the address and correlation name the ask.
        assert_eq!(line["destination"], names.dest(&format!("civitas.in.{civ}")), "{line}");
        assert_eq!(line["reply"]["recipient"], reply_to);
        assert_eq!(line["reply"]["type"], "reply");
        assert_eq!(line["reply"]["payload"]["message"], format!("answer: {}", ask["text"].as_str().unwrap()));
    }
    wait_metric(&bridge, "bridge_pending_asks 0");
    let (_, metrics) = bridge.http_get("/metrics");
    assert!(
        metrics.contains("\nbridge_unmatched_replies_total 0\n"),
        "every answer matched its ask:\n{metrics}"
    );
}

/// Rule 3: a VOX agent auto-acknowledges, then answers: the caller gets the answer only.
async fn a_vox_receipt_is_not_the_answer(broker: Broker) {
    let names = Names::new(broker);
    let ops = names.agent("Ops");
    let uuid = "6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11";
    let bridge = start_bridge(
        broker,
        &names,
        vec![AgentConfig { uuid: Some(uuid.parse().unwrap()), ..proxied(&ops, "vox") }],
        |_| (),
    );
    let agent = WiseAgent::spawn_peer(broker, &names, &["vox-serve", &ops, uuid, "1"], &[]);
    agent.subscribed();
    let caller = names.agent("LLMAgent");
    let listener = tool_call(broker, &names, &caller, &ops, 1);
    let answer = listener.next(30);
    assert_eq!(answer["_message_type"], "RESPONSE", "{answer}");
    assert_eq!(answer["_message"], "done: {\"city\": \"Paris\"}");
    assert_eq!(
        (answer["_tool_id"].as_str(), answer["_route_response_to"].as_str()),
        (Some("call_9f2c"), Some("User"))
    );
    wait_metric(&bridge, "bridge_receipts_total 1");
    listener.wait_success();
}

/// Rules 4 and 6: a PenguiFlow node answering with `model_copy(update={"payload": ...})`
/// (text or dict), and a Civitas agent whose reply payload has a `type`, are answers.
async fn answers_are_known_by_their_correlation_not_their_shape(broker: Broker) {
    let names = Names::new(broker);
    let (text_node, dict_node, civ) =
        (names.agent("PlannerT"), names.agent("PlannerD"), names.agent("Weather"));
    let _bridge = start_bridge(
        broker,
        &names,
        vec![proxied(&text_node, "penguiflow"), proxied(&dict_node, "penguiflow"), proxied(&civ, "civitas")],
        |_| (),
    );
    let t = WiseAgent::spawn_peer(broker, &names, &["penguiflow-serve", &text_node, "1", "text"], &[]);
    let d = WiseAgent::spawn_peer(broker, &names, &["penguiflow-serve", &dict_node, "1", "dict"], &[]);
    let c = WiseAgent::spawn_peer(broker, &names, &["civitas-serve", &civ, "1", "typed"], &[]);
    for a in [&t, &d, &c] {
        a.subscribed();
    }
    for (node, want) in [
        (&text_node, "answer: {\"city\": \"Paris\"}".to_owned()),
        (&dict_node, json!({"plan": ["fly", "walk"], "for": "{\"city\": \"Paris\"}"}).to_string()),
        (&civ, "answer: {\"city\": \"Paris\"}".to_owned()),
    ] {
        let caller = names.agent("Caller");
        let answer = tool_call(broker, &names, &caller, node, 1).next(30);
        assert_eq!(answer["_message_type"], "RESPONSE", "{node}: {answer}");
        assert_eq!(answer["_sender"], node.as_str());
        assert_eq!(answer["_tool_id"], "call_9f2c");
        let got: Value =
            serde_json::from_str(answer["_message"].as_str().unwrap()).unwrap_or(answer["_message"].clone());
        let want_v: Value = serde_json::from_str(&want).unwrap_or(Value::String(want.clone()));
        assert_eq!(got, want_v, "{node}");
    }
}

/// Rules 5 and 7: a PenguiFlow ask answered by a plain Wise Agents agent comes back with
/// its trace, tenant, deadline and meta; its topic is not a context.
async fn a_penguiflow_ask_gets_its_trace_and_meta_back(broker: Broker) {
    let names = Names::new(broker);
    let node = names.agent("Planner");
    let native = names.agent("Guide");
    let _bridge = start_bridge(broker, &names, vec![proxied(&node, "penguiflow")], |_| ());
    let server = WiseAgent::spawn(broker, &names, &["plain", &native, "1", "30"]);
    server.subscribed();
    let asker =
        WiseAgent::spawn_peer(broker, &names, &["penguiflow-ask", &node, &native, "3 days in Rome"], &[]);
    asker.subscribed();
    let seen = server.next(30);
    assert_eq!(seen["_context_name"], "default", "headers.topic is not a context: {seen}");
    let line = asker.next(30);
    let (asked, answer) = (&line["asked"], &line["answer"]);
    assert_eq!(answer["trace_id"], asked["trace_id"]);
    assert_eq!(answer["headers"]["tenant"], "acme");
    assert_eq!(answer["deadline_s"], asked["deadline_s"]);
    assert_eq!(answer["meta"]["session"], "s-42");
    assert_eq!(answer["meta"]["in_reply_to"], asked["meta"]["message_id"], "the link to the ask");
    assert_eq!(answer["payload"], json!({"text": "answer: 3 days in Rome", "citations": []}));
}

/// Rule 8: a phased coordinator gets ACK (else it raises); error answers are CANNOT_ANSWER.
async fn answers_have_the_types_their_receivers_act_on(broker: Broker) {
    let names = Names::new(broker);
    let (civ, failing, budget) = (names.agent("Expert"), names.agent("Broken"), names.agent("Tired"));
    let coordinator = names.agent("Coordinator");
    let glob = format!("{coordinator}.*");
    let _bridge = start_bridge(
        broker,
        &names,
        vec![proxied(&civ, "civitas"), proxied(&failing, "civitas"), proxied(&budget, "penguiflow")],
        |c| c.wiseagents.ack_contexts = vec![glob],
    );
    let expert = WiseAgent::spawn_peer(broker, &names, &["civitas-serve", &civ, "1", "plain"], &[]);
    let broken = WiseAgent::spawn_peer(broker, &names, &["civitas-serve", &failing, "1", "error"], &[]);
    let tired = WiseAgent::spawn_peer(broker, &names, &["penguiflow-serve", &budget, "1", "budget"], &[]);
    for a in [&expert, &broken, &tired] {
        a.subscribed();
    }
    let context = format!("{coordinator}.3f1c9a52-7d0e-4b8e-9f61-2a4c5b6d7e80");
    let phased = WiseAgent::spawn(broker, &names, &["coordinate", &coordinator, &civ, &context, "30"]);
    phased.subscribed();
    let ack = phased.next(30);
    assert_eq!(ack["_message_type"], "ACK", "{ack}");
    assert_eq!(ack["_context_name"], context.as_str(), "its own sub-context comes back");
    assert_eq!(ack["_message"], "answer: what is the weather?", "the ACK carries the answer");
    assert!(phased.succeeded(), "the coordinator accepted the answer");
    for (agent, text) in [(&failing, "cannot do {\"city\": \"Paris\"}"), (&budget, "Hop budget exhausted")] {
        let answer = tool_call(broker, &names, &names.agent("Caller"), agent, 1).next(30);
        assert_eq!(answer["_message_type"], "CANNOT_ANSWER", "{agent}: {answer}");
        assert_eq!(answer["_message"], text);
        assert_eq!(answer["_tool_id"], "call_9f2c");
    }
}

/// Rule 11: an ask with no answer within the reply timeout gets an error answer in the
/// asker's format; the answer coming after it is dropped and counted.
async fn an_unanswered_ask_gets_an_error_answer_and_a_late_one_is_dropped(broker: Broker) {
    let names = Names::new(broker);
    let civ = names.agent("Slow");
    let asker_civ = names.agent("Asker");
    let nobody = names.agent("Nobody");
    let bridge =
        start_bridge(broker, &names, vec![proxied(&civ, "civitas"), proxied(&asker_civ, "civitas")], |c| {
            c.delivery.reply_timeout_ms = 1500
        });
    let slow = WiseAgent::spawn_peer(broker, &names, &["civitas-serve", &civ, "1", "silent"], &[]);
    slow.subscribed();
    let started = Instant::now();
    let caller = names.agent("LLMAgent");
    let answer = tool_call(broker, &names, &caller, &civ, 1).next(30);
    assert!(started.elapsed() >= Duration::from_millis(1500), "not before the timeout");
    assert_eq!(answer["_message_type"], "CANNOT_ANSWER", "{answer}");
    assert_eq!(
        (answer["_tool_id"].as_str(), answer["_route_response_to"].as_str()),
        (Some("call_9f2c"), Some("User"))
    );
    assert_eq!(answer["_sender"], civ.as_str());
    // A Civitas request() nobody answers: Civitas's own error reply shape, its correlation.
    let asker =
        WiseAgent::spawn_peer(broker, &names, &["civitas-ask", &asker_civ, &nobody, "1", "anyone?"], &[]);
    asker.subscribed();
    let cid = asker.next(30)["asks"][0]["correlation_id"].clone();
    let reply = asker.next(30)["reply"].clone();
    assert_eq!((reply["type"].as_str(), reply["payload"]["status"].as_str()), (Some("reply"), Some("error")));
    assert_eq!(reply["correlation_id"], cid);
    // The slow agent's late answer, as reply() would build it.
    let asked = slow.next(30)["received"].clone();
    let late = json!({"schema_version": 1, "id": "0193a1b2-0000-7000-8000-0000000000ee", "type": "reply",
        "sender": civ, "recipient": asked["reply_to"], "correlation_id": asked["correlation_id"],
        "payload": {"message": "sorry, late"}, "timestamp": 1.0, "trace_id": "", "span_id": "",
        "parent_span_id": null, "attempt": 0, "priority": 0});
    let (client, _events) = broker.connect().await;
    let frame = stomp_agent_bridge::stomp::Frame::new(stomp_agent_bridge::stomp::Command::Send)
        .with("destination", names.dest("civitas.ingress"))
        .with("content-type", "application/json")
        .with_body(late.to_string());
    client.send_confirmed(frame).await.unwrap();
    wait_metric(&bridge, "bridge_late_replies_total 1");
    wait_metric(&bridge, "bridge_reply_timeouts_total 2");
    wait_metric(&bridge, "bridge_pending_asks 0");
}

/// Rules 9 and 10: Civitas's priority (a lane) is not PenguiFlow's (a hint), `ttl` and
/// `deadline_s` convert, a message expired on arrival and a signed Civitas envelope are
/// dead-lettered (`expired`, `signed`).
async fn priority_expiry_and_signatures_keep_their_meaning(broker: Broker) {
    use stomp_agent_bridge::stomp::{AckMode, Command, Frame, Subscription};
    let names = Names::new(broker);
    let node = names.agent("Planner");
    let _bridge = start_bridge(broker, &names, vec![proxied(&node, "penguiflow")], |_| ());
    let planner = WiseAgent::spawn_peer(broker, &names, &["penguiflow-serve", &node, "1", "text"], &[]);
    planner.subscribed();
    let (client, mut dead) = broker.connect().await;
    client.subscribe(Subscription::new(names.dest("dead"), AckMode::Auto)).await.unwrap();
    let send = |body: Vec<u8>, ct: &str, dest: String| {
        Frame::new(Command::Send).with("destination", dest).with("content-type", ct).with_body(body)
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let ask = json!({"schema_version": 1, "id": "0193a1b2-0000-7000-8000-0000000000a1", "type": "message",
        "sender": names.agent("Civ"), "recipient": node, "correlation_id": "0193a1b2-0000-7000-8000-0000000000c1",
        "reply_to": null, "payload": {"message": "urgent"}, "timestamp": now, "trace_id": "", "span_id": "",
        "parent_span_id": null, "attempt": 0, "priority": 1, "ttl": 600.0, "seq": null});
    let civ_ingress = names.dest("civitas.ingress");
    client
        .send_confirmed(send(ask.to_string().into_bytes(), "application/json", civ_ingress.clone()))
        .await
        .unwrap();
    let received = planner.next(30)["received"].clone();
    assert_eq!(
        received["headers"]["priority"], 0,
        "Civitas's system lane is not a PenguiFlow hint: {received}"
    );
    let deadline = received["deadline_s"].as_f64().unwrap();
    assert!((deadline - (now + 600.0)).abs() < 0.01, "ttl became deadline_s: {deadline} vs {now}");
    // Already expired on arrival.
    let expired = json!({"payload": "too late", "headers": {"tenant": "acme"}, "deadline_s": now - 10.0,
        "meta": {"sender": node, "recipient": names.agent("Someone")}});
    let pf_ingress = names.dest("penguiflow.ingress");
    client
        .send_confirmed(send(expired.to_string().into_bytes(), "application/json", pf_ingress))
        .await
        .unwrap();
    let m = common::next_message(&mut dead, 30).await;
    assert_eq!(m.header("bridge-error-kind"), Some("expired"), "{:?}", m.frame);
    // A signed envelope as civitas/security/signing.py writes it (msgpack, binary nonce and value).
    fn bin<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }
    #[derive(serde::Serialize)]
    struct Sig {
        signer: String,
        alg: &'static str,
        #[serde(serialize_with = "bin")]
        value: [u8; 64],
        #[serde(serialize_with = "bin")]
        nonce: [u8; 16],
    }
    #[derive(serde::Serialize)]
    struct Signed {
        v: i64,
        msg: Value,
        sig: Sig,
    }
    let signed = Signed {
        v: 2,
        msg: ask.clone(),
        sig: Sig { signer: names.agent("Civ"), alg: "ed25519", value: [7; 64], nonce: [1; 16] },
    };
    let body = rmp_serde::to_vec_named(&signed).unwrap();
    client.send_confirmed(send(body, "application/msgpack", civ_ingress)).await.unwrap();
    let m = common::next_message(&mut dead, 30).await;
    assert_eq!(m.header("bridge-error-kind"), Some("signed"), "{:?}", m.frame);
    assert!(m.header("bridge-error").unwrap().contains("signed Civitas envelope"));
}

/// Rule 10: a Civitas `stream_reply()` answer reaches a Wise Agents caller as one answer.
async fn a_civitas_stream_reply_arrives_as_one_answer(broker: Broker) {
    let names = Names::new(broker);
    let civ = names.agent("Streamer");
    let bridge = start_bridge(broker, &names, vec![proxied(&civ, "civitas")], |_| ());
    let agent = WiseAgent::spawn_peer(broker, &names, &["civitas-serve", &civ, "1", "stream"], &[]);
    agent.subscribed();
    let answer = tool_call(broker, &names, &names.agent("Caller"), &civ, 1).next(30);
    assert_eq!(answer["_message"], "sunny, 21 C", "{answer}");
    assert_eq!(
        (answer["_message_type"].as_str(), answer["_tool_id"].as_str()),
        (Some("RESPONSE"), Some("call_9f2c"))
    );
    let (_, metrics) = bridge.http_get("/metrics");
    assert!(!metrics.contains("bridge_dead_letters_total{"), "nothing dead-lettered:\n{metrics}");
}

mod activemq {
    on!(ActiveMq:
        concurrent_civitas_asks_reach_their_own_reply_addresses,
        a_vox_receipt_is_not_the_answer,
        answers_are_known_by_their_correlation_not_their_shape,
        a_penguiflow_ask_gets_its_trace_and_meta_back,
        answers_have_the_types_their_receivers_act_on,
        an_unanswered_ask_gets_an_error_answer_and_a_late_one_is_dropped,
        priority_expiry_and_signatures_keep_their_meaning,
        a_civitas_stream_reply_arrives_as_one_answer,
    );
}

mod rabbitmq {
    // Reply addresses are not destinations of their own, and the timeout path publishes from the tick.
    on!(RabbitMq:
        concurrent_civitas_asks_reach_their_own_reply_addresses,
        an_unanswered_ask_gets_an_error_answer_and_a_late_one_is_dropped,
    );
}

mod artemis {
    on!(Artemis:
        concurrent_civitas_asks_reach_their_own_reply_addresses,
        a_vox_receipt_is_not_the_answer,
        answers_are_known_by_their_correlation_not_their_shape,
        a_penguiflow_ask_gets_its_trace_and_meta_back,
        answers_have_the_types_their_receivers_act_on,
        an_unanswered_ask_gets_an_error_answer_and_a_late_one_is_dropped,
        priority_expiry_and_signatures_keep_their_meaning,
        a_civitas_stream_reply_arrives_as_one_answer,
    );
}
