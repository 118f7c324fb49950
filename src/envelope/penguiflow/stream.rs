//! Reassembles PenguiFlow `StreamChunk`s of one `stream_id` into one message, in `seq`
//! order, once the chunk with `done` and every chunk before it have arrived. It keeps the
//! chunks' text, not the chunks: the bridge acknowledges each chunk as it is taken in, so a
//! stream may be longer than any prefetch. Buffered bytes and time waited are bounded; a
//! stream given up on comes back with the first chunk's message, to answer the asker with.

use super::PenguiMessage;
use crate::envelope::EnvelopeError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// `penguiflow.types.StreamChunk`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamChunk {
    pub stream_id: String,
    pub seq: u64,
    pub text: String,
    #[serde(default)]
    pub done: bool,
    #[serde(default)]
    pub meta: Map<String, Value>,
}

/// What feeding a chunk gave.
#[derive(Debug)]
pub enum ChunkFed {
    /// More chunks are needed.
    Pending,
    /// The whole stream, as one message whose payload is `FinalAnswer{text}`. The stream is
    /// kept until [`StreamAssembler::settled`] (its answer is safe) or handed out again by the
    /// next chunk that completes it after [`StreamAssembler::released`].
    Complete(PenguiMessage),
    /// The stream was given up on by this chunk (too many bytes buffered, or a `seq` that can
    /// never end it); later chunks of it are refused.
    Abandoned(Abandoned),
    /// A chunk of a stream answered already: its sender sent the stream again (its ask was
    /// redelivered, or a SEND it could not see confirmed was repeated, as at a broker restart).
    /// Taken in and dropped: the asker has its answer, and a repeat is no bad input.
    Repeated,
}

/// A stream given up on: why, and the first chunk's message (where the answer would have
/// gone).
#[derive(Debug)]
pub struct Abandoned {
    pub error: EnvelopeError,
    pub template: PenguiMessage,
}

struct Partial {
    template: PenguiMessage,
    texts: BTreeMap<u64, String>,
    last_seq: Option<u64>,
    started: Instant,
    bytes: usize,
    /// Handed out as a whole message whose fate is not known yet.
    out: bool,
}

/// Streams ended (given up on, or answered) remembered, so that a stray chunk of one is not
/// taken for the start of a new stream.
const ENDED_REMEMBERED: usize = 1024;

/// How a stream that was answered ended (its later chunks are repeats).
const ANSWERED: &str = "was answered";

/// Streams being reassembled, bounded in bytes and in age.
pub struct StreamAssembler {
    max_bytes: usize,
    max_wait: Duration,
    buffered: usize,
    streams: HashMap<String, Partial>,
    ended: VecDeque<(String, &'static str)>,
}

impl StreamAssembler {
    pub fn new(max_bytes: usize, max_wait: Duration) -> Self {
        StreamAssembler { max_bytes, max_wait, buffered: 0, streams: HashMap::new(), ended: VecDeque::new() }
    }

    /// An empty assembler with the same bounds.
    pub fn empty_like(&self) -> Self {
        StreamAssembler::new(self.max_bytes, self.max_wait)
    }

    /// Drops a stream (its sender ended it with an error).
    pub fn take(&mut self, id: &str) {
        self.remove(id, "failed");
    }

    /// Bytes of chunk text held now, across all streams.
    pub fn buffered_bytes(&self) -> usize {
        self.buffered
    }

