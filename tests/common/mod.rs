//! Helpers for tests: the real brokers that `scripts/brokers.sh start` runs, and generators.
#![allow(dead_code)]

/// A test per broker: `on!(ActiveMq: a, b(arg))` makes `async fn a()` calling `super::a(Broker::ActiveMq)`
/// (and `super::b(Broker::ActiveMq, arg)`), each a multi-threaded tokio test. Used inside a
/// `mod activemq { ... }` per broker, from files that declare `#[macro_use] mod common;`.
#[allow(unused_macros)]
macro_rules! on {
    ($broker:ident: $($name:ident $(($arg:expr))?),* $(,)?) => {
        $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() { super::$name(super::Broker::$broker $(, $arg)?).await })*
    };
}

pub mod bridge;
pub mod fake;
pub mod generate;
pub mod registry;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use stomp_agent_bridge::stomp::{Backoff, Client, ClientConfig, Event, Events, Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The brokers of `scripts/brokers.sh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broker {
    ActiveMq,
    RabbitMq,
    /// ActiveMQ Artemis, from config/artemis/etc-override/broker.xml (what Wise Agents uses).
    Artemis,
}

impl Broker {
    /// The STOMP port; `SAB_ACTIVEMQ_PORT` / `SAB_RABBITMQ_PORT` / `SAB_ARTEMIS_PORT` point the
    /// tests at another instance (a private broker while the shared ones are busy).
    pub fn port(self) -> u16 {
        let (var, default) = match self {
            Broker::ActiveMq => ("SAB_ACTIVEMQ_PORT", 61613),
            Broker::RabbitMq => ("SAB_RABBITMQ_PORT", 61623),
            Broker::Artemis => ("SAB_ARTEMIS_PORT", 61633),
        };
        std::env::var(var).ok().and_then(|p| p.parse().ok()).unwrap_or(default)
    }

    pub fn credentials(self) -> (&'static str, &'static str) {
        match self {
            Broker::ActiveMq | Broker::Artemis => ("admin", "admin"),
            Broker::RabbitMq => ("guest", "guest"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Broker::ActiveMq => "activemq",
            Broker::RabbitMq => "rabbitmq",
            Broker::Artemis => "artemis",
        }
    }

    /// Client settings for this broker on `port` (the broker's own, or a proxy's). Receipts
    /// are waited for [`RECEIPT_TIMEOUT`], not the client's 5 s default.
    pub fn config_on(self, port: u16) -> ClientConfig {
        let (login, passcode) = self.credentials();
        let url = format!("stomp://127.0.0.1:{port}").parse().expect("valid url");
        let mut config = ClientConfig::new(url, Some(login.into()), Some(passcode.into()));
        config.backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(1) };
        config.receipt_timeout = RECEIPT_TIMEOUT;
        config
    }

    pub fn config(self) -> ClientConfig {
        self.config_on(self.port())
    }

    pub async fn connect(self) -> (Client, Events) {
        Client::connect(self.config()).await.unwrap_or_else(|e| {
            panic!(
                "cannot connect to {} on {}: {e} (is `scripts/brokers.sh start` done?)",
                self.name(),
                self.port()
            )
        })
    }
}

/// How long the tests' own clients wait for a broker's RECEIPT (`send_confirmed`,
/// `subscribe`, `disconnect`). A receipt is an event, so the bound only ends a test whose broker
/// never answers; it is sized for a busy machine: the last receipt of 5,000 persistent SENDs
/// came later than the client's default 5 s on a 2-core CI machine running tests side by side
/// (tests/failover_brokers.rs). Speed is measured in the benchmarks, not here.
pub const RECEIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// A queue name no other test uses.
pub fn unique_queue(what: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("/queue/sab.test.{what}.{}.{nanos}.{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// The next message, failing the test after `secs` seconds of waiting.
pub async fn next_message(events: &mut Events, secs: u64) -> Message {
    tokio::time::timeout(Duration::from_secs(secs), events.next_message())
        .await
        .expect("a message within the time limit")
        .expect("the client is still running")
}

/// The next event that `want` accepts, failing the test after `secs` seconds.
pub async fn wait_for(events: &mut Events, secs: u64, want: impl Fn(&Event) -> bool) -> Event {
    let wait = async {
        loop {
            let event = events.recv().await.expect("the client is still running");
            if want(&event) {
                return event;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(secs), wait).await.expect("the event within the time limit")
}

/// A TCP proxy in front of a broker that can go silent: frozen connections stay open but
/// forward nothing, as a broker behind a dead network path would.
pub struct Proxy {
    pub port: u16,
    generation: Arc<AtomicU64>,
    frozen_upto: Arc<AtomicU64>,
    cut: Arc<tokio::sync::watch::Sender<u64>>,
    /// While set, a new connection is closed at once, as by a broker that is down.
    refusing: Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    pub async fn start(target: u16) -> Proxy {
        Self::start_with(target, false).await
    }

    /// A proxy that never passes on an ACK frame from the client: the client believes it
    /// acknowledged, the broker redelivers once the connection ends.
    pub async fn dropping_acks(target: u16) -> Proxy {
        Self::start_with(target, true).await
    }

    async fn start_with(target: u16, drop_acks: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let generation = Arc::new(AtomicU64::new(0));
        let frozen_upto = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(tokio::sync::watch::channel(0).0);
        let refusing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (g, f, c, r) = (generation.clone(), frozen_upto.clone(), cut.clone(), refusing.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if r.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let gen_of_conn = g.fetch_add(1, Ordering::SeqCst) + 1;
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else { continue };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let path =
                    Path { generation: gen_of_conn, frozen_upto: f.clone(), cut: c.subscribe(), drop_acks };
                tokio::spawn(pump(cr, sw, path.clone()));
                tokio::spawn(pump(sr, cw, Path { drop_acks: false, ..path }));
            }
        });
        Proxy { port, generation, frozen_upto, cut, refusing }
    }

    /// The broker goes away for the client: open connections are closed and new ones refused,
    /// until [`Proxy::come_back`]. A broker restart, for this client only.
    pub fn go_down(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        self.freeze();
        self.cut();
    }

    /// New connections work again.
    pub fn come_back(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }

    /// Closes the frozen connections, as a network finally does with a dead path.
    pub fn cut(&self) {
        self.cut.send_replace(self.frozen_upto.load(Ordering::SeqCst));
    }

    /// Every connection open now stops forwarding; new ones work.
    pub fn freeze(&self) {
        self.frozen_upto.store(self.generation.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct Path {
    generation: u64,
    frozen_upto: Arc<AtomicU64>,
    cut: tokio::sync::watch::Receiver<u64>,
    /// Drop the ACK frames passing this way.
    drop_acks: bool,
}

/// What of `pending` (client bytes) goes on: every whole frame but ACKs, and heart-beat
/// newlines between frames; an incomplete frame stays in `pending`.
fn without_acks(pending: &mut Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = pending.iter().position(|b| *b == 0) {
        let frame: Vec<u8> = pending.drain(..=end).collect();
        let start = frame.iter().position(|b| *b != b'\n' && *b != b'\r').unwrap_or(frame.len());
        out.extend_from_slice(&frame[..start]);
        if !frame[start..].starts_with(b"ACK\n") && !frame[start..].starts_with(b"ACK\r\n") {
            out.extend_from_slice(&frame[start..]);
        }
    }
    if pending.iter().all(|b| *b == b'\n' || *b == b'\r') {
        out.append(pending);
    }
    out
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut path: Path,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending = Vec::new();
    loop {
        let read = from.read(&mut buf).await;
        // A frozen path neither forwards bytes nor passes on a close, until it is cut.
        if path.generation <= path.frozen_upto.load(Ordering::SeqCst) {
            let generation = path.generation;
            let _ = path.cut.wait_for(|upto| *upto >= generation).await;
            return;
        }
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let written = if path.drop_acks {
            pending.extend_from_slice(&buf[..n]);
            to.write_all(&without_acks(&mut pending)).await
        } else {
            to.write_all(&buf[..n]).await
        };
        if written.is_err() {
            return;
        }
    }
}

/// Runs `scripts/brokers.sh ARGS` and fails the test if it fails.
pub fn brokers_script(args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/brokers.sh");
    let status = std::process::Command::new("bash").arg(script).args(args).status().expect("run brokers.sh");
    assert!(status.success(), "scripts/brokers.sh {args:?} failed");
}

/// Where `scripts/brokers.sh` put the test CA.
pub fn test_ca() -> std::path::PathBuf {
    let state =
        std::env::var("SAB_BROKER_STATE").unwrap_or_else(|_| "/var/lib/stomp-agent-bridge/brokers".into());
    std::path::Path::new(&state).join("tls/ca.pem")
}

/// A Wise Agents query from `sender` in `context`, as a Wise Agents agent writes it (no tool
/// id, no route_response_to).
pub fn wise_query(
    text: &str,
    sender: &str,
    context: &str,
) -> stomp_agent_bridge::envelope::wiseagents::WiseMessage {
    stomp_agent_bridge::envelope::wiseagents::WiseMessage {
        message: text.into(),
        message_type: Some(stomp_agent_bridge::envelope::Intent::Query),
        sender: Some(sender.into()),
        tool_id: None,
        route_response_to: None,
        context_name: Some(context.into()),
        extra: vec![],
    }
}

/// A Wise Agents body from a JSON object of its fields (`_message`, `_message_type`,
/// `_sender`, `_tool_id`, `_route_response_to`, `_context_name`), written by the bridge's
/// encoder as PyYAML writes it.
pub fn wa_body(fields: serde_json::Value) -> Vec<u8> {
    use stomp_agent_bridge::envelope::Intent;
    use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
    let s = |k: &str| fields[k].as_str().map(str::to_owned);
    WiseMessage {
        message: s("_message").unwrap_or_default(),
        message_type: s("_message_type").and_then(|t| Intent::from_name(&t)),
        sender: s("_sender"),
        tool_id: s("_tool_id"),
        route_response_to: s("_route_response_to"),
        context_name: s("_context_name"),
        extra: vec![],
    }
    .to_yaml()
    .into_bytes()
}
