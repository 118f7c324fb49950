//! The delivery engine: one task that takes each message from the client, runs it through
//! the pipeline, and owns its handle until a batch settles it. It never waits for the broker
//! itself: batches are futures it polls beside new messages, so receipts and deliveries never
//! wait behind each other.

use super::BridgeError;
use super::delivery::{Delivery, Outcome, Settled, Work};
use super::pipeline::{Absorbed, HeldChunk, Outgoing, Pipeline, Processed, dead_letter_frame};
use super::settle::{Attempts, Finished, Mode, Settler, next_batch, route_of, work_key};
use crate::config::DeliveryConfig;
use crate::envelope::penguiflow::stream::Abandoned;
use crate::stomp::{AckRef, Client, Event, Events, Message};
use crate::telemetry::{
    BatchFailed, DeadLettered, Delivered, Disconnected, LateReply, Metrics, Receipt, Reconnected,
    ReplyTimedOut, Unsettled,
};
use crate::wise_registry::member::WiseRegistry;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

type Batch = Pin<Box<dyn Future<Output = Finished> + Send>>;

/// What the engine does with advisory messages (discovery lives in `run`).
pub trait Discover {
    fn is_advisory(&self, message: &Message) -> bool;
    fn discover(
        &mut self,
        client: &Client,
        pipeline: &Pipeline,
        message: &Message,
    ) -> impl Future<Output = ()> + Send;
}

pub struct Engine {
    settler: Settler,
    pipeline: Pipeline,
    metrics: Arc<Metrics>,
    dead_letter: String,
    batch_max: usize,
    window: usize,
    max_attempts: u32,
    /// Work ready to settle, in arrival order.
    ready: VecDeque<Work>,
    /// Batches awaiting the broker.
    batches: FuturesUnordered<Batch>,
    /// Stream chunks held until their stream is whole, by message.
    held: HashMap<AckKey, Delivery>,
    attempts: Attempts,
    dropped_tx: mpsc::UnboundedSender<AckRef>,
    dropped: mpsc::UnboundedReceiver<AckRef>,
    /// The connection messages now come on; handles of earlier ones are released.
    epoch: u64,
    /// The Wise Agents registry, when configured (`[wiseagents.registry]`).
    registry: Option<Arc<WiseRegistry>>,
}

type AckKey = (u64, String);

fn ack_key(ack: &AckRef) -> AckKey {
    (ack.epoch, ack.message_id.clone())
}

impl Engine {
    pub fn new(settler: Settler, pipeline: Pipeline, metrics: Arc<Metrics>, config: &DeliveryConfig) -> Self {
        let (dropped_tx, dropped) = mpsc::unbounded_channel();
        Engine {
            settler,
            pipeline,
            metrics,
            dead_letter: config.dead_letter.clone(),
            batch_max: config.batch_max,
            window: config.batches_in_flight,
            max_attempts: config.max_attempts,
            ready: VecDeque::new(),
            batches: FuturesUnordered::new(),
            held: HashMap::new(),
            attempts: Attempts::default(),
            dropped_tx,
            dropped,
            epoch: 1,
            registry: None,
        }
    }

    /// With the Wise Agents registry (by default: none).
    pub fn with_registry(mut self, registry: Option<Arc<WiseRegistry>>) -> Self {
        self.registry = registry;
        self
    }

