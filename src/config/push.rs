//! `[a2a.push]`: push notifications of the served agents' tasks (docs/A2A.md, "Push
//! notifications"): the table turns them on.

use serde::{Deserialize, Serialize};

/// How the webhooks clients register are called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    /// Whether a webhook may be on a loopback, private (RFC 1918, ULA), link-local or
    /// unspecified address, or a cloud metadata host. Off: a webhook is a way into the
    /// operator's network, and only a client the operator trusts should reach it.
    #[serde(default)]
    pub allow_private: bool,
    /// How long one call of a webhook may take.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Calls of a webhook for one task's update at most, the first included.
    #[serde(default = "default_attempts")]
    pub attempts: u32,
    /// The wait before the second call; doubled before each next one.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// The longest wait between two calls.
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
}

const fn default_timeout_ms() -> u64 {
    10_000
}

const fn default_attempts() -> u32 {
    5
}

const fn default_backoff_ms() -> u64 {
    1_000
}

const fn default_max_backoff_ms() -> u64 {
    30_000
}

impl Default for PushConfig {
    fn default() -> Self {
        PushConfig {
            allow_private: false,
            timeout_ms: default_timeout_ms(),
            attempts: default_attempts(),
            backoff_ms: default_backoff_ms(),
            max_backoff_ms: default_max_backoff_ms(),
        }
    }
}

impl PushConfig {
    /// Each broken rule as its key and why.
    pub(super) fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (key, value) in [
            ("timeout_ms", self.timeout_ms),
            ("attempts", u64::from(self.attempts)),
            ("backoff_ms", self.backoff_ms),
        ] {
            if value == 0 {
                out.push((format!("a2a.push.{key}"), "must be at least 1".into()));
            }
        }
        if self.max_backoff_ms < self.backoff_ms {
            out.push(("a2a.push.max_backoff_ms".into(), "must be at least a2a.push.backoff_ms".into()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_table_is_the_defaults_and_bad_bounds_are_named() {
        let push: PushConfig = toml::from_str("").unwrap();
        assert_eq!(push, PushConfig::default());
        assert_eq!(push.problems(), []);
        let bad: PushConfig = toml::from_str("attempts = 0\nbackoff_ms = 500\nmax_backoff_ms = 100").unwrap();
        let keys: Vec<String> = bad.problems().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a2a.push.attempts", "a2a.push.max_backoff_ms"]);
    }
}
