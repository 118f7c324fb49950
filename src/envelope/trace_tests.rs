use super::*;

const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_w3c_traceparent_is_read_with_its_flags_and_written_back_the_same() {
    let cx = SpanContext::parse(GOOD).unwrap();
    assert_eq!(cx.trace.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(cx.span.to_string(), "00f067aa0ba902b7");
    assert_eq!(cx.flags, 1);
    assert_eq!(cx.header(), GOOD);
    let unsampled = SpanContext::parse(&GOOD.replace("-01", "-00")).unwrap();
    assert_eq!(unsampled.header(), GOOD.replace("-01", "-00"), "the flags that arrived are kept");
}

#[test]
fn a_traceparent_that_does_not_fit_is_ignored() {
    let hostile = [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_owned(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01".to_owned(),
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01".to_owned(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra".to_owned(),
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01".to_owned(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1".to_owned(),
        "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
        "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
        format!("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}", "a".repeat(600)),
        "garbage".to_owned(),
        String::new(),
    ];
    for header in &hostile {
        assert_eq!(SpanContext::parse(header), None, "{header}");
    }
}

#[test]
fn a_later_version_is_read_for_the_fields_it_shares_with_version_00() {
    let v1 = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-whatever";
    let cx = SpanContext::parse(v1).unwrap();
    assert_eq!(cx.header(), GOOD, "written back as version 00");
}

#[test]
fn new_ids_are_never_zero_and_differ() {
    let mut clock = crate::envelope::FixedClock { unix: 0.0, last: 0 };
    let (a, b) = (SpanId::new(&mut clock), SpanId::new(&mut clock));
    assert!(a.0 != 0 && b.0 != 0 && a != b);
    let t = TraceId::new(&mut clock);
    assert_eq!(TraceId::parse(&t.to_string()), Some(t));
}
