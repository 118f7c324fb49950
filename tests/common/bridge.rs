//! The bridge as a real process with a per-test configuration, and Wise Agents agents
//! played by Python stomp.py clients (tests/e2e/wa_agent.py).

use super::Broker;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use stomp_agent_bridge::config::{
    AgentConfig, BrokerConfig, CivitasConfig, Config, DeliveryConfig, Frameworks, HttpConfig, LogConfig,
    PenguiFlowConfig, VoxConfig, WiseAgentsConfig,
};

/// Names and destinations no other test uses.
pub struct Names {
    pub uid: String,
    pub request_prefix: String,
    pub response_prefix: String,
}

impl Names {
    pub fn new(broker: Broker) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
            % 1_000_000_000;
        let uid = format!("{}x{}x{}", std::process::id(), nanos, N.fetch_add(1, Ordering::Relaxed));
        let (request_prefix, response_prefix) = match broker {
            Broker::ActiveMq | Broker::Artemis => ("/queue/request/".into(), "/queue/response/".into()),
            Broker::RabbitMq => ("/queue/request.".into(), "/queue/response.".into()),
        };
        Names { uid, request_prefix, response_prefix }
    }

    /// An agent name unique to this test.
    pub fn agent(&self, base: &str) -> String {
        format!("{base}_{}", self.uid)
    }

    /// One of this test's bridge destinations (`civitas.in.NAME`, `dead`, ...).
    pub fn dest(&self, what: &str) -> String {
        format!("/queue/sab.e2e.{}.{what}", self.uid)
    }

    /// The bridge's own name towards Wise Agents (`wiseagents.reply_agent`): one per test, so
    /// that bridges running side by side never take each other's answers.
    pub fn reply_agent(&self) -> String {
        self.agent("_bridge")
    }

    pub fn request(&self, agent: &str) -> String {
        format!("{}{agent}", self.request_prefix)
    }

    pub fn response(&self, agent: &str) -> String {
        format!("{}{agent}", self.response_prefix)
    }
}

/// The VOX namespace of the tests' configurations.
pub const VOX_NAMESPACE: &str = "0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10";

/// A proxied agent `name` in `protocol` (`civitas`, `vox` or `penguiflow`), with its
/// framework's defaults.
pub fn proxied(name: &str, protocol: &str) -> AgentConfig {
    AgentConfig::new(name, protocol.parse().expect("a framework"))
}

/// `delivery.receipt_timeout_ms` of [`config`]. Past it, a RECEIPT not yet come is a reported
/// stall on a connection whose broker heart-beats and a reset on one that does not, and the
/// bridge's own SUBSCRIBEs fail; on a busy machine a late receipt is not a dead broker, and a
/// reset it caused would repeat messages in tests that count them. So it is sized for a busy
/// machine; a test that depends on a short one sets its own (tests/backpressure.rs).
pub const RECEIPT_TIMEOUT_MS: u64 = 30_000;

/// `delivery.shutdown_timeout_ms` of [`config`]: how long a stopping bridge (or a reload that
/// removes an agent) waits for the broker to confirm what is under way; what it gives up on is
/// published again by the next bridge. Sized for a busy machine, as [`RECEIPT_TIMEOUT_MS`].
pub const SHUTDOWN_TIMEOUT_MS: u64 = 30_000;

/// How long a test waits for the bridge to exit after SIGTERM ([`BridgeProcess::terminate`]):
/// [`SHUTDOWN_TIMEOUT_MS`] at most for what is under way, then the receipts of its
/// UNSUBSCRIBEs and DISCONNECT. The exit is an event: the bound only ends a stuck test.
pub const STOP_SECS: u64 = 60;

/// The configuration for `names` on `broker`: every framework on this test's destinations,
/// the proxied `agents`, the HTTP endpoint on `http_port`.
pub fn config(broker: Broker, names: &Names, agents: Vec<AgentConfig>, http_port: u16) -> Config {
    let (login, passcode) = broker.credentials();
    let namespace = VOX_NAMESPACE.parse().expect("a uuid");
    Config {
        broker: BrokerConfig {
            login: Some(login.into()),
            passcode: Some(passcode.into()),
            heartbeat_ms: [2000, 2000],
            reconnect_max_ms: 1000,
            ..BrokerConfig::new(format!("stomp://127.0.0.1:{}", broker.port()))
        },
        wiseagents: WiseAgentsConfig {
            request_prefix: names.request_prefix.clone(),
            response_prefix: names.response_prefix.clone(),
            contexts: vec!["Books".into()],
            reply_agent: names.reply_agent(),
            ..Default::default()
        },
        protocols: Frameworks {
            civitas: Some(CivitasConfig::new(
                names.dest("civitas.in.{agent}"),
                names.dest("civitas.ingress"),
            )),
            vox: Some(VoxConfig::new(names.dest("vox.in.{agent}"), names.dest("vox.ingress"), namespace)),
            penguiflow: Some(PenguiFlowConfig {
                tenant: "acme".into(),
                ..PenguiFlowConfig::new(names.dest("penguiflow.in.{agent}"), names.dest("penguiflow.ingress"))
            }),
        },
        agents,
        delivery: DeliveryConfig {
            dead_letter: names.dest("dead"),
            in_flight: 64,
            shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS,
            receipt_timeout_ms: RECEIPT_TIMEOUT_MS,
            ..Default::default()
        },
        http: HttpConfig { listen: format!("127.0.0.1:{http_port}"), ..HttpConfig::default() },
        log: LogConfig { format: "json".into(), ..Default::default() },
        mirror: None,
        a2a: None,
        mcp: None,
        traces: Default::default(),
    }
}

