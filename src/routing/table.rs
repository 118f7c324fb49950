//! The bridge's memory of pending asks: every request the bridge sent on, until its answer
//! comes, its reply timeout passes (an error answer is sent, the ask stays as "timed out" so
//! that a late answer is recognised and dropped), or it ages out.
//!
//! An answer finds its ask by the ask's id (echoed as VOX `reply_to`, or inside the
//! reply-route token of Civitas `correlation_id`, PenguiFlow `meta.correlation_id`, Wise
//! Agents `_tool_id`), or, when it echoes nothing (a plain Wise Agents agent), first-in,
//! first-out per (asker, answerer) pair: one Wise Agents agent answers in order.
//!
//! Bounded in count and in age: every structure holds only live asks (removal is by key,
//! never lazy), so memory is at most `capacity` asks whatever the rate and the TTL.

use crate::envelope::Envelope;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// A request sent on, waiting for its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAsk {
    /// The bridge's id for this ask (the id of the message sent on).
    pub id: String,
    /// Who asked (a name, or a Civitas `_reply.*` address) and who was asked.
    pub asker: String,
    pub answerer: String,
    /// What an answer needs that it may not say itself: a response envelope addressed to
    /// the asker with the ask's context, tool id, correlation, trace, tenant, deadline.
    pub reply: Envelope,
    /// When an answer is given up on (an error answer is sent then); none: never.
    pub reply_deadline: Option<Instant>,
    /// The reply timeout passed and the error answer went out: an answer now is late.
    pub timed_out: bool,
}

#[derive(Debug)]
struct Slot {
    at: Instant,
    ask: PendingAsk,
}

/// What matching an answer found.
#[derive(Debug, Clone, PartialEq)]
pub enum Matched {
    /// The ask, taken out of the table.
    Answer(PendingAsk),
    /// An ask whose reply timeout had passed: the answer is late (the ask is taken out).
    Late(PendingAsk),
    /// The ask, left pending (an acknowledgement is not the answer).
    Acknowledged(PendingAsk),
}

/// Pending asks by id, in age order, with a FIFO per (asker, answerer) pair.
#[derive(Debug)]
pub struct CorrelationTable {
    capacity: usize,
    ttl: Duration,
    next: u64,
    /// Age order: sequence number → slot.
    slots: BTreeMap<u64, Slot>,
    by_id: HashMap<String, u64>,
    by_pair: HashMap<(String, String), BTreeSet<u64>>,
    /// Reply deadlines, soonest first.
    deadlines: BTreeSet<(Instant, u64)>,
    evicted: u64,
}

