//! A fake STOMP broker for tests that drive the real bridge in-process: the test plays the
//! broker's side of one connection at a time and misbehaves on cue.

use super::bridge::{proxied, toml_text};
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use stomp_agent_bridge::config::{BrokerConfig, CivitasConfig, Config, DeliveryConfig};
use stomp_agent_bridge::stomp::codec::Wire;
use stomp_agent_bridge::stomp::transport::Io;
use stomp_agent_bridge::stomp::{Command, Frame, Limits, StompCodec, memory};
use stomp_agent_bridge::telemetry::Metrics;
use tokio::net::TcpListener;
use tokio::time::timeout;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

/// The request queue of the agent `Weather`.
pub const REQUEST: &str = "/queue/request/Weather";

/// Where the fake broker takes the bridge's connections: a TCP port, or an in-process
/// listener (`stomp::memory`) for the tests that run under a paused clock.
pub trait Accept {
    async fn accept_io(&self) -> Box<dyn Io>;
}

impl Accept for TcpListener {
    async fn accept_io(&self) -> Box<dyn Io> {
        let (stream, _) =
            timeout(Duration::from_secs(10), self.accept()).await.expect("the bridge connects").unwrap();
        Box::new(stream)
    }
}

impl Accept for memory::Listener {
    async fn accept_io(&self) -> Box<dyn Io> {
        let pipe = timeout(Duration::from_secs(10), self.accept()).await.expect("the bridge connects");
        Box::new(pipe.expect("the listener is open"))
    }
}

/// One connection of the fake broker, seen from the broker's side.
pub struct Conn(pub Framed<Box<dyn Io>, StompCodec>);

impl Conn {
    pub async fn accept(listener: &impl Accept) -> Conn {
        Self::accept_with(
            listener,
            Frame::new(Command::Connected).with("version", "1.2").with("heart-beat", "0,0"),
        )
        .await
    }

    /// Accepts the bridge's next connection and answers its CONNECT with `answer`.
    pub async fn accept_with(listener: &impl Accept, answer: Frame) -> Conn {
        let mut conn = Self::accept_raw(listener).await;
        conn.send(answer).await;
        conn
    }

    /// Accepts the bridge's next connection and reads its CONNECT, answering nothing.
    pub async fn accept_raw(listener: &impl Accept) -> Conn {
        let stream = listener.accept_io().await;
        let mut conn = Conn(Framed::new(stream, StompCodec::new(Limits::default())));
        let connect = conn.next().await.expect("CONNECT");
        assert!(matches!(connect.command, Command::Connect | Command::Stomp), "{connect:?}");
        conn
    }

    /// Writes bytes as they are, STOMP or not. The bridge may close the connection before
    /// it has read them all (that is what a limit is for): a failed write is not an error.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        let stream = self.0.get_mut();
        let _ = stream.write_all(bytes).await;
        let _ = stream.flush().await;
    }

    /// Reads until the bridge closes the connection, failing on any ACK or COMMIT (nothing
    /// may be settled on a connection the broker broke). Returns the commands seen.
    pub async fn until_closed_settling_nothing(&mut self) -> Vec<Command> {
        let mut seen = Vec::new();
        while let Some(f) = self.next().await {
            assert!(
                !matches!(f.command, Command::Ack | Command::Commit),
                "settled on a broken connection: {f:?}"
            );
            seen.push(f.command);
        }
        seen
    }

    /// The next frame the bridge sends (heart-beats skipped); `None` once it closed.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            match timeout(Duration::from_secs(10), self.0.next()).await.expect("the bridge went silent") {
                Some(Ok(Wire::Frame(f))) => return Some(f),
                Some(Ok(Wire::Heartbeat)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    }

    pub async fn expect(&mut self, command: Command) -> Frame {
        let f = self.next().await.unwrap_or_else(|| panic!("closed while {command:?} was expected"));
        assert_eq!(f.command, command, "{f:?}");
        f
    }

    pub async fn send(&mut self, frame: Frame) {
        self.0.send(frame).await.expect("write to the bridge");
    }

    pub async fn receipt(&mut self, of: &Frame) {
        let id = of.header("receipt").expect("a receipt was asked for").to_owned();
        self.send(Frame::new(Command::Receipt).with("receipt-id", id)).await;
    }
}

