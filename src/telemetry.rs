//! What an operator can observe. Each event is one type, an [`Event`]: emitting it counts it
//! in its metrics (and records a message's hop for its trace), then says its log line with
//! the same labels, within a budget when it can come in floods, so logs, metrics and traces
//! never disagree. `/metrics` renders [`Metrics`] in Prometheus text format.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
// tokio's clock (the system's, except in a test that pauses it): a stall is timed as the
// receipt timeout that began it.
use tokio::time::Instant;
use tracing::{debug, info, warn};

pub mod a2a;
pub mod a2a_calls;
pub mod broker;
#[cfg(test)]
pub(crate) mod capture;
pub mod event;
pub mod heap;
pub mod limit;
pub mod mcp;
pub mod mirror;
pub mod push;
pub mod registry;
pub mod reload;
mod render;
pub mod served;
pub mod trace;

pub use event::Event;

/// The outcomes a message can have, each a counter per route.
const OUTCOMES: [&str; 8] = [
    "delivered",
    "dead_lettered",
    "retried",
    "receipt",
    "late_reply",
    "repeated_answer",
    "reply_timeout",
    "chunk",
];

/// One route's counters, indexed like [`OUTCOMES`].
type RouteCounters = [AtomicU64; OUTCOMES.len()];

/// Upper bounds of the latency histogram, seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

/// Counters and gauges, shared by the pipeline and the HTTP endpoint.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Per route; the lock is written only the first time a route is seen (a handful of
    /// times), so counting is a shared read and an atomic add.
    messages: RwLock<HashMap<String, RouteCounters>>,
    dead_letters: RwLock<HashMap<&'static str, AtomicU64>>,
    reconnects: AtomicU64,
    batch_failures: AtomicU64,
    unsettled: AtomicU64,
    in_flight: AtomicI64,
    unacknowledged: AtomicI64,
    /// Batches the broker has not confirmed within the receipt timeout on a live connection.
    stalls: Mutex<Stalls>,
    stalls_total: AtomicU64,
    latency_buckets: [AtomicU64; BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
    connected: AtomicBool,
    subscribed: AtomicBool,
    late_replies: AtomicU64,
    repeated_answers: AtomicU64,
    unmatched_replies: AtomicU64,
    receipts: AtomicU64,
    reply_timeouts: AtomicU64,
    pending_asks: AtomicI64,
    /// Mirror mode's counters.
    pub mirror: mirror::MirrorMetrics,
    /// Configuration reloads (`SIGHUP`).
    pub reload: reload::ReloadMetrics,
    /// The Wise Agents registry's stage.
    pub registry: registry::RegistryMetrics,
    /// The broker addresses the connections are on, and failovers.
    pub broker: broker::BrokerMetrics,
    /// The A2A service's tasks.
    pub a2a: a2a::A2aMetrics,
    /// The A2A tasks' push notifications.
    pub push: push::PushMetrics,
    /// The calls to A2A agents.
    pub a2a_calls: a2a_calls::A2aCallMetrics,
    /// The MCP server's tool calls.
    pub mcp: mcp::McpMetrics,
    /// Conversations as traces: the page's and the OTLP exporter's.
    pub traces: trace::Traces,
    /// The log lines of events that can come in floods.
    logs: limit::LogLimits,
}

/// The stalls open now: an id each, and since when its batch has waited for the broker.
#[derive(Debug, Default)]
struct Stalls {
    next: u64,
    open: Vec<(u64, Instant)>,
}

