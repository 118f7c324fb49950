//! STOMP 1.2 framing as a tokio-util codec: pure, resumable, and bounded before it buffers.
//!
//! `Ok(None)` means "need more bytes" and consumes nothing that a later call must see again;
//! an `Err` means the byte stream cannot be trusted any more and the connection must be reset.

use super::frame::{Command, Frame};
use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Size limits applied while decoding, before bytes are buffered past them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame (command, headers and body) accepted from a peer.
    pub max_frame_bytes: usize,
    /// Most header lines in one frame.
    pub max_headers: usize,
    /// Longest single header line, in bytes.
    pub max_header_line: usize,
}

impl Limits {
    /// 16 MiB: the largest frame read by default.
    pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 << 20;
}

impl Default for Limits {
    /// 16 MiB frames (a large agent reply with room to spare, and far below what would hurt
    /// a small container), 256 headers, 64 KiB per header line.
    fn default() -> Self {
        Limits { max_frame_bytes: Self::DEFAULT_MAX_FRAME_BYTES, max_headers: 256, max_header_line: 64 << 10 }
    }
}

/// Why a byte stream is not valid STOMP. Every variant ends the connection.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("i/o error on the STOMP stream: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {size} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge { size: usize, limit: usize },
    #[error("frame has more than {limit} headers")]
    TooManyHeaders { limit: usize },
    #[error("header line of {size} bytes exceeds the limit of {limit} bytes")]
    HeaderLineTooLong { size: usize, limit: usize },
    #[error("unknown STOMP command {0:?}")]
    UnknownCommand(String),
    #[error("header line without a colon: {0:?}")]
    MalformedHeader(String),
    #[error("undefined escape sequence \\{0} in a header")]
    InvalidEscape(char),
    #[error("content-length {0:?} is not a byte count")]
    InvalidContentLength(String),
    #[error("frame body of content-length {0} is not followed by a NUL byte")]
    MissingNul(usize),
    #[error("{command} frames cannot carry a line break in header {name:?}")]
    UnencodableHeader { command: Command, name: String },
}

/// What the decoder yields: a frame, or heart-beat line ends seen between frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wire {
    Frame(Frame),
    Heartbeat,
}

/// A heart-beat to encode: one line end.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat;

#[derive(Debug)]
enum State {
    /// Reading command and headers; `line_start` is where the next unread line begins and
    /// `lines` how many complete lines were read (so nothing is scanned twice).
    Head { line_start: usize, lines: usize },
    /// Headers parsed; reading the body.
    Body { frame: Frame, head_len: usize, len: Option<usize>, scanned: usize },
}

/// The STOMP codec. One per connection: it keeps the state of a partly read frame.
#[derive(Debug)]
pub struct StompCodec {
    limits: Limits,
    state: State,
}

impl StompCodec {
    pub fn new(limits: Limits) -> Self {
        StompCodec { limits, state: State::Head { line_start: 0, lines: 0 } }
    }
}

impl Default for StompCodec {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl Decoder for StompCodec {
    type Item = Wire;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Wire>, FrameError> {
        loop {
            match &mut self.state {
                State::Head { line_start: 0, lines: 0 } if skip_line_ends(src) => {
                    return Ok(Some(Wire::Heartbeat));
                }
                State::Head { .. } => match self.decode_head(src)? {
                    Some(next) => self.state = next,
                    None => return Ok(None),
                },
                State::Body { .. } => return self.decode_body(src),
            }
        }
    }
}

/// Consumes heart-beat line ends (`\n`, `\r\n`) at the start of `src`; true if any were.
fn skip_line_ends(src: &mut BytesMut) -> bool {
    let mut n = 0;
    loop {
        match &src[n..] {
            [b'\n', ..] => n += 1,
            [b'\r', b'\n', ..] => n += 2,
            _ => break,
        }
    }
    src.advance(n);
    n > 0
}

impl StompCodec {
    /// Scans for the blank line that ends the headers; on finding it, parses them.
    fn decode_head(&mut self, src: &mut BytesMut) -> Result<Option<State>, FrameError> {
        let State::Head { line_start, lines } = &mut self.state else { unreachable_state() };
        let limits = self.limits;
        while let Some(rel) = memchr(b'\n', &src[*line_start..]) {
            let end = *line_start + rel;
            let line = trim_cr(&src[*line_start..end]);
            if line.is_empty() && *lines > 0 {
                let (head, headers) = (src.split_to(end + 1), *lines - 1);
                return parse_head(&head, headers, limits).map(Some);
            }
            check_line(line.len(), *lines, limits)?;
            *lines += 1;
            *line_start = end + 1;
        }
        let pending = src.len() - *line_start;
        check_line(pending, *lines, limits)?;
        if src.len() > limits.max_frame_bytes {
            return Err(FrameError::FrameTooLarge { size: src.len(), limit: limits.max_frame_bytes });
        }
        Ok(None)
    }

