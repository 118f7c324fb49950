//! What the consuming connection is subscribed to: the destinations wanted (the configuration's,
//! the advisory topic when discovering, and the queues discovery found that a glob still names)
//! and the subscriptions held, made to follow by one [`Subscriptions::reconcile`] that start-up,
//! a reload and discovery all call. A SUBSCRIBE's or UNSUBSCRIBE's receipt comes on the
//! consuming connection, which the engine may not be reading, so each is awaited in a task.

use crate::routing::Router;
use crate::stomp::{Client, SessionError, Subscription};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How a destination's SUBSCRIBE frame is made (prefetch, ack mode, exclusivity).
pub type MakeSubscription = Arc<dyn Fn(&str) -> Subscription + Send + Sync>;

/// ActiveMQ Classic's topic announcing new queues.
pub const ADVISORY: &str = "/topic/ActiveMQ.Advisory.Queue";

/// Why the subscriptions change, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Start,
    Reload,
    Discovery,
}

impl Cause {
    fn as_str(self) -> &'static str {
        match self {
            Cause::Start => "start",
            Cause::Reload => "configuration reload",
            Cause::Discovery => "discovered",
        }
    }
}

/// What a reconcile changed: the destinations subscribed, and those ended with their ids (the
/// engine gives back what still comes on them, including on one whose SUBSCRIBE was still
/// awaiting its answer: it is unsubscribed once that comes).
#[derive(Debug, Default)]
pub struct Reconciled {
    pub subscribed: Vec<String>,
    pub ended: Vec<(String, String)>,
}

/// The one owner of the consuming connection's subscriptions.
#[derive(Clone)]
pub struct Subscriptions {
    client: Client,
    make: MakeSubscription,
    /// Whether the advisory topic is wanted (agents named by a glob, ActiveMQ's discovery).
    discovering: bool,
    state: Arc<Mutex<State>>,
    /// The tasks awaiting SUBSCRIBEs' answers, each with its outcome.
    under_way: Arc<Mutex<Vec<Subscribing>>>,
    shutdown: CancellationToken,
}

/// A task subscribing, to its outcome.
type Subscribing = JoinHandle<Result<(), SubscribeError>>;

#[derive(Default)]
struct State {
    /// Destination → its subscription.
    held: BTreeMap<String, Held>,
    /// The queues discovery found: wanted for as long as a glob of the configuration names
    /// their agent (the broker announces a queue once to a subscriber of its advisories).
    discovered: BTreeSet<String>,
}

/// What a reconcile does: SUBSCRIBEs (destination, id) to write, UNSUBSCRIBEs to write (those
/// whose SUBSCRIBE had its answer), and every subscription ended.
struct Plan {
    subscribe: Vec<(String, String)>,
    unsubscribe: Vec<(String, String)>,
    ended: Vec<(String, String)>,
}

impl State {
    /// Makes `held` what is `wanted`, each new subscription with an id from `new_id`.
    fn follow(&mut self, wanted: BTreeSet<String>, mut new_id: impl FnMut() -> String) -> Plan {
        let unwanted: Vec<String> = self.held.keys().filter(|d| !wanted.contains(*d)).cloned().collect();
        let mut plan = Plan { subscribe: Vec::new(), unsubscribe: Vec::new(), ended: Vec::new() };
        for destination in unwanted {
            let Some(held) = self.held.remove(&destination) else { continue };
            if held.answered {
                plan.unsubscribe.push((destination.clone(), held.id.clone()));
            }
            plan.ended.push((destination, held.id));
        }
        for destination in wanted {
            if self.held.contains_key(&destination) {
                continue;
            }
            let id = new_id();
            self.held.insert(destination.clone(), Held { id: id.clone(), answered: false });
            plan.subscribe.push((destination, id));
        }
        plan
    }
}

/// A subscription: its id, chosen before its SUBSCRIBE is written, and whether that SUBSCRIBE
/// has had its answer (until then an UNSUBSCRIBE could overtake it: the task awaiting the
/// answer ends it).
struct Held {
    id: String,
    answered: bool,
}

/// A SUBSCRIBE the broker refused, or that the client could not make.
#[derive(Debug, thiserror::Error)]
#[error("cannot subscribe to {destination}: {error}")]
pub struct SubscribeError {
    pub destination: String,
    pub error: SessionError,
}

/// How long a SUBSCRIBE made while the broker is away waits before trying again.
const RETRY: Duration = Duration::from_millis(500);

