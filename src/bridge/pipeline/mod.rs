//! One message through the bridge, without I/O: decode → correlate → route → encode, giving
//! the SEND frame to publish, or the reason it goes to the dead-letter destination. A pure
//! function of the message, the pipeline's state and the time and ids it is handed: one task
//! owns it (no locks), and it reads no clock and makes no ids of its own.

use super::MessageError;
use crate::envelope::codecs::{Framework, Origin};
use crate::envelope::correlation::ReplyRoute;
use crate::envelope::penguiflow::stream::StreamAssembler;
use crate::envelope::trace::{Invocation, SpanContext};
use crate::envelope::{Clock, Content, Direction, Envelope, Intent, apply_traceparent, traceparent};
use crate::relay::{Caller, TaskAnswer};
use crate::routing::reply_base::ReplyBase;
use crate::routing::table::{CorrelationTable, Matched, PendingAsk};
use crate::routing::{RouteError, Router, Source, Target};
use crate::stomp::{Command, Frame, Message};
use crate::telemetry::trace::Hop;
use bytes::Bytes;
use hop::{Arrival, Turn};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The header that counts how many times a message passed through a bridge.
pub const HOPS: &str = "bridge-hops";

/// What to publish for one consumed message.
#[derive(Debug)]
pub struct Outgoing {
    pub frame: Frame,
    /// `<from>-><to>`, for logs and metrics.
    pub route: String,
    /// Whether a reply was matched to its request.
    pub correlated: bool,
    /// A reply that matched no ask (delivered uncorrelated; counted).
    pub unmatched_reply: bool,
    /// The ask this frame makes, now pending: if the frame turns out never to have been
    /// published (a batch rolled back), [`Pipeline::forget_ask`] takes it back.
    pub ask: Option<String>,
    /// The ask this frame answers, now marked answered (a repeat of the answer is dropped):
    /// if the message is given back before the frame was published,
    /// [`Pipeline::answer_released`] takes the mark back, so that its redelivery is answered.
    pub answers: Option<String>,
    /// The stream this message completed (a reassembled answer).
    pub stream: Option<StreamKey>,
    /// When the ask this frame makes times out (its asker is answered CANNOT_ANSWER): what
    /// bounds a call to an A2A agent.
    pub reply_deadline: Option<Instant>,
    /// Its way through the bridge, reported once settled (traces on).
    pub hop: Option<Box<Hop>>,
}

/// The outcome of processing.
#[derive(Debug)]
pub enum Processed {
    Send(Outgoing),
    /// A stream chunk, its text kept until its stream is whole: acknowledge it now, so that
    /// a stream can be longer than any prefetch.
    Chunk,
    /// Consumed with nothing to publish: acknowledge it and count it (and settle the stream
    /// it completed).
    Absorbed {
        why: Absorbed,
        stream: Option<StreamKey>,
    },
}

/// Why a message is consumed without anything being published.
#[derive(Debug, Clone, PartialEq)]
pub enum Absorbed {
    /// A receipt (VOX `message_acknowledged`): the ask stays pending for its answer.
    Acknowledgement { route: String },
    /// An answer after its ask's reply timeout (the asker had its error answer).
    LateReply { route: String, ask: String },
    /// An answer to an ask that was answered already (the same answer sent again).
    RepeatedAnswer { route: String, ask: String },
    /// A stream chunk, its text kept until the stream is whole.
    Chunk { route: String },
    /// A Wise Agents answer to an A2A task: handed to the task (`crate::a2a`).
    Task { route: String, answer: TaskAnswer },
}

impl Absorbed {
    /// `<from>->receipt`, `<from>->late`, `<from>->repeated`, …, for metrics.
    pub fn route(&self) -> &str {
        match self {
            Absorbed::Acknowledgement { route }
            | Absorbed::LateReply { route, .. }
            | Absorbed::RepeatedAnswer { route, .. }
            | Absorbed::Chunk { route }
            | Absorbed::Task { route, .. } => route,
        }
    }
}

/// The time and the ids the pipeline is handed with each call.
pub struct Now<'a> {
    /// The monotonic time (reply deadlines, stream ages).
    pub at: Instant,
    /// Seconds since the Unix epoch (the deadlines messages carry).
    pub unix: f64,
    /// Where the ids of new asks come from (UUIDv7 in the daemon; tests fix them).
    pub ids: &'a mut dyn FnMut() -> Uuid,
}

