//! Calls to A2A agents, the proxied agents with `protocol = "a2a"`: a stage of its own, as the
//! registry's is, so that a slow or absent agent holds only the requests to it, never the
//! engine. The engine hands over a request the pipeline made (a `SendMessageRequest`, pure);
//! the stage reads the agent's card once (its JSON-RPC endpoint, whether it streams), calls
//! `SendMessage` (`SendStreamingMessage` when it streams, [`super::stream`] folding the events)
//! with the official SDK's client, at most `max_calls` at once per agent, and gives back what
//! the agent answered, for the pipeline to turn into the asker's answer. An attempt that fails in a way
//! another may not (unreachable, an HTTP or JSON-RPC internal error, garbage, a timeout) is made
//! again with backoff, up to `max_attempts` and within the reply timeout; after that the
//! result is a failed task that says why, and the engine dead-letters the request.

use super::error::A2aFailure;
use super::stream::Folded;
use crate::config::{AgentConfig, Config};
use crate::envelope::codecs::Framework;
use crate::stomp::{Secret, TlsOptions, tls_client_config};
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::a2a_calls::{CallEnded, CallRetried};
use a2a::{
    A2AError, AgentCard, Message, Part, Role, SendMessageRequest, SendMessageResponse, Task, TaskState,
    TaskStatus,
};
use a2a_client::A2AClient;
use a2a_client::agent_card::AgentCardResolver;
use a2a_client::auth::AuthInterceptor;
use a2a_client::jsonrpc::JsonRpcTransport;
use a2a_client::middleware::CallInterceptor;
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, Semaphore, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Calls under way to one agent at once, unless `max_calls` says otherwise.
pub const DEFAULT_MAX_CALLS: usize = 4;
/// Attempts of one call, unless `max_attempts` says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// How long one attempt may take when no reply timeout bounds the call.
const UNBOUNDED_ATTEMPT: Duration = Duration::from_secs(120);
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A request for an A2A agent, as the pipeline wrote it.
#[derive(Debug)]
pub struct Call {
    /// The caller's name for it, given back with the result.
    pub id: u64,
    pub agent: String,
    /// The JSON of the `SendMessageRequest`.
    pub request: Bytes,
    /// The message id the agent sees, the same on every attempt and every redelivery of the
    /// request (an agent that deduplicates by it runs the request once).
    pub message_id: String,
    /// When the asker's ask times out (the pipeline's one rule for reply timeouts): the call
    /// gives up then. None: each attempt is bounded by itself ([`UNBOUNDED_ATTEMPT`]).
    pub deadline: Option<Instant>,
    /// The W3C `traceparent` the call carries as an HTTP header (docs/OBSERVABILITY.md).
    pub traceparent: Option<String>,
}

/// A call done: what the agent answered (a `SendMessageResponse`'s JSON), or, when no answer
/// came, a failed task that says why and the reason itself.
#[derive(Debug)]
pub struct Called {
    pub id: u64,
    pub answer: Bytes,
    pub failure: Option<A2aFailure>,
    /// The attempts made (0: none, the call failed before its first).
    pub attempts: u32,
}

/// The handle on the stage's task.
pub struct Calls {
    requests: mpsc::UnboundedSender<Call>,
    results: mpsc::UnboundedReceiver<Called>,
    remotes: Remotes,
}

/// One A2A agent: how it is reached.
struct Remote {
    name: String,
    url: String,
    http: reqwest::Client,
    token: Option<Secret>,
    /// What its card says, once read.
    card: Mutex<Option<Card>>,
    slots: Arc<Semaphore>,
    max_attempts: u32,
}

/// What the bridge takes from an agent's card.
#[derive(Debug, Clone)]
struct Card {
    /// The URL of its JSON-RPC interface.
    endpoint: String,
    /// Its description and skills, for the Wise Agents registry.
    description: String,
    /// Whether it streams (`capabilities.streaming`): then it is called with
    /// `SendStreamingMessage`.
    streaming: bool,
}

