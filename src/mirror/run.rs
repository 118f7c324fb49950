//! The mirror's I/O: one connection reads the tap, another publishes the copies, with a
//! bounded buffer between them. The reader never waits for the publisher: when the buffer is
//! full a copy is dropped and counted, so a mirror that falls behind costs the native agents
//! nothing (their queues are never read here, and the broker's copy is bounded too).

use super::MirrorError;
use super::probe::{self, PROBE_AGENT, Probe, Signal};
use super::tap::{Original, Tap};
use super::translate::Translator;
use crate::broker::{client_config, connect};
use crate::config::mirror::MirrorConfig;
use crate::config::{Config, codecs};
use crate::stomp::{Client, Event, Events, Item};
use crate::telemetry::Event as _;
use crate::telemetry::Metrics;
use crate::telemetry::broker::{BrokerConnected, BrokerLost, BrokerMetrics, ReconnectFailed};
use crate::telemetry::mirror::{
    self as telemetry, Copied, CopyFailed, Dropped, MirrorMetrics, TapState, Undecodable,
};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// Open conversations remembered for the `conversation` key.
const CONVERSATIONS: usize = 100_000;

/// Runs the mirror until `shutdown`, then publishes what is buffered (within the delivery
/// shutdown timeout) and disconnects.
pub async fn run(
    config: Config,
    mirror: MirrorConfig,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), MirrorError> {
    let client = client_config(&config).map_err(|e| MirrorError::Config(e.to_string()))?;
    let Some((tap_client, events)) = connect(&client, "tap", &metrics, &shutdown).await else {
        return Ok(());
    };
    let Some((out, out_events)) = connect(&client, "out", &metrics, &shutdown).await else { return Ok(()) };
    tokio::spawn(watch(out_events, metrics.clone()));
    let wa = &config.wiseagents;
    let tap = Tap::new(&mirror, &wa.request_prefix, &wa.response_prefix);
    let mut subscriptions = Vec::new();
    for sub in tap.subscriptions() {
        let destination = sub.destination.clone();
        subscriptions.push(tap_client.subscribe(sub).await?);
        info!(%destination, "mirror: tapping");
    }
    let (signals, signalled) = mpsc::channel(16);
    if mirror.probe_timeout_ms > 0 {
        let queue = format!("{}{PROBE_AGENT}", wa.request_prefix);
        subscriptions.push(tap_client.subscribe(probe::subscription(&queue)).await?);
        metrics.mirror.set_fix(probe::remedy(&mirror));
        metrics.mirror.set_tap(TapState::Probing);
        let timeout = Duration::from_millis(mirror.probe_timeout_ms);
        let probe = Probe {
            client: tap_client.clone(),
            queue,
            timeout,
            fix: probe::remedy(&mirror),
            metrics: metrics.clone(),
        };
        tokio::spawn(probe.run(signalled, shutdown.clone()));
    }
    metrics.mirror.set_ready(true);
    info!(subscriptions = subscriptions.len(), buffer = mirror.buffer, "mirror ready");
    let (tx, rx) = mpsc::channel(mirror.buffer);
    let translator = Translator::new(codecs(&config), &mirror.topics, CONVERSATIONS);
    let publisher = tokio::spawn(publish(out.clone(), translator, rx, metrics.clone()));
    read(&tap_client, events, &tap, (tx, signals), &metrics, &shutdown).await;
    metrics.mirror.set_ready(false);
    let grace = Duration::from_millis(config.delivery.shutdown_timeout_ms);
    if tokio::time::timeout(grace, publisher).await.is_err() {
        warn!("mirror: copies still buffered at shutdown were not published");
    }
    for id in subscriptions {
        let _ = tap_client.unsubscribe(&id).await;
    }
    let _ = tap_client.disconnect().await;
    let _ = out.disconnect().await;
    info!("mirror stopped");
    Ok(())
}

