//! The delivery engine: one task that takes each message from the client, runs it through
//! the pipeline, and owns its handle until a batch settles it. It never waits for the broker
//! itself: batches are futures it polls beside new messages, so receipts and deliveries never
//! wait behind each other.

use super::MessageError;
use super::delivery::{Delivery, Outcome, Tally, Work};
use super::pipeline::{Absorbed, Consumed, Now, Outgoing, Pipeline, Processed};
use super::settle::{Attempts, Finished, Settler};
use crate::a2a::call::{Call, Called, Calls, failed_answer};
use crate::a2a::error::A2aFailure;
use crate::config::DeliveryConfig;
use crate::envelope::Clock;
use crate::routing::{A2A_AGENT_HEADER, A2A_ANSWERS, A2A_CALL_PREFIX};
use crate::stomp::{AckRef, Client, Event, Events, Message};
use crate::telemetry::Event as _;
use crate::telemetry::trace::Times;
use crate::telemetry::{ErrorAnswerUnpublished, Metrics, ReplyTimedOut};
use crate::wise_registry::member::WiseFrame;
use crate::wise_registry::stage::{Check, Checked, Checks, source_key};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use links::Links;
use side::Side;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

type Batch = Pin<Box<dyn Future<Output = Finished> + Send>>;

/// What the engine does with advisory messages (discovery lives in `run`).
pub trait Discover {
    fn is_advisory(&self, message: &Message) -> bool;
    fn discover(&mut self, pipeline: &mut Pipeline, message: &Message);
}

pub struct Engine {
    settler: Settler,
    pipeline: Pipeline,
    metrics: Arc<Metrics>,
    dead_letter: String,
    batch_max: usize,
    window: usize,
    /// Messages the batches under way may hold at most (`Settlement::unconfirmed_cap`), and
    /// how many they hold.
    unconfirmed_max: usize,
    in_batches: usize,
    max_attempts: u32,
    /// Work ready to settle, in arrival order.
    ready: VecDeque<Work>,
    /// Batches awaiting the broker.
    batches: FuturesUnordered<Batch>,
    attempts: Attempts,
    dropped_tx: mpsc::UnboundedSender<AckRef>,
    dropped: mpsc::UnboundedReceiver<AckRef>,
    /// The connection messages now come on; handles of earlier ones are released.
    epoch: u64,
    /// Where SENDs that settle nothing go (the error answers of timed-out asks).
    publisher: Client,
    /// The handles alive now; with a `budget`, no message is taken while it is reached.
    holding: Arc<AtomicUsize>,
    budget: Option<usize>,
    /// Which of its connections are up.
    links: Links,
    /// The Wise Agents registry's stage, when configured (`[wiseagents.registry]`), and the
    /// work whose frame it is checking.
    registry: Side<Checks>,
    /// How the handles taken so far ended.
    tally: Tally,
    /// The ids of the asks the pipeline makes.
    ids: Ids,
    /// Configuration reloads to follow (`engine/reconfigure.rs`).
    reloads: Option<super::reload::Reloads>,
    /// Shutting down: a failed batch is given back to the broker, not published again.
    stopping: bool,
    /// Where answers to requests asked for callers over HTTP go (`[a2a]`, `[mcp]`).
    relay: Option<Arc<crate::relay::Relay>>,
    /// The stage that calls A2A agents (proxied agents with `protocol = "a2a"`), and the work
    /// whose request an agent is being asked.
    calls: Side<Calls>,
}

/// Where the engine takes the ids the pipeline gives new asks.
pub type Ids = Box<dyn FnMut() -> uuid::Uuid + Send>;

/// The time the pipeline is handed: tokio's clock (so that a test with a paused clock moves
/// it), and the wall clock for the deadlines messages carry.
fn now(ids: &mut Ids) -> Now<'_> {
    Now {
        at: tokio::time::Instant::now().into_std(),
        unix: crate::envelope::SystemClock.unix(),
        ids: &mut **ids,
    }
}

