//! What a reload changes: the keys of a new configuration that differ from the running one,
//! each either applied live or refused (it cannot change without a restart). Pure: two
//! configurations in, a verdict out (docs/OPERATING.md, "Reloading the configuration").

use super::Config;
use super::mcp::McpConfig;
use crate::names::is_glob;
use std::collections::BTreeSet;

/// The verdict on a new configuration.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Keys that changed and cannot change live, each with why; one of them refuses the reload.
    pub refused: Vec<Refusal>,
    /// Keys that changed and are applied live (`agents` names the agents added, removed or
    /// changed).
    pub live: Vec<String>,
}

/// A key that cannot change without a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub key: String,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.key, self.why)
    }
}

impl Diff {
    /// Nothing changed at all.
    pub fn is_empty(&self) -> bool {
        self.refused.is_empty() && self.live.is_empty()
    }

    /// Every refusal, in one sentence for a log line or the HTTP status.
    pub fn refusals(&self) -> String {
        self.refused.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    }
}

const RESTART: &str = "cannot change without a restart";

/// `(key, changed)` for each named field of one section: `"section.field"`, and whether it
/// differs between the two.
macro_rules! changed {
    ($old:expr, $new:expr, $section:literal: $($field:ident),+) => {
        [$((concat!($section, ".", stringify!($field)), $old.$field != $new.$field)),+]
    };
}
const STREAMS: &str = "cannot change without a restart (streams being joined keep their bounds)";

/// The stream assemblers' bounds (bytes, ms), which apply whether PenguiFlow is set or not.
fn stream_bounds(c: &Config) -> (usize, u64) {
    c.protocols.penguiflow.as_ref().map_or((4 << 20, 60_000), |p| (p.stream_max_bytes, p.stream_max_wait_ms))
}

/// Compares `new` to the running `old`.
pub fn diff(old: &Config, new: &Config) -> Diff {
    let mut d = Diff::default();
    refused_keys(old, new, &mut d);
    live_keys(old, new, &mut d);
    agents(old, new, &mut d);
    d
}

/// Keys fixed at start: the connections, the settlement, the registry, the HTTP listener,
/// the mirror's own task.
fn refused_keys(old: &Config, new: &Config, d: &mut Diff) {
    let (b, nb) = (&old.broker, &new.broker);
    let (w, nw) = (&old.wiseagents, &new.wiseagents);
    let (o, n) = (&old.delivery, &new.delivery);
    let (bounds, new_bounds) = (stream_bounds(old), stream_bounds(new));
    let plain = changed!(b, nb, "broker": url, urls, login, passcode, passcode_file, vhost, heartbeat_ms, ca_file,
        cert_file, key_file, address_tls, reconnect_max_ms)
    .into_iter()
    .chain(changed!(w, nw, "wiseagents": discovery))
    .chain(
        changed!(o, n, "delivery": mode, exclusive, unconfirmed_max, receipt_timeout_ms, shutdown_timeout_ms, coalesce_us),
    )
    .map(|(key, changed)| (key, changed, RESTART));
    let queues = "cannot change without a restart (it renames every queue consumed)";
    let table = "cannot change without a restart (the pending asks' table keeps its bounds)";
    let special = [
        ("wiseagents.request_prefix", w.request_prefix != nw.request_prefix, queues),
        ("wiseagents.response_prefix", w.response_prefix != nw.response_prefix, queues),
        (
            "wiseagents.reply_agent",
            w.reply_agent != nw.reply_agent,
            "cannot change without a restart (pending asks await answers under the old name)",
        ),
        (
            "wiseagents.registry",
            w.registry != nw.registry,
            "cannot change without a restart (the registrations are made at start)",
        ),
        (
            "delivery.in_flight",
            o.in_flight != n.in_flight,
            "cannot change without a restart (the subscriptions' prefetch is set at SUBSCRIBE)",
        ),
        ("delivery.correlation_capacity", o.correlation_capacity != n.correlation_capacity, table),
        ("delivery.correlation_ttl_ms", o.correlation_ttl_ms != n.correlation_ttl_ms, table),
        ("protocols.penguiflow.stream_max_bytes", bounds.0 != new_bounds.0, STREAMS),
        ("protocols.penguiflow.stream_max_wait_ms", bounds.1 != new_bounds.1, STREAMS),
        ("http.listen", old.http.listen != new.http.listen, RESTART),
        ("http.cert_file", old.http.cert_file != new.http.cert_file, RESTART),
        ("http.key_file", old.http.key_file != new.http.key_file, RESTART),
        ("log.format", old.log.format != new.log.format, RESTART),
    ];
    for (key, changed, why) in plain.chain(special) {
        if changed {
            d.refused.push(Refusal { key: key.into(), why: why.into() });
        }
    }
    if old.a2a != new.a2a {
        let why = "cannot change without a restart (the A2A routes and their tasks are made at start)";
        d.refused.push(Refusal { key: "a2a".into(), why: why.into() });
    }
    if let Some(key) = mcp_refused(old.mcp.as_ref(), new.mcp.as_ref()) {
        let why = "cannot change without a restart (the MCP route is made at start; tools and descriptions change live)";
        d.refused.push(Refusal { key: key.into(), why: why.into() });
    }
    if old.traces != new.traces {
        let why = "cannot change without a restart (the exporter and the page are made at start)";
        d.refused.push(Refusal { key: "traces".into(), why: why.into() });
    }
    if old.mirror != new.mirror {
        let why = "cannot change without a restart (the mirror runs on its own connection)";
        d.refused.push(Refusal { key: "mirror".into(), why: why.into() });
    }
}

