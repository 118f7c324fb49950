//! What the Wise Agents registry's stage lets an operator observe: the messages waiting for
//! Redis, and whether Redis answers. Each change of state is one event that logs and counts.

use super::Event;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use tokio::time::Instant;
use tracing::{info, warn};

/// The registry stage's gauges and counters, rendered under `/metrics` when it runs.
#[derive(Debug, Default)]
pub struct RegistryMetrics {
    /// Set when the stage starts: without a registry nothing is rendered.
    enabled: AtomicBool,
    /// Messages waiting for their registry work (checked, or waiting for Redis).
    held: AtomicI64,
    /// Since when Redis has not answered the stage (`None`: the last call succeeded).
    down_since: Mutex<Option<Instant>>,
    /// Registry calls that failed on Redis (not on the data) and were tried again.
    retries: AtomicU64,
}

impl RegistryMetrics {
    /// The stage runs: its families are rendered from now on.
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// How many messages wait for the registry now.
    pub fn set_held(&self, n: usize) {
        self.held.store(i64::try_from(n).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    pub fn held(&self) -> i64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Whether the last registry call failed on Redis.
    pub fn is_down(&self) -> bool {
        self.down_since.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Not ready while Redis does not answer: the messages that need it are held.
    pub fn readiness(&self) -> Result<(), String> {
        let since = *self.down_since.lock().unwrap_or_else(|e| e.into_inner());
        match since {
            Some(since) => Err(format!(
                "the Wise Agents registry (Redis) has not answered for {} s: holding {} messages that need it \
                 (other traffic flows)",
                since.elapsed().as_secs(),
                self.held()
            )),
            None => Ok(()),
        }
    }

    pub(super) fn render(&self, out: &mut String) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let since = *self.down_since.lock().unwrap_or_else(|e| e.into_inner());
        let families: [(&str, &str, &str, String); 4] = [
            (
                "bridge_registry_held",
                "Messages waiting for their Wise Agents registry work (held while Redis does not answer).",
                "gauge",
                self.held().to_string(),
            ),
            (
                "bridge_registry_up",
                "1 while Redis answers the registry stage.",
                "gauge",
                u8::from(since.is_none()).to_string(),
            ),
            (
                "bridge_registry_down_seconds",
                "How long Redis has not answered the registry stage (0: it answers).",
                "gauge",
                since.map_or(0.0, |s| s.elapsed().as_secs_f64()).to_string(),
            ),
            (
                "bridge_registry_retries_total",
                "Registry calls that failed on Redis and were tried again (the message waited).",
                "counter",
                self.retries.load(Ordering::Relaxed).to_string(),
            ),
        ];
        for (name, help, kind, value) in families {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n");
        }
    }
}

/// A registry call failed on Redis: logged when Redis goes away, not on every call. `retried`:
/// a message's call, which waits and is tried again (counted in the retries); else a call that
/// holds no message (the membership keeper's check, an HTTP request's read), which only says
/// Redis is away.
pub struct RegistryUnavailable<'a> {
    pub error: &'a str,
    pub retried: bool,
}

impl Event for RegistryUnavailable<'_> {
    type Metrics = RegistryMetrics;
    /// Messages held, when Redis has just gone away (nothing said while it stays away).
    type Counted = Option<i64>;

    fn count(&self, metrics: &RegistryMetrics) -> Option<i64> {
        if self.retried {
            metrics.retries.fetch_add(1, Ordering::Relaxed);
        }
        let mut since = metrics.down_since.lock().unwrap_or_else(|e| e.into_inner());
        let gone = since.is_none().then(|| metrics.held());
        since.get_or_insert_with(Instant::now);
        gone
    }

    fn log(&self, gone: &Option<i64>, _: u64) {
        if let Some(held) = *gone {
            warn!(
                error = self.error,
                held,
                "the Wise Agents registry (Redis) does not answer: holding the messages that need it \
                 until it does; other traffic flows"
            );
        }
    }
}

/// A registry call succeeded: if Redis had been away, it is back.
pub struct RegistryAnswered;

impl Event for RegistryAnswered {
    type Metrics = RegistryMetrics;
    /// How long Redis was away and the messages held, when it has just come back.
    type Counted = Option<(f64, i64)>;

    fn count(&self, metrics: &RegistryMetrics) -> Option<(f64, i64)> {
        let mut since = metrics.down_since.lock().unwrap_or_else(|e| e.into_inner());
        since.take().map(|down| (down.elapsed().as_secs_f64(), metrics.held()))
    }

    fn log(&self, back: &Option<(f64, i64)>, _: u64) {
        if let Some((after_s, held)) = *back {
            info!(
                after_s,
                held, "the Wise Agents registry (Redis) answers again: delivering the messages held for it"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retries(metrics: &RegistryMetrics) -> String {
        metrics.enable();
        let mut out = String::new();
        metrics.render(&mut out);
        out.lines().find(|l| l.starts_with("bridge_registry_retries_total ")).unwrap_or_default().to_owned()
    }

    #[test]
    fn redis_found_away_by_a_call_that_holds_no_message_is_down_but_no_retry() {
        let metrics = RegistryMetrics::default();
        RegistryUnavailable { error: "refused", retried: false }.emit(&metrics);
        assert!(metrics.is_down());
        assert_eq!(retries(&metrics), "bridge_registry_retries_total 0");
        RegistryUnavailable { error: "refused", retried: true }.emit(&metrics);
        RegistryUnavailable { error: "refused", retried: true }.emit(&metrics);
        assert_eq!(retries(&metrics), "bridge_registry_retries_total 2");
        RegistryAnswered.emit(&metrics);
        assert!(!metrics.is_down());
    }
}
