//! Reloading the configuration without a restart (`SIGHUP`): the file and the `BRIDGE__`
//! environment of the start are read again through the loader `run` and `validate` use; a
//! file that does not validate, or that changes a key that cannot change live, changes
//! nothing; otherwise the engine takes the new rules between two messages
//! (docs/OPERATING.md, "Reloading the configuration").

use super::subscriptions::Subscriptions;
use crate::config::Config;
use crate::config::diff::diff;
use crate::telemetry::Event;
use crate::telemetry::Metrics;
use crate::telemetry::reload::{ConfigReloaded, ReloadOutcome};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::info;

/// A validated configuration for the engine to run on; `done` says what changed in the
/// subscriptions, or why the engine could not take it (nothing changed then).
pub struct Reload {
    pub config: Config,
    pub done: oneshot::Sender<Result<String, String>>,
}

/// What the engine needs to follow reloads: their requests, and the subscriptions it holds.
pub struct Reloads {
    pub requests: mpsc::Receiver<Reload>,
    pub subscriptions: Subscriptions,
    /// Subscriptions a reload ended: what the broker dispatched on them before their
    /// UNSUBSCRIBE is given back, neither processed by the new rules nor acknowledged.
    pub retired: HashSet<String>,
    /// How long a reload that ends subscriptions waits for the messages in flight to settle.
    pub settle_within: std::time::Duration,
}

/// Sets the log level (a tracing filter); an error says why it was not.
pub type SetLevel = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// Reads the configuration again on demand and hands it to the engine.
pub struct Reloader {
    path: PathBuf,
    /// The process environment at start (only its `BRIDGE__` variables are read).
    env: HashMap<String, String>,
    running: Config,
    engine: mpsc::Sender<Reload>,
    metrics: Arc<Metrics>,
    set_level: SetLevel,
}

impl Reloader {
    pub fn new(
        path: PathBuf,
        running: Config,
        engine: mpsc::Sender<Reload>,
        metrics: Arc<Metrics>,
        set_level: SetLevel,
    ) -> Self {
        let env =
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Reloader { path, env: env.collect(), running, engine, metrics, set_level }
    }

    /// One reload, to its outcome (logged, counted, and kept for `GET /config`).
    pub async fn reload(&mut self) -> ReloadOutcome {
        let (outcome, reason) = self.attempt().await;
        let file = self.path.display().to_string();
        ConfigReloaded { outcome, file: &file, reason: &reason }.emit(&self.metrics.reload);
        outcome
    }

    async fn attempt(&mut self) -> (ReloadOutcome, String) {
        let new = match Config::load_with_env(&self.path, Some(self.env.clone())) {
            Ok(new) => new,
            Err(report) => return (ReloadOutcome::Invalid, report.to_string()),
        };
        let diff = diff(&self.running, &new);
        if !diff.refused.is_empty() {
            return (ReloadOutcome::Refused, diff.refusals());
        }
        if diff.is_empty() {
            return (ReloadOutcome::Applied, "nothing changed".into());
        }
        if !self.metrics.is_subscribed() {
            return (
                ReloadOutcome::Refused,
                "the bridge is still subscribing: send SIGHUP again once it is ready".into(),
            );
        }
        let (done, answer) = oneshot::channel();
        let stopping = || (ReloadOutcome::Refused, "the bridge is stopping".to_owned());
        if self.engine.send(Reload { config: new.clone(), done }).await.is_err() {
            return stopping();
        }
        let subscriptions = match answer.await {
            Ok(Ok(subscriptions)) => subscriptions,
            Ok(Err(why)) => return (ReloadOutcome::Refused, why),
            Err(_) => return stopping(),
        };
        let mut changes = diff.live.join(", ");
        if new.log.level != self.running.log.level
            && let Err(why) = (self.set_level)(&new.log.level)
        {
            changes.push_str(&format!(" (log.level not applied: {why})"));
        }
        self.running = new;
        (ReloadOutcome::Applied, format!("{changes}; {subscriptions}"))
    }
}

/// Reloads on every `SIGHUP` until shutdown. The handler is installed before this returns
/// (from then on a `SIGHUP` no longer ends the process, its default), the loop is the future.
pub fn on_hangup(
    mut reloader: Reloader,
    shutdown: CancellationToken,
) -> std::io::Result<impl Future<Output = ()> + Send> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangup = signal(SignalKind::hangup())?;
    Ok(async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                Some(()) = hangup.recv() => {
                    info!("SIGHUP: reloading the configuration");
                    reloader.reload().await;
                }
            }
        }
    })
}
