//! Which broker address each connection is on, and the failovers between addresses
//! (`broker.urls`). Each change is one event that logs and counts.

use super::{Event, escape};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Mutex;
use tracing::{info, warn};

/// Each connection's address (by its role: `consuming`, `publishing`, the mirror's `tap`...),
/// every address seen, and the failovers counted.
#[derive(Debug, Default)]
pub struct BrokerMetrics {
    state: Mutex<Links>,
}

#[derive(Debug, Default)]
struct Links {
    /// Role → (its last address, whether it is connected there now).
    links: BTreeMap<&'static str, (String, bool)>,
    /// Every address a connection has been on, so that one left shows 0.
    seen: BTreeSet<String>,
    failovers: u64,
}

impl BrokerMetrics {
    /// The connection `link` is up on `address`: the address it was on before, when that was
    /// another (a failover).
    pub(super) fn connected(&self, link: &'static str, address: &str) -> Option<String> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.seen.insert(address.to_owned());
        let before = s.links.insert(link, (address.to_owned(), true)).map(|(a, _)| a);
        let moved = before.filter(|b| b != address);
        s.failovers += u64::from(moved.is_some());
        moved
    }

    /// The connection `link` is down (its last address is kept, to tell a failover).
    pub fn lost(&self, link: &'static str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = s.links.get_mut(link) {
            entry.1 = false;
        }
    }

    /// The addresses some connection is up on now, sorted.
    pub fn live(&self) -> Vec<String> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut live: Vec<String> = s.links.values().filter(|(_, up)| *up).map(|(a, _)| a.clone()).collect();
        live.sort();
        live.dedup();
        live
    }

    /// Failovers so far: a connection back on another address than the one it lost.
    pub fn failovers(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).failovers
    }

    pub(super) fn render(&self, out: &mut String) {
        let live = self.live();
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.seen.is_empty() {
            return;
        }
        out.push_str("# HELP bridge_broker_connected 1 for a broker address a connection is on now.\n");
        out.push_str("# TYPE bridge_broker_connected gauge\n");
        for address in &s.seen {
            let up = u8::from(live.contains(address));
            let _ = writeln!(out, "bridge_broker_connected{{address=\"{}\"}} {up}", escape(address));
        }
        out.push_str(
            "# HELP bridge_broker_failovers_total Connections restored on another broker address than the one lost.\n",
        );
        out.push_str("# TYPE bridge_broker_failovers_total counter\n");
        let _ = writeln!(out, "bridge_broker_failovers_total {}", s.failovers);
    }
}

/// A connection is up on a broker address: at start, and after a reconnect or a failover of a
/// connection the bridge's readiness does not follow (the mirror's; the engine's are
/// [`super::Reconnected`]).
pub struct BrokerConnected<'a> {
    /// The connection's role: `consuming`, `publishing`, `tap`, `out`.
    pub link: &'static str,
    pub address: &'a str,
    /// The broker's `server` header (`ActiveMQ/5.17.2`), when it is known.
    pub server: Option<&'a str>,
}

impl Event for BrokerConnected<'_> {
    type Metrics = BrokerMetrics;
    /// The address it was on before, when that was another (a failover).
    type Counted = Option<String>;

    fn count(&self, metrics: &BrokerMetrics) -> Option<String> {
        metrics.connected(self.link, self.address)
    }

    fn log(&self, from: &Option<String>, _: u64) {
        match from {
            Some(from) => warn!(
                connection = self.link,
                from = from.as_str(),
                to = self.address,
                server = self.server,
                "broker failover: the connection moved to another address"
            ),
            None => {
                info!(
                    connection = self.link,
                    broker = self.address,
                    server = self.server,
                    "connected to the broker"
                )
            }
        }
    }
}

/// A connection the bridge's readiness does not follow (the mirror's) is lost: its client
/// reconnects. The engine's are [`super::Disconnected`].
pub struct BrokerLost<'a> {
    pub link: &'static str,
    pub address: &'a str,
    pub reason: &'a str,
}

impl Event for BrokerLost<'_> {
    type Metrics = BrokerMetrics;
    type Counted = ();

    fn count(&self, metrics: &BrokerMetrics) {
        metrics.lost(self.link);
    }

    fn log(&self, _: &(), _: u64) {
        warn!(
            connection = self.link,
            broker = self.address,
            reason = self.reason,
            "broker connection lost; reconnecting"
        );
    }
}

/// An attempt to reconnect `link` to `address` failed (bad credentials say so here too); the
/// client tries again after its backoff, so these come at most one per backoff.
pub struct ReconnectFailed<'a> {
    pub link: &'static str,
    pub address: &'a str,
    pub attempt: u32,
    pub error: &'a str,
}

impl Event for ReconnectFailed<'_> {
    type Metrics = ();
    type Counted = ();

    fn count(&self, _: &()) {}

    fn log(&self, _: &(), _: u64) {
        let (connection, broker, attempt, error) = (self.link, self.address, self.attempt, self.error);
        warn!(connection, broker, attempt, error, "reconnect attempt failed");
    }
}
