//! A2A 1.0 both ways (docs/A2A.md): native Wise Agents agents served as A2A agents (below),
//! and the A2A agents proxied, called by the stage in [`call`]; A2A 0.3 both ways on the
//! JSON-RPC binding, as the 1.0 calls it is made ([`v03`]).
//!
//! The official Rust SDK (`a2a-server`) serves the JSON-RPC binding, keeps each task's
//! lifecycle and streams it over SSE; this module is what it calls: an executor that asks the
//! Wise Agents agent on the broker through the [`Relay`] ([`request`] reads the question,
//! pure), and a bounded task store ([`store`]: in memory, or in Redis shared by a group of
//! bridges, which then also take each other's answers: [`adopt`]).

mod adopt;
mod auth;
mod cached;
pub mod call;
mod card;
pub mod error;
mod executor;
mod follow;
mod handler;
pub mod jwt;
pub mod push;
mod remote;
pub mod request;
mod required;
mod rest;
pub mod serve;
mod store;
mod stream;
pub mod trace;
mod v03;

use crate::config::Config;
use crate::config::a2a::A2aConfig;
use crate::names::glob_matches;
use crate::relay::Relay;
use crate::telemetry::Event as _;
use crate::telemetry::a2a::KeysUnread;
use std::sync::Arc;
use std::time::Duration;

/// The A2A service: the agents it serves, where clients reach them, and the relay their
/// tasks ask through.
pub struct A2aService {
    pub config: A2aConfig,
    /// The listener's URL as clients reach it (`a2a.public_url`, else `http://<http.listen>`).
    pub base_url: String,
    pub relay: Arc<Relay>,
    /// The checker of JWT bearer tokens (`[a2a.jwt]`).
    pub jwt: Option<Arc<jwt::Jwt>>,
    /// The caller of the tasks' webhooks (`[a2a.push]`).
    pub pusher: Option<Arc<push::Pusher>>,
    /// When each card's body was first served (its `Last-Modified`).
    pub cards: cached::Versions,
    /// The tasks (`[a2a.store]`).
    pub tasks: store::Tasks,
}

impl A2aService {
    /// The service of `config`'s `[a2a]`, if it is set, asking through `relay`; with
    /// `[a2a.jwt]`, its keys are read again on a period beside it (on the runtime).
    pub fn of(config: &Config, relay: &Arc<Relay>) -> Result<Option<Arc<A2aService>>, String> {
        let Some(a2a) = config.a2a.clone() else { return Ok(None) };
        let jwt = a2a.jwt.as_ref().map(|j| jwt::Jwt::new(j, "a2a.jwt")).transpose()?.map(Arc::new);
        if let Some(jwt) = &jwt {
            let metrics = relay.metrics.clone();
            jwt::spawn_refresh(jwt, move |u| KeysUnread { from: &u.from, why: &u.why }.emit(&metrics.a2a));
        }
        let pusher = a2a.push.as_ref().map(|p| push::Pusher::new(p, relay.metrics.clone())).transpose()?;
        relay.metrics.a2a.served.enable();
        let scheme = if config.http.cert_file.is_some() { "https" } else { "http" };
        let base_url = a2a.public_url.clone().unwrap_or_else(|| format!("{scheme}://{}", config.http.listen));
        let pusher = pusher.map(Arc::new);
        let tasks = tasks(&a2a, pusher.clone());
        if let Some(shared) = tasks.shared() {
            let (shared, metrics) = (shared.clone(), relay.metrics.clone());
            relay.adopt_with(Arc::new(move |answer| adopt::spawn(shared.clone(), metrics.clone(), answer)));
        }
        Ok(Some(Arc::new(A2aService {
            config: a2a,
            base_url,
            relay: relay.clone(),
            jwt,
            pusher,
            cards: Default::default(),
            tasks,
        })))
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

/// The task store `a2a` names: in Redis with `[a2a.store]`, else in memory.
fn tasks(a2a: &A2aConfig, pusher: Option<Arc<push::Pusher>>) -> store::Tasks {
    let (max, ttl) = (a2a.max_tasks, Duration::from_millis(a2a.task_ttl_ms));
    match &a2a.store {
        None => store::Tasks::Memory(store::Memory::new(max, ttl, pusher)),
        Some(config) => {
            let reply_timeout = Duration::from_millis(a2a.reply_timeout_ms);
            store::Tasks::Shared(store::Shared::new(config.clone(), max, ttl, reply_timeout, pusher))
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