/// Reads the tap until shutdown: each copy is queued for publishing or, the buffer full,
/// dropped and counted; either way it is acknowledged at once. The probe is told of its own
/// copies (never published) and of reconnects.
async fn read(
    client: &Client,
    mut events: Events,
    tap: &Tap,
    (tx, signals): (mpsc::Sender<(Original, Bytes)>, mpsc::Sender<Signal>),
    metrics: &Metrics,
    shutdown: &CancellationToken,
) {
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        let message = match event {
            Some(Event::Message(m)) => m,
            Some(event) => {
                if connection_event("tap", event, &metrics.broker) {
                    info!("mirror: tap reconnected (copies sent meanwhile are not seen)");
                    let _ = signals.try_send(Signal::Again);
                }
                continue;
            }
            None => return,
        };
        match tap.tapped(&message) {
            Some(tapped) if tapped.agent == PROBE_AGENT => {
                let body = String::from_utf8_lossy(message.body()).into_owned();
                let _ = signals.try_send(Signal::Seen(body));
            }
            tapped => {
                if let Some(tapped) = tapped
                    && !offer(&tx, tapped, message.frame.body.clone(), &metrics.mirror)
                {
                    return;
                }
            }
        }
        // Queued, not awaited. A stale ack (the connection was lost meanwhile) needs nothing:
        // the broker already forgot the copy, or redelivers it.
        let ack = Item::Ack { msg: message.ack, nack: false, transaction: None };
        let _ = client.enqueue(vec![ack]).await;
    }
}

/// Says what happens to the publishing connection (nothing is read from it) until its client
/// stops.
async fn watch(mut events: Events, metrics: Arc<Metrics>) {
    while let Some(event) = events.recv().await {
        connection_event("out", event, &metrics.broker);
    }
}

/// A connection event of the mirror's connection `link`, said once (its client says it at
/// `debug`): whether the connection is back.
fn connection_event(link: &'static str, event: Event, metrics: &BrokerMetrics) -> bool {
    match event {
        Event::Reconnected { url, .. } => {
            BrokerConnected { link, address: &url.to_string(), server: None }.emit(metrics);
            return true;
        }
        Event::ConnectionLost { error, url } => {
            let (address, reason) = (url.to_string(), error.to_string());
            BrokerLost { link, address: &address, reason: &reason }.emit(metrics)
        }
        Event::ReconnectFailed { error, url, attempt } => {
            let (address, error) = (url.to_string(), error.to_string());
            ReconnectFailed { link, address: &address, attempt, error: &error }.emit(&())
        }
        // The connection ends with it: its BrokerLost says it, as the reason.
        Event::BrokerError(e) => debug!(connection = link, error = %e, "the broker sent an ERROR"),
        Event::Message(_) => {}
    }
    false
}

/// Queues a copy for publishing without waiting: when the buffer is full the copy is dropped
/// and counted. False once the publisher is gone.
fn offer(
    tx: &mpsc::Sender<(Original, Bytes)>,
    tapped: Original,
    body: Bytes,
    metrics: &MirrorMetrics,
) -> bool {
    match tx.try_send((tapped, body)) {
        Ok(()) => telemetry::Tapped.emit(metrics),
        Err(mpsc::error::TrySendError::Full((t, _))) => {
            Dropped { queue: &t.queue }.emit(metrics);
        }
        Err(mpsc::error::TrySendError::Closed(_)) => return false,
    }
    true
}

/// Copies published with one write at most (what is buffered, never waited for).
const BATCH: usize = 256;

/// Writes the copies of what is buffered, in order, a batch at a time, until the reader is
/// gone. No receipts: a copy is best effort, and waiting would only hold the buffer up.
async fn publish(
    out: Client,
    mut translator: Translator,
    mut rx: mpsc::Receiver<(Original, Bytes)>,
    metrics: Arc<Metrics>,
) {
    let mut ready = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut ready, BATCH).await > 0 {
        let mut items = Vec::new();
        let mut outputs = Vec::new();
        for (tapped, body) in ready.drain(..) {
            let copies = match translator.copies(&tapped, &body) {
                Ok(c) => c,
                Err(e) => {
                    Undecodable { queue: &tapped.queue, reason: &e.to_string() }.emit(&metrics.mirror);
                    continue;
                }
            };
            for (output, error) in &copies.failed {
                let error = error.to_string();
                CopyFailed { output: *output, queue: &tapped.queue, error: &error }.emit(&metrics.mirror);
            }
            for (output, frame) in copies.frames {
                items.push(Item::Frame { frame, receipt: false });
                outputs.push(output);
            }
        }
        let ok = out.submit(items).await.is_ok();
        for output in outputs {
            Copied { output, ok }.emit(&metrics.mirror);
        }
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