    /// Streams held now.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Adds one chunk (`message` is the message that carried it). A chunk seen twice (a
    /// redelivery) replaces itself; a chunk of a stream answered already is a repeat. A chunk
    /// of a stream given up on is refused.
    pub fn feed(
        &mut self,
        message: PenguiMessage,
        chunk: StreamChunk,
        now: Instant,
    ) -> Result<ChunkFed, EnvelopeError> {
        let id = chunk.stream_id.clone();
        if let Some((_, how)) = self.ended.iter().find(|(e, _)| *e == id) {
            if *how == ANSWERED {
                return Ok(ChunkFed::Repeated);
            }
            return Err(EnvelopeError::Stream {
                stream_id: id,
                reason: format!("a chunk of a stream that {how}"),
            });
        }
        let partial = self.streams.entry(id.clone()).or_insert_with(|| Partial {
            template: message,
            texts: BTreeMap::new(),
            last_seq: None,
            started: now,
            bytes: 0,
            out: false,
        });
        if chunk.done && chunk.seq.checked_add(1).is_none() {
            // Its stream would need 2^64 chunks: it can never be whole.
            return Ok(ChunkFed::Abandoned(
                self.abandon(&id, format!("seq {} cannot end a stream", chunk.seq)),
            ));
        }
        if chunk.done {
            partial.last_seq = Some(chunk.seq);
        }
        let added = chunk.text.len();
        let replaced = partial.texts.insert(chunk.seq, chunk.text).map_or(0, |t| t.len());
        partial.bytes = partial.bytes + added - replaced;
        self.buffered = self.buffered + added - replaced;
        if self.buffered > self.max_bytes {
            let reason = format!("more than {} bytes of stream chunks buffered", self.max_bytes);
            return Ok(ChunkFed::Abandoned(self.abandon(&id, reason)));
        }
        Ok(self.complete(&id).unwrap_or(ChunkFed::Pending))
    }

    fn complete(&mut self, id: &str) -> Option<ChunkFed> {
        let partial = self.streams.get_mut(id)?;
        let last = partial.last_seq?;
        let chunks = u64::try_from(partial.texts.len()).ok();
        if partial.out || chunks != last.checked_add(1) || partial.texts.keys().next_back() != Some(&last) {
            return None;
        }
        partial.out = true;
        let mut message = partial.template.clone();
        let text: String = partial.texts.values().map(String::as_str).collect();
        message.payload = json!({"text": text, "citations": []});
        Some(ChunkFed::Complete(message))
    }

    /// The answer a complete stream made is safe: the stream is forgotten.
    pub fn settled(&mut self, id: &str) {
        self.remove(id, ANSWERED);
    }

    /// The answer a complete stream made was not published (its connection ended): the
    /// redelivery of the chunk that completed it completes it again.
    pub fn released(&mut self, id: &str) {
        if let Some(partial) = self.streams.get_mut(id) {
            partial.out = false;
        }
    }

    fn abandon(&mut self, id: &str, reason: String) -> Abandoned {
        let template = self.remove(id, "was given up on").map(|p| p.template).unwrap_or_else(empty_template);
        Abandoned { error: EnvelopeError::Stream { stream_id: id.to_owned(), reason }, template }
    }

    fn remove(&mut self, id: &str, how: &'static str) -> Option<Partial> {
        let partial = self.streams.remove(id)?;
        self.buffered -= partial.bytes;
        if self.ended.len() == ENDED_REMEMBERED {
            self.ended.pop_front();
        }
        self.ended.push_back((id.to_owned(), how));
        Some(partial)
    }

    /// Gives up on streams older than the time bound (none handed out as a whole).
    pub fn expire(&mut self, now: Instant) -> Vec<Abandoned> {
        let old: Vec<String> = self
            .streams
            .iter()
            .filter(|(_, p)| !p.out && now.duration_since(p.started) > self.max_wait)
            .map(|(id, _)| id.clone())
            .collect();
        let reason = format!("incomplete after {:?}", self.max_wait);
        old.iter().map(|id| self.abandon(id, reason.clone())).collect()
    }
}

fn empty_template() -> PenguiMessage {
    PenguiMessage {
        payload: Value::Null,
        headers: super::Headers { tenant: String::new(), topic: None, priority: 0 },
        trace_id: None,
        ts: None,
        deadline_s: None,
        meta: Map::new(),
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
