//! The requests the bridge asks Wise Agents agents on the broker for callers over HTTP (an A2A
//! task, an MCP tool call), each waiting for its answers: published on the bridge's publishing
//! connection as a QUERY from the bridge's reply agent with the caller's token in `_tool_id`
//! (which Wise Agents agents echo), answered through the bridge's own consumer: the pipeline
//! recognises the token and returns the answer as data ([`TaskAnswer`]); the engine hands it
//! here and acknowledges it.

use crate::config::{Config, WiseAgentsConfig};
use crate::envelope::Intent;
use crate::envelope::correlation::ReplyRoute;
use crate::envelope::wiseagents::WiseMessage;
use crate::names::glob_matches;
use crate::stomp::{Client, Command, Frame, SessionError};
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::a2a::{DefaultContext, LateAnswer};
use crate::telemetry::registry::RegistryUnavailable;
use crate::wise_registry::member::WiseRegistry;
use crate::wise_registry::store::RegistryError;
pub mod trace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// A Wise Agents answer to a waiting request, as the pipeline hands it over.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskAnswer {
    pub task: String,
    pub intent: Option<Intent>,
    pub text: String,
    pub sender: Option<String>,
}

/// Who waits for an answer: the gauge it counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    A2a,
    Mcp,
}

impl Caller {
    /// The prefix of an MCP call's id (an A2A task's id is the SDK's UUID): a late answer,
    /// which waits for nothing, is counted where its caller's are.
    pub const MCP_PREFIX: &'static str = "mcp-";

    fn of(task: &str) -> Caller {
        if task.starts_with(Self::MCP_PREFIX) { Caller::Mcp } else { Caller::A2a }
    }
}

/// The Wise Agents names the bridge asks with (none of them changes on a reload).
#[derive(Debug, Clone)]
pub struct Asking {
    pub request_prefix: String,
    /// `wiseagents.reply_agent`: the `_sender` of every request, whose response queue the
    /// bridge consumes.
    pub reply_agent: String,
}

/// The Wise Agents context for a caller's context `context_id` under `w`: the id itself when
/// it is the default context or one of `wiseagents.contexts`, else the default (a Wise Agents
/// agent fails on a context it does not know).
pub fn known_context<'a>(w: &'a WiseAgentsConfig, context_id: &'a str) -> &'a str {
    let known = context_id == w.default_context || w.contexts.iter().any(|g| glob_matches(g, context_id));
    if known { context_id } else { &w.default_context }
}

impl Asking {
    /// The QUERY that asks `agent` the question of `task` in the Wise Agents `context`: from
    /// the bridge's reply agent, its answer routed back to it, and the task's token in
    /// `_tool_id` (which Wise Agents agents echo).
    pub fn request_frame(&self, agent: &str, task: &str, context: &str, text: String) -> Frame {
        let context = context.to_owned();
        let route = ReplyRoute {
            task: Some(task.to_owned()),
            requester: Some(self.reply_agent.clone()),
            context: Some(context.clone()),
            ..ReplyRoute::default()
        };
        let message = WiseMessage {
            message: text,
            message_type: Some(Intent::Query),
            sender: Some(self.reply_agent.clone()),
            tool_id: Some(route.to_token()),
            route_response_to: Some(self.reply_agent.clone()),
            context_name: Some(context),
            extra: Vec::new(),
        };
        Frame::new(Command::Send)
            .with("destination", format!("{}{agent}", self.request_prefix))
            .with("persistent", "true")
            .with_body(message.to_yaml().into_bytes())
    }
}

/// The request's publication failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("the bridge is not connected to the broker yet")]
    NotConnected,
    #[error(transparent)]
    Broker(#[from] SessionError),
}

