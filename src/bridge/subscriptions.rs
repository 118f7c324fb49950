//! The subscriptions of the consuming connection, by destination, so that a reload can add
//! and end them while the engine serves. A SUBSCRIBE's or UNSUBSCRIBE's receipt comes on the
//! consuming connection, which the engine may not be reading, so each is awaited in a task.

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
    shutdown: CancellationToken,
}

/// How long a SUBSCRIBE made while the broker is away waits before trying again.
const RETRY: Duration = Duration::from_millis(500);

impl Subscriptions {
    pub fn new(client: Client, make: MakeSubscription, shutdown: CancellationToken) -> Self {
        Subscriptions { client, make, by_destination: Arc::default(), shutdown }
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

    /// The subscription ids held now (to unsubscribe at shutdown).
    pub fn ids(&self) -> Vec<String> {
        self.map().values().flatten().cloned().collect()
    }

    /// Subscribes to each destination in a task of its own. While the broker is away the
    /// SUBSCRIBE is tried again until it is written (the client restores what it wrote).
    pub fn add(&self, destinations: &[String]) {
        for destination in destinations {
            self.map().insert(destination.clone(), None);
            let this = self.clone();
            let destination = destination.clone();
            tokio::spawn(async move { this.subscribe(destination).await });
        }
    }

    async fn subscribe(self, destination: String) {
        loop {
            let (id, confirmed) = self.client.try_subscribe((self.make)(&destination)).await;
            let ended = match confirmed {
                Ok(()) => {
                    info!(%destination, "subscribed (configuration reload)");
                    false
                }
                Err(SessionError::NotConnected) => {
                    tokio::select! {
                        _ = self.shutdown.cancelled() => return,
                        _ = tokio::time::sleep(RETRY) => continue,
                    }
                }
                Err(e @ (SessionError::Shutdown | SessionError::Rejected(_))) => {
                    warn!(%destination, error = %e, "cannot subscribe to a destination a reload added");
                    true
                }
                // Late or lost with its connection: written, so it stands (see Discovering).
                Err(e) => {
                    warn!(%destination, error = %e, "no receipt for a reload's SUBSCRIBE; it stands");
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
