//! One A2A agent the bridge calls: how it is reached (its card, read once; its client, with
//! the bearer token and the call's `traceparent`), one attempt of a call, and the `CancelTask`
//! of a call that gave up.

use super::call::{DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_CALLS};
use super::error::A2aFailure;
use super::stream::{Folded, ends};
use crate::config::AgentConfig;
use crate::stomp::{Secret, TlsOptions, tls_client_config};
use a2a::{
    A2AError, AgentCard, CancelTaskRequest, GetTaskRequest, SendMessageRequest, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskId, error_code,
};
use a2a_client::A2AClient;
use a2a_client::agent_card::AgentCardResolver;
use a2a_client::auth::AuthInterceptor;
use a2a_client::jsonrpc::JsonRpcTransport;
use a2a_client::middleware::CallInterceptor;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::{Mutex, Semaphore};
use tracing::info;

/// One A2A agent: how it is reached.
pub struct Remote {
    pub name: String,
    pub url: String,
    http: reqwest::Client,
    token: Option<Secret>,
    /// What its card says, once read.
    pub card: Mutex<Option<Card>>,
    pub slots: Arc<Semaphore>,
    pub max_attempts: u32,
}

/// What the bridge takes from an agent's card.
#[derive(Debug, Clone)]
pub struct Card {
    /// The URL of its JSON-RPC interface.
    pub endpoint: String,
    /// Its description and skills, for the Wise Agents registry.
    pub description: String,
    /// Whether it streams (`capabilities.streaming`): then it is called with
    /// `SendStreamingMessage`.
    pub streaming: bool,
}