impl Metrics {
    fn count_message(&self, route: &str, outcome: &'static str) {
        let i = OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(0);
        {
            let map = self.messages.read().unwrap_or_else(|e| e.into_inner());
            if let Some(counters) = map.get(route) {
                counters[i].fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let mut map = self.messages.write().unwrap_or_else(|e| e.into_inner());
        map.entry(route.to_owned()).or_default()[i].fetch_add(1, Ordering::Relaxed);
    }

    fn count_dead_letter(&self, kind: &'static str) {
        {
            let map = self.dead_letters.read().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = map.get(kind) {
                n.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let mut map = self.dead_letters.write().unwrap_or_else(|e| e.into_inner());
        map.entry(kind).or_default().fetch_add(1, Ordering::Relaxed);
    }

    /// A message of a batch that did not settle (the broker redelivers it).
    pub fn count_retried(&self, route: &str) {
        self.count_message(route, "retried");
    }

    fn observe_latency(&self, latency: Duration) {
        let secs = latency.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros.fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
    }

    /// Messages being processed now.
    pub fn in_flight(&self, delta: i64) {
        self.in_flight.fetch_add(delta, Ordering::Relaxed);
    }

    /// Messages received and not yet acknowledged or given back.
    pub fn unacknowledged(&self, delta: i64) {
        self.unacknowledged.fetch_add(delta, Ordering::Relaxed);
    }

    /// How long the batch that has waited longest for the broker's confirmation has waited,
    /// if one has waited past the receipt timeout.
    pub fn stalled_for(&self) -> Option<Duration> {
        let stalls = self.stalls.lock().unwrap_or_else(|e| e.into_inner());
        stalls.open.iter().map(|(_, since)| since.elapsed()).max()
    }

    pub fn set_connected(&self, connected: bool) {
        self.connected.store(connected, Ordering::SeqCst);
    }

    pub fn set_subscribed(&self, subscribed: bool) {
        self.subscribed.store(subscribed, Ordering::SeqCst);
    }

    /// Whether every configured subscription was made (a reload waits for it).
    pub fn is_subscribed(&self) -> bool {
        self.subscribed.load(Ordering::SeqCst)
    }

    /// Asks waiting for their answer now.
    pub fn set_pending_asks(&self, n: usize) {
        self.pending_asks.store(i64::try_from(n).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    /// Ready: connected to the broker with every subscription in place, and the broker
    /// confirming what the bridge publishes.
    pub fn is_ready(&self) -> bool {
        self.readiness().is_ok()
    }

    /// [`Metrics::is_ready`], with the reason when not.
    pub fn readiness(&self) -> Result<(), String> {
        if !(self.connected.load(Ordering::SeqCst) && self.subscribed.load(Ordering::SeqCst)) {
            return Err("not connected or not subscribed".into());
        }
        self.mirror.readiness()?;
        self.registry.readiness()?;
        match self.stalled_for() {
            Some(waited) => Err(format!(
                "publishing stalled: no confirmation from the broker for {} s; holding {} messages",
                waited.as_secs(),
                self.unacknowledged.load(Ordering::Relaxed)
            )),
            None => Ok(()),
        }
    }

    /// Counter value for a route and outcome (for tests and the summary log).
    pub fn messages(&self, route: &str, outcome: &str) -> u64 {
        let Some(i) = OUTCOMES.iter().position(|o| *o == outcome) else { return 0 };
        let map = self.messages.read().unwrap_or_else(|e| e.into_inner());
        map.get(route).map_or(0, |c| c[i].load(Ordering::Relaxed))
    }
}

fn escape(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A message translated and delivered (the broker confirmed it), then acknowledged.
pub struct Delivered<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub destination: &'a str,
    pub message_id: &'a str,
    pub latency: Duration,
    pub correlated: bool,
    /// A reply that matched no pending ask (delivered uncorrelated).
    pub unmatched_reply: bool,
    /// Its way through the bridge (traces on).
    pub hop: Option<&'a trace::Hop>,
}

impl Event for Delivered<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        if self.unmatched_reply {
            metrics.unmatched_replies.fetch_add(1, Ordering::Relaxed);
        }
        metrics.count_message(self.route, "delivered");
        metrics.observe_latency(self.latency);
        if let Some(hop) = self.hop {
            metrics.traces.record(hop, trace::Times::since(self.latency));
        }
    }

    fn log(&self, _: &(), _: u64) {
        debug!(
            outcome = "delivered",
            route = self.route,
            source = self.source,
            destination = self.destination,
            message_id = self.message_id,
            latency_ms = self.latency.as_secs_f64() * 1e3,
            correlated = self.correlated,
            unmatched_reply = self.unmatched_reply,
            "message delivered"
        );
    }
}

/// An answer that came after its ask's reply timeout (the asker already had an error
/// answer): dropped, acknowledged.
pub struct LateReply<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub message_id: &'a str,
    pub ask: &'a str,
}

impl Event for LateReply<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "late_reply");
        metrics.late_replies.fetch_add(1, Ordering::Relaxed);
    }

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.late_replies)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(
            outcome = "late_reply",
            route = self.route,
            source = self.source,
            message_id = self.message_id,
            ask = self.ask,
            left_out,
            "an answer came after its reply timeout: dropped"
        );
    }
}

