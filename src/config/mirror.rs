//! `[mirror]`: which copy of the Wise Agents traffic the bridge reads, and where each format
//! of it goes. Checked once at start, with the rest of the configuration.

use crate::envelope::codecs::Framework;
use serde::{Deserialize, Serialize};

/// The agent name of the tap probe's queue, `<request_prefix>bridge-mirror-probe` (its
/// messages are never copied to the mirror's topics).
pub const PROBE_AGENT: &str = "bridge-mirror-probe";

/// A format the mirror publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Framework(Framework),
    Canonical,
}

impl Output {
    pub const fn as_str(self) -> &'static str {
        match self {
            Output::Framework(f) => f.as_str(),
            Output::Canonical => "canonical",
        }
    }
}

/// Mirror mode: every message on the Wise Agents request and response queues, read from a
/// copy the broker makes (the queues themselves are never consumed), published again in
/// each format on per-protocol topics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorConfig {
    /// How the broker makes the copy: `activemq` (a composite queue forwarding to
    /// `destination`, the queue in `original-destination`), `rabbitmq-firehose` (the
    /// `amq.rabbitmq.trace` exchange, `deliver.` routing keys), or `artemis` (a
    /// non-exclusive divert to `destination`, the address in `_AMQ_ORIG_ADDRESS`).
    #[serde(default = "default_tap")]
    pub tap: TapKind,
    /// Where the broker puts the copy (`activemq`, `artemis`).
    #[serde(default = "default_destination")]
    pub destination: String,
    /// Tapped messages held between reading and publishing; past it, a tapped message is
    /// dropped and counted (`bridge_mirror_dropped_total`).
    #[serde(default = "default_buffer")]
    pub buffer: usize,
    /// Messages the broker hands the tap before any is acknowledged.
    #[serde(default = "default_prefetch")]
    pub prefetch: usize,
    /// RabbitMQ: the longest the firehose queue may grow (`x-max-length`; the oldest is
    /// dropped past it), so that a stopped mirror costs the broker a bounded amount.
    #[serde(default = "default_max_backlog")]
    pub max_backlog: usize,
    /// How long a probe (a marker sent to `<request_prefix>bridge-mirror-probe` at start and
    /// after each reconnect) may take to come back through the tap before the mirror reports
    /// that the tap shows nothing; 0 turns the probe off.
    #[serde(default = "default_probe_timeout_ms")]
    pub probe_timeout_ms: u64,
    /// Where each format is published; `{direction}` is `request` or `response`, `{agent}`
    /// the agent whose queue the message was on. An empty pattern publishes no such copy.
    #[serde(default)]
    pub topics: MirrorTopics,
}

/// Where the broker's copy of the Wise Agents queues comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TapKind {
    Activemq,
    RabbitmqFirehose,
    Artemis,
}

/// One destination pattern per format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorTopics {
    #[serde(default = "default_civitas")]
    pub civitas: String,
    #[serde(default = "default_vox")]
    pub vox: String,
    #[serde(default = "default_penguiflow")]
    pub penguiflow: String,
    /// The canonical envelope as JSON, for tools that want one format.
    #[serde(default = "default_canonical")]
    pub canonical: String,
}

impl Default for MirrorConfig {
    /// The table with no keys: `[mirror]` alone.
    fn default() -> Self {
        MirrorConfig {
            tap: default_tap(),
            destination: default_destination(),
            buffer: default_buffer(),
            prefetch: default_prefetch(),
            max_backlog: default_max_backlog(),
            probe_timeout_ms: default_probe_timeout_ms(),
            topics: MirrorTopics::default(),
        }
    }
}

impl Default for MirrorTopics {
    fn default() -> Self {
        MirrorTopics {
            civitas: default_civitas(),
            vox: default_vox(),
            penguiflow: default_penguiflow(),
            canonical: default_canonical(),
        }
    }
}

impl MirrorTopics {
    /// `(format, pattern)` of every copy that is published.
    pub fn enabled(&self) -> impl Iterator<Item = (Output, &str)> {
        [
            (Output::Framework(Framework::Civitas), self.civitas.as_str()),
            (Output::Framework(Framework::Vox), self.vox.as_str()),
            (Output::Framework(Framework::PenguiFlow), self.penguiflow.as_str()),
            (Output::Canonical, self.canonical.as_str()),
        ]
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
    }
}

const fn default_tap() -> TapKind {
    TapKind::Activemq
}
fn default_destination() -> String {
    "/topic/mirror.wiseagents".into()
}
const fn default_buffer() -> usize {
    10_000
}
const fn default_prefetch() -> usize {
    1000
}
const fn default_probe_timeout_ms() -> u64 {
    5_000
}
const fn default_max_backlog() -> usize {
    100_000
}
fn default_civitas() -> String {
    "/topic/mirror.civitas.{direction}.{agent}".into()
}
fn default_vox() -> String {
    "/topic/mirror.vox.{direction}.{agent}".into()
}
fn default_penguiflow() -> String {
    "/topic/mirror.penguiflow.{direction}.{agent}".into()
}
fn default_canonical() -> String {
    "/topic/mirror.canonical.{direction}.{agent}".into()
}

impl MirrorConfig {
    /// Problems `types` cannot catch, each with its key: patterns that are not topics-like
    /// destinations, or that the bridge would read back (the tap, a Wise Agents queue).
    pub fn problems(&self, request_prefix: &str, response_prefix: &str) -> Vec<(String, String)> {
        let mut bad = Vec::new();
        for (key, value) in [("mirror.buffer", self.buffer), ("mirror.prefetch", self.prefetch)] {
            if value == 0 {
                bad.push((key.to_owned(), "must be at least 1".to_owned()));
            }
        }
        if self.tap == TapKind::RabbitmqFirehose
            && ![request_prefix, response_prefix].iter().all(|p| p.starts_with("/queue/"))
        {
            let why = "the firehose sees queues: wiseagents.request_prefix and response_prefix must start with /queue/";
            bad.push(("mirror.tap".to_owned(), why.to_owned()));
        }
        if self.tap != TapKind::RabbitmqFirehose && !self.destination.starts_with('/') {
            bad.push((
                "mirror.destination".into(),
                format!("{:?} is not a STOMP destination", self.destination),
            ));
        }
        for (output, pattern) in self.topics.enabled() {
            let key = format!("mirror.topics.{}", output.as_str());
            if !pattern.starts_with('/') {
                bad.push((key, format!("{pattern:?} is not a STOMP destination")));
            } else if [request_prefix, response_prefix].iter().any(|p| pattern.starts_with(p))
                || pattern == self.destination
            {
                bad.push((
                    key,
                    format!("{pattern:?} is read by the bridge: mirror output must never come back"),
                ));
            } else if ["/topic/", "/queue/"]
                .iter()
                .any(|k| pattern.strip_prefix(k).is_some_and(|n| n.contains('/')))
            {
                bad.push((key, format!("{pattern:?}: use . separators (RabbitMQ refuses / in names)")));
            }
        }
        bad
    }
}

#[cfg(test)]
#[path = "mirror_tests.rs"]
mod tests;
