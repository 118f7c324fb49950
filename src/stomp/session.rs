//! The state of a STOMP session, decided without I/O: the CONNECT handshake, heart-beat
//! negotiation, subscriptions to restore after a reconnect, and receipts awaited.

use super::codec::FrameError;
use super::frame::{Command, Frame};
use super::secret::Secret;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;
use tokio::sync::oneshot;

/// What the broker said in an ERROR frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerError {
    /// The `message` header.
    pub message: String,
    /// The body, as text (lossy).
    pub body: String,
}

impl fmt::Display for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first_line = self.body.trim().lines().next().unwrap_or("").trim();
        match first_line {
            "" => f.write_str(&self.message),
            line if line == self.message.trim() => f.write_str(&self.message),
            line => write!(f, "{}: {line}", self.message),
        }
    }
}

impl SessionError {
    /// The broker's ERROR behind this error, if one is.
    pub fn broker_error(&self) -> Option<&BrokerError> {
        match self {
            SessionError::Broker(e) | SessionError::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

impl BrokerError {
    fn from_frame(frame: &Frame) -> Self {
        BrokerError {
            message: frame.header("message").unwrap_or("(no message header)").to_owned(),
            body: String::from_utf8_lossy(&frame.body).into_owned(),
        }
    }
}

/// Why a session operation failed. Frame errors and lost connections reset the connection;
/// the client then reconnects.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error("invalid broker URL {url:?}: {reason}")]
    Url { url: String, reason: &'static str },
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The broker ended the TLS handshake with an alert: rustls' words, and what a
    /// certificate alert may mean.
    #[error("the broker refused the TLS handshake: {0}")]
    TlsRefused(String),
    #[error("the broker refused the connection: {0}")]
    Refused(BrokerError),
    #[error("the broker sent an ERROR: {0}")]
    Broker(BrokerError),
    /// The broker's ERROR named this frame's receipt: this frame is what it refused.
    #[error("the broker refused the frame: {0}")]
    Rejected(BrokerError),
    #[error("no CONNECTED frame within {0:?}")]
    ConnectTimeout(Duration),
    #[error("the broker sent {0} where CONNECTED was expected")]
    UnexpectedFrame(Command),
    #[error("nothing heard from the broker for {0:?}: connection presumed dead")]
    HeartbeatTimeout(Duration),
    #[error("the connection was lost: {0}")]
    ConnectionLost(String),
    #[error("no RECEIPT within {0:?}")]
    ReceiptTimeout(Duration),
    #[error("not connected to the broker (reconnecting)")]
    NotConnected,
    #[error("the message came on an earlier connection; the broker will redeliver it")]
    StaleAck,
    #[error("the STOMP client has shut down")]
    Shutdown,
    #[error("the connection was reset: {0}")]
    Reset(String),
}

/// The STOMP version the broker chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1_1,
    V1_2,
}

/// Credentials and preferences sent in CONNECT.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub login: Option<String>,
    pub passcode: Option<Secret>,
    /// The `host` header: the virtual host (RabbitMQ needs `/` or its vhost name).
    pub vhost: String,
    /// How often we offer to send heart-beats, and how often we want them (0 = never).
    pub heartbeat: (Duration, Duration),
}

/// The `CONNECT` frame for these options.
pub fn connect_frame(opts: &ConnectOptions) -> Frame {
    let (send, recv) = opts.heartbeat;
    let mut frame = Frame::new(Command::Connect)
        .with("accept-version", "1.1,1.2")
        .with("host", opts.vhost.clone())
        .with("heart-beat", format!("{},{}", send.as_millis(), recv.as_millis()));
    if let Some(login) = &opts.login {
        frame.headers.push(("login".into(), login.clone()));
    }
    if let Some(passcode) = &opts.passcode {
        frame.headers.push(("passcode".into(), passcode.expose().to_owned()));
    }
    frame
}

/// What CONNECTED settled: the version and the heart-beat periods in both directions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub version: Version,
    /// We send a heart-beat at least this often.
    pub send_every: Option<Duration>,
    /// The broker promised to send something at least this often.
    pub expect_every: Option<Duration>,
    pub server: Option<String>,
}

impl Negotiated {
    /// Silence longer than this means the broker is gone: twice the promised period plus a
    /// second. ActiveMQ sends its first heart-beat only after twice the period (seen: 4.0 s
    /// for a promised 2 s), then one per period; RabbitMQ sends at half the period.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.expect_every.map(|d| d.saturating_mul(2).saturating_add(Duration::from_secs(1)))
    }
}

