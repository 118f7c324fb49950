//! One tapped Wise Agents message → the SEND frames of its copies, one per configured format,
//! without I/O. Nothing here asks: no reply token, no pending reply, no `reply-to` header.

use super::canonical;
use super::conversation::Conversations;
use super::tap::Original;
use crate::config::mirror::MirrorTopics;
use crate::envelope::codecs::{Codecs, Encoded};
use crate::envelope::wiseagents::{self, WiseMessage};
use crate::envelope::{Direction, EnvelopeError, SystemClock};
use crate::stomp::{Command, Frame};
use serde_json::Value;

/// The header every copy carries: its conversation key (docs/OPERATING.md, "Mirror mode").
pub const CONVERSATION: &str = "bridge-conversation";
/// The header naming the Wise Agents queue the original was sent to.
pub const MIRROR_OF: &str = "bridge-mirror-of";

use crate::config::mirror::Output;

/// The copies of one message, and the formats it could not be written in.
#[derive(Debug, Default)]
pub struct Copies {
    pub frames: Vec<(Output, Frame)>,
    pub failed: Vec<(Output, EnvelopeError)>,
}

/// Decodes tapped messages and writes their copies; remembers open conversations.
pub struct Translator {
    codecs: Codecs,
    outputs: Vec<(Output, String)>,
    conversations: Conversations,
}

impl Translator {
    pub fn new(codecs: Codecs, topics: &MirrorTopics, conversations: usize) -> Self {
        let outputs = topics.enabled().map(|(output, pattern)| (output, pattern.to_owned())).collect();
        Translator { codecs, outputs, conversations: Conversations::new(conversations) }
    }

    /// The copies of `body`, tapped from `tapped.queue`; an error when it is not a Wise
    /// Agents message at all.
    pub fn copies(&mut self, tapped: &Original, body: &[u8]) -> Result<Copies, EnvelopeError> {
        let mut env = wiseagents::to_envelope(WiseMessage::parse(body)?, tapped.direction, &tapped.agent);
        let conversation = self.conversations.key(&env);
        env.trace_id.get_or_insert_with(|| conversation.clone());
        for key in
            ["civitas.payload.conversation", "vox.details.conversation", "penguiflow.meta.conversation"]
        {
            env.extra.insert(key.into(), Value::String(conversation.clone()));
        }
        let direction = match tapped.direction {
            Direction::Request => "request",
            Direction::Response => "response",
        };
        let mut copies = Copies::default();
        for (output, pattern) in &self.outputs {
            let encoded = match output {
                Output::Framework(f) => self.codecs.encode(*f, &env, None, &mut SystemClock),
                Output::Canonical => {
                    let mut plain = env.clone();
                    plain.extra.retain(|k, _| k.starts_with("wiseagents."));
                    let json = canonical::to_json(&plain, &conversation, &tapped.queue);
                    Ok(Encoded {
                        body: json.to_string().into_bytes(),
                        content_type: Some("application/json"),
                    })
                }
            };
            match encoded {
                Ok(e) => {
                    let destination =
                        pattern.replace("{direction}", direction).replace("{agent}", &tapped.agent);
                    let mut frame = Frame::new(Command::Send)
                        .with("destination", destination)
                        .with(CONVERSATION, conversation.clone())
                        .with(MIRROR_OF, tapped.queue.clone());
                    if let Some(ct) = e.content_type {
                        frame = frame.with("content-type", ct);
                    }
                    copies.frames.push((*output, frame.with_body(e.body)));
                }
                Err(error) => copies.failed.push((*output, error)),
            }
        }
        Ok(copies)
    }
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
