//! The conversations the `/conversations` page draws (docs/OBSERVABILITY.md): the last
//! `[traces] conversations` traces, each with its agents and at most [`EVENTS`] events, every
//! text cut to [`TEXT`] characters, so that the memory they take is bounded whatever the
//! traffic. The oldest conversation (by its first event) is forgotten first.

use super::{Hop, Times};
use crate::envelope::trace::TraceId;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Events kept per conversation; later ones are counted, not kept.
pub const EVENTS: usize = 64;
/// Agents kept per conversation.
const PARTIES: usize = 16;
/// Characters kept of a name, a destination, a reason.
pub const TEXT: usize = 160;

/// The conversations kept, newest last.
#[derive(Debug)]
pub struct Conversations {
    limit: usize,
    log: Mutex<Log>,
}

#[derive(Debug, Default)]
struct Log {
    next: u64,
    /// Age order (first event): sequence number → conversation.
    kept: BTreeMap<u64, Conversation>,
    by_trace: HashMap<TraceId, u64>,
    forgotten: u64,
}

#[derive(Debug, Clone)]
struct Conversation {
    trace: TraceId,
    conversation: Option<Arc<str>>,
    started: u64,
    updated: u64,
    parties: Vec<(Arc<str>, &'static str)>,
    events: Vec<Event>,
    /// Events past [`EVENTS`].
    untold: u32,
}

#[derive(Debug, Clone)]
struct Event {
    at: u64,
    kind: &'static str,
    from: Arc<str>,
    to: Option<Arc<str>>,
    source: Arc<str>,
    destination: Arc<str>,
    message_id: Arc<str>,
    span: u64,
    latency_ms: f64,
    detail: Option<Arc<str>>,
}

impl Conversations {
    pub fn new(limit: usize) -> Self {
        Conversations { limit: limit.max(1), log: Mutex::new(Log::default()) }
    }

    /// A settled hop, as one event of its conversation.
    pub fn record(&self, hop: &Hop, times: Times) {
        let at = unix_ms(times.settled);
        let latency_ms = times.settled.duration_since(times.received).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        let event = Event {
            at,
            kind: hop.kind.as_str(),
            from: cut(&hop.from.name),
            to: hop.to.as_ref().map(|t| cut(&t.name)),
            source: cut(&hop.source),
            destination: cut(&hop.destination),
            message_id: cut(&hop.message_id),
            span: hop.send.0,
            latency_ms,
            detail: hop.error.as_ref().map(|(kind, reason)| cut(&format!("{kind}: {reason}"))),
        };
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let conversation = log.entry(hop.trace, at, self.limit);
        if conversation.conversation.is_none() {
            conversation.conversation = hop.conversation.as_deref().map(cut);
        }
        conversation.updated = conversation.updated.max(at);
        conversation.meet(&hop.from.name, hop.from.framework);
        if let Some(to) = &hop.to {
            conversation.meet(&to.name, to.framework);
        }
        let notes = hop.notes.iter().map(|note| Event {
            at: unix_ms(note.at),
            kind: note.kind,
            from: "bridge".into(),
            to: None,
            source: "".into(),
            destination: "".into(),
            message_id: "".into(),
            span: hop.process.0,
            latency_ms: 0.0,
            detail: Some(cut(&note.detail)),
        });
        for event in notes.chain(std::iter::once(event)) {
            match conversation.events.len() < EVENTS {
                true => conversation.events.push(event),
                false => conversation.untold += 1,
            }
        }
    }

    /// The page's data (`/conversations.json`), newest first: a copy taken under the lock
    /// (its texts shared, not copied), written out after it, so that a page being read never
    /// holds the messages being recorded.
    pub fn to_json(&self) -> Value {
        let (kept, forgotten) = {
            let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            (log.kept.values().rev().cloned().collect::<Vec<_>>(), log.forgotten)
        };
        json!({
            "limit": self.limit,
            "forgotten": forgotten,
            "conversations": kept.iter().map(Conversation::to_json).collect::<Vec<_>>(),
        })
    }

    /// Conversations kept now.
    pub fn len(&self) -> usize {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Log {
    /// The conversation of `trace`, now the most recent (the least recently active one is
    /// forgotten first).
    fn entry(&mut self, trace: TraceId, at: u64, limit: usize) -> &mut Conversation {
        let seq = match self.by_trace.get(&trace).copied() {
            Some(seq) => {
                let next = self.next;
                self.next += 1;
                let conversation = self.kept.remove(&seq).expect("indexed conversation is kept");
                self.kept.insert(next, conversation);
                self.by_trace.insert(trace, next);
                next
            }
            None => {
                while self.kept.len() >= limit {
                    let Some((_, old)) = self.kept.pop_first() else { break };
                    self.by_trace.remove(&old.trace);
                    self.forgotten += 1;
                }
                let seq = self.next;
                self.next += 1;
                self.by_trace.insert(trace, seq);
                let fresh = Conversation {
                    trace,
                    conversation: None,
                    started: at,
                    updated: at,
                    parties: Vec::new(),
                    events: Vec::new(),
                    untold: 0,
                };
                self.kept.insert(seq, fresh);
                seq
            }
        };
        self.kept.get_mut(&seq).expect("indexed conversation is kept")
    }
}

impl Conversation {
    fn meet(&mut self, name: &str, framework: &'static str) {
        let known = self.parties.iter().any(|(n, _)| &**n == name);
        if !known && self.parties.len() < PARTIES && name != "?" {
            self.parties.push((cut(name), framework));
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "trace_id": TraceId(self.trace.0).to_string(),
            "conversation": self.conversation.as_deref(),
            "started_ms": self.started,
            "updated_ms": self.updated,
            "truncated": self.untold > 0,
            "participants": self.parties.iter().map(|(n, f)| json!({"name": &**n, "framework": f})).collect::<Vec<_>>(),
            "events": self.events.iter().map(Event::to_json).collect::<Vec<_>>(),
        })
    }
}

impl Event {
    fn to_json(&self) -> Value {
        json!({
            "at_ms": self.at,
            "kind": self.kind,
            "from": &*self.from,
            "to": self.to.as_deref(),
            "source": &*self.source,
            "destination": &*self.destination,
            "message_id": &*self.message_id,
            "span_id": format!("{:016x}", self.span),
            "latency_ms": (self.latency_ms * 1000.0).round() / 1000.0,
            "detail": self.detail.as_deref(),
        })
    }
}

fn cut(text: &str) -> Arc<str> {
    match text.char_indices().nth(TEXT) {
        Some((end, _)) => format!("{}…", &text[..end]).into(),
        None => text.into(),
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
#[path = "conversations_tests.rs"]
mod tests;
