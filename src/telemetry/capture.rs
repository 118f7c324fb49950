//! Tests' view of the log: what an event writes, as a terminal would show it, and what a flood
//! of it writes (tokio's clock paused).

use super::limit::{LOG_BURST, LOG_WINDOW};
use std::io::Write;
use std::sync::{Arc, Mutex};
use tracing_subscriber::fmt::MakeWriter;

/// The events of a flood.
pub const FLOOD: usize = 25;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// The lines `f` logs at `debug` and above, without time or colour.
pub fn logged(f: impl FnOnce()) -> String {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = captured.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// [`FLOOD`] events, then one more a window later (the clock must be paused): the flood logs
/// [`LOG_BURST`] lines that say `message`, and the later one says how many were left out.
pub async fn assert_flood_limited(message: &str, emit: impl Fn()) {
    let log = logged(|| (0..FLOOD).for_each(|_| emit()));
    let lines = log.lines().filter(|l| l.contains(message)).count();
    assert_eq!(lines, LOG_BURST as usize, "the burst of `{message}`, then nothing:\n{log}");
    tokio::time::advance(LOG_WINDOW).await;
    let later = logged(emit);
    let left_out = format!("left_out={}", FLOOD - LOG_BURST as usize);
    assert!(later.contains(message) && later.contains(&left_out), "{left_out} expected:\n{later}");
}
