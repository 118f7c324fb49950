use super::*;
use crate::stomp::{AckRef, Command, Frame};

fn dead_letter(headers: &[(&str, &str)], body: &str) -> DeadLetter {
    let mut frame = Frame::new(Command::Message).with_body(body.to_owned());
    for (k, v) in headers {
        frame = frame.with(*k, *v);
    }
    let ack = AckRef { epoch: 1, subscription: "s".into(), message_id: "m".into(), ack_id: None };
    DeadLetter::new(Message { ack, destination: "/queue/dead".into(), frame })
}

#[test]
fn the_id_follows_the_content_not_the_delivery() {
    let a = dead_letter(&[("bridge-error-kind", "yaml"), ("message-id", "1")], "x");
    let b = dead_letter(&[("bridge-error-kind", "yaml"), ("message-id", "2"), (REPLAYS, "3")], "x");
    let c = dead_letter(&[("bridge-error-kind", "yaml")], "y");
    assert_eq!(a.id, b.id);
    assert_ne!(a.id, c.id);
    assert_eq!(a.id.len(), 12);
}

#[test]
fn filters_hold_together_and_an_unknown_age_matches_no_age_filter() {
    let now = 1_000_000_000;
    let old = dead_letter(
        &[("bridge-error-kind", "too_large"), ("bridge-source", "/queue/a"), ("timestamp", "999000000")],
        "x",
    );
    let ageless = dead_letter(&[("bridge-error-kind", "too_large"), ("bridge-source", "/queue/a")], "y");
    let kind = Filter { kind: Some("too_large".into()), ..Filter::default() };
    assert!(kind.matches(&old, now) && kind.matches(&ageless, now));
    let other_source = Filter { source: Some("/queue/b".into()), ..kind.clone() };
    assert!(!other_source.matches(&old, now));
    let older = Filter { older_than: Some(Duration::from_secs(900)), ..kind.clone() };
    assert!(older.matches(&old, now) && !older.matches(&ageless, now));
    let newer = Filter { newer_than: Some(Duration::from_secs(900)), ..kind };
    assert!(!newer.matches(&old, now));
    let by_id = Filter { ids: vec![old.id[..6].to_owned()], ..Filter::default() };
    assert!(by_id.matches(&old, now) && !by_id.matches(&ageless, now));
}

#[test]
fn ages_read_with_their_unit_and_refuse_others() {
    assert_eq!(parse_age("90"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_age("15m"), Ok(Duration::from_secs(900)));
    assert_eq!(parse_age("2h"), Ok(Duration::from_secs(7200)));
    assert_eq!(parse_age("7d"), Ok(Duration::from_secs(604_800)));
    assert_eq!(parse_age("3w"), Err("\"3w\": the unit is one of s, m, h, d".to_owned()));
    assert!(parse_age("soon").is_err());
}

#[test]
fn a_replay_goes_to_its_source_with_the_count_raised_and_nothing_of_the_delivery() {
    let dl = dead_letter(
        &[
            ("bridge-source", "/queue/request/A"),
            ("bridge-error", "too big"),
            ("content-type", "text/yaml"),
            ("receipt", "r1"),
            (REPLAYS, "2"),
        ],
        "body",
    );
    let frame = replay_frame(&dl, None).unwrap();
    assert_eq!(
        frame.headers,
        [
            ("destination", "/queue/request/A"),
            ("persistent", "true"),
            (REPLAYS, "3"),
            ("content-type", "text/yaml"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    assert_eq!(&frame.body[..], b"body");
    assert_eq!(
        replay_frame(&dl, Some("/queue/elsewhere")).unwrap().header("destination"),
        Some("/queue/elsewhere")
    );
    assert!(replay_frame(&dead_letter(&[], "x"), None).is_none(), "no source, no destination");
}

#[test]
fn a_replay_count_at_its_largest_stays_there_instead_of_overflowing() {
    // Any broker client can set `bridge-replays`; the count must not wrap or panic.
    let dl = dead_letter(&[("bridge-source", "/queue/a"), (REPLAYS, "4294967295")], "x");
    let frame = replay_frame(&dl, None).unwrap();
    assert_eq!(frame.header(REPLAYS), Some("4294967295"));
}

#[test]
fn rates_are_zero_or_finite_and_within_bounds() {
    assert_eq!(parse_rate("0"), Ok(0.0));
    assert_eq!(parse_rate("50"), Ok(50.0));
    assert_eq!(parse_rate("0.001"), Ok(0.001));
    for bad in ["inf", "NaN", "-1", "1e-300", "1e9", "fast"] {
        assert!(parse_rate(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_reading_marker_is_not_persistent_and_expires_on_every_broker() {
    let frame = queue::marker_frame("/queue/dead", "m-1", 1_000_000, Duration::from_secs(3600));
    assert_eq!(
        frame.headers,
        [
            ("destination", "/queue/dead"),
            ("expires", "4600000"),
            ("expiration", "3600000"),
            ("bridge-dead-letters-marker", "m-1"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    assert_eq!(queue::marker_ttl(Duration::from_secs(30)), Duration::from_secs(3600));
    assert_eq!(queue::marker_ttl(Duration::from_secs(3600)), Duration::from_secs(7200));
}

#[test]
fn only_a_marker_older_than_the_age_is_stale_and_a_foreign_value_never_is() {
    let now = now_ms();
    let old = uuid::Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, (now / 1000) - 120, 0));
    let fresh = uuid::Uuid::now_v7();
    let age = Duration::from_secs(60);
    assert!(queue::stale_marker(&old.to_string(), now, age));
    assert!(!queue::stale_marker(&fresh.to_string(), now, age));
    assert!(!queue::stale_marker("not-a-uuid", now, age));
    assert!(!queue::stale_marker(&uuid::Uuid::nil().to_string(), now, age), "no time in a nil uuid");
}
