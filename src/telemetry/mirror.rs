//! What the mirror lets an operator observe: each event one type whose `emit` counts it and,
//! when it is rare, logs it, so that logs and metrics never disagree.

use super::Event;
use super::limit::LogLimit;
use crate::config::mirror::Output;
use crate::envelope::codecs::Framework;
use std::fmt::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use tracing::{debug, warn};

const FORMATS: [Output; 4] = [
    Output::Framework(Framework::Civitas),
    Output::Framework(Framework::Vox),
    Output::Framework(Framework::PenguiFlow),
    Output::Canonical,
];

/// What the tap's probe found (mirror/probe.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TapState {
    /// No mirror, or no probe (`probe_timeout_ms = 0`).
    Unprobed = 0,
    /// A probe is on its way.
    Probing = 1,
    /// The last probe came through the tap.
    Seen = 2,
    /// The last probe did not: the tap shows nothing.
    Blind = 3,
}

/// The mirror's counters, rendered under `/metrics` after the proxy's.
#[derive(Debug, Default)]
pub struct MirrorMetrics {
    ready: AtomicBool,
    tap: AtomicU8,
    /// What to do when the tap shows nothing (set when the mirror starts).
    fix: OnceLock<String>,
    tapped: AtomicU64,
    dropped: AtomicU64,
    undecodable: AtomicU64,
    published: [AtomicU64; FORMATS.len()],
    failed: [AtomicU64; FORMATS.len()],
    /// The lines of [`Dropped`] and [`CopyFailed`].
    dropped_lines: LogLimit,
    failed_lines: LogLimit,
}

fn index(output: Output) -> usize {
    FORMATS.iter().position(|f| *f == output).unwrap_or(0)
}

impl MirrorMetrics {
    /// Whether the tap is subscribed (copies are being read).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Records what the tap's probe found.
    pub fn set_tap(&self, state: TapState) {
        self.tap.store(state as u8, Ordering::Relaxed);
    }

    /// Sets what `/readyz` tells the operator to do when the tap shows nothing.
    pub fn set_fix(&self, fix: String) {
        let _ = self.fix.set(fix);
    }

    /// Ready unless a probe is on its way or the tap showed nothing (then with the fix).
    pub fn readiness(&self) -> Result<(), String> {
        match self.tap.load(Ordering::Relaxed) {
            1 => Err("mirror: probing the tap".into()),
            3 => Err(format!(
                "mirror: the tap shows nothing (a probe sent to a Wise Agents queue did not come back through it): {}",
                self.fix.get().map_or("", String::as_str)
            )),
            _ => Ok(()),
        }
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn published(&self, output: Output) -> u64 {
        self.published[index(output)].load(Ordering::Relaxed)
    }

    /// Prometheus text.
    pub fn render(&self, out: &mut String) {
        let ready = u8::from(self.ready.load(Ordering::Relaxed));
        let _ = write!(
            out,
            "# HELP bridge_mirror_ready 1 while the mirror's tap is subscribed.\n# TYPE bridge_mirror_ready gauge\nbridge_mirror_ready {ready}\n"
        );
        let seen = u8::from(self.tap.load(Ordering::Relaxed) == TapState::Seen as u8);
        let _ = write!(
            out,
            "# HELP bridge_mirror_tap_seen 1 when the last probe sent to a Wise Agents queue came back through the tap.\n# TYPE bridge_mirror_tap_seen gauge\nbridge_mirror_tap_seen {seen}\n"
        );
        for (name, help, counter) in [
            ("bridge_mirror_tapped_total", "Wise Agents messages read from the broker's copy.", &self.tapped),
            (
                "bridge_mirror_dropped_total",
                "Tapped messages dropped because the mirror's buffer was full (the mirror fell behind).",
                &self.dropped,
            ),
            (
                "bridge_mirror_undecodable_total",
                "Tapped messages that were not Wise Agents messages: not copied.",
                &self.undecodable,
            ),
        ] {
            let n = counter.load(Ordering::Relaxed);
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {n}\n");
        }
        for (name, help, counters) in [
            ("bridge_mirror_published_total", "Copies published, by format.", &self.published),
            ("bridge_mirror_failed_total", "Copies that could not be written, by format.", &self.failed),
        ] {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n");
            for (format, n) in FORMATS.iter().zip(counters) {
                let _ =
                    writeln!(out, "{name}{{format=\"{}\"}} {}", format.as_str(), n.load(Ordering::Relaxed));
            }
        }
    }
}

/// A message read from the tap and queued for copying.
pub struct Tapped;

impl Event for Tapped {
    type Metrics = MirrorMetrics;
    type Counted = ();

    fn count(&self, metrics: &MirrorMetrics) {
        metrics.tapped.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {}
}

/// A tapped message dropped: the buffer was full.
pub struct Dropped<'a> {
    pub queue: &'a str,
}

impl Event for Dropped<'_> {
    type Metrics = MirrorMetrics;
    /// Copies dropped so far.
    type Counted = u64;

    fn count(&self, metrics: &MirrorMetrics) -> u64 {
        metrics.tapped.fetch_add(1, Ordering::Relaxed);
        metrics.dropped.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn limit<'m>(&self, metrics: &'m MirrorMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.dropped_lines)
    }

    fn log(&self, dropped: &u64, left_out: u64) {
        let (queue, dropped) = (self.queue, *dropped);
        warn!(
            outcome = "mirror_dropped",
            queue, dropped, left_out, "the mirror is behind: a copy was dropped"
        );
    }
}

/// A tapped body that is not a Wise Agents message.
pub struct Undecodable<'a> {
    pub queue: &'a str,
    pub reason: &'a str,
}

impl Event for Undecodable<'_> {
    type Metrics = MirrorMetrics;
    type Counted = ();

    fn count(&self, metrics: &MirrorMetrics) {
        metrics.undecodable.fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {
        debug!(outcome = "mirror_undecodable", queue = self.queue, reason = self.reason, "not copied");
    }
}

/// A copy that could not be written in its format.
pub struct CopyFailed<'a> {
    pub output: Output,
    pub queue: &'a str,
    pub error: &'a str,
}

impl Event for CopyFailed<'_> {
    type Metrics = MirrorMetrics;
    type Counted = ();

    fn count(&self, metrics: &MirrorMetrics) {
        metrics.failed[index(self.output)].fetch_add(1, Ordering::Relaxed);
    }

    fn limit<'m>(&self, metrics: &'m MirrorMetrics) -> Option<&'m LogLimit> {
        Some(&metrics.failed_lines)
    }

    fn log(&self, _: &(), left_out: u64) {
        let (format, queue, error) = (self.output.as_str(), self.queue, self.error);
        warn!(format, queue, error, left_out, "mirror: a copy could not be written");
    }
}

/// A copy published (handed to the connection), or one that could not be written.
pub struct Copied {
    pub output: Output,
    pub ok: bool,
}

impl Event for Copied {
    type Metrics = MirrorMetrics;
    type Counted = ();

    fn count(&self, metrics: &MirrorMetrics) {
        let counters = if self.ok { &metrics.published } else { &metrics.failed };
        counters[index(self.output)].fetch_add(1, Ordering::Relaxed);
    }

    fn log(&self, _: &(), _: u64) {}
}

#[cfg(test)]
#[path = "mirror_tests.rs"]
mod tests;