    fn decode_body(&mut self, src: &mut BytesMut) -> Result<Option<Wire>, FrameError> {
        let State::Body { head_len, len, scanned, .. } = &mut self.state else { unreachable_state() };
        let max = self.limits.max_frame_bytes;
        let body_len = match *len {
            Some(n) if src.len() <= n => {
                src.reserve(n + 1 - src.len());
                return Ok(None);
            }
            Some(n) if src[n] != 0 => return Err(FrameError::MissingNul(n)),
            Some(n) => n,
            None => match memchr(0, &src[*scanned..]) {
                Some(rel) => *scanned + rel,
                None if *head_len + src.len() > max => {
                    return Err(FrameError::FrameTooLarge { size: *head_len + src.len(), limit: max });
                }
                None => {
                    *scanned = src.len();
                    return Ok(None);
                }
            },
        };
        let body = src.split_to(body_len).freeze();
        src.advance(1);
        let state = std::mem::replace(&mut self.state, State::Head { line_start: 0, lines: 0 });
        let State::Body { mut frame, .. } = state else { unreachable_state() };
        frame.body = body;
        Ok(Some(Wire::Frame(frame)))
    }
}

/// The decoder's states are matched just before these calls; reaching this is a bug in this
/// file, never something a peer can cause.
fn unreachable_state() -> ! {
    unreachable!("StompCodec state checked by the caller")
}

fn check_line(len: usize, lines: usize, limits: Limits) -> Result<(), FrameError> {
    if len > limits.max_header_line {
        return Err(FrameError::HeaderLineTooLong { size: len, limit: limits.max_header_line });
    }
    // The first line is the command; the rest are headers.
    if lines > limits.max_headers {
        return Err(FrameError::TooManyHeaders { limit: limits.max_headers });
    }
    Ok(())
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Parses the command line and headers of a complete head (ending in its blank line).
/// `headers`: how many header lines the scan counted, so that a held frame's header list is
/// allocated once at its size (a broker's prefetch keeps up to `in_flight` frames alive).
fn parse_head(head: &[u8], headers: usize, limits: Limits) -> Result<State, FrameError> {
    let mut lines = head.split(|&b| b == b'\n').map(trim_cr);
    let command_line = lines.next().unwrap_or_default();
    let command = Command::parse(command_line)
        .ok_or_else(|| FrameError::UnknownCommand(String::from_utf8_lossy(command_line).into_owned()))?;
    let mut frame = Frame::new(command);
    frame.headers.reserve_exact(headers);
    for line in lines.filter(|l| !l.is_empty()) {
        frame.headers.push(parse_header(line, command.escapes_headers())?);
    }
    let len = content_length(&frame)?;
    if let Some(n) = len.filter(|&n| n.saturating_add(head.len()) > limits.max_frame_bytes) {
        return Err(FrameError::FrameTooLarge {
            size: n.saturating_add(head.len()),
            limit: limits.max_frame_bytes,
        });
    }
    Ok(State::Body { frame, head_len: head.len(), len, scanned: 0 })
}

fn content_length(frame: &Frame) -> Result<Option<usize>, FrameError> {
    frame
        .header("content-length")
        .map(|v| v.trim().parse().map_err(|_| FrameError::InvalidContentLength(v.to_owned())))
        .transpose()
}

/// Splits `name:value` at the first colon. Header bytes that are not UTF-8 are replaced by
/// U+FFFD rather than refused: refusing would reset the connection and the broker would
/// redeliver the same message for ever.
fn parse_header(line: &[u8], escaped: bool) -> Result<(String, String), FrameError> {
    let colon = memchr(b':', line)
        .ok_or_else(|| FrameError::MalformedHeader(String::from_utf8_lossy(line).into_owned()))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if !escaped {
        return Ok((lossy(name), lossy(value)));
    }
    Ok((unescape(name)?, unescape(value)?))
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn unescape(raw: &[u8]) -> Result<String, FrameError> {
    if !raw.contains(&b'\\') {
        return Ok(lossy(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        out.push(match bytes.next() {
            Some(b'\\') => b'\\',
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b'c') => b':',
            Some(&other) => return Err(FrameError::InvalidEscape(other as char)),
            None => return Err(FrameError::InvalidEscape(' ')),
        });
    }
    Ok(lossy(&out))
}

impl Encoder<Frame> for StompCodec {
    type Error = FrameError;

    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<(), FrameError> {
        self.encode(&frame, dst)
    }
}

impl Encoder<&Frame> for StompCodec {
    type Error = FrameError;

    /// Writes the frame; `content-length` is always computed from the body (a header of
    /// that name in `frame.headers` is ignored) and written whenever the body is non-empty.
    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), FrameError> {
        let escape = frame.command.escapes_headers();
        dst.reserve(frame.command.as_str().len() + 64 * frame.headers.len() + frame.body.len() + 32);
        dst.put_slice(frame.command.as_str().as_bytes());
        dst.put_u8(b'\n');
        for (name, value) in frame.headers.iter().filter(|(n, _)| n != "content-length") {
            if !escape && (has_line_break(name) || has_line_break(value)) {
                return Err(FrameError::UnencodableHeader { command: frame.command, name: name.clone() });
            }
            put_header_part(dst, name, escape);
            dst.put_u8(b':');
            put_header_part(dst, value, escape);
            dst.put_u8(b'\n');
        }
        if !frame.body.is_empty() {
            dst.put_slice(b"content-length:");
            dst.put_slice(frame.body.len().to_string().as_bytes());
            dst.put_u8(b'\n');
        }
        dst.put_u8(b'\n');
        dst.put_slice(&frame.body);
        dst.put_u8(0);
        Ok(())
    }
}

impl Encoder<Heartbeat> for StompCodec {
    type Error = FrameError;

    fn encode(&mut self, _: Heartbeat, dst: &mut BytesMut) -> Result<(), FrameError> {
        dst.put_u8(b'\n');
        Ok(())
    }
}

fn has_line_break(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

fn put_header_part(dst: &mut BytesMut, s: &str, escape: bool) {
    if !escape || !s.contains(['\\', '\n', '\r', ':']) {
        dst.put_slice(s.as_bytes());
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => dst.put_slice(b"\\\\"),
            '\n' => dst.put_slice(b"\\n"),
            '\r' => dst.put_slice(b"\\r"),
            ':' => dst.put_slice(b"\\c"),
            c => dst.put_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