impl Remote {
    pub fn of(agent: &AgentConfig) -> Result<Remote, A2aFailure> {
        let url = agent.url.clone().unwrap_or_default();
        let tls = TlsOptions { ca_file: agent.ca_file.clone(), ..TlsOptions::default() };
        let unusable = |why: String| A2aFailure::Agent { agent: agent.name.clone(), why };
        let tls = tls_client_config(&tls).map_err(|e| unusable(e.to_string()))?;
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .build()
            .map_err(|e| unusable(format!("cannot make its HTTP client: {e}")))?;
        Ok(Remote {
            name: agent.name.clone(),
            url,
            http,
            token: agent.token.clone(),
            card: Mutex::new(None),
            slots: Arc::new(Semaphore::new(agent.max_calls.unwrap_or(DEFAULT_MAX_CALLS).max(1))),
            max_attempts: agent.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS).max(1),
        })
    }

    /// The card at `<url>/.well-known/agent-card.json`.
    async fn card(&self) -> Result<AgentCard, A2AError> {
        AgentCardResolver::new(Some(self.http.clone())).resolve(&self.url).await
    }

    /// What the card says, read once (again after a failure).
    pub async fn known(&self) -> Result<Card, A2AError> {
        let mut known = self.card.lock().await;
        if let Some(card) = known.as_ref() {
            return Ok(card.clone());
        }
        let card = self.card().await?;
        let refused = |why: String| A2AError::new(a2a::error_code::UNSUPPORTED_OPERATION, why);
        let endpoint = jsonrpc_url(&card)
            .ok_or_else(|| refused("the agent's card names no JSON-RPC interface".into()))?;
        // The token was given for the agent's URL: never sent to another origin, nor in clear.
        if self.token.is_some() && origin(&endpoint) != origin(&self.url) {
            let why = format!(
                "the card names {endpoint}, not at {}: the token is not sent there",
                origin(&self.url)
            );
            return Err(refused(why));
        }
        let streaming = card.capabilities.streaming.unwrap_or(false);
        let card = Card { endpoint, description: description(&card), streaming };
        *known = Some(card.clone());
        Ok(card)
    }

    /// Its client for `card`'s endpoint, with the bearer token if configured and the call's
    /// `traceparent`.
    fn client(&self, card: &Card, traceparent: Option<&str>) -> A2AClient<JsonRpcTransport> {
        let client = A2AClient::new(JsonRpcTransport::new(self.http.clone(), card.endpoint.clone()));
        let mut interceptors: Vec<Arc<dyn CallInterceptor>> = Vec::new();
        if let Some(token) = &self.token {
            interceptors.push(Arc::new(AuthInterceptor::bearer(token.expose())));
        }
        if let Some(value) = traceparent {
            interceptors.push(Arc::new(Traceparent(value.to_owned())));
        }
        match interceptors.is_empty() {
            true => client,
            false => client.with_interceptors(interceptors),
        }
    }

    /// One attempt: `SendMessage`, or `SendStreamingMessage` when the card says the agent
    /// streams (its events folded into the final task). A stream tells the task's id: kept in
    /// `opened`, and the next attempt resumes that task (`SubscribeToTask`) rather than asking
    /// again. A task that ended meanwhile (as `GetTask` gives it) is the answer; one the agent
    /// still has but cannot resume (it restarted) is canceled and asked again; one it no longer
    /// knows is asked again. An agent that cannot be reached keeps the task for the next attempt.
    pub async fn send(
        &self,
        request: &SendMessageRequest,
        traceparent: Option<&str>,
        opened: &StdMutex<Option<TaskId>>,
    ) -> Result<SendMessageResponse, A2AError> {
        let card = self.known().await?;
        let client = self.client(&card, traceparent);
        if !card.streaming {
            return client.send_message(request).await;
        }
        let resumed = lock(opened).clone();
        let events = match resumed {
            Some(id) => match resume(&client, id.clone()).await? {
                Resumed::Stream(events) => events,
                Resumed::Ended(task) => return Ok(SendMessageResponse::Task(*task)),
                Resumed::Orphaned => {
                    self.cancel(id, traceparent).await;
                    *lock(opened) = None;
                    client.send_streaming_message(request).await?
                }
                Resumed::Gone => {
                    *lock(opened) = None;
                    client.send_streaming_message(request).await?
                }
            },
            None => client.send_streaming_message(request).await?,
        };
        fold(events, opened).await
    }

    /// `task` as `GetTask` gives it, if it has ended (or waits for the asker), within `within`:
    /// the answer of a call whose last attempt broke just before the end came.
    pub async fn ended(&self, task: &TaskId, traceparent: Option<&str>, within: Duration) -> Option<Task> {
        let read = async {
            let card = self.known().await.ok()?;
            let request = GetTaskRequest { id: task.clone(), history_length: None, tenant: None };
            self.client(&card, traceparent).get_task(&request).await.ok()
        };
        let task = tokio::time::timeout(within, read).await.ok().flatten()?;
        ends(&task.status.state).then_some(task)
    }

    /// Asks the agent to cancel `task` (the call gave up on it, or cannot resume it), all of
    /// it (the card included) bounded by [`CANCEL_WITHIN`]; logged, never an error.
    pub async fn cancel(&self, task: TaskId, traceparent: Option<&str>) {
        let agent = &self.name;
        let canceled = async {
            let card = self.known().await?;
            let request = CancelTaskRequest { id: task.clone(), metadata: None, tenant: None };
            self.client(&card, traceparent).cancel_task(&request).await
        };
        match tokio::time::timeout(CANCEL_WITHIN, canceled).await {
            Ok(Ok(_)) => info!(%agent, %task, "an A2A task the call gave up on: canceled"),
            Ok(Err(e)) => {
                info!(%agent, %task, error = %e.message, "an A2A task the call gave up on: the agent did not cancel it")
            }
            Err(_) => {
                info!(%agent, %task, "an A2A task the call gave up on: no answer to CancelTask in time")
            }
        }
    }
}

/// How long a `CancelTask` of a task a call gave up on may take.
pub const CANCEL_WITHIN: Duration = Duration::from_secs(5);

