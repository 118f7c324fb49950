//! The Prometheus text exposition of [`Metrics`]: one function per family, in the order the
//! endpoint has always written them.

use super::{BUCKETS, Metrics, OUTCOMES, escape, heap};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// One family of one unlabelled value: name, help, type, value.
type Scalar = (&'static str, &'static str, &'static str, String);
impl Metrics {
    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_messages(&mut out);
        self.render_dead_letters(&mut out);
        self.broker.render(&mut out);
        for (name, help, kind, value) in self.scalars() {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n");
        }
        self.render_latency(&mut out);
        self.mirror.render(&mut out);
        self.reload.render(&mut out);
        self.registry.render(&mut out);
        self.a2a.render(&mut out);
        self.push.render(&mut out);
        self.a2a_calls.render(&mut out);
        self.mcp.render(&mut out);
        self.traces.render(&mut out);
        out
    }

    /// `bridge_messages_total`, by route (sorted) and outcome; counts of zero are left out.
    fn render_messages(&self, out: &mut String) {
        out.push_str("# HELP bridge_messages_total Messages handled, by route and outcome.\n");
        out.push_str("# TYPE bridge_messages_total counter\n");
        let messages: BTreeMap<String, [u64; OUTCOMES.len()]> = {
            let map = self.messages.read().unwrap_or_else(|e| e.into_inner());
            map.iter()
                .map(|(r, c)| (r.clone(), std::array::from_fn(|i| c[i].load(Ordering::Relaxed))))
                .collect()
        };
        for (route, counts) in &messages {
            for (outcome, n) in OUTCOMES.iter().zip(counts).filter(|(_, n)| **n > 0) {
                let _ = writeln!(
                    out,
                    "bridge_messages_total{{route=\"{}\",outcome=\"{outcome}\"}} {n}",
                    escape(route)
                );
            }
        }
    }

    /// `bridge_dead_letters_total`, by kind (sorted).
    fn render_dead_letters(&self, out: &mut String) {
        out.push_str(
            "# HELP bridge_dead_letters_total Messages sent to the dead-letter destination, by reason.\n",
        );
        out.push_str("# TYPE bridge_dead_letters_total counter\n");
        let dead: BTreeMap<&str, u64> = {
            let map = self.dead_letters.read().unwrap_or_else(|e| e.into_inner());
            map.iter().map(|(k, n)| (*k, n.load(Ordering::Relaxed))).collect()
        };
        for (kind, n) in dead {
            let _ = writeln!(out, "bridge_dead_letters_total{{kind=\"{kind}\"}} {n}");
        }
    }

    /// Every family of one unlabelled value: name, help, type, value (read now).
    fn scalars(&self) -> Vec<Scalar> {
        let mut scalars = self.delivery_scalars();
        scalars.extend(self.answer_scalars());
        if let Some(bytes) = heap::live_bytes() {
            scalars.push((
                "bridge_heap_bytes",
                "Bytes allocated and not freed (the live heap; RSS also holds freed memory the allocator keeps).",
                "gauge",
                bytes.to_string(),
            ));
        }
        scalars
    }

    /// The connection's and the batches' values.
    fn delivery_scalars(&self) -> Vec<Scalar> {
        let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
        vec![
            ("bridge_reconnects_total", "Reconnections to the broker.", "counter", n(&self.reconnects)),
            (
                "bridge_batch_failures_total",
                "Batches the broker did not confirm (their messages are redelivered).",
                "counter",
                n(&self.batch_failures),
            ),
            (
                "bridge_unsettled_total",
                "Messages dropped unsettled by a bug, given back by a connection reset (should stay 0).",
                "counter",
                n(&self.unsettled),
            ),
            (
                "bridge_in_flight",
                "Messages in batches awaiting the broker.",
                "gauge",
                self.in_flight.load(Ordering::Relaxed).to_string(),
            ),
            (
                "bridge_unacknowledged",
                "Messages received and not yet acknowledged or given back (the prefetch, delivery.in_flight, bounds it; ACKs written and not yet committed can add a batch).",
                "gauge",
                self.unacknowledged.load(Ordering::Relaxed).to_string(),
            ),
            (
                "bridge_publish_stalled_seconds",
                "How long the oldest batch past the receipt timeout has waited for the broker (0: none).",
                "gauge",
                self.stalled_for().map_or(0.0, |d| d.as_secs_f64()).to_string(),
            ),
            (
                "bridge_publish_stalls_total",
                "Batches the broker did not confirm within the receipt timeout on a live connection.",
                "counter",
                n(&self.stalls_total),
            ),
        ]
    }

    /// Readiness, and what became of answers and asks.
    fn answer_scalars(&self) -> Vec<Scalar> {
        let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
        vec![
            (
                "bridge_ready",
                "1 when connected, subscribed and not stalled.",
                "gauge",
                u8::from(self.is_ready()).to_string(),
            ),
            (
                "bridge_late_replies_total",
                "Answers that came after their ask's reply timeout: dropped.",
                "counter",
                n(&self.late_replies),
            ),
            (
                "bridge_repeated_answers_total",
                "Answers that came again for an ask answered already: dropped.",
                "counter",
                n(&self.repeated_answers),
            ),
            (
                "bridge_unmatched_replies_total",
                "Replies that matched no pending ask: delivered uncorrelated, never attached to another ask.",
                "counter",
                n(&self.unmatched_replies),
            ),
            (
                "bridge_receipts_total",
                "Receipts (VOX message_acknowledged) consumed: not answers, not forwarded.",
                "counter",
                n(&self.receipts),
            ),
            (
                "bridge_reply_timeouts_total",
                "Asks that got no answer within the reply timeout: an error answer was sent.",
                "counter",
                n(&self.reply_timeouts),
            ),
            (
                "bridge_pending_asks",
                "Asks sent on through the bridge and waiting for their answer.",
                "gauge",
                self.pending_asks.load(Ordering::Relaxed).to_string(),
            ),
        ]
    }

    /// `bridge_latency_seconds`, the histogram.
    fn render_latency(&self, out: &mut String) {
        out.push_str("# HELP bridge_latency_seconds From receipt of a message to the broker's confirmation of what it caused.\n");
        out.push_str("# TYPE bridge_latency_seconds histogram\n");
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "bridge_latency_seconds_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(out, "bridge_latency_seconds_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = write!(out, "bridge_latency_seconds_sum {sum}\nbridge_latency_seconds_count {count}\n");
    }
}
