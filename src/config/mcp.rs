//! `[mcp]`: the agents of the society served as MCP tools on the `[http]` listener
//! (docs/MCP.md).

use super::jwt::JwtConfig;
use crate::stomp::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which agents are tools, and the limits of their calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The agents served as tools: names, or globs (`"Weather*"`, `"*"`) matched against the
    /// agents the bridge knows (`wiseagents.agents`, the proxied `[[agents]]`, and with
    /// `[wiseagents.registry]` every agent in the registry). Live on reload.
    pub tools: Vec<String>,
    /// What each tool's description says, by exact agent name (default: the agent's entry in
    /// the Wise Agents registry, else "The Wise Agents agent <name>, through
    /// stomp-agent-bridge"). Live on reload.
    #[serde(default)]
    pub descriptions: BTreeMap<String, String>,
    /// A file holding the bearer token every MCP request must carry
    /// (`Authorization: Bearer <token>`), one trailing line end dropped; relative to the
    /// configuration file. Without it (and without `[mcp.jwt]`) the tools are open to whoever
    /// reaches the listener.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The token read from `token_file` (never written out, never logged).
    #[serde(skip)]
    pub token: Option<Secret>,
    /// JWT bearer tokens, as `[a2a.jwt]` has them (the keys, what a token must say, and with
    /// `allow` which tools a token may list and call); beside `token_file`, either is accepted.
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
    /// How long a tool call waits for its Wise Agents answer before it ends as a tool error.
    #[serde(default = "default_reply_timeout_ms")]
    pub reply_timeout_ms: u64,
    /// Tool calls waiting for their answer at most: one more is a tool error saying so, and
    /// nothing is asked (a bound on what callers can make the bridge hold and publish).
    #[serde(default = "default_max_calls")]
    pub max_calls: usize,
    /// Largest MCP request body, in bytes.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// The `Host` headers served (a guard against DNS rebinding; names or `host:port`):
    /// loopback by default; add the names clients reach the listener by.
    #[serde(default = "default_allowed_hosts")]
    pub allowed_hosts: Vec<String>,
}

const fn default_reply_timeout_ms() -> u64 {
    120_000
}

const fn default_max_calls() -> usize {
    1_000
}

const fn default_max_body_bytes() -> usize {
    1 << 20
}

fn default_allowed_hosts() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec()
}

impl McpConfig {
    /// `[mcp]` serving `tools`, every other key as a file without it has it.
    pub fn new(tools: Vec<String>) -> McpConfig {
        McpConfig {
            tools,
            descriptions: BTreeMap::new(),
            token_file: None,
            token: None,
            jwt: None,
            reply_timeout_ms: default_reply_timeout_ms(),
            max_calls: default_max_calls(),
            max_body_bytes: default_max_body_bytes(),
            allowed_hosts: default_allowed_hosts(),
        }
    }

    /// Reads `token_file` (relative to the configuration file at `path`) into `token`.
    pub(super) fn read_token_file(&mut self, path: &Path) -> Result<(), String> {
        let Some(file) = &self.token_file else { return Ok(()) };
        self.token = Some(super::read_secret(path, file)?);
        Ok(())
    }

    /// The rules that relate its keys (and `[http]`'s), each broken one as its key and why.
    pub(super) fn problems(&self, http_listen: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut bad = |key: &str, why: String| out.push((format!("mcp.{key}"), why));
        if http_listen.is_empty() {
            bad("tools", "the MCP tools are served on the [http] listener: set http.listen".into());
        }
        if self.tools.is_empty() {
            bad("tools", "names no agent".into());
        }
        for name in &self.tools {
            let plain = name.replace(['*', '?'], "x");
            if !crate::names::is_agent_name(&plain) {
                bad("tools", format!("{name:?} is not an agent name or a glob of one"));
            }
        }
        if self.allowed_hosts.is_empty() {
            bad("allowed_hosts", "names no host: no request could be served".into());
        }
        for (key, value) in [
            ("reply_timeout_ms", self.reply_timeout_ms),
            ("max_calls", self.max_calls as u64),
            ("max_body_bytes", self.max_body_bytes as u64),
        ] {
            if value == 0 {
                bad(key, "must be at least 1".into());
            }
        }
        if self.reply_timeout_ms > super::MAX_REPLY_TIMEOUT_MS {
            bad("reply_timeout_ms", format!("must be at most {} (a day)", super::MAX_REPLY_TIMEOUT_MS));
        }
        out.extend(self.jwt.iter().flat_map(|j| j.problems("mcp.jwt")));
        out
    }

    /// Whether `agent` is a tool (named, or matched by a glob of `tools`).
    pub fn serves(&self, agent: &str) -> bool {
        crate::names::is_agent_name(agent)
            && self.tools.iter().any(|t| t == agent || crate::names::glob_matches(t, agent))
    }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