/// A task an earlier attempt opened, asked for again.
enum Resumed {
    Stream(BoxStream<'static, Result<StreamResponse, A2AError>>),
    /// It ended meanwhile (or waits for the asker): as `GetTask` gives it.
    Ended(Box<Task>),
    /// The agent has it but cannot resume it (no execution runs it: the agent restarted).
    Orphaned,
    /// The agent does not know it.
    Gone,
}

/// What became of task `id`: a failure to reach the agent is the attempt's error (the task is
/// kept for the next attempt); any other refusal of `SubscribeToTask` is judged by `GetTask`.
async fn resume(client: &A2AClient<JsonRpcTransport>, id: TaskId) -> Result<Resumed, A2AError> {
    match client.subscribe_to_task(&SubscribeToTaskRequest { id: id.clone(), tenant: None }).await {
        Ok(events) => return Ok(Resumed::Stream(events)),
        Err(e) if e.code == error_code::INTERNAL_ERROR => return Err(e),
        Err(_) => {}
    }
    let read = GetTaskRequest { id, history_length: None, tenant: None };
    match client.get_task(&read).await {
        Ok(task) if ends(&task.status.state) => Ok(Resumed::Ended(Box::new(task))),
        Ok(_) => Ok(Resumed::Orphaned),
        Err(e) if e.code == error_code::TASK_NOT_FOUND => Ok(Resumed::Gone),
        Err(e) => Err(e),
    }
}

/// A stream's events folded into the answer; the task's id kept in `opened` as soon as an
/// event names it.
async fn fold(
    mut events: BoxStream<'static, Result<StreamResponse, A2AError>>,
    opened: &StdMutex<Option<TaskId>>,
) -> Result<SendMessageResponse, A2AError> {
    let mut folded = Folded::default();
    while let Some(event) = events.next().await {
        let event = event?;
        if let Some(id) = task_of(&event) {
            lock(opened).get_or_insert_with(|| id.clone());
        }
        if let Some(answer) = folded.take(event) {
            return Ok(answer);
        }
    }
    Err(A2AError::internal("the stream ended before the task finished"))
}

/// The task an event is about, if it names one.
fn task_of(event: &StreamResponse) -> Option<&TaskId> {
    match event {
        StreamResponse::Task(task) => Some(&task.id),
        StreamResponse::StatusUpdate(update) => Some(&update.task_id),
        StreamResponse::ArtifactUpdate(update) => Some(&update.task_id),
        StreamResponse::Message(_) => None,
    }
}

fn lock(opened: &StdMutex<Option<TaskId>>) -> std::sync::MutexGuard<'_, Option<TaskId>> {
    opened.lock().unwrap_or_else(|e| e.into_inner())
}

/// The W3C `traceparent` HTTP header on every request of a call: the agent (or its HTTP
/// instrumentation) continues the conversation's trace.
struct Traceparent(String);

#[async_trait::async_trait]
impl CallInterceptor for Traceparent {
    async fn before(
        &self,
        _method: &str,
        params: &mut a2a_client::transport::ServiceParams,
    ) -> Result<(), A2AError> {
        params.insert("traceparent".to_owned(), vec![self.0.clone()]);
        Ok(())
    }
}

/// What a coordinator reads of the agent in the Wise Agents registry: the card's description
/// and its skills.
fn description(card: &AgentCard) -> String {
    let skills: Vec<String> = card
        .skills
        .iter()
        .map(|s| match s.description.is_empty() {
            true => s.name.clone(),
            false => format!("{} ({})", s.name, s.description),
        })
        .collect();
    match skills.is_empty() {
        true => card.description.clone(),
        false => format!("{} Skills: {}.", card.description.trim_end(), skills.join("; ")),
    }
}

/// `scheme://host:port` of a URL, lower-cased.
pub fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{scheme}://{authority}").to_ascii_lowercase()
}

/// The URL of the card's JSON-RPC interface (A2A 1.0 `supportedInterfaces`).
fn jsonrpc_url(card: &AgentCard) -> Option<String> {
    card.supported_interfaces.iter().find(|i| i.protocol_binding == "JSONRPC").map(|i| i.url.clone())
}

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
