//! The STOMP client: a cloneable handle over a channel to one event loop that owns the
//! connection, sends heart-beats, watches the broker's, matches receipts, and reconnects
//! with backoff, restoring every subscription.

use super::frame::Frame;
use super::session::{AckRef, BrokerError, Message, Session, SessionError, Subscription};
use super::transport::{self, BrokerUrl, TlsOptions};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;
use tokio_rustls::TlsConnector;

mod config;
mod event_loop;

pub use config::{Backoff, ClientConfig};
use event_loop::{Connection, EventLoop};

/// Frames read from brokers by every client of the process so far: how much each wake-up of
/// the runtime's thread found to do (`bridge::wakeups`).
pub(crate) static FRAMES_READ: AtomicU64 = AtomicU64::new(0);

/// What the client tells its consumer.
#[derive(Debug)]
pub enum Event {
    /// A message on one of the subscriptions.
    Message(Message),
    /// The connection to `url` was lost; the client is reconnecting. Unacknowledged messages
    /// will be redelivered by the broker.
    ConnectionLost { error: SessionError, url: BrokerUrl },
    /// Reconnect attempt `attempt` (from 0), to `url`, failed (bad credentials surface here
    /// too); another follows.
    ReconnectFailed { error: SessionError, url: BrokerUrl, attempt: u32 },
    /// Connected again, every subscription restored; acks for older messages now fail. `url`
    /// is the address that accepted (another of [`ClientConfig::urls`] after a failover).
    Reconnected { epoch: u64, url: BrokerUrl },
    /// The broker sent an ERROR frame (it closes the connection after it).
    BrokerError(BrokerError),
}

/// The stream of [`Event`]s. It ends when the client has shut down.
#[derive(Debug)]
pub struct Events(mpsc::Receiver<Event>);

impl Events {
    pub async fn recv(&mut self) -> Option<Event> {
        self.0.recv().await
    }

    /// The next message, skipping connection events.
    pub async fn next_message(&mut self) -> Option<Message> {
        loop {
            if let Event::Message(m) = self.0.recv().await? {
                return Some(m);
            }
        }
    }
}

type Reply<T> = oneshot::Sender<Result<T, SessionError>>;

/// The answer to an enqueued batch: its receipts once written.
pub type Submitted = oneshot::Receiver<Result<Vec<AwaitedReceipt>, SessionError>>;

/// One frame of a [`Client::submit`] batch.
#[derive(Debug)]
pub enum Item {
    /// A frame (SEND, BEGIN, COMMIT, ABORT...), with a receipt when `receipt` is set.
    Frame { frame: Frame, receipt: bool },
    /// The ACK (or NACK) of a received message, inside `transaction` when one is named.
    Ack { msg: AckRef, nack: bool, transaction: Option<String> },
}

/// A receipt awaited for one frame of a submitted batch.
#[derive(Debug)]
pub struct AwaitedReceipt {
    /// The `receipt` header the frame carried.
    pub id: String,
    /// Resolves when the broker confirms the frame or the connection ends.
    pub answer: oneshot::Receiver<Result<(), SessionError>>,
}

impl AwaitedReceipt {
    /// Waits for the broker's answer; a connection that ended first is an error.
    pub async fn confirmed(self) -> Result<(), SessionError> {
        self.answer.await.map_err(|_| SessionError::Shutdown)?
    }
}

#[derive(Debug)]
enum Request {
    Send { frame: Frame, confirm: bool, reply: Reply<()> },
    Submit { items: Vec<Item>, reply: Reply<Vec<AwaitedReceipt>> },
    Reset { reason: String },
    Subscribe { id: String, sub: Subscription, reply: Reply<()> },
    Unsubscribe { id: String, reply: Reply<()> },
    Ack { msg: AckRef, nack: bool, reply: Reply<()> },
    Disconnect { reply: Reply<()> },
}

