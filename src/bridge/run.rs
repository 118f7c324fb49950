//! The daemon: connect, subscribe, hand every message to the delivery engine, and shut down
//! in order (stop taking messages, settle those in flight, unsubscribe, disconnect).

use super::BridgeError;
use super::engine::{Discover, Engine};
use super::pipeline::Pipeline;
use super::reload::{Reload, Reloads};
use super::settle::{Settlement, Settler};
use super::subscriptions::{ADVISORY, Cause, MakeSubscription, Subscriptions};
use crate::broker::{client_config, connect};
use crate::config::{Config, Discovery};
use crate::relay::Relay;
use crate::stomp::{AckMode, Client, ClientConfig, Message, Subscription};
use crate::telemetry::Metrics;
use crate::wise_registry::stage::Checks;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// Runs the bridge until `shutdown` fires, then stops taking messages, settles those in
/// flight (bounded by `shutdown_timeout_ms`), unsubscribes and disconnects.
pub async fn run(
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), BridgeError> {
    run_with(config, metrics, shutdown, Attached::default()).await
}

/// What the daemon serves besides its configuration's queues, each made by `main`.
#[derive(Default)]
pub struct Attached {
    /// The configuration reloads to follow (`bridge::reload`).
    pub reloads: Option<mpsc::Receiver<Reload>>,
    /// The requests asked for callers over HTTP (`[a2a]`, `[mcp]`), which the bridge
    /// publishes and whose answers it hands over.
    pub relay: Option<Arc<Relay>>,
}

