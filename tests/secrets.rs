//! The broker passcode: read from `broker.passcode_file` (container secrets), and never shown:
//! the whole output of a run and of `validate`, and the metrics, are searched for it.

mod common;

use common::bridge::toml_text;
use common::fake::weather_config;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use stomp_agent_bridge::config::DeliveryConfig;

const BIN: &str = env!("CARGO_BIN_EXE_stomp-agent-bridge");
const PASSCODE: &str = "pw-7f1d-0071-secret";

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sab-secrets-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fake broker's configuration for the broker at `broker` (`host:port`), logging in as
/// `bridge` with the passcode in `dir/passcode` when there is one, and HTTP on `http`.
fn write_config(dir: &Path, broker: &str, http: &str) -> PathBuf {
    let path = dir.join("bridge.toml");
    let mut config = weather_config(0, [0, 0], DeliveryConfig::default());
    config.broker.url = format!("stomp://{broker}");
    config.broker.login = Some("bridge".into());
    config.broker.passcode_file = dir.join("passcode").exists().then(|| "passcode".into());
    config.http.listen = http.into();
    std::fs::write(&path, toml_text(&config)).unwrap();
    path
}

/// A broker that refuses every login, telling the test what passcode each CONNECT carried.
fn refusing_broker() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let connect = read_frame(&mut stream);
            let passcode = connect.lines().find_map(|l| l.strip_prefix("passcode:")).unwrap_or("(none)");
            if tx.send(passcode.to_owned()).is_err() {
                return;
            }
            let _ = stream.write_all(b"ERROR\nmessage:Authentication failed\n\n\0");
        }
    });
    (addr, rx)
}

fn read_frame(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut bytes = Vec::new();
    let mut byte = [0u8];
    while stream.read(&mut byte).unwrap_or(0) == 1 && byte[0] != 0 {
        bytes.push(byte[0]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// The bridge process, killed if the test ends before it stops it.
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn all_output(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_run_with_a_refused_passcode_from_a_file_never_shows_it() {
    let dir = dir("run");
    std::fs::write(dir.join("passcode"), format!("{PASSCODE}\n")).unwrap();
    let (broker, connects) = refusing_broker();
    let http = format!("127.0.0.1:{}", free_port());
    let config = write_config(&dir, &broker, &http);
    let mut bridge = Running(Some(
        Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .env("BRIDGE__LOG__LEVEL", "trace")
            .env("BRIDGE__LOG__FORMAT", "json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    // Two logins: the refusal of the first has been handled (and logged) by then.
    for _ in 0..2 {
        let sent = connects.recv_timeout(Duration::from_secs(30)).expect("the bridge logs in");
        assert_eq!(sent, PASSCODE, "the file's text without its line end");
    }
    let metrics = get(&http, "/metrics");
    assert!(metrics.contains("bridge_reconnects_total"), "{metrics}");
    let child = bridge.0.take().unwrap();
    let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let text = all_output(&out);
    assert!(text.contains("Authentication failed"), "the refusal is logged: {text}");
    assert!(!text.contains(PASSCODE), "the passcode in the output:\n{text}");
    assert!(!metrics.contains(PASSCODE), "the passcode in /metrics");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn validate(config: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["validate", "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (out.status.success(), all_output(&out))
}

#[test]
fn validate_names_passcode_problems_without_the_passcode() {
    let dir = dir("validate");
    let config = write_config(&dir, "127.0.0.1:61613", "");
    let (ok, text) = validate(&config, &[("BRIDGE__BROKER__PASSCODE", PASSCODE)]);
    assert!(ok, "{text}");
    assert!(!text.contains(PASSCODE), "{text}");

    // Credentials written into the URL are refused, and not repeated.
    let url = format!("stomp://bridge:{PASSCODE}@127.0.0.1:61613");
    let (ok, text) = validate(&config, &[("BRIDGE__BROKER__URL", &url)]);
    assert!(!ok && text.contains("broker.url"), "{text}");
    assert!(!text.contains(PASSCODE), "{text}");

    // A passcode and a passcode file: one or the other.
    std::fs::write(dir.join("passcode"), PASSCODE).unwrap();
    let config = write_config(&dir, "127.0.0.1:61613", "");
    let (ok, text) = validate(&config, &[]);
    assert!(ok, "{text}");
    let (ok, text) = validate(&config, &[("BRIDGE__BROKER__PASSCODE", PASSCODE)]);
    assert!(!ok && text.contains("broker.passcode_file") && text.contains("not both"), "{text}");
    assert!(!text.contains(PASSCODE), "{text}");

    // A file that cannot be read, or is empty, is named.
    std::fs::remove_file(dir.join("passcode")).unwrap();
    let (ok, text) = validate(&config, &[("BRIDGE__BROKER__PASSCODE_FILE", "/nonexistent/passcode")]);
    assert!(!ok && text.contains("broker.passcode_file") && text.contains("/nonexistent/passcode"), "{text}");
    std::fs::write(dir.join("empty"), "\n").unwrap();
    let (ok, text) = validate(&config, &[("BRIDGE__BROKER__PASSCODE_FILE", "empty")]);
    assert!(!ok && text.contains("empty"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
