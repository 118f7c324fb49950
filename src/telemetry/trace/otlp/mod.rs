//! The OTLP/HTTP export of the bridge's spans (docs/OBSERVABILITY.md). Each settled [`Hop`]
//! is written as its spans, protobuf, with the ids the pipeline gave them and the times the
//! engine measured ([`spans`]), and waits in a bounded queue for the exporter's own thread,
//! which posts them in batches over a blocking reqwest client (it never runs on the runtime
//! that moves messages). The queue is one buffer the spans are written into, under a short
//! lock: no allocation and no wake-up of that thread per message. A full queue drops the spans and counts them: a collector that is
//! down or slow never holds a message.
//!
//! Sampling is by trace id: its rightmost 7 bytes, the part W3C Trace Context level 2 and
//! OpenTelemetry's consistent sampling take as random (a UUIDv4's variant bits are just
//! before them), so that every hop of a conversation, in this bridge or another with the same
//! ratio, makes the same decision without remembering it.

mod proto;
mod spans;

use super::{Hop, Times};
use crate::config::traces::TracesConfig;
use crate::envelope::trace::TraceId;
use proto::{Value, Writer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// 2^56: the rightmost 7 bytes of a trace id are its random part.
const RANDOM_BITS: u64 = 1 << 56;

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

/// The spans waiting for the exporter's thread: written straight into one buffer under a
/// short lock (no allocation and no wake-up per message; the thread is woken when the first
/// spans arrive, when a batch is full, and to flush).
#[derive(Debug, Default)]
struct Pending {
    spans: Vec<u8>,
    /// Each hop's spans in `spans`: their bytes and how many.
    hops: std::collections::VecDeque<(usize, usize)>,
    n: usize,
    flushes: Vec<SyncSender<()>>,
    closed: bool,
}

/// What the exporter and its thread share.
#[derive(Debug, Default)]
struct Queue {
    pending: Mutex<Pending>,
    ready: Condvar,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The exporter: where hops' spans are offered.
#[derive(Debug)]
pub struct Exporter {
    queue: Arc<Queue>,
    max_queue: usize,
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
            None => Vec::new(),
        };
        let post = Post::new(format!("{}/v1/traces", config.endpoint.trim_end_matches('/')), headers)?;
        let queue = Arc::new(Queue::default());
        let counts = Arc::new(ExportCounts::default());
        let mut resource = vec![("service.name".to_owned(), config.service_name.clone())];
        resource.extend(config.resource.iter().map(|(k, v)| (k.clone(), v.clone())));
        let batches = Batches { post, resource, queue: queue.clone(), counts: counts.clone() };
        std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || batches.run())
            .map_err(|e| format!("cannot start the OTLP exporter's thread: {e}"))?;
        let bound = bound(config.sampling_ratio);
        let max_queue = config.max_queue;
        Ok(Some(Exporter { queue, max_queue, bound, system: OnceLock::new(), counts }))
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

    /// Offers a settled hop's spans; never waits (but for the lock a batch is taken under).
    pub fn offer(&self, hop: &Hop, times: Times) {
        if !self.sampled(hop.trace) {
            return;
        }
        let system = self.system.get().copied().unwrap_or("activemq");
        let mut pending = self.queue.lock();
        let mark = pending.spans.len();
        let n = spans::write(hop, times, system, &mut pending.spans);
        if n == 0 {
            return;
        }
        if pending.n + n > self.max_queue {
            pending.spans.truncate(mark);
            self.counts.dropped.fetch_add(n as u64, Ordering::Relaxed);
            return;
        }
        let before = pending.n;
        pending.n += n;
        let bytes = pending.spans.len() - mark;
        pending.hops.push_back((bytes, n));
        // The thread sleeps until spans arrive, then lingers for more or a full batch.
        if before == 0 || (before < BATCH && pending.n >= BATCH) {
            self.queue.ready.notify_one();
        }
    }

    /// Sends what is queued, waiting at most `bound` (at shutdown: spans still queued then
    /// are lost).
    pub fn flush(&self, bound: Duration) {
        let (done, sent) = std::sync::mpsc::sync_channel(1);
        self.queue.lock().flushes.push(done);
        self.queue.ready.notify_one();
        let _ = sent.recv_timeout(bound);
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.ready.notify_one();
    }
}

/// The sampling bound of a ratio: traces whose random part is below it are sampled.
fn bound(ratio: f64) -> u64 {
    (ratio * RANDOM_BITS as f64) as u64
}

fn sampled(bound: u64, trace: TraceId) -> bool {
    (trace.0 as u64 & (RANDOM_BITS - 1)) < bound
}

