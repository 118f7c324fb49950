use super::*;
use crate::telemetry::capture::{FLOOD, assert_flood_limited, logged};
use crate::telemetry::limit::LOG_BURST;

fn metrics() -> A2aCallMetrics {
    let m = A2aCallMetrics::default();
    m.agents(["weather"]);
    m
}

fn rendered(m: &A2aCallMetrics) -> String {
    let mut text = String::new();
    m.render(&mut text);
    text
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_retries_logs_a_burst_and_counts_every_one() {
    let m = metrics();
    let retried = CallRetried { agent: "weather", attempt: 1, backoff_ms: 100, error: "503" };
    assert_flood_limited("an A2A call failed; trying again", || retried.emit(&m)).await;
    let line = format!("bridge_a2a_call_retries_total{{agent=\"weather\"}} {}\n", FLOOD + 1);
    assert!(rendered(&m).contains(&line), "{}", rendered(&m));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_calls_without_an_answer_logs_a_burst_and_counts_every_one() {
    let m = metrics();
    let ended = CallEnded { agent: "weather", attempts: 3, reason: Some("unreachable") };
    assert_flood_limited("an A2A call got no answer", || ended.emit(&m)).await;
    let line = format!("bridge_a2a_calls_total{{agent=\"weather\",result=\"failed\"}} {}\n", FLOOD + 1);
    assert!(rendered(&m).contains(&line), "{}", rendered(&m));
}

/// The log itself, as an operator reads it: a storm of retries is ten lines, not a thousand.
#[tokio::test(start_paused = true)]
async fn the_log_of_a_storm_of_retries_holds_the_burst_and_the_count_left_out() {
    let m = metrics();
    let log = logged(|| {
        for attempt in 0..1000 {
            CallRetried { agent: "weather", attempt, backoff_ms: 100, error: "503" }.emit(&m);
        }
    });
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), LOG_BURST as usize, "{log}");
    assert!(lines.iter().all(|l| l.contains("WARN") && l.contains("left_out=0")), "{log}");
    assert!(lines[9].contains("attempt=9"), "the first ten are the ones logged: {log}");
    tokio::time::advance(crate::telemetry::limit::LOG_WINDOW).await;
    let later =
        logged(|| CallRetried { agent: "weather", attempt: 1000, backoff_ms: 100, error: "503" }.emit(&m));
    assert!(later.contains("attempt=1000") && later.contains("left_out=990"), "{later}");
    assert!(rendered(&m).contains("bridge_a2a_call_retries_total{agent=\"weather\"} 1001\n"));
}
