//! The daemon's loop: connect, subscribe, and for each message publish what it causes with
//! a receipt before acknowledging it; shut down cleanly on request.

use super::BridgeError;
use super::pipeline::{
    Absorbed, Conversations, HeldChunk, Outgoing, Pipeline, Processed, codecs, dead_letter_frame,
    stream_bounds,
};
use crate::config::{Config, Discovery};
use crate::envelope::penguiflow::stream::StreamAssembler;
use crate::routing::Router;
use crate::routing::table::CorrelationTable;
use crate::stomp::{
    AckMode, AckRef, Backoff, Client, ClientConfig, ConnectOptions, Event, Events, Message, SessionError,
    Subscription, TlsOptions,
};
use crate::telemetry::{
    DeadLettered, Delivered, Disconnected, LateReply, Metrics, Receipt, Reconnected, ReplyTimedOut, Retried,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// Everything a message handler needs.
struct Shared {
    client: Client,
    pipeline: Pipeline,
    metrics: Arc<Metrics>,
    dead_letter: String,
}

/// Runs the bridge until `shutdown` fires, then stops taking messages, finishes those in
/// flight (bounded by `shutdown_timeout_ms`) and disconnects.
pub async fn run(
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), BridgeError> {
    let pipeline = pipeline(&config);
    let Some((client, mut events)) = connect(&config, &metrics, &shutdown).await else {
        return Ok(());
    };
    let consuming = Consuming::of(&config);
    let mut subscriptions = subscribe(&client, &pipeline.router, consuming).await?;
    let discovering =
        pipeline.router.has_patterns() && config.wiseagents.discovery == Discovery::ActivemqAdvisory;
    if discovering {
        let advisory = Subscription::new(ADVISORY, AckMode::Auto).with("transformation", "jms-advisory-json");
        subscriptions.push(client.subscribe(advisory).await?);
        info!(topic = ADVISORY, "discovering the queues of agents named by a glob");
    }
    let mut discovered = std::collections::HashSet::new();
    metrics.set_subscribed(true);
    info!(subscriptions = subscriptions.len(), "bridge ready");
    let shared =
        Arc::new(Shared { client, pipeline, metrics, dead_letter: config.delivery.dead_letter.clone() });
    let permits = Arc::new(Semaphore::new(config.delivery.in_flight));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tick.tick() => {
                expire_streams(&shared).await;
                expire_asks(&shared).await;
            }
            event = events.recv() => match event {
                Some(Event::Message(m)) if m.destination == ADVISORY => {
                    if let Some(id) = discover(&shared, &m, &mut discovered, consuming).await {
                        subscriptions.push(id);
                    }
                }
                Some(Event::Message(m)) => {
                    let Ok(permit) = permits.clone().acquire_owned().await else { break };
                    tokio::spawn(handle(shared.clone(), m, permit));
                }
                Some(other) => on_connection_event(other, &shared.metrics),
                None => break,
            },
        }
    }
    // Messages still queued in `events` are unacknowledged: the broker redelivers them.
    drop(events);
    stop(&shared, &subscriptions, &permits, &config).await;
    Ok(())
}

fn pipeline(config: &Config) -> Pipeline {
    let d = &config.delivery;
    let table = CorrelationTable::new(d.correlation_capacity, Duration::from_millis(d.correlation_ttl_ms));
    let (max_bytes, max_wait) = stream_bounds(config);
    Pipeline::new(
        codecs(config),
        Router::new(config),
        d.max_hops,
        table,
        StreamAssembler::new(max_bytes, max_wait),
    )
    .with_conversations(Conversations::of(config))
}

/// The STOMP client settings for the configured broker.
pub fn client_config(config: &Config) -> Result<ClientConfig, BridgeError> {
    let b = &config.broker;
    let url = b.url.parse().map_err(|e: SessionError| BridgeError::Config(e.to_string()))?;
    let mut c = ClientConfig::new(url, b.login.clone(), b.passcode.clone());
    c.connect = ConnectOptions {
        login: b.login.clone(),
        passcode: b.passcode.clone(),
        vhost: b.vhost.clone(),
        heartbeat: (Duration::from_millis(b.heartbeat_ms[0]), Duration::from_millis(b.heartbeat_ms[1])),
    };
    c.tls = TlsOptions {
        ca_file: b.ca_file.clone(),
        cert_file: b.cert_file.clone(),
        key_file: b.key_file.clone(),
    };
    c.receipt_timeout = Duration::from_millis(config.delivery.receipt_timeout_ms);
    c.backoff =
        Backoff { initial: Duration::from_millis(200), max: Duration::from_millis(b.reconnect_max_ms) };
    c.event_capacity = config.delivery.in_flight.max(16);
    Ok(c)
}

