//! Log lines of events that can come in floods (a storm of poison messages, the asks of an
//! agent that died timing out): at most [`LOG_BURST`] lines per [`LOG_WINDOW`] for each such
//! event; the others are left out of the log (the metrics count every one), and the next
//! line logged says how many were (as Vector's `internal_log_rate_limit`).

use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The window in which at most [`LOG_BURST`] lines of one event are logged.
pub const LOG_WINDOW: Duration = Duration::from_secs(10);
pub const LOG_BURST: u32 = 10;

/// One event's budget of log lines.
#[derive(Debug, Default)]
pub struct LogLimit {
    window: Mutex<Window>,
}

/// The pipeline's events: it holds no metrics (a pure function of message, state and now), so
/// their budgets are the process's.
pub static STREAMS_GIVEN_UP: LogLimit = LogLimit::new();
pub static STREAMS_UNANSWERED: LogLimit = LogLimit::new();
/// The HTTPS listener's accept loop, which holds no metrics either.
pub static ACCEPTS_FAILED: LogLimit = LogLimit::new();

#[derive(Debug, Default)]
struct Window {
    start: Option<Instant>,
    logged: u32,
    left_out: u64,
}

impl LogLimit {
    pub const fn new() -> Self {
        LogLimit { window: Mutex::new(Window { start: None, logged: 0, left_out: 0 }) }
    }

    /// Whether a line may be logged now, and if so how many lines were left out before it.
    pub fn admit(&self) -> Option<u64> {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if w.start.is_none_or(|start| now.duration_since(start) >= LOG_WINDOW) {
            w.start = Some(now);
            w.logged = 0;
        }
        if w.logged < LOG_BURST {
            w.logged += 1;
            Some(std::mem::take(&mut w.left_out))
        } else {
            w.left_out += 1;
            None
        }
    }
}

/// The events of [`super::Metrics`] whose lines are limited.
#[derive(Debug, Default)]
pub struct LogLimits {
    pub dead_letters: LogLimit,
    pub late_replies: LogLimit,
    pub repeated_answers: LogLimit,
    pub reply_timeouts: LogLimit,
    pub batch_failures: LogLimit,
    pub unsettled: LogLimit,
    pub stalls: LogLimit,
    pub error_answers: LogLimit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_flood_logs_a_burst_per_window_and_the_next_line_says_how_many_were_left_out() {
        let limit = LogLimit::default();
        for _ in 0..LOG_BURST {
            assert_eq!(limit.admit(), Some(0));
        }
        for _ in 0..25 {
            assert_eq!(limit.admit(), None);
        }
        tokio::time::advance(LOG_WINDOW - Duration::from_millis(1)).await;
        assert_eq!(limit.admit(), None, "still the same window");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(limit.admit(), Some(26), "a new window: the count of what was left out");
        assert_eq!(limit.admit(), Some(0));
    }
}
