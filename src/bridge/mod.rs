//! The bridge daemon: consume → decode → route → encode → publish with receipt → ack.
//! A bad message is dead-lettered and the stream carries on; a broken connection is the
//! STOMP client's to repair, and unacknowledged messages come back from the broker.

mod dedup;
pub mod delivery;
mod engine;
pub mod pipeline;
pub mod reload;
mod run;
pub mod settle;
mod subscriptions;

pub use run::{run, run_with_reloads};

use crate::envelope::EnvelopeError;
use crate::routing::RouteError;
use crate::stomp::SessionError;
use pipeline::StreamKey;

/// Why one message could not be bridged.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
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
    Whole { error: Box<BridgeError>, body: bytes::Bytes, stream: StreamKey },
    #[error(transparent)]
    Stomp(#[from] SessionError),
    #[error("the message expired {ago:.3} s before it arrived (its deadline or ttl passed)")]
    Expired { ago: f64 },
    #[error("the configuration cannot be used: {0}")]
    Config(String),
    #[error("the broker refused what this message caused {attempts} times: {reason}")]
    Refused { attempts: u32, reason: String },
    #[error("the mirror stopped: {0}")]
    Mirror(#[from] crate::mirror::MirrorError),
    #[error("translated, the body is {size} bytes, over delivery.max_body_bytes ({limit})")]
    TooLarge { size: usize, limit: usize },
    #[error("the Wise Agents registry: {0}")]
    Registry(#[from] crate::wise_registry::store::RegistryError),
}

impl BridgeError {
    /// The `bridge-error-kind` header and the metrics label.
    pub fn kind(&self) -> &'static str {
        match self {
            BridgeError::Envelope(e) => e.kind(),
            BridgeError::Route(RouteError::NoRecipient) => "no_recipient",
            BridgeError::Route(RouteError::BadRecipient(_)) => "bad_recipient",
            BridgeError::Route(RouteError::UnknownSource(_)) | BridgeError::UnknownSource(_) => {
                "unknown_source"
            }
            BridgeError::Loop { .. } => "loop",
            BridgeError::Whole { error, .. } => error.kind(),
            BridgeError::Stomp(_) | BridgeError::Refused { .. } => "broker",
            BridgeError::Config(_) => "config",
            BridgeError::Expired { .. } => "expired",
            BridgeError::Mirror(_) => "mirror",
            BridgeError::TooLarge { .. } => "too_large",
            BridgeError::Registry(_) => "registry",
        }
    }
}
