//! A2A 1.0 both ways (docs/A2A.md): native Wise Agents agents served as A2A agents (below),
//! and the A2A agents proxied, called by the stage in [`call`].
//!
//! The official Rust SDK (`a2a-server`) serves the JSON-RPC binding, keeps each task's
//! lifecycle and streams it over SSE; this module is what it calls: an executor that asks the
//! Wise Agents agent on the broker through the [`Relay`] ([`request`] reads the question,
//! pure), and a bounded task store.

mod cached;
pub mod call;
mod card;
pub mod error;
mod executor;
mod remote;
pub mod request;
mod required;
pub mod serve;
mod store;
mod stream;
pub mod trace;

use crate::config::Config;
use crate::config::a2a::A2aConfig;
use crate::names::glob_matches;
use crate::relay::Relay;
use std::sync::Arc;

/// The A2A service: the agents it serves, where clients reach them, and the relay their
/// tasks ask through.
pub struct A2aService {
    pub config: A2aConfig,
    /// The listener's URL as clients reach it (`a2a.public_url`, else `http://<http.listen>`).
    pub base_url: String,
    pub relay: Arc<Relay>,
}

impl A2aService {
    /// The service of `config`'s `[a2a]`, if it is set, asking through `relay`.
    pub fn of(config: &Config, relay: &Arc<Relay>) -> Option<Arc<A2aService>> {
        let a2a = config.a2a.clone()?;
        relay.metrics.a2a.served.enable();
        let scheme = if config.http.cert_file.is_some() { "https" } else { "http" };
        let base_url = a2a.public_url.clone().unwrap_or_else(|| format!("{scheme}://{}", config.http.listen));
        Some(Arc::new(A2aService { config: a2a, base_url, relay: relay.clone() }))
    }

    /// Whether `agent` is served (named, or matched by a glob of `a2a.serve`).
    pub fn serves(&self, agent: &str) -> bool {
        crate::names::is_agent_name(agent)
            && self.config.serve.iter().any(|s| s == agent || glob_matches(s, agent))
    }

    /// What `agent`'s card says it does: `a2a.descriptions`, else its entry in the Wise Agents
    /// registry (what a coordinator reads there), else the default.
    pub async fn description(&self, agent: &str) -> String {
        if let Some(said) = self.config.descriptions.get(agent) {
            return said.clone();
        }
        match self.relay.registered_description(agent).await {
            Some(description) => description,
            None => self.config.description(agent),
        }
    }

    /// The agents of the Wise Agents registry this bridge serves (its globs match them), for
    /// the listing: none without the registry, or when Redis does not answer in time.
    pub async fn registered(&self) -> Vec<String> {
        let mut served: Vec<String> =
            self.relay.registered().await.into_iter().filter(|n| self.serves(n)).collect();
        served.sort();
        served
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
