//! The bridge daemon: consume → decode → route → encode → publish with receipt → ack.
//! A bad message is dead-lettered and the stream carries on; a broken connection is the
//! STOMP client's to repair, and unacknowledged messages come back from the broker.

mod dedup;
#[cfg(feature = "internals")]
pub mod delivery;
#[cfg(not(feature = "internals"))]
mod delivery;
mod engine;
pub mod pipeline;
pub mod reload;
mod run;
#[cfg(feature = "internals")]
pub mod settle;
#[cfg(not(feature = "internals"))]
mod settle;
mod subscriptions;
pub mod wakeups;

pub use run::{Attached, run, run_with};

use crate::envelope::EnvelopeError;
use crate::routing::RouteError;
use crate::stomp::SessionError;
use pipeline::StreamKey;

/// Why one message could not be bridged: it is dead-lettered with the reason, and the stream
/// carries on (as rumqttc's `StateError`).
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error("the bridge does not consume {0:?}")]
    UnknownSource(String),
    #[error("the message passed through the bridge {hops} times: it loops")]
    Loop { hops: u32 },
    /// A message that completed a stream failed: the whole stream is dead-lettered as `body`.
    #[error("{error}")]
    StreamFailed { error: Box<MessageError>, body: bytes::Bytes, stream: StreamKey },
    #[error("the message expired {ago:.3} s before it arrived (its deadline or ttl passed)")]
    Expired { ago: f64 },
    #[error("the broker refused what this message caused {attempts} times: {reason}")]
    Refused { attempts: u32, reason: String },
    #[error("translated, the body is {size} bytes, over delivery.max_body_bytes ({limit})")]
    TooLarge { size: usize, limit: usize },
    #[error("the Wise Agents registry: {0}")]
    Registry(#[from] crate::wise_registry::store::RegistryError),
    /// A call to an A2A agent that got no answer (the asker got CANNOT_ANSWER).
    #[error("the A2A call: {0}")]
    A2a(#[from] crate::a2a::error::A2aFailure),
}

impl MessageError {
    /// The `bridge-error-kind` header and the metrics label.
    pub fn kind(&self) -> &'static str {
        match self {
            MessageError::Envelope(e) => e.kind(),
            MessageError::Route(RouteError::NoRecipient) => "no_recipient",
            MessageError::Route(RouteError::BadRecipient(_)) => "bad_recipient",
            MessageError::UnknownSource(_) => "unknown_source",
            MessageError::Loop { .. } => "loop",
            MessageError::StreamFailed { error, .. } => error.kind(),
            MessageError::Refused { .. } => "broker",
            MessageError::Expired { .. } => "expired",
            MessageError::TooLarge { .. } => "too_large",
            MessageError::Registry(_) => "registry",
            MessageError::A2a(_) => "a2a",
        }
    }
}

/// Why the daemon stops (as rumqttc's `ConnectionError`): a configuration it cannot use, a
/// subscription the broker refused, the mirror or the registry failing at start.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Stomp(#[from] SessionError),
    #[error(transparent)]
    Subscribe(#[from] subscriptions::SubscribeError),
    #[error("the configuration cannot be used: {0}")]
    Config(String),
    /// An A2A agent whose client cannot be made (its TLS settings).
    #[error("the configuration cannot be used: {0}")]
    A2a(#[from] crate::a2a::error::A2aFailure),
    /// A task of the bridge's that panicked (a bug): the bridge stops rather than run without it.
    #[error("the bridge's {task} task ended abnormally: {error}")]
    Task { task: &'static str, error: tokio::task::JoinError },
    #[error("the mirror stopped: {0}")]
    Mirror(#[from] crate::mirror::MirrorError),
    #[error("the Wise Agents registry: {0}")]
    Registry(#[from] crate::wise_registry::store::RegistryError),
}
