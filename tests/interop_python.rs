//! Interop against the frameworks' real Python parsers (PyYAML, Civitas's serializer,
//! penguiflow, a pydantic VOX model) in the virtualenv of `scripts/python-env.sh`: every
//! body the bridge writes, over thousands of generated strings, reads back as meant.

mod common;

use common::generate;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRng, TestRunner};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use stomp_agent_bridge::envelope::Direction;
use stomp_agent_bridge::envelope::SystemClock;
use stomp_agent_bridge::envelope::civitas::{self, Encoding};
use stomp_agent_bridge::envelope::penguiflow;
use stomp_agent_bridge::envelope::vox::{self, Registry, VoxOptions};
use stomp_agent_bridge::envelope::wiseagents::{self, WiseMessage};

const WISE_CASES: usize = 3000;
const OTHER_CASES: usize = 400;

fn venv() -> PathBuf {
    let venv = std::env::var("SAB_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv"));
    assert!(
        venv.join("bin/python").exists(),
        "no virtualenv at {}: run scripts/python-env.sh",
        venv.display()
    );
    venv
}

fn samples(n: usize) -> Vec<WiseMessage> {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(Config::default().rng_algorithm),
    );
    let strategy = generate::wise_message(proptest::option::of(generate::text()));
    (0..n).map(|_| strategy.new_tree(&mut runner).expect("a sample").current()).collect()
}

fn case(n: usize, framework: &str, encoding: &str, body: &[u8], expect: Value) -> String {
    let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
    json!({"n": n, "framework": framework, "encoding": encoding, "body": hex, "expect": expect}).to_string()
}

fn wise_cases(out: &mut Vec<String>) {
    for (n, m) in samples(WISE_CASES).into_iter().enumerate() {
        let expect = json!({
            "_context_name": m.context_name, "_message": m.message, "_message_type": m.message_type.map(|t| t.as_str()),
            "_route_response_to": m.route_response_to, "_sender": m.sender, "_tool_id": m.tool_id,
        });
        out.push(case(n, "wiseagents", "yaml", m.to_yaml().as_bytes(), expect));
    }
}

fn other_cases(out: &mut Vec<String>) {
    let mut registry = Registry::new(uuid::Uuid::now_v7());
    registry.add("Ops", None);
    let mut vox_opts = VoxOptions { registry, message_source: "wiseagents".into() };
    let pf_opts = penguiflow::PenguiOptions::default();
    for (n, m) in samples(OTHER_CASES).into_iter().enumerate() {
        let direction = if n % 2 == 0 { Direction::Request } else { Direction::Response };
        let mut env = wiseagents::to_envelope(m, direction, "Ops");
        env.in_reply_to = (direction == Direction::Response).then(|| uuid::Uuid::now_v7().to_string());
        let c = civitas::from_envelope(&env, &mut SystemClock).expect("civitas");
        let c_expect = serde_json::to_value(&c).unwrap();
        out.push(case(n, "civitas", "json", &c.encode(Encoding::Json).unwrap(), c_expect.clone()));
        out.push(case(n, "civitas", "msgpack", &c.encode(Encoding::Msgpack).unwrap(), c_expect));
        let v = vox::from_envelope(&env, &mut vox_opts, &mut SystemClock).expect("vox");
        let mut v_expect = serde_json::to_value(&v).unwrap();
        v_expect["emitted_at_unix"] = json!(env.timestamp.unwrap_or_else(|| parse_unix(&v.emitted_at)));
        v_expect.as_object_mut().unwrap().remove("emitted_at");
        out.push(case(n, "vox", "json", &v.encode().unwrap(), v_expect));
        let p = penguiflow::from_envelope(&env, &pf_opts, &mut SystemClock);
        out.push(case(n, "penguiflow", "json", &p.encode().unwrap(), serde_json::to_value(&p).unwrap()));
    }
}

fn parse_unix(rfc3339: &str) -> f64 {
    let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339).unwrap();
    t.unix_timestamp_nanos() as f64 / 1e9
}

#[test]
fn the_real_python_parsers_read_every_body_the_bridge_writes() {
    let venv = venv();
    let mut cases = Vec::new();
    wise_cases(&mut cases);
    other_cases(&mut cases);
    let dir = std::env::temp_dir().join(format!("sab-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cases.jsonl");
    let mut file = std::fs::File::create(&path).unwrap();
    for line in &cases {
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/check_bodies.py");
    let output =
        Command::new(venv.join("bin/python")).arg(script).arg(&path).env("SAB_VENV", &venv).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(output.status.success(), "the Python parsers disagreed");
    assert!(stdout.contains(&format!("interop: {} passed, 0 failed", cases.len())), "{stdout}");
}
