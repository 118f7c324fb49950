//! The command line: validate (with environment overrides), translate, version.

use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_stomp-agent-bridge");

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/config/bridge.toml").to_owned()
}

#[test]
fn validate_accepts_the_example_and_names_the_key_an_environment_override_broke() {
    let ok = Command::new(BIN).args(["validate", "--config", &example()]).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let bad = Command::new(BIN)
        .args(["validate", "--config", &example()])
        .env("BRIDGE__PROTOCOLS__CIVITAS__INBOX", "/queue/x")
        .env("BRIDGE__DELIVERY__IN_FLIGHT", "0")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("bridge.toml: protocols.civitas.inbox") && err.contains("delivery.in_flight"),
        "{err}"
    );
}

fn translate(args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(BIN)
        .arg("translate")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "translate {args:?} failed");
    out.stdout
}

#[test]
fn translate_goes_to_civitas_msgpack_and_back_offline() {
    let yaml =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vectors/wiseagents/03_tool_call.yaml"))
            .unwrap();
    let packed = translate(
        &["--from", "wiseagents", "--to", "civitas", "--encoding", "msgpack", "--agent", "WeatherAgent"],
        &yaml,
    );
    assert!((0x80..=0x8f).contains(&packed[0]) || packed[0] == 0xde, "a msgpack map");
    let back = translate(&["--from", "civitas", "--to", "wiseagents", "--agent", "WeatherAgent"], &packed);
    let text = String::from_utf8(back).unwrap();
    assert!(text.starts_with("!wiseagents.WiseAgentMessage\n"), "{text}");
    assert!(text.contains("_tool_id: call_9f2c") && text.contains("_sender: LLMAgent"), "{text}");
}

#[test]
fn translate_explains_a_bad_body_and_fails() {
    let mut child = Command::new(BIN)
        .args(["translate", "--from", "wiseagents", "--to", "vox"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"!other.Message\n_message: x\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("[wrong_shape]"));
}

#[test]
fn version_prints_the_crate_version() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("stomp-agent-bridge {}", env!("CARGO_PKG_VERSION"))
    );
}
