//! The engine's broker links: which of its connections are up (readiness follows both), and
//! what a new connection means for the work taken on an earlier one (released: the broker
//! delivers it again).

use super::Engine;
use crate::bridge::delivery::Work;
use crate::stomp::Event;
use crate::telemetry::Event as _;
use crate::telemetry::broker::ReconnectFailed;
use crate::telemetry::{Disconnected, Reconnected};
use tracing::debug;

/// One of the engine's two connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    Consuming,
    Publishing,
}

/// The state of the consuming and the publishing connection (one connection in transaction
/// mode, where only `Consuming` is used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Links {
    Up,
    Down(Link),
    BothDown,
}

impl Links {
    pub(super) fn is_down(self, link: Link) -> bool {
        match self {
            Links::Up => false,
            Links::Down(down) => down == link,
            Links::BothDown => true,
        }
    }

    pub(super) fn lost(self, link: Link) -> Links {
        match self {
            Links::Up => Links::Down(link),
            Links::Down(down) if down == link => self,
            Links::Down(_) | Links::BothDown => Links::BothDown,
        }
    }

    pub(super) fn back(self, link: Link) -> Links {
        match self {
            Links::BothDown => {
                Links::Down(if link == Link::Consuming { Link::Publishing } else { Link::Consuming })
            }
            Links::Down(down) if down == link => Links::Up,
            other => other,
        }
    }
}

impl Engine {
    pub(super) fn on_consuming_event(&mut self, event: Event) {
        if let Event::Reconnected { epoch, .. } = event {
            self.new_epoch(epoch);
        }
        self.on_connection_event(event, Link::Consuming);
    }

    /// The publishing connection has no subscription: only its losses and returns come.
    pub(super) fn on_publishing_event(&mut self, event: Event) {
        self.on_connection_event(event, Link::Publishing);
    }

    /// Readiness follows both connections: ready once neither is down.
    fn on_connection_event(&mut self, event: Event, link: Link) {
        let which = if link == Link::Consuming { "consuming" } else { "publishing" };
        match event {
            Event::ConnectionLost { error, url } => {
                self.links = self.links.lost(link);
                let (broker, reason) = (url.to_string(), error.to_string());
                Disconnected { link: which, broker: &broker, reason: &reason }.emit(&self.metrics)
            }
            Event::Reconnected { url, .. } => {
                self.links = self.links.back(link);
                let ready = self.links == Links::Up;
                Reconnected { link: which, broker: &url.to_string(), ready }.emit(&self.metrics);
            }
            Event::ReconnectFailed { error, url, attempt } => {
                let (address, error) = (url.to_string(), error.to_string());
                ReconnectFailed { link: which, address: &address, attempt, error: &error }.emit(&())
            }
            // The connection ends with it: its Disconnected says it, as the reason.
            Event::BrokerError(e) => debug!(connection = which, error = %e, "the broker sent an ERROR"),
            Event::Message(_) => {}
        }
    }

    /// A new connection: work of earlier ones not yet started is released (the broker
    /// redelivers it). Streams being joined are kept: their chunks were acknowledged.
    pub(super) fn new_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
        let (stale, current): (Vec<Work>, Vec<Work>) =
            self.ready.drain(..).partition(|w| w.source.ack_ref().epoch < epoch);
        self.ready = current.into();
        // Checks and calls under way for a connection gone too: their messages come back and
        // are checked and called again, so their asks are taken back now (one answer per ask),
        // and their results, when they come, find no work.
        let (checks, calls) = (self.registry.take_stale(epoch), self.calls.take_stale(epoch));
        let stale: Vec<Work> = stale.into_iter().chain(checks).chain(calls).collect();
        self.metrics.registry.set_held(self.registry.len());
        for work in stale {
            // Never started: its request was not published; its redelivery asks again.
            self.forget_ask(&work);
            self.release(work);
        }
    }
}

#[cfg(test)]
#[path = "links_tests.rs"]
mod tests;
