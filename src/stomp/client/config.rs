//! The client's settings: where the broker is, how to talk to it, and how to wait between
//! reconnects.

use super::super::codec::Limits;
use super::super::secret::Secret;
use super::super::session::ConnectOptions;
use super::super::transport::{BrokerUrl, TlsOptions};
use std::time::Duration;

/// Everything the client needs to reach and talk to a broker.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The broker's addresses, tried in order: the first that accepts is used, and when its
    /// connection is lost the others are tried in turn from the one after it (a live/backup
    /// pair, a cluster's nodes). One address for a broker that runs alone.
    pub urls: Vec<BrokerUrl>,
    pub connect: ConnectOptions,
    /// The TLS settings of every `stomp+ssl://` address but those in `address_tls`.
    pub tls: TlsOptions,
    /// The addresses with TLS settings of their own, each with its settings (whole, not
    /// merged with `tls`).
    pub address_tls: Vec<(BrokerUrl, TlsOptions)>,
    pub limits: Limits,
    /// How long to wait for TCP, TLS and CONNECTED together.
    pub connect_timeout: Duration,
    /// How long `send_confirmed`, `subscribe` and `disconnect` wait for a RECEIPT.
    pub receipt_timeout: Duration,
    pub backoff: Backoff,
    /// Events (messages, reconnects) buffered for the consumer...
    pub event_capacity: usize,
    /// ...plus messages read and held inside the client, before it stops reading from the
    /// socket. A consumer that waits for receipts must keep this above what the broker may
    /// send unasked (the sum of its subscriptions' prefetch), or receipts wait behind
    /// unread messages.
    pub max_buffered: usize,
}

impl ClientConfig {
    /// Defaults for everything but the address and credentials (see [`ClientConfig::urls`]
    /// for a list).
    pub fn new(url: BrokerUrl, login: Option<String>, passcode: Option<Secret>) -> Self {
        ClientConfig {
            urls: vec![url],
            connect: ConnectOptions {
                login,
                passcode,
                vhost: "/".into(),
                heartbeat: (Duration::from_secs(10), Duration::from_secs(10)),
            },
            tls: TlsOptions::default(),
            address_tls: Vec::new(),
            limits: Limits::default(),
            connect_timeout: Duration::from_secs(10),
            receipt_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
            event_capacity: 1024,
            max_buffered: 64,
        }
    }
}

impl ClientConfig {
    /// The TLS settings for `url`: its own from `address_tls`, else `tls`.
    pub fn tls_for(&self, url: &BrokerUrl) -> &TlsOptions {
        self.address_tls.iter().find(|(u, _)| u == url).map_or(&self.tls, |(_, tls)| tls)
    }

    /// Reconnect attempt `attempt` (0-based) after losing the address at index `lost`: the
    /// address it tries (the next in the list, wrapping round) and the backoff step it waits
    /// for first (one step per round of the list, so that every address is tried once before
    /// the wait grows; with one address, the step is the attempt).
    pub fn reconnect_target(&self, lost: usize, attempt: u32) -> (usize, u32) {
        let n = self.urls.len().max(1);
        let index = (lost + 1 + attempt as usize) % n;
        (index, attempt / u32::try_from(n).unwrap_or(u32::MAX))
    }
}

/// Exponential backoff between reconnect attempts, with jitter so that many clients do not
/// return to a restarted broker in step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { initial: Duration::from_millis(200), max: Duration::from_secs(30) }
    }
}

impl Backoff {
    /// The wait before attempt `n` (0-based): half of `initial·2ⁿ` (capped at `max`) fixed,
    /// the other half random.
    pub fn delay(&self, attempt: u32) -> Duration {
        let full = self.initial.saturating_mul(1 << attempt.min(20)).min(self.max);
        let half = full / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