    /// Serves until shutdown or until the client ends.
    pub async fn serve(
        &mut self,
        mut events: Events,
        client: &Client,
        discovery: &mut impl Discover,
        shutdown: &CancellationToken,
    ) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            self.start_batches().await;
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                Some(done) = self.batches.next(), if !self.batches.is_empty() => self.finished(done),
                Some(ack) = self.dropped.recv() => self.unsettled(&ack, client).await,
                event = events.recv() => match event {
                    Some(Event::Message(m)) if discovery.is_advisory(&m) => {
                        discovery.discover(client, &self.pipeline, &m).await;
                    }
                    Some(Event::Message(m)) => self.take(m).await,
                    Some(other) => self.on_connection_event(other),
                    None => break,
                },
                _ = tick.tick() => {
                    self.expire_streams();
                    self.expire_asks(client);
                }
            }
        }
        // Messages still queued in `events` are unacknowledged: the broker redelivers them.
        drop(events);
    }

    /// Shutdown: settles what is ready and waits for the batches under way (bounded);
    /// held stream chunks and anything unsettled are released with the connection.
    pub async fn finish(&mut self, wait: Duration) {
        info!(
            ready = self.ready.len(),
            batches = self.batches.len(),
            "shutting down: settling messages in flight"
        );
        let settle = async {
            while !self.ready.is_empty() || !self.batches.is_empty() {
                self.start_batches().await;
                if let Some(done) = self.batches.next().await {
                    self.finished(done);
                }
            }
        };
        if tokio::time::timeout(wait, settle).await.is_err() {
            warn!("shutdown timeout: messages still in flight are left to the broker to redeliver");
        }
        self.release_all();
    }

    async fn start_batches(&mut self) {
        while self.batches.len() < self.window && !self.ready.is_empty() {
            let batch = next_batch(&mut self.ready, &self.attempts, self.batch_max);
            self.metrics.in_flight(batch.iter().map(|w| 1 + w.also.len() as i64).sum());
            let future = self.settler.start(batch).await;
            self.batches.push(Box::pin(future));
        }
    }

    /// One message from the broker: through the pipeline, then ready to settle (or held).
    async fn take(&mut self, message: Message) {
        if message.ack.epoch > self.epoch {
            self.new_epoch(message.ack.epoch);
        }
        let delivery = Delivery::new(message, self.dropped_tx.clone()).counted(self.metrics.clone());
        match self.pipeline.process(&delivery.message) {
            Ok(Processed::Held) => {
                self.held.insert(ack_key(delivery.ack_ref()), delivery);
            }
            Ok(Processed::Send(mut out)) => {
                let also = self.take_held(&out.also_ack);
                if let Err(error) = self.before_publish(&mut out).await {
                    for source in std::iter::once(delivery).chain(also) {
                        let work = self.dead_letter_work(source, &error);
                        self.ready_up(work);
                    }
                    return;
                }
                let destination = out.frame.header("destination").unwrap_or_default().to_owned();
                let outcome = Outcome::Delivered {
                    route: out.route,
                    destination,
                    correlated: out.correlated,
                    unmatched_reply: out.unmatched_reply,
                    ask: out.ask,
                };
                self.ready_up(Work { source: delivery, also, publish: vec![out.frame], outcome });
            }
            Ok(Processed::Absorbed { why, also_ack }) => {
                // Nothing to publish: acknowledged (with the chunks of a stream it completed).
                let also = self.take_held(&also_ack);
                self.ready_up(Work {
                    source: delivery,
                    also,
                    publish: Vec::new(),
                    outcome: Outcome::Absorbed(why),
                });
            }
            Err(BridgeError::Stream(abandoned)) => {
                self.held.insert(ack_key(delivery.ack_ref()), delivery);
                self.abandon(abandoned);
            }
            Err(BridgeError::Chunks { error, chunks }) => {
                let also = self.take_held(&chunks);
                let work = self.dead_letter_work(delivery, &error);
                self.ready_up(work);
                for chunk in also {
                    let work = self.dead_letter_work(chunk, &error);
                    self.ready_up(work);
                }
            }
            Err(error) => {
                let work = self.dead_letter_work(delivery, &error);
                self.ready_up(work);
            }
        }
    }

    /// The Wise Agents registry's part (issue 21): the frame's context made to exist, a
    /// proxied agent's answer routed by its collaboration. On failure the ask is taken back
    /// (the message is dead-lettered).
    async fn before_publish(&mut self, out: &mut Outgoing) -> Result<(), BridgeError> {
        let Some(registry) = &self.registry else { return Ok(()) };
        let checked = registry.before_publish(&mut out.frame).await;
        if let (Err(_), Some(ask)) = (&checked, &out.ask) {
            self.pipeline.forget_ask(ask);
        }
        Ok(checked?)
    }

    /// Queues work, unless the broker refused its output too often: then its dead letter.
    fn ready_up(&mut self, work: Work) {
        let refused = self.attempts.of(&work).filter(|(n, _)| *n >= self.max_attempts).cloned();
        let work = match refused {
            Some((attempts, reason)) if matches!(work.outcome, Outcome::Delivered { .. }) => {
                let error = BridgeError::Refused { attempts, reason };
                let Work { source, also, .. } = work;
                let mut dead = self.dead_letter_work(source, &error);
                dead.also = also;
                dead
            }
            _ => work,
        };
        self.ready.push_back(work);
    }

    fn take_held(&mut self, acks: &[AckRef]) -> Vec<Delivery> {
        acks.iter().filter_map(|a| self.held.remove(&ack_key(a))).collect()
    }

    fn dead_letter_work(&self, source: Delivery, error: &BridgeError) -> Work {
        let m = &source.message;
        let frame = dead_letter_frame(
            &self.dead_letter,
            &m.destination,
            m.frame.body.clone(),
            m.header("content-type"),
            error,
        );
        let route = format!("{}->dead_letter", source_label(&self.pipeline, &m.destination));
        let outcome = Outcome::DeadLettered { route, kind: error.kind(), reason: error.to_string() };
        Work { source, also: Vec::new(), publish: vec![frame], outcome }
    }

    /// Dead-letters every chunk of an abandoned stream that is still held.
    fn abandon(&mut self, abandoned: Abandoned<HeldChunk>) {
        let error = BridgeError::Stream(Abandoned { error: abandoned.error, tokens: Vec::new() });
        for chunk in abandoned.tokens {
            if let Some(delivery) = self.held.remove(&ack_key(&chunk.ack)) {
                let work = self.dead_letter_work(delivery, &error);
                self.ready_up(work);
            }
        }
    }

    fn expire_streams(&mut self) {
        for abandoned in self.pipeline.expire_streams(Instant::now()) {
            self.abandon(abandoned);
        }
    }

    /// Error answers to asks whose reply timeout passed: published with a receipt, apart from
    /// the batches (no consumed message stands behind them); and the pending-asks gauge.
    fn expire_asks(&mut self, client: &Client) {
        for out in self.pipeline.expire_asks(Instant::now()) {
            let (client, metrics) = (client.clone(), self.metrics.clone());
            tokio::spawn(async move {
                let destination = out.frame.header("destination").unwrap_or_default().to_owned();
                match client.send_confirmed(out.frame).await {
                    Ok(()) => ReplyTimedOut { route: &out.route, destination: &destination }.emit(&metrics),
                    Err(e) => {
                        warn!(error = %e, %destination, "cannot publish the error answer of a timed-out ask")
                    }
                }
            });
        }
        self.metrics.set_pending_asks(self.pipeline.pending_asks());
    }

    /// A batch's outcome: settled and reported, or left to the broker to redeliver.
    fn finished(&mut self, done: Finished) {
        let count: i64 = done.works.iter().map(|w| 1 + w.also.len() as i64).sum();
        self.metrics.in_flight(-count);
        match done.result {
            Ok(()) => {
                for work in done.works {
                    self.attempts.forget(&work);
                    report(&work, &self.metrics);
                    work.source.settle(Settled::Acked);
                    work.also.into_iter().for_each(|d| d.settle(Settled::Acked));
                }
            }
            Err(failure) => {
                let reason = failure.error.to_string();
                BatchFailed { messages: count as usize, mode: self.settler.mode().as_str(), reason: &reason }
                    .emit(&self.metrics);
                let refused = failure.error.broker_error().map(|e| e.to_string());
                for (i, work) in done.works.into_iter().enumerate() {
                    if self.settler.mode() == Mode::Transaction {
                        // Rolled back: the request was not published; its redelivery asks again.
                        self.forget_ask(&work);
                    }
                    let blamed = failure.culprit.is_none_or(|c| c == i);
                    if let Some(reason) = refused.as_ref().filter(|_| blamed) {
                        self.attempts.refused(work_key(&work), reason.clone());
                    }
                    self.metrics.count_retried(route_of(&work.outcome));
                    // Every failure ends the connection (an ERROR, a loss, or a reset after a
                    // missing receipt): the broker redelivers.
                    work.source.settle(Settled::Released);
                    work.also.into_iter().for_each(|d| d.settle(Settled::Released));
                }
            }
        }
        self.metrics.set_pending_asks(self.pipeline.pending_asks());
    }

    /// A handle dropped without settlement: if its connection is still the current one, the
    /// only way to give the message back is to reset the connection.
    async fn unsettled(&mut self, ack: &AckRef, client: &Client) {
        Unsettled { message_id: &ack.message_id }.emit(&self.metrics);
        if ack.epoch >= self.epoch {
            client.reset("a message was left unsettled").await;
        }
    }

    fn on_connection_event(&mut self, event: Event) {
        match event {
            Event::ConnectionLost(e) => Disconnected { reason: &e.to_string() }.emit(&self.metrics),
            Event::Reconnected { epoch } => {
                self.new_epoch(epoch);
                Reconnected.emit(&self.metrics);
            }
            Event::ReconnectFailed(e) => warn!(error = %e, "reconnect attempt failed"),
            Event::BrokerError(e) => warn!(error = %e, "the broker sent an ERROR"),
            Event::Message(_) => {}
        }
    }

    /// A new connection: what was held from earlier ones is released (the broker redelivers
    /// it), and so is work not yet started.
    fn new_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
        let stale: Vec<AckKey> = self.held.keys().filter(|(e, _)| *e < epoch).cloned().collect();
        for key in stale {
            if let Some(d) = self.held.remove(&key) {
                d.settle(Settled::Released);
            }
        }
        self.pipeline.forget_streams();
        let (stale, current): (Vec<Work>, Vec<Work>) =
            self.ready.drain(..).partition(|w| w.source.ack_ref().epoch < epoch);
        self.ready = current.into();
        for work in stale {
            // Never started: its request was not published; its redelivery asks again.
            self.forget_ask(&work);
            work.source.settle(Settled::Released);
            work.also.into_iter().for_each(|d| d.settle(Settled::Released));
        }
    }

    /// The ask `work` would have made, taken back: its request was not published.
    fn forget_ask(&self, work: &Work) {
        if let Outcome::Delivered { ask: Some(ask), .. } = &work.outcome {
            self.pipeline.forget_ask(ask);
        }
    }

    fn release_all(&mut self) {
        for (_, d) in self.held.drain() {
            d.settle(Settled::Released);
        }
        for work in self.ready.drain(..) {
            work.source.settle(Settled::Released);
            work.also.into_iter().for_each(|d| d.settle(Settled::Released));
        }
    }
}