type Remotes = Arc<HashMap<String, Arc<Remote>>>;

/// How long the start waits for the cards the Wise Agents registry describes agents by.
const CARDS_AT_START: Duration = Duration::from_secs(5);

impl Calls {
    /// Starts the stage for the A2A agents of `config` (none: no stage). An agent whose TLS
    /// settings cannot be used is an error.
    pub fn spawn(
        config: &Config,
        metrics: Arc<Metrics>,
        shutdown: CancellationToken,
    ) -> Result<Option<Calls>, A2aFailure> {
        let agents: Vec<&AgentConfig> =
            config.agents.iter().filter(|a| a.protocol == Framework::A2a).collect();
        if agents.is_empty() {
            return Ok(None);
        }
        let mut remotes = HashMap::new();
        for agent in agents {
            let remote = Remote::of(agent)?;
            remotes.insert(agent.name.clone(), Arc::new(remote));
        }
        metrics.a2a_calls.agents(remotes.keys().map(String::as_str));
        let (requests, inbox) = mpsc::unbounded_channel();
        let (outbox, results) = mpsc::unbounded_channel();
        let remotes: Remotes = Arc::new(remotes);
        tokio::spawn(run(remotes.clone(), metrics, inbox, outbox, shutdown));
        Ok(Some(Calls { requests, results, remotes }))
    }

    /// Every agent's card read (at most [`CARDS_AT_START`], all at once): what each says it
    /// does, by agent, for those whose card came. One that did not is read again at its first
    /// call; it is registered with the default description.
    pub fn descriptions(&self) -> impl Future<Output = HashMap<String, String>> + Send + 'static {
        let remotes = self.remotes.clone();
        async move { read_cards(&remotes).await }
    }

    /// Every agent's card is read again at its next call (a configuration reload: the agent's
    /// endpoint, streaming or skills may have changed).
    pub fn forget_cards(&self) {
        for remote in self.remotes.values() {
            if let Ok(mut card) = remote.card.try_lock() {
                *card = None;
            }
        }
    }

    /// Queues a call; its result comes from [`Calls::next`]. Once the stage has stopped
    /// (shutdown) the call is dropped, and with it nothing: its message stays the caller's.
    pub fn call(&self, call: Call) {
        let _ = self.requests.send(call);
    }

    /// The next call done (never, once the stage has stopped).
    pub async fn next(&mut self) -> Option<Called> {
        self.results.recv().await
    }
}

/// [`Calls::descriptions`].
async fn read_cards(remotes: &Remotes) -> HashMap<String, String> {
    let reads = remotes.values().map(|remote| async move {
            match tokio::time::timeout(CARDS_AT_START, remote.known()).await {
                Ok(Ok(card)) => {
                    info!(agent = %remote.name, url = %remote.url, endpoint = %card.endpoint, "A2A agent card read");
                    Some((remote.name.clone(), card.description))
                }
                Ok(Err(e)) => {
                    warn!(agent = %remote.name, url = %remote.url, error = %e.message, "cannot read the A2A agent's card yet");
                    None
                }
                Err(_) => {
                    let within_s = CARDS_AT_START.as_secs();
                    warn!(agent = %remote.name, url = %remote.url, within_s, "the A2A agent's card did not come");
                    None
                }
            }
        });
    futures_util::future::join_all(reads).await.into_iter().flatten().collect()
}

