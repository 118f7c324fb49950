//! Streams through the pipeline: PenguiFlow `StreamChunk`s and Civitas `stream_reply()`
//! frames taken in chunk by chunk (each acknowledged at once), joined into one answer, and the
//! error answer of a stream given up on.

use super::{Consumed, MessageError, Now, Outgoing, Pipeline, Processed};
use crate::envelope::civitas::{self, CivitasMessage, Encoding};
use crate::envelope::civitas_stream::{self, StreamFrame};
use crate::envelope::codecs::Framework;
use crate::envelope::penguiflow::stream::{Abandoned, ChunkFed};
use crate::envelope::penguiflow::{self, Payload, PenguiMessage};
use crate::envelope::{Content, Envelope, EnvelopeError, Intent};
use crate::routing::Source;
use crate::telemetry::Event;
use bytes::Bytes;

/// A stream whose last chunk a message was: the stream's text stays in memory until that
/// message is settled (forgotten once its answer is safe, joined again from the chunk's
/// redelivery if the answer never left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamKey {
    PenguiFlow(String),
    Civitas(String),
}

impl Pipeline {
    /// PenguiFlow, where a stream chunk is taken in until its stream is whole.
    pub(super) fn decode_penguiflow(
        &mut self,
        msg: Consumed,
        now: &mut Now,
    ) -> Result<Decoded, MessageError> {
        let message = PenguiMessage::decode(msg.body())?;
        let Payload::StreamChunk(chunk) = Payload::classify(&message.payload) else {
            return Ok(Some((Framework::PenguiFlow, penguiflow::to_envelope(message, now)?, None)));
        };
        let key = StreamKey::PenguiFlow(chunk.stream_id.clone());
        match self.state.streams.feed(message, chunk, now.at)? {
            ChunkFed::Pending | ChunkFed::Repeated => Ok(None),
            ChunkFed::Complete(whole) => {
                let body = Bytes::from(whole.encode().unwrap_or_default());
                whole_message(Framework::PenguiFlow, penguiflow::to_envelope(whole, now), key, body)
            }
            ChunkFed::Abandoned(abandoned) => {
                Ok(Some((Framework::PenguiFlow, stream_error(&key, abandoned, now)?, None)))
            }
        }
    }

    /// Civitas, where the frames of a `stream_reply()` answer are taken in until the answer
    /// is whole, then become one reply (`envelope::civitas_stream`).
    pub(super) fn decode_civitas(&mut self, msg: Consumed, now: &mut Now) -> Result<Decoded, MessageError> {
        let encoding = Encoding::of(msg.header("content-type"), msg.body())?;
        let reply = match civitas_stream::classify(CivitasMessage::decode(msg.body(), encoding)?)? {
            StreamFrame::Message(message) => message,
            // The stream failed: its error is the answer.
            StreamFrame::Failed { stream_id, reply } => {
                self.state.civitas_streams.take(&stream_id);
                reply
            }
            StreamFrame::Part { chunk, template } => {
                let key = StreamKey::Civitas(chunk.stream_id.clone());
                match self.state.civitas_streams.feed(template, chunk, now.at)? {
                    ChunkFed::Pending | ChunkFed::Repeated => return Ok(None),
                    ChunkFed::Complete(whole) => {
                        let reply = civitas_stream::reply_of(whole);
                        let body =
                            reply.as_ref().ok().and_then(|r| r.encode(encoding).ok()).unwrap_or_default();
                        let env = reply.and_then(|reply| civitas::to_envelope(reply, now));
                        return whole_message(Framework::Civitas, env, key, Bytes::from(body));
                    }
                    ChunkFed::Abandoned(abandoned) => {
                        let env = stream_error(&key, abandoned, now)?;
                        return Ok(Some((Framework::Civitas, env, None)));
                    }
                }
            }
        };
        Ok(Some((Framework::Civitas, civitas::to_envelope(reply, now)?, None)))
    }

    /// The answer a whole stream made is safe: the stream is forgotten.
    pub fn stream_settled(&mut self, key: &StreamKey) {
        match key {
            StreamKey::PenguiFlow(id) => self.state.streams.settled(id),
            StreamKey::Civitas(id) => self.state.civitas_streams.settled(id),
        }
    }

    /// The answer a whole stream made was not published: the redelivery of the message that
    /// completed it completes it again.
    pub fn stream_released(&mut self, key: &StreamKey) {
        match key {
            StreamKey::PenguiFlow(id) => self.state.streams.released(id),
            StreamKey::Civitas(id) => self.state.civitas_streams.released(id),
        }
    }

    /// Streams given up on for age (their start lost with a crashed bridge, or a sender that
    /// stopped): the error answer for each asker, to publish.
    pub fn expire_streams(&mut self, now: &mut Now) -> Vec<Outgoing> {
        let pf = self.state.streams.expire(now.at);
        let civ = self.state.civitas_streams.expire(now.at);
        let keyed = pf
            .into_iter()
            .map(|a| (Framework::PenguiFlow, StreamKey::PenguiFlow(String::new()), a))
            .chain(civ.into_iter().map(|a| (Framework::Civitas, StreamKey::Civitas(String::new()), a)));
        let mut out = Vec::new();
        for (fw, key, abandoned) in keyed {
            let answer = stream_error(&key, abandoned, now)
                .and_then(|env| self.translate(None, &Source::Ingress(fw), fw, env, 0, now));
            match answer {
                Ok(Processed::Send(o)) => out.push(o),
                Ok(_) => {}
                Err(e) => crate::telemetry::StreamUnanswered { error: &e }.emit(&()),
            }
        }
        out
    }
}

/// The error answer of a stream given up on, for its asker: from the first chunk's message
/// (where the whole answer would have gone), `CANNOT_ANSWER` with the reason.
fn stream_error(key: &StreamKey, abandoned: Abandoned, now: &mut Now) -> Result<Envelope, MessageError> {
    let Abandoned { error, template: mut first } = abandoned;
    first.payload = serde_json::json!({"text": "", "citations": []});
    let mut env = match key {
        StreamKey::PenguiFlow(_) => penguiflow::to_envelope(first, now)?,
        StreamKey::Civitas(_) => civitas::to_envelope(civitas_stream::reply_of(first)?, now)?,
    };
    env.intent = Some(Intent::CannotAnswer);
    env.content = Content::Text(format!("the streamed answer could not be delivered: {error}"));
    crate::telemetry::StreamGivenUp { error: &error }.emit(&());
    Ok(env)
}

/// What decoding a message gave: a message to translate (with the stream it completed, if it
/// did), or `None` for a stream chunk taken in.
pub(super) type Decoded = Option<(Framework, Envelope, Option<StreamFailed>)>;

/// A stream a message completed, and the whole stream as one body (dead-lettered as that if
/// its translation fails).
pub(super) struct StreamFailed {
    pub(super) stream: StreamKey,
    pub(super) body: Bytes,
}

fn whole_message(
    fw: Framework,
    env: Result<Envelope, EnvelopeError>,
    stream: StreamKey,
    body: Bytes,
) -> Result<Decoded, MessageError> {
    match env {
        Ok(env) => Ok(Some((fw, env, Some(StreamFailed { stream, body })))),
        Err(e) => Err(MessageError::StreamFailed { error: Box::new(e.into()), body, stream }),
    }
}
