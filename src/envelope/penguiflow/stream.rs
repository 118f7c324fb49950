//! Reassembles PenguiFlow `StreamChunk`s of one `stream_id` into one message, in `seq`
//! order, once the chunk with `done` and every chunk before it have arrived. Buffered bytes
//! and time waited are bounded; each chunk carries a caller's token (a message to ack) that
//! comes back with the whole message, or with the error that ends the stream.

use super::PenguiMessage;
use crate::envelope::EnvelopeError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
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
pub enum Fed<T> {
    /// More chunks are needed.
    Pending,
    /// The whole stream, as one message whose payload is `FinalAnswer{text}`, and the tokens
    /// of every chunk that made it.
    Complete { message: PenguiMessage, tokens: Vec<T> },
}

/// A stream given up on, with the tokens of its chunks (to dead-letter them).
#[derive(Debug)]
pub struct Abandoned<T> {
    pub error: EnvelopeError,
    pub tokens: Vec<T>,
}

struct Partial<T> {
    template: PenguiMessage,
    texts: BTreeMap<u64, String>,
    last_seq: Option<u64>,
    started: Instant,
    bytes: usize,
    tokens: Vec<T>,
}

/// Streams being reassembled, bounded in bytes and in age.
pub struct StreamAssembler<T> {
    max_bytes: usize,
    max_wait: Duration,
    buffered: usize,
    streams: HashMap<String, Partial<T>>,
}

impl<T> StreamAssembler<T> {
    pub fn new(max_bytes: usize, max_wait: Duration) -> Self {
        StreamAssembler { max_bytes, max_wait, buffered: 0, streams: HashMap::new() }
    }

    /// An empty assembler with the same bounds.
    pub fn empty_like(&self) -> Self {
        StreamAssembler::new(self.max_bytes, self.max_wait)
    }

    /// Drops a stream (its sender ended it with an error): the tokens of its chunks.
    pub fn take(&mut self, id: &str) -> Vec<T> {
        let partial = self.streams.remove(id);
        let (bytes, tokens) = partial.map_or((0, Vec::new()), |p| (p.bytes, p.tokens));
        self.buffered -= bytes;
        tokens
    }

    /// Bytes of chunk text held now, across all streams.
    pub fn buffered_bytes(&self) -> usize {
        self.buffered
    }

    /// Adds one chunk (`message` is the message that carried it). A chunk seen twice (a
    /// redelivery) replaces itself.
    pub fn feed(
        &mut self,
        message: PenguiMessage,
        chunk: StreamChunk,
        token: T,
        now: Instant,
    ) -> Result<Fed<T>, Abandoned<T>> {
        let id = chunk.stream_id.clone();
        let partial = self.streams.entry(id.clone()).or_insert_with(|| Partial {
            template: message,
            texts: BTreeMap::new(),
            last_seq: None,
            started: now,
            bytes: 0,
            tokens: Vec::new(),
        });
        partial.tokens.push(token);
        if chunk.done && chunk.seq.checked_add(1).is_none() {
            // Its stream would need 2^64 chunks: it can never be whole.
            return Err(self.abandon(&id, format!("seq {} cannot end a stream", chunk.seq)));
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
            return Err(self.abandon(&id, reason));
        }
        Ok(self.complete(&id).unwrap_or(Fed::Pending))
    }

    fn complete(&mut self, id: &str) -> Option<Fed<T>> {
        let partial = self.streams.get(id)?;
        let last = partial.last_seq?;
        let chunks = u64::try_from(partial.texts.len()).ok();
        if chunks != last.checked_add(1) || partial.texts.keys().next_back() != Some(&last) {
            return None;
        }
        let partial = self.streams.remove(id)?;
        self.buffered -= partial.bytes;
        let mut message = partial.template;
        let text: String = partial.texts.into_values().collect();
        message.payload = json!({"text": text, "citations": []});
        Some(Fed::Complete { message, tokens: partial.tokens })
    }

    fn abandon(&mut self, id: &str, reason: String) -> Abandoned<T> {
        let partial = self.streams.remove(id);
        let (bytes, tokens) = partial.map_or((0, Vec::new()), |p| (p.bytes, p.tokens));
        self.buffered -= bytes;
        Abandoned { error: EnvelopeError::Stream { stream_id: id.to_owned(), reason }, tokens }
    }

    /// Forgets every stream (their chunks will be redelivered).
    pub fn clear(&mut self) {
        self.streams.clear();
        self.buffered = 0;
    }

    /// Gives up on streams older than the time bound.
    pub fn expire(&mut self, now: Instant) -> Vec<Abandoned<T>> {
        let old: Vec<String> = self
            .streams
            .iter()
            .filter(|(_, p)| now.duration_since(p.started) > self.max_wait)
            .map(|(id, _)| id.clone())
            .collect();
        let reason = format!("incomplete after {:?}", self.max_wait);
        old.iter().map(|id| self.abandon(id, reason.clone())).collect()
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
