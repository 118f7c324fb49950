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
mod tests {
    use super::*;

    fn env(
        direction: Direction,
        sender: &str,
        recipient: &str,
        rrt: Option<&str>,
        tool: Option<&str>,
    ) -> Envelope {
        Envelope {
            direction,
            sender: Some(sender.into()),
            recipient: Some(recipient.into()),
            route_response_to: rrt.map(Into::into),
            tool_id: tool.map(Into::into),
            context: Some("default".into()),
            ..Envelope::default()
        }
    }

    #[test]
    fn a_request_its_tool_calls_and_the_final_answer_share_one_key() {
        let mut c = Conversations::new(10);
        let ask = c.key(&env(Direction::Request, "User", "Assistant", None, None));
        let call = c.key(&env(Direction::Request, "Assistant", "Weather", Some("User"), Some("call_1")));
        let tool_answer =
            c.key(&env(Direction::Response, "Weather", "Assistant", Some("User"), Some("call_1")));
        let final_answer = c.key(&env(Direction::Response, "Assistant", "User", None, None));
        assert_eq!(ask.len(), 32);
        assert!([&call, &tool_answer, &final_answer].iter().all(|k| **k == ask));
        let next = c.key(&env(Direction::Request, "User", "Assistant", Some("User"), None));
        assert_ne!(next, ask, "a new question opens a new conversation");
        let other = c.key(&env(Direction::Request, "Other", "Assistant", None, None));
        assert_ne!(other, next, "another originator is another conversation");
    }

    #[test]
    fn the_oldest_conversations_are_forgotten_first() {
        let mut c = Conversations::new(1);
        let first = c.key(&env(Direction::Request, "A", "B", None, None));
        c.key(&env(Direction::Request, "C", "B", None, None));
        let answer = c.key(&env(Direction::Response, "B", "A", None, None));
        assert_ne!(answer, first);
        assert_eq!(c.open.len(), 1);
    }
}