/// [`config`] with `edit` applied.
pub fn config_with(
    broker: Broker,
    names: &Names,
    agents: Vec<AgentConfig>,
    http_port: u16,
    edit: impl FnOnce(&mut Config),
) -> Config {
    let mut config = config(broker, names, agents, http_port);
    edit(&mut config);
    config
}

/// The bridge for `names` on `broker`, proxying `agents`, with [`config`] after `edit` and
/// its HTTP endpoint on a free port; returns once it is ready.
pub fn start_bridge(
    broker: Broker,
    names: &Names,
    agents: Vec<AgentConfig>,
    edit: impl FnOnce(&mut Config),
) -> BridgeProcess {
    let port = free_port();
    BridgeProcess::start(&config_with(broker, names, agents, port, edit), port, &names.uid)
}

/// The text of a configuration file: a [`Config`], or a `toml::Table` made from one and
/// broken on purpose.
pub fn toml_text(config: &impl Serialize) -> String {
    toml::to_string(config).expect("a configuration serialises")
}

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The bridge running as its own process.
pub struct BridgeProcess {
    child: Option<Child>,
    pub http_port: u16,
    pub config: PathBuf,
    logs: mpsc::Receiver<String>,
    /// The last [`LOG_TAIL`] lines, printed if the test fails while the bridge runs.
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// How many of the bridge's last log lines a failing test shows.
const LOG_TAIL: usize = 200;

impl BridgeProcess {
    /// Writes the config and starts `stomp-agent-bridge run`; returns once it logged
    /// "bridge ready" (it is subscribed).
    pub fn start(config: &Config, http_port: u16, tag: &str) -> BridgeProcess {
        let mut bridge = Self::spawn(config, http_port, tag);
        bridge.wait_log("bridge ready", 30);
        bridge
    }

    /// Writes the config and starts `stomp-agent-bridge run` without waiting for it to be
    /// ready (for a bridge that cannot connect).
    pub fn spawn(config: &Config, http_port: u16, tag: &str) -> BridgeProcess {
        let dir = std::env::temp_dir().join(format!("sab-e2e-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bridge.toml");
        std::fs::write(&path, toml_text(config)).unwrap();
        Self::spawn_with(path, http_port)
    }

    pub fn start_with(config: PathBuf, http_port: u16) -> BridgeProcess {
        let mut bridge = Self::spawn_with(config, http_port);
        bridge.wait_log("bridge ready", 30);
        bridge
    }

    fn spawn_with(config: PathBuf, http_port: u16) -> BridgeProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_stomp-agent-bridge"))
            .args(["run", "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the bridge");
        let stderr = child.stderr.take().unwrap();
        let (tx, logs) = mpsc::channel();
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(LOG_TAIL)));
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var("SAB_E2E_LOGS").is_ok() {
                    eprintln!("bridge: {line}");
                }
                let mut kept = keep.lock().unwrap();
                if kept.len() == LOG_TAIL {
                    kept.pop_front();
                }
                kept.push_back(line.clone());
                drop(kept);
                let _ = tx.send(line); // the test may have stopped reading; keep the tail
            }
        });
        BridgeProcess { child: Some(child), http_port, config, logs, tail }
    }

    /// Waits for a log line containing `needle`, failing the test after `secs`; returns it.
    pub fn wait_log(&mut self, needle: &str, secs: u64) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.logs.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => continue,
                Err(_) => panic!("the bridge did not log {needle:?} within {secs} s"),
            }
        }
    }

    /// The log lines so far that contain `needle`.
    pub fn logged(&self, needle: &str) -> Vec<String> {
        self.logs.try_iter().filter(|l| l.contains(needle)).collect()
    }

    /// SIGTERM, then the exit status (failing the test after `secs`).
    pub fn terminate(mut self, secs: u64) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(child.wait()));
        let exited = rx.recv_timeout(Duration::from_secs(secs));
        exited.unwrap_or_else(|_| panic!("the bridge did not exit within {secs} s of SIGTERM")).unwrap()
    }

    /// kill -9: no chance to finish anything.
    pub fn kill9(mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Waits until `/metrics` has a line for which `want` holds, failing the test after
    /// `secs`; returns that line. (Counters are bumped once the broker confirmed a batch, a
    /// moment after a consumer may already have the message.)
    #[allow(dead_code)]
    pub fn wait_metric(&self, want: impl Fn(&str) -> bool, secs: u64) -> String {
        self.try_wait_metric(want, secs)
            .unwrap_or_else(|body| panic!("no metric as wanted within {secs} s:\n{body}"))
    }

    /// The first metric line `want` accepts within `secs`, or the last metrics seen.
    pub fn try_wait_metric(&self, want: impl Fn(&str) -> bool, secs: u64) -> Result<String, String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let (_, body) = self.http_get("/metrics");
            if let Some(line) = body.lines().find(|l| want(l)) {
                return Ok(line.to_owned());
            }
            if std::time::Instant::now() >= deadline {
                return Err(body);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes `config` (a [`Config`], or a broken `toml::Table`) over the configuration file
    /// and sends SIGHUP (a reload).
    #[allow(dead_code)]
    pub fn reload_with(&self, config: &impl Serialize) {
        std::fs::write(&self.config, toml_text(config)).unwrap();
        let pid = self.pid().to_string();
        assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success(), "kill -HUP");
    }

    /// Waits until `bridge_config_reloads_total{outcome}` is `n`.
    #[allow(dead_code)]
    pub fn wait_reloads(&self, outcome: &str, n: u64) {
        let line = format!("bridge_config_reloads_total{{outcome=\"{outcome}\"}} {n}");
        self.wait_metric(|l| l == line, 60);
    }

    /// The process id (for `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// GET `path` on the HTTP endpoint: the status code and body.
    pub fn http_get(&self, path: &str) -> (u16, String) {
        http_get(self.http_port, path)
    }
}

