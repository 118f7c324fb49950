//! The daemon: connect, subscribe, hand every message to the delivery engine, and shut down
//! in order (stop taking messages, settle those in flight, unsubscribe, disconnect).

use super::BridgeError;
use super::engine::{Discover, Engine};
use super::pipeline::Pipeline;
use super::settle::{Mode, Settler};
use crate::config::{Config, Discovery};
use crate::routing::Router;
use crate::stomp::{
    AckMode, Backoff, Client, ClientConfig, ConnectOptions, Events, Message, SessionError, Subscription,
    TlsOptions,
};
use crate::telemetry::Metrics;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// Runs the bridge until `shutdown` fires, then stops taking messages, settles those in
/// flight (bounded by `shutdown_timeout_ms`), unsubscribes and disconnects.
pub async fn run(
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), BridgeError> {
    let mirror = spawn_mirror(&config, &metrics, &shutdown);
    let proxied = proxy(config, metrics, shutdown.clone()).await;
    if let Some(mirror) = mirror {
        if proxied.is_err() {
            shutdown.cancel();
        }
        mirror.await.map_err(|e| crate::mirror::MirrorError::Task(e.to_string()))??;
    }
    proxied
}

/// Mirror mode, when configured, as its own task. A mirror that cannot run stops the process
/// (shutdown is cancelled), so that it is noticed rather than missed.
fn spawn_mirror(
    config: &Config,
    metrics: &Arc<Metrics>,
    shutdown: &CancellationToken,
) -> Option<tokio::task::JoinHandle<Result<(), crate::mirror::MirrorError>>> {
    let mirror = config.mirror.clone()?;
    let (config, metrics, shutdown) = (config.clone(), metrics.clone(), shutdown.clone());
    Some(tokio::spawn(async move {
        let ended = crate::mirror::run(config, mirror, metrics, shutdown.clone()).await;
        if let Err(e) = &ended {
            error!(error = %e, "the mirror stopped; shutting down");
            shutdown.cancel();
        }
        ended
    }))
}

/// Proxy mode: the agents the bridge stands in for.
async fn proxy(
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), BridgeError> {
    let pipeline = Pipeline::of(&config);
    let Some((client, events)) = connect(&client_config(&config)?, &metrics, &shutdown).await else {
        return Ok(());
    };
    let consuming = Consuming::of(&config, pipeline.router.subscriptions().len());
    let mut subscriptions = subscribe(&client, &pipeline.router, consuming).await?;
    let discovering =
        pipeline.router.has_patterns() && config.wiseagents.discovery == Discovery::ActivemqAdvisory;
    if discovering {
        let advisory = Subscription::new(ADVISORY, AckMode::Auto).with("transformation", "jms-advisory-json");
        subscriptions.push(client.subscribe(advisory).await?);
        info!(topic = ADVISORY, "discovering the queues of agents named by a glob");
    }
    metrics.set_subscribed(true);
    let mode = Mode::choose_on(config.delivery.mode, client.server());
    if mode != Mode::choose(config.delivery.mode) {
        warn!(
            server = client.server(),
            "delivery.mode = \"transaction\" is not atomic on ActiveMQ Artemis (it applies an ACK inside a \
             transaction at once): settling in confirm mode, with duplicate ids"
        );
    }
    info!(
        subscriptions = subscriptions.len(),
        prefetch = consuming.prefetch,
        mode = mode.as_str(),
        batch_max = config.delivery.batch_max,
        "bridge ready"
    );
    let receipt_timeout = Duration::from_millis(config.delivery.receipt_timeout_ms);
    let mut engine = Engine::new(
        Settler::new(client.clone(), metrics.clone(), mode, receipt_timeout),
        pipeline,
        metrics.clone(),
        &config.delivery,
    );
    let mut discovery = Discovering { consuming, known: HashSet::new(), subscriptions };
    engine.serve(events, &client, &mut discovery, &shutdown).await;
    engine.finish(Duration::from_millis(config.delivery.shutdown_timeout_ms)).await;
    stop(&client, &metrics, &discovery.subscriptions).await;
    Ok(())
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
    // Never stop reading the socket while the broker may still send what the prefetch lets
    // it: receipts would wait behind unread messages (issue #8's start-up livelock). The
    // margin covers queues discovered later and the advisory topic.
    c.event_capacity = 1024;
    c.max_buffered = config.delivery.in_flight.saturating_mul(2).saturating_add(4096);
    Ok(c)
}