impl<'a> Now<'a> {
    /// The system's clocks read now, for callers without a clock of their own (tools, fuzzing).
    pub fn system(ids: &'a mut dyn FnMut() -> Uuid) -> Self {
        Now { at: Instant::now(), unix: crate::envelope::SystemClock.unix(), ids }
    }
}

/// The codecs' clock is the pipeline's: the time it was handed and its ids.
impl Clock for Now<'_> {
    fn unix(&mut self) -> f64 {
        self.unix
    }

    fn id7(&mut self) -> Uuid {
        (self.ids)()
    }
}

/// A consumed message as the pipeline sees it: where it came from and its frame, without the
/// handle that acknowledges it (the engine's alone).
#[derive(Debug, Clone, Copy)]
pub struct Consumed<'a> {
    pub destination: &'a str,
    pub frame: &'a Frame,
}

impl<'a> Consumed<'a> {
    pub fn of(message: &'a Message) -> Self {
        Consumed { destination: &message.destination, frame: &message.frame }
    }

    fn header(&self, name: &str) -> Option<&'a str> {
        self.frame.header(name)
    }

    fn body(&self) -> &'a [u8] {
        &self.frame.body
    }
}

/// The pipeline: its settings (replaceable) and its state (kept across new settings).
pub struct Pipeline {
    pub settings: Settings,
    state: State,
}

/// What the pipeline remembers between messages: the pending asks and the streams being
/// joined (PenguiFlow `StreamChunk`s, and Civitas `stream_reply()` answers keyed
/// `civitas:<cid>`). No acknowledgement handle: those are the engine's.
pub struct State {
    table: CorrelationTable,
    streams: StreamAssembler,
    civitas_streams: StreamAssembler,
}

impl State {
    pub fn new(table: CorrelationTable, streams: StreamAssembler) -> Self {
        State { table, civitas_streams: streams.empty_like(), streams }
    }

    /// The empty state the configuration bounds.
    pub fn of(config: &crate::config::Config) -> Self {
        let d = &config.delivery;
        let table =
            CorrelationTable::new(d.correlation_capacity, Duration::from_millis(d.correlation_ttl_ms));
        let (max_bytes, max_wait) = stream_bounds(config);
        State::new(table, StreamAssembler::new(max_bytes, max_wait))
    }
}

/// What correlation found for a message.
enum Correlation {
    /// Not a reply, or a reply that matches no ask (delivered uncorrelated, counted).
    None,
    /// The pending ask it answers.
    Ask(PendingAsk),
    /// No pending ask (a bridge restart, or aged out), but the reply carries its route.
    Token(ReplyRoute),
    Late(PendingAsk),
    /// An answer again to the ask of this id, answered already: dropped, not routed twice.
    Repeated(String),
    Acknowledgement,
    /// An answer to the A2A task its token names.
    Task(String),
}

/// The STOMP header that carries a context the bridge would not write into `_context_name`.
pub const ORIGINAL_CONTEXT: &str = "bridge-original-context";

impl Pipeline {
    pub fn new(settings: Settings, state: State) -> Self {
        Pipeline { settings, state }
    }

    /// The pipeline the configuration describes.
    pub fn of(config: &crate::config::Config) -> Self {
        Pipeline::new(Settings::of(config), State::of(config))
    }

    /// The router the pipeline routes with.
    pub fn router(&self) -> &Router {
        &self.settings.router
    }

    /// A reload: `config`'s rules (codecs, router, conversations, limits) replace the old ones
    /// from the next message on; the state (pending asks, streams) is kept, and so are the VOX
    /// names met so far.
    pub fn reconfigure(&mut self, config: &crate::config::Config) {
        let mut fresh = Settings::of(config);
        fresh.codecs.vox.registry.keep_met(&mut self.settings.codecs.vox.registry);
        self.settings = fresh;
    }