/// Keys read for each new message: they take effect for the messages taken after the reload.
fn live_keys(old: &Config, new: &Config, d: &mut Diff) {
    let (p, np) = (&old.protocols, &new.protocols);
    let keys = changed!(old.wiseagents, new.wiseagents, "wiseagents": default_context, agents, contexts, ack_contexts)
        .into_iter()
        .chain(changed!(p, np, "protocols": civitas, vox))
        .chain([("protocols.penguiflow", without_bounds(p) != without_bounds(np))])
        .chain(changed!(old.delivery, new.delivery, "delivery": dead_letter, batch_max, batches_in_flight,
            max_attempts, max_hops, reply_timeout_ms, max_body_bytes))
        .chain([("log.level", old.log.level != new.log.level)])
        .chain(mcp_live(old.mcp.as_ref(), new.mcp.as_ref()));
    d.live.extend(keys.filter(|(_, changed)| *changed).map(|(k, _)| k.to_owned()));
}

/// `[mcp]`'s keys that change live (the tools and their descriptions), when it stays set.
fn mcp_live(old: Option<&McpConfig>, new: Option<&McpConfig>) -> Vec<(&'static str, bool)> {
    match (old, new) {
        (Some(o), Some(n)) => changed!(o, n, "mcp": tools, descriptions).to_vec(),
        _ => Vec::new(),
    }
}

/// `[mcp]` added or removed, or a key of it that cannot change live changed: the key refused.
fn mcp_refused(old: Option<&McpConfig>, new: Option<&McpConfig>) -> Option<&'static str> {
    let restart = |c: &McpConfig| {
        (
            c.token_file.clone(),
            c.token.clone(),
            c.jwt.clone(),
            c.reply_timeout_ms,
            c.max_calls,
            c.max_body_bytes,
            c.allowed_hosts.clone(),
        )
    };
    match (old, new) {
        (None, None) => None,
        (Some(o), Some(n)) => (restart(o) != restart(n)).then_some("mcp"),
        _ => Some("mcp"),
    }
}

/// PenguiFlow's table without the stream bounds (judged apart: they are refused).
fn without_bounds(p: &super::Frameworks) -> Option<(String, String, String, bool)> {
    p.penguiflow
        .as_ref()
        .map(|p| (p.inbox.clone(), p.ingress.clone(), p.tenant.clone(), p.response_as_final_answer))
}

/// `[[agents]]`: agents named exactly are added, removed and changed live, and so is a glob
/// removed (the queues discovery found under it are unsubscribed); a glob added or changed is
/// refused (discovery learns the queues that exist once, from the start), and so is any change
/// while the Wise Agents registry registers the proxied agents at start.
fn agents(old: &Config, new: &Config, d: &mut Diff) {
    let names = |c: &Config| c.agents.iter().map(|a| a.name.clone()).collect::<BTreeSet<_>>();
    let (before, after) = (names(old), names(new));
    let find = |c: &'_ Config, name: &str| c.agents.iter().find(|a| a.name == name).cloned();
    let added: Vec<&String> = after.difference(&before).collect();
    let removed: Vec<&String> = before.difference(&after).collect();
    let changed: Vec<&String> =
        before.intersection(&after).filter(|n| find(old, n) != find(new, n)).collect();
    if added.is_empty() && removed.is_empty() && changed.is_empty() {
        return;
    }
    let globs: Vec<&String> = added.iter().chain(&changed).copied().filter(|n| is_glob(n)).collect();
    if !globs.is_empty() {
        let why = format!(
            "{globs:?}: agents named by a glob cannot be added or changed without a restart \
             (their queues are discovered from the start)"
        );
        d.refused.push(Refusal { key: "agents".into(), why });
    }
    let a2a = |c: &Config, n: &str| {
        find(c, n).is_some_and(|a| a.protocol == crate::envelope::codecs::Framework::A2a)
    };
    let calls: Vec<&String> = added
        .iter()
        .chain(&removed)
        .chain(&changed)
        .copied()
        .filter(|n| a2a(old, n) || a2a(new, n))
        .collect();
    if !calls.is_empty() {
        let why = format!(
            "{calls:?}: A2A agents cannot change without a restart (their clients are made at start)"
        );
        d.refused.push(Refusal { key: "agents".into(), why });
    }
    if old.wiseagents.registry.is_some() {
        let why = "cannot change without a restart while [wiseagents.registry] is set \
                   (proxied agents are registered at start)";
        d.refused.push(Refusal { key: "agents".into(), why: why.into() });
    }
    d.live.push(describe(&added, &removed, &changed));
}

/// `agents (added A, B; removed C; changed D)`.
fn describe(added: &[&String], removed: &[&String], changed: &[&String]) -> String {
    let parts: Vec<String> = [("added", added), ("removed", removed), ("changed", changed)]
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| {
            format!("{what} {}", names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", "))
        })
        .collect();
    format!("agents ({})", parts.join("; "))
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
