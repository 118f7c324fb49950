//! The bridge's memory of requests, for the replies that carry nothing back but an id (VOX's
//! `reply_to`) or nothing at all (a Wise Agents reply without `_tool_id`): bounded in entries
//! and in age, oldest first out. Everything else travels in the messages themselves.

use crate::envelope::correlation::ReplyRoute;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Remembered reply routes by key.
#[derive(Debug)]
pub struct CorrelationTable {
    capacity: usize,
    ttl: Duration,
    entries: HashMap<String, (Instant, ReplyRoute)>,
    order: VecDeque<(Instant, String)>,
}

impl CorrelationTable {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        CorrelationTable { capacity: capacity.max(1), ttl, entries: HashMap::new(), order: VecDeque::new() }
    }

    /// The key for a reply to a request that `requester` sent with `tool_id` (or none).
    pub fn reply_key(requester: &str, tool_id: Option<&str>) -> String {
        format!("reply\u{0}{requester}\u{0}{}", tool_id.unwrap_or(""))
    }

    /// The key for a reply that names its request by id.
    pub fn id_key(request_id: &str) -> String {
        format!("id\u{0}{request_id}")
    }

    pub fn insert(&mut self, key: String, route: ReplyRoute, now: Instant) {
        self.expire(now);
        while self.entries.len() >= self.capacity {
            let Some((_, oldest)) = self.order.pop_front() else { break };
            self.entries.remove(&oldest);
        }
        self.order.push_back((now, key.clone()));
        self.entries.insert(key, (now, route));
    }

    /// Takes the route remembered under `key`, if it has not expired.
    pub fn take(&mut self, key: &str, now: Instant) -> Option<ReplyRoute> {
        self.expire(now);
        self.entries.remove(key).map(|(_, route)| route)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        while let Some((at, key)) = self.order.front() {
            let stale_slot = self.entries.get(key).is_none_or(|(inserted, _)| inserted != at);
            if !stale_slot && now.duration_since(*at) <= self.ttl {
                break;
            }
            if !stale_slot {
                self.entries.remove(key);
            }
            self.order.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(id: &str) -> ReplyRoute {
        ReplyRoute { request_id: Some(id.into()), ..Default::default() }
    }

    #[test]
    fn a_route_is_taken_once() {
        let mut t = CorrelationTable::new(10, Duration::from_secs(60));
        let now = Instant::now();
        t.insert(CorrelationTable::id_key("m1"), route("m1"), now);
        assert_eq!(t.take(&CorrelationTable::id_key("m1"), now), Some(route("m1")));
        assert_eq!(t.take(&CorrelationTable::id_key("m1"), now), None);
    }

    #[test]
    fn the_oldest_goes_when_full_and_old_ones_expire() {
        let mut t = CorrelationTable::new(2, Duration::from_secs(60));
        let now = Instant::now();
        for id in ["a", "b", "c"] {
            t.insert(id.into(), route(id), now);
        }
        assert_eq!(t.len(), 2);
        assert_eq!(t.take("a", now), None);
        assert!(t.take("b", now).is_some());
        assert!(t.take("c", now + Duration::from_secs(61)).is_none(), "expired");
        assert!(t.is_empty());
    }

    #[test]
    fn a_key_inserted_again_keeps_its_newest_route() {
        let mut t = CorrelationTable::new(10, Duration::from_secs(60));
        let now = Instant::now();
        t.insert("k".into(), route("old"), now);
        t.insert("k".into(), route("new"), now + Duration::from_secs(50));
        assert_eq!(
            t.take("k", now + Duration::from_secs(70)),
            Some(route("new")),
            "the old slot expiring does not drop the new"
        );
    }
}