    /// Decides what to publish for `msg`.
    pub fn process(&mut self, msg: Consumed, now: &mut Now) -> Result<Processed, MessageError> {
        let hops = hops(msg);
        if hops >= self.settings.max_hops {
            return Err(MessageError::Loop { hops });
        }
        let source = self
            .settings
            .router
            .classify(msg.destination)
            .ok_or_else(|| MessageError::UnknownSource(msg.destination.to_owned()))?;
        let (from, env, whole) = match self.decode(&source, msg, now)? {
            Some((from, env, whole)) => (from, env, whole),
            None => return Ok(Processed::Chunk),
        };
        let result = self.translate(Some(msg), &source, from, env, hops, now);
        let Some(StreamFailed { stream, body }) = whole else { return result };
        match result {
            Ok(Processed::Send(out)) => Ok(Processed::Send(Outgoing { stream: Some(stream), ..out })),
            Ok(Processed::Absorbed { why, .. }) => Ok(Processed::Absorbed { why, stream: Some(stream) }),
            Ok(Processed::Chunk) => Ok(Processed::Chunk),
            // The whole stream goes to the dead-letter destination, as one body.
            Err(error) => Err(MessageError::StreamFailed { error: Box::new(error), body, stream }),
        }
    }

    /// Checks expiry, correlates, routes and encodes a decoded message.
    fn translate(
        &mut self,
        msg: Option<Consumed>,
        source: &Source,
        from: Framework,
        mut env: Envelope,
        hops: u32,
        now: &mut Now,
    ) -> Result<Processed, MessageError> {
        if let Some(msg) = msg {
            read_headers(msg, &mut env);
        }
        if let Some(ago) = env.deadline.map(|d| now.unix - d).filter(|ago| *ago > 0.0) {
            return Err(MessageError::Expired { ago });
        }
        let arrival = self.settings.tracing.then(|| {
            let (source, size) = msg.map_or(("", 0), |m| (m.destination, m.body().len()));
            Arrival::of(&env, from, source, size)
        });
        let absorbed = |why| Ok(Processed::Absorbed { why, stream: None });
        let mut asker = None;
        let mut answered = None;
        let mut answers = None;
        let mut joined: Option<SpanContext> = None;
        let (correlated, wise_context) = match self.correlate(source, &mut env, now.at) {
            Correlation::Acknowledgement => {
                return absorbed(Absorbed::Acknowledgement { route: format!("{from}->receipt") });
            }
            Correlation::Late(ask) => {
                self.state.table.mark_answered(&ask.id);
                return absorbed(Absorbed::LateReply { route: format!("{from}->late"), ask: ask.id });
            }
            Correlation::Repeated(ask) => {
                return absorbed(Absorbed::RepeatedAnswer { route: format!("{from}->repeated"), ask });
            }
            Correlation::Task(task) => {
                let caller = if task.starts_with(Caller::MCP_PREFIX) { "mcp" } else { "a2a" };
                let answer = TaskAnswer {
                    task,
                    intent: env.intent,
                    text: env.content.to_text(),
                    sender: env.sender.take(),
                };
                return absorbed(Absorbed::Task { route: format!("{from}->{caller}"), answer });
            }
            Correlation::Ask(ask) => {
                let wise = ask
                    .reply
                    .context()
                    .map(str::to_owned)
                    .filter(|_| self.settings.asker_is_native(&ask.reply));
                ask.reply.apply_to(&mut env);
                asker = Some(ask.asker);
                answered = ask.invocation;
                answers = Some(ask.id);
                (true, wise)
            }
            Correlation::Token(route) => {
                ReplyBase::of_route(&route).apply_to(&mut env);
                joined = route.invocation.as_deref().and_then(SpanContext::parse);
                answers.clone_from(&route.ask);
                (true, route.context)
            }
            Correlation::None => (false, None),
        };
        if !correlated
            && matches!(source, Source::WiseAgents { agent, .. } if agent == self.settings.router.reply_agent())
        {
            // An answer to the bridge's own name that no ask awaits has nowhere to go.
            return Err(RouteError::NoRecipient.into());
        }
        let target = self.settings.target(&env, asker.as_deref())?;
        let asked_in = answered.as_ref().map(|i| i.trace).or(joined.map(|j| j.trace));
        let spans = arrival.as_ref().map(|a| a.spans(&mut env, asked_in, now));
        let opened = arrival.as_ref().zip(spans.as_ref()).map(|(a, s)| a.invocation(s, &env, &target, now));
        // The ask is remembered before its context is fitted: its answer goes back in the
        // asker's own context (a Civitas ask in `Books` is answered in `Books`).
        let remembered = self.remember(&target, &mut env, now, opened.clone());
        let original_context = self.settings.fit_for(&target, &mut env, wise_context);
        let hop = arrival.zip(spans).map(|(arrival, spans)| {
            let turn = match (answered, joined, remembered.is_some().then_some(opened).flatten()) {
                (Some(closed), _, _) => Turn::Answer(*closed),
                (None, Some(joined), _) => Turn::Joined(joined.span),
                (None, None, Some(opened)) => Turn::Ask(opened),
                (None, None, None) => Turn::Other,
            };
            Box::new(arrival.hop(spans, &mut env, turn, &target, now))
        });
        let mut out = self.settings.outgoing(&env, &target, (hops + 1, from.as_str()), correlated, now)?;
        out.unmatched_reply = !correlated && env.direction == Direction::Response;
        // Marked once its answer is made (one that is dead-lettered instead is not: its replay
        // answers), taken back if the message is given back before the answer is published.
        if let Some(ask) = &answers {
            self.state.table.mark_answered(ask);
        }
        out.answers = answers;
        (out.ask, out.reply_deadline) =
            remembered.map_or((None, None), |(ask, deadline)| (Some(ask), deadline));
        if let Some(ctx) = original_context {
            out.frame = out.frame.with(ORIGINAL_CONTEXT, ctx);
        }
        out.hop = hop;
        Ok(Processed::Send(out))
    }

