//! Each message's hop through the pipeline (docs/OBSERVABILITY.md): the trace it continues or
//! starts, and the parents of the bridge's spans.

use super::harness::*;
use crate::telemetry::trace::HopKind;
use serde_json::json;

#[test]
fn an_ask_and_its_answer_are_one_trace_joined_through_the_pending_ask() {
    let mut p = pipeline();
    let out = sent(&mut p, &wa_ask("WeatherAgent", Some("call_7"), "Weather"));
    let ask = out.hop.clone().expect("traces are on by default");
    let asked = json_of(&out);
    assert_eq!(ask.kind, HopKind::Ask);
    assert_eq!(ask.parent, None, "Wise Agents carries no context: a new trace");
    let opened = ask.invocation.clone().expect("an ask opens invoke_agent");
    assert_eq!((opened.parent, opened.trace), (ask.process, ask.trace));
    assert_eq!(asked["trace_id"], ask.trace.to_string(), "Civitas gets the trace");
    assert_eq!(asked["span_id"], ask.send.to_string(), "and the send span");
    assert_eq!(asked["parent_span_id"], opened.span.to_string());
    assert_eq!(out.frame.header("traceparent"), Some(format!("00-{}-{}-01", ask.trace, ask.send).as_str()));

    // The agent answers in a trace of its own: the answer stays in the ask's, the rest linked.
    let own = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let reply = json!({"type": "reply", "sender": "WeatherAgent", "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"message": "sunny"},
        "trace_id": own.0, "span_id": own.1, "parent_span_id": asked["span_id"]});
    let answer = sent(&mut p, &msg(CIV_IN, reply.to_string())).hop.expect("a hop");
    assert_eq!(answer.kind, HopKind::Answer);
    assert_eq!(answer.trace, ask.trace);
    assert_eq!(answer.parent, Some(opened.span), "the answer is the ask's invoke_agent's child");
    assert_eq!(answer.link.map(|(t, s)| (t.to_string(), s.to_string())), Some((own.0.into(), own.1.into())));
    assert_eq!(answer.invocation.map(|i| i.span), Some(opened.span), "and ends it");
}

#[test]
fn a_context_that_arrives_is_continued_and_a_span_without_its_trace_is_not_a_parent() {
    let mut p = pipeline();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let mut m = wa_ask("WeatherAgent", None, "Weather");
    m.frame = m.frame.with("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"));
    let hop = sent(&mut p, &m).hop.unwrap();
    assert_eq!(
        (hop.trace.to_string().as_str(), hop.parent.map(|s| s.to_string())),
        (trace, Some("00f067aa0ba902b7".into()))
    );

    let orphan = json!({"sender": "WeatherAgent", "recipient": "Assistant", "payload": {"message": "q"},
        "trace_id": "", "span_id": "00f067aa0ba902b7"});
    let hop = sent(&mut p, &msg(CIV_IN, orphan.to_string())).hop.unwrap();
    assert_eq!(hop.parent, None, "a span id with no trace id is no parent");
}

#[test]
fn with_traces_off_no_hop_is_made_and_no_trace_field_written() {
    let mut p = pipeline_with(|c| c.traces.conversations = 0);
    let out = sent(&mut p, &wa_ask("WeatherAgent", Some("call_7"), "Weather"));
    assert!(out.hop.is_none());
    let asked = json_of(&out);
    assert_eq!((asked["trace_id"].as_str(), asked["span_id"].as_str()), (Some(""), Some("")));
    assert_eq!(out.frame.header("traceparent"), None);
}

#[test]
fn an_answer_whose_ask_was_taken_back_or_never_known_is_still_a_child_of_its_invoke_agent_span() {
    let mut p = pipeline();
    let out = sent(&mut p, &wa_ask("WeatherAgent", Some("call_7"), "Weather"));
    let opened = out.hop.clone().and_then(|h| h.invocation).expect("an ask opens invoke_agent");
    let asked = json_of(&out);
    let own = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let reply = json!({"type": "reply", "sender": "WeatherAgent", "recipient": asked["reply_to"],
        "correlation_id": asked["correlation_id"], "payload": {"message": "sunny"},
        "trace_id": own.0, "span_id": own.1, "parent_span_id": asked["span_id"]});
    // Its batch rolled back (a failover lost the broker's confirmation): the ask is taken back,
    // though the agent may have it. And a restarted bridge never knew it.
    p.forget_ask(out.ask.as_deref().expect("an ask id"));
    for (bridge, mut p) in [("the same", p), ("a restarted", pipeline())] {
        let answer = sent(&mut p, &msg(CIV_IN, reply.to_string())).hop.expect("a hop");
        assert_eq!(answer.kind, HopKind::Answer, "{bridge} bridge");
        assert_eq!((answer.trace, answer.parent), (opened.trace, Some(opened.span)), "{bridge} bridge");
        let link = answer.link.map(|(t, s)| (t.to_string(), s.to_string()));
        assert_eq!(link, Some((own.0.into(), own.1.into())), "{bridge} bridge: what it carried is linked");
        assert_eq!(answer.invocation, None, "{bridge} bridge: only its pending ask ends the span, once");
    }
}

#[test]
fn with_traces_off_a_token_carries_no_span() {
    let mut p = pipeline_with(|c| c.traces.conversations = 0);
    let asked = json_of(&sent(&mut p, &wa_ask("WeatherAgent", Some("call_7"), "Weather")));
    let token = asked["correlation_id"].as_str().expect("a token");
    let route = crate::envelope::correlation::ReplyRoute::from_token(token).expect("a sab1 token");
    assert_eq!(route.invocation, None, "{token}");
}
