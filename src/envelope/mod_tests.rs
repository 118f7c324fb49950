use super::*;
use crate::envelope::SystemClock;

#[test]
fn a_traceparent_header_round_trips_through_the_envelope() {
    let mut env = Envelope::default();
    apply_traceparent(&mut env, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_eq!(env.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_eq!(env.span_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!(traceparent(&env).as_deref(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    let mut other = Envelope { trace_id: Some("kept".into()), ..Default::default() };
    apply_traceparent(&mut other, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_eq!(other.trace_id.as_deref(), Some("kept"), "the message's own trace id wins");
    apply_traceparent(&mut other, "garbage");
    assert_eq!(traceparent(&other), None, "no header from ids that do not fit");
}

fn to(from: codecs::Framework, to: codecs::Framework, body: &[u8]) -> Result<codecs::Encoded, EnvelopeError> {
    let origin = codecs::Origin { direction: Direction::Request, recipient: "Ops", content_type: None };
    codecs::Codecs::default().translate(from, to, body, origin, &mut SystemClock)
}

#[test]
fn times_at_the_extremes_are_refused_with_the_field_named_never_wrapped() {
    use codecs::Framework::{Civitas, PenguiFlow, Vox, WiseAgents};
    let civitas = |fields: &str| format!(r#"{{"sender": "A", "recipient": "Ops", {fields}}}"#);
    let penguiflow = |fields: &str| {
        format!(
            r#"{{"payload": "x", "headers": {{"tenant": "t"}}, "trace_id": "995ab2f90da84424bdda4810c6221488", {fields}}}"#
        )
    };
    let cases = [
        (Civitas, civitas(r#""timestamp": 1e300"#), "timestamp"),
        (Civitas, civitas(r#""timestamp": -1.7976931348623157e308"#), "timestamp"),
        (Civitas, civitas(r#""timestamp": 1.0, "ttl": 1e308"#), "ttl"),
        (PenguiFlow, penguiflow(r#""ts": 1e19"#), "ts"),
        (PenguiFlow, penguiflow(r#""ts": 1.0, "deadline_s": 1e300"#), "deadline_s"),
    ];
    for (from, body, field) in cases {
        for target in [Vox, Civitas, PenguiFlow, WiseAgents] {
            let err = to(from, target, body.as_bytes()).expect_err(&body);
            assert_eq!(err.kind(), "invalid_field", "{body}: {err}");
            assert!(err.to_string().contains(field), "{body}: {err}");
        }
    }
    #[derive(serde::Serialize)]
    struct Msgpack {
        recipient: &'static str,
        timestamp: f64,
    }
    let body = rmp_serde::to_vec_named(&Msgpack { recipient: "Ops", timestamp: -1e300 }).unwrap();
    assert_eq!(to(Civitas, Vox, &body).unwrap_err().kind(), "invalid_field", "msgpack");
    // The latest and earliest times Python's datetime holds still pass.
    for ts in ["253402300799.0", "-62135596800.0"] {
        assert!(to(PenguiFlow, Vox, penguiflow(&format!(r#""ts": {ts}"#)).as_bytes()).is_ok(), "{ts}");
    }
}

#[test]
fn a_civitas_trace_id_becomes_penguiflows_and_a_traceparent() {
    let body = br#"{"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7", "recipient": "P"}"#;
    let env = civitas::to_envelope(
        civitas::CivitasMessage::decode(body, civitas::Encoding::Json).unwrap(),
        &mut SystemClock,
    )
    .unwrap();
    let pf = penguiflow::from_envelope(&env, &penguiflow::PenguiOptions::default(), &mut SystemClock);
    assert_eq!(pf.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert!(traceparent(&env).is_some());
}
