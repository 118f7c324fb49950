//! What the configuration decides for the pipeline (codecs, router, conversations, limits),
//! kept apart from what it remembers between messages, so that new settings can replace
//! these while pending asks and streams being joined stay.

use crate::config::codecs;
use crate::envelope::codecs::Codecs;
use crate::names::{glob_matches, is_glob};
use crate::routing::Router;
use std::time::Duration;

/// The configuration's part of the pipeline.
pub struct Settings {
    pub codecs: Codecs,
    pub router: Router,
    pub conversations: ConversationSettings,
    /// A message that passed through bridges this many times loops (`delivery.max_hops`).
    pub max_hops: u32,
    /// The largest body published (`delivery.max_body_bytes`).
    pub max_body: usize,
    /// Whether each message's trace is kept and reported (`[traces]` or the conversations
    /// page on): off, no id is made and nothing is written into a message's trace fields.
    pub tracing: bool,
}

impl Settings {
    /// The settings the configuration describes.
    pub fn of(config: &crate::config::Config) -> Self {
        Settings {
            codecs: codecs(config),
            router: Router::new(config),
            conversations: ConversationSettings::of(config),
            max_hops: config.delivery.max_hops,
            max_body: config.delivery.max_body_bytes,
            tracing: config.traces.enabled(),
        }
    }
}

/// How conversations are held: contexts native agents know, reply timeouts.
#[derive(Debug, Clone, Default)]
pub struct ConversationSettings {
    /// Context names and globs the native agents know (besides the default context).
    pub contexts: Vec<String>,
    /// Contexts (globs) of phased and chat collaborations, where answers are ACK.
    pub ack_contexts: Vec<String>,
    /// The reply timeout; zero: none.
    pub reply_timeout: Duration,
    /// Per agent reply timeouts (zero: none).
    pub agent_timeouts: std::collections::HashMap<String, Duration>,
}

impl ConversationSettings {
    pub fn of(config: &crate::config::Config) -> Self {
        let wa = &config.wiseagents;
        // With the registry, the context's collaboration decides what an answer is
        // (`wise_registry`): `ack_contexts` only names contexts then.
        let (mut contexts, mut ack_contexts) = (wa.contexts.clone(), wa.ack_contexts.clone());
        if wa.registry.is_some() {
            contexts.append(&mut ack_contexts);
        }
        ConversationSettings {
            contexts,
            ack_contexts,
            reply_timeout: Duration::from_millis(config.delivery.reply_timeout_ms),
            agent_timeouts: config
                .agents
                .iter()
                .filter_map(|a| a.reply_timeout_ms.map(|t| (a.name.clone(), Duration::from_millis(t))))
                .collect(),
        }
    }

    /// The answerer's own timeout, else the asker's, else the global one; none when zero.
    pub(super) fn timeout(&self, asker: &str, answerer: &str) -> Option<Duration> {
        let own = |name: &str| {
            self.agent_timeouts.get(name).copied().or_else(|| {
                self.agent_timeouts.iter().find(|(g, _)| is_glob(g) && glob_matches(g, name)).map(|(_, t)| *t)
            })
        };
        Some(own(answerer).or_else(|| own(asker)).unwrap_or(self.reply_timeout)).filter(|t| !t.is_zero())
    }

    /// A context named by `contexts` or `ack_contexts` (those are native contexts too).
    pub(super) fn known_context(&self, name: &str) -> bool {
        self.contexts.iter().chain(&self.ack_contexts).any(|g| g == name || glob_matches(g, name))
    }

    pub(super) fn ack_context(&self, name: &str) -> bool {
        self.ack_contexts.iter().any(|g| g == name || glob_matches(g, name))
    }
}

/// Stream bounds (bytes, time) from the configuration.
pub fn stream_bounds(config: &crate::config::Config) -> (usize, Duration) {
    match &config.protocols.penguiflow {
        Some(p) => (p.stream_max_bytes, Duration::from_millis(p.stream_max_wait_ms)),
        None => (4 << 20, Duration::from_secs(60)),
    }
}