impl Engine {
    /// `budget`: the most handles held at once, past which the engine takes no message (so the
    /// client stops reading the consuming socket). Only where nothing the engine waits for
    /// comes on that socket: receipts on a publishing connection of their own.
    pub fn new(
        settler: Settler,
        pipeline: Pipeline,
        metrics: Arc<Metrics>,
        config: &DeliveryConfig,
        publisher: Client,
        budget: Option<usize>,
    ) -> Self {
        let (dropped_tx, dropped) = mpsc::unbounded_channel();
        Engine {
            settler,
            pipeline,
            metrics,
            dead_letter: config.dead_letter.clone(),
            batch_max: config.batch_max,
            window: config.batches_in_flight,
            unconfirmed_max: usize::MAX,
            in_batches: 0,
            max_attempts: config.max_attempts,
            ready: VecDeque::new(),
            batches: FuturesUnordered::new(),
            attempts: Attempts::default(),
            dropped_tx,
            dropped,
            epoch: 1,
            publisher,
            holding: Arc::new(AtomicUsize::new(0)),
            budget,
            links: Links::Up,
            registry: Side::new(None),
            tally: Tally::default(),
            ids: Box::new(crate::envelope::new_uuid7),
            reloads: None,
            stopping: false,
            relay: None,
            calls: Side::new(None),
        }
    }

    /// The router the pipeline routes with.
    pub fn router(&self) -> &crate::routing::Router {
        self.pipeline.router()
    }

    /// Whether the engine may take another message now: under its budget, with at most half
    /// of it waiting for the registry (so that traffic that needs no registry still flows
    /// while Redis is away).
    fn has_room(&self) -> bool {
        let staged = self.registry.len() + self.calls.len();
        self.budget.is_none_or(|b| self.holding.load(Ordering::Relaxed) < b && staged < (b / 2).max(1))
    }

    /// With at most `cap` messages in the batches under way (by default: as many as they hold).
    pub fn with_unconfirmed_cap(mut self, cap: Option<usize>) -> Self {
        self.unconfirmed_max = cap.unwrap_or(usize::MAX).max(1);
        self
    }

    /// With the Wise Agents registry's stage (by default: none).
    pub fn with_registry(mut self, registry: Option<Checks>) -> Self {
        self.registry = Side::new(registry);
        self
    }

    /// With the relay of the requests asked for callers over HTTP, to hand their answers to
    /// (by default: none).
    pub fn with_relay(mut self, relay: Option<Arc<crate::relay::Relay>>) -> Self {
        self.relay = relay;
        self
    }

    /// With the stage that calls A2A agents (by default: none).
    pub fn with_calls(mut self, calls: Option<Calls>) -> Self {
        self.calls = Side::new(calls);
        self
    }

    /// Serves until shutdown or until the client ends.
    pub async fn serve(
        &mut self,
        mut events: Events,
        mut publishing: Option<Events>,
        client: &Client,
        discovery: &mut impl Discover,
        shutdown: &CancellationToken,
    ) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            self.start_batches().await;
            let room = self.has_room();
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                // Before the batches: a steady flow of confirmations must not hold back the
                // publishing connection's return, which readiness waits for.
                Some(event) = next_event(&mut publishing) => self.on_publishing_event(event),
                Some(done) = self.batches.next(), if !self.batches.is_empty() => self.finished(done),
                Some((checked, work)) = self.registry.next() => self.checked(checked, work),
                Some((called, work)) = self.calls.next() => self.called(called, work),
                Some(ack) = self.dropped.recv() => self.unsettled(&ack, client).await,
                Some(reload) = next_reload(&mut self.reloads) => self.reconfigure(reload).await,
                event = events.recv(), if room => match event {
                    Some(Event::Message(m)) if discovery.is_advisory(&m) => {
                        discovery.discover(&mut self.pipeline, &m);
                    }
                    Some(Event::Message(m)) => self.take(m).await,
                    Some(other) => self.on_consuming_event(other),
                    None => break,
                },
                _ = tick.tick() => {
                    self.expire_streams();
                    self.expire_asks();
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
        self.stopping = true;
        let settle = async {
            // Calls to A2A agents under way are awaited too: their requests were sent, and
            // released now they would be sent again by the next bridge.
            // So are the registry's checks (an A2A answer may need one).
            let staged = |e: &Self| !e.calls.is_empty() || !e.registry.is_empty();
            while !self.ready.is_empty() || !self.batches.is_empty() || staged(self) {
                self.start_batches().await;
                if self.batches.is_empty() && !staged(self) {
                    break; // the publishing connection is down: what is ready is released
                }
                tokio::select! {
                    // A failed batch is given back by the DISCONNECT that follows.
                    Some(done) = self.batches.next(), if !self.batches.is_empty() => self.finished(done),
                    Some((called, work)) = self.calls.next(), if !self.calls.is_empty() => self.called(called, work),
                    Some((checked, work)) = self.registry.next(), if !self.registry.is_empty() => self.checked(checked, work),
                    else => break,
                }
            }
        };
        if tokio::time::timeout(wait, settle).await.is_err() {
            warn!("shutdown timeout: messages still in flight are left to the broker to redeliver");
        }
        self.release_all();
        let Tally { acked, released, unsettled } = self.tally;
        info!(acked, released, unsettled, "how the messages taken since the start were settled");
    }

