//! Where the broker's copy of the Wise Agents queues is read, and which queue a copied
//! message was on. Pure: the subscriptions to make and the reading of one message.

use crate::config::mirror::{MirrorConfig, TapKind};
use crate::envelope::Direction;
use crate::stomp::{AckMode, Message, Subscription};

/// RabbitMQ's firehose exchange as a STOMP destination.
const FIREHOSE: &str = "/exchange/amq.rabbitmq.trace/";

/// Where a tapped message was originally sent, in Wise Agents' naming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    /// The Wise Agents queue it was sent to, as a STOMP destination.
    pub queue: String,
    pub direction: Direction,
    /// The agent whose queue it was.
    pub agent: String,
}

/// The tap: how to subscribe, and how to read where a copy came from.
#[derive(Debug, Clone)]
pub struct Tap {
    kind: TapKind,
    destination: String,
    prefetch: usize,
    max_backlog: usize,
    request_prefix: String,
    response_prefix: String,
}

impl Tap {
    pub fn new(config: &MirrorConfig, request_prefix: &str, response_prefix: &str) -> Self {
        Tap {
            kind: config.tap,
            destination: config.destination.clone(),
            prefetch: config.prefetch,
            max_backlog: config.max_backlog,
            request_prefix: request_prefix.to_owned(),
            response_prefix: response_prefix.to_owned(),
        }
    }

    /// The subscriptions that read the copy: client acknowledgement with a bounded prefetch,
    /// so that the broker holds (and on overflow drops) what the bridge has not taken yet.
    pub fn subscriptions(&self) -> Vec<Subscription> {
        let bounded = |destination: &str| {
            Subscription::new(destination, AckMode::ClientIndividual)
                .with("activemq.prefetchSize", self.prefetch.to_string())
                .with("prefetch-count", self.prefetch.to_string())
        };
        match self.kind {
            TapKind::Activemq | TapKind::Artemis => vec![bounded(&self.destination)],
            TapKind::RabbitmqFirehose => [&self.request_prefix, &self.response_prefix]
                .iter()
                .filter_map(|p| p.strip_prefix("/queue/"))
                .map(|queue| {
                    bounded(&format!("{FIREHOSE}deliver.{queue}#"))
                        .with("x-max-length", self.max_backlog.to_string())
                })
                .collect(),
        }
    }

    /// Which Wise Agents queue a copy was on, or `None` for anything else.
    pub fn tapped(&self, msg: &Message) -> Option<Original> {
        let queue = match self.kind {
            TapKind::Activemq => msg.header("original-destination")?.to_owned(),
            TapKind::Artemis => format!("/queue/{}", msg.header("_AMQ_ORIG_ADDRESS")?),
            TapKind::RabbitmqFirehose => {
                let key = msg.destination.strip_prefix(FIREHOSE)?.strip_prefix("deliver.")?;
                format!("/queue/{key}")
            }
        };
        self.classify(queue)
    }

    /// A queue under the request or response prefix (ActiveMQ's path-separator plugin
    /// writes `request/A` as `request.A`; both are read).
    fn classify(&self, queue: String) -> Option<Original> {
        let dotted = |p: &str| p.strip_suffix('/').map(|p| format!("{p}."));
        let under = |prefix: &str| {
            queue
                .strip_prefix(prefix)
                .or_else(|| {
                    dotted(prefix).and_then(|d| queue.strip_prefix(d.as_str()).map(|_| &queue[d.len()..]))
                })
                .filter(|agent| !agent.is_empty())
                .map(str::to_owned)
        };
        let (direction, agent) = match under(&self.request_prefix) {
            Some(agent) => (Direction::Request, agent),
            None => (Direction::Response, under(&self.response_prefix)?),
        };
        Some(Original { queue, direction, agent })
    }
}

#[cfg(test)]
#[path = "tap_tests.rs"]
mod tests;
