//! The store's connections to Redis: a few kept open and reused, one per call at a time; a
//! call that finds Redis away, restarting or paused is tried again, with backoff, for as long
//! as its caller waits.

use crate::config::store::StoreConfig;
use crate::wise_registry::resp::{Connection, RedisError, Reply, Subscription};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Idle connections kept at most.
const KEPT: usize = 8;
/// The first wait before a call is tried again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

pub struct Pool {
    config: StoreConfig,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    pub fn new(config: StoreConfig) -> Self {
        Pool { config, idle: Mutex::new(Vec::new()) }
    }

    /// Where Redis is, for messages.
    pub fn address(&self) -> String {
        format!("{}:{}", self.config.host, self.config.port)
    }

    async fn open(&self) -> Result<Connection, RedisError> {
        let c = &self.config;
        let auth = c.password.as_deref().map(|p| (c.username.as_deref(), p));
        Connection::open(&c.host, c.port, auth, c.db).await
    }

    /// One call, once: on an idle connection, else a new one (dropped if the call fails).
    pub async fn call(&self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => self.open().await?,
        };
        let reply = conn.call(args).await?;
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < KEPT {
            idle.push(conn);
        }
        Ok(reply)
    }

    /// One call, tried again while Redis is unavailable, until `within` has passed (then the
    /// last error). An error reply of Redis's (a script's, a wrong type) is not tried again.
    pub async fn call_within(&self, args: &[&[u8]], within: Duration) -> Result<Reply, RedisError> {
        let deadline = Instant::now() + within;
        let mut wait = FIRST_BACKOFF;
        loop {
            match self.call(args).await {
                Ok(reply) => return Ok(reply),
                Err(e) if !unavailable(&e) || Instant::now() + wait >= deadline => return Err(e),
                Err(_) => {}
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_BACKOFF);
        }
    }

    /// One call as [`Pool::call_within`], waiting `a2a.store.wait_ms`.
    pub async fn call_waiting(&self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        self.call_within(args, Duration::from_millis(self.config.wait_ms)).await
    }

    /// A connection subscribed to `channels`.
    pub async fn subscribe(&self, channels: &[&[u8]]) -> Result<Subscription, RedisError> {
        self.open().await?.subscribe(channels).await
    }
}

/// Whether the same call may succeed later: Redis away or slow, or busy loading its data.
pub fn unavailable(e: &RedisError) -> bool {
    match e {
        RedisError::Server(message) => {
            ["LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN"].iter().any(|k| message.starts_with(k))
        }
        RedisError::Protocol(_) => false,
        RedisError::Connect { .. } | RedisError::Io(_) | RedisError::Timeout(_) => true,
    }
}