/// `Name: value` lines; blank lines and `#` comments skipped.
fn read_headers(path: &std::path::Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("traces.headers_file {}: cannot read it: {e}", path.display()))?;
    let mut headers = Vec::new();
    for (n, line) in text.lines().enumerate().map(|(n, l)| (n + 1, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("traces.headers_file {} line {n}: not `Name: value`", path.display()));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(headers)
}

/// An OTLP/HTTP POST of protobuf to the collector, on a blocking reqwest client with the
/// bridge's ring-backed TLS.
struct Post {
    client: reqwest::blocking::Client,
    endpoint: String,
    headers: reqwest::header::HeaderMap,
}

impl Post {
    fn new(endpoint: String, headers: Vec<(String, String)>) -> Result<Post, String> {
        use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
        for (name, value) in headers {
            let bad = |e: &dyn std::fmt::Display| format!("traces.headers_file: header {name}: {e}");
            let name_ = HeaderName::from_bytes(name.as_bytes()).map_err(|e| bad(&e))?;
            map.insert(name_, HeaderValue::from_str(&value).map_err(|e| bad(&e))?);
        }
        let tls = crate::stomp::transport::tls_client_config(&Default::default())
            .map_err(|e| format!("traces: cannot make the TLS configuration: {e}"))?;
        // A blocking client owns a runtime of its own: it is made off the bridge's runtime.
        let client = std::thread::spawn(move || {
            reqwest::blocking::Client::builder().use_preconfigured_tls(tls).timeout(EXPORT_TIMEOUT).build()
        })
        .join()
        .map_err(|_| "traces: the HTTP client's thread panicked".to_owned())?
        .map_err(|e| format!("traces: cannot make the HTTP client: {e}"))?;
        Ok(Post { client, endpoint, headers: map })
    }

    fn send(&self, body: Vec<u8>) -> Result<(), String> {
        let response = self
            .client
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .map_err(|e| e.to_string())?;
        match response.status() {
            status if status.is_success() => Ok(()),
            status => Err(format!("the collector answered {status}")),
        }
    }
}

/// The exporter's thread: takes the queued spans in batches and posts each.
struct Batches {
    post: Post,
    resource: Vec<(String, String)>,
    queue: Arc<Queue>,
    counts: Arc<ExportCounts>,
}

impl Batches {
    fn run(self) {
        loop {
            let (spans, n, flushed, closed) = self.next();
            if n > 0 {
                self.export(&spans, n as u64);
            }
            for done in flushed {
                let _ = done.try_send(());
            }
            if closed {
                break;
            }
        }
    }

    /// Waits for spans, then for a full batch or [`LINGER`] (a flush or the end sends at
    /// once), and takes the next batch: its spans, how many, the flushes it answers (those
    /// asked when no more is queued), and whether the exporter is gone.
    fn next(&self) -> (Vec<u8>, usize, Vec<SyncSender<()>>, bool) {
        let urgent = |p: &Pending| !p.flushes.is_empty() || p.closed;
        let mut pending = self.queue.lock();
        while pending.n == 0 && !urgent(&pending) {
            pending = self.queue.ready.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
        let until = Instant::now() + LINGER;
        while pending.n < BATCH && !urgent(&pending) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            pending = self.queue.ready.wait_timeout(pending, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        let (mut bytes, mut n) = (0, 0);
        while let Some(&(b, k)) = pending.hops.front() {
            if n > 0 && n + k > BATCH {
                break;
            }
            pending.hops.pop_front();
            (bytes, n) = (bytes + b, n + k);
        }
        pending.n -= n;
        let spans = pending.spans.drain(..bytes).collect();
        let flushed = if pending.n == 0 { std::mem::take(&mut pending.flushes) } else { Vec::new() };
        (spans, n, flushed, pending.closed && pending.n == 0)
    }

    fn export(&self, spans: &[u8], n: u64) {
        match self.post.send(self.request(spans)) {
            Ok(()) => self.counts.exported.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                tracing::debug!(error = %e, spans = n, "OTLP export failed; spans dropped");
                self.counts.failed.fetch_add(n, Ordering::Relaxed)
            }
        };
    }

    /// An `ExportTraceServiceRequest`: one `ResourceSpans` (the bridge's resource) of one
    /// `ScopeSpans` (the bridge as instrumentation scope) holding the spans.
    fn request(&self, spans: &[u8]) -> Vec<u8> {
        let mut body = Vec::with_capacity(spans.len() + 256);
        Writer { buf: &mut body }.message(1, |resource_spans| {
            resource_spans.message(1, |resource| {
                for (key, value) in &self.resource {
                    resource.attribute(1, key, Value::Str(value));
                }
            });
            resource_spans.message(2, |scope_spans| {
                scope_spans.message(1, |scope| {
                    scope.string(1, &["stomp-agent-bridge"]);
                    scope.string(2, &[env!("CARGO_PKG_VERSION")]);
                });
                scope_spans.buf.extend_from_slice(spans);
            });
        });
        body
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
