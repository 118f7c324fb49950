//! A STOMP frame as data: a command, headers in wire order, and a body of bytes.

use bytes::Bytes;
use std::fmt;

/// A STOMP 1.2 command, client or server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Connect,
    Stomp,
    Connected,
    Send,
    Subscribe,
    Unsubscribe,
    Ack,
    Nack,
    Begin,
    Commit,
    Abort,
    Disconnect,
    Message,
    Receipt,
    Error,
}

impl Command {
    /// Every command, in the order of the spec.
    pub const ALL: [Command; 15] = [
        Command::Connect,
        Command::Stomp,
        Command::Connected,
        Command::Send,
        Command::Subscribe,
        Command::Unsubscribe,
        Command::Ack,
        Command::Nack,
        Command::Begin,
        Command::Commit,
        Command::Abort,
        Command::Disconnect,
        Command::Message,
        Command::Receipt,
        Command::Error,
    ];

    /// The command as written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Command::Connect => "CONNECT",
            Command::Stomp => "STOMP",
            Command::Connected => "CONNECTED",
            Command::Send => "SEND",
            Command::Subscribe => "SUBSCRIBE",
            Command::Unsubscribe => "UNSUBSCRIBE",
            Command::Ack => "ACK",
            Command::Nack => "NACK",
            Command::Begin => "BEGIN",
            Command::Commit => "COMMIT",
            Command::Abort => "ABORT",
            Command::Disconnect => "DISCONNECT",
            Command::Message => "MESSAGE",
            Command::Receipt => "RECEIPT",
            Command::Error => "ERROR",
        }
    }

    /// Reads a command line (without its line end).
    pub fn parse(bytes: &[u8]) -> Option<Command> {
        Self::ALL.into_iter().find(|c| c.as_str().as_bytes() == bytes)
    }

    /// CONNECT and CONNECTED frames carry headers unescaped (STOMP 1.2, "Value Encoding").
    pub const fn escapes_headers(self) -> bool {
        !matches!(self, Command::Connect | Command::Stomp | Command::Connected)
    }

    /// Whether the spec allows this command to carry a body.
    pub const fn may_have_body(self) -> bool {
        matches!(self, Command::Send | Command::Message | Command::Error)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One frame. Headers keep wire order and repeats; [`Frame::header`] returns the first,
/// as STOMP 1.2 requires.
#[derive(Clone, PartialEq, Eq)]
pub struct Frame {
    pub command: Command,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

/// As derived, but a `passcode` header's value is not shown.
impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), if n == "passcode" { "***" } else { v.as_str() }))
            .collect();
        f.debug_struct("Frame")
            .field("command", &self.command)
            .field("headers", &headers)
            .field("body", &self.body)
            .finish()
    }
}

impl Frame {
    pub fn new(command: Command) -> Self {
        Frame { command, headers: Vec::new(), body: Bytes::new() }
    }

    /// Adds a header (builder style).
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body (builder style).
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// The first value of a header, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Adds a header unless one of that name is present already.
    pub fn set_default(&mut self, name: &str, value: impl Into<String>) {
        if self.header(name).is_none() {
            self.headers.push((name.to_owned(), value.into()));
        }
    }
}
