//! The `conversation` key: one id shared by a request, the tool calls it caused and the
//! final answer, so that an observer can group them. Wise Agents carries no conversation id;
//! what ties its messages together is the agent the final answer goes to
//! (`_route_response_to`) and the context (`_context_name`):
//!
//! - the *originator* of a message is its `_route_response_to`, or, when it has none, its
//!   sender for a request and its recipient for a response (the agent a plain answer goes to);
//! - a request with no `_tool_id` sent by its own originator opens a new conversation for
//!   (context, originator);
//! - every other message (tool calls, their answers, the final answer) belongs to the open
//!   conversation of its (context, originator), opening one if none is known.
//!
//! Two questions one agent asks at once in one context cannot be told apart on the wire and
//! share a key. The table is bounded: the oldest conversations are forgotten first.

use crate::envelope::{Direction, Envelope, new_uuid7};
use std::collections::{HashMap, VecDeque};

type Key = (String, String);

/// Open conversations by (context, originator), at most `capacity` of them.
#[derive(Debug)]
pub struct Conversations {
    open: HashMap<Key, String>,
    order: VecDeque<Key>,
    capacity: usize,
}

impl Conversations {
    pub fn new(capacity: usize) -> Self {
        Conversations { open: HashMap::new(), order: VecDeque::new(), capacity: capacity.max(1) }
    }

    /// The conversation `env` belongs to: 32 lowercase hex digits (a UUIDv7, so keys sort by
    /// the time the conversation began), also usable as a Civitas or PenguiFlow `trace_id`.
    pub fn key(&mut self, env: &Envelope) -> String {
        let originator = env
            .route_response_to
            .clone()
            .or_else(|| match env.direction {
                Direction::Request => env.sender.clone(),
                Direction::Response => env.recipient.clone(),
            })
            .unwrap_or_default();
        let key = (env.context.clone().unwrap_or_default(), originator);
        let opens = env.direction == Direction::Request
            && env.tool_id.is_none()
            && env.sender.as_deref() == Some(key.1.as_str());
        match self.open.get(&key) {
            Some(id) if !opens => id.clone(),
            _ => self.begin(key),
        }
    }

    fn begin(&mut self, key: Key) -> String {
        let id = new_uuid7().simple().to_string();
        if self.open.insert(key.clone(), id.clone()).is_none() {
            self.order.push_back(key);
            while self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.open.remove(&old);
                }
            }
        }
        id
    }
}

#[cfg(test)]
#[path = "conversation_tests.rs"]
mod tests;
