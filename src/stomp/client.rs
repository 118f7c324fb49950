//! The STOMP client: a cloneable handle over a channel to one event loop that owns the
//! connection, sends heart-beats, watches the broker's, matches receipts, and reconnects
//! with backoff, restoring every subscription.

use super::codec::{FrameError, Heartbeat, StompCodec, Wire};
use super::frame::{Command, Frame};
use super::session::{
    self, AckRef, BrokerError, Inbound, Message, Negotiated, Session, SessionError, Subscription,
};
use super::transport::{self, Io};
use futures_util::{SinkExt, StreamExt};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep, sleep_until, timeout};
use tokio_rustls::TlsConnector;
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

mod config;
pub use config::{Backoff, ClientConfig};

/// What the client tells its consumer.
#[derive(Debug)]
pub enum Event {
    /// A message on one of the subscriptions.
    Message(Message),
    /// The connection was lost; the client is reconnecting. Unacknowledged messages will be
    /// redelivered by the broker.
    ConnectionLost(SessionError),
    /// A reconnect attempt failed (bad credentials surface here too); another follows.
    ReconnectFailed(SessionError),
    /// Connected again, every subscription restored; acks for older messages now fail.
    Reconnected { epoch: u64 },
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
}

impl Client {
    /// Connects once (an error here is final: bad address, refused login, TLS failure) and
    /// starts the event loop, which from then on reconnects by itself.
    pub async fn connect(config: ClientConfig) -> Result<(Client, Events), SessionError> {
        let tls = config.url.tls.then(|| transport::tls_connector(&config.tls)).transpose()?;
        let conn = Connection::open(&config, tls.as_ref()).await?;
        let (req_tx, req_rx) = mpsc::channel(256);
        let (ev_tx, ev_rx) = mpsc::channel(config.event_capacity.max(1));
        let watched = Arc::new(AtomicBool::new(conn.negotiated.read_timeout().is_some()));
        let client = Client {
            requests: req_tx,
            next_sub: Arc::new(AtomicU64::new(0)),
            receipt_timeout: config.receipt_timeout,
            server: conn.negotiated.server.as_deref().map(Arc::from),
            watched: watched.clone(),
        };
        let event_loop = EventLoop {
            config,
            tls,
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
        let id = format!("sub-{}", self.next_sub.fetch_add(1, Ordering::Relaxed));
        let for_request = id.clone();
        let confirmed = self.call_confirmed(|reply| Request::Subscribe { id: for_request, sub, reply }).await;
        (id, confirmed)
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

    /// The `server` header of the first CONNECTED (`ActiveMQ/5.17.2`, `RabbitMQ/3.10.8`).
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// Sends DISCONNECT, waits for its receipt, closes the connection and stops the client.
    pub async fn disconnect(&self) -> Result<(), SessionError> {
        self.call(|reply| Request::Disconnect { reply }).await
    }
}

/// One live connection and what its CONNECTED settled.
struct Connection {
    framed: Framed<Box<dyn Io>, StompCodec>,
    negotiated: Negotiated,
}

impl Connection {
    async fn open(config: &ClientConfig, tls: Option<&TlsConnector>) -> Result<Connection, SessionError> {
        timeout(config.connect_timeout, Self::handshake(config, tls))
            .await
            .map_err(|_| SessionError::ConnectTimeout(config.connect_timeout))?
            .map_err(|e| transport::refused_handshake(e, &config.tls))
    }

    async fn handshake(
        config: &ClientConfig,
        tls: Option<&TlsConnector>,
    ) -> Result<Connection, SessionError> {
        let stream = transport::open(&config.url, tls).await?;
        let mut framed = Framed::new(stream, StompCodec::new(config.limits));
        framed.send(session::connect_frame(&config.connect)).await?;
        loop {
            match framed.next().await {
                Some(Ok(Wire::Heartbeat)) => continue,
                Some(Ok(Wire::Frame(answer))) => {
                    let negotiated = session::negotiate(&answer, config.connect.heartbeat)?;
                    return Ok(Connection { framed, negotiated });
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Err(SessionError::ConnectionLost("closed during CONNECT".into())),
            }
        }
    }
}

/// What woke the event loop.
enum Step<'a> {
    Deliver(Option<mpsc::Permit<'a, Event>>),
    Request(Option<Request>),
    Read(Option<Result<Wire, FrameError>>),
    Beat,
    Silent,
}

/// How a connection's service ended.
enum End {
    /// The client was told to stop (or every handle was dropped).
    Shutdown,
    Lost(SessionError),
}

struct EventLoop {
    config: ClientConfig,
    tls: Option<TlsConnector>,
    session: Session,
    requests: mpsc::Receiver<Request>,
    events: mpsc::Sender<Event>,
    pending: VecDeque<Event>,
    watched: Arc<AtomicBool>,
}

impl EventLoop {
    async fn run(mut self, mut conn: Connection) {
        self.session.connected(&conn.negotiated);
        info!(broker = %self.config.url, server = ?conn.negotiated.server, "STOMP connected");
        loop {
            let err = match self.serve(&mut conn).await {
                End::Shutdown => return,
                End::Lost(err) => err,
            };
            warn!(broker = %self.config.url, error = %err, "STOMP connection lost; reconnecting");
            // Closed now, not when the next connection replaces it: the broker rolls back what
            // was open on it and redelivers its unacknowledged messages at once.
            drop(conn);
            self.session.disconnected(&err);
            // Messages already read are still handed over: with `ack:auto` the broker counts
            // them as consumed, so dropping them would lose them. Their acks fail as stale.
            self.pending.push_back(Event::ConnectionLost(err));
            conn = match self.reconnect().await {
                Some(conn) => conn,
                None => return,
            };
        }
    }

    /// Serves one connection until it ends.
    async fn serve(&mut self, conn: &mut Connection) -> End {
        let events = self.events.clone();
        let read_timeout = conn.negotiated.read_timeout();
        self.watched.store(read_timeout.is_some(), Ordering::Relaxed);
        let send_every = conn.negotiated.send_every;
        // Checked at half the period, so that silence never reaches the period: ActiveMQ checks
        // each period for a frame and closes a connection without one ("Channel was inactive
        // for too (>2000) long"), which beats exactly at the period missed by a few ms on a
        // connection with nothing else to send (a publishing connection held by flow control).
        let mut beat = interval(send_every.map_or(Duration::from_secs(3600), |d| d / 2));
        beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let silence = read_timeout.unwrap_or(Duration::from_secs(86400 * 365));
        let mut deadline = Instant::now() + silence;
        let mut last_write = Instant::now();
        loop {
            let reading = self.pending.len() < self.config.max_buffered;
            let step = tokio::select! {
                biased;
                permit = events.reserve(), if !self.pending.is_empty() => Step::Deliver(permit.ok()),
                request = self.requests.recv() => Step::Request(request),
                item = conn.framed.next(), if reading => Step::Read(item),
                _ = beat.tick(), if send_every.is_some() => Step::Beat,
                _ = sleep_until(deadline), if reading && read_timeout.is_some() => Step::Silent,
            };
            match step {
                Step::Deliver(permit) => {
                    self.deliver(permit);
                    if !reading {
                        deadline = Instant::now() + silence;
                    }
                }
                Step::Request(None) => {
                    self.close(conn).await;
                    return End::Shutdown;
                }
                Step::Request(Some(request)) => match self.handle(request, conn).await {
                    Ok(true) => return End::Shutdown,
                    Ok(false) => last_write = Instant::now(),
                    Err(e) => return End::Lost(e),
                },
                Step::Read(item) => {
                    deadline = Instant::now() + silence;
                    if let Err(e) = self.on_read(item) {
                        return End::Lost(e);
                    }
                }
                Step::Beat if last_write.elapsed() * 4 >= send_every.unwrap_or_default() => {
                    if let Err(e) = conn.framed.send(Heartbeat).await {
                        return End::Lost(e.into());
                    }
                    last_write = Instant::now();
                }
                Step::Beat => {}
                Step::Silent => return End::Lost(SessionError::HeartbeatTimeout(silence)),
            }
        }
    }

    /// Hands the oldest pending event to the consumer (dropping them all if it has gone).
    fn deliver(&mut self, permit: Option<mpsc::Permit<'_, Event>>) {
        match (permit, self.pending.pop_front()) {
            (Some(permit), Some(event)) => permit.send(event),
            _ => self.pending.clear(),
        }
    }

    /// Handles what was read. An ERROR ends the connection (STOMP 1.2: the broker closes it
    /// after ERROR; RabbitMQ does not always, so the client does).
    fn on_read(&mut self, item: Option<Result<Wire, FrameError>>) -> Result<(), SessionError> {
        match item {
            Some(Ok(Wire::Frame(frame))) => match self.session.on_frame(frame) {
                Inbound::Deliver(message) => self.pending.push_back(Event::Message(message)),
                Inbound::Error(error) => {
                    warn!(broker = %self.config.url, error = %error, "broker sent ERROR");
                    self.pending.push_back(Event::BrokerError(error.clone()));
                    return Err(SessionError::Broker(error));
                }
                Inbound::Nothing => {}
            },
            Some(Ok(Wire::Heartbeat)) => {}
            Some(Err(e)) => return Err(e.into()),
            None => return Err(SessionError::ConnectionLost("closed by the broker".into())),
        }
        Ok(())
    }

    /// Carries out one request. `Ok(true)` means the client has shut down.
    async fn handle(&mut self, request: Request, conn: &mut Connection) -> Result<bool, SessionError> {
        let (frame, reply, confirm) = match request {
            Request::Send { frame, confirm, reply } => (frame, reply, confirm),
            Request::Subscribe { id, sub, reply } => (self.session.subscribe(id, sub), reply, true),
            Request::Unsubscribe { id, reply } => match self.session.unsubscribe(&id) {
                Some(frame) => (frame, reply, true),
                None => {
                    let _ = reply.send(Ok(()));
                    return Ok(false);
                }
            },
            Request::Submit { items, reply } => return self.submit(items, reply, conn).await.map(|_| false),
            Request::Reset { reason } => return Err(SessionError::Reset(reason)),
            Request::Ack { msg, nack, reply } => match self.session.ack(&msg, nack, None) {
                Ok(frame) => (frame, reply, false),
                Err(e) => {
                    let _ = reply.send(Err(e));
                    return Ok(false);
                }
            },
            Request::Disconnect { reply } => {
                self.close(conn).await;
                let _ = reply.send(Ok(()));
                return Ok(true);
            }
        };
        self.write(conn, frame, reply, confirm).await.map(|_| false)
    }

    async fn write(
        &mut self,
        conn: &mut Connection,
        mut frame: Frame,
        reply: Reply<()>,
        confirm: bool,
    ) -> Result<(), SessionError> {
        let reply = if confirm {
            self.session.expect_receipt(&mut frame, reply);
            None
        } else {
            Some(reply)
        };
        let result = conn.framed.feed(frame).await;
        let result = match result {
            Ok(()) if self.requests.is_empty() => flush(&mut conn.framed).await,
            other => other,
        };
        let result = result.map_err(SessionError::from);
        if let Some(reply) = reply {
            let _ = reply
                .send(result.as_ref().map(|_| ()).map_err(|e| SessionError::ConnectionLost(e.to_string())));
        }
        result
    }

    /// Writes a batch: acks checked first (all or nothing), receipts attached, one flush.
    async fn submit(
        &mut self,
        items: Vec<Item>,
        reply: Reply<Vec<AwaitedReceipt>>,
        conn: &mut Connection,
    ) -> Result<(), SessionError> {
        let mut frames = Vec::with_capacity(items.len());
        let mut receipts = Vec::new();
        for item in items {
            match item {
                Item::Frame { frame, receipt: false } => frames.push(frame),
                Item::Frame { mut frame, receipt: true } => {
                    let (tx, answer) = oneshot::channel();
                    self.session.expect_receipt(&mut frame, tx);
                    let id = frame.header("receipt").unwrap_or_default().to_owned();
                    receipts.push(AwaitedReceipt { id, answer });
                    frames.push(frame);
                }
                Item::Ack { msg, nack, transaction } => {
                    match self.session.ack(&msg, nack, transaction.as_deref()) {
                        Ok(frame) => frames.push(frame),
                        Err(e) => {
                            let _ = reply.send(Err(e));
                            return Ok(());
                        }
                    }
                }
            }
        }
        let mut result = Ok(());
        for frame in frames {
            result = conn.framed.feed(frame).await;
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = flush(&mut conn.framed).await;
        }
        match result {
            Ok(()) => {
                let _ = reply.send(Ok(receipts));
                Ok(())
            }
            Err(e) => {
                let _ = reply.send(Err(SessionError::ConnectionLost(e.to_string())));
                Err(e.into())
            }
        }
    }

    /// DISCONNECT with a receipt, then wait (bounded) for that receipt before closing.
    async fn close(&mut self, conn: &mut Connection) {
        let (tx, rx) = oneshot::channel();
        let mut frame = Frame::new(Command::Disconnect);
        self.session.expect_receipt(&mut frame, tx);
        if conn.framed.send(frame).await.is_err() {
            return;
        }
        let drain = async {
            while let Some(Ok(item)) = conn.framed.next().await {
                if let Wire::Frame(frame) = item {
                    let _ = self.session.on_frame(frame);
                }
            }
        };
        tokio::select! {
            _ = rx => {}
            _ = drain => {}
            _ = sleep(self.config.receipt_timeout) => debug!("no RECEIPT for DISCONNECT; closing anyway"),
        }
        self.session.disconnected(&SessionError::Shutdown);
        info!(broker = %self.config.url, "STOMP disconnected");
    }

    /// Reconnects with backoff. While waiting, requests fail with `NotConnected`; `None`
    /// when the client is shut down meanwhile.
    async fn reconnect(&mut self) -> Option<Connection> {
        for attempt in 0u32.. {
            let events = self.events.clone();
            let wait = sleep(self.config.backoff.delay(attempt));
            tokio::pin!(wait);
            loop {
                let step = tokio::select! {
                    _ = &mut wait => break,
                    request = self.requests.recv() => Step::Request(request),
                    permit = events.reserve(), if !self.pending.is_empty() => Step::Deliver(permit.ok()),
                };
                match step {
                    Step::Request(request) => self.refuse(request?)?,
                    Step::Deliver(permit) => self.deliver(permit),
                    _ => {}
                }
            }
            match self.restore().await {
                Ok(conn) => return Some(conn),
                Err(err) => {
                    warn!(broker = %self.config.url, attempt, error = %err, "reconnect failed");
                    self.pending.push_back(Event::ReconnectFailed(err));
                }
            }
        }
        None
    }

    /// Answers a request that cannot be served while disconnected. `None` on shutdown.
    fn refuse(&mut self, request: Request) -> Option<()> {
        match request {
            Request::Send { reply, .. } | Request::Ack { reply, .. } | Request::Subscribe { reply, .. } => {
                let _ = reply.send(Err(SessionError::NotConnected));
            }
            Request::Submit { reply, .. } => {
                let _ = reply.send(Err(SessionError::NotConnected));
            }
            Request::Reset { .. } => {}
            Request::Unsubscribe { id, reply } => {
                let _ = self.session.unsubscribe(&id);
                let _ = reply.send(Ok(()));
            }
            Request::Disconnect { reply } => {
                let _ = reply.send(Ok(()));
                return None;
            }
        }
        Some(())
    }

    /// Opens a new connection and restores the subscriptions on it, then tells the consumer.
    async fn restore(&mut self) -> Result<Connection, SessionError> {
        let mut conn = Connection::open(&self.config, self.tls.as_ref()).await?;
        for frame in self.session.resubscribe_frames() {
            conn.framed.feed(frame).await?;
        }
        flush(&mut conn.framed).await?;
        let epoch = self.session.connected(&conn.negotiated);
        info!(broker = %self.config.url, epoch, "STOMP reconnected; subscriptions restored");
        self.pending.push_back(Event::Reconnected { epoch });
        Ok(conn)
    }
}

/// Flushes what `feed` buffered (the sink has several item types, hence the explicit one).
async fn flush(framed: &mut Framed<Box<dyn Io>, StompCodec>) -> Result<(), FrameError> {
    SinkExt::<Frame>::flush(framed).await
}
