//! `[a2a]`: native Wise Agents agents served as A2A 1.0 agents, on the `[http]` listener
//! (docs/A2A.md).

use super::jwt::JwtConfig;
use super::push::PushConfig;
use super::store::StoreConfig;
use crate::stomp::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which native agents are served, and the limits of their tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aConfig {
    /// Native agents served over A2A: names, or globs (`"Weather*"`); a name a glob matches
    /// is served when it is asked for. Each gets its card at
    /// `/a2a/<Agent>/.well-known/agent-card.json` and its endpoints at `/a2a/<Agent>`.
    pub serve: Vec<String>,
    /// What each agent's card says it does, by exact name (default: "The Wise Agents agent
    /// <name>, through stomp-agent-bridge").
    #[serde(default)]
    pub descriptions: BTreeMap<String, String>,
    /// A file holding the bearer token every call (either binding) must carry
    /// (`Authorization: Bearer <token>`), one trailing line end dropped; relative to the
    /// configuration file. Without it the agents are open to whoever reaches the listener.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The token read from `token_file` (never written out, never logged).
    #[serde(skip)]
    pub token: Option<Secret>,
    /// JWT bearer tokens, checked against a JWK set, beside or instead of `token_file`.
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
    /// Push notifications (`[a2a.push]`): without the table they are not offered.
    #[serde(default)]
    pub push: Option<PushConfig>,
    /// The tasks in Redis (`[a2a.store]`), shared by the bridges that name it and kept over a
    /// restart; without the table, in memory.
    #[serde(default)]
    pub store: Option<StoreConfig>,
    /// The base URL clients reach the listener at, written into the cards (default:
    /// `http://<http.listen>`).
    #[serde(default)]
    pub public_url: Option<String>,
    /// How long a task waits for its Wise Agents answer before it fails.
    #[serde(default = "default_reply_timeout_ms")]
    pub reply_timeout_ms: u64,
    /// Tasks kept at most (running and finished); a new task past it evicts the oldest
    /// finished one, or is refused when every one is still running.
    #[serde(default = "default_max_tasks")]
    pub max_tasks: usize,
    /// How long a finished task can still be read (`GetTask`).
    #[serde(default = "default_task_ttl_ms")]
    pub task_ttl_ms: u64,
    /// Largest request body (either binding), in bytes.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
}

const fn default_reply_timeout_ms() -> u64 {
    120_000
}

const fn default_max_tasks() -> usize {
    10_000
}

const fn default_task_ttl_ms() -> u64 {
    3_600_000
}

const fn default_max_body_bytes() -> usize {
    1 << 20
}

impl A2aConfig {
    /// Reads `token_file` (relative to the configuration file at `path`) into `token`.
    pub(super) fn read_token_file(&mut self, path: &Path) -> Result<(), String> {
        let Some(file) = &self.token_file else { return Ok(()) };
        self.token = Some(super::read_secret(path, file)?);
        Ok(())
    }

    /// The rules that relate its keys (and `[http]`'s), each broken one as its key and why.
    pub(super) fn problems(
        &self,
        http_listen: &str,
        proxied: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut bad = |key: &str, why: String| out.push((format!("a2a.{key}"), why));
        if http_listen.is_empty() {
            bad("serve", "the A2A agents are served on the [http] listener: set http.listen".into());
        }
        if self.serve.is_empty() {
            bad("serve", "names no agent".into());
        }
        for name in &self.serve {
            let plain = name.replace(['*', '?'], "x");
            if !crate::names::is_agent_name(&plain) {
                bad("serve", format!("{name:?} is not an agent name or a glob of one"));
            } else if proxied(name) {
                bad("serve", format!("{name:?} is a proxied agent: A2A serves the native ones"));
            }
        }
        if let Some(url) = &self.public_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            bad("public_url", format!("{url:?} is not an http:// or https:// URL"));
        }
        for (key, value) in [
            ("reply_timeout_ms", self.reply_timeout_ms),
            ("max_tasks", self.max_tasks as u64),
            ("task_ttl_ms", self.task_ttl_ms),
            ("max_body_bytes", self.max_body_bytes as u64),
        ] {
            if value == 0 {
                bad(key, "must be at least 1".into());
            }
        }
        if self.reply_timeout_ms > super::MAX_REPLY_TIMEOUT_MS {
            bad("reply_timeout_ms", format!("must be at most {} (a day)", super::MAX_REPLY_TIMEOUT_MS));
        }
        out.extend(self.jwt.iter().flat_map(|j| j.problems("a2a.jwt")));
        out.extend(self.push.iter().flat_map(PushConfig::problems));
        out.extend(self.store.iter().flat_map(StoreConfig::problems));
        out
    }

    /// The description on `agent`'s card.
    pub fn description(&self, agent: &str) -> String {
        self.descriptions
            .get(agent)
            .cloned()
            .unwrap_or_else(|| format!("The Wise Agents agent {agent}, through stomp-agent-bridge"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_table_parses_with_its_defaults() {
        let c: A2aConfig =
            toml::from_str("serve = [\"Echo\", \"Weather*\"]\n[descriptions]\nEcho = \"Echoes\"\n").unwrap();
        assert_eq!(c.serve, ["Echo", "Weather*"]);
        assert_eq!((c.reply_timeout_ms, c.max_tasks, c.task_ttl_ms), (120_000, 10_000, 3_600_000));
        assert_eq!(c.description("Echo"), "Echoes");
        assert!(c.description("WeatherNow").contains("WeatherNow"));
    }

    #[test]
    fn it_needs_the_listener_native_names_and_bounds_of_at_least_one() {
        let c: A2aConfig =
            toml::from_str("serve = [\"Weather\", \"a b\"]\nmax_tasks = 0\npublic_url = \"ftp://x\"")
                .unwrap();
        let problems = c.problems("", &|name| name == "Weather");
        let text: String = problems.iter().map(|(k, why)| format!("{k}: {why}\n")).collect();
        for expected in [
            "set http.listen",
            "\"Weather\" is a proxied agent",
            "\"a b\" is not an agent name",
            "a2a.max_tasks",
            "ftp://x",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
        let fine: A2aConfig = toml::from_str("serve = [\"Assistant\", \"Trip*\"]").unwrap();
        assert_eq!(fine.problems("127.0.0.1:9464", &|_| false), []);
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let r: Result<A2aConfig, _> = toml::from_str("serve = []\nsrve = 1");
        assert!(r.unwrap_err().to_string().contains("srve"));
    }
}