impl Remote {
    fn of(agent: &AgentConfig) -> Result<Remote, A2aFailure> {
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
    async fn known(&self) -> Result<Card, A2AError> {
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

    /// One attempt, bearer token if configured: `SendStreamingMessage` when the card says the
    /// agent streams (its events folded into the final task), else `SendMessage`.
    async fn send(
        &self,
        request: &SendMessageRequest,
        traceparent: Option<&str>,
    ) -> Result<SendMessageResponse, A2AError> {
        let card = self.known().await?;
        let mut client = A2AClient::new(JsonRpcTransport::new(self.http.clone(), card.endpoint));
        let mut interceptors: Vec<Arc<dyn CallInterceptor>> = Vec::new();
        if let Some(token) = &self.token {
            interceptors.push(Arc::new(AuthInterceptor::bearer(token.expose())));
        }
        if let Some(value) = traceparent {
            interceptors.push(Arc::new(Traceparent(value.to_owned())));
        }
        if !interceptors.is_empty() {
            client = client.with_interceptors(interceptors);
        }
        if !card.streaming {
            return client.send_message(request).await;
        }
        let mut events = client.send_streaming_message(request).await?;
        let mut folded = Folded::default();
        while let Some(event) = events.next().await {
            if let Some(answer) = folded.take(event?) {
                return Ok(answer);
            }
        }
        Err(A2AError::internal("the stream ended before the task finished"))
    }
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
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{scheme}://{authority}").to_ascii_lowercase()
}

/// The URL of the card's JSON-RPC interface (A2A 1.0 `supportedInterfaces`).
fn jsonrpc_url(card: &AgentCard) -> Option<String> {
    card.supported_interfaces.iter().find(|i| i.protocol_binding == "JSONRPC").map(|i| i.url.clone())
}

async fn run(
    remotes: Remotes,
    metrics: Arc<Metrics>,
    mut inbox: mpsc::UnboundedReceiver<Call>,
    outbox: mpsc::UnboundedSender<Called>,
    shutdown: CancellationToken,
) {
    loop {
        let call = tokio::select! {
            _ = shutdown.cancelled() => return,
            call = inbox.recv() => match call { Some(call) => call, None => return },
        };
        // A call under way is not cut short by shutdown: the engine waits for it (bounded by
        // the shutdown timeout) so that its request is settled, not sent again by the next run.
        let (remotes, metrics, outbox) = (remotes.clone(), metrics.clone(), outbox.clone());
        tokio::spawn(async move {
            let (id, agent) = (call.id, call.agent.clone());
            let called = unless_panicked(id, &agent, &metrics, one_call(&remotes, &metrics, call));
            let _ = outbox.send(called.await);
        });
    }
}

/// `call`'s result, or, if it panics (a bug in the client, which the tokio task would swallow,
/// leaving the request held until a restart), a failed call, counted and logged as one: the
/// asker is answered and the request dead-lettered. The panic's message is on standard error.
async fn unless_panicked(
    id: u64,
    agent: &str,
    metrics: &Metrics,
    call: impl Future<Output = Called>,
) -> Called {
    AssertUnwindSafe(call).catch_unwind().await.unwrap_or_else(|_| {
        let panicked = A2aFailure::Panicked;
        CallEnded { agent, attempts: 0, reason: Some(&panicked.to_string()) }.emit(&metrics.a2a_calls);
        failed(id, panicked)
    })
}

/// A call from its request to its result, with a slot of its agent's.
async fn one_call(remotes: &Remotes, metrics: &Metrics, call: Call) -> Called {
    let Call { id, agent, request, message_id, deadline, traceparent } = call;
    let Some(remote) = remotes.get(&agent) else {
        return failed(id, A2aFailure::Unknown { agent });
    };
    let mut request: SendMessageRequest = match serde_json::from_slice(&request) {
        Ok(request) => request,
        Err(e) => return failed(id, A2aFailure::Request { agent, why: e.to_string() }),
    };
    request.message.message_id = message_id;
    if let Some(value) = &traceparent {
        // Beside the header, where a framework reads its message and not its HTTP request.
        let metadata = request.message.metadata.get_or_insert_with(Default::default);
        metadata.insert(super::trace::METADATA_KEY.to_owned(), value.clone().into());
    }
    metrics.a2a_calls.waiting(&agent, 1);
    let acquire = remote.slots.clone().acquire_owned();
    let slot = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, acquire).await.ok(),
        None => Some(acquire.await),
    };
    metrics.a2a_calls.waiting(&agent, -1);
    let _slot = match slot {
        Some(Ok(slot)) => slot,
        Some(Err(_)) => return failed(id, A2aFailure::Closing),
        None => return failed(id, A2aFailure::NoFreeCall { agent }),
    };
    let in_flight = metrics.a2a_calls.in_flight(&agent);
    let result = attempts(remote, metrics, (&request, traceparent.as_deref()), deadline).await;
    drop(in_flight);
    match result {
        Ok((answer, attempts)) => {
            CallEnded { agent: &agent, attempts, reason: None }.emit(&metrics.a2a_calls);
            Called { id, answer: answer.into(), failure: None, attempts }
        }
        Err((reason, attempts)) => {
            CallEnded { agent: &agent, attempts, reason: Some(&reason.to_string()) }.emit(&metrics.a2a_calls);
            Called { attempts, ..failed(id, reason) }
        }
    }
}

