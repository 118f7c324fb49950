//! One message through the bridge, without I/O: decode → correlate → route → encode, giving
//! the SEND frame to publish, or the reason it goes to the dead-letter destination.

use super::BridgeError;
use crate::envelope::codecs::{Codecs, Framework, Origin};
use crate::envelope::correlation::ReplyRoute;
use crate::envelope::penguiflow::stream::{Abandoned, Fed, StreamAssembler};
use crate::envelope::penguiflow::{self, Payload, PenguiMessage, PenguiOptions};
use crate::envelope::vox::{Registry, VoxOptions};
use crate::envelope::{Direction, Envelope, apply_traceparent, new_uuid7, traceparent};
use crate::routing::table::CorrelationTable;
use crate::routing::{Router, Source, Target};
use crate::stomp::{AckRef, Command, Frame, Message};
use bytes::Bytes;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The header that counts how many times a message passed through a bridge.
pub const HOPS: &str = "bridge-hops";

/// A PenguiFlow stream chunk held until its stream is whole: what is needed to acknowledge
/// it, or to dead-letter it unchanged.
#[derive(Debug, Clone)]
pub struct HeldChunk {
    pub ack: AckRef,
    pub destination: String,
    pub body: Bytes,
}

/// What to publish for one consumed message.
#[derive(Debug)]
pub struct Outgoing {
    pub frame: Frame,
    /// `<from>-><to>`, for logs and metrics.
    pub route: String,
    /// Whether a reply was matched to its request.
    pub correlated: bool,
    /// Stream chunks to acknowledge with the message (a reassembled stream).
    pub also_ack: Vec<AckRef>,
}

/// The outcome of processing.
#[derive(Debug)]
pub enum Processed {
    Send(Outgoing),
    /// A stream chunk, held until its stream is complete (acknowledged then).
    Held,
}

/// Everything a message needs on its way through, shared by all in-flight messages.
pub struct Pipeline {
    pub codecs: Codecs,
    pub router: Router,
    max_hops: u32,
    table: Mutex<CorrelationTable>,
    streams: Mutex<StreamAssembler<HeldChunk>>,
}

impl Pipeline {
    pub fn new(
        codecs: Codecs,
        router: Router,
        max_hops: u32,
        table: CorrelationTable,
        streams: StreamAssembler<HeldChunk>,
    ) -> Self {
        Pipeline { codecs, router, max_hops, table: Mutex::new(table), streams: Mutex::new(streams) }
    }

    /// Decides what to publish for `msg`.
    pub fn process(&self, msg: &Message) -> Result<Processed, BridgeError> {
        let hops = hops(msg);
        if hops >= self.max_hops {
            return Err(BridgeError::Loop { hops });
        }
        let source = self
            .router
            .classify(&msg.destination)
            .ok_or_else(|| BridgeError::UnknownSource(msg.destination.clone()))?;
        let (from, env, also_ack) = match self.decode(&source, msg)? {
            Some(decoded) => decoded,
            None => return Ok(Processed::Held),
        };
        match self.translate(msg, &source, env, hops) {
            Ok((frame, target, correlated)) => {
                let route = format!("{from}->{target}");
                Ok(Processed::Send(Outgoing { frame, route, correlated, also_ack }))
            }
            Err(error) if also_ack.is_empty() => Err(error),
            // The chunks of a completed stream share the fate of the message that completed it.
            Err(error) => Err(BridgeError::Chunks { error: Box::new(error), chunks: also_ack }),
        }
    }

    /// Correlates, routes and encodes a decoded message: its SEND frame and target framework.
    fn translate(
        &self,
        msg: &Message,
        source: &Source,
        mut env: Envelope,
        hops: u32,
    ) -> Result<(Frame, Framework, bool), BridgeError> {
        read_headers(msg, &mut env);
        let correlated = self.correlate(source, &mut env);
        let target = self.router.target(&env)?;
        self.remember(&target, &mut env);
        let encoded = self.codecs.encode(target.framework, &env, target.encoding)?;
        let mut frame = Frame::new(Command::Send)
            .with("destination", target.destination.clone())
            .with("persistent", "true")
            .with(HOPS, (hops + 1).to_string())
            .with_body(encoded.body);
        if let Some(ct) = encoded.content_type {
            frame = frame.with("content-type", ct);
        }
        if let Some(tp) = traceparent(&env) {
            frame = frame.with("traceparent", tp);
        }
        Ok((frame, target.framework, correlated))
    }

