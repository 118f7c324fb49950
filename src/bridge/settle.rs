//! Settlement: what is ready is published and acknowledged in batches, each batch confirmed
//! SENDs then ACKs (or one broker transaction), several batches in flight.
//!
//! Transaction mode (`mode = "transaction"`, ActiveMQ Classic or Artemis), per batch:
//! 1. `BEGIN tx`, every SEND in `tx` with a receipt;
//! 2. once every SEND is confirmed: the ACK of every source in `tx`, `COMMIT tx` with a receipt.
//!
//! The ACKs are written only after the broker confirmed the SENDs, because a broker that
//! refuses one SEND with an ERROR may keep the connection open and would otherwise commit the
//! other SENDs *and the refused message's ACK* (RabbitMQ does; see docs/PERFORMANCE.md).
//! The COMMIT makes the SENDs and ACKs atomic: a crash before it republishes nothing.
//!
//! Confirm mode (the default, `auto`; the only safe one on RabbitMQ, whose COMMIT receipt comes
//! before its SENDs are confirmed and whose transactions are not atomic): every SEND with a
//! receipt; once all are confirmed, the ACKs. A crash between the two publishes twice.
//!
//! Any failure (an ERROR, a lost connection, a receipt that never came on a connection whose
//! broker does not heart-beat, which resets the connection) leaves the batch unacknowledged on
//! a connection that is gone: the broker redelivers it. A SEND the broker refuses makes its
//! message a suspect, tried alone next time and dead-lettered (kind `broker`) after
//! `max_attempts`.
//!
//! A receipt late past the receipt timeout on a connection whose broker heart-beats is a
//! broker that holds the bridge back, not a dead one (ActiveMQ's producer flow control stops
//! confirming SENDs to a full destination until a consumer makes room): the batch is held and
//! reported stalled (`/readyz` 503, `bridge_publish_stalled_seconds`) until the broker confirms
//! it, or until the connection's heart-beats stop and the client replaces it. Resetting
//! instead would only roll back, redeliver the same messages to the same full destination,
//! and do it again every receipt timeout (measured: a reconnect every 2 s, docs/HARDENING.md).

use super::dedup::{DUPLICATE_ID, duplicate_id};
use super::delivery::{Outcome, Work};
use crate::config::DeliveryMode;
use crate::stomp::{AwaitedReceipt, Client, Command, Frame, Item, SessionError};
use crate::telemetry::Event;
use crate::telemetry::{Metrics, PublishStalled};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio::time::timeout;

/// How a batch is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    Transaction,
    Confirm,
}

impl Settlement {
    /// The configured mode; `auto` is `confirm` on every broker. Measured on ActiveMQ Classic
    /// beside a producer (docs/PERFORMANCE.md), `confirm` moved 1.4–1.7× the messages of
    /// `transaction` with a p99 of 3–10 ms against 0.7–4 s; `transaction` is for an operator
    /// who needs a crash to republish nothing and accepts that cost.
    pub fn choose(configured: DeliveryMode) -> Settlement {
        match configured {
            DeliveryMode::Transaction => Settlement::Transaction,
            DeliveryMode::Confirm | DeliveryMode::Auto => Settlement::Confirm,
        }
    }

    /// [`Settlement::choose`] on the broker whose CONNECTED frame said `server`. ActiveMQ Artemis
    /// applies a STOMP ACK sent inside a transaction at once (an ABORT does not bring the
    /// message back, tests/artemis.rs), so a crash between the ACKs and the COMMIT would lose
    /// the batch: there `transaction` is `confirm`, whose repeated SENDs Artemis drops by their
    /// duplicate ids (dedup.rs).
    pub fn choose_on(configured: DeliveryMode, server: Option<&str>) -> Settlement {
        let artemis = server.is_some_and(|s| s.starts_with("ActiveMQ-Artemis"));
        if artemis { Settlement::Confirm } else { Settlement::choose(configured) }
    }