    /// One message from the broker: through the pipeline, then ready to settle.
    async fn take(&mut self, message: Message) {
        if self.retired(&message) {
            return;
        }
        if message.ack.epoch > self.epoch {
            self.new_epoch(message.ack.epoch);
        }
        let delivery = Delivery::new(message, self.dropped_tx.clone())
            .counted(self.metrics.clone())
            .held_in(self.holding.clone());
        let processed = self.pipeline.process(Consumed::of(&delivery.message), &mut now(&mut self.ids));
        let work = match processed {
            Ok(Processed::Send(mut out)) => {
                let outcome = delivered(&mut out);
                let work = Work { source: delivery, stream: out.stream, publish: Vec::new(), outcome };
                if out.frame.header("destination").is_some_and(|d| d.starts_with(A2A_CALL_PREFIX)) {
                    return self.call_a2a(work, out.frame, out.reply_deadline);
                }
                match self.registry.stage().and_then(|r| r.needs(&out.frame)) {
                    Some(wise) => return self.check_in_registry(work, out.frame, wise),
                    None => Work { publish: vec![out.frame], ..work },
                }
            }
            // Nothing to publish: acknowledged (a chunk's text is kept by the pipeline; the
            // answer to an A2A task or an MCP call is handed to it, which waits in memory).
            Ok(Processed::Absorbed { why, stream }) => {
                if let (Absorbed::Task { answer, .. }, Some(relay)) = (&why, &self.relay) {
                    relay.answer(answer.clone());
                }
                Work { source: delivery, stream, publish: Vec::new(), outcome: Outcome::Absorbed(why) }
            }
            Ok(Processed::Chunk) => {
                let route =
                    format!("{}->stream", source_label(&self.pipeline, &delivery.message.destination));
                let outcome = Outcome::Absorbed(Absorbed::Chunk { route });
                Work { source: delivery, stream: None, publish: Vec::new(), outcome }
            }
            Err(MessageError::StreamFailed { error, body, stream }) => {
                let mut work = self.dead_letter_work(delivery, &error, Some(body), None);
                work.stream = Some(stream);
                work
            }
            Err(error) => self.dead_letter_work(delivery, &error, None, None),
        };
        self.ready_up(work);
    }

    /// Hands `frame`, what `work` publishes, to the registry's stage (the context made to
    /// exist, a proxied agent's answer routed by its collaboration); the work waits here for
    /// the result.
    fn check_in_registry(&mut self, mut work: Work, frame: crate::stomp::Frame, wise: WiseFrame) {
        work.note("hold", || REGISTRY_HOLD.to_owned());
        let m = &work.source.message;
        let source = source_key(&m.destination, &m.frame.body);
        if let Some(work) = self.registry.park(work, |id| Check { id, frame, wise, source }) {
            return self.ready_up(work);
        }
        self.metrics.registry.set_held(self.registry.len());
    }

