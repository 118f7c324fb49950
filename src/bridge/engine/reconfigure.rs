//! A configuration reload inside the engine, between two messages: the pipeline's rules are
//! replaced (its state kept), new destinations subscribed, and removed ones unsubscribed only
//! after every message taken from them settled (the engine quiesces first). What the broker
//! dispatched on a removed subscription and the engine had not taken is given back, never
//! processed by the new rules (docs/OPERATING.md, "Reloading the configuration").

use super::Engine;
use crate::bridge::reload::{Reload, Reloads};
use crate::bridge::subscriptions::Cause;
use crate::routing::Router;
use crate::stomp::Message;
use futures_util::StreamExt;
use std::time::Duration;
use tracing::{debug, info};

impl Engine {
    /// Follows the configuration reloads of `reloads` (by default: none).
    pub fn with_reloads(mut self, reloads: Reloads) -> Self {
        self.reloads = Some(reloads);
        self
    }

    /// Runs on `reload`'s configuration from the next message on, or says why not (nothing
    /// changed then).
    pub(super) async fn reconfigure(&mut self, reload: Reload) {
        let Reload { config, done } = reload;
        let Some(reloads) = self.reloads.as_ref() else { return };
        let (settle_within, router) = (reloads.settle_within, Router::new(&config));
        if reloads.subscriptions.would_end(&router)
            && let Err(why) = self.quiesce(settle_within).await
        {
            let _ = done.send(Err(why));
            return;
        }
        let Some(reloads) = self.reloads.as_mut() else { return };
        self.pipeline.reconfigure(&config);
        let changed = reloads.subscriptions.reconcile(self.pipeline.router(), Cause::Reload);
        reloads.retired.extend(changed.ended.iter().map(|(_, id)| id.clone()));
        let d = &config.delivery;
        (self.dead_letter, self.batch_max, self.window, self.max_attempts) =
            (d.dead_letter.clone(), d.batch_max, d.batches_in_flight, d.max_attempts);
        // A2A agents cannot change on reload, but their cards may have: read again at each
        // agent's next call.
        if let Some(calls) = self.calls.stage() {
            calls.forget_cards();
        }
        if let Some(relay) = &self.relay {
            relay.follow(&config);
        }
        let added = changed.subscribed;
        let removed: Vec<String> = changed.ended.into_iter().map(|(d, _)| d).collect();
        let (subscribed, unsubscribed) = (added.join(", "), removed.join(", "));
        info!(subscribed, unsubscribed, "the engine runs on the reloaded configuration");
        let _ = done.send(Ok(format!("subscribed {added:?}, unsubscribed {removed:?}")));
    }

    /// Stops taking messages until every message taken is settled (its batch confirmed), at
    /// most `wait`; the subscriptions are untouched if it cannot.
    async fn quiesce(&mut self, wait: Duration) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + wait;
        while !self.ready.is_empty() || !self.batches.is_empty() {
            self.start_batches().await;
            if self.batches.is_empty() {
                return Err("the publishing connection is down, so the messages in flight cannot settle: \
                            nothing changed; send SIGHUP again once the bridge is ready"
                    .into());
            }
            match tokio::time::timeout_at(deadline, self.batches.next()).await {
                Ok(Some(done)) => self.finished(done),
                Ok(None) => {}
                Err(_) => {
                    return Err(format!(
                        "the messages in flight did not settle within {} ms (is publishing stalled?): \
                         nothing changed; send SIGHUP again",
                        wait.as_millis()
                    ));
                }
            }
        }
        Ok(())
    }

    /// A message of a subscription a reload ended, dispatched before its UNSUBSCRIBE: given
    /// back unprocessed (it stays unacknowledged, and the broker delivers it again to whoever
    /// consumes the queue next). True when `message` was one.
    pub(super) fn retired(&self, message: &Message) -> bool {
        let Some(reloads) = &self.reloads else { return false };
        if !reloads.retired.contains(&message.ack.subscription) {
            return false;
        }
        debug!(
            destination = %message.destination,
            message_id = %message.ack.message_id,
            "a message of a subscription the reload ended: given back to the broker"
        );
        self.metrics.reload.released();
        true
    }
}
