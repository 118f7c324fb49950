//! A consumed message as a handle that must be settled: acknowledged once what it caused is
//! confirmed, or released to the broker by a connection reset. A handle dropped unsettled is
//! reported to the settlement stage (as Vector's finalizers report), which resets the
//! connection so that the broker redelivers the message: nothing is left unacknowledged on a
//! live connection, holding a prefetch slot forever.

use crate::stomp::{AckRef, Frame, Message};
use crate::telemetry::Metrics;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tokio::sync::mpsc;

/// How a handle ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Its ACK was committed (or written, in confirm mode) after its effects were confirmed.
    Acked,
    /// Its connection is gone: the broker redelivers it.
    Released,
}

/// A received message the bridge owes the broker an answer for.
#[derive(Debug)]
pub struct Delivery {
    pub message: Message,
    /// When the bridge read it (for the latency histogram).
    pub received: Instant,
    settled: bool,
    dropped: mpsc::UnboundedSender<AckRef>,
    /// Where the handle is counted while it lives (`bridge_unacknowledged`).
    counted: Option<Arc<Metrics>>,
    /// The engine's count of the handles it holds, which bounds what it reads.
    held: Option<Arc<AtomicUsize>>,
}

impl Delivery {
    pub fn new(message: Message, dropped: mpsc::UnboundedSender<AckRef>) -> Self {
        Delivery { message, received: Instant::now(), settled: false, dropped, counted: None, held: None }
    }

    /// Counts the handle in `held` until it ends (the engine's in-flight budget).
    pub fn held_in(mut self, held: Arc<AtomicUsize>) -> Self {
        held.fetch_add(1, Ordering::Relaxed);
        self.held = Some(held);
        self
    }

    /// Counts the handle in `metrics` until it ends, however it ends: the messages the
    /// broker handed over that are neither acknowledged nor given back yet.
    pub fn counted(mut self, metrics: Arc<Metrics>) -> Self {
        metrics.unacknowledged(1);
        self.counted = Some(metrics);
        self
    }

    pub fn ack_ref(&self) -> &AckRef {
        &self.message.ack
    }

    /// Ends the handle, recording how in `tally`.
    pub fn settle(mut self, how: Settled, tally: &mut Tally) {
        self.settled = true;
        tally.record(how);
    }
}

/// How the handles an owner held ended, per outcome.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub acked: u64,
    pub released: u64,
    /// Dropped without settlement (each reported, and its connection reset).
    pub unsettled: u64,
}

impl Tally {
    fn record(&mut self, how: Settled) {
        match how {
            Settled::Acked => self.acked += 1,
            Settled::Released => self.released += 1,
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(metrics) = &self.counted {
            metrics.unacknowledged(-1);
        }
        if let Some(held) = &self.held {
            held.fetch_sub(1, Ordering::Relaxed);
        }
        if !self.settled {
            let _ = self.dropped.send(self.message.ack.clone());
        }
    }
}

/// What one consumed message asks of the broker.
#[derive(Debug)]
pub struct Work {
    pub source: Delivery,
    /// The stream `source` completed, whose text is kept until this work is settled.
    pub stream: Option<super::pipeline::StreamKey>,
    /// SEND frames to publish before acknowledging (none: acknowledge only).
    pub publish: Vec<Frame>,
    pub outcome: Outcome,
}

impl Work {
    /// Notes what happened to its message on the way (traces on): an event of its trace.
    pub fn note(&mut self, kind: &'static str, detail: impl FnOnce() -> String) {
        if let Some(hop) = self.outcome.hop_mut() {
            hop.note(kind, detail());
        }
    }
}

impl Outcome {
    /// Its hop (traces on).
    pub fn hop_mut(&mut self) -> Option<&mut crate::telemetry::trace::Hop> {
        match self {
            Outcome::Delivered { hop, .. } | Outcome::DeadLettered { hop, .. } => hop.as_deref_mut(),
            Outcome::Absorbed(_) => None,
        }
    }

    /// Its hop, taken out (it goes on in another outcome).
    pub fn take_hop(&mut self) -> Option<Box<crate::telemetry::trace::Hop>> {
        match self {
            Outcome::Delivered { hop, .. } | Outcome::DeadLettered { hop, .. } => hop.take(),
            Outcome::Absorbed(_) => None,
        }
    }
}

/// What a settled [`Work`] reports.
#[derive(Debug, Clone)]
pub enum Outcome {
    Delivered {
        route: String,
        destination: String,
        correlated: bool,
        /// A reply that matched no pending ask.
        unmatched_reply: bool,
        /// The ask the published frame makes (taken back if the frame is never published).
        ask: Option<String>,
        /// The ask the published frame answers, marked answered (the mark taken back if the
        /// message is given back to the broker before the frame was published).
        answers: Option<String>,
        /// Its way through the bridge (traces on).
        hop: Option<Box<crate::telemetry::trace::Hop>>,
    },
    DeadLettered {
        route: String,
        kind: &'static str,
        reason: String,
        hop: Option<Box<crate::telemetry::trace::Hop>>,
    },
    /// Consumed with nothing to publish (a receipt, a late answer, a stream chunk).
    Absorbed(super::pipeline::Absorbed),
}

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;