/// The bridge's two connections in confirm mode (the default): it consumes on one and
/// publishes on the other.
pub struct Pair {
    pub consuming: Conn,
    pub publishing: Conn,
}

impl Pair {
    /// Accepts both connections, the bridge's first start or after it lost both, and tells
    /// them apart: the consuming one is the one that subscribes. Confirms its SUBSCRIBEs (the
    /// agent `Weather`'s three) and returns the request queue's subscription id too.
    pub async fn accept(listener: &impl Accept) -> (Pair, String) {
        let mut a = Conn::accept(listener).await;
        let mut b = Conn::accept(listener).await;
        let (first, a_subscribes) = tokio::select! {
            f = a.next() => (f, true),
            f = b.next() => (f, false),
        };
        let first = first.expect("a SUBSCRIBE");
        let (mut consuming, publishing) = if a_subscribes { (a, b) } else { (b, a) };
        let sub = consuming.subscriptions_from(Some(first)).await;
        (Pair { consuming, publishing }, sub)
    }
}

/// The bridge configured with the one agent `Weather`, as most of these tests have it.
impl Conn {
    /// Confirms the bridge's SUBSCRIBEs (there are four: ingress, request, response, and the response queue of the bridge's
    /// reply name `_bridge`) and
    /// returns the subscription id of the request queue.
    pub async fn subscriptions(&mut self) -> String {
        self.subscriptions_from(None).await
    }

    /// [`Conn::subscriptions`], the first SUBSCRIBE already read.
    pub async fn subscriptions_from(&mut self, first: Option<Frame>) -> String {
        self.subscribed(first).await.remove(REQUEST).expect("the request queue is subscribed")
    }

    /// Confirms the bridge's four SUBSCRIBEs (the first perhaps already read): the
    /// subscription id of each destination.
    pub async fn subscribed(
        &mut self,
        mut first: Option<Frame>,
    ) -> std::collections::HashMap<String, String> {
        let mut ids = std::collections::HashMap::new();
        for _ in 0..4 {
            let sub = match first.take() {
                Some(sub) => sub,
                None => self.expect(Command::Subscribe).await,
            };
            assert_eq!(sub.command, Command::Subscribe, "{sub:?}");
            if let (Some(destination), Some(id)) = (sub.header("destination"), sub.header("id")) {
                ids.insert(destination.to_owned(), id.to_owned());
            }
            if sub.header("receipt").is_some() {
                self.receipt(&sub).await;
            }
        }
        ids
    }

    /// Delivers the one request the tests use.
    pub async fn deliver(&mut self, subscription: &str, ack: &str) {
        let body = "!wiseagents.WiseAgentMessage\n_context_name: default\n_message: Weather in Paris?\n\
                    _message_type: QUERY\n_route_response_to: Asker\n_sender: Asker\n_tool_id: call_1\n";
        let msg = Frame::new(Command::Message)
            .with("subscription", subscription)
            .with("message-id", "ID:fake-1")
            .with("ack", ack)
            .with("destination", REQUEST)
            .with_body(body);
        self.send(msg).await;
    }
}

/// Stops the bridge: cancels it, plays the broker (every receipt answered) until its
/// DISCONNECT, and waits for it to end. Returns the frames it sent meanwhile.
pub async fn stop(
    mut conn: Conn,
    shutdown: CancellationToken,
    bridge: tokio::task::JoinHandle<()>,
) -> Vec<Frame> {
    shutdown.cancel();
    let sent = until_disconnect(&mut conn).await;
    timeout(Duration::from_secs(10), bridge).await.expect("the bridge stops").unwrap();
    sent
}

