//! Dead letters an operator can work with: read the dead-letter queue without consuming it
//! where the broker allows, pick messages by kind, source and age, and replay them.

pub mod command;
mod queue;
mod replay;
pub mod show;

pub use queue::{Access, Queue};
pub use replay::{ReplayOutcome, replay_frame};

use crate::stomp::{Message, SessionError};
use std::time::Duration;

/// The header that counts how many times a message was replayed from the dead-letter queue;
/// the bridge keeps it when it dead-letters the message again.
pub const REPLAYS: &str = "bridge-replays";

/// Why the dead-letter queue cannot be read or replayed.
#[derive(Debug, thiserror::Error)]
pub enum DeadLetterError {
    #[error(transparent)]
    Stomp(#[from] SessionError),
    #[error("the configuration cannot be used: {0}")]
    Config(String),
    #[error("the connection to the broker was lost ({0}); what was not acknowledged stays queued")]
    Lost(String),
    #[error("nothing came from the broker for {0:?}: the end of the queue was not seen")]
    Idle(Duration),
}

/// One message of the dead-letter queue.
#[derive(Debug, Clone)]
pub struct DeadLetter {
    /// A short id of its kind, source and body (the same on every broker and every reading).
    pub id: String,
    pub message: Message,
}

impl DeadLetter {
    pub fn new(message: Message) -> DeadLetter {
        let mut content = Vec::new();
        // Not the error text: a message dead-lettered again for the same cause keeps its id.
        for name in ["bridge-error-kind", "bridge-source"] {
            content.extend_from_slice(message.header(name).unwrap_or("").as_bytes());
            content.push(0);
        }
        content.extend_from_slice(message.body());
        let id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, &content).simple().to_string();
        DeadLetter { id: id[..12].to_owned(), message }
    }

    pub fn kind(&self) -> &str {
        self.message.header("bridge-error-kind").unwrap_or("")
    }

    pub fn source(&self) -> &str {
        self.message.header("bridge-source").unwrap_or("")
    }

    pub fn error(&self) -> &str {
        self.message.header("bridge-error").unwrap_or("")
    }

    /// How many times it was replayed already.
    pub fn replays(&self) -> u32 {
        self.message.header(REPLAYS).and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    /// When the broker took it, in milliseconds since 1970, if the broker says (ActiveMQ's
    /// `timestamp`; RabbitMQ sets none).
    pub fn timestamp_ms(&self) -> Option<u64> {
        self.message.header("timestamp").and_then(|t| t.parse().ok()).filter(|t| *t > 0)
    }

    /// Its age at `now_ms`, if known.
    pub fn age(&self, now_ms: u64) -> Option<Duration> {
        self.timestamp_ms().map(|t| Duration::from_millis(now_ms.saturating_sub(t)))
    }
}

/// Which dead letters a command works on; every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Ids as listed (any of them); empty: any id.
    pub ids: Vec<String>,
    pub kind: Option<String>,
    pub source: Option<String>,
    /// Only messages at least this old (a message of unknown age is left out).
    pub older_than: Option<Duration>,
    /// Only messages at most this old (a message of unknown age is left out).
    pub newer_than: Option<Duration>,
}

impl Filter {
    pub fn matches(&self, dl: &DeadLetter, now_ms: u64) -> bool {
        let age = dl.age(now_ms);
        (self.ids.is_empty() || self.ids.iter().any(|id| dl.id.starts_with(id.as_str())))
            && self.kind.as_deref().is_none_or(|k| dl.kind() == k)
            && self.source.as_deref().is_none_or(|s| dl.source() == s)
            && self.older_than.is_none_or(|min| age.is_some_and(|a| a >= min))
            && self.newer_than.is_none_or(|max| age.is_some_and(|a| a <= max))
    }
}

/// `90s`, `15m`, `2h`, `7d` (a bare number is seconds).
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = number.parse().map_err(|_| format!("{text:?} is not an age such as 90s, 15m, 2h or 7d"))?;
    let seconds = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is one of s, m, h, d")),
    };
    Ok(Duration::from_secs(n.saturating_mul(seconds)))
}

/// The fastest `--rate` accepted, in messages a second; beyond it, ask for no limit (0).
pub const MAX_RATE: f64 = 100_000.0;
/// The slowest `--rate` accepted (one message every 1000 seconds).
pub const MIN_RATE: f64 = 0.001;

/// Reads `--rate`: 0 (no limit) or a finite number of messages a second between
/// [`MIN_RATE`] and [`MAX_RATE`]. Others would make the pacing interval zero (`inf`) or too
/// long to represent (a tiny rate), both of which panic inside the timer.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 =
        text.trim().parse().map_err(|_| format!("{text:?} is not a number of messages a second"))?;
    if rate == 0.0 || (MIN_RATE..=MAX_RATE).contains(&rate) {
        return Ok(rate);
    }
    Err(format!("{text:?}: the rate is 0 (no limit) or between {MIN_RATE} and {MAX_RATE} messages a second"))
}

/// Milliseconds since 1970 now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
