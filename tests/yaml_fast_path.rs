//! The YAML fast path agrees with saphyr-parser: on real PyYAML output (dumped by PyYAML in
//! the test virtualenv, folded at 80 columns), on the shared vectors, and on arbitrary
//! bodies built from YAML fragments, it gives the same events or stands aside.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRng, TestRunner};
use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::json;
use std::path::PathBuf;
use stomp_agent_bridge::envelope::wiseagents::{WiseMessage, fast};

/// A comparable rendering of events: kind, text, style, tag.
fn render<'a>(events: impl IntoIterator<Item = Event<'a>>) -> Vec<String> {
    events.into_iter().map(|e| format!("{e:?}")).collect()
}

fn saphyr(text: &str) -> Option<Vec<String>> {
    let events: Result<Vec<_>, _> = Parser::new_from_str(text).map(|r| r.map(|(e, _)| e)).collect();
    events.ok().map(render)
}

/// True when the fast path read it (and agreed with saphyr), false when it stood aside.
fn agree(text: &str) -> bool {
    match fast::events(text, 10_000) {
        None => false,
        Some(events) => {
            assert_eq!(Some(render(events)), saphyr(text), "{text:?}");
            true
        }
    }
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{0,120}", "[ -~]{0,200}", "[a-z \\n'\"\\\\:#\\t-]{0,120}"]
}

#[test]
fn real_pyyaml_output_reads_the_same_on_both_paths() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var("SAB_VENV").map(PathBuf::from).unwrap_or_else(|_| root.join(".venv"));
    assert!(venv.join("bin/python").exists(), "run scripts/python-env.sh");
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(Config::default().rng_algorithm),
    );
    let fields = (text(), text(), proptest::option::of(text()), proptest::option::of("[A-Za-z_.]{1,20}"));
    let samples: Vec<_> = (0..2000).map(|_| fields.new_tree(&mut runner).unwrap().current()).collect();
    let input: String = samples
        .iter()
        .map(|(m, s, t, c)| {
            json!({"_message": m, "_sender": s, "_tool_id": t, "_context_name": c, "_message_type": "QUERY", "_route_response_to": null})
                .to_string()
                + "\n"
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("sab-fast-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("in.jsonl"), input).unwrap();
    let out = std::process::Command::new(venv.join("bin/python"))
        .arg(root.join("tests/interop/dump_pyyaml.py"))
        .arg(dir.join("in.jsonl"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies: Vec<String> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(bodies.len(), samples.len());
    let mut fast_count = 0;
    for (body, (message, sender, tool_id, context)) in bodies.iter().zip(&samples) {
        fast_count += usize::from(agree(body));
        let m = WiseMessage::parse(body.as_bytes()).unwrap_or_else(|e| panic!("{body:?}: {e}"));
        assert_eq!(
            (&m.message, m.sender.as_ref(), &m.tool_id, &m.context_name),
            (message, Some(sender), tool_id, context),
            "{body}"
        );
    }
    eprintln!("fast path read {fast_count} of {} PyYAML bodies", bodies.len());
    assert!(
        fast_count * 10 >= bodies.len() * 6,
        "the fast path should take most PyYAML bodies ({fast_count})"
    );
}

#[test]
fn the_shared_vectors_read_the_same_on_both_paths() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/wiseagents");
    let mut fast_count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes) {
            fast_count += usize::from(agree(text));
        }
    }
    assert!(fast_count >= 10, "{fast_count}");
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("_message: ".to_owned()),
        Just("_sender: ".to_owned()),
        Just("\n".to_owned()),
        Just("\n  ".to_owned()),
        Just("\n\n  ".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("''".to_owned()),
        Just("\\".to_owned()),
        Just("\\\n  ".to_owned()),
        Just(" #".to_owned()),
        Just(": ".to_owned()),
        Just("\t".to_owned()),
        Just(" ".to_owned()),
        prop::sample::select(vec![
            "\\x41",
            "\\u00e9",
            "\\U0001F600",
            "\\n",
            "\\t",
            "\\ ",
            "\\\"",
            "\\/",
            "\\q",
            "\\ud83d"
        ])
        .prop_map(String::from),
        "[a-z]{1,6}",
        "\\PC{1,3}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn on_arbitrary_bodies_the_fast_path_agrees_or_stands_aside(parts in prop::collection::vec(fragment(), 0..24)) {
        let body = format!("!wiseagents.WiseAgentMessage\n_message: {}\n", parts.concat());
        agree(&body);
    }
}

#[test]
fn a_scalar_style_is_reported_as_saphyr_does() {
    let body = "!wiseagents.WiseAgentMessage\n_message: 'x'\n_sender: \"y\"\n_tool_id: z\n";
    let events = fast::events(body, 100).unwrap();
    let styles: Vec<ScalarStyle> = events
        .iter()
        .filter_map(|e| match e {
            Event::Scalar(_, s, ..) => Some(*s),
            _ => None,
        })
        .collect();
    use ScalarStyle::*;
    assert_eq!(styles, [Plain, SingleQuoted, Plain, DoubleQuoted, Plain, Plain]);
    assert!(agree(body));
}
