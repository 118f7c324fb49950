//! Mirror mode: every message on the Wise Agents request and response queues, read from a
//! copy the broker makes (never from the queues, whose consumers compete), published again
//! on per-protocol topics in each format and as the canonical envelope.

pub mod canonical;
pub mod conversation;
pub mod probe;
mod run;
pub mod tap;

pub mod translate;

pub use run::run;

use crate::stomp::SessionError;

/// Why the mirror cannot run (a message it cannot copy is counted and skipped, not an error).
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error(transparent)]
    Stomp(#[from] SessionError),
    #[error("the configuration cannot be used: {0}")]
    Config(String),
    #[error("the mirror's task ended abnormally: {0}")]
    Task(String),
}
