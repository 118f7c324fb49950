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
//! - an answer that echoes a `_tool_id` takes the key of the unanswered request its sender
//!   got from its recipient with that `_tool_id`; any other answer takes the key of the
//!   oldest unanswered request of that (asker, answerer) pair (first in, first out, as proxy
//!   mode pairs them), so two questions A asks B keep their own keys and a plain answer to a
//!   tool call stays in the tool call's conversation; an answer to no known request falls
//!   back to the rule above.
//!
//! The tables are bounded: the oldest conversations and pairs are forgotten first, and an
//! unanswered request is forgotten after `ttl` (as proxy mode forgets a correlation after
//! `delivery.correlation_ttl_ms`), so a question never answered does not take a later
//! question's answer.

use crate::envelope::{Direction, Envelope, new_uuid7};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

type Key = (String, String);

/// Unanswered requests remembered per (asker, answerer) pair, at most.
const PER_PAIR: usize = 1024;

/// How long an unanswered request is remembered by default: the default of
/// `delivery.correlation_ttl_ms`, proxy mode's equivalent.
pub const QUESTION_TTL: Duration = Duration::from_secs(3600);

/// An unanswered request: its conversation key, its `_tool_id`, and when it was seen.
#[derive(Debug)]
struct Question {
    key: String,
    tool_id: Option<String>,
    at: Instant,
}

/// Open conversations by (context, originator), and the keys of unanswered requests by
/// (asker, answerer), at most `capacity` of each.
#[derive(Debug)]
pub struct Conversations {
    open: HashMap<Key, String>,
    order: VecDeque<Key>,
    asked: HashMap<Key, VecDeque<Question>>,
    pairs: VecDeque<Key>,
    capacity: usize,
    ttl: Duration,
}

impl Conversations {
    pub fn new(capacity: usize) -> Self {
        Self::with_ttl(capacity, QUESTION_TTL)
    }

    /// As [`Conversations::new`], forgetting unanswered requests after `ttl`.
    pub fn with_ttl(capacity: usize, ttl: Duration) -> Self {
        Conversations {
            open: HashMap::new(),
            order: VecDeque::new(),
            asked: HashMap::new(),
            pairs: VecDeque::new(),
            capacity: capacity.max(1),
            ttl,
        }
    }

    /// The conversation `env` belongs to; a request is remembered for its answer, and an
    /// answer takes the key of the oldest request it answers.
    pub fn key(&mut self, env: &Envelope) -> String {
        self.key_at(env, Instant::now())
    }

    /// [`Conversations::key`] at `now`.
    fn key_at(&mut self, env: &Envelope, now: Instant) -> String {
        let pair = |asker: &Option<String>, answerer: &Option<String>| {
            (asker.clone().unwrap_or_default(), answerer.clone().unwrap_or_default())
        };
        match env.direction {
            Direction::Request => {
                let key = self.by_originator(env);
                let question = Question { key: key.clone(), tool_id: env.tool_id.clone(), at: now };
                self.remember(pair(&env.sender, &env.recipient), question);
                key
            }
            Direction::Response => {
                let pair = pair(&env.recipient, &env.sender);
                let answered = self.asked.get_mut(&pair).and_then(|questions| {
                    // Seen in order, so the expired ones are at the front.
                    while questions.front().is_some_and(|q| now.duration_since(q.at) > self.ttl) {
                        questions.pop_front();
                    }
                    let by_tool = env
                        .tool_id
                        .as_ref()
                        .and_then(|id| questions.iter().position(|q| q.tool_id.as_ref() == Some(id)));
                    questions.remove(by_tool.unwrap_or(0))
                });
                answered.map_or_else(|| self.by_originator(env), |q| q.key)
            }
        }
    }

    fn remember(&mut self, pair: Key, question: Question) {
        if !self.asked.contains_key(&pair) {
            self.pairs.push_back(pair.clone());
            while self.pairs.len() > self.capacity {
                if let Some(old) = self.pairs.pop_front() {
                    self.asked.remove(&old);
                }
            }
        }
        let keys = self.asked.entry(pair).or_default();
        keys.push_back(question);
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
