//! The bridge end to end, as a process against real brokers, with Wise Agents agents played
//! by Python stomp.py clients and the other frameworks' agents by STOMP clients that read and
//! write their formats as those frameworks do.

#[macro_use]
mod common;

use common::bridge::{BridgeProcess, Names, WiseAgent, body_file, proxied, start_bridge};
use common::{Broker, next_message, wa_body};
use serde_json::{Value, json};
use stomp_agent_bridge::config::AgentConfig;
use stomp_agent_bridge::envelope::civitas::Encoding;
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Events, Frame, Subscription};

async fn agent_client(broker: Broker, inbox: &str) -> (Client, Events) {
    let (client, events) = broker.connect().await;
    client.subscribe(Subscription::new(inbox, AckMode::Auto)).await.unwrap();
    (client, events)
}

async fn next_json(events: &mut Events) -> (Value, Option<String>) {
    let m = next_message(events, 30).await;
    let ct = m.header("content-type").map(str::to_owned);
    (
        serde_json::from_slice(m.body())
            .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(m.body()))),
        ct,
    )
}

fn json_send(destination: &str, body: &Value) -> Frame {
    Frame::new(Command::Send)
        .with("destination", destination)
        .with("content-type", "application/json")
        .with_body(body.to_string())
}

/// A Wise Agents tool call on its way to a proxied agent: the bridge standing in for it, the
/// proxied agent's STOMP client on its inbox, and the caller listening for the reply.
struct ToolCall {
    _bridge: BridgeProcess,
    agent: Client,
    inbox: Events,
    caller: WiseAgent,
}

/// Starts the bridge for `agent` and sends it a tool call from a Wise Agents agent.
async fn tool_call(broker: Broker, names: &Names, agent: AgentConfig, inbox: &str) -> ToolCall {
    let name = agent.name.clone();
    let bridge = start_bridge(broker, names, vec![agent], |_| ());
    let (agent, inbox) = agent_client(broker, &names.dest(&format!("{inbox}.in.{name}"))).await;
    let caller = names.agent("LLMAgent");
    let listener = WiseAgent::spawn(broker, names, &["receive", &names.response(&caller), "1", "30"]);
    listener.subscribed();
    let request = json!({"_message": "{\"location\": \"Paris\"}", "_sender": caller, "_message_type": "QUERY",
        "_tool_id": "call_9f2c", "_route_response_to": "User", "_context_name": "Weather"});
    let file = body_file(names, "request.yaml", &wa_body(request));
    WiseAgent::run(broker, names, &["send", &names.request(&name), file.to_str().unwrap()]);
    ToolCall { _bridge: bridge, agent, inbox, caller: listener }
}

fn assert_routed_reply(reply: &Value, from: &str, text: &str) {
    assert_eq!(reply["_message"], text, "{reply}");
    assert_eq!(reply["_message_type"], "RESPONSE", "{reply}");
    assert_eq!(reply["_sender"], from, "{reply}");
    assert_eq!(reply["_tool_id"], "call_9f2c", "echoes _tool_id: {reply}");
    assert_eq!(reply["_context_name"], "Weather", "echoes _context_name: {reply}");
    assert_eq!(reply["_route_response_to"], "User", "echoes _route_response_to: {reply}");
}

async fn a_wise_agents_tool_call_answered_by_a_civitas_agent_comes_back_routed(
    broker: Broker,
    encoding: &str,
) {
    let names = Names::new(broker);
    let weather = names.agent("Weather");
    let written = match encoding {
        "msgpack" => Encoding::Msgpack,
        _ => Encoding::Json,
    };
    let agent = AgentConfig { encoding: Some(written), ..proxied(&weather, "civitas") };
    let mut call = tool_call(broker, &names, agent, "civitas").await;
    let caller = names.agent("LLMAgent");
    let m = next_message(&mut call.inbox, 30).await;
    let asked: Value = match encoding {
        "msgpack" => {
            assert_eq!(m.header("content-type"), Some("application/msgpack"));
            rmp_serde::from_slice(m.body()).unwrap()
        }
        _ => serde_json::from_slice(m.body()).unwrap(),
    };
    assert_eq!(
        (asked["type"].as_str(), asked["recipient"].as_str()),
        (Some("message"), Some(weather.as_str()))
    );
    assert_eq!(asked["reply_to"], caller.as_str(), "Civitas replies to reply_to, the requester by name");
    assert_eq!(asked["payload"]["tool_id"], "call_9f2c");
    // Civitas's reply(): recipient = reply_to, correlation_id copied, type "reply".
    let reply = json!({"schema_version": 1, "id": "0193a1b2-0000-7000-8000-000000000001", "type": "reply",
        "sender": weather, "recipient": asked["reply_to"], "correlation_id": asked["correlation_id"],
        "payload": {"message": "sunny, 21 C"}, "timestamp": 1.0, "trace_id": asked["trace_id"], "span_id": "",
        "parent_span_id": asked["span_id"], "attempt": 0, "priority": 0, "ttl": null, "seq": null});
    call.agent.send_confirmed(json_send(&names.dest("civitas.ingress"), &reply)).await.unwrap();
    assert_routed_reply(&call.caller.next(30), &weather, "sunny, 21 C");
}

