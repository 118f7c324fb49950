//! The Wise Agents registry under faults, end to end (the bridge as a process on ActiveMQ,
//! Redis real): a paused Redis holds only the messages that need it and dead-letters none; a
//! Redis restarted empty gets the proxied agent and the contexts back; an answer the broker
//! redelivers after a `kill -9` is appended to its chat once and routed as it was the first
//! time.

mod common;

use common::bridge::{BridgeProcess, Names, STOP_SECS, free_port};
use common::registry::*;
use common::{Broker, Proxy, next_message, wa_body};
use serde_json::json;
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::wise_registry::pickle::{Value as Py, loads};

/// Polls `/readyz` (readiness is a state, not an event) until it answers `status`; its body.
fn until_readyz(bridge: &BridgeProcess, status: u16, secs: u64) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let (code, body) = bridge.http_get("/readyz");
        if code == status {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/readyz answered {code} {body:?}, not {status}, for {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A Civitas agent's message to a native Wise Agents agent: it goes to a Wise Agents queue with
/// the default context, which the registry makes sure exists first.
fn civitas_ask(civ: &str, native: &str, text: &str) -> Vec<u8> {
    json!({"type": "message", "sender": civ, "recipient": native, "payload": {"message": text}})
        .to_string()
        .into_bytes()
}

/// A private Redis, and the bridge for the Civitas agent `civ` registered there, with a
/// default context of this test's own.
async fn bridge_on_private_redis(names: &Names, civ: &str) -> (PrivateRedis, String, BridgeProcess) {
    let redis = PrivateRedis::start().await;
    let context = format!("Ctx{}", names.uid);
    let port = free_port();
    let config = config(names, civ, port, registry(names, redis.port), |c| {
        c.wiseagents.default_context = context.clone();
    });
    let bridge = BridgeProcess::start(&config, port, &names.uid);
    (redis, context, bridge)
}

// Multi-threaded: the test's STOMP clients run while it polls the bridge synchronously.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_redis_holds_only_what_needs_it_dead_letters_nothing_and_delivers_it_when_it_answers() {
    let names = Names::new(Broker::ActiveMq);
    let (civ, native) = (names.agent("CivPause"), names.agent("NativePause"));
    let (redis, context, bridge) = bridge_on_private_redis(&names, &civ).await;
    let (_n, mut requests) = listen(&names.request(&native)).await;
    let (_i, mut inbox) = listen(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (civ_client, _) = Broker::ActiveMq.connect().await;
    let (wa, _) = Broker::ActiveMq.connect().await;
    let ingress = names.dest("civitas.ingress");
    send(&civ_client, &ingress, civitas_ask(&civ, &native, "before the pause")).await;
    assert_eq!(next_wise(&mut requests).await.1.message, "before the pause");

    redis.pause();
    send(&civ_client, &ingress, civitas_ask(&civ, &native, "during the pause")).await;
    bridge.wait_metric(|l| l == "bridge_registry_held 1", 30);
    let why = until_readyz(&bridge, 503, 30);
    assert!(why.contains("Wise Agents registry") && why.contains("holding 1"), "{why}");
    // What needs no registry flows meanwhile: Wise Agents asks to the Civitas agent.
    for i in 0..20 {
        let body = wa_body(json!({"_message": format!("flowing {i}"), "_sender": native}));
        send(&wa, &names.request(&civ), body).await;
    }
    for i in 0..20 {
        let asked: serde_json::Value =
            serde_json::from_slice(next_message(&mut inbox, 30).await.body()).unwrap();
        assert_eq!(asked["payload"]["message"], format!("flowing {i}"), "{asked}");
    }
    let (_, metrics) = bridge.http_get("/metrics");
    assert!(metrics.lines().any(|l| l == "bridge_registry_held 1"), "still held while Redis is paused");
    assert!(metrics.lines().any(|l| l == "bridge_registry_up 0"));

    redis.resume();
    let (_, m) = next_wise(&mut requests).await;
    assert_eq!((m.message.as_str(), m.context_name.as_deref()), ("during the pause", Some(context.as_str())));
    until_readyz(&bridge, 200, 30);
    let (_, metrics) = bridge.http_get("/metrics");
    assert!(!metrics.contains("kind=\"registry\""), "nothing dead-lettered for the registry:\n{metrics}");
    assert!(metrics.lines().any(|l| l == "bridge_registry_held 0"));
    assert!(bridge.terminate(STOP_SECS).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restarted_empty_gets_the_proxied_agent_registered_and_the_context_made_again() {
    let names = Names::new(Broker::ActiveMq);
    let (civ, native) = (names.agent("CivEmpty"), names.agent("NativeEmpty"));
    let (redis, context, bridge) = bridge_on_private_redis(&names, &civ).await;
    let (_n, mut requests) = listen(&names.request(&native)).await;
    let (civ_client, _) = Broker::ActiveMq.connect().await;
    let ingress = names.dest("civitas.ingress");
    send(&civ_client, &ingress, civitas_ask(&civ, &native, "first")).await;
    assert_eq!(next_wise(&mut requests).await.1.context_name.as_deref(), Some(context.as_str()));
    assert!(hget(&mut redis.connect().await, "contexts", &context).await.is_some());

    let redis = redis.restart_empty().await;
    let mut r = redis.connect().await;
    until_registered(&mut r, &civ, true, 30).await;
    send(&civ_client, &ingress, civitas_ask(&civ, &native, "after the restart")).await;
    let (_, m) = next_wise(&mut requests).await;
    assert_eq!(
        (m.message.as_str(), m.context_name.as_deref()),
        ("after the restart", Some(context.as_str()))
    );
    assert!(hget(&mut r, "contexts", &context).await.is_some(), "made again before the message left");
    assert!(bridge.terminate(STOP_SECS).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_redelivered_after_a_kill_is_appended_to_its_chat_once_and_routed_as_the_first_time() {
    const N: usize = 10;
    let names = Names::new(Broker::ActiveMq);
    let (civ, coordinator) = (names.agent("CivKill"), names.agent("Chat"));
    let ctx = format!("Chat{}", names.uid);
    let mut r = redis().await;
    collaboration(&mut r, &ctx, &[("collaboration_type", b"chat".to_vec())]).await;
    // The first bridge's ACKs never reach the broker: everything it took is still the broker's
    // when it is killed, after the chat was written and the answers were published.
    let proxy = Proxy::dropping_acks(Broker::ActiveMq.port()).await;
    let port = free_port();
    let first = config(&names, &civ, port, registry(&names, redis_port()), |c| {
        c.broker.url = format!("stomp://127.0.0.1:{}", proxy.port);
    });
    let first = BridgeProcess::start(&first, port, &names.uid);
    let (civ_client, mut inbox) = listen(&names.dest(&format!("civitas.in.{civ}"))).await;
    let (_c, mut answers) = listen(&names.response(&coordinator)).await;
    let (wa, _) = Broker::ActiveMq.connect().await;
    for i in 0..N {
        send(&wa, &names.request(&civ), ask(&format!("question {i}"), &coordinator, &ctx)).await;
    }
    for i in 0..N {
        civitas_answers(&civ_client, &mut inbox, &names, &civ, &format!("answer {i}")).await;
    }
    let mut routed = Vec::new();
    for _ in 0..N {
        routed.push(next_wise(&mut answers).await);
    }
    assert!(routed.iter().all(|(_, m)| m.message_type == Some(Intent::Ack)), "a chat's answer is an ACK");
    assert_eq!(chat(&mut r, &ctx).await.len(), N);
    first.kill9();

    let port = free_port();
    let second = config(&names, &civ, port, registry(&names, redis_port()), |_| ());
    let second = BridgeProcess::start(&second, port, &format!("{}-again", names.uid));
    let mut again = Vec::new();
    for _ in 0..N {
        again.push(next_wise(&mut answers).await);
    }
    let key = |(dest, m): &(String, _)| (dest.clone(), format!("{m:?}"));
    let (mut routed, mut again): (Vec<_>, Vec<_>) =
        (routed.iter().map(key).collect(), again.iter().map(key).collect());
    routed.sort();
    again.sort();
    assert_eq!(again, routed, "each redelivered answer goes where it went the first time");
    let chat = chat(&mut r, &ctx).await;
    for i in 0..N {
        let text = format!("answer {i}");
        let times = chat.iter().filter(|m| m.get("content") == Some(&Py::Str(text.clone()))).count();
        assert_eq!(times, 1, "{text:?} is in the chat {times} times: {chat:?}");
    }
    assert_eq!(chat.len(), N);
    assert!(second.terminate(STOP_SECS).success());
    cmd(&mut r, &[b"HDEL", b"contexts", ctx.as_bytes()]).await;
    cmd(&mut r, &[b"DEL", ctx.as_bytes()]).await;
}

/// The context's `llm_chat_completion`.
async fn chat(r: &mut stomp_agent_bridge::wise_registry::resp::Connection, ctx: &str) -> Vec<Py> {
    match hget(r, ctx, "llm_chat_completion").await.map(|b| loads(&b).unwrap()) {
        Some(Py::List(items)) => items,
        other => panic!("no chat completion in {ctx}: {other:?}"),
    }
}
