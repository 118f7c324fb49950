//! Every vector in ../shared/vectors/wiseagents reads as its .json says: valid ones to exactly
//! the listed fields, invalid ones to a typed error.

use serde_json::Value;
use std::path::PathBuf;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;

fn vectors() -> Vec<(String, Vec<u8>, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/wiseagents");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let expected: Value =
                serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap()).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((name, std::fs::read(&path).unwrap(), expected));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 23, "found only {} vectors", out.len());
    out
}

fn field(v: &Value, name: &str) -> Option<String> {
    v["fields"][name].as_str().map(str::to_owned)
}

#[test]
fn valid_vectors_read_to_exactly_their_fields() {
    for (name, body, expected) in vectors().into_iter().filter(|v| v.2["valid"] == true) {
        let m = WiseMessage::parse(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(Some(m.message.clone()), field(&expected, "message"), "{name} message");
        assert_eq!(m.sender, field(&expected, "sender"), "{name} sender");
        assert_eq!(
            m.message_type.map(|t| t.as_str().to_owned()),
            field(&expected, "message_type"),
            "{name} type"
        );
        assert_eq!(m.tool_id, field(&expected, "tool_id"), "{name} tool_id");
        assert_eq!(m.route_response_to, field(&expected, "route_response_to"), "{name} route_response_to");
        assert_eq!(m.context_name, field(&expected, "context_name"), "{name} context_name");
    }
}

#[test]
fn invalid_vectors_are_refused_with_a_reason() {
    let mut refused = 0;
    for (name, body, _) in vectors().into_iter().filter(|v| v.2["valid"] == false) {
        let err = WiseMessage::parse(&body).expect_err(&name);
        assert!(!err.to_string().is_empty() && !err.kind().is_empty());
        eprintln!("{name}: [{}] {err}", err.kind());
        refused += 1;
    }
    assert_eq!(refused, 9);
}

#[test]
fn written_valid_vectors_read_back_the_same() {
    for (name, body, _) in vectors().into_iter().filter(|v| v.2["valid"] == true) {
        let m = WiseMessage::parse(&body).unwrap();
        let again = WiseMessage::parse(m.to_yaml().as_bytes()).unwrap();
        assert_eq!(
            (again.message, again.message_type, again.sender),
            (m.message, m.message_type, m.sender),
            "{name}"
        );
    }
}
