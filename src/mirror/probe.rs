//! Whether the tap shows anything: a marker sent, at start and after each reconnect, to a
//! queue of the mirror's own named as a Wise Agents request queue, which a working tap copies
//! back. Until it is seen the mirror is not ready; a tap that shows nothing is reported with
//! its fix and probed again.

use crate::config::mirror::{MirrorConfig, TapKind};
use crate::stomp::{AckMode, Client, Command, Frame, Subscription};
use crate::telemetry::Metrics;
use crate::telemetry::mirror::TapState;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use crate::config::mirror::PROBE_AGENT;

/// What the tap's reader tells the probe.
#[derive(Debug)]
pub enum Signal {
    /// A probe came through the tap, with its body.
    Seen(String),
    /// The tap reconnected: what it shows must be checked again.
    Again,
}

/// The probe of one mirror.
pub struct Probe {
    pub client: Client,
    /// `<request_prefix>bridge-mirror-probe`.
    pub queue: String,
    /// How long a probe may take to come through; a tap that shows nothing is probed again
    /// this often.
    pub timeout: Duration,
    /// What to do when the tap shows nothing.
    pub fix: String,
    pub metrics: Arc<Metrics>,
}

/// The subscription that takes the probes off their queue (on the tap's connection, whose
/// reader acknowledges them), so that they never pile up, and so that RabbitMQ's firehose,
/// which sees deliveries, sees them.
pub fn subscription(queue: &str) -> Subscription {
    Subscription::new(queue, AckMode::ClientIndividual)
}

/// What an operator does when the tap of `config` shows nothing.
pub fn remedy(config: &MirrorConfig) -> String {
    match config.tap {
        TapKind::Activemq => format!(
            "merge config/mirror/activemq.xml into the broker's activemq.xml (a composite queue copying request/ and response/ queues to {}) and restart the broker",
            config.destination
        ),
        TapKind::RabbitmqFirehose => {
            "turn RabbitMQ's firehose on: rabbitmqctl trace_on -p / (config/mirror/rabbitmq-firehose.sh on), again after every broker restart".into()
        }
        TapKind::Artemis => format!(
            "add the divert of config/artemis/etc-override/broker.xml (request/ and response/ addresses to {}) to the broker's broker.xml",
            config.destination
        ),
    }
}

enum Probed {
    Seen,
    Unseen,
    Again,
    Stop,
}

impl Probe {
    /// Probes until shutdown: once at start, again after each reconnect, and every
    /// `timeout` while the tap shows nothing.
    pub async fn run(self, mut signals: mpsc::Receiver<Signal>, shutdown: CancellationToken) {
        let run = uuid::Uuid::now_v7().simple().to_string();
        let mut n = 0u64;
        loop {
            n += 1;
            let id = format!("{run}-{n}");
            let frame =
                Frame::new(Command::Send).with("destination", self.queue.clone()).with_body(id.clone());
            let sent = self.client.send(frame).await.is_ok();
            let outcome = self
                .wait(&mut signals, sent.then_some(id.as_str()), (self.timeout, Probed::Unseen), &shutdown)
                .await;
            let wait_for_again = match outcome {
                Probed::Stop => return,
                Probed::Again => continue,
                Probed::Seen => {
                    self.metrics.mirror.set_tap(TapState::Seen);
                    info!(probe = %self.queue, "mirror: the tap shows the probe");
                    true
                }
                Probed::Unseen => {
                    self.metrics.mirror.set_tap(TapState::Blind);
                    warn!(probe = %self.queue, fix = %self.fix, "mirror: the tap shows nothing: a probe sent to a Wise Agents queue did not come back through it");
                    false
                }
            };
            // Seen: probe again after a reconnect; unseen: also after `timeout`.
            let retry = if wait_for_again { Duration::from_secs(365 * 86_400) } else { self.timeout };
            match self.wait(&mut signals, None, (retry, Probed::Again), &shutdown).await {
                Probed::Stop => return,
                _ => self.metrics.mirror.set_tap(TapState::Probing),
            }
        }
    }

    /// Waits for the probe `id` to come through the tap (none: for a reconnect only), for
    /// at most `limit`, then gives `late`.
    async fn wait(
        &self,
        signals: &mut mpsc::Receiver<Signal>,
        id: Option<&str>,
        (limit, late): (Duration, Probed),
        stop: &CancellationToken,
    ) -> Probed {
        let deadline = tokio::time::sleep(limit);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return Probed::Stop,
                _ = &mut deadline => return late,
                signal = signals.recv() => match signal {
                    None => return Probed::Stop,
                    Some(Signal::Again) => return Probed::Again,
                    Some(Signal::Seen(body)) if id == Some(body.as_str()) => return Probed::Seen,
                    Some(Signal::Seen(_)) => continue,
                },
            }
        }
    }
}
