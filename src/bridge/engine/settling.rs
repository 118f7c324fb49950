//! Settling what the engine took: work queued, batched to the settler within the window and
//! the cap of unconfirmed SENDs, acknowledged and reported, published again, dead-lettered once
//! the broker refused it too often, or released to the broker.

use super::links::Link;
use super::{Engine, source_label};
use crate::bridge::MessageError;
use crate::bridge::delivery::{Delivery, Outcome, Settled, Work};
use crate::bridge::pipeline::{Absorbed, dead_letter_frame};
use crate::bridge::settle::{Failure, Finished, Settlement, next_batch, route_of, work_key};
use crate::envelope::trace::{SpanContext, SpanId, TraceId};
use crate::stomp::{AckRef, Client};
use crate::telemetry::Event;
use crate::telemetry::trace::{Hop, HopKind, Party, Times};
use crate::telemetry::{
    Acknowledgement, BatchFailed, ChunkTaken, DeadLettered, Delivered, LateReply, Metrics, RepeatedAnswer,
    TaskAnswered, Unsettled,
};

impl Engine {
    pub(super) async fn start_batches(&mut self) {
        // Nothing is published while the publishing connection is known to be down: work given
        // back to `ready` by a failed batch waits for it, rather than failing again at once.
        if self.budget.is_some() && self.links.is_down(Link::Publishing) {
            return;
        }
        while self.batches.len() < self.window
            && !self.ready.is_empty()
            && self.in_batches < self.unconfirmed_max
        {
            let room = self.unconfirmed_max - self.in_batches;
            let batch = next_batch(&mut self.ready, &self.attempts, self.batch_max.min(room));
            self.in_batches += batch.len();
            self.metrics.in_flight(batch.len() as i64);
            let future = self.settler.start(batch).await;
            self.batches.push(Box::pin(future));
        }
    }

    /// Queues work, unless the broker refused its output too often: then its dead letter.
    pub(super) fn ready_up(&mut self, work: Work) {
        let refused = self.attempts.of(&work).filter(|(n, _)| *n >= self.max_attempts).cloned();
        let work = match refused {
            Some((attempts, reason)) if matches!(work.outcome, Outcome::Delivered { .. }) => {
                let error = MessageError::Refused { attempts, reason };
                let Work { source, stream, mut outcome, .. } = work;
                let mut dead = self.dead_letter_work(source, &error, None, outcome.take_hop());
                dead.stream = stream;
                dead
            }
            _ => work,
        };
        self.ready.push_back(work);
    }

    /// The dead letter of `source`: its body unchanged, or `body` (a whole stream) instead.
    pub(super) fn dead_letter_work(
        &mut self,
        source: Delivery,
        error: &MessageError,
        body: Option<bytes::Bytes>,
        known: Option<Box<Hop>>,
    ) -> Work {
        let m = &source.message;
        let body = body.unwrap_or_else(|| m.frame.body.clone());
        let mut frame =
            dead_letter_frame(&self.dead_letter, &m.destination, body, m.header("content-type"), error);
        // A replayed message dead-lettered again keeps its replay count (`dead-letters`).
        if let Some(replays) = m.header("bridge-replays") {
            frame = frame.with("bridge-replays", replays);
        }
        let label = source_label(&self.pipeline, &m.destination);
        let route = format!("{label}->dead_letter");
        let reason = error.to_string();
        let hop = match known {
            // The trace the pipeline already gave it: a dead letter ends it with the error.
            Some(mut hop) => {
                hop.dead_lettered(&self.dead_letter, error.kind(), &reason);
                Some(hop)
            }
            None => self.pipeline.settings.tracing.then(|| {
                let mut now = super::now(&mut self.ids);
                let (kind, message_id) = (error.kind(), &m.ack.message_id);
                Box::new(dead_letter_hop(m, label, (kind, &reason), message_id, &self.dead_letter, &mut now))
            }),
        };
        let outcome = Outcome::DeadLettered { route, kind: error.kind(), reason, hop };
        Work { source, stream: None, publish: vec![frame], outcome }
    }

