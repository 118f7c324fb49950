//! The conversation rules, one message at a time through the pipeline (docs/MAPPING.md,
//! "Conversations").

use super::harness::*;
use super::*;
use crate::config::Config;
use crate::config::REPLY_AGENT;
use crate::envelope::new_uuid7;
use serde_json::{Value, json};

#[test]
fn rule1_concurrent_asks_get_their_own_answers_in_order_and_a_stray_answer_is_not_attached() {
    let mut p = pipeline();
    for (id, cid) in [("m1", "c1"), ("m2", "c2")] {
        let out = sent(&mut p, &msg(CIV_IN, civitas_ask(id, cid, None, id)));
        assert_eq!(out.frame.header("destination"), Some("/queue/request/Assistant"));
    }
    assert_eq!(p.pending_asks(), 2);
    for cid in ["c1", "c2"] {
        let out = sent(&mut p, &plain_answer("Assistant", "WeatherAgent", "answer", "default"));
        let reply = json_of(&out);
        assert!(out.correlated);
        assert_eq!((reply["type"].as_str(), reply["correlation_id"].as_str()), (Some("reply"), Some(cid)));
        assert_eq!(reply["recipient"], "WeatherAgent");
    }
    let stray = sent(&mut p, &plain_answer("Assistant", "WeatherAgent", "again", "default"));
    assert!(!stray.correlated && stray.unmatched_reply, "matches nothing, counted");
    assert_eq!(json_of(&stray)["correlation_id"], Value::Null, "never another ask's correlation");
}

#[test]
fn rule1_an_answer_echoing_the_token_matches_its_own_ask_out_of_order() {
    let mut p = pipeline();
    let mut tools = Vec::new();
    for (id, cid) in [("m1", "c1"), ("m2", "c2")] {
        tools.push(wa_of(&sent(&mut p, &msg(CIV_IN, civitas_ask(id, cid, None, id)))).tool_id.unwrap());
    }
    // A tool agent that echoes _tool_id, answering the second ask first.
    let echo = |tool: &str| {
        msg(
            "/queue/response/WeatherAgent",
            wa(&[("_message", "x"), ("_sender", "Assistant"), ("_tool_id", tool)]),
        )
    };
    assert_eq!(json_of(&sent(&mut p, &echo(&tools[1])))["correlation_id"], "c2");
    assert_eq!(json_of(&sent(&mut p, &echo(&tools[0])))["correlation_id"], "c1");
}

#[test]
fn rule2_an_answer_to_a_civitas_reply_address_reaches_the_askers_inbox() {
    let mut p = pipeline();
    let reply_to = "_reply.0193a1b2-0000-7000-8000-00000000abcd";
    sent(&mut p, &msg(CIV_IN, civitas_ask("m1", "c1", Some(reply_to), "q")));
    let out = sent(&mut p, &plain_answer("Assistant", "WeatherAgent", "a", "default"));
    assert_eq!(out.frame.header("destination"), Some("/queue/civitas.WeatherAgent"), "never a queue per ask");
    let reply = json_of(&out);
    assert_eq!((reply["recipient"].as_str(), reply["correlation_id"].as_str()), (Some(reply_to), Some("c1")));
}

#[test]
fn rule2_the_reply_address_rule_holds_after_a_restart_for_glob_named_askers_and_falls_back_for_strangers() {
    let glob = |c: &mut Config| {
        c.agents.push(crate::config::AgentConfig::new("Civ*", crate::envelope::codecs::Framework::Civitas))
    };
    let mut asked = pipeline_with(glob);
    let mut tools = Vec::new();
    for (sender, cid) in [("WeatherAgent", "c1"), ("CivScout", "c2"), ("Stranger", "c3")] {
        let ask = civitas_ask_from(sender, cid, cid, Some(&format!("_reply.{cid}")), "q");
        tools.push(wa_of(&sent(&mut asked, &msg(CIV_IN, ask))).tool_id.unwrap());
    }
    // Another bridge instance (or this one restarted) knows only what the token says.
    let mut p = pipeline_with(glob);
    for (tool, (cid, want)) in tools.iter().zip([
        ("c1", "/queue/civitas.WeatherAgent"),
        ("c2", "/queue/civitas.CivScout"),
        ("c3", "/queue/civitas._reply.c3"),
    ]) {
        let answer = msg("/queue/response/WeatherAgent", wa(&[("_message", "x"), ("_tool_id", tool)]));
        let out = sent(&mut p, &answer);
        assert_eq!(out.frame.header("destination"), Some(want), "{cid}");
        let reply = json_of(&out);
        let wanted = format!("_reply.{cid}");
        assert_eq!(
            (reply["recipient"].as_str(), reply["correlation_id"].as_str()),
            (Some(wanted.as_str()), Some(cid))
        );
    }
}

