//! What the MCP server lets an operator observe: its tool calls by how they ended, those still
//! waiting for their Wise Agents answer, answers that came for no waiting call, requests
//! refused for their token, and failed reads of the JWT keys (`[mcp.jwt]`).

use super::Event;
use super::limit::LogLimit;
use super::served::{Names, Served};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::{info, warn};

/// How a tool call ended, one counter each: `answered` (the agent's answer is the result),
/// `failed` (a tool error: the agent cannot answer, no answer in time, the broker did not take
/// the request), `refused` (bad arguments or an unknown tool: a tool or protocol error, nothing
/// published).
pub const ENDS: [&str; 3] = ["answered", "failed", "refused"];

/// The MCP server's gauges and counters, rendered under `/metrics` when it runs.
#[derive(Debug, Default)]
pub struct McpMetrics {
    pub served: Served<{ ENDS.len() }>,
    /// The lines of [`CallEnded`] with a reason.
    ended_lines: LogLimit,
    /// The lines of [`TokenRefused`].
    refused_lines: LogLimit,
    /// Reads of the JWT keys (`mcp.jwt.jwks_file`, `jwks_url`) that failed.
    keys_unread: AtomicU64,
}

const NAMES: Names = Names {
    ended: ("bridge_mcp_calls_total", "MCP tool calls by how they ended."),
    late: (
        "bridge_mcp_late_answers_total",
        "Wise Agents answers that came for an MCP tool call no longer waiting (timed out, client gone).",
    ),
    unauthorized: (
        "bridge_mcp_unauthorized_total",
        "MCP requests refused with 401 (no or a wrong bearer token).",
    ),
    waiting: ("bridge_mcp_calls_waiting", "MCP tool calls waiting for their Wise Agents answer."),
};

impl McpMetrics {
    pub(super) fn render(&self, out: &mut String) {
        self.served.render(out, &NAMES, &ENDS);
        if !self.served.is_enabled() {
            return;
        }
        let (name, help) = (
            "bridge_mcp_jwt_key_reads_failed_total",
            "Reads of the JWT keys (mcp.jwt.jwks_file, jwks_url) that failed; the keys read before are kept.",
        );
        let value = self.keys_unread.load(Ordering::Relaxed);
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n");
    }
}

/// A request refused with 401 for its bearer token (none, a wrong one, an invalid JWT); `why`
/// never holds the token.
pub struct TokenRefused<'a> {
    pub why: &'a str,
}

impl Event for TokenRefused<'_> {
    type Metrics = McpMetrics;
    type Counted = ();

    fn count(&self, metrics: &McpMetrics) {
        metrics.served.unauthorized();
    }

    fn limit<'m>(&self, metrics: &'m McpMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.refused_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        info!(status = 401, reason = self.why, left_out, "MCP request refused for its token");
    }
}

/// A read of the JWT keys of `[mcp.jwt]` failed; the keys read before are kept.
pub struct KeysUnread<'a> {
    pub from: &'a str,
    pub why: &'a str,
}

impl Event for KeysUnread<'_> {
    type Metrics = McpMetrics;
    type Counted = ();

    fn count(&self, metrics: &McpMetrics) {
        metrics.keys_unread.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {
        warn!(
            from = self.from,
            reason = self.why,
            "cannot read the JWT keys (mcp.jwt): keeping those read before"
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
            metrics.served.ended(i);
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
        metrics.served.late();
    }

    fn log(&self, _: &(), _: u64) {
        info!(call = self.call, "a Wise Agents answer for an MCP tool call that no longer waits: dropped");
    }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