    /// A batch's outcome: settled and reported, published again, or left to the broker to
    /// redeliver (see [`Engine::failed`]).
    pub(super) fn finished(&mut self, done: Finished) {
        let Finished { works, result, acked, confirmed, stalled_ms } = done;
        self.in_batches = self.in_batches.saturating_sub(works.len());
        self.metrics.in_flight(-(works.len() as i64));
        let mut works = works.into_iter();
        for mut work in works.by_ref().take(acked) {
            if stalled_ms > 0 {
                work.note("hold", || {
                    format!("the broker held its batch {stalled_ms} ms (a publishing stall)")
                });
            }
            self.attempts.forget(&work);
            report(&work, &self.metrics);
            if let Some(stream) = &work.stream {
                self.pipeline.stream_settled(stream);
            }
            work.source.settle(Settled::Acked, &mut self.tally);
        }
        if let Err(failure) = result {
            self.failed(works.collect(), (acked, confirmed), &failure);
        }
        self.metrics.set_pending_asks(self.pipeline.pending_asks());
    }

    /// The works of a batch that were not acknowledged (`first` is the first one's place in
    /// the batch): published again while their consuming connection holds them, else given
    /// back to the broker.
    fn failed(&mut self, works: Vec<Work>, (first, confirmed): (usize, usize), failure: &Failure) {
        let reason = failure.error.to_string();
        BatchFailed { messages: works.len(), mode: self.settler.mode().as_str(), reason: &reason }
            .emit(&self.metrics);
        let refused = failure.error.broker_error().map(|e| e.to_string());
        let mut again = Vec::new();
        for (i, work) in works.into_iter().enumerate() {
            if self.settler.mode() == Settlement::Transaction {
                // Rolled back: the request was not published; its redelivery asks again.
                self.forget_ask(&work);
            }
            let blamed = failure.culprit.is_none_or(|c| c == first + i);
            if let Some(reason) = refused.as_ref().filter(|_| blamed) {
                self.attempts.refused(work_key(&work), reason.clone());
            }
            self.metrics.count_retried(route_of(&work.outcome));
            // Every failure ends a connection (an ERROR, a loss, or a reset after a missing
            // receipt). With publishing on a connection of its own, a message still held on
            // the live consuming connection is published again from its own frames once the
            // publishing connection is back (a repeat at most, which Artemis drops by its
            // duplicate id); resetting the consuming connection to have it redelivered made
            // Artemis strand messages "delivering" to consumers that no longer existed after
            // a run of FAIL refusals (tests/backpressure.rs). Otherwise the broker redelivers.
            let held = work.source.ack_ref().epoch >= self.epoch && !self.links.is_down(Link::Consuming);
            let mut work = work;
            if self.budget.is_some() && !failure.acking && held && !self.stopping {
                work.note("retry", || format!("published again: {reason}"));
                again.push(work);
            } else {
                if first + i < confirmed {
                    // Published, not acknowledged: what it published may be answered, in its
                    // trace, while the broker delivers it again; an answer it published stays
                    // marked, so its redelivery is dropped as repeated.
                    if let Outcome::Delivered { answers, .. } = &mut work.outcome {
                        answers.take();
                    }
                    if let Some(hop) = work.outcome.hop_mut() {
                        hop.note("retry", "given back to the broker after it was published: delivered again");
                        self.metrics.traces.record(hop, Times::since(work.source.received.elapsed()));
                    }
                }
                self.release(work);
            }
        }
        for work in again.into_iter().rev() {
            self.ready_again(work);
        }
    }

    /// Work whose batch failed on the publishing connection, first in line again (or its dead
    /// letter, once the broker refused its output `max_attempts` times).
    fn ready_again(&mut self, work: Work) {
        self.ready_up(work);
        if let Some(work) = self.ready.pop_back() {
            self.ready.push_front(work);
        }
    }

    /// A handle dropped without settlement: if its connection is still the current one, the
    /// only way to give the message back is to reset the connection.
    pub(super) async fn unsettled(&mut self, ack: &AckRef, client: &Client) {
        self.tally.unsettled += 1;
        Unsettled { message_id: &ack.message_id }.emit(&self.metrics);
        if ack.epoch >= self.epoch {
            client.reset("a message was left unsettled").await;
        }
    }

