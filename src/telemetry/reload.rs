//! Configuration reloads (`SIGHUP`): one event per reload, which logs, counts
//! `bridge_config_reloads_total{outcome}` and keeps the last outcome for `GET /config`.

use super::Event;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::{info, warn};

/// How a reload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// The new configuration is running (for new messages).
    Applied,
    /// It is valid but changes keys that cannot change live: nothing changed.
    Refused,
    /// It does not validate: nothing changed.
    Invalid,
}

impl ReloadOutcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            ReloadOutcome::Applied => "applied",
            ReloadOutcome::Refused => "refused",
            ReloadOutcome::Invalid => "invalid",
        }
    }
}

const OUTCOMES: [ReloadOutcome; 3] = [ReloadOutcome::Applied, ReloadOutcome::Refused, ReloadOutcome::Invalid];

/// The reload counters and the last reload's outcome.
#[derive(Debug, Default)]
pub struct ReloadMetrics {
    counts: [AtomicU64; 3],
    released: AtomicU64,
    last: Mutex<Option<Last>>,
}

#[derive(Debug, Clone)]
struct Last {
    outcome: ReloadOutcome,
    file: String,
    reason: String,
    at_unix_ms: u64,
}

impl ReloadMetrics {
    /// Reloads that ended with `outcome`.
    pub fn count(&self, outcome: ReloadOutcome) -> u64 {
        self.counts[outcome as usize].load(Ordering::Relaxed)
    }

    /// A message of a subscription a reload ended, given back to the broker unprocessed.
    pub fn released(&self) {
        self.released.fetch_add(1, Ordering::Relaxed);
    }

    /// Prometheus text of `bridge_config_reloads_total` and `bridge_config_reload_released_total`.
    pub fn render(&self, out: &mut String) {
        out.push_str("# HELP bridge_config_reloads_total Configuration reloads (SIGHUP), by outcome.\n");
        out.push_str("# TYPE bridge_config_reloads_total counter\n");
        for outcome in OUTCOMES {
            let n = self.count(outcome);
            let _ = writeln!(out, "bridge_config_reloads_total{{outcome=\"{}\"}} {n}", outcome.as_str());
        }
        out.push_str(
            "# HELP bridge_config_reload_released_total Messages of subscriptions a reload ended, \
             dispatched before the UNSUBSCRIBE: given back to the broker unprocessed.\n",
        );
        out.push_str("# TYPE bridge_config_reload_released_total counter\n");
        let _ =
            writeln!(out, "bridge_config_reload_released_total {}", self.released.load(Ordering::Relaxed));
    }

    /// `GET /config`: the counts and the last reload, as JSON.
    pub fn status(&self) -> String {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let counts: serde_json::Map<String, serde_json::Value> =
            OUTCOMES.iter().map(|o| (o.as_str().to_owned(), self.count(*o).into())).collect();
        let last = last.map(|l| {
            serde_json::json!({"outcome": l.outcome.as_str(), "file": l.file, "reason": l.reason,
                "at_unix_ms": l.at_unix_ms})
        });
        let status = serde_json::json!({"reloads": counts, "last_reload": last});
        format!("{status}\n")
    }
}

/// One reload's outcome: `reason` is what changed (applied) or why nothing did.
pub struct ConfigReloaded<'a> {
    pub outcome: ReloadOutcome,
    pub file: &'a str,
    pub reason: &'a str,
}

impl Event for ConfigReloaded<'_> {
    type Metrics = ReloadMetrics;
    type Counted = ();

    fn count(&self, metrics: &ReloadMetrics) {
        metrics.counts[self.outcome as usize].fetch_add(1, Ordering::Relaxed);
        let at_unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let last = Last {
            outcome: self.outcome,
            file: self.file.to_owned(),
            reason: self.reason.to_owned(),
            at_unix_ms,
        };
        *metrics.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(last);
    }

    fn log(&self, _: &(), _: u64) {
        let outcome = self.outcome.as_str();
        match self.outcome {
            ReloadOutcome::Applied => {
                info!(outcome, file = self.file, changes = self.reason, "configuration reloaded")
            }
            ReloadOutcome::Refused => warn!(
                outcome,
                file = self.file,
                reason = self.reason,
                "configuration reload refused; still running on the previous configuration"
            ),
            ReloadOutcome::Invalid => warn!(
                outcome,
                file = self.file,
                reason = self.reason,
                "configuration reload: the file does not validate; still running on the previous configuration"
            ),
        }
    }
}

#[cfg(test)]
#[path = "reload_tests.rs"]
mod tests;
