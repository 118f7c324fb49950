//! What the A2A service lets an operator observe: its tasks by how they ended, those still
//! waiting for their Wise Agents answer, answers that came for no waiting task, requests refused
//! for their token, and reads of the JWT keys that failed.

use super::Event;
use super::limit::LogLimit;
use super::served::{Names, Served};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::{info, warn};

/// How a task ended, one counter each.
pub const ENDS: [&str; 4] = ["completed", "failed", "canceled", "refused"];

/// The A2A service's gauges and counters, rendered under `/metrics` when it runs.
#[derive(Debug, Default)]
pub struct A2aMetrics {
    pub served: Served<{ ENDS.len() }>,
    /// The lines of [`TaskEnded`] with a reason, and of [`DefaultContext`].
    ended_lines: LogLimit,
    default_context_lines: LogLimit,
    /// Requests refused with 403: a valid JWT that `a2a.jwt.allow` does not let call the agent.
    forbidden: AtomicU64,
    /// Reads of the JWT keys (`a2a.jwt.jwks_file`, `jwks_url`) that failed.
    keys_unread: AtomicU64,
    /// Answers written into their task in the shared store by a bridge that does not run it.
    adopted: AtomicU64,
    refused_lines: LogLimit,
}

const NAMES: Names = Names {
    ended: ("bridge_a2a_tasks_total", "A2A tasks by how they ended."),
    late: (
        "bridge_a2a_late_answers_total",
        "Wise Agents answers that came for an A2A task no longer waiting (canceled, timed out).",
    ),
    unauthorized: (
        "bridge_a2a_unauthorized_total",
        "A2A requests refused with 401 (no or a wrong bearer token).",
    ),
    waiting: ("bridge_a2a_tasks_waiting", "A2A tasks waiting for their Wise Agents answer."),
};

impl A2aMetrics {
    pub(super) fn render(&self, out: &mut String) {
        self.served.render(out, &NAMES, &ENDS);
        if !self.served.is_enabled() {
            return;
        }
        for ((name, help), value) in [
            (
                (
                    "bridge_a2a_forbidden_total",
                    "A2A requests refused with 403 (a valid JWT that a2a.jwt.allow does not let call the agent).",
                ),
                &self.forbidden,
            ),
            (
                (
                    "bridge_a2a_jwt_key_reads_failed_total",
                    "Reads of the JWT keys (a2a.jwt.jwks_file, jwks_url) that failed; the keys read before are kept.",
                ),
                &self.keys_unread,
            ),
            (
                (
                    "bridge_a2a_answers_adopted_total",
                    "Wise Agents answers written into their task in the shared store (a2a.store) by this bridge, which does not run the task (another bridge does, or did before a restart).",
                ),
                &self.adopted,
            ),
        ] {
            let value = value.load(Ordering::Relaxed);
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n");
        }
    }
}

/// A request refused for its token: 401 (none, or not valid) or 403 (valid, but not for this
/// agent). `why` never holds the token.
pub struct TokenRefused<'a> {
    pub agent: &'a str,
    pub forbidden: bool,
    pub why: &'a str,
}

impl Event for TokenRefused<'_> {
    type Metrics = A2aMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aMetrics) {
        match self.forbidden {
            true => drop(metrics.forbidden.fetch_add(1, Ordering::Relaxed)),
            false => metrics.served.unauthorized(),
        }
    }

    fn limit<'m>(&self, metrics: &'m A2aMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.refused_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let status = if self.forbidden { 403 } else { 401 };
        info!(agent = self.agent, status, reason = self.why, left_out, "A2A request refused for its token");
    }
}

/// A read of the JWT keys failed; the keys read before are kept.
pub struct KeysUnread<'a> {
    pub from: &'a str,
    pub why: &'a str,
}

impl Event for KeysUnread<'_> {
    type Metrics = A2aMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aMetrics) {
        metrics.keys_unread.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {
        warn!(
            from = self.from,
            reason = self.why,
            "cannot read the JWT keys (a2a.jwt): keeping those read before"
        );
    }
}

/// An answer written into its task in the shared store by this bridge, which does not run it;
/// `state` is the task's state then.
pub struct Adopted<'a> {
    pub task: &'a str,
    pub state: &'a str,
}

impl Event for Adopted<'_> {
    type Metrics = A2aMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aMetrics) {
        metrics.adopted.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {
        info!(
            task = self.task,
            state = self.state,
            "a Wise Agents answer for an A2A task run elsewhere: written into its task"
        );
    }
}

/// A task ended: `end` is one of [`ENDS`].
pub struct TaskEnded<'a> {
    pub agent: &'a str,
    pub task: &'a str,
    pub end: &'static str,
    pub reason: Option<&'a str>,
}

impl Event for TaskEnded<'_> {
    type Metrics = A2aMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aMetrics) {
        if let Some(i) = ENDS.iter().position(|e| *e == self.end) {
            metrics.served.ended(i);
        }
    }

    /// A task that failed can come in floods; one that completed is said at `info`, each.
    fn limit<'m>(&self, metrics: &'m A2aMetrics) -> Option<&'m LogLimit> {
        self.reason.map(|_| &metrics.ended_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let (agent, task, end) = (self.agent, self.task, self.end);
        match self.reason {
            Some(reason) => warn!(agent, task, end, reason, left_out, "A2A task ended"),
            None => info!(agent, task, end, "A2A task ended"),
        }
    }
}

/// An answer for a task that no longer waits: dropped and counted.
pub struct LateAnswer<'a> {
    pub task: &'a str,
}

impl Event for LateAnswer<'_> {
    type Metrics = A2aMetrics;
    type Counted = ();

    fn count(&self, metrics: &A2aMetrics) {
        metrics.served.late();
    }

    fn log(&self, _: &(), _: u64) {
        info!(task = self.task, "a Wise Agents answer for an A2A task that no longer waits: dropped");
    }
}

/// A task or call asks in the default Wise Agents context: its caller's context could not be
/// made one (the registry refused, or did not answer in time).
pub struct DefaultContext<'a> {
    pub context: &'a str,
    pub reason: &'a str,
}

impl Event for DefaultContext<'_> {
    type Metrics = A2aMetrics;
    type Counted = ();

    fn count(&self, _: &A2aMetrics) {}

    fn limit<'m>(&self, metrics: &'m A2aMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.default_context_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        warn!(
            context = self.context,
            reason = self.reason,
            left_out,
            "the caller's context (an A2A task's or an MCP call's) could not be made a Wise Agents context: asking in the default"
        );
    }
}

#[cfg(test)]
#[path = "a2a_tests.rs"]
mod tests;