impl Subscriptions {
    pub fn new(
        client: Client,
        make: MakeSubscription,
        discovering: bool,
        shutdown: CancellationToken,
    ) -> Self {
        let (state, under_way) = (Arc::default(), Arc::default());
        Subscriptions { client, make, discovering, state, under_way, shutdown }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The destinations wanted under `router`: its subscriptions, the advisory topic when
    /// discovering, and the discovered queues that `router` would still discover.
    fn wanted(&self, router: &Router, discovered: &BTreeSet<String>) -> BTreeSet<String> {
        let still_named = |d: &&String| d.strip_prefix("/queue/").and_then(|p| router.discover(p)).is_some();
        let mut wanted: BTreeSet<String> = router.subscriptions().into_iter().collect();
        wanted.extend(self.discovering.then(|| ADVISORY.to_owned()));
        wanted.extend(discovered.iter().filter(still_named).cloned());
        wanted
    }

    /// Whether reconciling with `router` would end a subscription (a reload quiesces first).
    pub fn would_end(&self, router: &Router) -> bool {
        let state = self.state();
        let wanted = self.wanted(router, &state.discovered);
        state.held.keys().any(|d| !wanted.contains(d))
    }

    /// Makes the subscriptions held follow what `router` wants: each destination wanted and
    /// not held is subscribed in a task of its own (while the broker is away the SUBSCRIBE is
    /// tried again until it is written; one the broker refuses is forgotten, so that it may be
    /// wanted again), each held and no longer wanted is unsubscribed (its UNSUBSCRIBE awaited in
    /// a task).
    pub fn reconcile(&self, router: &Router, cause: Cause) -> Reconciled {
        let plan = {
            let mut state = self.state();
            let wanted = self.wanted(router, &state.discovered);
            state.follow(wanted, || self.client.subscription_id())
        };
        let subscribed = plan.subscribe.iter().map(|(d, _)| d.clone()).collect();
        if !plan.subscribe.is_empty() {
            self.spawn_subscribe(plan.subscribe, cause);
        }
        for (destination, id) in plan.unsubscribe {
            self.spawn_unsubscribe(destination, id, cause);
        }
        Reconciled { subscribed, ended: plan.ended }
    }

    /// A queue the broker announced that `router` discovers: remembered, and subscribed unless
    /// it already is. True when this call subscribed it.
    pub fn discover(&self, destination: &str, router: &Router) -> bool {
        if !self.state().discovered.insert(destination.to_owned()) {
            return false;
        }
        self.reconcile(router, Cause::Discovery).subscribed.iter().any(|d| d == destination)
    }

    /// Waits for every SUBSCRIBE under way to have its answer (each wait is bounded by the
    /// receipt timeout, and one retrying while the broker is away ends with shutdown); the
    /// first that failed, if one did.
    pub async fn settled(&self) -> Result<(), SubscribeError> {
        let under_way = std::mem::take(&mut *self.under_way.lock().unwrap_or_else(|e| e.into_inner()));
        let mut first = Ok(());
        for outcome in futures_util::future::join_all(under_way).await {
            if let (Ok(Err(e)), Ok(())) = (outcome, &first) {
                first = Err(e);
            }
        }
        first
    }

    /// The subscription ids held once every SUBSCRIBE under way has its answer (one that never
    /// was written, the broker away until shutdown, is not among them): what to unsubscribe at
    /// shutdown.
    pub async fn ids(&self) -> Vec<String> {
        let _ = self.settled().await;
        self.state().held.values().filter(|h| h.answered).map(|h| h.id.clone()).collect()
    }

    /// Subscribes to `destinations` in one task, their SUBSCRIBEs written in order and their
    /// answers awaited together; the task's outcome is the first that failed.
    fn spawn_subscribe(&self, destinations: Vec<(String, String)>, cause: Cause) {
        let this = self.clone();
        let task = tokio::spawn(async move {
            let each = destinations.into_iter().map(|(d, id)| this.clone().subscribe(d, id, cause));
            futures_util::future::join_all(each).await.into_iter().find_map(Result::err).map_or(Ok(()), Err)
        });
        let mut under_way = self.under_way.lock().unwrap_or_else(|e| e.into_inner());
        under_way.retain(|t| !t.is_finished());
        under_way.push(task);
    }

    async fn subscribe(self, destination: String, id: String, cause: Cause) -> Result<(), SubscribeError> {
        let cause_text = cause.as_str();
        loop {
            let confirmed = self.client.subscribe_as(id.clone(), (self.make)(&destination)).await;
            let refused = match confirmed {
                Ok(()) => {
                    info!(%destination, cause = cause_text, "subscribed");
                    None
                }
                Err(SessionError::NotConnected) => {
                    tokio::select! {
                        _ = self.shutdown.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(RETRY) => continue,
                    }
                }
                Err(e @ (SessionError::Shutdown | SessionError::Rejected(_))) => {
                    warn!(%destination, cause = cause_text, error = %e, "cannot subscribe");
                    Some(e)
                }
                // A receipt late or lost with its connection: the SUBSCRIBE was written (or is
                // restored on the next connection), and a broker that refused it would have
                // sent an ERROR naming it (STOMP 1.2). It stands: subscribing again would
                // consume twice.
                Err(e) => {
                    warn!(%destination, cause = cause_text, error = %e, "no receipt for a SUBSCRIBE; it stands");
                    None
                }
            };
            self.settle(&destination, id, refused.is_some()).await;
            return refused.map_or(Ok(()), |error| Err(SubscribeError { destination, error }));
        }
    }

    /// Records that a SUBSCRIBE had its answer; one the broker refused is forgotten, and one a
    /// reconcile ended meanwhile is ended now.
    async fn settle(&self, destination: &str, id: String, refused: bool) {
        let wanted = {
            let mut state = self.state();
            match state.held.get_mut(destination) {
                Some(held) if held.id == id && !refused => {
                    held.answered = true;
                    true
                }
                Some(held) if held.id == id => {
                    state.held.remove(destination);
                    false
                }
                _ => false,
            }
        };
        if !wanted {
            let _ = self.client.unsubscribe(&id).await;
        }
    }

    fn spawn_unsubscribe(&self, destination: String, id: String, cause: Cause) {
        let client = self.client.clone();
        tokio::spawn(async move {
            match client.unsubscribe(&id).await {
                Ok(()) => info!(%destination, cause = cause.as_str(), "unsubscribed"),
                Err(e) => {
                    warn!(%destination, cause = cause.as_str(), error = %e, "no receipt for an UNSUBSCRIBE")
                }
            }
        });
    }
}
