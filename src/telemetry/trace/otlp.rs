//! The OTLP/HTTP export of the bridge's spans (docs/OBSERVABILITY.md). Each settled [`Hop`]
//! becomes its spans, built here with the ids the pipeline gave them and the times the engine
//! measured, and waits in a bounded queue for the exporter's own thread, which sends them in
//! batches with the OpenTelemetry SDK's OTLP exporter over a blocking reqwest client (it never
//! runs on the runtime that moves messages). A full queue drops the span and counts it: a
//! collector that is down or slow never holds a message.
//!
//! Sampling is by trace id: its rightmost 7 bytes, the part W3C Trace Context level 2 and
//! OpenTelemetry's consistent sampling take as random (a UUIDv4's variant bits are just
//! before them), so that every hop of a conversation, in this bridge or another with the same
//! ratio, makes the same decision without remembering it.

use super::{Hop, HopKind, Times, system_time};
use crate::config::traces::TracesConfig;
use crate::envelope::trace::{Invocation, SpanId, TraceId};
use opentelemetry::trace::{
    SpanContext, SpanId as OtelSpanId, SpanKind, Status, TraceFlags, TraceId as OtelTraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter, SpanLinks};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// 2^56: the rightmost 7 bytes of a trace id are its random part.
const RANDOM_BITS: u64 = 1 << 56;
/// Characters kept of an attribute's value taken from a message (a name, a context, a reason).
const VALUE: usize = 256;

/// Spans sent in one request at most, and how long the first of a batch waits for others.
const BATCH: usize = 512;
const LINGER: Duration = Duration::from_secs(1);
/// How long one export may take before it is given up (the spans are dropped and counted).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The export's counters, for `/metrics`.
#[derive(Debug, Default)]
pub struct ExportCounts {
    pub exported: AtomicU64,
    pub dropped: AtomicU64,
    pub failed: AtomicU64,
}

/// The exporter: where hops' spans are offered.
#[derive(Debug)]
pub struct Exporter {
    queue: SyncSender<SpanData>,
    /// Traces whose rightmost 56 bits are below this are sampled.
    bound: u64,
    /// `messaging.system` (`activemq` or `rabbitmq`), once the broker said which it is.
    system: OnceLock<&'static str>,
    pub counts: Arc<ExportCounts>,
}

impl Exporter {
    /// Starts the exporter's thread, when `[traces]` names an endpoint.
    pub fn start(config: &TracesConfig) -> Result<Option<Exporter>, String> {
        if config.endpoint.is_empty() {
            return Ok(None);
        }
        let headers = match &config.headers_file {
            Some(path) => read_headers(path)?,
            None => HashMap::new(),
        };
        let (queue, spans) = std::sync::mpsc::sync_channel(config.max_queue);
        let counts = Arc::new(ExportCounts::default());
        let endpoint = format!("{}/v1/traces", config.endpoint.trim_end_matches('/'));
        let mut resource = vec![KeyValue::new("service.name", config.service_name.clone())];
        resource.extend(config.resource.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())));
        let exporter = build(endpoint, headers)?;
        let thread_counts = counts.clone();
        std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || export_loop(exporter, resource, spans, &thread_counts))
            .map_err(|e| format!("cannot start the OTLP exporter's thread: {e}"))?;
        let bound = bound(config.sampling_ratio);
        Ok(Some(Exporter { queue, bound, system: OnceLock::new(), counts }))
    }

    /// The broker's kind, from its CONNECTED `server` header.
    pub fn broker_is(&self, server: &str) {
        let system = if server.to_ascii_lowercase().contains("rabbitmq") { "rabbitmq" } else { "activemq" };
        let _ = self.system.set(system);
    }

    /// Whether this trace's spans are sampled.
    pub fn sampled(&self, trace: TraceId) -> bool {
        sampled(self.bound, trace)
    }

    /// Offers a settled hop's spans; never waits.
    pub fn offer(&self, hop: &Hop, times: Times) {
        if !self.sampled(hop.trace) {
            return;
        }
        let system = self.system.get().copied().unwrap_or("activemq");
        for span in spans(hop, times, system) {
            match self.queue.try_send(span) {
                Ok(()) => {}
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                    self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// The sampling bound of a ratio: traces whose random part is below it are sampled.
fn bound(ratio: f64) -> u64 {
    (ratio * RANDOM_BITS as f64) as u64
}

fn sampled(bound: u64, trace: TraceId) -> bool {
    (trace.0 as u64 & (RANDOM_BITS - 1)) < bound
}

/// The SDK's OTLP/HTTP exporter on a blocking reqwest client with the bridge's ring-backed
/// TLS (built on the exporter's thread: a blocking client owns a runtime of its own).
fn build(
    endpoint: String,
    headers: HashMap<String, String>,
) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let tls = crate::stomp::transport::tls_client_config(&Default::default())
        .map_err(|e| format!("traces: cannot make the TLS configuration: {e}"))?;
    let client = std::thread::spawn(move || {
        reqwest::blocking::Client::builder().use_preconfigured_tls(tls).timeout(EXPORT_TIMEOUT).build()
    })
    .join()
    .map_err(|_| "traces: the HTTP client's thread panicked".to_owned())?
    .map_err(|e| format!("traces: cannot make the HTTP client: {e}"))?;
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(endpoint)
        .with_headers(headers)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| format!("traces: cannot make the OTLP exporter: {e}"))
}

/// `Name: value` lines; blank lines and `#` comments skipped.
fn read_headers(path: &std::path::Path) -> Result<HashMap<String, String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("traces.headers_file {}: cannot read it: {e}", path.display()))?;
    let mut headers = HashMap::new();
    for (n, line) in text.lines().enumerate().map(|(n, l)| (n + 1, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("traces.headers_file {} line {n}: not `Name: value`", path.display()));
        };
        headers.insert(name.trim().to_owned(), value.trim().to_owned());
    }
    Ok(headers)
}

