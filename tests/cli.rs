//! The command line: validate and run (every problem of a file, with environment overrides),
//! translate, version.

use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_stomp-agent-bridge");

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/config/bridge.toml").to_owned()
}

#[test]
fn validate_accepts_the_example_and_names_the_variable_that_broke_a_key() {
    let ok = Command::new(BIN).args(["validate", "--config", &example()]).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let bad = Command::new(BIN)
        .args(["validate", "--config", &example()])
        .env("BRIDGE__PROTOCOLS__CIVITAS__INBOX", "/queue/x")
        .env("BRIDGE__DELIVERY__IN_FLIGHT", "0")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let file = example();
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        format!(
            "error: protocols.civitas.inbox: \"/queue/x\" must contain {{agent}}
 --> the environment variable BRIDGE__PROTOCOLS__CIVITAS__INBOX (over {file})

error: delivery.in_flight: must be at least 1
 --> the environment variable BRIDGE__DELIVERY__IN_FLIGHT (over {file})

error: {file} has 2 problems
"
        )
    );
}

/// The example configuration with the issue's three mistakes: a misspelt protocol in the
/// first agent, a word for a number, and a key that does not exist.
fn three_mistakes(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(example()).unwrap();
    let text = text
        .replacen("protocol = \"civitas\"", "protocol = \"civitaz\"", 1)
        .replace("batch_max = 256 ", "batch_max = \"lots\"")
        .replace("login = \"admin\"\n", "login = \"admin\"\ncolour = \"red\"\n");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("bridge.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn validate_and_run_report_all_three_mistakes_of_a_file_with_their_lines() {
    let dir = std::env::temp_dir().join(format!("sab-cli-three-{}", std::process::id()));
    let path = three_mistakes(&dir);
    let file = path.display().to_string();
    let want = format!(
        r#"error: broker.colour: unknown key, expected one of url, urls, login, passcode, passcode_file, vhost, heartbeat_ms, ca_file, cert_file, key_file, address_tls, reconnect_max_ms
 --> {file}:8:1
  |
8 | colour = "red"
  | ^^^^^^

error: agents[0].protocol: found "civitaz", expected one of civitas, vox, penguiflow, a2a
  --> {file}:39:12
   |
39 | protocol = "civitaz"
   |            ^^^^^^^^^

error: delivery.batch_max: found "lots", expected a whole number, 0 or more
  --> {file}:58:13
   |
58 | batch_max = "lots"                        # most messages settled by one batch
   |             ^^^^^^

error: {file} has 3 problems
"#
    );
    for command in ["validate", "run"] {
        let out = Command::new(BIN).args([command, "--config", &file]).output().unwrap();
        assert!(!out.status.success(), "{command} accepted it");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{command}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
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

#[test]
fn dead_letters_needs_a_configuration_and_refuses_an_age_without_a_known_unit() {
    let out = Command::new(BIN).args(["dead-letters", "list"]).output().unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "dead-letters needs --config FILE (the bridge's configuration)\n"
    );
    let out = Command::new(BIN)
        .args(["dead-letters", "replay", "--older-than", "3w", "--config", &example()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error, before any connection");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "error: invalid value '3w' for '--older-than <OLDER_THAN>': \"3w\": the unit is one of s, m, h, d"
        ),
        "{err}"
    );
}

#[test]
fn a_replay_rate_that_would_break_the_pacing_is_refused_before_anything_is_read() {
    for rate in ["inf", "NaN", "-1", "1e-300", "1e9"] {
        let out = Command::new(BIN)
            .args(["dead-letters", "--config", &example(), "replay", "--dry-run", &format!("--rate={rate}")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--rate {rate}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '{rate}' for '--rate <RATE>': \"{rate}\": the rate is 0 (no limit) or between 0.001 and 100000 messages a second"
            )),
            "--rate {rate}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "--rate {rate}: {stderr}");
    }
}