    /// Gives a work's message back to the broker (its connection is gone or going), and the
    /// stream it completed back to the pipeline, to be completed again by its redelivery, and
    /// the ask it answered unmarked, to be answered again by its redelivery.
    pub(super) fn release(&mut self, work: Work) {
        if let Some(stream) = &work.stream {
            self.pipeline.stream_released(stream);
        }
        if let Outcome::Delivered { answers: Some(ask), .. } = &work.outcome {
            self.pipeline.answer_released(ask);
        }
        work.source.settle(Settled::Released, &mut self.tally);
    }

    /// The ask `work` would have made, taken back: its request was not published.
    pub(super) fn forget_ask(&mut self, work: &Work) {
        if let Outcome::Delivered { ask: Some(ask), .. } = &work.outcome {
            self.pipeline.forget_ask(ask);
        }
    }

    pub(super) fn release_all(&mut self) {
        let (checking, calling) = (self.registry.take_all(), self.calls.take_all());
        for work in std::mem::take(&mut self.ready).into_iter().chain(checking).chain(calling) {
            self.release(work);
        }
        self.metrics.registry.set_held(0);
    }
}

/// The log line and metrics of a settled message.
fn report(work: &Work, metrics: &Metrics) {
    let m = &work.source.message;
    match &work.outcome {
        Outcome::Delivered { route, destination, correlated, unmatched_reply, hop, .. } => Delivered {
            route,
            source: &m.destination,
            destination,
            message_id: &m.ack.message_id,
            latency: work.source.received.elapsed(),
            correlated: *correlated,
            unmatched_reply: *unmatched_reply,
            hop: hop.as_deref(),
        }
        .emit(metrics),
        Outcome::Absorbed(Absorbed::Acknowledgement { route }) => {
            Acknowledgement { route, source: &m.destination, message_id: &m.ack.message_id }.emit(metrics)
        }
        Outcome::Absorbed(Absorbed::LateReply { route, ask }) => {
            LateReply { route, source: &m.destination, message_id: &m.ack.message_id, ask }.emit(metrics)
        }
        Outcome::Absorbed(Absorbed::RepeatedAnswer { route, ask }) => {
            RepeatedAnswer { route, source: &m.destination, message_id: &m.ack.message_id, ask }.emit(metrics)
        }
        Outcome::Absorbed(Absorbed::Task { route, answer }) => {
            TaskAnswered { route, source: &m.destination, message_id: &m.ack.message_id, task: &answer.task }
                .emit(metrics)
        }
        Outcome::Absorbed(Absorbed::Chunk { route }) => {
            ChunkTaken { route, source: &m.destination, message_id: &m.ack.message_id }.emit(metrics)
        }
        Outcome::DeadLettered { route, kind, reason, hop } => DeadLettered {
            route,
            source: &m.destination,
            message_id: &m.ack.message_id,
            kind,
            reason,
            hop: hop.as_deref(),
            latency: work.source.received.elapsed(),
        }
        .emit(metrics),
    }
}

/// The hop of a dead-lettered message: the trace its `traceparent` header names (continued),
/// else a new one; its body may not be readable, so its sender is the queue it came from.
fn dead_letter_hop(
    m: &crate::stomp::Message,
    framework: &'static str,
    (kind, reason): (&'static str, &str),
    message_id: &str,
    dead_letter: &str,
    now: &mut crate::bridge::pipeline::Now,
) -> Hop {
    let arrived = m.header("traceparent").and_then(SpanContext::parse);
    Hop {
        trace: arrived.map_or_else(|| TraceId::new(now), |cx| cx.trace),
        kind: HopKind::DeadLetter,
        parent: arrived.map(|cx| cx.span),
        link: None,
        process: SpanId::new(now),
        send: SpanId::new(now),
        from: Party { name: m.destination.as_str().into(), framework },
        to: None,
        conversation: None,
        source: m.destination.as_str().into(),
        destination: dead_letter.into(),
        message_id: message_id.into(),
        body_size: m.frame.body.len(),
        processed: now.unix,
        invocation: None,
        error: Some((kind, reason.into())),
        notes: Vec::new(),
    }
}
