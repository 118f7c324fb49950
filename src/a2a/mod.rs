//! A2A 1.0 both ways (docs/A2A.md): native Wise Agents agents served as A2A agents (below),
//! and the A2A agents proxied, called by the stage in [`call`].
//!
//! The official Rust SDK (`a2a-server`) serves the JSON-RPC binding, keeps each task's
//! lifecycle and streams it over SSE; this module is what it calls: an executor that asks the
//! Wise Agents agent on the broker ([`request`] makes the message, pure), a [`TaskRelay`] where each
//! task waits for its answer, and a bounded task store. Answers come back through the bridge's
//! own consumer: the pipeline recognises a task's token in `_tool_id` and returns the answer as
//! data ([`TaskAnswer`]); the engine hands it to the hub and acknowledges it.

mod cached;
pub mod call;
mod card;
pub mod error;
mod executor;
pub mod request;
mod required;
pub mod serve;
mod store;
mod stream;
pub mod trace;

use crate::config::Config;
use crate::config::a2a::A2aConfig;
use crate::envelope::Intent;
use crate::names::glob_matches;
use crate::stomp::{Client, Frame};
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::a2a::{DefaultContext, LateAnswer};
use crate::wise_registry::member::WiseRegistry;
use error::A2aFailure;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// A Wise Agents answer to an A2A task, as the pipeline hands it over.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskAnswer {
    pub task: String,
    pub intent: Option<Intent>,
    pub text: String,
    pub sender: Option<String>,
}

/// The Wise Agents names the service asks with.
#[derive(Debug, Clone)]
pub struct Asking {
    pub request_prefix: String,
    /// `wiseagents.reply_agent`: the `_sender` of every request, whose response queue the
    /// bridge consumes.
    pub reply_agent: String,
    pub default_context: String,
    /// `wiseagents.contexts`: an A2A `contextId` is used as `_context_name` only when it is
    /// one of these (or the default); a Wise Agents agent fails on a context it does not know.
    pub contexts: Vec<String>,
}

impl Asking {
    /// The Wise Agents context for an A2A `contextId`.
    pub fn context_for<'a>(&'a self, context_id: &'a str) -> &'a str {
        let known =
            context_id == self.default_context || self.contexts.iter().any(|g| glob_matches(g, context_id));
        if known { context_id } else { &self.default_context }
    }
}

/// The tasks waiting for their answer, and the connection their requests are published on.
pub struct TaskRelay {
    pub config: A2aConfig,
    /// The listener's URL as clients reach it (`a2a.public_url`, else `http://<http.listen>`).
    pub base_url: String,
    pub asking: Asking,
    /// Whether tasks are traced (`[traces]`: an export or the conversations page).
    pub traced: bool,
    metrics: Arc<Metrics>,
    waiting: Mutex<HashMap<String, mpsc::UnboundedSender<TaskAnswer>>>,
    publisher: Mutex<Option<Client>>,
    /// The Wise Agents registry, when `[wiseagents.registry]` is set: cards take their
    /// descriptions from it, and a task's `contextId` is made a Wise Agents context in it.
    registry: Mutex<Option<Arc<WiseRegistry>>>,
}

