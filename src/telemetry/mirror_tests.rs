use super::*;
use crate::telemetry::capture::{FLOOD, assert_flood_limited};

#[test]
fn events_count_and_render_by_format() {
    let m = MirrorMetrics::default();
    Dropped { queue: "/queue/request/A" }.emit(&m);
    Copied { output: Output::Canonical, ok: true }.emit(&m);
    Copied { output: Output::Framework(Framework::Vox), ok: false }.emit(&m);
    let mut text = String::new();
    m.render(&mut text);
    assert!(text.contains("bridge_mirror_dropped_total 1\n"), "{text}");
    assert!(text.contains("bridge_mirror_tapped_total 1\n"), "{text}");
    assert!(text.contains("bridge_mirror_published_total{format=\"canonical\"} 1\n"), "{text}");
    assert!(text.contains("bridge_mirror_failed_total{format=\"vox\"} 1\n"), "{text}");
    assert_eq!((m.dropped(), m.published(Output::Canonical)), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_drops_logs_a_burst_and_counts_every_one() {
    let m = MirrorMetrics::default();
    assert_flood_limited("a copy was dropped", || {
        Dropped { queue: "/queue/request/A" }.emit(&m);
    })
    .await;
    assert_eq!(m.dropped(), FLOOD as u64 + 1);
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_copies_that_cannot_be_written_logs_a_burst_and_counts_every_one() {
    let m = MirrorMetrics::default();
    let failed = CopyFailed { output: Output::Canonical, queue: "/queue/request/A", error: "no sender" };
    assert_flood_limited("a copy could not be written", || failed.emit(&m)).await;
    let mut text = String::new();
    m.render(&mut text);
    let line = format!("bridge_mirror_failed_total{{format=\"canonical\"}} {}\n", FLOOD + 1);
    assert!(text.contains(&line), "{text}");
}
