//! `bridge_heap_bytes` counts what is allocated and not freed, through every allocator path
//! (alloc, zeroed, realloc, free), with the daemon's counting allocator installed here too.

use stomp_agent_bridge::telemetry::Metrics;
use stomp_agent_bridge::telemetry::heap::{Counting, live_bytes};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1 << 20;
/// What the test harness's other threads may allocate or free meanwhile.
const SLACK: usize = MIB / 4;

fn live() -> usize {
    live_bytes().expect("the counting allocator is installed")
}

#[test]
fn the_live_heap_follows_allocations_growth_and_frees() {
    let before = live();
    let zeroed = vec![0u8; 8 * MIB];
    let mut grown: Vec<u8> = Vec::with_capacity(MIB);
    grown.resize(4 * MIB, 1); // realloc
    let held = live();
    assert!(held + SLACK >= before + 12 * MIB, "{before} -> {held}");
    assert!(
        held <= before + 12 * MIB + 2 * MIB + SLACK,
        "counted more than was allocated: {before} -> {held}"
    );
    drop((zeroed, grown));
    let after = live();
    assert!(after <= before + SLACK, "freed memory still counted: {before} -> {held} -> {after}");

    let text = Metrics::default().render();
    let gauge =
        text.lines().find_map(|l| l.strip_prefix("bridge_heap_bytes ")).expect("the gauge is rendered");
    let bytes: usize = gauge.parse().expect("a number");
    assert!(bytes > 0 && bytes < before + 4 * MIB, "{bytes}");
}