/// Reads the broker's answer to CONNECT.
pub fn negotiate(answer: &Frame, ours: (Duration, Duration)) -> Result<Negotiated, SessionError> {
    match answer.command {
        Command::Connected => {}
        Command::Error => return Err(SessionError::Refused(BrokerError::from_frame(answer))),
        other => return Err(SessionError::UnexpectedFrame(other)),
    }
    let version = match answer.header("version") {
        Some("1.2") => Version::V1_2,
        _ => Version::V1_1,
    };
    let (sx, sy) = parse_heartbeat(answer.header("heart-beat"));
    Ok(Negotiated {
        version,
        send_every: heartbeat_period(ours.0, sy),
        expect_every: heartbeat_period(ours.1, sx),
        server: answer.header("server").map(str::to_owned),
    })
}

/// The longest heart-beat period taken from a broker: a day. A larger one (up to 2^64 ms
/// is well-formed) would overflow the clock arithmetic of silence detection.
pub const MAX_HEARTBEAT: Duration = Duration::from_secs(86_400);

fn parse_heartbeat(value: Option<&str>) -> (Duration, Duration) {
    let mut parts = value.unwrap_or("0,0").split(',').map(|p| p.trim().parse::<u64>().unwrap_or(0));
    let mut next = || Duration::from_millis(parts.next().unwrap_or(0)).min(MAX_HEARTBEAT);
    (next(), next())
}

/// STOMP 1.2: a side heart-beats at the larger of the two periods, if neither is zero.
fn heartbeat_period(ours: Duration, theirs: Duration) -> Option<Duration> {
    (!ours.is_zero() && !theirs.is_zero()).then(|| ours.max(theirs))
}

/// How a subscription acknowledges messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AckMode {
    Auto,
    Client,
    #[default]
    ClientIndividual,
}

impl AckMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            AckMode::Auto => "auto",
            AckMode::Client => "client",
            AckMode::ClientIndividual => "client-individual",
        }
    }
}

/// A subscription to make, and to make again after every reconnect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub destination: String,
    pub ack: AckMode,
    /// Extra SUBSCRIBE headers: `selector`, `activemq.prefetchSize`, `prefetch-count`, ...
    pub headers: Vec<(String, String)>,
}

impl Subscription {
    pub fn new(destination: impl Into<String>, ack: AckMode) -> Self {
        Subscription { destination: destination.into(), ack, headers: Vec::new() }
    }

    /// Adds a SUBSCRIBE header (builder style).
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn frame(&self, id: &str) -> Frame {
        let mut frame = Frame::new(Command::Subscribe)
            .with("id", id)
            .with("destination", self.destination.clone())
            .with("ack", self.ack.as_str());
        frame.headers.extend(self.headers.iter().cloned());
        frame
    }
}

/// What is needed to ACK or NACK one received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckRef {
    /// The connection the message came on; acks from an earlier one are refused.
    pub epoch: u64,
    pub subscription: String,
    pub message_id: String,
    /// STOMP 1.2's `ack` header.
    pub ack_id: Option<String>,
}

/// The ACK or NACK frame for a message, as the negotiated version wants it, inside
/// `transaction` when one is named.
pub fn ack_frame(version: Version, msg: &AckRef, nack: bool, transaction: Option<&str>) -> Frame {
    let mut frame = Frame::new(if nack { Command::Nack } else { Command::Ack });
    if let Some(tx) = transaction {
        frame = frame.with("transaction", tx);
    }
    match (version, &msg.ack_id) {
        (Version::V1_2, Some(id)) => frame.with("id", id.clone()),
        _ => frame.with("message-id", msg.message_id.clone()).with("subscription", msg.subscription.clone()),
    }
}

/// A message received on a subscription.
#[derive(Debug, Clone)]
pub struct Message {
    pub ack: AckRef,
    pub destination: String,
    /// The whole MESSAGE frame: every header the broker sent, and the body.
    pub frame: Frame,
}

impl Message {
    fn from_frame(frame: Frame, epoch: u64) -> Self {
        let get = |name: &str| frame.header(name).unwrap_or_default().to_owned();
        Message {
            ack: AckRef {
                epoch,
                subscription: get("subscription"),
                message_id: get("message-id"),
                ack_id: frame.header("ack").map(str::to_owned),
            },
            destination: get("destination"),
            frame,
        }
    }