    /// The registry's result for a work: ready to publish, or dead-lettered with the
    /// registry's reason (its ask taken back). Work of a connection gone is released.
    fn checked(&mut self, Checked { result, .. }: Checked, mut work: Work) {
        self.metrics.registry.set_held(self.registry.len());
        if let Some(hop) = work.outcome.hop_mut() {
            hop.waited(REGISTRY_HOLD);
        }
        if work.source.ack_ref().epoch < self.epoch {
            self.forget_ask(&work);
            return self.release(work);
        }
        match result {
            Ok(frame) => {
                if let Outcome::Delivered { destination, .. } = &mut work.outcome {
                    frame.header("destination").unwrap_or_default().clone_into(destination);
                }
                work.publish.push(frame);
                self.ready_up(work);
            }
            Err(error) => {
                self.forget_ask(&work);
                let Work { source, stream, mut outcome, .. } = work;
                let error = MessageError::Registry(error);
                let mut dead = self.dead_letter_work(source, &error, None, outcome.take_hop());
                dead.stream = stream;
                self.ready_up(dead);
            }
        }
    }

    /// Hands `request`, what `work` asks an A2A agent, to the call stage, bounded by the ask's
    /// `deadline`; the work waits here for the agent's answer, the request frame kept (its
    /// token matches the answer).
    fn call_a2a(
        &mut self,
        mut work: Work,
        request: crate::stomp::Frame,
        deadline: Option<std::time::Instant>,
    ) {
        let destination = request.header("destination").unwrap_or_default();
        let agent = destination.strip_prefix(A2A_CALL_PREFIX).unwrap_or_default().to_owned();
        let m = &work.source.message;
        let message_id = source_key(&m.destination, &m.frame.body);
        let deadline = deadline.map(tokio::time::Instant::from_std);
        let body = request.body.clone();
        let traceparent = request.header("traceparent").map(str::to_owned);
        work.publish = vec![request];
        let job = |id| Call { id, agent: agent.clone(), request: body, message_id, deadline, traceparent };
        if let Some(mut work) = self.calls.park(work, job) {
            let error = MessageError::A2a(A2aFailure::NoStage { agent });
            let hop = work.outcome.take_hop();
            let dead = self.dead_letter_work(work.source, &error, None, hop);
            self.ready_up(dead);
        }
    }

    /// An A2A agent's answer to a work's request, through the pipeline as the asker's answer;
    /// a call that got none also dead-letters the request, with why. Work of a connection gone
    /// is released (its redelivery calls again).
    fn called(&mut self, Called { answer, failure, attempts, .. }: Called, mut work: Work) {
        if attempts > 1 {
            work.note("retry", || format!("the A2A call took {attempts} attempts"));
        }
        let Some(request) = work.publish.pop() else { return self.release(work) };
        if work.source.ack_ref().epoch < self.epoch {
            self.forget_ask(&work);
            return self.release(work);
        }
        // The call was made: the ask's hop is told now (its answer's outcome replaces it).
        if let Some(hop) = work.outcome.hop_mut() {
            self.metrics.traces.record(hop, Times::since(work.source.received.elapsed()));
        }
        let (answered, failure) = match self.answer_of(&request, answer) {
            Ok(processed) => (processed, failure),
            Err(error) => {
                let reason = A2aFailure::Unreadable(error.to_string());
                let failed = self.answer_of(&request, failed_answer(&reason.to_string()));
                (failed.unwrap_or(Processed::Chunk), Some(reason))
            }
        };
        let (publish, outcome) = match answered {
            Processed::Send(mut out) => {
                let outcome = delivered(&mut out);
                (Some(out.frame), outcome)
            }
            Processed::Absorbed { why, .. } => (None, Outcome::Absorbed(why)),
            Processed::Chunk => (None, work.outcome),
        };
        let mut work = match failure {
            None => Work { outcome, ..work },
            Some(reason) => {
                let mut outcome = outcome;
                let hop = outcome.take_hop();
                self.dead_letter_work(work.source, &MessageError::A2a(reason), None, hop)
            }
        };
        let Some(frame) = publish else { return self.ready_up(work) };
        match self.registry.stage().and_then(|r| r.needs(&frame)) {
            Some(wise) => self.check_in_registry(work, frame, wise),
            None => {
                work.publish.insert(0, frame);
                self.ready_up(work)
            }
        }
    }