impl CorrelationTable {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        CorrelationTable {
            capacity: capacity.max(1),
            ttl,
            next: 0,
            slots: BTreeMap::new(),
            by_id: HashMap::new(),
            by_pair: HashMap::new(),
            deadlines: BTreeSet::new(),
            evicted: 0,
        }
    }

    /// Remembers an ask. An ask with the same id (a redelivered request) replaces the
    /// earlier one; past the capacity the oldest ask is dropped (counted in `evicted`).
    pub fn insert(&mut self, ask: PendingAsk, now: Instant) {
        self.expire(now);
        if let Some(seq) = self.by_id.get(&ask.id).copied() {
            self.remove(seq);
        }
        while self.slots.len() >= self.capacity {
            let Some(oldest) = self.slots.keys().next().copied() else { break };
            self.remove(oldest);
            self.evicted += 1;
        }
        let seq = self.next;
        self.next += 1;
        self.by_id.insert(ask.id.clone(), seq);
        self.by_pair.entry((ask.asker.clone(), ask.answerer.clone())).or_default().insert(seq);
        if let Some(deadline) = ask.reply_deadline {
            self.deadlines.insert((deadline, seq));
        }
        self.slots.insert(seq, Slot { at: now, ask });
    }

    /// The answer to the ask with this id: taken out, unless `acknowledgement`.
    pub fn answer_by_id(&mut self, id: &str, acknowledgement: bool, now: Instant) -> Option<Matched> {
        self.expire(now);
        let seq = *self.by_id.get(id)?;
        Some(self.matched(seq, acknowledgement))
    }

    /// The answer from `answerer` to `asker` that names no ask: the oldest pending one of
    /// the pair.
    pub fn answer_in_order(&mut self, asker: &str, answerer: &str, now: Instant) -> Option<Matched> {
        self.expire(now);
        let pair = (asker.to_owned(), answerer.to_owned());
        let seq = *self.by_pair.get(&pair)?.first()?;
        Some(self.matched(seq, false))
    }

    fn matched(&mut self, seq: u64, acknowledgement: bool) -> Matched {
        let ask = &self.slots[&seq].ask;
        if acknowledgement {
            // A receipt never consumes the ask, timed out or not: its answer is still to come.
            return Matched::Acknowledged(ask.clone());
        }
        if ask.timed_out {
            return Matched::Late(self.remove(seq).expect("present"));
        }
        Matched::Answer(self.remove(seq).expect("present"))
    }

    /// Removes an ask (its request was never published).
    pub fn forget(&mut self, id: &str) {
        if let Some(seq) = self.by_id.get(id).copied() {
            self.remove(seq);
        }
    }

    /// Asks whose reply timeout passed by `now`: each is marked timed out (kept, so a late
    /// answer is recognised, until it ages out) and returned for its error answer.
    pub fn time_out(&mut self, now: Instant) -> Vec<PendingAsk> {
        self.expire(now);
        let mut out = Vec::new();
        while let Some(&(deadline, seq)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.remove(&(deadline, seq));
            if let Some(slot) = self.slots.get_mut(&seq) {
                slot.ask.timed_out = true;
                out.push(slot.ask.clone());
            }
        }
        out
    }

    /// Asks still waiting for an answer (not timed out).
    pub fn pending(&self) -> usize {
        self.slots.values().filter(|s| !s.ask.timed_out).count()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Asks dropped because the table was full.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    fn remove(&mut self, seq: u64) -> Option<PendingAsk> {
        let slot = self.slots.remove(&seq)?;
        self.by_id.remove(&slot.ask.id);
        let pair = (slot.ask.asker.clone(), slot.ask.answerer.clone());
        if let Some(set) = self.by_pair.get_mut(&pair) {
            set.remove(&seq);
            if set.is_empty() {
                self.by_pair.remove(&pair);
            }
        }
        if let Some(deadline) = slot.ask.reply_deadline {
            self.deadlines.remove(&(deadline, seq));
        }
        Some(slot.ask)
    }

    /// Drops asks older than the TTL (oldest first; insertion order is age order).
    fn expire(&mut self, now: Instant) {
        while let Some((&seq, slot)) = self.slots.iter().next() {
            if now.saturating_duration_since(slot.at) <= self.ttl {
                break;
            }
            self.remove(seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(id: &str, asker: &str, answerer: &str) -> PendingAsk {
        PendingAsk {
            id: id.into(),
            asker: asker.into(),
            answerer: answerer.into(),
            reply: Envelope { in_reply_to: Some(id.into()), ..Default::default() },
            reply_deadline: None,
            timed_out: false,
        }
    }

    fn id_of(m: Option<Matched>) -> Option<String> {
        match m? {
            Matched::Answer(a) => Some(a.id),
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn concurrent_asks_of_one_pair_are_answered_in_order_and_by_id() {
        let mut t = CorrelationTable::new(10, Duration::from_secs(60));
        let now = Instant::now();
        for id in ["a1", "a2", "a3"] {
            t.insert(ask(id, "Civ", "Lib"), now);
        }
        t.insert(ask("b1", "Civ", "Other"), now);
        assert_eq!(id_of(t.answer_by_id("a2", false, now)).as_deref(), Some("a2"));
        assert_eq!(id_of(t.answer_in_order("Civ", "Lib", now)).as_deref(), Some("a1"));
        assert_eq!(id_of(t.answer_in_order("Civ", "Lib", now)).as_deref(), Some("a3"));
        assert_eq!(t.answer_in_order("Civ", "Lib", now), None, "nothing left of the pair");
        assert_eq!(id_of(t.answer_in_order("Civ", "Other", now)).as_deref(), Some("b1"));
        assert!(t.is_empty());
    }

    #[test]
    fn an_acknowledgement_leaves_the_ask_pending() {
        let mut t = CorrelationTable::new(10, Duration::from_secs(60));
        let now = Instant::now();
        t.insert(ask("v1", "WA", "Vox"), now);
        assert!(matches!(t.answer_by_id("v1", true, now), Some(Matched::Acknowledged(_))));
        assert_eq!(id_of(t.answer_by_id("v1", false, now)).as_deref(), Some("v1"));
    }

    #[test]
    fn a_timed_out_ask_gives_one_error_then_its_answer_is_late() {
        let mut t = CorrelationTable::new(10, Duration::from_secs(60));
        let now = Instant::now();
        let mut a = ask("x", "WA", "Civ");
        a.reply_deadline = Some(now + Duration::from_secs(5));
        t.insert(a, now);
        t.insert(ask("y", "WA", "Civ"), now);
        assert!(t.time_out(now + Duration::from_secs(4)).is_empty());
        assert_eq!(t.pending(), 2);
        let out = t.time_out(now + Duration::from_secs(5));
        assert_eq!(out.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["x"]);
        assert!(t.time_out(now + Duration::from_secs(6)).is_empty(), "once");
        assert_eq!(t.pending(), 1);
        assert!(
            matches!(t.answer_by_id("x", true, now), Some(Matched::Acknowledged(_))),
            "a receipt leaves it"
        );
        let late = t.answer_in_order("WA", "Civ", now + Duration::from_secs(7));
        assert!(matches!(late, Some(Matched::Late(a)) if a.id == "x"), "the oldest of the pair is late");
        assert_eq!(id_of(t.answer_in_order("WA", "Civ", now)).as_deref(), Some("y"));
    }

    #[test]
    fn full_drops_the_oldest_and_old_ones_expire() {
        let mut t = CorrelationTable::new(2, Duration::from_secs(60));
        let now = Instant::now();
        for id in ["a", "b", "c"] {
            t.insert(ask(id, "A", "B"), now);
        }
        assert_eq!((t.len(), t.evicted()), (2, 1));
        assert_eq!(t.answer_by_id("a", false, now), None);
        assert!(t.answer_by_id("b", false, now).is_some());
        assert!(t.answer_by_id("c", false, now + Duration::from_secs(61)).is_none(), "expired");
        assert!(t.is_empty());
    }

    #[test]
    fn an_ask_inserted_again_replaces_itself_and_is_not_evicted_as_its_old_slot() {
        let mut t = CorrelationTable::new(2, Duration::from_secs(60));
        let now = Instant::now();
        t.insert(ask("k", "A", "B"), now);
        t.insert(ask("m", "A", "B"), now);
        t.insert(ask("k", "A", "B"), now + Duration::from_secs(50));
        assert_eq!(t.len(), 2);
        t.insert(ask("n", "A", "B"), now + Duration::from_secs(51));
        assert_eq!(t.answer_by_id("m", false, now), None, "m was the oldest");
        let later = now + Duration::from_secs(70);
        assert!(t.answer_by_id("k", false, later).is_some(), "k's first slot expiring does not drop it");
    }

    #[test]
    fn one_unanswered_ask_pins_nothing_behind_it() {
        let mut t = CorrelationTable::new(10, Duration::from_secs(3600));
        let now = Instant::now();
        t.insert(ask("stuck", "A", "B"), now);
        for i in 0..10_000 {
            t.insert(ask(&format!("q{i}"), "A", "C"), now);
            assert!(t.answer_by_id(&format!("q{i}"), false, now).is_some());
        }
        assert_eq!((t.len(), t.evicted()), (1, 0), "answered asks leave no slot behind");
        assert_eq!(id_of(t.answer_in_order("A", "B", now)).as_deref(), Some("stuck"));
    }

    #[test]
    fn a_million_asks_stay_within_the_bound() {
        // 50,000 asks a second for an hour's TTL would be 180 million: the bound is the capacity.
        let mut t = CorrelationTable::new(1000, Duration::from_secs(3600));
        let start = Instant::now();
        for i in 0..1_000_000u64 {
            let now = start + Duration::from_micros(i * 20);
            let mut a = ask(&i.to_string(), "A", &format!("B{}", i % 7));
            a.reply_deadline =
                (i % 2 == 0).then(|| now + Duration::from_millis(if i % 8 == 0 { 5 } else { 1_800_000 }));
            t.insert(a, now);
            match i % 4 {
                0 => assert!(t.answer_by_id(&i.to_string(), false, now).is_some()),
                1 => t.insert(ask(&(i - 1).to_string(), "A", "B0"), now),
                2 => drop(t.time_out(now)),
                _ => {}
            }
            assert!(t.slots.len() <= 1000);
        }
        assert_eq!(t.len(), 1000);
        assert!(t.evicted() > 100_000, "{}", t.evicted());
        assert_eq!(t.by_id.len(), t.slots.len());
        assert_eq!(t.by_pair.values().map(BTreeSet::len).sum::<usize>(), t.slots.len());
        let deadlines = t.slots.values().filter(|s| s.ask.reply_deadline.is_some()).count();
        assert!(t.deadlines.len() <= deadlines, "{} > {deadlines}", t.deadlines.len());
    }
}