    /// The SENDs a publishing connection may have awaiting their receipts, all batches
    /// together, in `confirm` mode: `configured` (`delivery.unconfirmed_max`), or else the
    /// broker's; `None`: as many as the batches hold.
    /// A bridge killed meanwhile publishes every one of them twice (the broker still reads and
    /// routes them), so the cap is what a `kill -9` may duplicate (docs/OPERATING.md):
    /// - ActiveMQ Classic handles a connection's confirmed SENDs one at a time, so past a few
    ///   they only wait in its socket: 8 moved within 3–7% of what 512 did and cut the
    ///   duplicates from 20–42 to a few.
    /// - RabbitMQ confirms in batches, after a disk sync: 32 moved as much as 512 did in
    ///   alternating loadgen runs, and cut the duplicates at the defaults from 76–187.
    /// - Artemis drops the repeated SENDs by their duplicate ids (dedup.rs): no cap.
    pub fn unconfirmed_cap(self, configured: Option<usize>, server: Option<&str>) -> Option<usize> {
        if self != Settlement::Confirm {
            return None;
        }
        let server = server.unwrap_or_default();
        let broker = if server.starts_with("ActiveMQ/") {
            Some(ACTIVEMQ_UNCONFIRMED)
        } else if server.starts_with("RabbitMQ/") {
            Some(RABBITMQ_UNCONFIRMED)
        } else {
            None
        };
        configured.or(broker)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Settlement::Transaction => "transaction",
            Settlement::Confirm => "confirm",
        }
    }
}

/// [`Settlement::unconfirmed_cap`] on ActiveMQ Classic.
pub const ACTIVEMQ_UNCONFIRMED: usize = 8;
/// [`Settlement::unconfirmed_cap`] on RabbitMQ.
pub const RABBITMQ_UNCONFIRMED: usize = 32;

/// Why a batch did not settle.
#[derive(Debug)]
pub struct Failure {
    pub error: SessionError,
    /// The work whose SEND the broker refused by name (its ERROR carried that receipt).
    pub culprit: Option<usize>,
    /// Whether writing the acknowledgements failed (the consuming connection), rather than
    /// publishing: such messages are the broker's to redeliver, never published again.
    pub acking: bool,
}

/// A batch once its outcome is known.
#[derive(Debug)]
pub struct Finished {
    pub works: Vec<Work>,
    pub result: Result<(), Failure>,
    /// How many of `works`, from the first, were acknowledged (all of them when `result` is
    /// `Ok`; in confirm mode, some before a failure).
    pub acked: usize,
    /// How many of `works`, from the first, had everything they published confirmed by the
    /// broker (at least `acked`): published, whether acknowledged or not.
    pub confirmed: usize,
    /// How long the broker held the batch past the receipt timeout (a publishing stall), ms.
    pub stalled_ms: u64,
}

/// Starts batches in order; the broker's answers are awaited by the futures it returns.
pub struct Settler {
    /// Where the SENDs go (and, in transaction mode, everything: it is `consumer` then).
    publisher: Client,
    /// Where the messages came from, so where their ACKs go (STOMP acknowledges a message on
    /// the connection that received it).
    consumer: Client,
    metrics: Arc<Metrics>,
    mode: Settlement,
    receipt_timeout: Duration,
    next_tx: u64,
    /// Fires when the previous batch has written its ACKs (or failed): ACKs and COMMITs go
    /// out in batch order.
    turn: Option<oneshot::Receiver<()>>,
}

impl Settler {
    /// SENDs on `publisher`, ACKs on `consumer`. Transaction mode needs one connection for
    /// both (a transaction lives on one connection): give it the same client twice.
    pub fn new(
        publisher: Client,
        consumer: Client,
        metrics: Arc<Metrics>,
        mode: Settlement,
        receipt_timeout: Duration,
    ) -> Self {
        Settler { publisher, consumer, metrics, mode, receipt_timeout, next_tx: 0, turn: None }
    }

    pub fn mode(&self) -> Settlement {
        self.mode
    }

    /// Queues the first half of a batch now (so batches are written in the order started)
    /// and returns the future that finishes it.
    pub async fn start(&mut self, mut works: Vec<Work>) -> impl Future<Output = Finished> + use<> {
        self.next_tx += 1;
        let tx = format!("sab-{}", self.next_tx);
        let (first, owners) = first_half(self.mode, &tx, &mut works);
        let submitted = self.publisher.enqueue(first).await;
        let (done, next_turn) = oneshot::channel();
        let turn = self.turn.replace(next_turn);
        let batch = Batch {
            publisher: self.publisher.clone(),
            consumer: self.consumer.clone(),
            metrics: self.metrics.clone(),
            mode: self.mode,
            receipt_timeout: self.receipt_timeout,
            tx,
            owners,
            stalled_ms: Arc::default(),
            confirmed: Arc::default(),
        };
        async move {
            let mut acked = 0;
            let (stalled, confirmed) = (batch.stalled_ms.clone(), batch.confirmed.clone());
            let result = match submitted {
                Ok(submitted) => batch.finish(&works, submitted, turn, done, &mut acked).await,
                Err(error) => Err(Failure { error, culprit: None, acking: false }),
            };
            if result.is_ok() {
                acked = works.len();
            }
            let (stalled_ms, confirmed) = (stalled.load(Relaxed), confirmed.load(Relaxed).max(acked));
            Finished { works, result, acked, confirmed, stalled_ms }
        }
    }
}

