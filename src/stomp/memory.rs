//! In-process brokers, `stomp+memory://<name>`: a listener registered under a name and the
//! client's connections to it as in-memory pipes, with no socket. For tests that run the
//! bridge under tokio's paused clock: with a socket, the paused clock advances past a receipt
//! timeout while the peer's answer waits in the kernel to be read; a pipe wakes its reader at
//! once, so the clock advances only when nothing at all can run.

use super::session::SessionError;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tokio::io::DuplexStream;
use tokio::sync::mpsc;

/// How many bytes a pipe holds before its writer waits for its reader.
const PIPE_BYTES: usize = 256 * 1024;

type Registry = Mutex<HashMap<String, mpsc::UnboundedSender<DuplexStream>>>;

fn registry() -> &'static Registry {
    static LISTENERS: OnceLock<Registry> = OnceLock::new();
    LISTENERS.get_or_init(Registry::default)
}

/// The broker's end: the connections made to its name, in order.
pub struct Listener {
    name: String,
    /// Its own entry in the registry, told apart from a later listener of the same name.
    entry: mpsc::UnboundedSender<DuplexStream>,
    accepted: tokio::sync::Mutex<mpsc::UnboundedReceiver<DuplexStream>>,
}

impl Listener {
    /// Listens under `name` (replacing an earlier listener of that name).
    pub fn bind(name: &str) -> Listener {
        let (tx, rx) = mpsc::unbounded_channel();
        registry().lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_owned(), tx.clone());
        Listener { name: name.to_owned(), entry: tx, accepted: tokio::sync::Mutex::new(rx) }
    }

    /// The next connection made to this name.
    pub async fn accept(&self) -> Option<DuplexStream> {
        self.accepted.lock().await.recv().await
    }

    /// The URL a client connects to it with.
    pub fn url(&self) -> String {
        format!("stomp+memory://{}", self.name)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut listeners = registry().lock().unwrap_or_else(|e| e.into_inner());
        if listeners.get(&self.name).is_some_and(|tx| tx.same_channel(&self.entry)) {
            listeners.remove(&self.name);
        }
    }
}

/// A client's connection to the listener named `name`.
pub(super) fn connect(name: &str) -> Result<DuplexStream, SessionError> {
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    let listeners = registry().lock().unwrap_or_else(|e| e.into_inner());
    let refused = || SessionError::Connect {
        addr: format!("memory:{name}"),
        source: std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "no in-process broker by that name",
        ),
    };
    let listener = listeners.get(name).ok_or_else(refused)?;
    listener.send(theirs).map_err(|_| refused())?;
    Ok(ours)
}