fn export_loop(
    mut exporter: opentelemetry_otlp::SpanExporter,
    resource: Vec<KeyValue>,
    spans: Receiver<SpanData>,
    counts: &ExportCounts,
) {
    exporter.set_resource(&opentelemetry_sdk::Resource::builder_empty().with_attributes(resource).build());
    let mut open = true;
    while open {
        let Ok(first) = spans.recv() else { break };
        let mut batch = vec![first];
        let until = Instant::now() + LINGER;
        while batch.len() < BATCH {
            match spans.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(span) => batch.push(span),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let n = batch.len() as u64;
        match block_on(exporter.export(batch)) {
            Ok(()) => counts.exported.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                tracing::debug!(error = %e, spans = n, "OTLP export failed; spans dropped");
                counts.failed.fetch_add(n, Ordering::Relaxed)
            }
        };
    }
}

/// Runs a future on this thread (the blocking client's export completes in its first poll).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// A hop's spans: `process <source>` (CONSUMER) with, for a message from the broker, its
/// `receive` and `ack` (CLIENT); `send <destination>` (PRODUCER); and the `invoke_agent
/// <agent>` (CLIENT) span an answer, a timeout or an answer's dead letter ends.
fn spans(hop: &Hop, times: Times, system: &'static str) -> Vec<SpanData> {
    let attributes = Attributes { system, conversation: hop.conversation.as_deref().map(cut) };
    let mut out = Vec::with_capacity(5);
    if !hop.source.is_empty() {
        out.push(process(hop, times, &attributes));
        if from_broker(&hop.source) {
            out.extend(receive_and_ack(hop, times, &attributes));
        }
    }
    if !hop.destination.is_empty() {
        out.push(send(hop, times, &attributes));
    }
    let ended = system_time(hop.processed);
    match (hop.kind, &hop.invocation) {
        (HopKind::Answer, Some(closed)) => out.push(invocation(closed, ended, None)),
        (HopKind::Timeout | HopKind::DeadLetter, Some(closed)) => {
            let kind = hop.error.as_ref().map_or("timeout", |(kind, _)| *kind);
            out.push(invocation(closed, ended, Some(kind)));
        }
        _ => {}
    }
    out
}

/// What every messaging span of a hop says.
struct Attributes {
    system: &'static str,
    conversation: Option<String>,
}

impl Attributes {
    fn messaging(&self, operation: &'static str, name: &'static str, destination: &str) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("messaging.system", self.system),
            KeyValue::new("messaging.operation.type", operation),
            KeyValue::new("messaging.operation.name", name),
            KeyValue::new("messaging.destination.name", cut(destination)),
        ];
        if let Some(conversation) = &self.conversation {
            attributes.push(KeyValue::new("messaging.message.conversation_id", conversation.clone()));
        }
        attributes
    }
}

/// Whether a hop's source is a broker's destination (not an A2A route or an A2A answer).
fn from_broker(source: &str) -> bool {
    !source.starts_with("/a2a/") && !source.starts_with(crate::routing::A2A_ANSWERS)
}

fn process(hop: &Hop, times: Times, attributes: &Attributes) -> SpanData {
    let name = format!("process {}", hop.source);
    let mut span = span_of(hop.trace, hop.process, hop.parent, name, SpanKind::Consumer);
    (span.start_time, span.end_time) = (times.received, times.settled);
    span.attributes = attributes.messaging("process", "process", &hop.source);
    span.attributes.extend([
        KeyValue::new("messaging.message.id", cut(&hop.message_id)),
        KeyValue::new("messaging.message.body.size", hop.body_size as i64),
        KeyValue::new("bridge.hop", hop.kind.as_str()),
        KeyValue::new("bridge.from.agent", cut(&hop.from.name)),
        KeyValue::new("bridge.from.framework", hop.from.framework),
    ]);
    if let Some((trace, link)) = hop.link {
        span.links.links.push(opentelemetry::trace::Link::with_context(context(trace, link)));
    }
    if let Some((kind, reason)) = &hop.error {
        span.attributes.push(KeyValue::new("error.type", *kind));
        span.status = Status::error(cut(reason));
    }
    for note in &hop.notes {
        let detail = vec![KeyValue::new("bridge.detail", cut(&note.detail))];
        span.events.events.push(opentelemetry::trace::Event::new(note.kind, note.at, detail, 0));
    }
    span
}