/// The frames before the acknowledgements, and for each SEND receipt the work it belongs to.
/// The works keep their own frames (a copy of the headers per SEND; the body is shared): a
/// batch that fails on a publishing connection of its own is published again from them,
/// without giving the messages back to the broker (see `Engine::failed`).
fn first_half(mode: Settlement, tx: &str, works: &mut [Work]) -> (Vec<Item>, Vec<usize>) {
    let mut items = Vec::with_capacity(works.len() + 1);
    let mut owners = Vec::with_capacity(works.len());
    if mode == Settlement::Transaction {
        items.push(Item::Frame { frame: Frame::new(Command::Begin).with("transaction", tx), receipt: false });
    }
    for (i, work) in works.iter_mut().enumerate() {
        for (j, mut frame) in work.publish.iter().cloned().enumerate() {
            frame.headers.push((DUPLICATE_ID.into(), duplicate_id(&work.source.message, j)));
            if mode == Settlement::Transaction {
                frame.headers.push(("transaction".into(), tx.to_owned()));
            }
            // Confirm mode: a receipt on every SEND (each is the broker's confirmation).
            items.push(Item::Frame { frame, receipt: mode == Settlement::Confirm });
            owners.push(i);
        }
    }
    // Transaction mode: a receipt on the last SEND only, as a barrier. ActiveMQ answers a
    // connection's frames in order, so it means every SEND before it was taken (or an ERROR
    // came first); a receipt on each transacted SEND makes ActiveMQ handle it synchronously
    // (256 SENDs: 93 ms with receipts, 16 ms without, measured; docs/PERFORMANCE.md).
    if mode == Settlement::Transaction {
        if let Some(Item::Frame { receipt, .. }) =
            items.iter_mut().rev().find(|i| matches!(i, Item::Frame { .. }))
        {
            *receipt = !owners.is_empty();
        }
        owners.clear();
    }
    (items, owners)
}

struct Batch {
    publisher: Client,
    consumer: Client,
    metrics: Arc<Metrics>,
    mode: Settlement,
    receipt_timeout: Duration,
    tx: String,
    owners: Vec<usize>,
    /// How long a stall held the batch (ms; 0: none), for the traces of its messages.
    stalled_ms: Arc<AtomicU64>,
    /// Confirm mode: the works whose SENDs the broker confirmed so far (from the first).
    confirmed: Arc<AtomicUsize>,
}

impl Batch {
    async fn finish(
        self,
        works: &[Work],
        submitted: crate::stomp::Submitted,
        turn: Option<oneshot::Receiver<()>>,
        done: oneshot::Sender<()>,
        acked: &mut usize,
    ) -> Result<(), Failure> {
        let receipts = match submitted.await {
            Ok(Ok(receipts)) => receipts,
            Ok(Err(error)) => return Err(Failure { error, culprit: None, acking: false }),
            Err(_) => return Err(Failure { error: SessionError::Shutdown, culprit: None, acking: false }),
        };
        if self.mode == Settlement::Confirm {
            // Outside a transaction the order of ACKs does not matter: no turn to wait for.
            drop(done);
            return self.ack_as_confirmed(works, receipts, acked).await;
        }
        let t0 = Instant::now();
        self.confirmed(receipts, works.len()).await?;
        let t1 = t0.elapsed();
        if let Some(turn) = turn {
            let _ = turn.await;
        }
        let t2 = t0.elapsed();
        let second = self.second_half(works);
        let receipts = self.consumer.enqueue(second).await;
        drop(done);
        let receipts = match receipts {
            Ok(submitted) => match submitted.await {
                Ok(Ok(receipts)) => receipts,
                Ok(Err(error)) => return Err(Failure { error, culprit: None, acking: true }),
                Err(_) => return Err(Failure { error: SessionError::Shutdown, culprit: None, acking: true }),
            },
            Err(error) => return Err(Failure { error, culprit: None, acking: true }),
        };
        self.confirmed(receipts, works.len()).await?;
        tracing::debug!(
            messages = works.len(),
            sends_confirmed_ms = t1.as_secs_f64() * 1e3,
            turn_ms = t2.as_secs_f64() * 1e3,
            committed_ms = t0.elapsed().as_secs_f64() * 1e3,
            "batch settled"
        );
        Ok(())
    }