    /// The envelope of a message and the framework it came from; `None` for a held chunk.
    fn decode(
        &self,
        source: &Source,
        msg: &Message,
    ) -> Result<Option<(Framework, Envelope, Vec<AckRef>)>, BridgeError> {
        let content_type = msg.header("content-type");
        match source {
            Source::WiseAgents { agent, direction } => {
                let origin = Origin { direction: *direction, recipient: agent, content_type };
                Ok(Some((
                    Framework::WiseAgents,
                    self.codecs.decode(Framework::WiseAgents, msg.body(), origin)?,
                    Vec::new(),
                )))
            }
            Source::Ingress(Framework::PenguiFlow) => self.decode_penguiflow(msg),
            Source::Ingress(fw) => {
                let origin = Origin { direction: Direction::Request, recipient: "", content_type };
                Ok(Some((*fw, self.codecs.decode(*fw, msg.body(), origin)?, Vec::new())))
            }
        }
    }

    /// PenguiFlow, where a stream chunk is held until its stream is whole.
    fn decode_penguiflow(
        &self,
        msg: &Message,
    ) -> Result<Option<(Framework, Envelope, Vec<AckRef>)>, BridgeError> {
        let message = PenguiMessage::decode(msg.body())?;
        let Payload::StreamChunk(chunk) = Payload::classify(&message.payload) else {
            return Ok(Some((Framework::PenguiFlow, penguiflow::to_envelope(message)?, Vec::new())));
        };
        let held = HeldChunk {
            ack: msg.ack.clone(),
            destination: msg.destination.clone(),
            body: msg.frame.body.clone(),
        };
        let fed =
            self.streams.lock().unwrap_or_else(|e| e.into_inner()).feed(message, chunk, held, Instant::now());
        match fed {
            Ok(Fed::Pending) => Ok(None),
            Ok(Fed::Complete { message, tokens }) => {
                let acks = tokens.into_iter().map(|t| t.ack).filter(|a| *a != msg.ack).collect();
                Ok(Some((Framework::PenguiFlow, penguiflow::to_envelope(message)?, acks)))
            }
            Err(abandoned) => Err(BridgeError::Stream(abandoned)),
        }
    }

    /// Forgets every stream being reassembled (after a reconnect the broker redelivers their
    /// chunks).
    pub fn forget_streams(&self) {
        self.streams.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Streams given up on for age: their chunks go to the dead-letter destination.
    pub fn expire_streams(&self, now: Instant) -> Vec<Abandoned<HeldChunk>> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner()).expire(now)
    }

    /// Fills in a reply's route from what its request left (a token in `_tool_id`, or the
    /// table). True when the message is a reply that was matched to its request.
    fn correlate(&self, source: &Source, env: &mut Envelope) -> bool {
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        match source {
            Source::WiseAgents { agent, direction: Direction::Response } => {
                let from_token = env.tool_id.as_deref().and_then(ReplyRoute::from_token);
                // The token travelled in the message; the table's copy is no longer needed.
                let key_tool = from_token.as_ref().map_or(env.tool_id.as_deref(), |r| r.tool_id.as_deref());
                let remembered = table.take(&CorrelationTable::reply_key(agent, key_tool), now);
                let route = from_token.or(remembered);
                match route {
                    Some(route) => {
                        env.tool_id = route.tool_id;
                        env.in_reply_to = route.request_id;
                        env.correlation_id = route.correlation_id;
                        true
                    }
                    None => false,
                }
            }
            Source::Ingress(_) if env.direction == Direction::Response => {
                let by_id =
                    env.in_reply_to.as_deref().and_then(|id| table.take(&CorrelationTable::id_key(id), now));
                match by_id {
                    Some(route) => {
                        route.apply_to(env);
                        true
                    }
                    None => env.in_reply_to.is_some() || env.correlation_id.is_some(),
                }
            }
            _ => false,
        }
    }

    /// Before a request leaves: what its reply will need, carried in the message where the
    /// target echoes it, remembered where it does not.
    fn remember(&self, target: &Target, env: &mut Envelope) {
        if env.direction != Direction::Request {
            return;
        }
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        match target.framework {
            Framework::WiseAgents => {
                let Some(requester) = env.sender.clone() else { return };
                env.route_response_to.get_or_insert_with(|| requester.clone());
                let id = env.id.get_or_insert_with(|| new_uuid7().to_string()).clone();
                let route = ReplyRoute::of_request(env, &id);
                table.insert(
                    CorrelationTable::reply_key(&requester, env.tool_id.as_deref()),
                    route.clone(),
                    now,
                );
                if env.tool_id.is_none() {
                    env.tool_id = Some(route.to_token());
                }
            }
            Framework::Vox => {
                let id = env
                    .id
                    .clone()
                    .filter(|id| uuid::Uuid::parse_str(id).is_ok())
                    .unwrap_or_else(|| new_uuid7().to_string());
                env.id = Some(id.clone());
                table.insert(CorrelationTable::id_key(&id), ReplyRoute::of_request(env, &id), now);
            }
            Framework::Civitas | Framework::PenguiFlow => {}
        }
    }
}