    /// The envelope of a message and the framework it came from, or a chunk taken in.
    fn decode(&mut self, source: &Source, msg: Consumed, now: &mut Now) -> Result<Decoded, MessageError> {
        let content_type = msg.header("content-type");
        let codecs = &self.settings.codecs;
        match source {
            Source::WiseAgents { agent, direction } => {
                let origin = Origin { direction: *direction, recipient: agent, content_type };
                let env = codecs.decode(Framework::WiseAgents, msg.body(), origin, now)?;
                Ok(Some((Framework::WiseAgents, env, None)))
            }
            Source::Ingress(Framework::PenguiFlow) => self.decode_penguiflow(msg, now),
            Source::Ingress(Framework::Civitas) => self.decode_civitas(msg, now),
            Source::Ingress(fw) => {
                let agent = msg.header(crate::routing::A2A_AGENT_HEADER).filter(|_| *fw == Framework::A2a);
                let recipient = agent.unwrap_or_default();
                let origin = Origin { direction: Direction::Request, recipient, content_type };
                Ok(Some((*fw, codecs.decode(*fw, msg.body(), origin, now)?, None)))
            }
        }
    }

    /// Asks whose reply timeout passed: the error answer for each, in its asker's format
    /// (frames to publish; no consumed message to acknowledge).
    pub fn expire_asks(&mut self, now: &mut Now) -> Vec<Outgoing> {
        let timed_out = self.state.table.time_out(now.at);
        timed_out.into_iter().filter_map(|ask| self.settings.error_answer(ask, now)).collect()
    }

    /// Asks waiting for their answer.
    pub fn pending_asks(&self) -> usize {
        self.state.table.pending()
    }

    /// Finds the ask a reply answers: by the ask id it echoes (in a token, or VOX
    /// `reply_to`), else, for a Wise Agents answer that echoes nothing, the oldest pending
    /// ask of the (asker, answerer) pair.
    fn correlate(&mut self, source: &Source, env: &mut Envelope, at: Instant) -> Correlation {
        let table = &mut self.state.table;
        let (token, in_order) = match source {
            Source::WiseAgents { agent, direction: Direction::Response } => {
                let token = env.tool_id.as_deref().and_then(ReplyRoute::from_token);
                (token, env.sender.clone().map(|s| (agent.clone(), s)))
            }
            Source::WiseAgents { .. } => return Correlation::None,
            Source::Ingress(_) => (env.correlation_id.as_deref().and_then(ReplyRoute::from_token), None),
        };
        if let Some(task) = token.as_ref().and_then(|t| t.task.clone()) {
            return Correlation::Task(task);
        }
        if token.is_none() && env.direction != Direction::Response && !env.acknowledgement {
            return Correlation::None;
        }
        let ask_id = token.as_ref().and_then(|t| t.ask.clone()).or_else(|| env.in_reply_to.clone());
        let found = match (&ask_id, &in_order) {
            (Some(id), _) => table.answer_by_id(id, env.acknowledgement, at),
            (None, Some((asker, answerer))) => table.answer_in_order(asker, answerer, at),
            (None, None) => None,
        };
        match (found, token) {
            (_, _) if env.acknowledgement => Correlation::Acknowledgement,
            (Some(Matched::Answer(ask)), _) => Correlation::Ask(ask),
            (Some(Matched::Late(ask)), _) => Correlation::Late(ask),
            (Some(Matched::Acknowledged(_)), _) => Correlation::Acknowledgement,
            (Some(Matched::Repeated), _) => Correlation::Repeated(ask_id.unwrap_or_default()),
            (None, Some(route)) => Correlation::Token(route),
            (None, None) => Correlation::None,
        }
    }

