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
//! never lazy), so memory is at most `capacity` asks whatever the rate and the TTL. Beside
//! them, the hashes of the last [`ANSWERED_KEPT`] answered asks' ids, so that an answer that
//! comes again is known as such rather than routed a second time by its token.

use crate::envelope::trace::Invocation;
use crate::routing::reply_base::ReplyBase;
use hashbrown::HashTable;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
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
    pub reply: ReplyBase,
    /// When an answer is given up on (an error answer is sent then); none: never.
    pub reply_deadline: Option<Instant>,
    /// The reply timeout passed and the error answer went out: an answer now is late.
    pub timed_out: bool,
    /// The `invoke_agent` span this ask opened, when traces are on: its answer ends it.
    pub invocation: Option<Box<Invocation>>,
}

/// (asker, answerer), held once for all the pair's asks.
type Pair = Arc<(Box<str>, Box<str>)>;

/// An ask as the table holds it: up to `capacity` of these are alive at once, so each string
/// is held once (the id only here, the pair shared), not as a `PendingAsk` and its index keys.
#[derive(Debug, Clone)]
struct Slot {
    at: Instant,
    id: Box<str>,
    pair: Pair,
    reply: ReplyBase,
    reply_deadline: Option<Instant>,
    timed_out: bool,
    invocation: Option<Box<Invocation>>,
}

impl Slot {
    /// A copy of the ask, for an answer that leaves it in the table.
    fn ask(&self) -> PendingAsk {
        self.clone().into_ask()
    }

    fn into_ask(self) -> PendingAsk {
        PendingAsk {
            id: self.id.into(),
            asker: self.pair.0.to_string(),
            answerer: self.pair.1.to_string(),
            reply: self.reply,
            reply_deadline: self.reply_deadline,
            timed_out: self.timed_out,
            invocation: self.invocation,
        }
    }
}

/// A pair's pending asks, oldest first.
#[derive(Debug)]
struct PairAsks {
    pair: Pair,
    seqs: BTreeSet<u64>,
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
    /// An ask marked answered ([`CorrelationTable::mark_answered`]): this answer comes again.
    Repeated,
}

/// How many answered asks are remembered, to know an answer that comes again (a framework
/// that sends its answer twice, or hundreds of times: PenguiFlow re-running a node): 4,096
/// hashes, about 100 KiB.
pub const ANSWERED_KEPT: usize = 4096;

/// The hashes of the last answered asks' ids, oldest first.
#[derive(Debug, Default)]
struct Answered {
    order: VecDeque<u64>,
    set: HashSet<u64>,
}

impl Answered {
    fn insert(&mut self, hash: u64) {
        if self.set.contains(&hash) {
            return;
        }
        // The oldest goes first, so that neither grows past its first allocation.
        if self.order.len() >= ANSWERED_KEPT
            && let Some(oldest) = self.order.pop_front()
        {
            self.set.remove(&oldest);
        }
        self.set.insert(hash);
        self.order.push_back(hash);
    }

    /// Takes a mark back (its place in the order stays, and goes in its turn).
    fn remove(&mut self, hash: u64) {
        self.set.remove(&hash);
    }
}

/// Pending asks by id, in age order, with a FIFO per (asker, answerer) pair.
#[derive(Debug)]
pub struct CorrelationTable {
    capacity: usize,
    ttl: Duration,
    next: u64,
    /// Age order: sequence number → slot.
    slots: BTreeMap<u64, Slot>,
    /// Each slot's sequence number, found by the hash of its id (compared with the slot's).
    by_id: HashTable<u64>,
    by_pair: HashTable<PairAsks>,
    hasher: RandomState,
    /// Reply deadlines, soonest first.
    deadlines: BTreeSet<(Instant, u64)>,
    /// How many of the slots are timed out (kept only to recognise a late answer).
    timed_out: usize,
    evicted: u64,
    answered: Answered,
}

