//! What the calls to A2A agents (proxied agents with `protocol = "a2a"`) let an operator
//! observe, per agent: the calls under way and waiting for a slot, how calls ended, and the
//! attempts made again.

use super::Event;
use super::limit::LogLimit;
use std::fmt::Write;
use std::sync::RwLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use tracing::{info, warn};

/// How a call ended, one counter each: an answer came (whatever it said), or none came
/// (the asker got CANNOT_ANSWER and the request was dead-lettered).
pub const RESULTS: [&str; 2] = ["answered", "failed"];

/// One agent's counters.
#[derive(Debug, Default)]
struct AgentCalls {
    in_flight: AtomicI64,
    waiting: AtomicI64,
    ended: [AtomicU64; RESULTS.len()],
    retries: AtomicU64,
}

/// A gauge's name, its help, and its value for one agent.
type Gauge = (&'static str, &'static str, fn(&AgentCalls) -> i64);

/// Per A2A agent, in the order configured; rendered only when there is one.
#[derive(Debug, Default)]
pub struct A2aCallMetrics {
    agents: RwLock<Vec<(String, AgentCalls)>>,
    /// The lines of [`CallRetried`] and of [`CallEnded`] without an answer (all agents').
    retried_lines: LogLimit,
    failed_lines: LogLimit,
}

/// A call counted in `bridge_a2a_calls_in_flight` while this lives.
pub struct InFlight<'a> {
    metrics: &'a A2aCallMetrics,
    agent: &'a str,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.metrics.with(self.agent, |c| {
            c.in_flight.fetch_add(-1, Ordering::Relaxed);
        });
    }
}

impl A2aCallMetrics {
    /// The agents called from now on (a reload may add some; none is forgotten).
    pub fn agents<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut agents = self.agents.write().unwrap_or_else(|e| e.into_inner());
        for name in names {
            if !agents.iter().any(|(n, _)| n == name) {
                agents.push((name.to_owned(), AgentCalls::default()));
            }
        }
    }

    fn with(&self, agent: &str, f: impl FnOnce(&AgentCalls)) {
        let agents = self.agents.read().unwrap_or_else(|e| e.into_inner());
        if let Some((_, calls)) = agents.iter().find(|(n, _)| n == agent) {
            f(calls);
        }
    }

    /// A call waits for one of its agent's `max_calls` slots (`delta` 1), or stops waiting.
    pub fn waiting(&self, agent: &str, delta: i64) {
        self.with(agent, |c| {
            c.waiting.fetch_add(delta, Ordering::Relaxed);
        });
    }

    /// A call to `agent` starts: counted in flight until the guard is dropped, by the call's
    /// end or by its unwinding.
    pub fn in_flight<'a>(&'a self, agent: &'a str) -> InFlight<'a> {
        self.with(agent, |c| {
            c.in_flight.fetch_add(1, Ordering::Relaxed);
        });
        InFlight { metrics: self, agent }
    }

    pub(super) fn render(&self, out: &mut String) {
        let agents = self.agents.read().unwrap_or_else(|e| e.into_inner());
        if agents.is_empty() {
            return;
        }
        let gauges: [Gauge; 2] = [
            ("bridge_a2a_calls_in_flight", "Calls to an A2A agent under way.", |c| {
                c.in_flight.load(Ordering::Relaxed)
            }),
            (
                "bridge_a2a_calls_waiting",
                "Calls to an A2A agent waiting for one of its max_calls slots.",
                |c| c.waiting.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n");
            for (agent, calls) in agents.iter() {
                let _ = writeln!(out, "{name}{{agent=\"{agent}\"}} {}", value(calls));
            }
        }
        let name = "bridge_a2a_calls_total";
        let _ =
            write!(out, "# HELP {name} Calls to an A2A agent by how they ended.\n# TYPE {name} counter\n");
        for (agent, calls) in agents.iter() {
            for (result, n) in RESULTS.iter().zip(&calls.ended) {
                let _ = writeln!(
                    out,
                    "{name}{{agent=\"{agent}\",result=\"{result}\"}} {}",
                    n.load(Ordering::Relaxed)
                );
            }
        }
        let name = "bridge_a2a_call_retries_total";
        let _ = write!(
            out,
            "# HELP {name} Attempts of a call to an A2A agent made again.\n# TYPE {name} counter\n"
        );
        for (agent, calls) in agents.iter() {
            let _ = writeln!(out, "{name}{{agent=\"{agent}\"}} {}", calls.retries.load(Ordering::Relaxed));
        }
    }
}

/// An attempt failed in a way another may not (unreachable, 5xx, a timeout, garbage): it is
/// made again after `backoff_ms`.
pub struct CallRetried<'a> {
    pub agent: &'a str,
    pub attempt: u32,
    pub backoff_ms: u64,
    pub error: &'a str,
}

impl Event for CallRetried<'_> {
    type Metrics = A2aCallMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aCallMetrics) {
        metrics.with(self.agent, |c| {
            c.retries.fetch_add(1, Ordering::Relaxed);
        });
    }

    fn limit<'m>(&self, metrics: &'m A2aCallMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.retried_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let (agent, attempt, backoff_ms, error) = (self.agent, self.attempt, self.backoff_ms, self.error);
        warn!(agent, attempt, backoff_ms, error, left_out, "an A2A call failed; trying again");
    }
}

/// A call ended: `reason` is why no answer came (then the request is dead-lettered).
pub struct CallEnded<'a> {
    pub agent: &'a str,
    pub attempts: u32,
    pub reason: Option<&'a str>,
}

impl Event for CallEnded<'_> {
    type Metrics = A2aCallMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aCallMetrics) {
        let i = usize::from(self.reason.is_some());
        metrics.with(self.agent, |c| {
            c.ended[i].fetch_add(1, Ordering::Relaxed);
        });
    }

    /// A call that failed can come in floods; one answered is said at `info`, each.
    fn limit<'m>(&self, metrics: &'m A2aCallMetrics) -> Option<&'m LogLimit> {
        self.reason.map(|_| &metrics.failed_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let (agent, attempts) = (self.agent, self.attempts);
        match self.reason {
            Some(reason) => warn!(agent, attempts, reason, left_out, "an A2A call got no answer"),
            None => info!(agent, attempts, "an A2A call answered"),
        }
    }
}

#[cfg(test)]
#[path = "a2a_calls_tests.rs"]
mod tests;