    /// Before a request leaves: the ask is remembered (its answer's route, its reply
    /// timeout), and its token travels where the target echoes it.
    fn remember(
        &mut self,
        target: &Target,
        env: &mut Envelope,
        now: &mut Now,
        invocation: Option<Invocation>,
    ) -> Option<(String, Option<Instant>)> {
        if env.direction != Direction::Request {
            return None;
        }
        let asker = env.sender.clone()?;
        let answerer = env.recipient.clone().unwrap_or_default();
        let ask_id = (now.ids)().to_string();
        let original_id = env.id.clone();
        let wise = target.framework == Framework::WiseAgents;
        let router = &self.settings.router;
        // The name a Wise Agents agent answers to: the asker's, when the bridge consumes its
        // response queue, else the bridge's own (`_runtime` and other strangers).
        let answered_as = if wise && router.proxied(&asker).is_none() {
            router.reply_agent().to_owned()
        } else {
            asker.clone()
        };
        if wise {
            env.route_response_to.get_or_insert_with(|| answered_as.clone());
        }
        let mut route = ReplyRoute::of_request(env, original_id.as_deref().unwrap_or(&ask_id));
        route.ask = Some(ask_id.clone());
        route.request_id = original_id.clone();
        route.invocation =
            invocation.as_ref().map(|i| SpanContext { trace: i.trace, span: i.span, flags: 1 }.header());
        let token = route.to_token();
        let reply = ReplyBase::of(env, &asker);
        env.id = Some(ask_id.clone());
        env.reply_token = Some(token.clone());
        if wise && env.tool_id.is_none() {
            env.tool_id = Some(token);
        }
        env.sender = Some(answered_as.clone());
        let reply_deadline = self.settings.conversations.timeout(&asker, &answerer).map(|t| now.at + t);
        let ask = PendingAsk {
            id: ask_id.clone(),
            asker: answered_as,
            answerer,
            reply,
            reply_deadline,
            timed_out: false,
            invocation: invocation.map(Box::new),
        };
        self.state.table.insert(ask, now.at);
        Some((ask_id, reply_deadline))
    }

    /// A queue discovered for an agent a glob names: the agent's VOX UUID resolves back to
    /// its name from now on (before any message to it).
    pub fn know_discovered(&mut self, destination: &str) {
        if let Some(Source::WiseAgents { agent, .. }) = self.settings.router.classify(destination) {
            self.settings.codecs.vox.registry.uuid_of(&agent);
        }
    }

    /// Takes back an ask whose frame was never published (its batch was rolled back: the
    /// broker redelivers the request, which is asked again). Without this, a stale ask would
    /// stand first in its pair's queue and take the next plain answer.
    pub fn forget_ask(&mut self, ask: &str) {
        self.state.table.forget(ask);
    }

    /// Takes back the mark of an ask answered by a message given back to the broker before
    /// its answer was published: the redelivered answer is routed (by its token), not dropped
    /// as repeated.
    pub fn answer_released(&mut self, ask: &str) {
        self.state.table.unmark_answered(ask);
    }
}

impl Settings {
    /// Where `env` goes; an answer to a `_reply.*` address in its asker's encoding.
    fn target(&self, env: &Envelope, asker: Option<&str>) -> Result<Target, MessageError> {
        let mut target = self.router.target(env)?;
        if target.framework == Framework::Civitas && target.encoding.is_none() {
            target.encoding = asker.and_then(|a| self.router.proxied(a)).and_then(|p| p.encoding);
        }
        Ok(target)
    }

