//! How the daemon's one thread goes to sleep (`delivery.coalesce_us`): a busy bridge lingers
//! a moment first, so that what arrives meanwhile is handled in one wake-up.
//!
//! The runtime's thread sleeps in `epoll_wait` whenever no task is ready, and a message wakes
//! it several times (its MESSAGE, its SEND's RECEIPT, and the same for the messages beside
//! it). Under load those wake-ups come tens of microseconds apart, and each costs a context
//! switch, an `epoll_wait`, a read and a write of a few hundred bytes. The thread is busy when
//! both hold:
//! - it was woken within the window of going to sleep (what it waits for comes that often);
//! - its wake-ups find more than 1.5 broker frames each, on average: the frames come from
//!   independent messages, so waiting gathers several. One caller asking one thing at a time
//!   (a lone A2A client: a RECEIPT, then the answer) makes wake-ups of one frame or none,
//!   each caused by the last: lingering would only delay each step.
//!
//! A busy thread waits the window out before sleeping, then reads everything that came
//! meanwhile and writes what it caused together. Otherwise it sleeps at once, and what wakes
//! it is handled without delay. docs/PERFORMANCE.md ("Wake-ups") has the measurements.

use crate::stomp::client::FRAMES_READ;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The average's unit: a 256th of a frame, fine enough that rounding each step down cannot
/// carry a steady one frame per wake-up (256) past [`GATHERS`].
const FRAME: u64 = 256;
/// Frames per wake-up, on average, above which waiting gathers several: 1.5.
const GATHERS: u64 = FRAME * 3 / 2;

/// The policy, decided from the instants and frame counts it is given.
#[derive(Debug)]
pub struct Coalescing {
    window: Duration,
    /// When the thread last began to wait for events (after lingering, if it did).
    waiting_since: Option<Instant>,
    /// Whether its last wait ended within the window.
    woken_soon: bool,
    /// The frames read when the thread last had nothing to do, and the average per wake-up
    /// (in [`FRAME`]s, each wake-up weighing an eighth).
    frames_at_sleep: u64,
    per_wake: u64,
}

impl Coalescing {
    pub fn new(window: Duration) -> Self {
        Coalescing { window, waiting_since: None, woken_soon: false, frames_at_sleep: 0, per_wake: 0 }
    }

    /// The thread has nothing to do at `now`, `frames` read so far: how long it lingers
    /// before it sleeps.
    pub fn before_sleep(&mut self, now: Instant, frames: u64) -> Duration {
        let found = frames.saturating_sub(self.frames_at_sleep).min(1 << 20) * FRAME;
        self.per_wake = self.per_wake - self.per_wake / 8 + found / 8;
        self.frames_at_sleep = frames;
        let linger = if self.woken_soon && self.per_wake > GATHERS { self.window } else { Duration::ZERO };
        self.waiting_since = Some(now + linger);
        linger
    }

    /// The thread lingered until `now` (a sleep ends a little past what it asked for).
    pub fn lingered(&mut self, now: Instant) {
        self.waiting_since = Some(now);
    }

    /// The thread woke at `now`.
    pub fn woke(&mut self, now: Instant) {
        self.woken_soon =
            self.waiting_since.is_some_and(|since| now.saturating_duration_since(since) < self.window);
    }
}

/// Installs the policy on the runtime `builder` makes; a window of zero installs nothing.
pub fn install(builder: &mut tokio::runtime::Builder, window: Duration) {
    if window.is_zero() {
        return;
    }
    let parked = Arc::new(Mutex::new(Coalescing::new(window)));
    let unparked = parked.clone();
    builder.on_thread_park(move || {
        let frames = FRAMES_READ.load(Relaxed);
        let linger =
            parked.lock().unwrap_or_else(PoisonError::into_inner).before_sleep(Instant::now(), frames);
        if !linger.is_zero() {
            std::thread::sleep(linger);
            parked.lock().unwrap_or_else(PoisonError::into_inner).lingered(Instant::now());
        }
    });
    builder.on_thread_unpark(move || {
        unparked.lock().unwrap_or_else(PoisonError::into_inner).woke(Instant::now())
    });
}

#[cfg(test)]
#[path = "wakeups_tests.rs"]
mod tests;
