//! One A2A agent the bridge calls: how it is reached (its card, read once; its client, with
//! the bearer token and the call's `traceparent`, in A2A 1.0 or, for an agent whose card says
//! only 0.3, in 0.3), one attempt of a call, and the `CancelTask` of a call that gave up.

use super::call::{DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_CALLS};
use super::error::A2aFailure;
use super::stream::{Folded, ends};
use super::v03::{self, Transport03};
use crate::config::AgentConfig;
use crate::stomp::{Secret, TlsOptions, tls_client_config};
use a2a::{
    A2AError, AgentCard, CancelTaskRequest, GetTaskRequest, SendMessageRequest, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskId, error_code,
};
use a2a_client::A2AClient;
use a2a_client::auth::AuthInterceptor;
use a2a_client::jsonrpc::JsonRpcTransport;
use a2a_client::middleware::CallInterceptor;
use a2a_client::transport::Transport;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::Value;
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
    /// The A2A version it is called in.
    pub version: Version,
}

/// The A2A version of the JSON-RPC interface an agent is called on: 1.0, or 0.3 for an agent
/// whose card names no 1.x interface and says 0.3 (`protocolVersion`, or an interface's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Version {
    V1,
    V03,
}

/// A client of either version: the SDK's, on its transport or on the bridge's 0.3 one.
type Client = A2AClient<Box<dyn Transport>>;

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

    /// The card at `<url>/.well-known/agent-card.json`, as JSON (a 0.3 card is not the SDK's
    /// `AgentCard`).
    async fn card(&self) -> Result<Value, A2AError> {
        let url = format!("{}/.well-known/agent-card.json", self.url.trim_end_matches('/'));
        let unread =
            |e: String| A2AError::internal(format!("the agent card at {url} could not be read: {e}"));
        let answer = self.http.get(&url).send().await.map_err(|e| unread(e.to_string()))?;
        if !answer.status().is_success() {
            return Err(unread(format!("HTTP {}", answer.status())));
        }
        let body = answer.bytes().await.map_err(|e| unread(e.to_string()))?;
        serde_json::from_slice(&body).map_err(|e| unread(e.to_string()))
    }

    /// What the card says, read once (again after a failure).
    pub async fn known(&self) -> Result<Card, A2AError> {
        let mut known = self.card.lock().await;
        if let Some(card) = known.as_ref() {
            return Ok(card.clone());
        }
        let card = self.card().await?;
        let refused = |why: String| A2AError::new(a2a::error_code::UNSUPPORTED_OPERATION, why);
        let card = Card::of(card)?;
        let endpoint = card.endpoint.clone();
        // The token was given for the agent's URL: never sent to another origin, nor in clear.
        if self.token.is_some() && origin(&endpoint) != origin(&self.url) {
            let why = format!(
                "the card names {endpoint}, not at {}: the token is not sent there",
                origin(&self.url)
            );
            return Err(refused(why));
        }
        *known = Some(card.clone());
        Ok(card)
    }

    /// Its client for `card`'s endpoint, with the bearer token if configured and the call's
    /// `traceparent`.
    fn client(&self, card: &Card, traceparent: Option<&str>) -> Client {
        let (http, endpoint) = (self.http.clone(), card.endpoint.clone());
        let transport: Box<dyn Transport> = match card.version {
            Version::V1 => Box::new(JsonRpcTransport::new(http, endpoint)),
            Version::V03 => Box::new(Transport03::new(http, endpoint)),
        };
        let client = A2AClient::new(transport);
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
async fn resume(client: &Client, id: TaskId) -> Result<Resumed, A2AError> {
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
    described(card.description.clone(), card.skills.iter().map(|s| (s.name.clone(), s.description.clone())))
}

/// A card's `description` with its `skills` (name, description) said after it.
fn described(description: String, skills: impl Iterator<Item = (String, String)>) -> String {
    let skills: Vec<String> = skills
        .map(|(name, about)| match about.is_empty() {
            true => name,
            false => format!("{name} ({about})"),
        })
        .collect();
    match skills.is_empty() {
        true => description,
        false => format!("{} Skills: {}.", description.trim_end(), skills.join("; ")),
    }
}

/// `scheme://host:port` of a URL, lower-cased.
pub fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{scheme}://{authority}").to_ascii_lowercase()
}

impl Card {
    /// What the bridge takes from `card`: its A2A 1.x JSON-RPC interface (`supportedInterfaces`)
    /// when it names one, else its A2A 0.3 JSON-RPC interface (an interface of 0.x, or a 0.3
    /// card's `url` or `additionalInterfaces`); or why it cannot be called (a card that names
    /// no such interface is refused, one that cannot be read is an error of the attempt).
    fn of(card: Value) -> Result<Card, A2AError> {
        let refused = |why: &str| A2AError::new(a2a::error_code::UNSUPPORTED_OPERATION, why);
        let interfaces =
            card.get("supportedInterfaces").and_then(Value::as_array).cloned().unwrap_or_default();
        let jsonrpc = |major: &str| {
            interfaces.iter().find(|i| {
                i.get("protocolBinding").and_then(Value::as_str) == Some("JSONRPC")
                    && i.get("protocolVersion").and_then(Value::as_str).unwrap_or("1").split('.').next()
                        == Some(major)
            })
        };
        let url = |i: &Value| i.get("url").and_then(Value::as_str).map(str::to_owned);
        if jsonrpc("1").is_some() {
            let card: AgentCard = serde_json::from_value(card)
                .map_err(|e| A2AError::internal(format!("failed to parse agent card: {e}")))?;
            let endpoint =
                jsonrpc_url(&card).ok_or_else(|| refused("the agent's card names no JSON-RPC interface"))?;
            let streaming = card.capabilities.streaming.unwrap_or(false);
            return Ok(Card { endpoint, description: description(&card), streaming, version: Version::V1 });
        }
        let endpoint = jsonrpc("0").and_then(url).or_else(|| v03::jsonrpc_url(&card));
        let endpoint = endpoint.ok_or_else(|| refused("the agent's card names no JSON-RPC interface"))?;
        let streaming = card.pointer("/capabilities/streaming").and_then(Value::as_bool).unwrap_or(false);
        let about = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let skills = card.get("skills").and_then(Value::as_array).cloned().unwrap_or_default();
        let skills = skills.iter().map(|s| (about(s, "name"), about(s, "description")));
        let description = described(about(&card, "description"), skills);
        Ok(Card { endpoint, description, streaming, version: Version::V03 })
    }
}

/// The URL of the card's A2A 1.x JSON-RPC interface (`supportedInterfaces`).
fn jsonrpc_url(card: &AgentCard) -> Option<String> {
    let v1 = |i: &&a2a::AgentInterface| {
        i.protocol_version.split('.').next() == Some("1") || i.protocol_version.is_empty()
    };
    card.supported_interfaces
        .iter()
        .filter(v1)
        .find(|i| i.protocol_binding == "JSONRPC")
        .map(|i| i.url.clone())
}

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
