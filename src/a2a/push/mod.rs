//! Push notifications (A2A 1.0, `[a2a.push]`): a client sets a webhook for a task (in its
//! `SendMessage` or with `CreateTaskPushNotificationConfig`) and the bridge posts the task to
//! it each time its state or its artifacts change, as a `StreamResponse` holding the whole task
//! (`{"task": {...}}`), with the client's `token` in `A2A-Notification-Token` and its
//! `authentication` in `Authorization`.
//!
//! Each webhook of a task has a worker of its own: it takes the task's newest state, calls the
//! webhook until a 2xx answer, at most `a2a.push.attempts` times, waiting `a2a.push.backoff_ms`
//! doubled each time (at most `max_backoff_ms`), and a newer state that comes meanwhile
//! replaces the one being tried (it says all the older one says). A worker holds no one else:
//! a slow or absent webhook delays only its own task's notifications, never the task, its
//! stream, or another task. It ends with its task (after the final state), when the webhook is
//! deleted, or when the task is forgotten.
//!
//! Not the SDK's own sender (`a2a-server-lf`'s `HttpPushSender`): it calls every webhook
//! inside the task's execution, once, waiting up to 30 s per call, so a slow webhook holds the
//! task's stream, and it makes no second attempt; its errors reach the caller as "Internal
//! error". Its address rules are kept ([`address`]).

mod address;
mod worker;

pub use address::refusal;

use crate::config::push::PushConfig;
use crate::telemetry::push::PushMetrics;
use a2a::{Task, TaskPushNotificationConfig};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The webhook caller of `[a2a.push]`.
pub struct Pusher {
    http: reqwest::Client,
    pub config: PushConfig,
    metrics: Arc<crate::telemetry::Metrics>,
}

/// What a webhook's worker is sent: its task's newest state (`None` until the first update).
pub type Updates = watch::Sender<Option<Task>>;

impl Pusher {
    pub fn new(config: &PushConfig, metrics: Arc<crate::telemetry::Metrics>) -> Result<Pusher, String> {
        let tls = crate::stomp::transport::tls_client_config(&Default::default())
            .map_err(|e| format!("a2a.push: cannot make the TLS configuration: {e}"))?;
        // No proxy (a proxy would reach the address itself, unscreened) and no redirect (a
        // redirect to an address literal skips the resolver): a webhook answers where it is.
        let mut http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(Duration::from_millis(config.timeout_ms))
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none());
        if !config.allow_private {
            http = http.dns_resolver(Arc::new(address::Guarded));
        }
        let http = http.build().map_err(|e| format!("a2a.push: cannot make the HTTP client: {e}"))?;
        // The SDK's handler makes its own sender's client when it is given the webhooks' store,
        // with rustls's process-wide provider; ring is the one the bridge's TLS uses.
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        metrics.push.enable();
        Ok(Pusher { http, config: config.clone(), metrics })
    }

    fn metrics(&self) -> &PushMetrics {
        &self.metrics.push
    }

    /// Starts the worker of `webhook` (on the runtime): it calls the webhook with each state
    /// sent on the returned sender, and ends when the sender is dropped.
    pub fn start(self: &Arc<Self>, webhook: TaskPushNotificationConfig) -> Updates {
        let (updates, taken) = watch::channel(None);
        tokio::spawn(worker::run(self.clone(), webhook, taken));
        updates
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