/// How long a card or a request waits for the Wise Agents registry before it goes on without
/// it (the configured description; the default context).
const REGISTRY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl TaskRelay {
    /// The hub of `config`'s `[a2a]`, if it is set.
    pub fn of(config: &Config, metrics: Arc<Metrics>) -> Option<Arc<TaskRelay>> {
        let a2a = config.a2a.clone()?;
        let w = &config.wiseagents;
        let asking = Asking {
            request_prefix: w.request_prefix.clone(),
            reply_agent: w.reply_agent.clone(),
            default_context: w.default_context.clone(),
            contexts: w.contexts.clone(),
        };
        metrics.a2a.enable();
        let scheme = if config.http.cert_file.is_some() { "https" } else { "http" };
        let base_url = a2a.public_url.clone().unwrap_or_else(|| format!("{scheme}://{}", config.http.listen));
        Some(Arc::new(TaskRelay {
            config: a2a,
            base_url,
            asking,
            traced: config.traces.enabled(),
            metrics,
            waiting: Mutex::default(),
            publisher: Mutex::default(),
            registry: Mutex::default(),
        }))
    }

    /// Whether `agent` is served (named, or matched by a glob of `a2a.serve`).
    pub fn serves(&self, agent: &str) -> bool {
        crate::names::is_agent_name(agent)
            && self.config.serve.iter().any(|s| s == agent || glob_matches(s, agent))
    }

    /// The connection requests are published on, from the bridge once it is connected.
    pub fn attach(&self, publisher: Client) {
        *self.publisher.lock().unwrap_or_else(|e| e.into_inner()) = Some(publisher);
    }

    /// The Wise Agents registry, from the bridge once it has started it.
    pub fn attach_registry(&self, registry: Option<Arc<WiseRegistry>>) {
        *self.registry.lock().unwrap_or_else(|e| e.into_inner()) = registry;
    }

    fn registry(&self) -> Option<Arc<WiseRegistry>> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What `agent`'s card says it does: `a2a.descriptions`, else its entry in the Wise Agents
    /// registry (what a coordinator reads there), else the default.
    pub async fn description(&self, agent: &str) -> String {
        if let Some(said) = self.config.descriptions.get(agent) {
            return said.clone();
        }
        let registry = self.registry();
        let read = async { registry?.description(agent).await.ok().flatten() };
        match tokio::time::timeout(REGISTRY_WAIT, read).await {
            Ok(Some(description)) => description,
            _ => self.config.description(agent),
        }
    }

    /// The agents of the Wise Agents registry this bridge serves (its globs match them), for
    /// the listing: none without the registry, or when Redis does not answer in time.
    pub async fn registered(&self) -> Vec<String> {
        let registry = self.registry();
        let read = async { registry?.agent_names().await.ok() };
        let names = tokio::time::timeout(REGISTRY_WAIT, read).await.ok().flatten().unwrap_or_default();
        let mut served: Vec<String> = names.into_iter().filter(|n| self.serves(n)).collect();
        served.sort();
        served
    }

    /// The Wise Agents context a task with `context_id` asks in: the id itself when it is a
    /// context Wise Agents knows, or, with the registry, once it is made one there; else the
    /// default context (a Wise Agents agent fails on a context it does not know).
    pub async fn context_for(&self, context_id: &str) -> String {
        let known = self.asking.context_for(context_id);
        if known == context_id || context_id.is_empty() {
            return known.to_owned();
        }
        let Some(registry) = self.registry() else { return known.to_owned() };
        match tokio::time::timeout(REGISTRY_WAIT, registry.make_context(context_id)).await {
            Ok(Ok(())) => context_id.to_owned(),
            Ok(Err(error)) => {
                DefaultContext { context: context_id, reason: &error.to_string() }.emit(&self.metrics.a2a);
                known.to_owned()
            }
            Err(_) => {
                let reason = "the Wise Agents registry did not answer in time";
                DefaultContext { context: context_id, reason }.emit(&self.metrics.a2a);
                known.to_owned()
            }
        }
    }

    /// Publishes a request and waits for the broker's receipt.
    async fn publish(&self, frame: Frame) -> Result<(), A2aFailure> {
        let client = self.publisher.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let client = client.ok_or(A2aFailure::NotConnected)?;
        Ok(client.send_confirmed(frame).await?)
    }

    /// `task` waits for its answers from now on; it stops when the [`Waiting`] is dropped
    /// or the task is [canceled](TaskRelay::cancel).
    fn wait(self: &Arc<Self>, task: &str) -> (Waiting, mpsc::UnboundedReceiver<TaskAnswer>) {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.lock().insert(task.to_owned(), tx).is_none() {
            self.metrics.a2a.waiting(1);
        }
        (Waiting { hub: self.clone(), task: task.to_owned() }, rx)
    }

    /// A canceled task waits no more: its answer, if it comes, is late.
    pub fn cancel(&self, task: &str) {
        self.stop_waiting(task);
    }

    fn stop_waiting(&self, task: &str) {
        if self.lock().remove(task).is_some() {
            self.metrics.a2a.waiting(-1);
        }
    }

    /// An answer from the pipeline, to the task that waits for it (or dropped and counted).
    pub fn answer(&self, answer: TaskAnswer) {
        let waiting = self.lock().get(&answer.task).cloned();
        let task = answer.task.clone();
        if waiting.is_none_or(|tx| tx.send(answer).is_err()) {
            LateAnswer { task: &task }.emit(&self.metrics.a2a);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<TaskAnswer>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A task's place in the hub, given up when dropped.
struct Waiting {
    hub: Arc<TaskRelay>,
    task: String,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.hub.stop_waiting(&self.task);
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