    /// Confirm mode: each work is acknowledged as soon as its SENDs are confirmed, what is
    /// confirmed by then in one write, so that a crash finds few confirmed SENDs whose
    /// sources are not acknowledged (each of those is published again). `acked` counts the
    /// works acknowledged so far.
    async fn ack_as_confirmed(
        &self,
        works: &[Work],
        receipts: Vec<AwaitedReceipt>,
        acked: &mut usize,
    ) -> Result<(), Failure> {
        let mut receipts = receipts.into_iter().enumerate().peekable();
        let mut ready = Vec::new();
        for (w, work) in works.iter().enumerate() {
            while let Some((i, mut receipt)) = receipts.next_if(|(i, _)| self.owners.get(*i) == Some(&w)) {
                match futures_util::FutureExt::now_or_never(&mut receipt.answer) {
                    Some(Ok(Ok(()))) => {}
                    Some(answer) => {
                        let error = answer
                            .unwrap_or(Err(SessionError::Shutdown))
                            .err()
                            .unwrap_or(SessionError::Shutdown);
                        return Err(self.failure(i, error));
                    }
                    None => {
                        // Not confirmed yet: write what is, then wait.
                        self.acknowledge(&mut ready, acked).await?;
                        self.wait(i, receipt, works.len() - w).await?;
                    }
                }
            }
            ready.push(work);
            self.confirmed.store(w + 1, Relaxed);
        }
        self.acknowledge(&mut ready, acked).await
    }

    /// Writes the ACKs of `ready` on the consuming connection.
    async fn acknowledge(&self, ready: &mut Vec<&Work>, acked: &mut usize) -> Result<(), Failure> {
        if ready.is_empty() {
            return Ok(());
        }
        let items = ready
            .drain(..)
            .map(|w| Item::Ack { msg: w.source.ack_ref().clone(), nack: false, transaction: None })
            .collect::<Vec<_>>();
        let count = items.len();
        let written = match self.consumer.enqueue(items).await {
            Ok(submitted) => submitted.await.unwrap_or(Err(SessionError::Shutdown)).map(|_| ()),
            Err(error) => Err(error),
        };
        written.map_err(|error| Failure { error, culprit: None, acking: true })?;
        *acked += count;
        Ok(())
    }

    /// The failure of receipt `i`: the work it belongs to is blamed when the broker refused it
    /// by name.
    fn failure(&self, i: usize, error: SessionError) -> Failure {
        let culprit =
            matches!(error, SessionError::Rejected(_)).then(|| self.owners.get(i).copied()).flatten();
        Failure { error, culprit, acking: false }
    }

    /// The acknowledgements, and in transaction mode the COMMIT with a receipt.
    fn second_half(&self, works: &[Work]) -> Vec<Item> {
        let tx = (self.mode == Settlement::Transaction).then(|| self.tx.clone());
        let mut items: Vec<Item> = works
            .iter()
            .map(|w| Item::Ack { msg: w.source.ack_ref().clone(), nack: false, transaction: tx.clone() })
            .collect();
        if let Some(tx) = tx {
            items.push(Item::Frame {
                frame: Frame::new(Command::Commit).with("transaction", tx),
                receipt: true,
            });
        }
        items
    }

    /// Waits for every receipt, in order (see [`Batch::wait`]).
    async fn confirmed(&self, receipts: Vec<AwaitedReceipt>, messages: usize) -> Result<(), Failure> {
        for (i, receipt) in receipts.into_iter().enumerate() {
            self.wait(i, receipt, messages).await?;
        }
        Ok(())
    }