/// Connects, retrying with backoff until it works or shutdown is asked for.
async fn connect(
    config: &Config,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> Option<(Client, Events)> {
    let client_config = match client_config(config) {
        Ok(c) => c,
        Err(e) => {
            error!(error = %e, "cannot connect");
            return None;
        }
    };
    for attempt in 0u32.. {
        match Client::connect(client_config.clone()).await {
            Ok(connected) => {
                metrics.set_connected(true);
                info!(broker = %client_config.url, "connected to the broker");
                return Some(connected);
            }
            Err(e) => {
                warn!(broker = %client_config.url, attempt, error = %e, "cannot connect to the broker; retrying")
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(client_config.backoff.delay(attempt)) => {}
        }
    }
    None
}

/// ActiveMQ Classic's topic announcing new queues.
const ADVISORY: &str = "/topic/ActiveMQ.Advisory.Queue";

/// How the bridge consumes: `client-individual` acks, a prefetch of `in_flight` (ActiveMQ's
/// and RabbitMQ's headers both), and ActiveMQ's exclusive consumer when asked.
#[derive(Debug, Clone, Copy)]
struct Consuming {
    in_flight: usize,
    exclusive: bool,
}

impl Consuming {
    fn of(config: &Config) -> Self {
        Consuming { in_flight: config.delivery.in_flight, exclusive: config.delivery.exclusive }
    }

    fn subscription(self, destination: &str) -> Subscription {
        let sub = Subscription::new(destination, AckMode::ClientIndividual)
            .with("activemq.prefetchSize", self.in_flight.to_string())
            .with("prefetch-count", self.in_flight.to_string());
        if self.exclusive { sub.with("activemq.exclusive", "true") } else { sub }
    }
}

/// Subscribes to every destination the configuration names.
async fn subscribe(
    client: &Client,
    router: &Router,
    consuming: Consuming,
) -> Result<Vec<String>, BridgeError> {
    let mut ids = Vec::new();
    for destination in router.subscriptions() {
        ids.push(client.subscribe(consuming.subscription(&destination)).await?);
        info!(%destination, "subscribed");
    }
    Ok(ids)
}

/// An advisory announcing a queue: subscribes when it is the queue of an agent a glob names.
async fn discover(
    shared: &Shared,
    advisory: &Message,
    known: &mut std::collections::HashSet<String>,
    consuming: Consuming,
) -> Option<String> {
    let info: serde_json::Value = serde_json::from_slice(advisory.body()).ok()?;
    let info = &info["DestinationInfo"];
    let added = info["operationType"].as_i64() == Some(0);
    let physical =
        info["destination"]["string"].as_str().or_else(|| info["destination"]["physicalName"].as_str())?;
    let destination = shared.pipeline.router.discover(physical).filter(|_| added)?;
    if !known.insert(destination.clone()) {
        return None;
    }
    match shared.client.subscribe(consuming.subscription(&destination)).await {
        Ok(id) => {
            info!(%destination, "discovered and subscribed");
            Some(id)
        }
        Err(e) => {
            warn!(%destination, error = %e, "cannot subscribe to a discovered queue");
            known.remove(&destination);
            None
        }
    }
}

fn on_connection_event(event: Event, metrics: &Metrics) {
    match event {
        Event::ConnectionLost(e) => Disconnected { reason: &e.to_string() }.emit(metrics),
        Event::Reconnected { .. } => Reconnected.emit(metrics),
        Event::ReconnectFailed(e) => warn!(error = %e, "reconnect attempt failed"),
        Event::BrokerError(e) => warn!(error = %e, "the broker sent an ERROR"),
        Event::Message(_) => {}
    }
}

/// One message: publish what it causes (or its dead letter) with a receipt, then ack.
async fn handle(shared: Arc<Shared>, msg: Message, permit: OwnedSemaphorePermit) {
    shared.metrics.in_flight(1);
    let start = Instant::now();
    let message_id = msg.ack.message_id.clone();
    match shared.pipeline.process(&msg) {
        Ok(Processed::Held) => {}
        Ok(Processed::Absorbed { why, also_ack }) => {
            ack(&shared.client, &msg.ack).await;
            for extra in &also_ack {
                ack(&shared.client, extra).await;
            }
            let source = msg.destination.as_str();
            match &why {
                Absorbed::Receipt { route } => {
                    Receipt { route, source, message_id: &message_id }.emit(&shared.metrics)
                }
                Absorbed::LateReply { route, ask } => {
                    LateReply { route, source, message_id: &message_id, ask }.emit(&shared.metrics)
                }
            }
        }
        Ok(Processed::Send(out)) => deliver(&shared, &msg, out, start).await,
        Err(BridgeError::Stream(abandoned)) => {
            let error = BridgeError::Stream(abandoned);
            dead_letter_all(&shared, &error).await;
        }
        Err(error) => {
            let source = msg.destination.as_str();
            if dead_letter(&shared, source, &msg.frame.body, msg.header("content-type"), &error).await {
                ack(&shared.client, &msg.ack).await;
                let reason = error.to_string();
                let route = format!("{}->dead_letter", source_label(&shared.pipeline, source));
                DeadLettered {
                    route: &route,
                    source,
                    message_id: &message_id,
                    kind: error.kind(),
                    reason: &reason,
                }
                .emit(&shared.metrics);
            }
        }
    }
    shared.metrics.in_flight(-1);
    drop(permit);
}

async fn deliver(shared: &Shared, msg: &Message, out: Outgoing, start: Instant) {
    let destination = out.frame.header("destination").unwrap_or_default().to_owned();
    match send_with_retry(&shared.client, out.frame).await {
        Ok(()) => {
            ack(&shared.client, &msg.ack).await;
            for extra in &out.also_ack {
                ack(&shared.client, extra).await;
            }
            let d = Delivered {
                route: &out.route,
                source: &msg.destination,
                destination: &destination,
                message_id: &msg.ack.message_id,
                latency: start.elapsed(),
                correlated: out.correlated,
                unmatched_reply: out.unmatched_reply,
            };
            d.emit(&shared.metrics);
        }
        Err(e) => {
            let reason = e.to_string();
            Retried {
                route: &out.route,
                source: &msg.destination,
                message_id: &msg.ack.message_id,
                reason: &reason,
            }
            .emit(&shared.metrics);
        }
    }
}

/// Sends with a receipt; a receipt that does not come is tried twice more. Any other error
/// means the connection is gone: the message will come again.
async fn send_with_retry(client: &Client, frame: crate::stomp::Frame) -> Result<(), SessionError> {
    let mut tries = 0;
    loop {
        match client.send_confirmed(frame.clone()).await {
            Err(SessionError::ReceiptTimeout(_)) if tries < 2 => tries += 1,
            other => return other,
        }
    }
}

async fn ack(client: &Client, msg: &AckRef) {
    if let Err(e) = client.ack(msg).await {
        warn!(message_id = %msg.message_id, error = %e, "ack failed; the broker will redeliver (at least once)");
    }
}

/// Publishes the dead letter; true once the broker confirmed it.
async fn dead_letter(
    shared: &Shared,
    source: &str,
    body: &bytes::Bytes,
    content_type: Option<&str>,
    error: &BridgeError,
) -> bool {
    let frame = dead_letter_frame(&shared.dead_letter, source, body.clone(), content_type, error);
    match send_with_retry(&shared.client, frame).await {
        Ok(()) => true,
        Err(e) => {
            warn!(error = %e, "cannot dead-letter; the broker will redeliver");
            false
        }
    }
}

/// Dead-letters every chunk of an abandoned stream, acknowledging each once confirmed.
async fn dead_letter_all(shared: &Shared, error: &BridgeError) {
    let BridgeError::Stream(abandoned) = error else { return };
    for chunk in &abandoned.tokens {
        dead_letter_chunk(shared, chunk, error).await;
    }
}

async fn dead_letter_chunk(shared: &Shared, chunk: &HeldChunk, error: &BridgeError) {
    if dead_letter(shared, &chunk.destination, &chunk.body, Some("application/json"), error).await {
        ack(&shared.client, &chunk.ack).await;
        let reason = error.to_string();
        let route = "penguiflow->dead_letter";
        DeadLettered {
            route,
            source: &chunk.destination,
            message_id: &chunk.ack.message_id,
            kind: "stream",
            reason: &reason,
        }
        .emit(&shared.metrics);
    }
}

/// The framework a destination belongs to, for bounded metric labels.
fn source_label(pipeline: &Pipeline, destination: &str) -> &'static str {
    match pipeline.router.classify(destination) {
        Some(crate::routing::Source::WiseAgents { .. }) => "wiseagents",
        Some(crate::routing::Source::Ingress(fw)) => fw.as_str(),
        None => "unknown",
    }
}

async fn expire_streams(shared: &Arc<Shared>) {
    for abandoned in shared.pipeline.expire_streams(Instant::now()) {
        dead_letter_all(shared, &BridgeError::Stream(abandoned)).await;
    }
}

/// Error answers to asks whose reply timeout passed; the pending-asks gauge.
async fn expire_asks(shared: &Arc<Shared>) {
    for out in shared.pipeline.expire_asks(Instant::now()) {
        let destination = out.frame.header("destination").unwrap_or_default().to_owned();
        match send_with_retry(&shared.client, out.frame).await {
            Ok(()) => ReplyTimedOut { route: &out.route, destination: &destination }.emit(&shared.metrics),
            Err(e) => warn!(error = %e, %destination, "cannot publish an error answer for a timed-out ask"),
        }
    }
    shared.metrics.set_pending_asks(shared.pipeline.pending_asks());
}

/// Stops taking messages, waits for those in flight, disconnects.
async fn stop(shared: &Shared, subscriptions: &[String], permits: &Arc<Semaphore>, config: &Config) {
    info!("shutting down: no new messages; finishing those in flight");
    shared.metrics.set_subscribed(false);
    for id in subscriptions {
        let _ = shared.client.unsubscribe(id).await;
    }
    let all = u32::try_from(config.delivery.in_flight).unwrap_or(u32::MAX);
    let wait = Duration::from_millis(config.delivery.shutdown_timeout_ms);
    if tokio::time::timeout(wait, permits.acquire_many(all)).await.is_err() {
        warn!("shutdown timeout: messages still in flight are left to the broker to redeliver");
    }
    let _ = shared.client.disconnect().await;
    info!("stopped");
}
