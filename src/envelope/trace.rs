//! W3C Trace Context as the bridge reads and writes it (docs/OBSERVABILITY.md): the ids of a
//! trace and a span, the `traceparent` header, and the `invoke_agent` span an ask opens and its
//! answer (or its reply timeout) closes. Pure: new ids come from the [`Clock`] a caller hands.
//!
//! What arrives is checked as the W3C recommendation says, and a header that does not fit is
//! ignored (a new trace is started), never an error for the message: lower-case hex only, ids
//! not all zeros, version `ff` refused, a version-00 header exactly 55 characters long.

use super::{Clock, Envelope};
use std::fmt;
use std::sync::Arc;

/// A trace id: 16 bytes, never all zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub u128);

/// A span id: 8 bytes, never all zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub u64);

/// The longest `traceparent` read (a future version may append fields; the rest is ignored).
const MAX_TRACEPARENT: usize = 512;

impl TraceId {
    /// 32 lower-case hex digits, not all zeros.
    pub fn parse(hex: &str) -> Option<TraceId> {
        parse_hex(hex, 32).map(TraceId)
    }

    /// A new trace id made of a new id's bytes (random but for its first 48 bits, a time).
    pub fn new(clock: &mut impl Clock) -> TraceId {
        TraceId(clock.id4().as_u128())
    }
}

impl SpanId {
    /// 16 lower-case hex digits, not all zeros.
    pub fn parse(hex: &str) -> Option<SpanId> {
        parse_hex(hex, 16).and_then(|v| u64::try_from(v).ok()).map(SpanId)
    }

    /// A new span id: the random half of a new id.
    pub fn new(clock: &mut impl Clock) -> SpanId {
        let id = clock.id4().as_u128();
        SpanId(((id as u64) ^ ((id >> 64) as u64)).max(1))
    }
}

impl TraceId {
    /// Its 32 lower-case hex digits (as `Display` writes them, in one allocation).
    pub fn hex(self) -> String {
        hex(self.0, 32)
    }
}

impl SpanId {
    /// Its 16 lower-case hex digits.
    pub fn hex(self) -> String {
        hex(u128::from(self.0), 16)
    }
}

/// The `digits` lowest hex digits of `n`, lower case, zero-padded.
fn hex(n: u128, digits: usize) -> String {
    let mut out = String::with_capacity(digits);
    push_hex(&mut out, n, digits);
    out
}

fn push_hex(out: &mut String, n: u128, digits: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits).rev() {
        out.push(DIGITS[((n >> (4 * i)) & 0xf) as usize] as char);
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

fn parse_hex(hex: &str, len: usize) -> Option<u128> {
    let fits = hex.len() == len && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    u128::from_str_radix(hex, 16).ok().filter(|v| fits && *v != 0)
}

/// A span context read from a `traceparent`: the trace, the parent span, and the flags
/// (bit 0: sampled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    pub trace: TraceId,
    pub span: SpanId,
    pub flags: u8,
}

impl SpanContext {
    /// A W3C `traceparent` header, or `None` for one that does not fit (ignored).
    pub fn parse(header: &str) -> Option<SpanContext> {
        let header = header.trim();
        if header.len() > MAX_TRACEPARENT {
            return None;
        }
        let mut parts = header.split('-');
        let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let byte = |s: &str| {
            let fits = s.len() == 2 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            u8::from_str_radix(s, 16).ok().filter(|_| fits)
        };
        let version = byte(version).filter(|v| *v != 0xff)?;
        if version == 0 && (header.len() != 55 || parts.next().is_some()) {
            return None;
        }
        Some(SpanContext { trace: TraceId::parse(trace)?, span: SpanId::parse(span)?, flags: byte(flags)? })
    }

    /// The `traceparent` header of this context (version 00, its flags).
    pub fn header(&self) -> String {
        let mut header = String::with_capacity(55);
        header.push_str("00-");
        push_hex(&mut header, self.trace.0, 32);
        header.push('-');
        push_hex(&mut header, u128::from(self.span.0), 16);
        header.push('-');
        push_hex(&mut header, u128::from(self.flags), 2);
        header
    }

    /// The envelope's trace id and span id, when both fit.
    pub fn of(env: &Envelope) -> Option<SpanContext> {
        let trace = TraceId::parse(env.trace_id.as_deref()?)?;
        let span = SpanId::parse(env.span_id.as_deref()?)?;
        Some(SpanContext { trace, span, flags: 1 })
    }
}

/// The `invoke_agent` span an ask opens (GenAI conventions): kept with the pending ask, and
/// ended by its answer or its reply timeout, so that the answer joins the ask's trace even
/// when the agent's framework carries no trace context back (Wise Agents, VOX).
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub trace: TraceId,
    pub span: SpanId,
    /// The bridge's span that processed the ask.
    pub parent: SpanId,
    /// When the ask was sent on (Unix seconds).
    pub started: f64,
    /// The agent asked, and its framework.
    pub agent: Arc<str>,
    pub framework: &'static str,
    /// The conversation (Wise Agents context, Civitas correlation, A2A context id).
    pub conversation: Option<Arc<str>>,
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
