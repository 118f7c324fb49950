use super::*;
use crate::envelope::Content;
use crate::envelope::SystemClock;

fn opts() -> VoxOptions {
    let mut registry = Registry::new(Uuid::parse_str("0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10").unwrap());
    registry.add("Ops", Some(Uuid::parse_str("6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11").unwrap()));
    registry.add("User", None);
    VoxOptions { registry, message_source: "wiseagents".into() }
}

fn env(intent: Option<Intent>, direction: Direction) -> Envelope {
    Envelope {
        intent,
        direction,
        sender: Some("User".into()),
        recipient: Some("Ops".into()),
        context: Some("default".into()),
        content: Content::Text("restart db".into()),
        timestamp: Some(1_796_007_855.25),
        ..Default::default()
    }
}

#[test]
fn types_follow_the_table_both_ways() {
    use Intent::*;
    // (intent, direction, VOX type, intent read back without details.message_type)
    let cases = [
        (Some(Query), Direction::Request, "command_request", Some(Query)),
        (None, Direction::Request, "command_request", Some(Query)),
        (Some(Human), Direction::Request, "command_request", Some(Query)),
        (Some(Response), Direction::Response, "command_result", Some(Response)),
        // A Wise Agents ACK carries an answer: a result, never a receipt.
        (Some(Ack), Direction::Response, "command_result", Some(Response)),
        (Some(CannotAnswer), Direction::Response, "command_error", Some(CannotAnswer)),
        // The contract has no `alert`: an ALERT is a request that says its type.
        (Some(Alert), Direction::Request, "command_request", Some(Query)),
    ];
    for (intent, direction, kind, table_intent) in cases {
        let msg = from_envelope(&env(intent, direction), &mut opts(), &mut SystemClock).unwrap();
        assert_eq!(msg.kind, kind, "{intent:?}");
        let back = to_envelope(msg.clone(), &opts()).unwrap();
        assert_eq!(
            (back.direction, back.intent),
            (direction, intent),
            "{kind}: an explicit null type stays none"
        );
        let mut bare = msg;
        bare.details.remove("message_type");
        assert_eq!(to_envelope(bare, &opts()).unwrap().intent, table_intent, "{kind} read by the table");
    }
}

#[test]
fn agents_are_uuids_from_config_or_uuid5_and_resolve_back() {
    let mut o = opts();
    let msg = from_envelope(&env(Some(Intent::Query), Direction::Request), &mut o, &mut SystemClock).unwrap();
    assert_eq!(msg.target.to_string(), "6a1e1b0e-2f55-4c51-8f5e-0a8c6a0f2b11");
    assert_eq!(
        msg.source,
        Uuid::new_v5(&Uuid::parse_str("0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10").unwrap(), b"User")
    );
    assert_eq!(o.registry.name_of(&msg.source).as_deref(), Some("User"));
    assert_eq!(o.registry.name_of(&Uuid::nil()), None);
    let json = String::from_utf8(msg.encode().unwrap()).unwrap();
    assert!(json.contains("\"emitted_at\":\"2026-11-30T03:04:15.25Z\""), "{json}");
}

#[test]
fn a_command_request_reads_as_query_unless_details_say_which() {
    let mut msg = from_envelope(&env(None, Direction::Request), &mut opts(), &mut SystemClock).unwrap();
    msg.details.clear();
    assert_eq!(to_envelope(msg.clone(), &opts()).unwrap().intent, Some(Intent::Query));
    msg.details.insert("message_type".into(), Value::String("ACTION_REQUEST".into()));
    assert_eq!(to_envelope(msg, &opts()).unwrap().intent, Some(Intent::ActionRequest));
}

#[test]
fn a_response_names_the_request_it_answers_in_reply_to() {
    let request_id = Uuid::now_v7();
    let mut e = env(Some(Intent::Response), Direction::Response);
    e.in_reply_to = Some(request_id.to_string());
    let msg = from_envelope(&e, &mut opts(), &mut SystemClock).unwrap();
    assert_eq!(msg.reply_to, Some(request_id));
    assert_eq!(to_envelope(msg, &opts()).unwrap().in_reply_to, Some(request_id.to_string()));
}

#[test]
fn naive_and_offset_times_are_read_and_garbage_is_refused() {
    assert_eq!(parse_time("2026-01-01T00:00:00").unwrap(), 1_767_225_600.0);
    assert_eq!(parse_time("2026-01-01T01:00:00+01:00").unwrap(), 1_767_225_600.0);
    assert!(parse_time("yesterday").is_err());
    assert_eq!(format_time(1_767_225_600.5).unwrap(), "2026-01-01T00:00:00.5Z");
    for extreme in [f64::MAX, f64::MIN, f64::NAN, f64::INFINITY, 1e19, -1e300] {
        let err = format_time(extreme).expect_err("beyond the years 1 to 9999");
        assert_eq!(err.kind(), "invalid_field", "{extreme}: {err}");
    }
    assert_eq!(format_time(253_402_300_799.0).unwrap(), "9999-12-31T23:59:59Z");
}

#[test]
fn a_glob_is_no_name_and_the_names_it_matches_resolve_back_within_a_bound() {
    let mut r = Registry::new(Uuid::nil());
    r.add("Civ*", None);
    assert_eq!(r.name_of(&Uuid::new_v5(&Uuid::nil(), b"Civ*")), None);
    let scout = r.uuid_of("CivScout");
    assert_eq!(r.name_of(&scout).as_deref(), Some("CivScout"));
    let stranger = r.uuid_of("Stranger");
    assert_eq!(r.name_of(&stranger), None, "no glob matches it");
    for i in 0..MAX_MET_NAMES + 5 {
        r.uuid_of(&format!("Civ{i}"));
    }
    assert_eq!(r.met.len(), MAX_MET_NAMES);
    assert_eq!(r.name_of(&scout).as_deref(), Some("CivScout"), "met first, kept");
}