/// The log line and metrics of a settled message.
fn report(work: &Work, metrics: &Metrics) {
    let m = &work.source.message;
    match &work.outcome {
        Outcome::Delivered { route, destination, correlated, unmatched_reply, .. } => Delivered {
            route,
            source: &m.destination,
            destination,
            message_id: &m.ack.message_id,
            latency: work.source.received.elapsed(),
            correlated: *correlated,
            unmatched_reply: *unmatched_reply,
        }
        .emit(metrics),
        Outcome::Absorbed(Absorbed::Receipt { route }) => {
            Receipt { route, source: &m.destination, message_id: &m.ack.message_id }.emit(metrics)
        }
        Outcome::Absorbed(Absorbed::LateReply { route, ask }) => {
            LateReply { route, source: &m.destination, message_id: &m.ack.message_id, ask }.emit(metrics)
        }
        Outcome::DeadLettered { route, kind, reason } => {
            DeadLettered { route, source: &m.destination, message_id: &m.ack.message_id, kind, reason }
                .emit(metrics)
        }
    }
}

/// The framework a destination belongs to, for bounded metric labels.
fn source_label(pipeline: &Pipeline, destination: &str) -> &'static str {
    match pipeline.router.classify(destination) {
        Some(crate::routing::Source::WiseAgents { .. }) => "wiseagents",
        Some(crate::routing::Source::Ingress(fw)) => fw.as_str(),
        None => "unknown",
    }
}
