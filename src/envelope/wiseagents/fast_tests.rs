use super::*;

fn value(body: &str) -> Option<String> {
    let events = events(body, 100)?;
    match &events[4] {
        Event::Scalar(v, ..) => Some(v.to_string()),
        _ => None,
    }
}

const H: &str = "!wiseagents.WiseAgentMessage\n_message: ";

#[test]
fn reads_pyyaml_folds_and_escapes() {
    assert_eq!(value(&format!("{H}'a b\n  c'\n")).as_deref(), Some("a b c"));
    assert_eq!(
        value(&format!("{H}'line one\n\n  line two\n\n\n  four'\n")).as_deref(),
        Some("line one\nline two\n\nfour")
    );
    assert_eq!(value(&format!("{H}'it''s'\n")).as_deref(), Some("it's"));
    assert_eq!(
        value(&format!("{H}\"a\\\n  \\ b\\xE9\\u2014\\U0001F600\\a\"\n")).as_deref(),
        Some("a b\u{e9}\u{2014}😀\x07")
    );
    assert_eq!(value(&format!("{H}plain text\n")).as_deref(), Some("plain text"));
}

#[test]
fn anything_else_goes_to_the_general_parser() {
    for body in [
        format!("{H}plain\n  folded\n"),
        format!("{H}&anchor x\n"),
        format!("{H}[1, 2]\n"),
        format!("{H}'unterminated\n"),
        format!("{H}'x' # comment\n"),
        format!("{H}\"\\q\"\n"),
        format!("{H}'a\nno indent'\n"),
        "!other\n_message: x\n".to_owned(),
        format!("{H}x"),
    ] {
        assert!(events(&body, 100).is_none(), "{body:?}");
    }
}