/// An answer to an ask that was answered already (its framework sent it again): dropped,
/// acknowledged, so that the asker gets one answer.
pub struct RepeatedAnswer<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub message_id: &'a str,
    pub ask: &'a str,
}

impl Event for RepeatedAnswer<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "repeated_answer");
        metrics.repeated_answers.fetch_add(1, Ordering::Relaxed);
    }

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.repeated_answers)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(
            outcome = "repeated_answer",
            route = self.route,
            source = self.source,
            message_id = self.message_id,
            ask = self.ask,
            left_out,
            "an answer came again for an ask answered already: dropped"
        );
    }
}

/// A receipt (VOX `message_acknowledged`): consumed, not forwarded; the ask it names, if
/// any, stays pending for its answer.
pub struct Acknowledgement<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub message_id: &'a str,
}

impl Event for Acknowledgement<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "receipt");
        metrics.receipts.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {
        debug!(
            outcome = "receipt",
            route = self.route,
            source = self.source,
            message_id = self.message_id,
            "a receipt consumed (not an answer)"
        );
    }
}

/// A Wise Agents answer handed to the A2A task it answers (the task reports how it ended).
pub struct TaskAnswered<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub message_id: &'a str,
    pub task: &'a str,
}

impl Event for TaskAnswered<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "delivered");
    }

    fn log(&self, _: &(), _: u64) {
        debug!(
            outcome = "delivered",
            route = self.route,
            source = self.source,
            message_id = self.message_id,
            task = self.task,
            "an answer handed to its A2A task"
        );
    }
}

/// A stream chunk taken in: acknowledged, its text kept until its stream is whole.
pub struct ChunkTaken<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub message_id: &'a str,
}

impl Event for ChunkTaken<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "chunk");
    }

    fn log(&self, _: &(), _: u64) {
        debug!(
            outcome = "chunk",
            route = self.route,
            source = self.source,
            message_id = self.message_id,
            "stream chunk taken in"
        );
    }
}

/// An ask with no answer within its reply timeout: the error answer was published.
pub struct ReplyTimedOut<'a> {
    pub route: &'a str,
    pub destination: &'a str,
    /// The error answer's way (traces on): it ends the ask's `invoke_agent` span.
    pub hop: Option<&'a trace::Hop>,
}

impl Event for ReplyTimedOut<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "reply_timeout");
        metrics.reply_timeouts.fetch_add(1, Ordering::Relaxed);
        if let Some(hop) = self.hop {
            metrics.traces.record(hop, trace::Times::since(Duration::ZERO));
        }
    }

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.reply_timeouts)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(
            outcome = "reply_timeout",
            route = self.route,
            destination = self.destination,
            left_out,
            "no answer within the reply timeout: error answer sent"
        );
    }
}

/// A message that could not be parsed, translated or routed, sent to the dead-letter
/// destination with the reason, then acknowledged.
pub struct DeadLettered<'a> {
    pub route: &'a str,
    pub source: &'a str,
    pub message_id: &'a str,
    pub kind: &'static str,
    pub reason: &'a str,
    /// Its way (traces on): the dead letter ends its trace with an error.
    pub hop: Option<&'a trace::Hop>,
    pub latency: Duration,
}