/// The TLS connector of each address (`None` for a `stomp://` one), in the order of
/// [`ClientConfig::urls`]: one built for each distinct set of TLS settings, shared by the
/// addresses that have it, and kept for every reconnect.
fn tls_connectors(config: &ClientConfig) -> Result<Vec<Option<TlsConnector>>, SessionError> {
    let mut built: Vec<(&TlsOptions, TlsConnector)> = Vec::new();
    let mut connectors = Vec::with_capacity(config.urls.len());
    for url in &config.urls {
        if !url.tls {
            connectors.push(None);
            continue;
        }
        let opts = config.tls_for(url);
        let connector = match built.iter().find(|(o, _)| *o == opts) {
            Some((_, connector)) => connector.clone(),
            None => {
                let connector = transport::tls_connector(opts)?;
                built.push((opts, connector.clone()));
                connector
            }
        };
        connectors.push(Some(connector));
    }
    Ok(connectors)
}

/// A handle to the client. Clones share one connection; when the last is dropped the client
/// disconnects cleanly.
#[derive(Debug, Clone)]
pub struct Client {
    requests: mpsc::Sender<Request>,
    next_sub: Arc<AtomicU64>,
    receipt_timeout: Duration,
    server: Option<Arc<str>>,
    /// Whether the current connection's broker promised heart-beats (see [`Client::watched`]).
    watched: Arc<AtomicBool>,
    /// The address of the current (or last) connection.
    address: Arc<Mutex<BrokerUrl>>,
}

impl Client {
    /// Connects to the first of the addresses that accepts (trying each once; the error of
    /// the last is returned when none does: bad address, refused login, TLS failure) and
    /// starts the event loop, which from then on reconnects by itself.
    pub async fn connect(config: ClientConfig) -> Result<(Client, Events), SessionError> {
        let tls = tls_connectors(&config)?;
        let (current, conn) = Connection::open_first(&config, &tls).await?;
        let address = Arc::new(Mutex::new(config.urls[current].clone()));
        let (req_tx, req_rx) = mpsc::channel(256);
        let (ev_tx, ev_rx) = mpsc::channel(config.event_capacity.max(1));
        let watched = Arc::new(AtomicBool::new(conn.negotiated.read_timeout().is_some()));
        let client = Client {
            requests: req_tx,
            next_sub: Arc::new(AtomicU64::new(0)),
            receipt_timeout: config.receipt_timeout,
            server: conn.negotiated.server.as_deref().map(Arc::from),
            watched: watched.clone(),
            address: address.clone(),
        };
        let event_loop = EventLoop {
            config,
            tls,
            current,
            address,
            session: Session::default(),
            requests: req_rx,
            events: ev_tx,
            pending: VecDeque::new(),
            watched,
        };
        tokio::spawn(event_loop.run(conn));
        Ok((client, Events(ev_rx)))
    }

    async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> Result<T, SessionError> {
        let (tx, rx) = oneshot::channel();
        self.requests.send(make(tx)).await.map_err(|_| SessionError::Shutdown)?;
        rx.await.map_err(|_| SessionError::Shutdown)?
    }

    async fn call_confirmed(&self, make: impl FnOnce(Reply<()>) -> Request) -> Result<(), SessionError> {
        let (tx, rx) = oneshot::channel();
        self.requests.send(make(tx)).await.map_err(|_| SessionError::Shutdown)?;
        match timeout(self.receipt_timeout, rx).await {
            Ok(answer) => answer.map_err(|_| SessionError::Shutdown)?,
            Err(_) => Err(SessionError::ReceiptTimeout(self.receipt_timeout)),
        }
    }

    /// Sends a frame (SEND, BEGIN, ...) once it is handed to the connection; no receipt.
    pub async fn send(&self, frame: Frame) -> Result<(), SessionError> {
        self.call(|reply| Request::Send { frame, confirm: false, reply }).await
    }

    /// Sends a frame and waits until the broker confirms it with a RECEIPT.
    pub async fn send_confirmed(&self, frame: Frame) -> Result<(), SessionError> {
        self.call_confirmed(|reply| Request::Send { frame, confirm: true, reply }).await
    }

    /// Subscribes, waits for the broker's receipt, and returns the subscription id. The
    /// subscription is made again after every reconnect.
    pub async fn subscribe(&self, sub: Subscription) -> Result<String, SessionError> {
        let (id, confirmed) = self.try_subscribe(sub).await;
        confirmed.map(|_| id)
    }

