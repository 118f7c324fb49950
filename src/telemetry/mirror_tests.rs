use super::*;

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