#[test]
fn rule3_a_vox_receipt_does_not_consume_the_ask() {
    let mut p = pipeline();
    let asked = json_of(&sent(&mut p, &wa_ask("Ops", Some("call_1"), "default")));
    let receipt = p.process(&msg(VOX_IN, vox_reply("message_acknowledged", &asked, ""))).unwrap();
    assert!(
        matches!(receipt, Processed::Absorbed { why: Absorbed::Acknowledgement { .. }, .. }),
        "{receipt:?}"
    );
    assert_eq!(p.pending_asks(), 1);
    let out = sent(&mut p, &msg(VOX_IN, vox_reply("command_result", &asked, "done")));
    let answer = wa_of(&out);
    assert_eq!(out.frame.header("destination"), Some("/queue/response/Assistant"));
    assert_eq!((answer.message.as_str(), answer.message_type), ("done", Some(Intent::Response)));
    assert_eq!(answer.tool_id.as_deref(), Some("call_1"));
    let again = p.process(&msg(VOX_IN, vox_reply("command_error", &asked, "late error"))).unwrap();
    assert!(
        matches!(&again, Processed::Absorbed { why: Absorbed::RepeatedAnswer { route, .. }, .. } if route == "vox->repeated"),
        "the ask was answered once: {again:?}"
    );
}

#[test]
fn rule4_an_answer_sent_again_reaches_its_asker_once_and_a_restarted_bridge_routes_it_by_its_token() {
    let mut p = pipeline();
    let asked = json_of(&sent(&mut p, &wa_ask("Planner", None, "default")));
    let mut answer = asked.clone();
    answer["payload"] = json!({"text": "Rome, 3 days"});
    let answer = msg(PF_IN, answer.to_string());
    let first = sent(&mut p, &answer);
    assert_eq!(first.frame.header("destination"), Some("/queue/response/Assistant"));
    // Given back to the broker before its answer was published: the redelivery answers.
    p.answer_released(first.answers.as_deref().expect("the ask it answers"));
    assert_eq!(sent(&mut p, &answer).frame.header("destination"), Some("/queue/response/Assistant"));
    for _ in 0..3 {
        // PenguiFlow re-running a node that returned a FinalAnswer sends it again and again.
        let again = p.process(&answer).unwrap();
        assert!(
            matches!(&again, Processed::Absorbed { why: Absorbed::RepeatedAnswer { route, .. }, .. } if route == "penguiflow->repeated"),
            "{again:?}"
        );
    }
    let mut restarted = pipeline();
    assert_eq!(sent(&mut restarted, &answer).frame.header("destination"), Some("/queue/response/Assistant"));
}

#[test]
fn rule4_a_penguiflow_model_copy_answer_is_an_answer_whatever_its_payload() {
    for payload in [json!("Rome, 3 days"), json!({"plan": ["a", "b"]})] {
        let mut p = pipeline();
        let asked = json_of(&sent(&mut p, &wa_ask("Planner", None, "default")));
        let mut answer = asked.clone();
        answer["payload"] = payload.clone();
        let out = sent(&mut p, &msg(PF_IN, answer.to_string()));
        assert_eq!(out.frame.header("destination"), Some("/queue/response/Assistant"), "{payload}");
        let reply = wa_of(&out);
        assert_eq!(reply.message_type, Some(Intent::Response));
        assert_eq!(reply.sender.as_deref(), Some("Planner"));
        assert_eq!(reply.tool_id, None, "the asker had no tool id: the token is not handed back");
    }
}

