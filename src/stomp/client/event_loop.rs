//! The client's event loop: the one task that owns the connection, writes what handles ask
//! for, reads what the broker sends, keeps the heart-beats, and reconnects with backoff,
//! restoring every subscription.

use super::{AwaitedReceipt, ClientConfig, Event, Item, Reply, Request};
use crate::stomp::codec::{FrameError, Heartbeat, StompCodec, Wire};
use crate::stomp::frame::{Command, Frame};
use crate::stomp::session::{self, Inbound, Negotiated, Session, SessionError};
use crate::stomp::transport::{self, BrokerUrl, Io};
use futures_util::{SinkExt, StreamExt};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep, sleep_until, timeout};
use tokio_rustls::TlsConnector;
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

/// One live connection and what its CONNECTED settled.
pub(super) struct Connection {
    framed: Framed<Box<dyn Io>, StompCodec>,
    pub(super) negotiated: Negotiated,
}

impl Connection {
    /// Connects to the first address that accepts, each tried once in order: its index and
    /// the connection, or the last address's error.
    pub(super) async fn open_first(
        config: &ClientConfig,
        tls: &[Option<TlsConnector>],
    ) -> Result<(usize, Connection), SessionError> {
        let mut last = SessionError::Url { url: String::new(), reason: "no broker address is configured" };
        for (index, url) in config.urls.iter().enumerate() {
            match Self::open(config, url, tls[index].as_ref()).await {
                Ok(conn) => return Ok((index, conn)),
                // A TLS failure is a setting to fix (a CA, a certificate), not a broker that is
                // down, as the other address of a pair usually is: said at warn level.
                Err(e) if tls_failure(&e) => {
                    warn!(broker = %url, error = %e, "this address refuses the TLS settings; trying the next");
                    last = e;
                }
                Err(e) => {
                    debug!(broker = %url, error = %e, "this address does not accept; trying the next");
                    last = e;
                }
            }
        }
        Err(last)
    }

    /// Connects to `url` through `tls`, its connector; a TLS alert is explained with the
    /// settings of that address.
    pub(super) async fn open(
        config: &ClientConfig,
        url: &BrokerUrl,
        tls: Option<&TlsConnector>,
    ) -> Result<Connection, SessionError> {
        timeout(config.connect_timeout, Self::handshake(config, url, tls))
            .await
            .map_err(|_| SessionError::ConnectTimeout(config.connect_timeout))?
            .map_err(|e| transport::refused_handshake(e, config.tls_for(url)))
    }

    async fn handshake(
        config: &ClientConfig,
        url: &BrokerUrl,
        tls: Option<&TlsConnector>,
    ) -> Result<Connection, SessionError> {
        let stream = transport::open(url, tls).await?;
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

pub(super) struct EventLoop {
    pub(super) config: ClientConfig,
    /// The TLS connector of each address of `config.urls` (`None` for `stomp://`).
    pub(super) tls: Vec<Option<TlsConnector>>,
    /// The index in `config.urls` of the current (or last) connection's address.
    pub(super) current: usize,
    /// That address, for the client's handles.
    pub(super) address: Arc<Mutex<BrokerUrl>>,
    pub(super) session: Session,
    pub(super) requests: mpsc::Receiver<Request>,
    pub(super) events: mpsc::Sender<Event>,
    pub(super) pending: VecDeque<Event>,
    pub(super) watched: Arc<AtomicBool>,
}

impl EventLoop {
    /// The current (or last) connection's address.
    fn url(&self) -> &BrokerUrl {
        &self.config.urls[self.current]
    }

    pub(super) async fn run(mut self, mut conn: Connection) {
        self.session.connected(&conn.negotiated);
        let server = conn.negotiated.server.as_deref().unwrap_or("(not said)");
        // Said by the consumer (telemetry::broker::BrokerConnected), with the role of the
        // connection; so are the losses and returns below, from the events.
        debug!(broker = %self.url(), server, "STOMP connected");
        loop {
            let err = match self.serve(&mut conn).await {
                End::Shutdown => return,
                End::Lost(err) => err,
            };
            debug!(broker = %self.url(), error = %err, "STOMP connection lost; reconnecting");
            // Closed now, not when the next connection replaces it: the broker rolls back what
            // was open on it and redelivers its unacknowledged messages at once.
            drop(conn);
            self.session.disconnected(&err);
            // Messages already read are still handed over: with `ack:auto` the broker counts
            // them as consumed, so dropping them would lose them. Their acks fail as stale.
            self.pending.push_back(Event::ConnectionLost { error: err, url: self.url().clone() });
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
            Some(Ok(Wire::Frame(frame))) => {
                super::FRAMES_READ.fetch_add(1, Ordering::Relaxed);
                match self.session.on_frame(frame) {
                    Inbound::Deliver(message) => self.pending.push_back(Event::Message(message)),
                    Inbound::Error(error) => {
                        debug!(broker = %self.url(), error = %error, "broker sent ERROR");
                        self.pending.push_back(Event::BrokerError(error.clone()));
                        return Err(SessionError::Broker(error));
                    }
                    Inbound::Nothing => {}
                }
            }
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
        info!(broker = %self.url(), "STOMP disconnected");
    }

    /// Reconnects with backoff. While waiting, requests fail with `NotConnected`; `None`
    /// when the client is shut down meanwhile.
    async fn reconnect(&mut self) -> Option<Connection> {
        let lost = self.current;
        for attempt in 0u32.. {
            let events = self.events.clone();
            let (target, step) = self.config.reconnect_target(lost, attempt);
            let wait = sleep(self.config.backoff.delay(step));
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
            match self.restore(target).await {
                Ok(conn) => return Some(conn),
                Err(err) => {
                    let url = self.config.urls[target].clone();
                    debug!(broker = %url, attempt, error = %err, "reconnect failed");
                    self.pending.push_back(Event::ReconnectFailed { error: err, url, attempt });
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

    /// Opens a new connection to the address at `target` and restores the subscriptions on
    /// it, then tells the consumer.
    async fn restore(&mut self, target: usize) -> Result<Connection, SessionError> {
        let url = &self.config.urls[target];
        let mut conn = Connection::open(&self.config, url, self.tls[target].as_ref()).await?;
        for frame in self.session.resubscribe_frames() {
            conn.framed.feed(frame).await?;
        }
        flush(&mut conn.framed).await?;
        let epoch = self.session.connected(&conn.negotiated);
        let failover = target != self.current;
        self.current = target;
        let url = self.url().clone();
        *self.address.lock().unwrap_or_else(|e| e.into_inner()) = url.clone();
        debug!(broker = %url, epoch, failover, "STOMP reconnected; subscriptions restored");
        self.pending.push_back(Event::Reconnected { epoch, url });
        Ok(conn)
    }
}

/// Flushes what `feed` buffered (the sink has several item types, hence the explicit one).
async fn flush(framed: &mut Framed<Box<dyn Io>, StompCodec>) -> Result<(), FrameError> {
    SinkExt::<Frame>::flush(framed).await
}

/// Whether `e` is a TLS handshake that failed (a certificate not trusted or refused), as
/// opposed to an address nobody answers at.
fn tls_failure(e: &SessionError) -> bool {
    match e {
        SessionError::Tls(_) | SessionError::TlsRefused(_) => true,
        SessionError::Connect { source, .. } => source
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<tokio_rustls::rustls::Error>().is_some()),
        _ => false,
    }
}