fn hops(msg: &Message) -> u32 {
    msg.header(HOPS).and_then(|h| h.trim().parse().ok()).unwrap_or(0)
}

/// STOMP headers that carry context: `traceparent`, `correlation-id`.
fn read_headers(msg: &Message, env: &mut Envelope) {
    if let Some(tp) = msg.header("traceparent") {
        apply_traceparent(env, tp);
    }
    if let Some(id) = msg.header("correlation-id").filter(|id| !id.is_empty()) {
        env.correlation_id.get_or_insert_with(|| id.to_owned());
    }
}

/// The dead-letter SEND for `msg`: its body unchanged, headers saying why.
pub fn dead_letter_frame(
    destination: &str,
    source: &str,
    body: Bytes,
    content_type: Option<&str>,
    error: &BridgeError,
) -> Frame {
    let reason: String =
        error.to_string().chars().map(|c| if c.is_control() { ' ' } else { c }).take(1024).collect();
    let mut frame = Frame::new(Command::Send)
        .with("destination", destination)
        .with("persistent", "true")
        .with("bridge-error", reason)
        .with("bridge-error-kind", error.kind())
        .with("bridge-source", source)
        .with_body(body);
    if let Some(ct) = content_type {
        frame = frame.with("content-type", ct);
    }
    frame
}

/// The codecs' settings from the configuration; the VOX registry holds every configured
/// agent, native and proxied.
pub fn codecs(config: &crate::config::Config) -> Codecs {
    let mut registry =
        Registry::new(config.protocols.vox.as_ref().map_or(uuid::Uuid::nil(), |v| v.namespace));
    for name in &config.wiseagents.agents {
        registry.add(name, None);
    }
    for agent in &config.agents {
        registry.add(&agent.name, agent.uuid);
    }
    let vox = config.protocols.vox.as_ref();
    Codecs {
        default_context: config.wiseagents.default_context.clone(),
        civitas_encoding: config.protocols.civitas.as_ref().map(|c| c.encoding).unwrap_or_default(),
        vox: VoxOptions {
            registry,
            message_source: vox.map_or("wiseagents".into(), |v| v.message_source.clone()),
        },
        penguiflow: config.protocols.penguiflow.as_ref().map_or_else(PenguiOptions::default, |p| {
            PenguiOptions { tenant: p.tenant.clone(), response_as_final_answer: p.response_as_final_answer }
        }),
    }
}

/// Stream bounds (bytes, time) from the configuration.
pub fn stream_bounds(config: &crate::config::Config) -> (usize, Duration) {
    match &config.protocols.penguiflow {
        Some(p) => (p.stream_max_bytes, Duration::from_millis(p.stream_max_wait_ms)),
        None => (4 << 20, Duration::from_secs(60)),
    }
}
