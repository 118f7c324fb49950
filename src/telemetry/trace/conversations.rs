//! The conversations the `/conversations` page draws (docs/OBSERVABILITY.md): the last
//! `[traces] conversations` traces, each with its agents and at most [`EVENTS`] events, every
//! text cut to [`TEXT`] characters, so that the memory they take is bounded whatever the
//! traffic. The least recently active conversation is forgotten first.
//!
//! A conversation keeps its texts in one string of its own, each written once (an agent's
//! name, a destination its events repeat), and its events point into it: a message recorded
//! costs a few allocations per conversation, not one per text.

use super::{Hop, Times};
use crate::envelope::trace::TraceId;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
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
    /// The conversations, each in a slot that a forgotten one's successor reuses, with the
    /// room its texts and events had (a new conversation then allocates nothing).
    slots: Vec<Conversation>,
    /// Activity order: sequence number of its latest event → slot.
    kept: BTreeMap<u64, usize>,
    by_trace: HashMap<TraceId, usize>,
    forgotten: u64,
}

#[derive(Debug, Clone)]
struct Conversation {
    trace: TraceId,
    /// Its place in the activity order.
    seq: u64,
    started: u64,
    updated: u64,
    /// Every text of the conversation, each cut to [`TEXT`] characters.
    text: String,
    conversation: Option<Text>,
    parties: Vec<(Text, &'static str)>,
    events: Vec<Event>,
    /// Events past [`EVENTS`].
    untold: u32,
}

/// A text of a conversation: where it is in the conversation's `text`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Text {
    start: u32,
    len: u32,
}

#[derive(Debug, Clone)]
struct Event {
    at: u64,
    kind: &'static str,
    from: Text,
    to: Option<Text>,
    source: Text,
    destination: Text,
    message_id: Text,
    span: u64,
    latency_ms: f64,
    detail: Option<Text>,
}

impl Conversations {
    pub fn new(limit: usize) -> Self {
        Conversations { limit: limit.max(1), log: Mutex::new(Log::default()) }
    }

    /// A settled hop, as one event of its conversation.
    pub fn record(&self, hop: &Hop, times: Times) {
        let at = unix_ms(times.settled);
        let latency_ms = times.settled.duration_since(times.received).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let c = log.entry(hop.trace, at, self.limit);
        if c.conversation.is_none() {
            c.conversation = hop.conversation.as_deref().map(|name| c.write(&[name]));
        }
        c.updated = c.updated.max(at);
        for note in &hop.notes {
            if c.full() {
                continue;
            }
            let detail = c.write(&[&note.detail]);
            let bridge = c.text("bridge");
            let span = hop.process.0;
            c.events.push(Event {
                at: unix_ms(note.at),
                kind: note.kind,
                from: bridge,
                span,
                detail: Some(detail),
                ..Event::EMPTY
            });
        }
        if c.full() {
            return;
        }
        let from = c.meet(&hop.from.name, hop.from.framework);
        let to = hop.to.as_ref().map(|to| c.meet(&to.name, to.framework));
        let event = Event {
            at,
            kind: hop.kind.as_str(),
            from,
            to,
            source: c.text(&hop.source),
            destination: c.text(&hop.destination),
            message_id: c.write(&[&hop.message_id]),
            span: hop.send.0,
            latency_ms,
            detail: hop.error.as_ref().map(|(kind, reason)| c.write(&[kind, ": ", reason])),
        };
        c.events.push(event);
    }

    /// The page's data (`/conversations.json`), newest first: a copy taken under the lock
    /// (its texts shared, not copied), written out after it, so that a page being read never
    /// holds the messages being recorded.
    pub fn to_json(&self) -> Value {
        let (kept, forgotten) = {
            let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            (log.kept.values().rev().map(|&slot| log.slots[slot].clone()).collect::<Vec<_>>(), log.forgotten)
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
        let seq = self.next;
        self.next += 1;
        let slot = match self.by_trace.get(&trace).copied() {
            Some(slot) => {
                self.kept.remove(&self.slots[slot].seq);
                slot
            }
            None if self.slots.len() < limit => {
                self.slots.push(Conversation::new(trace, at));
                self.slots.len() - 1
            }
            None => {
                let (_, slot) = self.kept.pop_first().expect("a full log keeps conversations");
                self.by_trace.remove(&self.slots[slot].trace);
                self.forgotten += 1;
                self.slots[slot].reuse(trace, at);
                slot
            }
        };
        self.kept.insert(seq, slot);
        self.by_trace.insert(trace, slot);
        let conversation = &mut self.slots[slot];
        conversation.seq = seq;
        conversation
    }
}

impl Conversation {
    fn new(trace: TraceId, at: u64) -> Conversation {
        Conversation {
            trace,
            seq: 0,
            started: at,
            updated: at,
            text: String::with_capacity(128),
            conversation: None,
            parties: Vec::with_capacity(2),
            events: Vec::with_capacity(2),
            untold: 0,
        }
    }

