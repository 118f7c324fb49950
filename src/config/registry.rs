//! `[wiseagents.registry]`: where Wise Agents' registry lives (the settings of its
//! `registry_config.yaml`) and how the proxied agents appear in it.

use serde::{Deserialize, Serialize};

/// The registry's Redis and what the bridge writes there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// Redis host (`redis_host`).
    #[serde(default = "default_host")]
    pub host: String,
    /// Redis port (`redis_port`).
    #[serde(default = "default_port")]
    pub port: u16,
    /// ACL user name (`redis_username`), with `password`.
    #[serde(default)]
    pub username: Option<String>,
    /// Password (`redis_password`); never logged.
    #[serde(default)]
    pub password: Option<String>,
    /// Database index (Wise Agents always uses 0).
    #[serde(default)]
    pub db: u32,
    /// The Redis host written into contexts the bridge creates (`_config.redis_host`: what
    /// Wise Agents processes connect to when they load it); default: `host`.
    #[serde(default)]
    pub context_host: Option<String>,
    /// This bridge's mark on the entries it registers: entries marked by the same instance
    /// (left by a crash) are taken over at start, others are a start-up error.
    #[serde(default = "default_instance")]
    pub instance: String,
    /// Per proxied agent (`[[wiseagents.registry.agents]]`, by exact name): its description
    /// and tool. A list, as `[[agents]]` is.
    #[serde(default)]
    pub agents: Vec<RegisteredAgent>,
}

/// How one proxied agent is registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisteredAgent {
    /// The proxied agent's name.
    pub name: String,
    /// `WiseAgentMetaData.description`: what coordinators show their LLM.
    #[serde(default)]
    pub description: Option<String>,
    /// Also in `tools`, as an agent tool (callable by `LLMWiseAgentWithTools`).
    #[serde(default)]
    pub tool: bool,
    /// The tool's parameters, a JSON schema (default: `{}`).
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
}

impl Default for RegistryConfig {
    /// The table with no keys: `[wiseagents.registry]` alone.
    fn default() -> Self {
        RegistryConfig {
            host: default_host(),
            port: default_port(),
            username: None,
            password: None,
            db: 0,
            context_host: None,
            instance: default_instance(),
            agents: Vec::new(),
        }
    }
}

impl RegisteredAgent {
    /// The proxied agent `name`, with the default description and not a tool.
    pub fn new(name: impl Into<String>) -> RegisteredAgent {
        RegisteredAgent { name: name.into(), description: None, tool: false, parameters: None }
    }
}

fn default_host() -> String {
    "127.0.0.1".into()
}

const fn default_port() -> u16 {
    6379
}

fn default_instance() -> String {
    "stomp-agent-bridge".into()
}

impl RegistryConfig {
    /// What the configuration says of `name`, if anything.
    pub fn agent(&self, name: &str) -> Option<&RegisteredAgent> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The host contexts the bridge creates name.
    pub fn context_host(&self) -> &str {
        self.context_host.as_deref().unwrap_or(&self.host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_registry_table_parses_with_its_defaults() {
        let toml = r#"
            port = 6380
            password = "s3cret"
            [[agents]]
            name = "CivStep"
            description = "Knows the weather"
            tool = true
            parameters = { type = "object", properties = { location = { type = "string" } } }
        "#;
        let c: RegistryConfig = toml::from_str(toml).unwrap();
        assert_eq!((c.host.as_str(), c.port, c.db), ("127.0.0.1", 6380, 0));
        assert_eq!((c.context_host(), c.instance.as_str()), ("127.0.0.1", "stomp-agent-bridge"));
        let civ = c.agent("CivStep").unwrap();
        assert!(civ.tool);
        assert_eq!(civ.parameters.as_ref().unwrap()["properties"]["location"]["type"], "string");
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let r: Result<RegistryConfig, _> = toml::from_str("hots = \"x\"");
        assert!(r.unwrap_err().to_string().contains("hots"));
    }
}
