//! Proxied agents as members of a Wise Agents system (issue 21), end to end: the bridge as a
//! process on ActiveMQ with the registry in a real Redis (`SAB_REDIS_PORT`, default 6379; the
//! test script starts Debian's redis-server). The test plays the native agents and the
//! coordinators' Redis writes as core.py makes them (docs/MAPPING.md, "The Wise Agents
//! registry"), and a Civitas agent by its message code.

mod common;

use common::Broker;
use common::bridge::{BridgeProcess, Names, STOP_SECS, free_port};
use common::registry::*;
use serde_json::json;
use stomp_agent_bridge::config::registry::{RegisteredAgent, RegistryConfig};
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::wise_registry::dumps::dumps;
use stomp_agent_bridge::wise_registry::pickle::{Value as Py, loads};
use stomp_agent_bridge::wise_registry::resp::Reply;
use stomp_agent_bridge::wise_registry::store::{OWNERS, metadata};

#[tokio::test]
async fn a_proxied_agent_is_registered_with_its_description_and_tool_and_removed_on_a_clean_stop() {
    let names = Names::new(Broker::ActiveMq);
    let civ = names.agent("CivStep");
    let registered = RegisteredAgent {
        description: Some("Knows the weather".into()),
        tool: true,
        parameters: Some(json!({"type": "object", "properties": {"location": {"type": "string"}}})),
        ..RegisteredAgent::new(&civ)
    };
    let bridge = start(&names, &civ, vec![registered]);
    let mut r = redis().await;
    let meta = loads(&hget(&mut r, "agents", &civ).await.expect("registered")).unwrap();
    let (class, state) = meta.instance().unwrap();
    assert_eq!(class, "wiseagents.core.WiseAgentMetaData");
    assert_eq!(state.unwrap().get("description"), Some(&Py::Str("Knows the weather".into())));
    let tool = loads(&hget(&mut r, "tools", &civ).await.expect("a tool")).unwrap();
    let state = tool.instance().unwrap().1.unwrap().clone();
    assert_eq!(state.get("agent_tool"), Some(&Py::Bool(true)));
    assert!(matches!(state.get("parameters_json_schema"), Some(Py::Dict(_))));
    assert!(bridge.terminate(STOP_SECS).success());
    assert_eq!(hget(&mut r, "agents", &civ).await, None, "removed as stop_agent() removes it");
    assert_eq!(hget(&mut r, OWNERS, &civ).await, None);
}

#[tokio::test]
async fn a_name_another_process_registered_is_a_start_up_error_and_one_this_instance_left_is_taken_over() {
    let names = Names::new(Broker::ActiveMq);
    let (civ, left) = (names.agent("CivTaken"), names.agent("CivLeft"));
    let mut r = redis().await;
    cmd(&mut r, &[b"HSET", b"agents", civ.as_bytes(), &metadata("a native agent")]).await;
    let port = free_port();
    let registry = RegistryConfig { port: redis_port(), ..Default::default() };
    let config = config(&names, &civ, port, registry, |_| ());
    let mut refused = BridgeProcess::spawn(&config, port, &format!("{}-taken", names.uid));
    refused.wait_log("already in the Wise Agents registry", 30);
    assert!(!refused.terminate(STOP_SECS).success());
    assert_eq!(
        loads(&hget(&mut r, "agents", &civ).await.unwrap()).unwrap(),
        loads(&metadata("a native agent")).unwrap()
    );
    cmd(&mut r, &[b"HDEL", b"agents", civ.as_bytes()]).await;

    // Left behind by a crash of this same instance: taken over.
    let instance = format!("test-{}", names.uid);
    cmd(&mut r, &[b"HSET", b"agents", left.as_bytes(), &metadata("stale")]).await;
    cmd(&mut r, &[b"HSET", OWNERS.as_bytes(), left.as_bytes(), instance.as_bytes()]).await;
    let bridge = start(&names, &left, vec![]);
    let meta = loads(&hget(&mut r, "agents", &left).await.unwrap()).unwrap();
    assert_ne!(meta, loads(&metadata("stale")).unwrap(), "rewritten with the configured description");
    assert!(bridge.terminate(STOP_SECS).success());
}

