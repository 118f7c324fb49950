//! Hostile Wise Agents bodies are refused in bounded memory: each invalid vector, and larger
//! versions of the classic attacks, measured with a counting allocator. (Their time is
//! measured by `cargo bench --bench translate`, which reports it per input.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const LIMIT: usize = 64 << 20;

/// Bytes allocated at the peak of `f`, above what was live before it.
fn peak_of(f: impl FnOnce()) -> usize {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

fn hostile_inputs() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/wiseagents");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| std::fs::read_to_string(p.with_extension("json")).unwrap().contains("\"valid\": false"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    let tag = "!wiseagents.WiseAgentMessage\n";
    out.push(("800 KB of [".into(), "[".repeat(800_000).into_bytes()));
    out.push((
        "_message: 800 KB of [".into(),
        format!("{tag}_message: {}", "[".repeat(800_000)).into_bytes(),
    ));
    out.push((
        "unknown key: 800 KB of {a: ".into(),
        format!("{tag}_message: hi\n_x: {}", "{a: ".repeat(200_000)).into_bytes(),
    ));
    out.push((
        "200,000 keys".into(),
        format!("{tag}{}", (0..200_000).map(|i| format!("k{i}: v\n")).collect::<String>()).into_bytes(),
    ));
    out.push((
        "alias chain".into(),
        format!("{tag}_message: &a hi\n{}", (0..10_000).map(|i| format!("k{i}: *a\n")).collect::<String>())
            .into_bytes(),
    ));
    out
}

#[test]
fn hostile_bodies_are_refused_within_64_mib() {
    let inputs = hostile_inputs();
    assert!(inputs.len() >= 9 + 5);
    for (name, body) in &inputs {
        let mut result = None;
        let peak = peak_of(|| result = Some(WiseMessage::parse(body)));
        let err = result.unwrap().expect_err(name);
        eprintln!("{name}: refused ({}) with a peak of {} KiB", err.kind(), peak / 1024);
        assert!(peak < LIMIT, "{name}: {peak} bytes");
    }
}
