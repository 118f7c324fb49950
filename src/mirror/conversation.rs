//! The `conversation` key: one id shared by a request, the tool calls it caused and the
//! final answer, so that an observer can group them. Wise Agents carries no conversation id;
//! what ties its messages together is the agent the final answer goes to
//! (`_route_response_to`) and the context (`_context_name`):
//!
//! - the *originator* of a message is its `_route_response_to`, or, when it has none, its
//!   sender for a request and its recipient for a response (the agent a plain answer goes to);
//! - a request with no `_tool_id` sent by its own originator opens a new conversation for
//!   (context, originator);
//! - every other request (a tool call, a question to another agent) belongs to the open
//!   conversation of its (context, originator), opening one if none is known;
//! - an answer takes the key of the oldest unanswered request its sender got from its
//!   recipient (first in, first out per (asker, answerer) pair, as proxy mode pairs them), so
//!   two questions A asks B keep their own keys and a plain answer to a tool call stays in the
//!   tool call's conversation; an answer to no known request falls back to the rule above.
//!
//! The tables are bounded: the oldest conversations and pairs are forgotten first.

use crate::envelope::{Direction, Envelope, new_uuid7};
use std::collections::{HashMap, VecDeque};

type Key = (String, String);

/// Unanswered requests remembered per (asker, answerer) pair, at most.
const PER_PAIR: usize = 1024;

/// Open conversations by (context, originator), and the keys of unanswered requests by
/// (asker, answerer), at most `capacity` of each.
#[derive(Debug)]
pub struct Conversations {
    open: HashMap<Key, String>,
    order: VecDeque<Key>,
    asked: HashMap<Key, VecDeque<String>>,
    pairs: VecDeque<Key>,
    capacity: usize,
}

impl Conversations {
    pub fn new(capacity: usize) -> Self {
        Conversations {
            open: HashMap::new(),
            order: VecDeque::new(),
            asked: HashMap::new(),
            pairs: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// The conversation `env` belongs to; a request is remembered for its answer, and an
    /// answer takes the key of the oldest request it answers.
    pub fn key(&mut self, env: &Envelope) -> String {
        let pair = |asker: &Option<String>, answerer: &Option<String>| {
            (asker.clone().unwrap_or_default(), answerer.clone().unwrap_or_default())
        };
        match env.direction {
            Direction::Request => {
                let key = self.by_originator(env);
                self.remember(pair(&env.sender, &env.recipient), key.clone());
                key
            }
            Direction::Response => {
                let pair = pair(&env.recipient, &env.sender);
                let answered = self.asked.get_mut(&pair).and_then(VecDeque::pop_front);
                answered.unwrap_or_else(|| self.by_originator(env))
            }
        }
    }

    fn remember(&mut self, pair: Key, key: String) {
        if !self.asked.contains_key(&pair) {
            self.pairs.push_back(pair.clone());
            while self.pairs.len() > self.capacity {
                if let Some(old) = self.pairs.pop_front() {
                    self.asked.remove(&old);
                }
            }
        }
        let keys = self.asked.entry(pair).or_default();
        keys.push_back(key);
        if keys.len() > PER_PAIR {
            keys.pop_front();
        }
    }

    /// The conversation of (context, originator): 32 lowercase hex digits (a UUIDv7, so keys
    /// sort by the time the conversation began), also usable as a Civitas or PenguiFlow
    /// `trace_id`.
    fn by_originator(&mut self, env: &Envelope) -> String {
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
