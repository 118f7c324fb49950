//! The subscriptions of the consuming connection, by destination: those made at start, and
//! those a reload or discovery adds and ends while the engine serves. A SUBSCRIBE's or
//! UNSUBSCRIBE's receipt comes on the consuming connection, which the engine may not be
//! reading, so each is awaited in a task.

use crate::stomp::{Client, SessionError, Subscription};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How a destination's SUBSCRIBE frame is made (prefetch, ack mode, exclusivity).
pub type MakeSubscription = Arc<dyn Fn(&str) -> Subscription + Send + Sync>;

/// Destination → subscription id (`None` while a reload's SUBSCRIBE awaits its answer).
#[derive(Clone)]
pub struct Subscriptions {
    client: Client,
    make: MakeSubscription,
    by_destination: Arc<Mutex<BTreeMap<String, Option<String>>>>,
    /// The tasks awaiting a SUBSCRIBE's answer.
    under_way: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    shutdown: CancellationToken,
}

/// How long a SUBSCRIBE made while the broker is away waits before trying again.
const RETRY: Duration = Duration::from_millis(500);

impl Subscriptions {
    pub fn new(client: Client, make: MakeSubscription, shutdown: CancellationToken) -> Self {
        Subscriptions { client, make, by_destination: Arc::default(), under_way: Arc::default(), shutdown }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Option<String>>> {
        self.by_destination.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The consuming connection's client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A subscription made at start.
    pub fn record(&self, destination: &str, id: &str) {
        self.map().insert(destination.to_owned(), Some(id.to_owned()));
    }

    /// Whether `destination` is subscribed, or its SUBSCRIBE is under way.
    pub fn contains(&self, destination: &str) -> bool {
        self.map().contains_key(destination)
    }

    /// The subscription ids held once every SUBSCRIBE under way has its answer (each wait is
    /// bounded by the receipt timeout, and one retrying while the broker is away ends with
    /// shutdown): what to unsubscribe at shutdown.
    pub async fn ids(&self) -> Vec<String> {
        let under_way = std::mem::take(&mut *self.under_way.lock().unwrap_or_else(|e| e.into_inner()));
        futures_util::future::join_all(under_way).await;
        self.map().values().flatten().cloned().collect()
    }

    /// Subscribes to each destination in a task of its own (`cause`: why, for the log). While
    /// the broker is away the SUBSCRIBE is tried again until it is written (the client restores
    /// what it wrote); one the broker refuses is forgotten, so that it may be added again.
    pub fn add(&self, destinations: &[String], cause: &'static str) {
        for destination in destinations {
            self.map().insert(destination.clone(), None);
            let this = self.clone();
            let destination = destination.clone();
            let task = tokio::spawn(async move { this.subscribe(destination, cause).await });
            let mut under_way = self.under_way.lock().unwrap_or_else(|e| e.into_inner());
            under_way.retain(|t| !t.is_finished());
            under_way.push(task);
        }
    }

    async fn subscribe(self, destination: String, cause: &'static str) {
        loop {
            let (id, confirmed) = self.client.try_subscribe((self.make)(&destination)).await;
            let ended = match confirmed {
                Ok(()) => {
                    info!(%destination, cause, "subscribed");
                    false
                }
                Err(SessionError::NotConnected) => {
                    tokio::select! {
                        _ = self.shutdown.cancelled() => return,
                        _ = tokio::time::sleep(RETRY) => continue,
                    }
                }
                Err(e @ (SessionError::Shutdown | SessionError::Rejected(_))) => {
                    warn!(%destination, cause, error = %e, "cannot subscribe");
                    true
                }
                // A receipt late or lost with its connection: the SUBSCRIBE was written (or is
                // restored on the next connection), and a broker that refused it would have
                // sent an ERROR naming it (STOMP 1.2). It stands: subscribing again would
                // consume twice.
                Err(e) => {
                    warn!(%destination, cause, error = %e, "no receipt for a SUBSCRIBE; it stands");
                    false
                }
            };
            self.settled(&destination, id, ended).await;
            return;
        }
    }

    /// Records a SUBSCRIBE's outcome; if a later reload removed the destination meanwhile,
    /// the subscription is ended at once.
    async fn settled(&self, destination: &str, id: String, ended: bool) {
        let wanted = {
            let mut map = self.map();
            match map.get_mut(destination) {
                Some(slot @ None) if !ended => {
                    *slot = Some(id.clone());
                    true
                }
                Some(None) => {
                    map.remove(destination);
                    true
                }
                _ => false,
            }
        };
        if !wanted || ended {
            let _ = self.client.unsubscribe(&id).await;
        }
    }

    /// Ends the subscriptions of `destinations`: their ids (the engine releases what still
    /// comes on them), each UNSUBSCRIBE awaited in a task.
    pub fn remove(&self, destinations: &[String]) -> Vec<String> {
        let ended: Vec<(String, String)> = {
            let mut map = self.map();
            destinations.iter().filter_map(|d| Some((map.remove(d).flatten()?, d.clone()))).collect()
        };
        let ids = ended.iter().map(|(id, _)| id.clone()).collect();
        for (id, destination) in ended {
            let client = self.client.clone();
            tokio::spawn(async move {
                match client.unsubscribe(&id).await {
                    Ok(()) => info!(%destination, "unsubscribed (configuration reload)"),
                    Err(e) => warn!(%destination, error = %e, "no receipt for a reload's UNSUBSCRIBE"),
                }
            });
        }
        ids
    }
}