/// The instants the frame arrived and its acknowledgement went out (their ids derived from the
/// process span's: unique within the trace, nothing to remember).
fn receive_and_ack(hop: &Hop, times: Times, attributes: &Attributes) -> [SpanData; 2] {
    let (receive, ack) = (SpanId(hop.process.0 ^ 0x5eed_0001), SpanId(hop.process.0 ^ 0x5eed_0002));
    let name = format!("receive {}", hop.source);
    let mut received = span_of(hop.trace, receive, Some(hop.process), name, SpanKind::Client);
    (received.start_time, received.end_time) = (times.received, times.received);
    received.attributes = attributes.messaging("receive", "receive", &hop.source);
    let name = format!("ack {}", hop.source);
    let mut acked = span_of(hop.trace, ack, Some(hop.process), name, SpanKind::Client);
    (acked.start_time, acked.end_time) = (times.settled, times.settled);
    acked.attributes = attributes.messaging("settle", "ack", &hop.source);
    [received, acked]
}

fn send(hop: &Hop, times: Times, attributes: &Attributes) -> SpanData {
    // An ask's send is its invocation's child; with no process span (an error answer, an A2A
    // task's answer), the invocation it ends is the parent.
    let parent = match (hop.kind, &hop.invocation) {
        (HopKind::Ask, Some(opened)) => opened.span,
        (_, Some(closed)) if hop.source.is_empty() => closed.span,
        _ => hop.process,
    };
    let name = format!("send {}", hop.destination);
    let mut span = span_of(hop.trace, hop.send, Some(parent), name, SpanKind::Producer);
    (span.start_time, span.end_time) = (system_time(hop.processed).min(times.settled), times.settled);
    span.attributes = attributes.messaging("send", "send", &hop.destination);
    if let Some(to) = &hop.to {
        span.attributes.push(KeyValue::new("bridge.to.agent", cut(&to.name)));
        span.attributes.push(KeyValue::new("bridge.to.framework", to.framework));
    }
    span
}

/// The `invoke_agent` span of an ask, ended at `end`; `error`: how it failed.
fn invocation(ask: &Invocation, end: SystemTime, error: Option<&'static str>) -> SpanData {
    let name = format!("invoke_agent {}", ask.agent);
    let mut span = span_of(ask.trace, ask.span, Some(ask.parent), name, SpanKind::Client);
    span.start_time = system_time(ask.started).min(end);
    span.end_time = end;
    span.attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.provider.name", ask.framework),
        KeyValue::new("gen_ai.agent.name", cut(&ask.agent)),
    ];
    if let Some(conversation) = &ask.conversation {
        span.attributes.push(KeyValue::new("gen_ai.conversation.id", cut(conversation)));
    }
    if let Some(kind) = error {
        span.attributes.push(KeyValue::new("error.type", kind));
        span.status = Status::error(format!("no answer from {}: {kind}", cut(&ask.agent)));
    }
    span
}

/// At most [`VALUE`] characters of a value taken from a message.
fn cut(text: &str) -> String {
    match text.char_indices().nth(VALUE) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn context(trace: TraceId, span: SpanId) -> SpanContext {
    SpanContext::new(
        OtelTraceId::from_bytes(trace.0.to_be_bytes()),
        OtelSpanId::from_bytes(span.0.to_be_bytes()),
        TraceFlags::SAMPLED,
        false,
        TraceState::NONE,
    )
}

fn span_of(trace: TraceId, id: SpanId, parent: Option<SpanId>, name: String, kind: SpanKind) -> SpanData {
    SpanData {
        span_context: context(trace, id),
        parent_span_id: parent.map_or(OtelSpanId::INVALID, |p| OtelSpanId::from_bytes(p.0.to_be_bytes())),
        parent_span_is_remote: false,
        span_kind: kind,
        name: Cow::Owned(name),
        start_time: SystemTime::UNIX_EPOCH,
        end_time: SystemTime::UNIX_EPOCH,
        attributes: Vec::new(),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: Status::Unset,
        instrumentation_scope: scope(),
    }
}

fn scope() -> InstrumentationScope {
    static SCOPE: OnceLock<InstrumentationScope> = OnceLock::new();
    SCOPE
        .get_or_init(|| {
            InstrumentationScope::builder("stomp-agent-bridge")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build()
        })
        .clone()
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
