//! A fake STOMP broker for tests that drive the real bridge in-process: the test plays the
//! broker's side of one connection at a time and misbehaves on cue.

use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::stomp::codec::Inbound;
use stomp_agent_bridge::stomp::{Command, Frame, Limits, StompCodec};
use stomp_agent_bridge::telemetry::Metrics;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

/// One connection of the fake broker, seen from the broker's side.
pub struct Conn(pub Framed<TcpStream, StompCodec>);

impl Conn {
    pub async fn accept(listener: &TcpListener) -> Conn {
        let (stream, _) =
            timeout(Duration::from_secs(10), listener.accept()).await.expect("the bridge connects").unwrap();
        let mut conn = Conn(Framed::new(stream, StompCodec::new(Limits::default())));
        let connect = conn.next().await.expect("CONNECT");
        assert!(matches!(connect.command, Command::Connect | Command::Stomp), "{connect:?}");
        conn.send(Frame::new(Command::Connected).with("version", "1.2").with("heart-beat", "0,0")).await;
        conn
    }

    /// The next frame the bridge sends (heart-beats skipped); `None` once it closed.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            match timeout(Duration::from_secs(10), self.0.next()).await.expect("the bridge went silent") {
                Some(Ok(Inbound::Frame(f))) => return Some(f),
                Some(Ok(Inbound::Heartbeat)) => continue,
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

/// Loads a configuration written for the fake broker's port.
pub fn config(name: &str, toml: &str) -> Config {
    let dir = std::env::temp_dir().join(format!("sab-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bridge.toml");
    std::fs::write(&path, toml).unwrap();
    Config::load(&path).unwrap()
}

/// A listener on a free port, and the bridge running against it with the configuration
/// `toml(port)` makes.
pub async fn start(
    name: &str,
    toml: impl FnOnce(u16) -> String,
) -> (TcpListener, Arc<Metrics>, CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = config(&format!("{name}-{port}"), &toml(port));
    let metrics = Arc::new(Metrics::default());
    let shutdown = CancellationToken::new();
    let (m, s) = (metrics.clone(), shutdown.clone());
    let bridge = tokio::spawn(async move {
        stomp_agent_bridge::bridge::run(config, m, s).await.expect("the bridge runs");
    });
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