impl CorrelationTable {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        CorrelationTable {
            capacity: capacity.max(1),
            ttl,
            next: 0,
            slots: BTreeMap::new(),
            by_id: HashTable::new(),
            by_pair: HashTable::new(),
            hasher: RandomState::new(),
            deadlines: BTreeSet::new(),
            timed_out: 0,
            evicted: 0,
            answered: Answered::default(),
        }
    }

    /// Remembers an ask. An ask with the same id (a redelivered request) replaces the
    /// earlier one; past the capacity the oldest ask is dropped (counted in `evicted`).
    pub fn insert(&mut self, ask: PendingAsk, now: Instant) {
        self.expire(now);
        if let Some(seq) = self.seq_of(&ask.id) {
            self.remove(seq);
        }
        while self.slots.len() >= self.capacity {
            let Some(oldest) = self.slots.keys().next().copied() else { break };
            self.remove(oldest);
            self.evicted += 1;
        }
        let seq = self.next;
        self.next += 1;
        let pair = self.join_pair(&ask.asker, &ask.answerer, seq);
        if let Some(deadline) = ask.reply_deadline {
            self.deadlines.insert((deadline, seq));
        }
        self.timed_out += usize::from(ask.timed_out);
        let id_hash = self.hasher.hash_one(ask.id.as_str());
        let slot = Slot {
            at: now,
            id: ask.id.into_boxed_str(),
            pair,
            reply: ask.reply,
            reply_deadline: ask.reply_deadline,
            timed_out: ask.timed_out,
            invocation: ask.invocation,
        };
        self.slots.insert(seq, slot);
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_id.insert_unique(id_hash, seq, |s| hasher.hash_one(&*slots[s].id));
    }

    /// The answer to the ask with this id: taken out, unless `acknowledgement`.
    pub fn answer_by_id(&mut self, id: &str, acknowledgement: bool, now: Instant) -> Option<Matched> {
        self.expire(now);
        match self.seq_of(id) {
            Some(seq) => Some(self.matched(seq, acknowledgement)),
            None => self.answered.set.contains(&self.hasher.hash_one(id)).then_some(Matched::Repeated),
        }
    }

    /// The answer from `answerer` to `asker` that names no ask: the oldest pending one of
    /// the pair.
    pub fn answer_in_order(&mut self, asker: &str, answerer: &str, now: Instant) -> Option<Matched> {
        self.expire(now);
        let hash = self.hasher.hash_one((asker, answerer));
        let asks = self.by_pair.find(hash, |p| (&*p.pair.0, &*p.pair.1) == (asker, answerer))?;
        let seq = *asks.seqs.first()?;
        Some(self.matched(seq, false))
    }

    fn matched(&mut self, seq: u64, acknowledgement: bool) -> Matched {
        let slot = &self.slots[&seq];
        if acknowledgement {
            // A receipt never consumes the ask, timed out or not: its answer is still to come.
            return Matched::Acknowledged(slot.ask());
        }
        if slot.timed_out {
            return Matched::Late(self.remove(seq).expect("present"));
        }
        Matched::Answer(self.remove(seq).expect("present"))
    }

    /// Marks the ask `id` answered (its answer is on its way, or was dropped as late): a
    /// repeat of that answer is known.
    pub fn mark_answered(&mut self, id: &str) {
        self.answered.insert(self.hasher.hash_one(id));
    }

    /// Takes back the mark of an ask answered by a message that is given back to the broker
    /// before its answer was published (its redelivery answers it).
    pub fn unmark_answered(&mut self, id: &str) {
        self.answered.remove(self.hasher.hash_one(id));
    }

    /// Removes an ask (its request was never published).
    pub fn forget(&mut self, id: &str) {
        if let Some(seq) = self.seq_of(id) {
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
            if let Some(slot) = self.slots.get_mut(&seq).filter(|s| !s.timed_out) {
                slot.timed_out = true;
                self.timed_out += 1;
                out.push(slot.ask());
            }
        }
        out
    }

    /// Asks still waiting for an answer (not timed out).
    pub fn pending(&self) -> usize {
        self.slots.len().saturating_sub(self.timed_out)
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

    fn seq_of(&self, id: &str) -> Option<u64> {
        let hash = self.hasher.hash_one(id);
        self.by_id.find(hash, |s| &*self.slots[s].id == id).copied()
    }

    /// The pair's shared (asker, answerer), with `seq` added to its asks.
    fn join_pair(&mut self, asker: &str, answerer: &str, seq: u64) -> Pair {
        let hash = self.hasher.hash_one((asker, answerer));
        let same = |p: &PairAsks| (&*p.pair.0, &*p.pair.1) == (asker, answerer);
        if let Some(asks) = self.by_pair.find_mut(hash, same) {
            asks.seqs.insert(seq);
            return asks.pair.clone();
        }
        let pair: Pair = Arc::new((asker.into(), answerer.into()));
        let asks = PairAsks { pair: pair.clone(), seqs: BTreeSet::from([seq]) };
        let hasher = &self.hasher;
        self.by_pair.insert_unique(hash, asks, |p| hasher.hash_one((&*p.pair.0, &*p.pair.1)));
        pair
    }

    fn remove(&mut self, seq: u64) -> Option<PendingAsk> {
        let slot = self.slots.remove(&seq)?;
        self.timed_out -= usize::from(slot.timed_out);
        if let Ok(entry) = self.by_id.find_entry(self.hasher.hash_one(&*slot.id), |&s| s == seq) {
            entry.remove();
        }
        let hash = self.hasher.hash_one((&*slot.pair.0, &*slot.pair.1));
        if let Ok(mut entry) = self.by_pair.find_entry(hash, |p| Arc::ptr_eq(&p.pair, &slot.pair)) {
            entry.get_mut().seqs.remove(&seq);
            if entry.get().seqs.is_empty() {
                entry.remove();
            }
        }
        if let Some(deadline) = slot.reply_deadline {
            self.deadlines.remove(&(deadline, seq));
        }
        Some(slot.into_ask())
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
#[path = "table_tests.rs"]
mod tests;
