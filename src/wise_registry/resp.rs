//! A minimal Redis client: RESP2 commands over one TCP connection, for the dozen commands the
//! registry needs (HGET, HSET, HDEL, HEXISTS, HGETALL, WATCH, MULTI, EXEC, UNWATCH, AUTH,
//! SELECT, PING) and the A2A task store's (EVAL, HMGET, HGETALL, HDEL, DEL, SUBSCRIBE). Replies
//! are bounded in size and nesting; every call has a deadline; a subscription waits as long as
//! it takes.

use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The largest bulk string read (a context's chat completion is one).
pub const MAX_BULK: usize = 16 << 20;
/// Elements of an array reply read at most (HGETALL of `agents`).
pub const MAX_ARRAY: usize = 200_000;
/// How long one command may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a Redis call failed.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    #[error("cannot reach Redis at {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("the connection to Redis failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("Redis answered something the client does not read: {0}")]
    Protocol(&'static str),
    #[error("Redis refused the command: {0}")]
    Server(String),
}

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The bytes of a bulk reply; `None` for nil.
    pub fn into_bytes(self) -> Result<Option<Vec<u8>>, RedisError> {
        match self {
            Reply::Bulk(b) => Ok(b),
            Reply::Error(e) => Err(RedisError::Server(e)),
            _ => Err(RedisError::Protocol("expected a bulk string")),
        }
    }

    /// An integer reply.
    pub fn into_int(self) -> Result<i64, RedisError> {
        match self {
            Reply::Int(i) => Ok(i),
            Reply::Error(e) => Err(RedisError::Server(e)),
            _ => Err(RedisError::Protocol("expected an integer")),
        }
    }

    /// An error reply as an error; anything else as it is.
    pub fn ok(self) -> Result<Reply, RedisError> {
        match self {
            Reply::Error(e) => Err(RedisError::Server(e)),
            other => Ok(other),
        }
    }
}

/// One connection to Redis.
pub struct Connection {
    stream: BufReader<TcpStream>,
    /// A call was sent and its reply not read: it timed out, or its future was dropped (a
    /// caller's own timeout). The next reply on the stream would be that one's.
    unread: bool,
}

impl Connection {
    /// Connects, authenticates (`AUTH [username] password`) and selects `db`.
    pub async fn open(
        host: &str,
        port: u16,
        auth: Option<(Option<&str>, &str)>,
        db: u32,
    ) -> Result<Self, RedisError> {
        let addr = format!("{host}:{port}");
        let tcp = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect(&addr))
            .await
            .map_err(|_| RedisError::Timeout(CALL_TIMEOUT))?
            .map_err(|source| RedisError::Connect { addr, source })?;
        tcp.set_nodelay(true)?;
        let mut conn = Connection { stream: BufReader::new(tcp), unread: false };
        match auth {
            Some((Some(user), password)) => {
                conn.call(&[b"AUTH", user.as_bytes(), password.as_bytes()]).await?
            }
            Some((None, password)) => conn.call(&[b"AUTH", password.as_bytes()]).await?,
            None => conn.call(&[b"PING"]).await?,
        }
        .ok()?;
        if db != 0 {
            conn.call(&[b"SELECT", db.to_string().as_bytes()]).await?.ok()?;
        }
        Ok(conn)
    }

    /// Sends one command and reads its reply (an error reply is a [`Reply::Error`]). On a
    /// connection a call was given up on half-way, an error: its replies are out of step.
    pub async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        if self.unread {
            return Err(RedisError::Protocol("a call on this connection was given up half-way"));
        }
        self.unread = true;
        let reply = tokio::time::timeout(CALL_TIMEOUT, self.call_inner(args))
            .await
            .map_err(|_| RedisError::Timeout(CALL_TIMEOUT))??;
        self.unread = false;
        Ok(reply)
    }

    /// Whether its replies are in step with its calls (see [`Connection::call`]).
    pub fn is_usable(&self) -> bool {
        !self.unread
    }

    async fn call_inner(&mut self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        self.stream.get_mut().write_all(&encode(args)).await?;
        read_reply(&mut self.stream, 0).await
    }
}