/// Connects, retrying with backoff until it works or shutdown is asked for.
pub(crate) async fn connect(
    client_config: &ClientConfig,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> Option<(Client, Events)> {
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

/// Artemis reads a prefetch as a window in bytes of its own encoding of the messages (and lets
/// one message through whatever its size), so that `activemq.prefetchSize` alone would be one
/// message at a time and a held PenguiFlow stream could never complete there (tests/artemis.rs).
/// Its `consumer-window-size` gets this many bytes per prefetched message (measured: a
/// 190-byte Wise Agents request counts about 450 bytes there, a 1,000-byte body about 1,300;
/// with 1 KiB a three-chunk PenguiFlow stream did not fit the adapters' prefetch of 3), so the
/// in-flight bound holds on Artemis as a bound in bytes: 1.6 messages a slot at 1,000 bytes,
/// 4.6 at 190 bytes, under `max_buffered`'s margin.
const ARTEMIS_WINDOW_PER_MESSAGE: usize = 2048;

/// How the bridge consumes: `client-individual` acks, each subscription's prefetch an equal
/// share of `in_flight` (ActiveMQ's and RabbitMQ's headers both), and ActiveMQ's exclusive
/// consumer when asked.
#[derive(Debug, Clone, Copy)]
struct Consuming {
    prefetch: usize,
    exclusive: bool,
}

impl Consuming {
    fn of(config: &Config, subscriptions: usize) -> Self {
        let prefetch = (config.delivery.in_flight / subscriptions.max(1)).max(1);
        Consuming { prefetch, exclusive: config.delivery.exclusive }
    }

    fn subscription(self, destination: &str) -> Subscription {
        let sub = Subscription::new(destination, AckMode::ClientIndividual)
            .with("activemq.prefetchSize", self.prefetch.to_string())
            .with("prefetch-count", self.prefetch.to_string())
            .with(
                "consumer-window-size",
                self.prefetch.saturating_mul(ARTEMIS_WINDOW_PER_MESSAGE).to_string(),
            );
        if self.exclusive { sub.with("activemq.exclusive", "true") } else { sub }
    }
}

/// Subscribes to every destination the configuration names, all at once (the receipts are
/// awaited together; messages arriving meanwhile do not hold them up).
async fn subscribe(
    client: &Client,
    router: &Router,
    consuming: Consuming,
) -> Result<Vec<String>, BridgeError> {
    let destinations = router.subscriptions();
    let pending = destinations.iter().map(|d| client.subscribe(consuming.subscription(d)));
    let ids = futures_util::future::join_all(pending).await;
    let mut out = Vec::with_capacity(ids.len());
    for (destination, id) in destinations.iter().zip(ids) {
        out.push(id?);
        info!(%destination, "subscribed");
    }
    Ok(out)
}

/// Agents named by a glob: their queues, found through ActiveMQ's advisory topic.
struct Discovering {
    consuming: Consuming,
    known: HashSet<String>,
    subscriptions: Vec<String>,
}

impl Discover for Discovering {
    fn is_advisory(&self, message: &Message) -> bool {
        message.destination == ADVISORY
    }

    /// An advisory announcing a queue: subscribes when it is the queue of an agent a glob names.
    async fn discover(&mut self, client: &Client, pipeline: &Pipeline, advisory: &Message) {
        let Ok(info) = serde_json::from_slice::<serde_json::Value>(advisory.body()) else { return };
        let info = &info["DestinationInfo"];
        let added = info["operationType"].as_i64() == Some(0);
        let physical =
            info["destination"]["string"].as_str().or_else(|| info["destination"]["physicalName"].as_str());
        let Some(destination) = physical.and_then(|p| pipeline.router.discover(p)).filter(|_| added) else {
            return;
        };
        if !self.known.insert(destination.clone()) {
            return;
        }
        let (id, confirmed) = client.try_subscribe(self.consuming.subscription(&destination)).await;
        match confirmed {
            Ok(()) => info!(%destination, "discovered and subscribed"),
            // Never written, or refused by name: there is no subscription; a later
            // announcement may try again.
            Err(e @ (SessionError::NotConnected | SessionError::Shutdown | SessionError::Rejected(_))) => {
                warn!(%destination, error = %e, "cannot subscribe to a discovered queue");
                let _ = client.unsubscribe(&id).await;
                self.known.remove(&destination);
                return;
            }
            // A receipt late or lost with its connection: the SUBSCRIBE was written (or is
            // restored on the next connection), and a broker that refused it would have sent an
            // ERROR naming it (STOMP 1.2). It stands: subscribing again would consume twice.
            Err(e) => {
                warn!(%destination, error = %e, "no receipt for a discovered queue's SUBSCRIBE; it stands")
            }
        }
        pipeline.meet(&destination);
        self.subscriptions.push(id);
    }
}

/// After the engine settled what it could: unsubscribe, disconnect. While the broker holds
/// a batch back it confirms nothing on this connection, so each UNSUBSCRIBE would only wait out
/// its receipt timeout: the DISCONNECT alone ends the subscriptions (17 s to stop a stalled
/// bridge with five subscriptions and a 2 s receipt timeout, 7 s without them).
async fn stop(client: &Client, metrics: &Metrics, subscriptions: &[String]) {
    metrics.set_subscribed(false);
    if let Some(stalled) = metrics.stalled_for() {
        warn!(
            stalled_s = stalled.as_secs(),
            "publishing is still stalled: disconnecting without unsubscribing one by one"
        );
    } else {
        for id in subscriptions {
            let _ = client.unsubscribe(id).await;
        }
    }
    let _ = client.disconnect().await;
    info!("stopped");
}
