//! The protobuf wire format, as much of it as an OTLP trace export request uses: varints,
//! fixed-width integers, strings, bytes and nested messages, appended to one buffer.
//!
//! Written by hand rather than built as `opentelemetry-proto`'s prost structs (or the SDK's
//! `SpanData`, which its exporter turns into those): a hop's spans are written straight from
//! the hop, with no allocation per attribute, span or name, on the thread that settled the
//! message (docs/OBSERVABILITY.md, "Why the OTLP writer is the bridge's own", has the figures).

/// Wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// An attribute's value.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Str(&'a str),
    /// A string cut to at most `n` characters, `…` marking the cut.
    Cut(&'a str, usize),
    Int(i64),
}

/// Appends fields to a buffer.
pub struct Writer<'a> {
    pub buf: &'a mut Vec<u8>,
}

impl Writer<'_> {
    fn key(&mut self, field: u32, wire: u32) {
        self.raw_varint(u64::from(field << 3 | wire));
    }

    fn raw_varint(&mut self, v: u64) {
        let mut bytes = [0u8; 10];
        let n = varint_into(v, &mut bytes);
        self.buf.extend_from_slice(&bytes[..n]);
    }

    pub fn varint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.raw_varint(v);
    }

    pub fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn fixed32(&mut self, field: u32, v: u32) {
        self.key(field, FIXED32);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        self.raw_varint(v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// A string made of `parts`, one after the other (a span name: `process ` and the queue).
    pub fn string(&mut self, field: u32, parts: &[&str]) {
        self.key(field, LEN);
        self.raw_varint(parts.iter().map(|p| p.len()).sum::<usize>() as u64);
        for part in parts {
            self.buf.extend_from_slice(part.as_bytes());
        }
    }

    /// At most `n` characters of `text`, with `…` where it was cut.
    pub fn cut(&mut self, field: u32, text: &str, n: usize) {
        // No longer in bytes than `n`: no longer in characters either.
        match text.char_indices().nth(n).filter(|_| text.len() > n) {
            Some((end, _)) => self.string(field, &[&text[..end], "…"]),
            None => self.string(field, &[text]),
        }
    }

    /// A nested message: `body` writes its fields after one byte kept for their length, which
    /// takes more room (moving them) only when it is 128 bytes or more.
    pub fn message(&mut self, field: u32, body: impl FnOnce(&mut Writer<'_>)) {
        self.key(field, LEN);
        let at = self.buf.len();
        self.buf.push(0);
        body(&mut Writer { buf: self.buf });
        let len = self.buf.len() - at - 1;
        let mut prefix = [0u8; 10];
        let n = varint_into(len as u64, &mut prefix);
        self.buf[at] = prefix[0];
        if n > 1 {
            self.buf.splice(at + 1..at + 1, prefix[1..n].iter().copied());
        }
    }

    /// A `KeyValue` (`key` 1, `value` 2: an `AnyValue` of `string_value` 1 or `int_value` 3).
    pub fn attribute(&mut self, field: u32, key: &str, value: Value<'_>) {
        self.message(field, |kv| {
            kv.string(1, &[key]);
            kv.message(2, |any| match value {
                Value::Str(s) => any.string(1, &[s]),
                Value::Cut(s, n) => any.cut(1, s, n),
                Value::Int(i) => any.varint(3, i as u64),
            });
        });
    }
}

/// `v` as a varint at the start of `out`; how many bytes it took.
fn varint_into(mut v: u64, out: &mut [u8; 10]) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        out[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

#[cfg(test)]
#[path = "proto_tests.rs"]
pub(super) mod tests;
