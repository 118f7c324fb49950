//! The OTLP/HTTP export of the bridge's spans (docs/OBSERVABILITY.md). Each settled [`Hop`]
//! becomes its spans, built here with the ids the pipeline gave them and the times the engine
//! measured, and waits in a bounded queue for the exporter's own thread, which sends them in
//! batches with the OpenTelemetry SDK's OTLP exporter over a blocking reqwest client (it never
//! runs on the runtime that moves messages). A full queue drops the span and counts it: a
//! collector that is down or slow never holds a message.
//!
//! Sampling is by trace id (OpenTelemetry's `TraceIdRatioBased` rule, on the id's low 64
//! bits), so that every hop of a conversation, in this bridge or another with the same ratio,
//! makes the same decision without remembering it.

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
    /// Traces whose low 64 bits are below this are sampled.
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
        let bound = (config.sampling_ratio * u64::MAX as f64) as u64;
        Ok(Some(Exporter { queue, bound, system: OnceLock::new(), counts }))
    }

    /// The broker's kind, from its CONNECTED `server` header.
    pub fn broker_is(&self, server: &str) {
        let system = if server.to_ascii_lowercase().contains("rabbitmq") { "rabbitmq" } else { "activemq" };
        let _ = self.system.set(system);
    }

    /// Whether this trace's spans are sampled.
    pub fn sampled(&self, trace: TraceId) -> bool {
        (trace.0 as u64) < self.bound || self.bound == u64::MAX
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

/// A hop's spans: `process <source>` (CONSUMER), `send <destination>` (PRODUCER), and the
/// `invoke_agent <agent>` (CLIENT) span an answer or a timeout ends.
fn spans(hop: &Hop, times: Times, system: &'static str) -> Vec<SpanData> {
    let mut out = Vec::with_capacity(5);
    let conversation =
        hop.conversation.as_deref().map(|c| KeyValue::new("messaging.message.conversation_id", c.to_owned()));
    let messaging = |operation: &'static str, destination: &str| {
        let mut attributes = vec![
            KeyValue::new("messaging.system", system),
            KeyValue::new("messaging.operation.type", operation),
            KeyValue::new("messaging.operation.name", operation),
            KeyValue::new("messaging.destination.name", destination.to_owned()),
        ];
        attributes.extend(conversation.clone());
        attributes
    };
    let process_parent = hop.parent;
    if !hop.source.is_empty() {
        let mut attributes = messaging("process", &hop.source);
        attributes.push(KeyValue::new("messaging.message.id", hop.message_id.to_string()));
        attributes.push(KeyValue::new("messaging.message.body.size", hop.body_size as i64));
        attributes.push(KeyValue::new("bridge.hop", hop.kind.as_str()));
        attributes.push(KeyValue::new("bridge.from.agent", hop.from.name.to_string()));
        attributes.push(KeyValue::new("bridge.from.framework", hop.from.framework));
        let mut span = span_of(
            hop.trace,
            hop.process,
            process_parent,
            format!("process {}", hop.source),
            SpanKind::Consumer,
        );
        (span.start_time, span.end_time, span.attributes) = (times.received, times.settled, attributes);
        if let Some(link) = hop.link {
            span.links.links.push(opentelemetry::trace::Link::with_context(context(hop.trace, link)));
        }
        if let Some((kind, reason)) = &hop.error {
            span.attributes.push(KeyValue::new("error.type", *kind));
            span.status = Status::error(reason.to_string());
        }
        for note in &hop.notes {
            let detail = vec![KeyValue::new("bridge.detail", note.detail.to_string())];
            span.events.events.push(opentelemetry::trace::Event::new(note.kind, note.at, detail, 0));
        }
        out.push(span);
        let (receive, settle) = (SpanId(hop.process.0 ^ 0x5eed_0001), SpanId(hop.process.0 ^ 0x5eed_0002));
        let mut span = span_of(
            hop.trace,
            receive,
            Some(hop.process),
            format!("receive {}", hop.source),
            SpanKind::Client,
        );
        (span.start_time, span.end_time, span.attributes) =
            (times.received, times.received, messaging("receive", &hop.source));
        out.push(span);
        let mut span =
            span_of(hop.trace, settle, Some(hop.process), format!("ack {}", hop.source), SpanKind::Client);
        (span.start_time, span.end_time, span.attributes) =
            (times.settled, times.settled, messaging("settle", &hop.source));
        span.attributes[2] = KeyValue::new("messaging.operation.name", "ack");
        out.push(span);
    }
    if hop.kind != HopKind::DeadLetter || !hop.destination.is_empty() {
        // No process span (an error answer, an A2A task's answer): the invocation's child.
        let parent = match (&hop.kind, &hop.invocation) {
            (HopKind::Ask, Some(opened)) => opened.span,
            (_, Some(closed)) if hop.source.is_empty() => closed.span,
            _ => hop.process,
        };
        let mut span = span_of(
            hop.trace,
            hop.send,
            Some(parent),
            format!("send {}", hop.destination),
            SpanKind::Producer,
        );
        let mut attributes = messaging("send", &hop.destination);
        if let Some(to) = &hop.to {
            attributes.push(KeyValue::new("bridge.to.agent", to.name.to_string()));
            attributes.push(KeyValue::new("bridge.to.framework", to.framework));
        }
        (span.start_time, span.end_time, span.attributes) =
            (system_time(hop.processed).min(times.settled), times.settled, attributes);
        out.push(span);
    }
    match (hop.kind, &hop.invocation) {
        (HopKind::Answer, Some(closed)) => out.push(invocation(closed, system_time(hop.processed), None)),
        (HopKind::Timeout, Some(closed)) => {
            let kind = hop.error.as_ref().map_or("timeout", |(kind, _)| *kind);
            out.push(invocation(closed, system_time(hop.processed), Some(kind)));
        }
        _ => {}
    }
    out
}

/// The `invoke_agent` span of an ask, ended at `end`.
fn invocation(ask: &Invocation, end: SystemTime, error: Option<&'static str>) -> SpanData {
    let mut span = span_of(
        ask.trace,
        ask.span,
        Some(ask.parent),
        format!("invoke_agent {}", ask.agent),
        SpanKind::Client,
    );
    span.start_time = system_time(ask.started).min(end);
    span.end_time = end;
    span.attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.provider.name", ask.framework),
        KeyValue::new("gen_ai.agent.name", ask.agent.to_string()),
    ];
    if let Some(conversation) = &ask.conversation {
        span.attributes.push(KeyValue::new("gen_ai.conversation.id", conversation.to_string()));
    }
    if let Some(kind) = error {
        span.attributes.push(KeyValue::new("error.type", kind));
        span.status = Status::error(format!("no answer from {}: {kind}", ask.agent));
    }
    span
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