#[tokio::test]
async fn a_sequence_native_proxied_native_goes_on_to_the_next_agent_and_ends_at_route_response_to() {
    let names = Names::new(Broker::ActiveMq);
    let civ = names.agent("CivStep");
    let (first, last, client_agent) = (names.agent("WAStep1"), names.agent("WAStep2"), names.agent("Client"));
    let (mid, end) = (format!("Seq{}", names.uid), format!("SeqEnd{}", names.uid));
    let mut r = redis().await;
    collaboration(
        &mut r,
        &mid,
        &[("collaboration_type", b"sequential".to_vec()), ("agents_sequence", strs(&[&first, &civ, &last]))],
    )
    .await;
    collaboration(
        &mut r,
        &end,
        &[
            ("collaboration_type", b"sequential".to_vec()),
            ("agents_sequence", strs(&[&first, &civ])),
            ("route_response_to", client_agent.clone().into_bytes()),
        ],
    )
    .await;
    let bridge = start(&names, &civ, vec![]);
    let (civ_client, mut inbox) = listen(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (_n, mut next) = listen(&names.request(&last)).await;
    let (_c, mut answers) = listen(&names.response(&client_agent)).await;
    let (wa, _) = Broker::ActiveMq.connect().await;

    send(&wa, &names.request(&civ), ask("step one's answer", &first, &mid)).await;
    civitas_answers(&civ_client, &mut inbox, &names, &civ, "the Civitas step").await;
    let (dest, m) = next_wise(&mut next).await;
    assert_eq!(dest, names.request(&last), "a request to the next member, not an answer to the previous");
    assert_eq!((m.message.as_str(), m.sender.as_deref()), ("the Civitas step", Some(civ.as_str())));
    assert_eq!((m.context_name.as_deref(), m.message_type), (Some(mid.as_str()), None));

    send(&wa, &names.request(&civ), ask("step one's answer", &first, &end)).await;
    civitas_answers(&civ_client, &mut inbox, &names, &civ, "the last step").await;
    let (_, m) = next_wise(&mut answers).await;
    assert_eq!((m.message.as_str(), m.sender.as_deref()), ("the last step", Some(civ.as_str())));
    assert_eq!(m.context_name.as_deref(), Some(end.as_str()));
    assert!(bridge.terminate(STOP_SECS).success());
}

#[tokio::test]
async fn a_phased_answer_is_appended_to_the_chat_completion_and_the_coordinator_gets_ack() {
    let names = Names::new(Broker::ActiveMq);
    let civ = names.agent("CivPhase");
    let coordinator = names.agent("Phased");
    let ctx = format!("Cli{}_{coordinator}.1b4e28ba", names.uid);
    let mut r = redis().await;
    let earlier = dumps(&Py::List(vec![Py::Dict(vec![(Py::Str("role".into()), Py::Str("user".into()))])]));
    collaboration(
        &mut r,
        &ctx,
        &[("collaboration_type", b"phased".to_vec()), ("llm_chat_completion", earlier)],
    )
    .await;
    let bridge = start(&names, &civ, vec![]);
    let (civ_client, mut inbox) = listen(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (_c, mut acks) = listen(&names.response(&coordinator)).await;
    let (wa, _) = Broker::ActiveMq.connect().await;

    send(&wa, &names.request(&civ), ask("Which city is sunny?", &coordinator, &ctx)).await;
    civitas_answers(&civ_client, &mut inbox, &names, &civ, "Lisbon").await;
    let (_, m) = next_wise(&mut acks).await;
    assert_eq!((m.message_type, m.sender.as_deref()), (Some(Intent::Ack), Some(civ.as_str())));
    let Py::List(chat) = loads(&hget(&mut r, &ctx, "llm_chat_completion").await.unwrap()).unwrap() else {
        panic!("a list")
    };
    assert_eq!(chat.len(), 2, "appended, what was there kept");
    assert_eq!(chat[1].get("content"), Some(&Py::Str("Lisbon".into())));
    assert_eq!(chat[1].get("role"), Some(&Py::Str("assistant".into())));
    assert!(bridge.terminate(STOP_SECS).success());
}

#[tokio::test]
async fn a_civitas_ask_names_a_context_that_exists_in_the_registry() {
    let names = Names::new(Broker::ActiveMq);
    let civ = names.agent("CivAsker");
    let native = names.agent("Librarian");
    let default = format!("Dflt{}", names.uid.replace('x', ""));
    let port = free_port();
    let registry = registry(&names, redis_port());
    let config = config(&names, &civ, port, registry, |c| c.wiseagents.default_context = default.clone());
    let bridge = BridgeProcess::start(&config, port, &names.uid);
    let (_n, mut requests) = listen(&names.request(&native)).await;
    let (civ_client, _) = Broker::ActiveMq.connect().await;
    let body = json!({"type": "message", "sender": civ, "recipient": native, "correlation_id": "c1",
        "payload": {"message": "a book about Mars"}});
    send(&civ_client, &names.dest("civitas.ingress"), body.to_string().into_bytes()).await;
    let (_, m) = next_wise(&mut requests).await;
    assert_eq!(m.context_name.as_deref(), Some(default.as_str()));
    let mut r = redis().await;
    let ctx =
        loads(&hget(&mut r, "contexts", &default).await.expect("created before the message left")).unwrap();
    let (class, state) = ctx.instance().unwrap();
    assert_eq!(class, "wiseagents.core.WiseAgentContext");
    assert_eq!(state.unwrap().get("_config").unwrap().get("use_redis"), Some(&Py::Bool(true)));
    cmd(&mut r, &[b"HDEL", b"contexts", default.as_bytes()]).await;
    assert!(bridge.terminate(STOP_SECS).success());
}

#[tokio::test]
async fn two_instances_register_an_agent_once_and_it_comes_back_when_redis_loses_it() {
    let names = Names::new(Broker::ActiveMq);
    let civ = names.agent("CivTwice");
    let first = start(&names, &civ, vec![]);
    let second = start(&names, &civ, vec![]);
    let mut r = redis().await;
    let one = cmd(&mut r, &[b"HGETALL", b"agents"]).await;
    let Reply::Array(Some(items)) = one else { panic!("a hash") };
    let entries = items.chunks(2).filter(|kv| kv[0] == Reply::Bulk(Some(civ.clone().into_bytes()))).count();
    assert_eq!(entries, 1, "one registration for two instances");
    // Redis loses it (a restart without persistence): registered again, at the next refresh
    // (every 10 s, `wise_registry::member::REFRESH`), waited for with room for a busy machine.
    cmd(&mut r, &[b"HDEL", b"agents", civ.as_bytes()]).await;
    until_registered(&mut r, &civ, true, 30).await;
    // One instance stops cleanly and removes the entry; the instance still running puts it back.
    assert!(first.terminate(STOP_SECS).success());
    until_registered(&mut r, &civ, true, 30).await;
    assert!(second.terminate(STOP_SECS).success());
    until_registered(&mut r, &civ, false, 1).await;
}

#[tokio::test]
async fn a_sequence_that_restarts_after_the_proxied_agent_sends_the_first_query_to_the_first_member() {
    let names = Names::new(Broker::ActiveMq);
    let civ = names.agent("CivLast");
    let first = names.agent("WAFirst");
    let ctx = format!("Restart{}", names.uid);
    let mut r = redis().await;
    collaboration(
        &mut r,
        &ctx,
        &[
            ("collaboration_type", b"sequential_memory".to_vec()),
            ("agents_sequence", strs(&[&first, &civ])),
            ("restart_sequence", dumps(&Py::Bool(true))),
            ("queries", strs(&["the first query", "a rephrased one"])),
        ],
    )
    .await;
    let bridge = start(&names, &civ, vec![]);
    let (civ_client, mut inbox) = listen(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (_f, mut requests) = listen(&names.request(&first)).await;
    let (wa, _) = Broker::ActiveMq.connect().await;
    send(&wa, &names.request(&civ), ask("step one's answer", &first, &ctx)).await;
    civitas_answers(&civ_client, &mut inbox, &names, &civ, "not good enough").await;
    let (_, m) = next_wise(&mut requests).await;
    assert_eq!((m.message.as_str(), m.sender.as_deref()), ("the first query", Some(civ.as_str())));
    assert_eq!(loads(&hget(&mut r, &ctx, "restart_sequence").await.unwrap()).unwrap(), Py::Bool(false));
    let Py::List(chat) = loads(&hget(&mut r, &ctx, "llm_chat_completion").await.unwrap()).unwrap() else {
        panic!("sequential_memory appends the answer")
    };
    assert_eq!(chat.last().and_then(|m| m.get("content")), Some(&Py::Str("not good enough".into())));
    assert!(bridge.terminate(STOP_SECS).success());
}

/// `[a2a]` with the registry: the listing names the registry's agents a glob of `a2a.serve`
/// matches; a served native agent's card says what its entry in the registry says (what a
/// coordinator reads there); and a task's new A2A `contextId` is made a Wise Agents context, in
/// which the agent is asked.
#[tokio::test]
async fn a2a_lists_and_describes_the_registrys_agents_and_makes_a_new_a2a_context_a_wise_agents_context() {
    use stomp_agent_bridge::stomp::{TlsOptions, tls_client_config};
    let names = Names::new(Broker::ActiveMq);
    let (civ, native, booker) = (names.agent("CivStep"), names.agent("Planner"), names.agent("Booker"));
    let mut r = redis().await;
    cmd(&mut r, &[b"HSET", b"agents", native.as_bytes(), &metadata("Plans trips to Rome")]).await;
    cmd(&mut r, &[b"HSET", b"agents", booker.as_bytes(), &metadata("Books hotels")]).await;
    let port = free_port();
    // Planner by name; every agent of the registry that `Booker*` matches.
    let a2a = toml::from_str(&format!("serve = [\"{native}\", \"Booker*\"]\n")).expect("an [a2a] table");
    let config = config(&names, &civ, port, registry(&names, redis_port()), |c| c.a2a = Some(a2a));
    let bridge = BridgeProcess::start(&config, port, &names.uid);

    let (status, card) = bridge.http_get(&format!("/a2a/{native}/.well-known/agent-card.json"));
    let card: serde_json::Value =
        serde_json::from_str(&card).unwrap_or_else(|e| panic!("{status} {e}: {card}"));
    assert_eq!(card["description"], "Plans trips to Rome", "{card}");
    let (_, listing) = bridge.http_get("/a2a");
    let listing: serde_json::Value = serde_json::from_str(&listing).unwrap();
    let listed: Vec<&str> =
        listing["agents"].as_array().unwrap().iter().filter_map(|a| a["name"].as_str()).collect();
    assert!(listed.contains(&native.as_str()) && listed.contains(&booker.as_str()), "{listing}");
    assert!(!listed.contains(&civ.as_str()), "a proxied agent the glob does not match: {listing}");

    let (_native, mut requests) = listen(&format!("/queue/request/{native}")).await;
    let context = format!("trip-{}", names.uid);
    let http = reqwest::Client::builder()
        .use_preconfigured_tls(tls_client_config(&TlsOptions::default()).unwrap())
        .build()
        .unwrap();
    let endpoint = format!("http://127.0.0.1:{port}/a2a/{native}");
    let client = a2a_client::A2AClient::new(a2a_client::jsonrpc::JsonRpcTransport::new(http, endpoint));
    let mut message = a2a::Message::new(a2a::Role::User, vec![a2a::Part::text("Rome in May?")]);
    message.context_id = Some(context.clone());
    let request = a2a::SendMessageRequest {
        message,
        configuration: Some(a2a::SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: Some(true),
        }),
        metadata: None,
        tenant: None,
    };
    client.send_message(&request).await.expect("the task is made");
    let (_, asked) = next_wise(&mut requests).await;
    assert_eq!(
        (asked.message.as_str(), asked.context_name.as_deref()),
        ("Rome in May?", Some(context.as_str()))
    );
    assert!(hget(&mut r, "contexts", &context).await.is_some(), "registered as register_context does");
    cmd(&mut r, &[b"HDEL", b"contexts", context.as_bytes()]).await;
    cmd(&mut r, &[b"HDEL", b"agents", native.as_bytes(), booker.as_bytes()]).await;
    assert!(bridge.terminate(STOP_SECS).success());
}
