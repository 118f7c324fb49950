//! Replaying a dead letter: its body sent again to where it came from (or to a destination
//! given), counted in `bridge-replays`, and acknowledged only once the broker confirmed the
//! replay's receipt.

use super::{DeadLetter, DeadLetterError, Queue, REPLAYS};
use crate::stomp::{Command, Frame};

/// What happened to one dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// Sent to `to`, confirmed by the broker, and removed from the dead-letter queue.
    Replayed { to: String, replays: u32 },
    /// A dry run: it would have been sent to `to`.
    WouldReplay { to: String, replays: u32 },
    /// It names no `bridge-source` and no destination was given: left where it is.
    NoDestination,
}

impl ReplayOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            ReplayOutcome::Replayed { .. } => "replayed",
            ReplayOutcome::WouldReplay { .. } => "would_replay",
            ReplayOutcome::NoDestination => "no_destination",
        }
    }
}

/// The SEND that replays `dl` to `to` (else its `bridge-source`): the body unchanged, its
/// content type, `persistent`, and the replay count one more than it carried.
pub fn replay_frame(dl: &DeadLetter, to: Option<&str>) -> Option<Frame> {
    let to = to.or(Some(dl.source())).filter(|d| !d.is_empty())?;
    let mut frame = Frame::new(Command::Send)
        .with("destination", to)
        .with("persistent", "true")
        .with(REPLAYS, dl.replays().saturating_add(1).to_string())
        .with_body(dl.message.frame.body.clone());
    if let Some(ct) = dl.message.header("content-type") {
        frame = frame.with("content-type", ct);
    }
    Some(frame)
}

impl Queue {
    /// Replays one dead letter read by consuming: sends it with a receipt and, once the
    /// broker confirmed, acknowledges it. On an error, it stays in the queue (a replay sent
    /// whose acknowledgement was lost is sent again next time: at least once).
    pub async fn replay(
        &self,
        dl: &DeadLetter,
        to: Option<&str>,
        dry_run: bool,
    ) -> Result<ReplayOutcome, DeadLetterError> {
        let Some(frame) = replay_frame(dl, to) else { return Ok(ReplayOutcome::NoDestination) };
        let to = frame.header("destination").unwrap_or_default().to_owned();
        let replays = dl.replays().saturating_add(1);
        if dry_run {
            return Ok(ReplayOutcome::WouldReplay { to, replays });
        }
        self.client().send_confirmed(frame).await?;
        self.ack(dl).await?;
        Ok(ReplayOutcome::Replayed { to, replays })
    }
}