async fn a_wise_agents_request_answered_by_a_vox_agent_comes_back_routed(broker: Broker) {
    let names = Names::new(broker);
    let ops = names.agent("Ops");
    let uuid = "6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11".parse().unwrap();
    let agent = AgentConfig { uuid: Some(uuid), ..proxied(&ops, "vox") };
    let mut call = tool_call(broker, &names, agent, "vox").await;
    let (asked, _) = next_json(&mut call.inbox).await;
    assert_eq!(asked["type"], "command_request");
    assert_eq!(asked["target"], "6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11");
    assert!(asked["emitted_at"].as_str().unwrap().ends_with('Z'));
    // VOX echoes nothing but reply_to = the request's message_id.
    let reply = json!({"message_id": "5b0c9c1e-8a4a-4c55-9a66-0e7f1b2c3d4e", "message_source": "ops-console",
        "emitted_at": "2026-11-30T10:00:00+00:00", "source": asked["target"], "target": asked["source"],
        "type": "command_result", "details": {"message": "restarted"}, "reply_to": asked["message_id"]});
    call.agent.send_confirmed(json_send(&names.dest("vox.ingress"), &reply)).await.unwrap();
    assert_routed_reply(&call.caller.next(30), &ops, "restarted");
}

async fn a_wise_agents_request_answered_by_a_penguiflow_agent_comes_back_routed(broker: Broker) {
    let names = Names::new(broker);
    let planner = names.agent("Planner");
    let mut call = tool_call(broker, &names, proxied(&planner, "penguiflow"), "penguiflow").await;
    let caller = names.agent("LLMAgent");
    let (asked, _) = next_json(&mut call.inbox).await;
    assert_eq!(asked["headers"]["tenant"], "acme");
    assert_eq!(asked["meta"]["reply_to"], caller.as_str());
    // PenguiFlow copies meta forward; the answer is a FinalAnswer.
    let mut reply = asked.clone();
    reply["payload"] = json!({"text": "Rome, 3 days", "citations": []});
    call.agent.send_confirmed(json_send(&names.dest("penguiflow.ingress"), &reply)).await.unwrap();
    assert_routed_reply(&call.caller.next(30), &planner, "Rome, 3 days");
}

/// A proxied Civitas `Researcher` and a native Wise Agents `Librarian` that answers one request:
/// the names, the bridge, and the librarian subscribed.
fn a_researcher_and_a_librarian(broker: Broker) -> (Names, String, String, BridgeProcess, WiseAgent) {
    let names = Names::new(broker);
    let (civ, native) = (names.agent("Researcher"), names.agent("Librarian"));
    let bridge = start_bridge(broker, &names, vec![proxied(&civ, "civitas")], |_| ());
    let server = WiseAgent::spawn(broker, &names, &["serve", &native, "1", "30"]);
    server.subscribed();
    (names, civ, native, bridge, server)
}

async fn a_civitas_agent_asking_a_native_agent_gets_the_answer_with_its_correlation_id(broker: Broker) {
    let (names, civ, native, _bridge, server) = a_researcher_and_a_librarian(broker);
    let (civitas, mut inbox) = agent_client(broker, &names.dest(&format!("civitas.in.{civ}"))).await;
    // Civitas's ask(): a new correlation_id, reply_to the asker.
    let ask = json!({"schema_version": 1, "id": "0193a1b2-0000-7000-8000-0000000000aa", "type": "message",
        "sender": civ, "recipient": native, "correlation_id": "0193a1b2-0000-7000-8000-0000000000cc",
        "reply_to": civ, "payload": {"message": "find 'dune'", "context_name": "Books"}, "timestamp": 1.0,
        "trace_id": "", "span_id": "", "parent_span_id": null, "attempt": 0, "priority": 0, "ttl": null, "seq": null});
    civitas.send_confirmed(json_send(&names.dest("civitas.ingress"), &ask)).await.unwrap();

    let seen = server.next(30);
    assert_eq!(
        (seen["_sender"].as_str(), seen["_message"].as_str()),
        (Some(civ.as_str()), Some("find 'dune'"))
    );
    assert_eq!(seen["_route_response_to"], civ.as_str(), "the answer comes back through the bridge");
    assert_eq!(seen["_context_name"], "Books");
    let (answer, ct) = next_json(&mut inbox).await;
    assert_eq!(ct.as_deref(), Some("application/json"));
    assert_eq!(answer["type"], "reply");
    assert_eq!(answer["recipient"], civ.as_str());
    assert_eq!(
        answer["correlation_id"], "0193a1b2-0000-7000-8000-0000000000cc",
        "Civitas's own correlation id"
    );
    assert_eq!(answer["payload"]["message"], "answer: find 'dune'");
    server.wait_success();
}