/// The requests waiting for their answer, and the connection they are published on.
pub struct Relay {
    pub asking: Asking,
    /// Whether requests are traced (`[traces]`: an export or the conversations page).
    pub traced: bool,
    pub metrics: Arc<Metrics>,
    waiting: Mutex<HashMap<String, (Caller, mpsc::UnboundedSender<TaskAnswer>)>>,
    publisher: Mutex<Option<Client>>,
    /// The Wise Agents registry, when `[wiseagents.registry]` is set.
    registry: Mutex<Option<Arc<WiseRegistry>>>,
    /// The configuration the bridge runs on, followed on reload (the MCP tools are read from
    /// it on each listing).
    running: Mutex<Arc<Config>>,
    /// What takes an A2A answer that no task here waits for, when the tasks are shared
    /// (`[a2a.store]`: the task may run on another bridge, or did here before a restart).
    adopter: Mutex<Option<Adopter>>,
}

/// See [`Relay::adopt_with`].
pub type Adopter = Arc<dyn Fn(TaskAnswer) + Send + Sync>;

/// How long a request waits for the Wise Agents registry before it goes on without it (the
/// configured description; the default context).
pub const REGISTRY_WAIT: Duration = Duration::from_secs(2);

impl Relay {
    /// The relay of `config`, when something asks through it (`[a2a]` or `[mcp]`).
    pub fn of(config: &Config, metrics: Arc<Metrics>) -> Option<Arc<Relay>> {
        if config.a2a.is_none() && config.mcp.is_none() {
            return None;
        }
        let w = &config.wiseagents;
        let asking = Asking { request_prefix: w.request_prefix.clone(), reply_agent: w.reply_agent.clone() };
        Some(Arc::new(Relay {
            asking,
            traced: config.traces.enabled(),
            metrics,
            waiting: Mutex::default(),
            publisher: Mutex::default(),
            registry: Mutex::default(),
            running: Mutex::new(Arc::new(config.clone())),
            adopter: Mutex::default(),
        }))
    }

    /// The connection requests are published on, from the bridge once it is connected.
    pub fn attach(&self, publisher: Client) {
        *self.publisher.lock().unwrap_or_else(|e| e.into_inner()) = Some(publisher);
    }

    /// The Wise Agents registry, from the bridge once it has started it.
    pub fn attach_registry(&self, registry: Option<Arc<WiseRegistry>>) {
        *self.registry.lock().unwrap_or_else(|e| e.into_inner()) = registry;
    }

    /// A2A answers that no task here waits for go to `adopter` from now on, instead of being
    /// dropped as late.
    pub fn adopt_with(&self, adopter: Adopter) {
        *self.adopter.lock().unwrap_or_else(|e| e.into_inner()) = Some(adopter);
    }

