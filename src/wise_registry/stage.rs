//! The registry's stage: the Redis work of the frames that need it ([`WiseRegistry::needs`]),
//! in a task of its own, so that a slow or absent Redis holds those frames only, never the
//! engine that decides (as rumqttc's event loop does the I/O its state machine decides). Checks
//! run in the order they come; one that fails because Redis is away is tried again, with
//! backoff, until Redis answers; one that fails on the registry's data comes back as that
//! error (its message is dead-lettered).

use super::member::{WiseFrame, WiseRegistry};
use super::store::RegistryError;
use crate::stomp::Frame;
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::registry::{RegistryAnswered, RegistryUnavailable};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The first wait before a check is tried again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A frame the registry has work on before it is published.
#[derive(Debug)]
pub struct Check {
    /// The caller's name for it, given back with the result.
    pub id: u64,
    pub frame: Frame,
    pub wise: WiseFrame,
    /// The consumed message's key ([`source_key`]): its writes are made once.
    pub source: String,
}

/// A check done: the frame to publish, or why the registry refused it.
#[derive(Debug)]
pub struct Checked {
    pub id: u64,
    pub result: Result<Frame, RegistryError>,
}

/// The handle on the stage's task.
pub struct Checks {
    registry: Arc<WiseRegistry>,
    requests: mpsc::UnboundedSender<Check>,
    results: mpsc::UnboundedReceiver<Checked>,
    /// Stops the stage's task when the handle is dropped.
    _stop: tokio_util::sync::DropGuard,
}

/// The key of a consumed message, the same whenever the broker delivers it again (its queue
/// and its bytes; broker message ids are not stable across redeliveries on every broker).
pub fn source_key(destination: &str, body: &[u8]) -> String {
    let mut named = Vec::with_capacity(destination.len() + 1 + body.len());
    named.extend_from_slice(destination.as_bytes());
    named.push(0);
    named.extend_from_slice(body);
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, &named).to_string()
}

impl Checks {
    /// Starts the stage's task, which ends when the handle is dropped: a check waiting for
    /// Redis is given up then (its message stays the caller's, who releases it).
    pub fn spawn(registry: Arc<WiseRegistry>, metrics: Arc<Metrics>) -> Checks {
        let (requests, inbox) = mpsc::unbounded_channel();
        let (outbox, results) = mpsc::unbounded_channel();
        metrics.registry.enable();
        let dropped = CancellationToken::new();
        tokio::spawn(run(registry.clone(), metrics, inbox, outbox, dropped.clone()));
        Checks { registry, requests, results, _stop: dropped.drop_guard() }
    }

    /// Whether `frame` needs the registry before it is published (pure).
    pub fn needs(&self, frame: &Frame) -> Option<WiseFrame> {
        self.registry.needs(frame)
    }

    /// Queues a check; its result comes from [`Checks::next`]. Once the stage has stopped
    /// (shutdown) the check is dropped, and with it nothing: its message stays the caller's.
    pub fn check(&self, check: Check) {
        let _ = self.requests.send(check);
    }

    /// The next check done (never, once the stage has stopped).
    pub async fn next(&mut self) -> Option<Checked> {
        self.results.recv().await
    }
}

async fn run(
    registry: Arc<WiseRegistry>,
    metrics: Arc<Metrics>,
    mut inbox: mpsc::UnboundedReceiver<Check>,
    outbox: mpsc::UnboundedSender<Checked>,
    shutdown: CancellationToken,
) {
    loop {
        let check = tokio::select! {
            _ = shutdown.cancelled() => return,
            check = inbox.recv() => match check { Some(check) => check, None => return },
        };
        let Check { id, mut frame, wise, source } = check;
        let tried = tokio::select! {
            _ = shutdown.cancelled() => return,
            tried = until_answered(&registry, &metrics, &mut frame, &wise, &source) => tried,
        };
        if outbox.send(Checked { id, result: tried.map(|()| frame) }).is_err() {
            return;
        }
    }
}

/// [`WiseRegistry::apply`], tried again while Redis does not answer.
async fn until_answered(
    registry: &WiseRegistry,
    metrics: &Metrics,
    frame: &mut Frame,
    wise: &WiseFrame,
    source: &str,
) -> Result<(), RegistryError> {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match registry.apply(frame, wise, source).await {
            Err(error) if error.is_unavailable() => {
                RegistryUnavailable { error: &error.to_string(), retried: true }.emit(&metrics.registry);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            done => {
                RegistryAnswered.emit(&metrics.registry);
                return done;
            }
        }
    }
}