/// [`stop`] for a bridge with two connections: the consuming one disconnects first, then the
/// publishing one. Returns the frames sent on the consuming one.
#[allow(dead_code)]
pub async fn stop_pair(
    mut pair: Pair,
    shutdown: CancellationToken,
    bridge: tokio::task::JoinHandle<()>,
) -> Vec<Frame> {
    shutdown.cancel();
    let sent = until_disconnect(&mut pair.consuming).await;
    let published = until_disconnect(&mut pair.publishing).await;
    assert_eq!(published.len(), 1, "only the DISCONNECT once stopping: {published:?}");
    timeout(Duration::from_secs(10), bridge).await.expect("the bridge stops").unwrap();
    sent
}

/// Plays the broker (every receipt answered) until the bridge's DISCONNECT on `conn`.
async fn until_disconnect(conn: &mut Conn) -> Vec<Frame> {
    let mut sent = Vec::new();
    while let Some(f) = conn.next().await {
        if f.header("receipt").is_some() {
            conn.receipt(&f).await;
        }
        let disconnect = f.command == Command::Disconnect;
        sent.push(f);
        if disconnect {
            break;
        }
    }
    sent
}

/// A configuration for the fake broker on `port`: the Civitas agent `Weather` (inbox
/// `/queue/fake.civ.Weather`, ingress `/queue/fake.civ.ingress`), heart-beats
/// `heartbeat_ms`, no HTTP endpoint, and `delivery`.
pub fn weather_config(port: u16, heartbeat_ms: [u64; 2], delivery: DeliveryConfig) -> Config {
    let url = format!("stomp://127.0.0.1:{port}");
    let mut config =
        Config::new(BrokerConfig { heartbeat_ms, reconnect_max_ms: 200, ..BrokerConfig::new(url) });
    config.protocols.civitas = Some(CivitasConfig::new("/queue/fake.civ.{agent}", "/queue/fake.civ.ingress"));
    config.agents = vec![proxied("Weather", "civitas")];
    config.delivery = delivery;
    config.http.listen = String::new();
    config
}

/// `config` as the bridge loads it, from a file.
pub fn config(name: &str, config: &Config) -> Config {
    let dir = std::env::temp_dir().join(format!("sab-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bridge.toml");
    std::fs::write(&path, toml_text(config)).unwrap();
    Config::load(&path).unwrap()
}

/// The bridge running in-process on `config`: its metrics, its shutdown, its task.
#[allow(dead_code)]
pub fn run_bridge(config: Config) -> (Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    let metrics = Arc::new(Metrics::default());
    let shutdown = CancellationToken::new();
    let (m, s) = (metrics.clone(), shutdown.clone());
    let bridge = tokio::spawn(async move {
        stomp_agent_bridge::bridge::run(config, m, s).await.expect("the bridge runs");
    });
    (metrics, shutdown, bridge)
}

/// A listener on a free port, and the bridge running against it with the configuration
/// `config(port)` makes.
pub async fn start(
    name: &str,
    config: impl FnOnce(u16) -> Config,
) -> (TcpListener, Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = self::config(&format!("{name}-{port}"), &config(port));
    let (metrics, shutdown, bridge) = run_bridge(config);
    (listener, metrics, shutdown, bridge)
}

/// An in-process listener named after `name`, and the bridge running against it with the
/// configuration `config` makes (its port unused): for tests under a paused clock.
#[allow(dead_code)]
pub async fn start_in_memory(
    name: &str,
    config: impl FnOnce(u16) -> Config,
) -> (memory::Listener, Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let listener = memory::Listener::bind(&format!("{name}-{}-{n}", std::process::id()));
    let mut config = config(0);
    config.broker.url = listener.url();
    let config = self::config(&format!("{name}-mem-{n}"), &config);
    let (metrics, shutdown, bridge) = run_bridge(config);
    (listener, metrics, shutdown, bridge)
}

/// Waits until the metrics text contains `needle` (counters move once the broker confirmed).
pub async fn wait_for(metrics: &Metrics, needle: &str) -> String {
    for _ in 0..500 {
        let text = metrics.render();
        if text.contains(needle) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no {needle:?} in:\n{}", metrics.render());
}