    /// Waits for receipt `i`. Past the receipt timeout, on a connection whose broker
    /// heart-beats, the wait goes on as a reported stall (the client ends it if the
    /// heart-beats stop); on one without heart-beats nothing tells a slow broker from a dead
    /// one, so the connection is reset: the broker then rolls back and redelivers.
    async fn wait(&self, i: usize, receipt: AwaitedReceipt, messages: usize) -> Result<(), Failure> {
        let since = Instant::now();
        let answer = receipt.confirmed();
        tokio::pin!(answer);
        let result = match timeout(self.receipt_timeout, &mut answer).await {
            Ok(result) => result,
            Err(_) if self.publisher.watched() => {
                let stall = PublishStalled { since, messages }.emit(&self.metrics);
                let result = answer.await;
                let held = since.elapsed().as_millis() as u64;
                self.stalled_ms.fetch_add(held, Relaxed);
                if result.is_ok() {
                    stall.resumed();
                }
                result
            }
            Err(_) => {
                let error = SessionError::ReceiptTimeout(self.receipt_timeout);
                self.publisher.reset(error.to_string()).await;
                return Err(Failure { error, culprit: None, acking: false });
            }
        };
        result.map_err(|error| self.failure(i, error))
    }
}

/// How often each message made the broker refuse what it caused, so that one poison message
/// is isolated and then dead-lettered instead of failing its batch forever. Keyed by the
/// message's source and body, which survive a redelivery (RabbitMQ's `message-id` does not).
/// One table: each entry carries its place in the order of first refusal, by which the
/// oldest is forgotten.
#[derive(Debug, Default)]
pub struct Attempts {
    seen: HashMap<u64, Refusals>,
    /// The place the next newly refused message gets.
    next: u64,
}

/// What [`Attempts`] remembers of one message.
#[derive(Debug)]
struct Refusals {
    count: (u32, String),
    /// When it was first refused, in [`Attempts::next`] order.
    first: u64,
}

/// Messages remembered by [`Attempts`]; past this the oldest are forgotten.
const ATTEMPTS_REMEMBERED: usize = 10_000;

impl Attempts {
    pub fn key(destination: &str, body: &[u8]) -> u64 {
        let mut h = DefaultHasher::new();
        destination.hash(&mut h);
        body.hash(&mut h);
        h.finish()
    }

    /// Refusals so far, and the broker's last reason.
    pub fn get(&self, key: u64) -> Option<&(u32, String)> {
        self.seen.get(&key).map(|r| &r.count)
    }

    pub fn refused(&mut self, key: u64, reason: String) {
        let first = self.next;
        let entry = self.seen.entry(key).or_insert_with(|| Refusals { count: (0, String::new()), first });
        if entry.first == first {
            self.next += 1;
        }
        entry.count.0 = entry.count.0.saturating_add(1);
        entry.count.1 = reason;
        if self.seen.len() > ATTEMPTS_REMEMBERED {
            // Rare (over 10,000 distinct refused messages): a scan for the oldest is fine.
            let oldest = self.seen.iter().min_by_key(|(_, r)| r.first).map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                self.seen.remove(&oldest);
            }
        }
    }

    /// [`Attempts::get`] for a work's message, without hashing its body while nothing was
    /// ever refused (the usual case: this runs for every message).
    pub fn of(&self, work: &Work) -> Option<&(u32, String)> {
        if self.seen.is_empty() { None } else { self.get(work_key(work)) }
    }

    /// [`Attempts::settled`] for a work's message, as cheap as [`Attempts::of`].
    pub fn forget(&mut self, work: &Work) {
        if !self.seen.is_empty() {
            self.settled(work_key(work));
        }
    }

    pub fn settled(&mut self, key: u64) {
        self.seen.remove(&key);
    }
}

/// The key of a work's source message.
pub fn work_key(work: &Work) -> u64 {
    let m = &work.source.message;
    Attempts::key(&m.destination, m.body())
}

/// Takes the next batch from `ready`: what is there now, up to `max` messages, and a suspect
/// always alone.
pub fn next_batch(ready: &mut VecDeque<Work>, attempts: &Attempts, max: usize) -> Vec<Work> {
    // Its room taken at once: growing a vector of large items step by step costs more.
    let mut batch = Vec::with_capacity(ready.len().min(max));
    while let Some(front) = ready.front() {
        let suspect = attempts.of(front).is_some();
        if suspect && !batch.is_empty() {
            break;
        }
        batch.extend(ready.pop_front());
        if suspect || batch.len() >= max {
            break;
        }
    }
    batch
}

/// The route label of an outcome, for metrics.
pub fn route_of(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Delivered { route, .. } | Outcome::DeadLettered { route, .. } => route,
        Outcome::Absorbed(why) => why.route(),
    }
}

#[cfg(test)]
#[path = "settle_tests.rs"]
mod tests;
