use super::*;
use crate::telemetry::capture::{FLOOD, assert_flood_limited};

fn rendered(m: &McpMetrics) -> String {
    let mut text = String::new();
    m.render(&mut text);
    text
}

#[test]
fn nothing_is_rendered_until_the_server_runs() {
    let m = McpMetrics::default();
    m.served.waiting(1);
    assert_eq!(rendered(&m), "");
    m.served.enable();
    assert!(rendered(&m).contains("bridge_mcp_calls_waiting 1\n"), "{}", rendered(&m));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_failed_calls_logs_a_burst_and_counts_every_one() {
    let m = McpMetrics::default();
    m.served.enable();
    let ended = CallEnded { tool: "Weather", call: "mcp-1", end: "failed", reason: Some("CANNOT_ANSWER") };
    assert_flood_limited("MCP tool call ended", || ended.emit(&m)).await;
    let line = format!("bridge_mcp_calls_total{{end=\"failed\"}} {}\n", FLOOD + 1);
    assert!(rendered(&m).contains(&line), "{}", rendered(&m));
}
