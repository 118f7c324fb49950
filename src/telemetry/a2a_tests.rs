use super::*;
use crate::telemetry::capture::{FLOOD, assert_flood_limited};

fn rendered(m: &A2aMetrics) -> String {
    let mut text = String::new();
    m.render(&mut text);
    text
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_failed_tasks_logs_a_burst_and_counts_every_one() {
    let m = A2aMetrics::default();
    m.served.enable();
    let ended = TaskEnded { agent: "weather", task: "t", end: "failed", reason: Some("CANNOT_ANSWER") };
    assert_flood_limited("A2A task ended", || ended.emit(&m)).await;
    let line = format!("bridge_a2a_tasks_total{{end=\"failed\"}} {}\n", FLOOD + 1);
    assert!(rendered(&m).contains(&line), "{}", rendered(&m));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_tasks_in_the_default_context_logs_a_burst() {
    let m = A2aMetrics::default();
    let defaulted = DefaultContext { context: "c", reason: "the registry did not answer in time" };
    assert_flood_limited("asking in the default", || defaulted.emit(&m)).await;
}