    /// The slot of a forgotten conversation, now `trace`'s, its room kept.
    fn reuse(&mut self, trace: TraceId, at: u64) {
        (self.trace, self.started, self.updated, self.conversation, self.untold) = (trace, at, at, None, 0);
        self.text.clear();
        self.parties.clear();
        self.events.clear();
    }

    /// `name` among the agents (at most [`PARTIES`]; `?`, an agent not known, is none): its
    /// text.
    fn meet(&mut self, name: &str, framework: &'static str) -> Text {
        if let Some((known, _)) = self.parties.iter().find(|(t, _)| self.is(*t, name)) {
            return *known;
        }
        let text = self.write(&[name]);
        if self.parties.len() < PARTIES && name != "?" {
            self.parties.push((text, framework));
        }
        text
    }

    /// `text`, written once: an agent's name, or the previous event's source or destination,
    /// when it is one of those.
    fn text(&mut self, text: &str) -> Text {
        let last = self.events.last().map(|e| [e.source, e.destination]).unwrap_or_default();
        let known = self.parties.iter().map(|(t, _)| *t).chain(last);
        match known.into_iter().find(|t| self.is(*t, text)) {
            Some(known) => known,
            None => self.write(&[text]),
        }
    }

    /// Whether `t` holds `text` as [`Conversation::write`] would have written it.
    fn is(&self, t: Text, text: &str) -> bool {
        let (head, mark) = cut(text);
        let held = self.get(t);
        held.len() == head.len() + mark.len() && held.starts_with(head) && held.ends_with(mark)
    }

    /// Writes `parts` as one text, cut to [`TEXT`] characters.
    fn write(&mut self, parts: &[&str]) -> Text {
        let start = self.text.len();
        let mut left = TEXT;
        for part in parts {
            let (head, mark) = cut_to(part, left);
            self.text.push_str(head);
            if !mark.is_empty() {
                self.text.push_str(mark);
                break;
            }
            left -= head.chars().count();
        }
        Text { start: start as u32, len: (self.text.len() - start) as u32 }
    }

    fn get(&self, t: Text) -> &str {
        self.text.get(t.start as usize..(t.start + t.len) as usize).unwrap_or_default()
    }

    /// Whether it holds [`EVENTS`] events: then one more is counted, and nothing of it is
    /// written (its texts are bounded by its events).
    fn full(&mut self) -> bool {
        let full = self.events.len() >= EVENTS;
        self.untold += u32::from(full);
        full
    }

    fn to_json(&self) -> Value {
        json!({
            "trace_id": TraceId(self.trace.0).to_string(),
            "conversation": self.conversation.map(|t| self.get(t)),
            "started_ms": self.started,
            "updated_ms": self.updated,
            "truncated": self.untold > 0,
            "participants": self.parties.iter().map(|(n, f)| json!({"name": self.get(*n), "framework": f})).collect::<Vec<_>>(),
            "events": self.events.iter().map(|e| self.event_json(e)).collect::<Vec<_>>(),
        })
    }

    fn event_json(&self, e: &Event) -> Value {
        json!({
            "at_ms": e.at,
            "kind": e.kind,
            "from": self.get(e.from),
            "to": e.to.map(|t| self.get(t)),
            "source": self.get(e.source),
            "destination": self.get(e.destination),
            "message_id": self.get(e.message_id),
            "span_id": format!("{:016x}", e.span),
            "latency_ms": (e.latency_ms * 1000.0).round() / 1000.0,
            "detail": e.detail.map(|t| self.get(t)),
        })
    }
}

impl Event {
    const EMPTY: Event = Event {
        at: 0,
        kind: "",
        from: Text { start: 0, len: 0 },
        to: None,
        source: Text { start: 0, len: 0 },
        destination: Text { start: 0, len: 0 },
        message_id: Text { start: 0, len: 0 },
        span: 0,
        latency_ms: 0.0,
        detail: None,
    };
}

/// At most [`TEXT`] characters of `text`, and `…` if it was cut.
fn cut(text: &str) -> (&str, &'static str) {
    cut_to(text, TEXT)
}

fn cut_to(text: &str, chars: usize) -> (&str, &'static str) {
    if text.len() <= chars {
        return (text, "");
    }
    match text.char_indices().nth(chars) {
        Some((end, _)) => (&text[..end], "…"),
        None => (text, ""),
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
#[path = "conversations_tests.rs"]
mod tests;