/// A connection given to `SUBSCRIBE`: it only reads the messages of its channels.
pub struct Subscription {
    stream: BufReader<TcpStream>,
}

impl Connection {
    /// Subscribes to `channels`, each confirmed within the call's deadline.
    pub async fn subscribe(mut self, channels: &[&[u8]]) -> Result<Subscription, RedisError> {
        let mut args: Vec<&[u8]> = vec![b"SUBSCRIBE"];
        args.extend_from_slice(channels);
        self.stream.get_mut().write_all(&encode(&args)).await?;
        for _ in channels {
            let confirmed = tokio::time::timeout(CALL_TIMEOUT, read_reply(&mut self.stream, 0))
                .await
                .map_err(|_| RedisError::Timeout(CALL_TIMEOUT))??;
            if let Reply::Error(e) = confirmed {
                return Err(RedisError::Server(e));
            }
        }
        Ok(Subscription { stream: self.stream })
    }
}

impl Subscription {
    /// The next message published on one of its channels: the channel and the payload.
    pub async fn next(&mut self) -> Result<(Vec<u8>, Vec<u8>), RedisError> {
        loop {
            let Reply::Array(Some(items)) = read_reply(&mut self.stream, 0).await? else { continue };
            let mut items = items.into_iter();
            let (
                Some(Reply::Bulk(Some(kind))),
                Some(Reply::Bulk(Some(channel))),
                Some(Reply::Bulk(Some(payload))),
            ) = (items.next(), items.next(), items.next())
            else {
                continue;
            };
            if kind == b"message" {
                return Ok((channel, payload));
            }
        }
    }
}

/// A command as a RESP array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one reply from `input`.
pub async fn read_reply<R: tokio::io::AsyncBufRead + Unpin>(
    input: &mut R,
    depth: usize,
) -> Result<Reply, RedisError> {
    if depth > 8 {
        return Err(RedisError::Protocol("replies nested deeper than 8"));
    }
    let line = read_line(input).await?;
    let (kind, rest) = line.split_first().ok_or(RedisError::Protocol("an empty line"))?;
    let text = || String::from_utf8_lossy(rest).into_owned();
    match kind {
        b'+' => Ok(Reply::Simple(text())),
        b'-' => Ok(Reply::Error(text())),
        b':' => Ok(Reply::Int(number(rest)?)),
        b'$' => match number(rest)? {
            -1 => Ok(Reply::Bulk(None)),
            n if n < 0 || n as usize > MAX_BULK => Err(RedisError::Protocol("a bulk string over the bound")),
            n => {
                let mut data = vec![0; n as usize + 2];
                input.read_exact(&mut data).await?;
                if !data.ends_with(b"\r\n") {
                    return Err(RedisError::Protocol("a bulk string not ended by CRLF"));
                }
                data.truncate(n as usize);
                Ok(Reply::Bulk(Some(data)))
            }
        },
        b'*' => match number(rest)? {
            -1 => Ok(Reply::Array(None)),
            n if n < 0 || n as usize > MAX_ARRAY => Err(RedisError::Protocol("an array over the bound")),
            n => {
                let mut items = Vec::with_capacity((n as usize).min(1024));
                for _ in 0..n {
                    items.push(Box::pin(read_reply(input, depth + 1)).await?);
                }
                Ok(Reply::Array(Some(items)))
            }
        },
        _ => Err(RedisError::Protocol("an unknown reply type")),
    }
}

async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(input: &mut R) -> Result<Vec<u8>, RedisError> {
    let mut line = Vec::new();
    let mut limited = input.take(64 * 1024);
    limited.read_until(b'\n', &mut line).await?;
    if line.is_empty() {
        return Err(RedisError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    if !line.ends_with(b"\r\n") {
        return Err(RedisError::Protocol("a line not ended by CRLF (or over 64 KiB)"));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

fn number(digits: &[u8]) -> Result<i64, RedisError> {
    std::str::from_utf8(digits).ok().and_then(|s| s.parse().ok()).ok_or(RedisError::Protocol("not a number"))
}

#[cfg(test)]
#[path = "resp_tests.rs"]
mod tests;