    pub fn body(&self) -> &[u8] {
        &self.frame.body
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.frame.header(name)
    }
}

/// A waiter for a RECEIPT.
pub type ReceiptWaiter = oneshot::Sender<Result<(), SessionError>>;

/// What the event loop should do with a frame the broker sent.
#[derive(Debug)]
pub enum Inbound {
    Deliver(Message),
    /// The broker sent ERROR: report it; the broker closes the connection after it.
    Error(BrokerError),
    Nothing,
}

/// Session state that outlives a connection (subscriptions) and state of the current one
/// (epoch, negotiated parameters, receipts awaited).
#[derive(Debug, Default)]
pub struct Session {
    subscriptions: BTreeMap<String, Subscription>,
    receipts: HashMap<String, ReceiptWaiter>,
    next_id: u64,
    epoch: u64,
    version: Option<Version>,
}

impl Session {
    /// A new connection was established: a new epoch begins.
    pub fn connected(&mut self, negotiated: &Negotiated) -> u64 {
        self.epoch += 1;
        self.version = Some(negotiated.version);
        self.epoch
    }

    /// The connection ended: every receipt awaited fails, with the broker's ERROR if that
    /// is what ended it.
    pub fn disconnected(&mut self, reason: &SessionError) {
        self.version = None;
        for (_, waiter) in self.receipts.drain() {
            let _ = waiter.send(Err(match reason {
                SessionError::Broker(e) => SessionError::Broker(e.clone()),
                other => SessionError::ConnectionLost(other.to_string()),
            }));
        }
    }

    fn fresh_receipt_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}-{}", self.next_id)
    }

    /// Records a subscription under `id` and returns its SUBSCRIBE frame.
    pub fn subscribe(&mut self, id: String, sub: Subscription) -> Frame {
        let frame = sub.frame(&id);
        self.subscriptions.insert(id, sub);
        frame
    }

    /// Forgets a subscription; the UNSUBSCRIBE frame if it existed.
    pub fn unsubscribe(&mut self, id: &str) -> Option<Frame> {
        self.subscriptions.remove(id).map(|_| Frame::new(Command::Unsubscribe).with("id", id))
    }

    /// SUBSCRIBE frames that restore every subscription on a new connection.
    pub fn resubscribe_frames(&self) -> Vec<Frame> {
        self.subscriptions.iter().map(|(id, sub)| sub.frame(id)).collect()
    }

    /// Adds a `receipt` header to `frame` and remembers who waits for it.
    pub fn expect_receipt(&mut self, frame: &mut Frame, waiter: ReceiptWaiter) {
        if self.receipts.len() >= 1024 && self.receipts.len().is_power_of_two() {
            self.receipts.retain(|_, w| !w.is_closed());
        }
        let id = self.fresh_receipt_id("rcpt");
        frame.headers.push(("receipt".into(), id.clone()));
        self.receipts.insert(id, waiter);
    }

    /// The epoch of the current connection (acks of other epochs are stale).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The ACK/NACK frame for `msg`, unless it came on an earlier connection.
    pub fn ack(&self, msg: &AckRef, nack: bool, transaction: Option<&str>) -> Result<Frame, SessionError> {
        match self.version {
            Some(version) if msg.epoch == self.epoch => Ok(ack_frame(version, msg, nack, transaction)),
            Some(_) => Err(SessionError::StaleAck),
            None => Err(SessionError::NotConnected),
        }
    }

    /// Decides what a frame from the broker means.
    pub fn on_frame(&mut self, frame: Frame) -> Inbound {
        match frame.command {
            Command::Message => Inbound::Deliver(Message::from_frame(frame, self.epoch)),
            Command::Receipt => {
                let waiter = frame.header("receipt-id").and_then(|id| self.receipts.remove(id));
                if let Some(w) = waiter {
                    let _ = w.send(Ok(()));
                }
                Inbound::Nothing
            }
            Command::Error => {
                let error = BrokerError::from_frame(&frame);
                let waiter = frame.header("receipt-id").and_then(|id| self.receipts.remove(id));
                if let Some(w) = waiter {
                    let _ = w.send(Err(SessionError::Rejected(error.clone())));
                }
                Inbound::Error(error)
            }
            _ => Inbound::Nothing,
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