/// [`run`], with what `attached` brings.
pub async fn run_with(
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    attached: Attached,
) -> Result<(), BridgeError> {
    let mirror = spawn_mirror(&config, &metrics, &shutdown);
    let proxied = proxy(config, metrics, shutdown.clone(), attached).await;
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
///
/// In confirm mode the SENDs and their receipts go on a publishing connection of their own, so
/// nothing the engine waits for comes on the consuming one: the engine stops taking messages
/// at `in_flight` (and the client stops reading the consuming socket), and each subscription
/// may have the whole budget as prefetch. Transaction mode keeps one connection (a transaction
/// lives on one), with the budget shared out as prefetch and the socket always read.
async fn proxy(
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    Attached { reloads, relay }: Attached,
) -> Result<(), BridgeError> {
    let pipeline = Pipeline::of(&config);
    let calls = crate::a2a::call::Calls::spawn(&config, metrics.clone(), shutdown.clone())?;
    // The registry describes A2A agents by their cards: read first (bounded). Without it they
    // are read beside the start, for the log.
    let cards = match (&calls, &config.wiseagents.registry) {
        (Some(calls), Some(_)) => calls.descriptions().await,
        (Some(calls), None) => {
            tokio::spawn(calls.descriptions());
            Default::default()
        }
        (None, _) => Default::default(),
    };
    let registry = crate::wise_registry::member::start(&config, &cards, &shutdown, &metrics).await?;
    let mode = Settlement::choose(config.delivery.mode);
    let split = mode == Settlement::Confirm;
    let base = client_config(&config).map_err(|e| BridgeError::Config(e.to_string()))?;
    let consuming_config = if split { consuming_client(base.clone()) } else { base.clone() };
    let Some((client, events)) = connect(&consuming_config, "consuming", &metrics, &shutdown).await else {
        return Ok(());
    };
    let (publisher, publishing) = if split {
        let Some((publisher, events)) =
            connect(&publishing_client(base), "publishing", &metrics, &shutdown).await
        else {
            return Ok(());
        };
        (publisher, Some(events))
    } else {
        (client.clone(), None)
    };
    // Artemis applies a STOMP ACK inside a transaction at once: transaction mode is not atomic
    // there, so it settles in confirm mode (with duplicate ids) on its one connection.
    let mode = Settlement::choose_on(config.delivery.mode, client.server());
    if !split && mode == Settlement::Confirm {
        warn!(
            server = client.server(),
            "delivery.mode = \"transaction\" is not atomic on ActiveMQ Artemis (it applies an ACK inside a \
             transaction at once): settling in confirm mode, with duplicate ids"
        );
    }
    let consuming = Consuming::of(&config, pipeline.router().subscriptions().len(), split);
    let receipt_timeout = Duration::from_millis(config.delivery.receipt_timeout_ms);
    let settler = Settler::new(publisher.clone(), client.clone(), metrics.clone(), mode, receipt_timeout);
    let budget = split.then_some(config.delivery.in_flight);
    let making = consuming.clone();
    let make: MakeSubscription = Arc::new(move |d: &str| making.subscription(d));
    let discovering =
        pipeline.router().has_patterns() && config.wiseagents.discovery == Discovery::ActivemqAdvisory;
    let held = Subscriptions::new(client.clone(), make, discovering, shutdown.clone());
    let mut engine =
        Engine::new(settler, pipeline, metrics.clone(), &config.delivery, publisher.clone(), budget)
            .with_unconfirmed_cap(unconfirmed_cap(mode, config.delivery.unconfirmed_max, publisher.server()))
            // The registry's stage is the engine's: it outlives the shutdown signal until the
            // engine has finished (the answers settled while stopping may need it).
            .with_registry(registry.clone().map(|r| Checks::spawn(r, metrics.clone())));
    if let Some(relay) = &relay {
        relay.attach(publisher.clone());
        relay.attach_registry(registry.clone());
    }
    engine = engine.with_relay(relay).with_calls(calls);
    if let Some(requests) = reloads {
        let settle_within = Duration::from_millis(config.delivery.shutdown_timeout_ms);
        let (subscriptions, retired) = (held.clone(), Default::default());
        engine = engine.with_reloads(Reloads { requests, subscriptions, retired, settle_within });
    }
    // Subscribed while the engine serves: with a backlog on every queue, the SUBSCRIBE receipts
    // come behind messages that only the engine's progress lets the client read. A SUBSCRIBE
    // the broker refuses shuts the bridge down (the start's error says why).
    let subscribed = held.reconcile(engine.router(), Cause::Start).subscribed.len();
    let (sub_held, sub_metrics, failed) = (held.clone(), metrics.clone(), shutdown.clone());
    let subscribing = tokio::spawn(async move {
        let made = ready(&sub_held, subscribed, &consuming, &sub_metrics, mode, discovering).await;
        if made.is_err() {
            failed.cancel();
        }
        made
    });
    let mut discovery = Discovering { held: held.clone() };
    engine.serve(events, publishing, &client, &mut discovery, &shutdown).await;
    engine.finish(Duration::from_millis(config.delivery.shutdown_timeout_ms)).await;
    drop(engine);
    if let Some(registry) = registry {
        registry.stop().await;
    }
    let subscribed =
        subscribing.await.unwrap_or_else(|error| Err(BridgeError::Task { task: "subscribing", error }));
    // The subscriptions held now: those made at start, less and plus what reloads and
    // discovery changed.
    stop(&client, &metrics, &held.ids().await).await;
    if split {
        let _ = publisher.disconnect().await;
    }
    subscribed
}

/// Once the SUBSCRIBEs of the start have their answers: says the bridge is ready, or fails
/// with the first the broker refused.
async fn ready(
    held: &Subscriptions,
    subscriptions: usize,
    consuming: &Consuming,
    metrics: &Metrics,
    mode: Settlement,
    discovering: bool,
) -> Result<(), BridgeError> {
    held.settled().await?;
    if discovering {
        info!(topic = ADVISORY, "discovering the queues of agents named by a glob");
    }
    metrics.set_subscribed(true);
    info!(subscriptions, prefetch = consuming.prefetch, mode = mode.as_str(), "bridge ready");
    Ok(())
}

/// [`Settlement::unconfirmed_cap`], said once when it applies.
fn unconfirmed_cap(mode: Settlement, configured: Option<usize>, server: Option<&str>) -> Option<usize> {
    let cap = mode.unconfirmed_cap(configured, server);
    if let Some(cap) = cap {
        info!(
            server,
            unconfirmed_max = cap,
            "at most this many SENDs await their receipts at once: a crash publishes at most these twice"
        );
    }
    cap
}

/// The consuming connection's client when publishing has its own: it holds few messages
/// beyond the engine's (the engine's budget is what bounds them), so that the client stops
/// reading the socket soon after the engine stops taking messages.
fn consuming_client(mut c: ClientConfig) -> ClientConfig {
    c.event_capacity = CONSUMING_BUFFER;
    c.max_buffered = CONSUMING_BUFFER;
    c
}

/// The publishing connection's client: it receives nothing but receipts, ERRORs and its own
/// connection events, and always reads.
fn publishing_client(mut c: ClientConfig) -> ClientConfig {
    c.event_capacity = 16;
    c
}

/// Messages the consuming client holds beyond the engine's budget, in its channel and in its
/// buffer each.
const CONSUMING_BUFFER: usize = 32;

/// Artemis reads a prefetch as a window in bytes of its own encoding of the messages (and lets
/// one message through whatever its size), so that `activemq.prefetchSize` alone would be one
/// message at a time and a held PenguiFlow stream could never complete there (tests/artemis.rs).
/// Its `consumer-window-size` gets this many bytes per prefetched message (measured: a
/// 190-byte Wise Agents request counts about 450 bytes there, a 1,000-byte body about 1,300;
/// with 1 KiB a three-chunk PenguiFlow stream did not fit the adapters' prefetch of 3), so the
/// in-flight bound holds on Artemis as a bound in bytes: 1.6 messages a slot at 1,000 bytes,
/// 4.6 at 190 bytes, under `max_buffered`'s margin.
const ARTEMIS_WINDOW_PER_MESSAGE: usize = 2048;

/// How the bridge consumes: `client-individual` acks, each subscription's prefetch
/// (ActiveMQ's and RabbitMQ's headers both) the whole of `in_flight` when the engine's budget
/// bounds what is read, else an equal share of it; and ActiveMQ's exclusive consumer when
/// asked.
///
/// An A2A agent's request queue has a prefetch of twice its `max_calls`: the requests beyond
/// wait on the broker, so that an agent that hangs holds that many, never the engine's budget
/// that the other queues share.
#[derive(Debug, Clone)]
struct Consuming {
    prefetch: usize,
    exclusive: bool,
    /// The request queues of A2A agents, with their own prefetch.
    calls: Arc<HashMap<String, usize>>,
}

impl Consuming {
    fn of(config: &Config, subscriptions: usize, budgeted: bool) -> Self {
        let in_flight = config.delivery.in_flight;
        let prefetch = if budgeted { in_flight } else { (in_flight / subscriptions.max(1)).max(1) };
        let max_calls =
            |a: &crate::config::AgentConfig| a.max_calls.unwrap_or(crate::a2a::call::DEFAULT_MAX_CALLS);
        let calls = config
            .agents
            .iter()
            .filter(|a| a.protocol == crate::envelope::codecs::Framework::A2a)
            .map(|a| {
                (format!("{}{}", config.wiseagents.request_prefix, a.name), (2 * max_calls(a)).min(prefetch))
            })
            .collect();
        Consuming { prefetch, exclusive: config.delivery.exclusive, calls: Arc::new(calls) }
    }

    fn subscription(&self, destination: &str) -> Subscription {
        if destination == ADVISORY {
            return Subscription::new(ADVISORY, AckMode::Auto).with("transformation", "jms-advisory-json");
        }
        let prefetch = self.calls.get(destination).copied().unwrap_or(self.prefetch).max(1);
        let sub = Subscription::new(destination, AckMode::ClientIndividual)
            .with("activemq.prefetchSize", prefetch.to_string())
            .with("prefetch-count", prefetch.to_string())
            .with("consumer-window-size", prefetch.saturating_mul(ARTEMIS_WINDOW_PER_MESSAGE).to_string());
        if self.exclusive { sub.with("activemq.exclusive", "true") } else { sub }
    }
}

/// Agents named by a glob: their queues, found through ActiveMQ's advisory topic, and
/// subscribed among the others.
struct Discovering {
    held: Subscriptions,
}

impl Discover for Discovering {
    fn is_advisory(&self, message: &Message) -> bool {
        message.destination == ADVISORY
    }

    /// An advisory announcing a queue: subscribes when it is the queue of an agent a glob names.
    fn discover(&mut self, pipeline: &mut Pipeline, advisory: &Message) {
        let Ok(info) = serde_json::from_slice::<serde_json::Value>(advisory.body()) else { return };
        let info = &info["DestinationInfo"];
        let added = info["operationType"].as_i64() == Some(0);
        let physical =
            info["destination"]["string"].as_str().or_else(|| info["destination"]["physicalName"].as_str());
        let Some(destination) = physical.and_then(|p| pipeline.router().discover(p)).filter(|_| added) else {
            return;
        };
        if self.held.discover(&destination, pipeline.router()) {
            pipeline.know_discovered(&destination);
        }
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