impl Event for DeadLettered<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.count_message(self.route, "dead_lettered");
        metrics.count_dead_letter(self.kind);
        if let Some(hop) = self.hop {
            metrics.traces.record(hop, trace::Times::since(self.latency));
        }
    }

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.dead_letters)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(
            outcome = "dead_lettered",
            route = self.route,
            source = self.source,
            message_id = self.message_id,
            kind = self.kind,
            reason = self.reason,
            left_out,
            "message dead-lettered"
        );
    }
}

/// A batch the broker did not confirm: its messages stay unacknowledged on a connection that
/// is gone, and the broker delivers them again.
pub struct BatchFailed<'a> {
    pub messages: usize,
    pub mode: &'static str,
    pub reason: &'a str,
}

impl Event for BatchFailed<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.batch_failures.fetch_add(1, Ordering::Relaxed);
    }

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.batch_failures)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(
            outcome = "retried",
            messages = self.messages,
            mode = self.mode,
            reason = self.reason,
            left_out,
            "batch not confirmed; the broker will redeliver its messages"
        );
    }
}

/// A message handle dropped without being settled (a bug): the connection is reset so that
/// the broker redelivers it.
pub struct Unsettled<'a> {
    pub message_id: &'a str,
}

impl Event for Unsettled<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.unsettled.fetch_add(1, Ordering::Relaxed);
    }

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.unsettled)
    }

    fn log(&self, _: &(), left_out: u64) {
        let message_id = self.message_id;
        warn!(message_id, left_out, "message left unsettled; resetting the connection to give it back");
    }
}

/// A batch the broker has not confirmed within the receipt timeout on a connection that is
/// alive (the broker heart-beats): held, not given up, until the broker confirms it or the
/// connection ends. While it lasts the bridge is not ready.
pub struct PublishStalled {
    /// When the batch began to wait.
    pub since: Instant,
    pub messages: usize,
}

impl Event for PublishStalled {
    type Metrics = Arc<Metrics>;
    /// The stall, open until it is dropped.
    type Counted = Stall;

    fn count(&self, metrics: &Arc<Metrics>) -> Stall {
        metrics.stalls_total.fetch_add(1, Ordering::Relaxed);
        let mut stalls = metrics.stalls.lock().unwrap_or_else(|e| e.into_inner());
        stalls.next += 1;
        let id = stalls.next;
        stalls.open.push((id, self.since));
        Stall { metrics: metrics.clone(), id, since: self.since }
    }

    fn limit<'m>(&self, metrics: &'m Arc<Metrics>) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.stalls)
    }

    fn log(&self, _: &Stall, left_out: u64) {
        warn!(
            waited_ms = self.since.elapsed().as_millis() as u64,
            messages = self.messages,
            left_out,
            "publishing stalled: the broker has not confirmed a batch within the receipt timeout; \
             the connection is alive, so the bridge holds its messages and waits (not ready meanwhile)"
        );
    }
}

/// A stall under way; it ends when dropped.
#[derive(Debug)]
pub struct Stall {
    metrics: Arc<Metrics>,
    id: u64,
    since: Instant,
}

impl Stall {
    /// The broker confirmed the batch.
    pub fn resumed(self) {
        info!(
            waited_ms = self.since.elapsed().as_millis() as u64,
            "publishing resumed: the broker confirmed a batch it had held"
        );
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        let mut stalls = self.metrics.stalls.lock().unwrap_or_else(|e| e.into_inner());
        stalls.open.retain(|(id, _)| *id != self.id);
    }
}

/// An error answer (a reply timeout's, a stream given up on) the broker did not take: its
/// asker gets none.
pub struct ErrorAnswerUnpublished<'a> {
    pub route: &'a str,
    pub destination: &'a str,
    pub error: &'a str,
}

