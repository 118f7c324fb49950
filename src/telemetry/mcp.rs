//! What the MCP server lets an operator observe: its tool calls by how they ended, those still
//! waiting for their Wise Agents answer, answers that came for no waiting call, and requests
//! refused for their token.

use super::Event;
use super::limit::LogLimit;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use tracing::{info, warn};

/// How a tool call ended, one counter each: `answered` (the agent's answer is the result),
/// `failed` (a tool error: the agent cannot answer, no answer in time, the broker did not take
/// the request), `refused` (bad arguments or an unknown tool: a tool or protocol error, nothing
/// published).
pub const ENDS: [&str; 3] = ["answered", "failed", "refused"];

/// The MCP server's gauges and counters, rendered under `/metrics` when it runs.
#[derive(Debug, Default)]
pub struct McpMetrics {
    enabled: AtomicBool,
    waiting: AtomicI64,
    ended: [AtomicU64; ENDS.len()],
    late: AtomicU64,
    unauthorized: AtomicU64,
    /// The lines of [`CallEnded`] with a reason.
    ended_lines: LogLimit,
}

impl McpMetrics {
    /// The server runs: its families are rendered from now on.
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    pub fn waiting(&self, delta: i64) {
        self.waiting.fetch_add(delta, Ordering::Relaxed);
    }

    pub fn unauthorized(&self) {
        self.unauthorized.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn render(&self, out: &mut String) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let name = "bridge_mcp_calls_total";
        let _ = write!(out, "# HELP {name} MCP tool calls by how they ended.\n# TYPE {name} counter\n");
        for (end, n) in ENDS.iter().zip(&self.ended) {
            let _ = writeln!(out, "{name}{{end=\"{end}\"}} {}", n.load(Ordering::Relaxed));
        }
        let families: [(&str, &str, u64); 2] = [
            (
                "bridge_mcp_late_answers_total",
                "Wise Agents answers that came for an MCP tool call no longer waiting (timed out, client gone).",
                self.late.load(Ordering::Relaxed),
            ),
            (
                "bridge_mcp_unauthorized_total",
                "MCP requests refused with 401 (no or a wrong bearer token).",
                self.unauthorized.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, value) in families {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n");
        }
        let name = "bridge_mcp_calls_waiting";
        let waiting = self.waiting.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "# HELP {name} MCP tool calls waiting for their Wise Agents answer.\n# TYPE {name} gauge\n{name} {waiting}\n"
        );
    }
}

/// A tool call ended: `end` is one of [`ENDS`].
pub struct CallEnded<'a> {
    pub tool: &'a str,
    pub call: &'a str,
    pub end: &'static str,
    pub reason: Option<&'a str>,
}

impl Event for CallEnded<'_> {
    type Metrics = McpMetrics;
    type Counted = ();

    fn count(&self, metrics: &McpMetrics) {
        if let Some(i) = ENDS.iter().position(|e| *e == self.end) {
            metrics.ended[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A call that failed can come in floods; one answered is said at `info`, each.
    fn limit<'m>(&self, metrics: &'m McpMetrics) -> Option<&'m LogLimit> {
        self.reason.map(|_| &metrics.ended_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let (tool, call, end) = (self.tool, self.call, self.end);
        match self.reason {
            Some(reason) => warn!(tool, call, end, reason, left_out, "MCP tool call ended"),
            None => info!(tool, call, end, "MCP tool call ended"),
        }
    }
}

/// An answer for a call that no longer waits: dropped and counted.
pub struct LateAnswer<'a> {
    pub call: &'a str,
}

impl Event for LateAnswer<'_> {
    type Metrics = McpMetrics;
    type Counted = ();

    fn count(&self, metrics: &McpMetrics) {
        metrics.late.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {
        info!(call = self.call, "a Wise Agents answer for an MCP tool call that no longer waits: dropped");
    }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