/// Attempts until one answers, one fails for good, `max_attempts` are made or the
/// `deadline` passes: the answer's JSON, or why none came; with the attempts.
async fn attempts(
    remote: &Remote,
    metrics: &Metrics,
    (request, traceparent): (&SendMessageRequest, Option<&str>),
    deadline: Option<Instant>,
) -> Result<(Vec<u8>, u32), (A2aFailure, u32)> {
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1..=remote.max_attempts {
        let bound = deadline.map_or(UNBOUNDED_ATTEMPT, |d| d.saturating_duration_since(Instant::now()));
        let error = match tokio::time::timeout(bound, remote.send(request, traceparent)).await {
            Ok(Ok(answer)) => match serde_json::to_vec(&answer) {
                Ok(json) => return Ok((json, attempt)),
                Err(e) => format!("its answer cannot be written as JSON: {e}"),
            },
            Ok(Err(e)) if !again(&e) => {
                let refused =
                    A2aFailure::Refused { agent: remote.name.clone(), message: e.message, code: e.code };
                return Err((refused, attempt));
            }
            Ok(Err(e)) => e.message,
            Err(_) => format!("no answer within {} ms", bound.as_millis()),
        };
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if attempt == remote.max_attempts || left.is_some_and(|l| l <= backoff) {
            let why = A2aFailure::NoAnswer { agent: remote.name.clone(), attempts: attempt, last: error };
            return Err((why, attempt));
        }
        let backoff_ms = backoff.as_millis() as u64;
        CallRetried { agent: &remote.name, attempt, backoff_ms, error: &error }.emit(&metrics.a2a_calls);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    let none =
        A2aFailure::NoAnswer { agent: remote.name.clone(), attempts: 0, last: "no attempt made".into() };
    Err((none, 0))
}

/// Whether another attempt may succeed: the SDK reports an unreachable agent, an HTTP error
/// page, a body that is not JSON-RPC and an internal error of the agent all as an internal
/// error; any other A2A error is the agent's answer to this request and would be the same.
fn again(error: &A2AError) -> bool {
    error.code == a2a::error_code::INTERNAL_ERROR
}

/// The result of a call that got no answer: a failed task that says why.
fn failed(id: u64, reason: A2aFailure) -> Called {
    Called { id, answer: failed_answer(&reason.to_string()), failure: Some(reason), attempts: 0 }
}

/// What the asker is answered when no answer came: a failed task (a `SendMessageResponse`'s
/// JSON) whose status message is `reason`.
pub fn failed_answer(reason: &str) -> Bytes {
    let status = Message {
        message_id: uuid::Uuid::now_v7().to_string(),
        context_id: None,
        task_id: None,
        role: Role::Agent,
        parts: vec![Part::text(reason)],
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    };
    let task = Task {
        id: String::new(),
        context_id: String::new(),
        status: TaskStatus { state: TaskState::Failed, message: Some(status), timestamp: None },
        artifacts: None,
        history: None,
        metadata: None,
    };
    serde_json::to_vec(&SendMessageResponse::Task(task)).unwrap_or_default().into()
}

#[cfg(test)]
#[path = "call_tests.rs"]
mod tests;