impl Event for ErrorAnswerUnpublished<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, _: &Metrics) {}

    fn limit<'m>(&self, metrics: &'m Metrics) -> Option<&'m limit::LogLimit> {
        Some(&metrics.logs.error_answers)
    }

    fn log(&self, _: &(), left_out: u64) {
        let (route, destination, error) = (self.route, self.destination, self.error);
        warn!(route, destination, error, left_out, "cannot publish an error answer");
    }
}

/// A stream given up on for age: its asker gets an error answer.
pub struct StreamGivenUp<'a> {
    pub error: &'a dyn std::fmt::Display,
}

impl Event for StreamGivenUp<'_> {
    type Metrics = ();
    type Counted = ();

    fn count(&self, _: &()) {}

    fn limit<'m>(&self, _: &'m ()) -> Option<&'m limit::LogLimit> {
        Some(&limit::STREAMS_GIVEN_UP)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(error = %self.error, left_out, "a stream was given up on: its asker gets an error answer");
    }
}

/// A stream given up on whose error answer could not be made.
pub struct StreamUnanswered<'a> {
    pub error: &'a dyn std::fmt::Display,
}

impl Event for StreamUnanswered<'_> {
    type Metrics = ();
    type Counted = ();

    fn count(&self, _: &()) {}

    fn limit<'m>(&self, _: &'m ()) -> Option<&'m limit::LogLimit> {
        Some(&limit::STREAMS_UNANSWERED)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(error = %self.error, left_out, "no error answer for a stream given up on");
    }
}

/// The HTTPS listener could not accept a connection (out of descriptors and the like): it
/// tries again shortly, so this can come ten times a second.
pub struct AcceptFailed<'a> {
    pub error: &'a dyn std::fmt::Display,
}

impl Event for AcceptFailed<'_> {
    type Metrics = ();
    type Counted = ();

    fn count(&self, _: &()) {}

    fn limit<'m>(&self, _: &'m ()) -> Option<&'m limit::LogLimit> {
        Some(&limit::ACCEPTS_FAILED)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(error = %self.error, left_out, "the HTTP listener cannot accept");
    }
}

/// One of the engine's connections to the broker was lost: not ready until it is back. The
/// one line said of it (the STOMP client says it at `debug`).
pub struct Disconnected<'a> {
    /// `consuming` or `publishing`.
    pub link: &'static str,
    /// The address it was on.
    pub broker: &'a str,
    pub reason: &'a str,
}

impl Event for Disconnected<'_> {
    type Metrics = Metrics;
    type Counted = ();

    fn count(&self, metrics: &Metrics) {
        metrics.broker.lost(self.link);
        metrics.set_connected(false);
    }

    fn log(&self, _: &(), _: u64) {
        let (connection, broker, reason) = (self.link, self.broker, self.reason);
        warn!(connection, broker, reason, "broker connection lost; not ready until reconnected");
    }
}

/// One of the engine's connections is back on `broker`, every subscription restored; `ready`
/// when no other is still down. A failover (back on another address) is said at `warn`.
pub struct Reconnected<'a> {
    pub link: &'static str,
    pub broker: &'a str,
    pub ready: bool,
}

impl Event for Reconnected<'_> {
    type Metrics = Metrics;
    /// The address it was on before, when that was another (a failover).
    type Counted = Option<String>;

    fn count(&self, metrics: &Metrics) -> Option<String> {
        let from = metrics.broker.connected(self.link, self.broker);
        if self.ready {
            metrics.reconnects.fetch_add(1, Ordering::Relaxed);
            metrics.set_connected(true);
        }
        from
    }

    fn log(&self, from: &Option<String>, _: u64) {
        let then = if self.ready { "ready" } else { "waiting for the other connection" };
        let (connection, broker) = (self.link, self.broker);
        match from {
            Some(from) => warn!(
                connection,
                from = from.as_str(),
                to = broker,
                "broker failover: the connection moved to another address; {then}"
            ),
            None => info!(connection, broker, "broker connection restored; {then}"),
        }
    }
}

#[cfg(test)]
#[path = "telemetry_tests.rs"]
mod tests;