#[test]
fn rule5_a_penguiflow_ask_answered_by_wise_agents_keeps_trace_tenant_deadline_and_meta() {
    let mut p = pipeline();
    let ask = json!({"payload": "plan a trip", "headers": {"tenant": "acme", "topic": "trips", "priority": 3},
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "ts": 1.0, "deadline_s": 4102444800.0,
        "meta": {"message_id": "pf-1", "sender": "Planner", "recipient": "Assistant",
            "message_type": "QUERY", "session": "s-9"}});
    sent(&mut p, &msg(PF_IN, ask.to_string()));
    let out = sent(&mut p, &plain_answer("Assistant", "Planner", "Rome", "default"));
    let reply = json_of(&out);
    assert_eq!(reply["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(reply["headers"]["tenant"], "acme");
    assert_eq!(reply["deadline_s"], 4102444800.0);
    assert_eq!(reply["meta"]["session"], "s-9");
    assert_eq!(reply["meta"]["in_reply_to"], "pf-1");
    assert_eq!(reply["payload"]["text"], "Rome");
    assert_eq!(reply["meta"]["recipient"], "Planner");
}

#[test]
fn rule6_a_civitas_reply_with_a_type_in_its_payload_is_an_answer() {
    let mut p = pipeline();
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", Some("call_7"), "Weather")));
    let reply = json!({"type": "weather_report", "sender": "WeatherAgent", "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"type": "weather_report", "message": "sunny"}});
    let out = sent(&mut p, &msg(CIV_IN, reply.to_string()));
    assert_eq!(out.frame.header("destination"), Some("/queue/response/Assistant"));
    let answer = wa_of(&out);
    assert_eq!((answer.message_type, answer.tool_id.as_deref()), (Some(Intent::Response), Some("call_7")));
}

#[test]
fn rule7_contexts_are_never_invented() {
    let mut p = pipeline_with(|c| {
        c.wiseagents.contexts = vec!["Books".into(), "Trips.*".into()];
        c.wiseagents.ack_contexts = vec!["Coordinator.*".into()];
    });
    // A PenguiFlow topic is not a context.
    let ask = json!({"payload": "q", "headers": {"tenant": "acme", "topic": "news"},
        "meta": {"sender": "Planner", "recipient": "Assistant"}});
    assert_eq!(wa_of(&sent(&mut p, &msg(PF_IN, ask.to_string()))).context_name.as_deref(), Some("default"));
    let mut ctx = |c: &str| {
        let body = json!({"sender": "WeatherAgent", "recipient": "Assistant",
            "payload": {"message": "q", "context_name": c}});
        sent(&mut p, &msg(CIV_IN, body.to_string()))
    };
    assert_eq!(wa_of(&ctx("Books")).context_name.as_deref(), Some("Books"), "configured");
    assert_eq!(wa_of(&ctx("Trips.42")).context_name.as_deref(), Some("Trips.42"), "configured glob");
    assert_eq!(wa_of(&ctx("Coordinator.9")).context_name.as_deref(), Some("Coordinator.9"), "an ACK context");
    let unknown = ctx("Invented");
    assert_eq!(wa_of(&unknown).context_name.as_deref(), Some("default"));
    assert_eq!(unknown.frame.header(ORIGINAL_CONTEXT), Some("Invented"), "the original travels in a header");
    // The Wise Agents side's own context comes back on its answer, whatever the answer says.
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", None, "Coordinator.1f2e")));
    let reply = json!({"type": "reply", "sender": "WeatherAgent", "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"message": "a", "context_name": "Other"}});
    assert_eq!(
        wa_of(&sent(&mut p, &msg(CIV_IN, reply.to_string()))).context_name.as_deref(),
        Some("Coordinator.1f2e")
    );
}

#[test]
fn rule8_answers_in_phased_contexts_are_ack_and_errors_are_cannot_answer() {
    let mut p = pipeline_with(|c| c.wiseagents.ack_contexts = vec!["Coordinator.*".into()]);
    let civitas_answer = |asked: &Value, payload: Value| {
        json!({"type": "reply", "sender": "WeatherAgent", "recipient": asked["reply_to"],
            "correlation_id": asked["correlation_id"], "payload": payload})
        .to_string()
    };
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", None, "Coordinator.1f2e")));
    let ack = wa_of(&sent(&mut p, &msg(CIV_IN, civitas_answer(&asked, json!({"message": "sunny"})))));
    assert_eq!(
        (ack.message_type, ack.message.as_str()),
        (Some(Intent::Ack), "sunny"),
        "the ACK carries the answer"
    );
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", None, "default")));
    let error = civitas_answer(&asked, json!({"status": "error", "error": "agent was terminated"}));
    let failed = wa_of(&sent(&mut p, &msg(CIV_IN, error)));
    assert_eq!(
        (failed.message_type, failed.message.as_str()),
        (Some(Intent::CannotAnswer), "agent was terminated")
    );
    // PenguiFlow's budget answers.
    let asked = json_of(&sent(&mut p, &wa_ask("Planner", None, "default")));
    let mut budget = asked.clone();
    budget["payload"] = json!({"text": "Hop budget exhausted", "citations": []});
    assert_eq!(
        wa_of(&sent(&mut p, &msg(PF_IN, budget.to_string()))).message_type,
        Some(Intent::CannotAnswer)
    );
}

#[tokio::test(start_paused = true)]
async fn rule11_an_unanswered_ask_gets_an_error_answer_in_the_askers_format_and_a_late_answer_is_dropped() {
    let mut p = pipeline_with(|c| c.delivery.reply_timeout_ms = 1000);
    let tool_call = wa(&[
        ("_message", "{}"),
        ("_sender", "Assistant"),
        ("_tool_id", "call_3"),
        ("_route_response_to", "User"),
        ("_context_name", "Weather"),
    ]);
    sent(&mut p, &msg("/queue/request/WeatherAgent", tool_call));
    sent(&mut p, &msg(CIV_IN, civitas_ask("m1", "c1", Some("_reply.x"), "q")));
    let vox_id = new_uuid7().to_string();
    let vox_ask = json!({"message_id": vox_id, "message_source": "ops", "emitted_at": "2026-11-30T10:00:00Z",
        "source": "6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11", "target": "00000000-0000-0000-0000-000000000000",
        "type": "command_request", "details": {"message": "restart", "recipient": "Assistant"}, "reply_to": null});
    sent(&mut p, &msg(VOX_IN, vox_ask.to_string()));
    let pf_ask = json!({"payload": "q", "headers": {"tenant": "acme"}, "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "meta": {"sender": "Planner", "recipient": "Assistant"}});
    sent(&mut p, &msg(PF_IN, pf_ask.to_string()));
    assert!(p.expire_asks().is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let outs = p.expire_asks();
    assert_eq!(outs.len(), 4);
    assert_eq!(p.pending_asks(), 0);
    let by_dest = |d: &str| outs.iter().find(|o| o.frame.header("destination") == Some(d)).unwrap();
    let wa_err = wa_of(by_dest("/queue/response/Assistant"));
    assert_eq!(wa_err.message_type, Some(Intent::CannotAnswer));
    assert_eq!(
        (wa_err.tool_id.as_deref(), wa_err.route_response_to.as_deref()),
        (Some("call_3"), Some("User"))
    );
    assert_eq!(wa_err.context_name.as_deref(), Some("Weather"));
    let civ = json_of(by_dest("/queue/civitas.WeatherAgent"));
    assert_eq!((civ["type"].as_str(), civ["correlation_id"].as_str()), (Some("reply"), Some("c1")));
    assert_eq!(civ["payload"]["status"], "error");
    let vox = json_of(by_dest("/queue/vox.Ops"));
    assert_eq!(
        (vox["type"].as_str(), vox["reply_to"].as_str()),
        (Some("command_error"), Some(vox_id.as_str()))
    );
    let pf = json_of(by_dest("/queue/penguiflow.Planner"));
    assert_eq!(pf["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(pf["meta"]["message_type"], "CANNOT_ANSWER");
    assert!(pf["payload"]["text"].is_string(), "FinalAnswer-shaped");
    // A late answer is dropped.
    let late = p.process(&plain_answer("Assistant", "Ops", "late", "default")).unwrap();
    assert!(matches!(late, Processed::Absorbed { why: Absorbed::LateReply { .. }, .. }), "{late:?}");
}

#[test]
fn rule9_a_message_expired_on_arrival_is_refused_as_expired() {
    let mut p = pipeline();
    let past = p.unix - 5.0;
    let pf = json!({"payload": "q", "headers": {"tenant": "acme"}, "deadline_s": past,
        "meta": {"sender": "Planner", "recipient": "Assistant"}});
    let err = p.process(&msg(PF_IN, pf.to_string())).unwrap_err();
    assert_eq!(err.kind(), "expired");
    let civ = json!({"sender": "WeatherAgent", "recipient": "Assistant", "payload": {"message": "q"},
        "timestamp": past - 10.0, "ttl": 10.0});
    assert_eq!(p.process(&msg(CIV_IN, civ.to_string())).unwrap_err().kind(), "expired");
    let fresh = json!({"sender": "WeatherAgent", "recipient": "Assistant", "payload": {"message": "q"},
        "timestamp": past, "ttl": 60.0});
    assert!(p.process(&msg(CIV_IN, fresh.to_string())).is_ok());
}

#[test]
fn rule10_a_civitas_stream_reply_is_reassembled_into_one_answer() {
    let mut p = pipeline();
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", Some("call_s"), "default")));
    let frame = |kind: &str, seq: i64, payload: Value| {
        let body = json!({"type": kind, "sender": "WeatherAgent", "recipient": asked["reply_to"],
            "correlation_id": asked["correlation_id"], "payload": payload, "seq": seq});
        msg(CIV_IN, body.to_string())
    };
    assert!(matches!(
        p.process(&frame("civitas.stream.chunk", 1, json!({"token": "21 C"}))).unwrap(),
        Processed::Chunk
    ));
    assert!(matches!(
        p.process(&frame("civitas.stream.chunk", 0, json!({"token": "sunny, "}))).unwrap(),
        Processed::Chunk
    ));
    let out = sent(&mut p, &frame("civitas.stream.end", 2, json!({})));
    let answer = wa_of(&out);
    assert_eq!((answer.message.as_str(), answer.message_type), ("sunny, 21 C", Some(Intent::Response)));
    assert_eq!(answer.tool_id.as_deref(), Some("call_s"));
    assert!(out.stream.is_some(), "the stream is settled with the message that completed it");
    // A stream that fails: its error is the answer.
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", None, "default")));
    let frame = |kind: &str, seq: i64, payload: Value| {
        let body = json!({"type": kind, "sender": "WeatherAgent", "recipient": asked["reply_to"],
            "correlation_id": asked["correlation_id"], "payload": payload, "seq": seq});
        msg(CIV_IN, body.to_string())
    };
    assert!(matches!(
        p.process(&frame("civitas.stream.chunk", 0, json!({"token": "sun"}))).unwrap(),
        Processed::Chunk
    ));
    let failed = wa_of(&sent(&mut p, &frame("civitas.stream.error", 1, json!({"error": "model crashed"}))));
    assert_eq!((failed.message.as_str(), failed.message_type), ("model crashed", Some(Intent::CannotAnswer)));
}

#[test]
fn rule10_a_civitas_stream_answered_again_after_a_restart_is_taken_in_never_dead_lettered() {
    let mut p = pipeline();
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", Some("call_s"), "default")));
    let frames = [
        ("civitas.stream.chunk", 0, json!({"token": "sunny, "})),
        ("civitas.stream.chunk", 1, json!({"token": "21 C"})),
        ("civitas.stream.end", 2, json!({})),
    ]
    .map(|(kind, seq, payload)| {
        let body = json!({"type": kind, "sender": "WeatherAgent", "recipient": asked["reply_to"],
            "correlation_id": asked["correlation_id"], "payload": payload, "seq": seq});
        msg(CIV_IN, body.to_string())
    });
    p.process(&frames[0]).unwrap();
    p.process(&frames[1]).unwrap();
    let answered = sent(&mut p, &frames[2]);
    p.stream_settled(answered.stream.as_ref().unwrap());
    // The agent's ask was redelivered by a restarted broker and it answered again, the same
    // stream frame by frame: each is taken in (acknowledged), none goes to the dead letters.
    for frame in &frames {
        match p.process(frame) {
            Ok(Processed::Chunk) => {}
            other => panic!("a repeated stream frame: {other:?}"),
        }
    }
}

#[test]
fn an_ask_whose_frame_was_never_published_is_taken_back() {
    let mut p = pipeline();
    let first = sent(&mut p, &msg(CIV_IN, civitas_ask("m1", "c1", None, "q1")));
    sent(&mut p, &msg(CIV_IN, civitas_ask("m2", "c2", None, "q2")));
    // The batch with the first ask was rolled back; the broker redelivers it.
    p.forget_ask(first.ask.as_deref().unwrap());
    sent(&mut p, &msg(CIV_IN, civitas_ask("m1", "c1", None, "q1")));
    // The agent got q2 first, then q1 again: its answers come in that order.
    let a = json_of(&sent(&mut p, &plain_answer("Assistant", "WeatherAgent", "a2", "default")));
    let b = json_of(&sent(&mut p, &plain_answer("Assistant", "WeatherAgent", "a1", "default")));
    assert_eq!((a["correlation_id"].as_str(), b["correlation_id"].as_str()), (Some("c2"), Some("c1")));
}

#[tokio::test(start_paused = true)]
async fn a_late_streamed_answer_is_dropped_with_its_chunks() {
    let mut p = pipeline_with(|c| c.delivery.reply_timeout_ms = 1000);
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", None, "default")));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(p.expire_asks().len(), 1);
    let frame = |kind: &str, seq: i64| {
        let body = json!({"type": kind, "sender": "WeatherAgent", "recipient": asked["reply_to"],
            "correlation_id": asked["correlation_id"], "payload": {"token": "x"}, "seq": seq});
        msg(CIV_IN, body.to_string())
    };
    assert!(matches!(p.process(&frame("civitas.stream.chunk", 0)).unwrap(), Processed::Chunk));
    match p.process(&frame("civitas.stream.end", 1)).unwrap() {
        Processed::Absorbed { why: Absorbed::LateReply { .. }, stream } => assert!(stream.is_some()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn rule11_an_agent_overrides_the_reply_timeout() {
    let mut p = pipeline_with(|c| {
        c.delivery.reply_timeout_ms = 1000;
        let ops = c.agents.iter_mut().find(|a| a.name == "Ops").unwrap();
        ops.reply_timeout_ms = Some(0);
        let planner = c.agents.iter_mut().find(|a| a.name == "Planner").unwrap();
        planner.reply_timeout_ms = Some(5000);
    });
    sent(&mut p, &wa_ask("Ops", None, "default"));
    sent(&mut p, &wa_ask("Planner", None, "default"));
    sent(&mut p, &wa_ask("WeatherAgent", None, "default"));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(p.expire_asks().len(), 1, "the global timeout: WeatherAgent only");
    tokio::time::advance(Duration::from_secs(4)).await;
    assert_eq!(p.expire_asks().len(), 1, "Planner's own");
    tokio::time::advance(Duration::from_secs(3594)).await;
    assert_eq!(p.expire_asks().len(), 0, "Ops has none");
    assert_eq!(p.pending_asks(), 1);
}

/// The UUIDv5 of `name` under config/bridge.toml's VOX namespace.
fn vox_uuid(name: &str) -> uuid::Uuid {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    let namespace = Config::load(&path).unwrap().protocols.vox.unwrap().namespace;
    uuid::Uuid::new_v5(&namespace, name.as_bytes())
}

fn vox_glob(c: &mut Config) {
    c.agents.push(crate::config::AgentConfig::new("Vox*", crate::envelope::codecs::Framework::Vox));
}

#[test]
fn a_vox_agent_named_by_a_glob_resolves_back_to_its_name_and_the_glob_is_no_agent() {
    let mut p = pipeline_with(vox_glob);
    let asked = json_of(&sent(&mut p, &wa_ask("VoxScout", None, "default")));
    // VoxScout now speaks first, naming itself only by its UUID.
    let own = json!({"message_id": new_uuid7().to_string(), "message_source": "ops",
        "emitted_at": "2026-11-30T10:00:00+00:00", "source": asked["target"], "target": asked["source"],
        "type": "command_request", "details": {"message": "hello"}, "reply_to": null});
    let out = sent(&mut p, &msg(VOX_IN, own.to_string()));
    assert_eq!(out.frame.header("destination"), Some("/queue/request/Assistant"));
    assert_eq!(wa_of(&out).sender.as_deref(), Some("VoxScout"));
    // The glob itself is not an agent: its UUIDv5 names no one.
    let mut to_glob = own.clone();
    to_glob["source"] = asked["source"].clone();
    to_glob["target"] = json!(vox_uuid("Vox*").to_string());
    let err = p.process(&msg(VOX_IN, to_glob.to_string())).expect_err("no agent is called Vox*");
    assert_eq!(err.kind(), "no_recipient", "{err}");
}

#[test]
fn a_discovered_vox_queue_makes_its_agent_known_before_any_message_to_it() {
    let mut p = pipeline_with(vox_glob);
    let uuid = vox_uuid("VoxLate");
    assert_eq!(p.settings.codecs.vox.registry.name_of(&uuid), None, "not met yet");
    p.know_discovered("/queue/request/VoxLate");
    assert_eq!(p.settings.codecs.vox.registry.name_of(&uuid).as_deref(), Some("VoxLate"));
}

#[test]
fn a_civitas_runtime_ask_is_written_as_the_bridge_and_its_answer_reaches_the_asker() {
    let mut p = pipeline();
    let reply_to = "_reply.0193a1b2-0000-7000-8000-00000000abcd";
    let ask = sent(&mut p, &msg(CIV_IN, civitas_ask_from("_runtime", "m1", "c1", Some(reply_to), "q")));
    let written = wa_of(&ask);
    assert_eq!(written.sender.as_deref(), Some(REPLY_AGENT), "a name whose response queue is consumed");
    assert_eq!(written.route_response_to.as_deref(), Some(REPLY_AGENT));
    assert!(p.router().classify("/queue/response/_bridge").is_some(), "the bridge consumes it");
    let out = sent(&mut p, &plain_answer("Assistant", REPLY_AGENT, "a", "default"));
    assert!(out.correlated);
    let reply = json_of(&out);
    assert_eq!((reply["recipient"].as_str(), reply["correlation_id"].as_str()), (Some(reply_to), Some("c1")));
}

#[test]
fn an_answer_to_the_bridges_own_name_that_no_ask_awaits_is_dead_lettered() {
    let mut p = pipeline();
    let err = p.process(&plain_answer("Assistant", REPLY_AGENT, "a", "default")).unwrap_err();
    assert_eq!(err.kind(), "no_recipient");
}

#[test]
fn a_civitas_ask_in_an_unknown_context_is_answered_in_its_own_context() {
    let mut p = pipeline();
    let body = json!({"sender": "WeatherAgent", "recipient": "Assistant", "correlation_id": "c1",
        "payload": {"message": "q", "context_name": "Books"}});
    let ask = sent(&mut p, &msg(CIV_IN, body.to_string()));
    assert_eq!(
        wa_of(&ask).context_name.as_deref(),
        Some("default"),
        "never invented on the Wise Agents side"
    );
    let reply = json_of(&sent(&mut p, &plain_answer("Assistant", "WeatherAgent", "a", "default")));
    assert_eq!(reply["payload"]["context_name"], "Books", "the asker's own context comes back");
}

#[test]
fn with_the_registry_ack_contexts_name_contexts_but_do_not_turn_answers_into_ack() {
    let mut p = pipeline_with(|c| {
        c.wiseagents.ack_contexts = vec!["*_PhasedCoordinator.*".into()];
        c.wiseagents.registry = Some(toml_registry());
    });
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", None, "CLI.1_PhasedCoordinator.9")));
    let reply = json!({"type": "reply", "sender": "WeatherAgent", "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"message": "a"}});
    let answer = wa_of(&sent(&mut p, &msg(CIV_IN, reply.to_string())));
    assert_eq!(
        answer.message_type,
        Some(Intent::Response),
        "the registry's collaboration decides, not the glob"
    );
    assert_eq!(answer.context_name.as_deref(), Some("CLI.1_PhasedCoordinator.9"));
}

fn toml_registry() -> crate::config::registry::RegistryConfig {
    toml::from_str("port = 6379").unwrap()
}

#[test]
fn an_ask_gets_the_id_it_is_handed_and_its_reply_deadline_runs_from_the_time_it_is_handed() {
    let mut p = pipeline_with(|c| c.delivery.reply_timeout_ms = 1000);
    let id = uuid::Uuid::from_u128(0x0193_a1b2_0000_7000_8000_0000_0000_0001);
    let mut ids = move || id;
    let at = Instant::now();
    let mut now = Now { at, unix: p.unix, ids: &mut ids };
    let Processed::Send(out) =
        p.pipeline.process(Consumed::of(&wa_ask("Ops", None, "default")), &mut now).unwrap()
    else {
        panic!("nothing sent")
    };
    assert_eq!(json_of(&out)["message_id"], id.to_string(), "the VOX request's id is the ask's");
    assert_eq!(out.ask, Some(id.to_string()));
    let unix = p.unix;
    let early = p.pipeline.expire_asks(&mut Now { at: at + Duration::from_millis(999), unix, ids: &mut ids });
    assert!(early.is_empty());
    let due = p.pipeline.expire_asks(&mut Now { at: at + Duration::from_millis(1001), unix, ids: &mut ids });
    assert_eq!(due.len(), 1);
}

#[test]
fn a_translation_is_a_function_of_the_message_and_the_time_and_ids_it_is_handed() {
    let unix = 1_800_000_000.25;
    let run = |to: &str| {
        let mut p = pipeline();
        let mut n = 0u128;
        let mut ids = move || {
            n += 1;
            uuid::Uuid::from_u128(n)
        };
        let mut now = Now { at: Instant::now(), unix, ids: &mut ids };
        match p.pipeline.process(Consumed::of(&wa_ask(to, None, "default")), &mut now).unwrap() {
            Processed::Send(out) => out.frame,
            other => panic!("nothing sent: {other:?}"),
        }
    };
    for agent in ["WeatherAgent", "Ops", "Planner"] {
        let (first, second) = (run(agent), run(agent));
        assert_eq!(first, second, "{agent}: the same frame, byte for byte");
        let body: Value = serde_json::from_slice(&first.body).unwrap();
        let says = |k: &str| body.get(k).or_else(|| body["meta"].get(k)).cloned();
        match agent {
            // Civitas: its id is new and its time the one handed over (the Wise Agents ask has none).
            "WeatherAgent" => {
                assert_eq!((says("timestamp"), says("id").is_some()), (Some(json!(unix)), true))
            }
            "Ops" => assert_eq!(says("emitted_at"), Some(json!("2027-01-15T08:00:00.25Z"))),
            _ => assert_eq!(says("ts"), Some(json!(unix))),
        }
    }
}

#[test]
fn an_answer_carrying_an_a2a_tasks_token_is_handed_to_the_task_not_published() {
    let mut p = pipeline_with(|c| {
        c.protocols = Default::default();
        c.agents.clear();
        c.a2a = Some(toml::from_str("serve = [\"Assistant\"]").unwrap());
    });
    assert!(p.router().classify("/queue/response/_bridge").is_some(), "A2A asks as the bridge");
    let route = ReplyRoute { task: Some("t-1".into()), ..ReplyRoute::default() };
    let token = route.to_token();
    let answer = msg(
        "/queue/response/_bridge",
        wa(&[
            ("_message", "42"),
            ("_sender", "Assistant"),
            ("_message_type", "RESPONSE"),
            ("_tool_id", &token),
        ]),
    );
    match p.process(&answer).unwrap() {
        Processed::Absorbed { why: Absorbed::Task { route, answer }, stream: None } => {
            assert_eq!(route, "wiseagents->a2a");
            assert_eq!(
                answer,
                TaskAnswer {
                    task: "t-1".into(),
                    intent: Some(Intent::Response),
                    text: "42".into(),
                    sender: Some("Assistant".into())
                }
            );
        }
        other => panic!("not handed to the task: {other:?}"),
    }
}

#[test]
fn a_proxied_agent_asked_by_the_bridge_for_an_mcp_call_answers_the_call() {
    let mut p =
        pipeline_with(|c| c.mcp = Some(crate::config::mcp::McpConfig::new(vec!["WeatherAgent".into()])));
    let token = ReplyRoute { task: Some("mcp-1".into()), ..ReplyRoute::default() }.to_token();
    let ask = msg(
        "/queue/request/WeatherAgent",
        wa(&[
            ("_message", "Paris"),
            ("_sender", REPLY_AGENT),
            ("_message_type", "QUERY"),
            ("_tool_id", &token),
            ("_route_response_to", REPLY_AGENT),
            ("_context_name", "default"),
        ]),
    );
    let asked = json_of(&sent(&mut p, &ask));
    let reply = json!({"schema_version": 1, "id": "r1", "type": "reply", "sender": "WeatherAgent",
        "recipient": asked["sender"], "correlation_id": asked["correlation_id"], "reply_to": null,
        "payload": {"message": "Sunny"}, "timestamp": 1.0, "trace_id": "", "span_id": "",
        "parent_span_id": null, "attempt": 0, "priority": 0});
    let answered = p.process(&msg(CIV_IN, reply.to_string())).unwrap();
    let answer = match answered {
        Processed::Send(out) => {
            let back = msg(out.frame.header("destination").unwrap(), out.frame.body.to_vec());
            p.process(&back).unwrap()
        }
        other => other,
    };
    match answer {
        Processed::Absorbed { why: Absorbed::Task { answer, route }, .. } => {
            assert_eq!((answer.task.as_str(), route.as_str()), ("mcp-1", "wiseagents->mcp"))
        }
        other => panic!("not the call's answer: {other:?}"),
    }
}