    /// The SEND frame for `env` to `target`, its `hops` header and its route's `from` given.
    fn outgoing(
        &mut self,
        env: &Envelope,
        target: &Target,
        (hops, from): (u32, &str),
        correlated: bool,
        now: &mut Now,
    ) -> Result<Outgoing, MessageError> {
        let mut encoded = self.codecs.encode(target.framework, env, target.encoding, now)?;
        // The serialiser's doubling leaves up to half the body unused, and the body is held
        // until its SEND is confirmed; glibc shrinks in place.
        encoded.body.shrink_to_fit();
        if encoded.body.len() > self.max_body {
            return Err(MessageError::TooLarge { size: encoded.body.len(), limit: self.max_body });
        }
        let mut frame = Frame::new(Command::Send)
            .with("destination", target.destination.clone())
            .with("persistent", "true")
            .with(HOPS, hops.to_string())
            .with_body(encoded.body);
        if let Some(ct) = encoded.content_type {
            frame = frame.with("content-type", ct);
        }
        if let Some(tp) = traceparent(env) {
            frame = frame.with("traceparent", tp);
        }
        // An A2A call never reaches a broker: the token its answer is matched by rides with it
        // (the A2A agent echoes nothing of ours).
        if let (Framework::A2a, Some(token)) = (target.framework, &env.reply_token) {
            frame = frame.with("correlation-id", token.clone());
        }
        let route = format!("{from}->{}", target.framework);
        Ok(Outgoing {
            frame,
            route,
            correlated,
            unmatched_reply: false,
            ask: None,
            answers: None,
            stream: None,
            reply_deadline: None,
            hop: None,
        })
    }

    /// Whether the asker of this answer is a Wise Agents agent (not proxied, not a
    /// Civitas reply address).
    fn asker_is_native(&self, reply: &ReplyBase) -> bool {
        reply.recipient().is_some_and(|r| {
            self.router.proxied(r).is_none() && !r.starts_with(crate::routing::CIVITAS_REPLY_PREFIX)
        })
    }

    /// For a Wise Agents target: a context the Wise Agents side used itself in this
    /// conversation, or one the configuration names, or the default (the original is
    /// returned for a header); answers in ACK contexts become ACK.
    fn fit_for(&self, target: &Target, env: &mut Envelope, wise_context: Option<String>) -> Option<String> {
        if target.framework != Framework::WiseAgents {
            return None;
        }
        let mut original = None;
        match wise_context {
            Some(ctx) => env.context = Some(ctx),
            None => {
                let keep = env
                    .context
                    .as_deref()
                    .is_none_or(|c| c == self.codecs.default_context || self.conversations.known_context(c));
                if !keep {
                    original = env.context.take();
                }
            }
        }
        let context = env.context.as_deref().unwrap_or(&self.codecs.default_context);
        if env.direction == Direction::Response && self.conversations.ack_context(context) {
            env.intent = Some(Intent::Ack);
        }
        original
    }

    /// The error answer to an ask whose reply timeout passed, in its asker's format.
    fn error_answer(&mut self, ask: PendingAsk, now: &mut Now) -> Option<Outgoing> {
        let mut env = ask.reply.into_envelope();
        env.sender = Some(ask.answerer.clone());
        env.intent = Some(Intent::CannotAnswer);
        env.content = Content::Text(format!("no answer from {} within the reply timeout", ask.answerer));
        env.timestamp = None;
        let target = self.target(&env, Some(&ask.asker)).ok()?;
        let wise = env.context.clone();
        self.fit_for(&target, &mut env, wise);
        let hop = ask.invocation.map(|closed| hop::timeout_hop(*closed, &ask.asker, &target, &mut env, now));
        let mut out = self.outgoing(&env, &target, (1, "timeout"), true, now).ok()?;
        out.hop = hop.map(Box::new);
        Some(out)
    }
}

fn hops(msg: Consumed) -> u32 {
    msg.header(HOPS).and_then(|h| h.trim().parse().ok()).unwrap_or(0)
}

/// STOMP headers that carry context: `traceparent`, `correlation-id`.
fn read_headers(msg: Consumed, env: &mut Envelope) {
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
    error: &MessageError,
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

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "a2a_tests.rs"]
mod a2a_tests;

#[cfg(test)]
mod harness;

mod streams;
pub use streams::StreamKey;
use streams::{Decoded, StreamFailed};

mod hop;
#[cfg(test)]
#[path = "hop_tests.rs"]
mod hop_tests;
mod settings;
pub use settings::{ConversationSettings, Settings, stream_bounds};
