//! Dead letters as an operator reads them: a table, or JSON lines for tools.

use super::{DeadLetter, ReplayOutcome};
use serde_json::{Value, json};
use std::fmt::Write;
use std::time::Duration;

/// One JSON object per dead letter; `full` adds every header and the body.
pub fn json_line(dl: &DeadLetter, now_ms: u64, full: bool) -> Value {
    let mut line = json!({
        "id": dl.id,
        "message_id": dl.message.ack.message_id,
        "kind": dl.kind(),
        "source": dl.source(),
        "error": dl.error(),
        "replays": dl.replays(),
        "timestamp_ms": dl.timestamp_ms(),
        "age_s": dl.age(now_ms).map(|a| a.as_secs()),
        "bytes": dl.message.body().len(),
    });
    if full {
        let headers: serde_json::Map<String, Value> =
            dl.message.frame.headers.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
        line["headers"] = Value::Object(headers);
        match std::str::from_utf8(dl.message.body()) {
            Ok(text) => line["body"] = Value::from(text),
            Err(_) => line["body_hex"] = Value::from(hex(dl.message.body())),
        }
    }
    line
}

/// A table with a header row; the error cut to fit a terminal line.
pub fn table(dls: &[&DeadLetter], now_ms: u64) -> String {
    let rows: Vec<[String; 6]> = dls
        .iter()
        .map(|dl| {
            let age = dl.age(now_ms).map_or_else(|| "-".to_owned(), short_age);
            let error: String = dl.error().chars().take(60).collect();
            [
                dl.id.clone(),
                age,
                dl.kind().to_owned(),
                dl.replays().to_string(),
                dl.source().to_owned(),
                error,
            ]
        })
        .collect();
    let head = ["ID", "AGE", "KIND", "REPLAYS", "SOURCE", "ERROR"].map(str::to_owned);
    let mut widths = head.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// Every header and the body, as `show` prints one dead letter.
pub fn detail(dl: &DeadLetter) -> String {
    let mut out = format!("id: {}\n", dl.id);
    for (name, value) in &dl.message.frame.headers {
        let _ = writeln!(out, "{name}: {value}");
    }
    match std::str::from_utf8(dl.message.body()) {
        Ok(text) => {
            let _ = writeln!(out, "\n{text}");
        }
        Err(_) => {
            let _ = writeln!(out, "\n(binary, {} bytes) {}", dl.message.body().len(), hex(dl.message.body()));
        }
    }
    out
}

/// One replay's outcome as a JSON line.
pub fn replay_line(dl: &DeadLetter, outcome: &ReplayOutcome) -> Value {
    let (to, replays) = match outcome {
        ReplayOutcome::Replayed { to, replays } | ReplayOutcome::WouldReplay { to, replays } => {
            (Some(to.as_str()), Some(*replays))
        }
        ReplayOutcome::NoDestination => (None, None),
    };
    json!({"id": dl.id, "kind": dl.kind(), "outcome": outcome.as_str(), "to": to, "replays": replays})
}

/// `45s`, `12m`, `3h`, `2d`.
pub fn short_age(age: Duration) -> String {
    match age.as_secs() {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