    /// The pipeline's decision on an A2A agent's answer (`answer`, a `SendMessageResponse`'s
    /// JSON) to `request`: matched by the token the request frame carries.
    fn answer_of(
        &mut self,
        request: &crate::stomp::Frame,
        answer: bytes::Bytes,
    ) -> Result<Processed, MessageError> {
        let agent =
            request.header("destination").and_then(|d| d.strip_prefix(A2A_CALL_PREFIX)).unwrap_or_default();
        let mut frame = crate::stomp::Frame::new(crate::stomp::Command::Send)
            .with(A2A_AGENT_HEADER, agent)
            .with("content-type", "application/json")
            .with_body(answer);
        // Not the hop count: an answer starts again at 0, as every proxied agent's does.
        for header in ["correlation-id", "traceparent"] {
            if let Some(value) = request.header(header) {
                frame = frame.with(header, value);
            }
        }
        self.pipeline.process(Consumed { destination: A2A_ANSWERS, frame: &frame }, &mut now(&mut self.ids))
    }

    /// Streams given up on for age: their askers' error answers, published apart from the
    /// batches (their chunks were acknowledged as they came).
    fn expire_streams(&mut self) {
        for out in self.pipeline.expire_streams(&mut now(&mut self.ids)) {
            self.publish_apart(out, |out, metrics| {
                if let Some(hop) = &out.hop {
                    metrics.traces.record(hop, Times::since(std::time::Duration::ZERO));
                }
            });
        }
    }

    /// Error answers to asks whose reply timeout passed: published with a receipt, apart from
    /// the batches (no consumed message stands behind them); and the pending-asks gauge.
    fn expire_asks(&mut self) {
        for out in self.pipeline.expire_asks(&mut now(&mut self.ids)) {
            self.publish_apart(out, |out, metrics| {
                let destination = out.frame.header("destination").unwrap_or_default();
                ReplyTimedOut { route: &out.route, destination, hop: out.hop.as_deref() }.emit(metrics)
            });
        }
        self.metrics.set_pending_asks(self.pipeline.pending_asks());
    }

    /// Publishes an error answer with a receipt, on its own (no consumed message stands
    /// behind it); `done` reports it once confirmed. One that cannot be published is logged.
    fn publish_apart(&self, out: Outgoing, done: impl FnOnce(&Outgoing, &Metrics) + Send + 'static) {
        let (client, metrics) = (self.publisher.clone(), self.metrics.clone());
        tokio::spawn(async move {
            match client.send_confirmed(out.frame.clone()).await {
                Ok(()) => done(&out, &metrics),
                Err(e) => {
                    let destination = out.frame.header("destination").unwrap_or_default();
                    let error = e.to_string();
                    ErrorAnswerUnpublished { route: &out.route, destination, error: &error }.emit(&metrics);
                    // Its trace ends too, with why (its ask's span would stay open otherwise).
                    if let Some(mut hop) = out.hop {
                        hop.error = Some(("unpublished", error.into()));
                        metrics.traces.record(&hop, Times::since(std::time::Duration::ZERO));
                    }
                }
            }
        });
    }
}

/// The next event of the publishing connection, if there is one (never, otherwise).
async fn next_event(events: &mut Option<Events>) -> Option<Event> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// The next configuration reload, if the engine follows them (never, otherwise).
async fn next_reload(reloads: &mut Option<super::reload::Reloads>) -> Option<super::reload::Reload> {
    match reloads {
        Some(reloads) => reloads.requests.recv().await,
        None => std::future::pending().await,
    }
}

/// The note of a message that waits for the Wise Agents registry.
const REGISTRY_HOLD: &str = "waiting for the Wise Agents registry (Redis)";

/// The outcome of publishing `out`: its route, the ask it makes and the ask it answers (if
/// any) are taken.
fn delivered(out: &mut Outgoing) -> Outcome {
    Outcome::Delivered {
        route: std::mem::take(&mut out.route),
        destination: out.frame.header("destination").unwrap_or_default().to_owned(),
        correlated: out.correlated,
        unmatched_reply: out.unmatched_reply,
        ask: out.ask.take(),
        answers: out.answers.take(),
        hop: out.hop.take(),
    }
}

/// The framework a destination belongs to, for bounded metric labels.
fn source_label(pipeline: &Pipeline, destination: &str) -> &'static str {
    match pipeline.router().classify(destination) {
        Some(crate::routing::Source::WiseAgents { .. }) => "wiseagents",
        Some(crate::routing::Source::Ingress(fw)) => fw.as_str(),
        None => "unknown",
    }
}

mod links;
mod reconfigure;
mod settling;
mod side;
