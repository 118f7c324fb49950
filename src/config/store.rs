//! `[a2a.store]`: the served agents' tasks kept in Redis, shared by every bridge that names the
//! same Redis and prefix, and kept over a restart (docs/A2A.md, "Where tasks are kept"); without
//! the table they are kept in memory.

use serde::{Deserialize, Serialize};

/// Where the tasks are kept, and how long a call waits for Redis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Redis host (it may be the registry's: the keys do not meet).
    #[serde(default = "default_host")]
    pub host: String,
    #[serde(default = "default_port")]
    pub port: u16,
    /// ACL user name, with `password`.
    #[serde(default)]
    pub username: Option<String>,
    /// Never logged.
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default)]
    pub db: u32,
    /// The start of every key and channel the store uses: bridges with the same prefix share
    /// their tasks.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// How long a call of the store waits for Redis (away, restarting, paused) before the
    /// A2A call it serves fails; an answer taken meanwhile waits for as long as it takes.
    #[serde(default = "default_wait_ms")]
    pub wait_ms: u64,
}

fn default_host() -> String {
    "127.0.0.1".into()
}

const fn default_port() -> u16 {
    6379
}

fn default_prefix() -> String {
    "stomp-agent-bridge:a2a:".into()
}

const fn default_wait_ms() -> u64 {
    30_000
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            host: default_host(),
            port: default_port(),
            username: None,
            password: None,
            db: 0,
            prefix: default_prefix(),
            wait_ms: default_wait_ms(),
        }
    }
}

impl StoreConfig {
    /// Its broken rules, each as its key and why.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.host.is_empty() {
            out.push(("a2a.store.host".into(), "must not be empty".into()));
        }
        if self.prefix.is_empty() {
            out.push(("a2a.store.prefix".into(), "must not be empty: the keys would meet others'".into()));
        }
        if self.wait_ms == 0 {
            out.push(("a2a.store.wait_ms".into(), "must be at least 1".into()));
        }
        if self.password.is_none() && self.username.is_some() {
            out.push(("a2a.store.username".into(), "needs a password".into()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_alone_is_a_local_redis_with_the_bridge_prefix() {
        let c: StoreConfig = toml::from_str("").unwrap();
        assert_eq!(c, StoreConfig::default());
        assert_eq!((c.host.as_str(), c.port, c.wait_ms), ("127.0.0.1", 6379, 30_000));
        assert!(c.problems().is_empty());
    }

    #[test]
    fn an_empty_prefix_and_a_user_without_a_password_are_refused() {
        let c: StoreConfig = toml::from_str("prefix = \"\"\nusername = \"u\"\nwait_ms = 0").unwrap();
        let keys: Vec<String> = c.problems().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a2a.store.prefix", "a2a.store.wait_ms", "a2a.store.username"]);
    }
}