impl Drop for BridgeProcess {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let tail = self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>()).unwrap_or_default();
            eprintln!("--- the bridge's last {} log lines ---", tail.len());
            for line in tail {
                eprintln!("bridge: {line}");
            }
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn http_get(port: u16, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return (0, String::new()) };
    let _ = s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes());
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (code, body)
}

fn python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var("SAB_VENV").map(PathBuf::from).unwrap_or_else(|_| root.join(".venv"));
    let python = venv.join("bin/python");
    assert!(python.exists(), "no virtualenv: run scripts/python-env.sh");
    python
}

/// A Wise Agents agent (Python stomp.py) running `wa_agent.py ARGS`.
pub struct WiseAgent {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl WiseAgent {
    pub fn spawn(broker: Broker, names: &Names, args: &[&str]) -> WiseAgent {
        let (user, password) = broker.credentials();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/wa_agent.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(args)
            .env("STOMP_PORT", broker.port().to_string())
            .env("STOMP_USER", user)
            .env("STOMP_PASSWORD", password)
            .env("STOMP_VHOST", "/")
            .env("WA_REQUEST_PREFIX", &names.request_prefix)
            .env("WA_RESPONSE_PREFIX", &names.response_prefix)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start wa_agent.py");
        let lines = lines_of(child.stdout.take().unwrap());
        WiseAgent { child, lines }
    }

    /// A Civitas, VOX or PenguiFlow agent (tests/e2e/peer_agent.py) on this test's bridge
    /// destinations.
    pub fn spawn_peer(broker: Broker, names: &Names, args: &[&str], env: &[(&str, &str)]) -> WiseAgent {
        let (user, password) = broker.credentials();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/peer_agent.py");
        let mut command = Command::new(python());
        command
            .arg(script)
            .args(args)
            .env("STOMP_PORT", broker.port().to_string())
            .env("STOMP_USER", user)
            .env("STOMP_PASSWORD", password)
            .env("STOMP_VHOST", "/")
            .env("CIVITAS_INBOX", names.dest("civitas.in.{agent}"))
            .env("CIVITAS_INGRESS", names.dest("civitas.ingress"))
            .env("VOX_INBOX", names.dest("vox.in.{agent}"))
            .env("VOX_INGRESS", names.dest("vox.ingress"))
            .env("PF_INBOX", names.dest("penguiflow.in.{agent}"))
            .env("PF_INGRESS", names.dest("penguiflow.ingress"))
            .stdout(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("start peer_agent.py");
        let lines = lines_of(child.stdout.take().unwrap());
        WiseAgent { child, lines }
    }

    /// Runs to completion (for `send` and `send-many`).
    pub fn run(broker: Broker, names: &Names, args: &[&str]) {
        let mut agent = Self::spawn(broker, names, args);
        let status = agent.child.wait().unwrap();
        assert!(status.success(), "wa_agent.py {args:?} failed");
    }

    /// The next JSON line it printed (waiting up to `secs`).
    pub fn next(&self, secs: u64) -> Value {
        let line =
            self.lines.recv_timeout(Duration::from_secs(secs)).expect("wa_agent.py printed a line in time");
        serde_json::from_str(&line).unwrap()
    }

    /// Waits until it subscribed.
    pub fn subscribed(&self) {
        let first = self.next(30);
        assert!(first.get("subscribed").is_some(), "{first}");
    }

    pub fn wait_success(mut self) {
        assert!(self.child.wait().unwrap().success(), "wa_agent.py failed");
    }

    /// Waits for it to exit; whether it succeeded.
    pub fn succeeded(mut self) -> bool {
        self.child.wait().unwrap().success()
    }
}

impl Drop for WiseAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lines_of(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Writes `body` to a file for `wa_agent.py send`.
pub fn body_file(names: &Names, name: &str, body: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sab-e2e-bodies-{}", names.uid));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}
