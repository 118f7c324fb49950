//! What push notifications let an operator observe: the calls of the clients' webhooks, by how
//! each task update's delivery ended, and the calls made again.

use super::Event;
use super::limit::LogLimit;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tracing::warn;

/// How a task update's delivery to one webhook ended, one counter each: taken (a 2xx answer),
/// failed (no 2xx answer within `a2a.push.attempts` calls), refused (a webhook the bridge does
/// not call: its address is not allowed, or its credentials cannot be a header).
pub const RESULTS: [&str; 3] = ["delivered", "failed", "refused"];

/// The push notifications' counters, rendered under `/metrics` with `[a2a.push]`.
#[derive(Debug, Default)]
pub struct PushMetrics {
    enabled: AtomicBool,
    results: [AtomicU64; RESULTS.len()],
    retries: AtomicU64,
    lines: LogLimit,
}

impl PushMetrics {
    /// Rendered from now on (`[a2a.push]` is set).
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// One more call of a webhook after one that failed.
    pub fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn render(&self, out: &mut String) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let name = "bridge_a2a_push_total";
        let _ = write!(
            out,
            "# HELP {name} A2A task updates pushed to a client's webhook, by how their delivery ended.\n# TYPE {name} counter\n"
        );
        for (result, n) in RESULTS.iter().zip(&self.results) {
            let _ = writeln!(out, "{name}{{result=\"{result}\"}} {}", n.load(Ordering::Relaxed));
        }
        let name = "bridge_a2a_push_retries_total";
        let retries = self.retries.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "# HELP {name} Calls of a webhook made again after one that failed.\n# TYPE {name} counter\n{name} {retries}\n"
        );
    }
}

/// A task update's delivery to a webhook ended: `result` is one of [`RESULTS`]; `why` for one
/// not delivered. `host` is the webhook's host alone: its path or query may hold a secret.
pub struct Pushed<'a> {
    pub task: &'a str,
    pub host: &'a str,
    pub result: &'static str,
    pub attempts: u32,
    pub why: Option<&'a str>,
}

impl Event for Pushed<'_> {
    type Metrics = PushMetrics;
    type Counted = ();

    fn count(&self, metrics: &PushMetrics) {
        if let Some(i) = RESULTS.iter().position(|r| *r == self.result) {
            metrics.results[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Only a delivery that failed says a line, within a budget: a webhook that is down fails
    /// every task's updates.
    fn limit<'m>(&self, metrics: &'m PushMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let Some(reason) = self.why else { return };
        let (task, host, result, attempts) = (self.task, self.host, self.result, self.attempts);
        warn!(
            task,
            host, result, attempts, reason, left_out, "an A2A task update was not pushed to its webhook"
        );
    }
}