    /// The bridge runs on `config` from now on (a reload the engine took).
    pub fn follow(&self, config: &Config) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(config.clone());
    }

    /// The configuration the bridge runs on.
    pub fn running(&self) -> Arc<Config> {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The registry, unless Redis is known not to answer (the registry's stage or its keeper
    /// found so, or a call here timed out): a request then goes on at once without it, rather
    /// than wait [`REGISTRY_WAIT`] for nothing. The keeper's next check (every 10 s) that Redis
    /// answers, or the stage's, lets requests use it again.
    fn registry(&self) -> Option<Arc<WiseRegistry>> {
        if self.metrics.registry.is_down() {
            return None;
        }
        self.registry.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `read` on the registry within [`REGISTRY_WAIT`]; why not, when it failed. Redis not
    /// answering (in time) is recorded, so that the next requests do not wait for it too.
    async fn ask_registry<T>(
        &self,
        read: impl Future<Output = Result<T, RegistryError>>,
    ) -> Result<T, String> {
        let error = match tokio::time::timeout(REGISTRY_WAIT, read).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) if !error.is_unavailable() => return Err(error.to_string()),
            Ok(Err(error)) => error.to_string(),
            Err(_) => "the Wise Agents registry did not answer in time".to_owned(),
        };
        RegistryUnavailable { error: &error, retried: false }.emit(&self.metrics.registry);
        Err(error)
    }

    /// `agent`'s description in the Wise Agents registry (what a coordinator reads there):
    /// none without the registry, or when Redis does not answer within [`REGISTRY_WAIT`].
    pub async fn registered_description(&self, agent: &str) -> Option<String> {
        let registry = self.registry()?;
        self.ask_registry(registry.description(agent)).await.ok().flatten()
    }

    /// The agents of the Wise Agents registry: none without the registry, or when Redis does
    /// not answer within [`REGISTRY_WAIT`].
    pub async fn registered(&self) -> Vec<String> {
        let Some(registry) = self.registry() else { return Vec::new() };
        self.ask_registry(registry.agent_names()).await.unwrap_or_default()
    }

    /// The Wise Agents context a request with the caller's `context_id` asks in, under the
    /// running configuration's contexts (they change on a reload): the id itself when it is a
    /// context Wise Agents knows, or, with the registry, once it is made one there; else the
    /// default context (a Wise Agents agent fails on a context it does not know).
    pub async fn context_for(&self, context_id: &str) -> String {
        let running = self.running();
        let known = known_context(&running.wiseagents, context_id);
        if known == context_id || context_id.is_empty() {
            return known.to_owned();
        }
        let reason = match self.registry() {
            Some(registry) => match self.ask_registry(registry.make_context(context_id)).await {
                Ok(()) => return context_id.to_owned(),
                Err(reason) => reason,
            },
            None if self.metrics.registry.is_down() => {
                "the Wise Agents registry (Redis) does not answer: not waited for".to_owned()
            }
            None => return known.to_owned(),
        };
        DefaultContext { context: context_id, reason: &reason }.emit(&self.metrics.a2a);
        known.to_owned()
    }

    /// Publishes a request and waits for the broker's receipt.
    pub async fn publish(&self, frame: Frame) -> Result<(), PublishError> {
        let client = self.publisher.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let client = client.ok_or(PublishError::NotConnected)?;
        Ok(client.send_confirmed(frame).await?)
    }

    /// `task` waits for its answers from now on; it stops when the [`Waiting`] is dropped or
    /// the task is [canceled](Relay::cancel).
    pub fn wait(
        self: &Arc<Self>,
        task: &str,
        caller: Caller,
    ) -> (Waiting, mpsc::UnboundedReceiver<TaskAnswer>) {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.lock().insert(task.to_owned(), (caller, tx)).is_none() {
            self.count_waiting(caller, 1);
        }
        (Waiting { relay: self.clone(), task: task.to_owned() }, rx)
    }

    /// A canceled task waits no more: its answer, if it comes, is late.
    pub fn cancel(&self, task: &str) {
        self.stop_waiting(task);
    }

    fn stop_waiting(&self, task: &str) {
        if let Some((caller, _)) = self.lock().remove(task) {
            self.count_waiting(caller, -1);
        }
    }

    fn count_waiting(&self, caller: Caller, delta: i64) {
        match caller {
            Caller::A2a => self.metrics.a2a.served.waiting(delta),
            Caller::Mcp => self.metrics.mcp.served.waiting(delta),
        }
    }

    /// An answer from the pipeline, to the request that waits for it; else to the adopter, or
    /// dropped and counted.
    pub fn answer(&self, answer: TaskAnswer) {
        let waiting = self.lock().get(&answer.task).map(|(_, tx)| tx.clone());
        let task = answer.task.clone();
        let answer = match waiting {
            Some(tx) => match tx.send(answer) {
                Ok(()) => return,
                Err(unsent) => unsent.0,
            },
            None => answer,
        };
        let adopter = self.adopter.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match (Caller::of(&task), adopter) {
            (Caller::A2a, Some(adopter)) => adopter(answer),
            (Caller::A2a, None) => LateAnswer { task: &task }.emit(&self.metrics.a2a),
            (Caller::Mcp, _) => crate::telemetry::mcp::LateAnswer { call: &task }.emit(&self.metrics.mcp),
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (Caller, mpsc::UnboundedSender<TaskAnswer>)>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request's place in the relay, given up when dropped.
pub struct Waiting {
    relay: Arc<Relay>,
    task: String,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.relay.stop_waiting(&self.task);
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