    /// [`Client::subscribe`] that gives the id whatever the outcome. Unless the answer is
    /// `NotConnected` or `Shutdown` (nothing was written) or `Rejected` (the broker's ERROR
    /// named it), the session keeps the subscription and restores it after a reconnect: it
    /// stands until [`Client::unsubscribe`], receipt or not.
    pub async fn try_subscribe(&self, sub: Subscription) -> (String, Result<(), SessionError>) {
        let id = self.subscription_id();
        let confirmed = self.subscribe_as(id.clone(), sub).await;
        (id, confirmed)
    }

    /// A new subscription id, for [`Client::subscribe_as`]: the caller knows the id before the
    /// SUBSCRIBE is written.
    pub fn subscription_id(&self) -> String {
        format!("sub-{}", self.next_sub.fetch_add(1, Ordering::Relaxed))
    }

    /// [`Client::try_subscribe`] with an id from [`Client::subscription_id`].
    pub async fn subscribe_as(&self, id: String, sub: Subscription) -> Result<(), SessionError> {
        self.call_confirmed(|reply| Request::Subscribe { id, sub, reply }).await
    }

    pub async fn unsubscribe(&self, id: &str) -> Result<(), SessionError> {
        let id = id.to_owned();
        self.call_confirmed(|reply| Request::Unsubscribe { id, reply }).await
    }

    /// Acknowledges a message. Fails with `StaleAck` if it came on an earlier connection.
    pub async fn ack(&self, msg: &AckRef) -> Result<(), SessionError> {
        let msg = msg.clone();
        self.call(|reply| Request::Ack { msg, nack: false, reply }).await
    }

    /// Rejects a message; what happens next is the broker's policy (ActiveMQ: dead-letter
    /// queue; RabbitMQ: requeue).
    pub async fn nack(&self, msg: &AckRef) -> Result<(), SessionError> {
        let msg = msg.clone();
        self.call(|reply| Request::Ack { msg, nack: true, reply }).await
    }

    /// Writes every item in order with one flush, as one request: nothing of another caller
    /// comes between them. Acks are checked first: if one came on an earlier connection,
    /// nothing is written and the answer is `StaleAck`. Returns the receipts to await, one
    /// per frame that asked for one, in order.
    pub async fn submit(&self, items: Vec<Item>) -> Result<Vec<AwaitedReceipt>, SessionError> {
        self.enqueue(items).await?.await.map_err(|_| SessionError::Shutdown)?
    }

    /// [`Client::submit`] in two steps: this call only queues the batch (so batches queued
    /// by one task are written in the order queued); the answer comes on the returned
    /// channel once the batch is written.
    pub async fn enqueue(&self, items: Vec<Item>) -> Result<Submitted, SessionError> {
        let (reply, rx) = oneshot::channel();
        self.requests.send(Request::Submit { items, reply }).await.map_err(|_| SessionError::Shutdown)?;
        Ok(rx)
    }

    /// Drops the connection and reconnects: what was not acknowledged on it, the broker
    /// redelivers, and an open transaction is rolled back. For a peer whose state is unknown
    /// (a receipt that never came).
    pub async fn reset(&self, reason: impl Into<String>) {
        let _ = self.requests.send(Request::Reset { reason: reason.into() }).await;
    }

    /// Whether the connection is watched: its broker promised heart-beats, so a broker that
    /// dies or a network path that breaks is noticed by its silence and the connection is
    /// replaced. On a watched connection a receipt that is late means a live broker that has
    /// not confirmed yet (one that holds a producer back, say), not a dead one.
    pub fn watched(&self) -> bool {
        self.watched.load(Ordering::Relaxed)
    }

    /// The address of the current connection (of the last one while reconnecting).
    pub fn address(&self) -> BrokerUrl {
        self.address.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The `server` header of the first CONNECTED (`ActiveMQ/5.17.2`, `RabbitMQ/3.10.8`).
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// Sends DISCONNECT, waits for its receipt, closes the connection and stops the client.
    pub async fn disconnect(&self) -> Result<(), SessionError> {
        self.call(|reply| Request::Disconnect { reply }).await
    }
}