/// Civitas's `Runtime.ask()` asks as `_runtime`, a name no queue serves: the native agent
/// answers the bridge's own reply name, and the answer reaches the ask's `_reply.*` address.
async fn a_civitas_runtime_ask_is_answered_through_the_bridges_reply_queue(broker: Broker) {
    let (names, _civ, native, _bridge, server) = a_researcher_and_a_librarian(broker);
    let reply_to = "_reply.0193a1b2-0000-7000-8000-0000000000dd";
    let (_c, mut inbox) = agent_client(broker, &names.dest(&format!("civitas.in.{reply_to}"))).await;
    let ask = json!({"schema_version": 1, "id": "0193a1b2-0000-7000-8000-0000000000ab", "type": "message",
        "sender": "_runtime", "recipient": native, "correlation_id": "0193a1b2-0000-7000-8000-0000000000cd",
        "reply_to": reply_to, "payload": {"message": "find 'ubik'"}, "timestamp": 1.0});
    let (civitas, _) = broker.connect().await;
    civitas.send_confirmed(json_send(&names.dest("civitas.ingress"), &ask)).await.unwrap();
    let seen = server.next(30);
    assert_eq!(
        seen["_sender"],
        names.reply_agent().as_str(),
        "a name whose response queue the bridge consumes"
    );
    let (answer, _) = next_json(&mut inbox).await;
    assert_eq!(
        (answer["recipient"].as_str(), answer["payload"]["message"].as_str()),
        (Some(reply_to), Some("answer: find 'ubik'"))
    );
    assert_eq!(answer["correlation_id"], "0193a1b2-0000-7000-8000-0000000000cd");
    server.wait_success();
}

async fn an_agent_named_by_a_glob_is_found_when_its_queue_appears(broker: Broker) {
    let names = Names::new(broker);
    let glob = names.agent("Glob*");
    let agent = names.agent("Glob").replace('_', "_A_");
    let mut bridge = start_bridge(broker, &names, vec![proxied(&glob, "civitas")], |_| ());
    let (_c, mut inbox) = agent_client(broker, &names.dest(&format!("civitas.in.{agent}"))).await;
    let request = json!({"_message": "hello", "_sender": names.agent("Asker"), "_context_name": "default"});
    let file = body_file(&names, "request.yaml", &wa_body(request));
    WiseAgent::run(broker, &names, &["send", &names.request(&agent), file.to_str().unwrap()]);
    let line = bridge.wait_log(r#""cause":"discovered""#, 30);
    assert!(line.contains(&names.request(&agent)), "{line}");
    let (asked, _) = next_json(&mut inbox).await;
    assert_eq!(asked["recipient"], agent.as_str());
}

mod activemq {
    on!(ActiveMq:
        a_wise_agents_tool_call_answered_by_a_civitas_agent_comes_back_routed("json"),
        a_wise_agents_request_answered_by_a_vox_agent_comes_back_routed,
        a_wise_agents_request_answered_by_a_penguiflow_agent_comes_back_routed,
        a_civitas_agent_asking_a_native_agent_gets_the_answer_with_its_correlation_id,
        a_civitas_runtime_ask_is_answered_through_the_bridges_reply_queue,
        an_agent_named_by_a_glob_is_found_when_its_queue_appears,
    );

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_msgpack_civitas_agent_is_served_in_msgpack() {
        super::a_wise_agents_tool_call_answered_by_a_civitas_agent_comes_back_routed(
            super::Broker::ActiveMq,
            "msgpack",
        )
        .await
    }
}

mod rabbitmq {
    on!(RabbitMq:
        a_wise_agents_tool_call_answered_by_a_civitas_agent_comes_back_routed("json"),
        a_civitas_agent_asking_a_native_agent_gets_the_answer_with_its_correlation_id,
        a_civitas_runtime_ask_is_answered_through_the_bridges_reply_queue,
    );
}

/// Artemis has no advisories: an agent named by a glob cannot be discovered there
/// (config/artemis.toml lists agents by name).
mod artemis {
    on!(Artemis:
        a_wise_agents_tool_call_answered_by_a_civitas_agent_comes_back_routed("json"),
        a_wise_agents_request_answered_by_a_vox_agent_comes_back_routed,
        a_wise_agents_request_answered_by_a_penguiflow_agent_comes_back_routed,
        a_civitas_agent_asking_a_native_agent_gets_the_answer_with_its_correlation_id,
    );

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_msgpack_civitas_agent_is_served_in_msgpack() {
        super::a_wise_agents_tool_call_answered_by_a_civitas_agent_comes_back_routed(
            super::Broker::Artemis,
            "msgpack",
        )
        .await
    }
}
