//! Reading the dead-letter queue to its end: browsed where the broker can (ActiveMQ Classic's
//! `browser:true`, ended by a `browser:end` message), otherwise consumed without acknowledging
//! (the broker puts back what is not acknowledged when the connection closes; RabbitMQ, and
//! Artemis 2.37, which ignores `browser:true` over STOMP), up to a marker message sent before
//! subscribing.

use super::{DeadLetter, DeadLetterError};
use crate::config::Config;
use crate::stomp::{AckMode, Client, Command, Event, Frame, Subscription};
use std::time::Duration;
use tokio::sync::mpsc;

/// The header of the marker that ends a consuming reading.
const MARKER: &str = "bridge-dead-letters-marker";

/// How long a marker stays in the queue if its reading never reaches it (it stopped early):
/// long enough for a reading of a long queue, short enough not to pile up.
pub(super) fn marker_ttl(idle: Duration) -> Duration {
    idle.saturating_mul(2).max(Duration::from_secs(3600))
}

/// The marker a consuming reading sends before it subscribes: non-persistent (no
/// `persistent` header, the default of every broker here: RabbitMQ reads `persistent:false`
/// as a non-durable queue, which the existing queue refuses), and expiring after `ttl` in the
/// words of each broker (`expires`, ms since 1970, for ActiveMQ Classic and Artemis;
/// `expiration`, a TTL in ms, for RabbitMQ; each ignores the other's).
pub(super) fn marker_frame(destination: &str, marker: &str, now_ms: u64, ttl: Duration) -> Frame {
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    Frame::new(Command::Send)
        .with("destination", destination)
        .with("expires", now_ms.saturating_add(ttl_ms).to_string())
        .with("expiration", ttl_ms.to_string())
        .with(MARKER, marker)
}

/// Whether another reading's `marker` (a UUIDv7, so it carries when it was made) is older
/// than `age`; a marker that is not one is never taken as stale (it is left alone).
pub(super) fn stale_marker(marker: &str, now_ms: u64, age: Duration) -> bool {
    let Some(made) = uuid::Uuid::parse_str(marker).ok().and_then(|u| u.get_timestamp()) else {
        return false;
    };
    let (secs, nanos) = made.to_unix();
    let made_ms = secs.saturating_mul(1000).saturating_add(u64::from(nanos / 1_000_000));
    now_ms.saturating_sub(made_ms) > u64::try_from(age.as_millis()).unwrap_or(u64::MAX)
}

/// How the queue is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A browser subscription: nothing is consumed (ActiveMQ Classic).
    Browse,
    /// Consumed and held unacknowledged until the connection closes, which puts back every
    /// message not acknowledged (RabbitMQ, Artemis, and ActiveMQ when replaying).
    Hold,
}

/// An open reading of the dead-letter queue.
pub struct Queue {
    client: Client,
    events: mpsc::UnboundedReceiver<Event>,
    access: Access,
    marker: String,
    idle: Duration,
    subscription: String,
}

impl Queue {
    /// Connects and subscribes to `destination`; `consume` when messages will be
    /// acknowledged (replay), else browsed where the broker can.
    pub async fn open(config: &Config, destination: &str, consume: bool) -> Result<Queue, DeadLetterError> {
        let client_config =
            crate::broker::client_config(config).map_err(|e| DeadLetterError::Config(e.to_string()))?;
        let idle = client_config.receipt_timeout.saturating_mul(6);
        let (client, mut broker_events) = Client::connect(client_config).await?;
        let browse = !consume && client.server().is_some_and(|s| s.starts_with("ActiveMQ/"));
        let access = if browse { Access::Browse } else { Access::Hold };
        // Drained at once, so that receipts are never read behind unread messages.
        let (tx, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = broker_events.recv().await {
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        let marker = uuid::Uuid::now_v7().to_string();
        let mut sub = Subscription::new(destination, AckMode::ClientIndividual)
            .with("activemq.prefetchSize", "1000000")
            .with("consumer-window-size", "-1");
        match access {
            Access::Browse => sub = sub.with("browser", "true"),
            Access::Hold => {
                let frame = marker_frame(destination, &marker, super::now_ms(), marker_ttl(idle));
                client.send_confirmed(frame).await?;
            }
        }
        let subscription = client.subscribe(sub).await?;
        Ok(Queue { client, events, access, marker, idle, subscription })
    }

    pub fn access(&self) -> Access {
        self.access
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The next dead letter, or `None` at the end of the queue as it was when opened.
    pub async fn next(&mut self) -> Result<Option<DeadLetter>, DeadLetterError> {
        loop {
            let event = match tokio::time::timeout(self.idle, self.events.recv()).await {
                Err(_) => return Err(DeadLetterError::Idle(self.idle)),
                Ok(None) => return Err(DeadLetterError::Lost("the client stopped".into())),
                Ok(Some(event)) => event,
            };
            let message = match event {
                Event::Message(m) => m,
                Event::ConnectionLost { error: e, .. } | Event::ReconnectFailed { error: e, .. } => {
                    return Err(DeadLetterError::Lost(e.to_string()));
                }
                Event::BrokerError(e) => return Err(DeadLetterError::Lost(e.to_string())),
                Event::Reconnected { .. } => return Err(DeadLetterError::Lost("reconnected".into())),
            };
            if self.access == Access::Browse && message.header("browser") == Some("end") {
                return Ok(None);
            }
            match message.header(MARKER) {
                Some(m) if m == self.marker => {
                    self.client.ack(&message.ack).await?;
                    return Ok(None);
                }
                // Another reading's marker: not a dead letter. One older than any live reading
                // waits (left by a reading that stopped early) is removed, when this reading
                // may remove anything.
                Some(other) => {
                    let stale = stale_marker(other, super::now_ms(), self.idle.saturating_mul(2));
                    if stale && self.access == Access::Hold {
                        self.client.ack(&message.ack).await?;
                    }
                    continue;
                }
                None => return Ok(Some(DeadLetter::new(message))),
            }
        }
    }

    /// Every dead letter to the end of the queue.
    pub async fn read_all(&mut self) -> Result<Vec<DeadLetter>, DeadLetterError> {
        let mut all = Vec::new();
        while let Some(dl) = self.next().await? {
            all.push(dl);
        }
        Ok(all)
    }

    /// Acknowledges (removes) a dead letter read by consuming.
    pub async fn ack(&self, dl: &DeadLetter) -> Result<(), DeadLetterError> {
        Ok(self.client.ack(&dl.message.ack).await?)
    }

    /// Disconnects once the broker confirmed everything before (its acknowledgements
    /// included); what was read and not acknowledged goes back to the queue. A reading that
    /// held messages first ends its subscription with a receipt: Artemis sends a DISCONNECT's
    /// receipt before the messages it held are back in the queue, and a reading started right
    /// after met its own marker before them (seen in tests/dead_letters.rs: `list`, then a
    /// `replay --dry-run` that found none of the six).
    pub async fn close(self) -> Result<(), DeadLetterError> {
        if self.access == Access::Hold {
            self.client.unsubscribe(&self.subscription).await?;
        }
        Ok(self.client.disconnect().await?)
    }
}
