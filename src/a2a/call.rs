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
use super::remote::{CANCEL_WITHIN, Remote};
use crate::config::{AgentConfig, Config};
use crate::envelope::codecs::Framework;
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::a2a_calls::{CallEnded, CallRetried};
use a2a::{
    A2AError, Message, Part, Role, SendMessageRequest, SendMessageResponse, Task, TaskId, TaskState,
    TaskStatus,
};
use bytes::Bytes;
use futures_util::FutureExt;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::mpsc;
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
    remote: &Arc<Remote>,
    metrics: &Metrics,
    (request, traceparent): (&SendMessageRequest, Option<&str>),
    deadline: Option<Instant>,
) -> Result<(Vec<u8>, u32), (A2aFailure, u32)> {
    let opened = StdMutex::new(None);
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1..=remote.max_attempts {
        let bound = deadline.map_or(UNBOUNDED_ATTEMPT, |d| d.saturating_duration_since(Instant::now()));
        let error = match tokio::time::timeout(bound, remote.send(request, traceparent, &opened)).await {
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
            let task = opened.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(task) = task {
                // The last attempt may have broken just before the end came: read once, while
                // the asker still waits, before the task is given up. With no time left no read
                // starts (a zero timeout still polls, and so sends, it once).
                let within = left.unwrap_or(CANCEL_WITHIN).min(CANCEL_WITHIN);
                let ended = match within.is_zero() {
                    true => None,
                    false => remote.ended(&task, traceparent, within).await,
                };
                match ended.map(SendMessageResponse::Task) {
                    Some(answer) => match serde_json::to_vec(&answer) {
                        Ok(json) => return Ok((json, attempt)),
                        Err(_) => give_up(remote, task, traceparent),
                    },
                    None => give_up(remote, task, traceparent),
                }
            }
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

/// The call gave up on the task its stream opened (the asker's reply timeout passed, or the
/// attempts ran out): the agent is asked to cancel it, beside the call, whose answer goes on.
fn give_up(remote: &Arc<Remote>, task: TaskId, traceparent: Option<&str>) {
    let (remote, traceparent) = (remote.clone(), traceparent.map(str::to_owned));
    tokio::spawn(async move { remote.cancel(task, traceparent.as_deref()).await });
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
