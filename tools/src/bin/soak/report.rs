//! What the soak saw: the ledger of every message, the bridge's samples per process life, and
//! the report that judges them.

use bridge_tools::support::{BridgeProcess, ProcStats, gauges};
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

const MIB: f64 = 1024.0 * 1024.0;
/// How much the live heap's floor may rise within one process life before the run fails: a
/// leak of 100 bytes a message at 100 msg/s passes it in under two minutes.
const HEAP_GROWTH_MIB: f64 = 1.0;

/// What each message of the run became. A token is written into every body and every answer.
#[derive(Default)]
pub struct Ledger {
    /// Confirmed by the broker: token → what it is.
    pub sent: BTreeMap<String, Kind>,
    /// Asks seen by the agent they were for.
    pub delivered: HashMap<String, u32>,
    /// Answers seen by the asker.
    pub answered: HashMap<String, u32>,
    /// Asks answered by the error answer of a stream the bridge gave up on: one a `kill -9`
    /// cut, or one older than `stream_max_wait_ms` (counted in `answered` too).
    pub cut_streams: HashSet<String>,
    /// Dead letters: token → the bridge's error kinds.
    pub dead: HashMap<String, Vec<String>>,
    /// Messages the soak cannot account for: tokens it never sent, messages with no token
    /// (must stay empty).
    pub strangers: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A well-formed ask: must reach its agent, and its answer the asker.
    Ask,
    /// A malformed body: must be dead-lettered with a reason.
    Malformed,
}

/// One bridge process's life: its samples.
pub struct Life {
    pub pid: u32,
    pub samples: Vec<Sample>,
    pub end: &'static str,
}

/// What the bridge looked like at one moment of the run.
pub struct Sample {
    /// Seconds into the run.
    pub at: f64,
    pub proc: ProcStats,
    /// Asks waiting for their answer in the correlation table (`bridge_pending_asks`).
    pub pending: f64,
    /// Messages received and not yet acknowledged (`bridge_unacknowledged`).
    pub unacked: f64,
    /// Bytes allocated and not freed (`bridge_heap_bytes`), MiB.
    pub heap_mib: f64,
}

impl Sample {
    /// One line on stderr, `now` seconds into the run.
    pub fn log(&self, now: f64) {
        let (p, s) = (&self.proc, self);
        eprintln!(
            "[soak] {now:6.0} s: bridge RSS {:.1} MiB (anonymous {:.1}, files {:.1}), live heap {:.2} MiB, fds {}, pending asks {}, unacknowledged {}",
            p.rss_mib, p.anon_mib, p.file_mib, s.heap_mib, p.fds, s.pending, s.unacked
        );
    }

    pub fn of(bridge: &BridgeProcess, http_port: u16, at: f64) -> Sample {
        let [pending, unacked, heap] =
            gauges(http_port, ["bridge_pending_asks", "bridge_unacknowledged", "bridge_heap_bytes"]);
        Sample {
            at,
            proc: bridge.stats(),
            pending: pending.unwrap_or(f64::NAN),
            unacked: unacked.unwrap_or(f64::NAN),
            heap_mib: heap.map_or(f64::NAN, |b| b / MIB),
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Tokens not yet accounted for: an ask without its delivery or answer, a malformed body not
/// dead-lettered.
pub fn unaccounted(l: &Ledger) -> Vec<&str> {
    l.sent
        .iter()
        .filter(|(t, kind)| match kind {
            Kind::Ask => !(l.delivered.contains_key(*t) && l.answered.contains_key(*t)),
            Kind::Malformed => !l.dead.contains_key(*t),
        })
        .map(|(t, _)| t.as_str())
        .collect()
}

/// Prints the figures; true when the run failed.
pub fn report(l: &Ledger, produced: u64, lives: &[Life], took: Duration) -> bool {
    let asks = l.sent.values().filter(|k| **k == Kind::Ask).count();
    let malformed = l.sent.len() - asks;
    let open = unaccounted(l);
    let dup = |m: &HashMap<String, u32>| m.values().filter(|n| **n > 1).count();
    let wrongly_dead: Vec<&String> =
        l.dead.keys().filter(|t| l.sent.get(*t) == Some(&Kind::Ask) || !l.sent.contains_key(*t)).collect();
    let no_reason = l.dead.values().filter(|kinds| kinds.iter().any(String::is_empty)).count();
    // "wa/yaml": 45 — the malformed Wise Agents bodies were dead-lettered with kind yaml.
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for (t, ks) in &l.dead {
        let source = t.strip_prefix("soak-bad-").and_then(|r| r.split('-').next()).unwrap_or("well-formed");
        for k in ks {
            *kinds.entry(format!("{source}/{k}")).or_default() += 1;
        }
    }
    println!(
        "\nsoak: {:.1} min, {produced} messages sent and confirmed by the broker",
        took.as_secs_f64() / 60.0
    );
    println!("  asks {asks}: delivered to their agent {}, answered {}", l.delivered.len(), l.answered.len());
    println!(
        "  of which answered with the error answer of a stream given up on (cut by kill -9, or too old): {} {:?}",
        l.cut_streams.len(),
        l.cut_streams.iter().take(10).collect::<Vec<_>>()
    );
    println!(
        "  duplicates: {} asks delivered more than once, {} answers",
        dup(&l.delivered),
        dup(&l.answered)
    );
    println!(
        "  malformed {malformed}: dead-lettered {} (kinds {kinds:?})",
        l.dead.len() - wrongly_dead.len()
    );
    println!("  unaccounted for: {} {:?}", open.len(), open.iter().take(10).collect::<Vec<_>>());
    println!(
        "  well-formed or unknown messages dead-lettered: {} {:?}",
        wrongly_dead.len(),
        wrongly_dead.iter().take(10).collect::<Vec<_>>()
    );
    println!("  dead letters without a reason: {no_reason}; strangers: {}", l.strangers.len());
    for stranger in l.strangers.iter().take(10) {
        println!("    {stranger}");
    }
    let (mut fd_grew, mut heap_grew) = (false, false);
    for life in lives {
        let (fd, heap) = report_life(life);
        fd_grew |= fd;
        heap_grew |= heap;
    }
    println!(
        "{}",
        json!({"minutes": took.as_secs_f64() / 60.0, "sent": produced, "asks": asks, "malformed": malformed,
            "delivered": l.delivered.len(), "answered": l.answered.len(),
            "duplicate_deliveries": dup(&l.delivered), "duplicate_answers": dup(&l.answered),
            "dead_lettered": l.dead.len(), "dead_letter_kinds": kinds, "unaccounted": open.len(),
            "wrongly_dead_lettered": wrongly_dead.len(), "strangers": l.strangers.len(),
            "cut_streams": l.cut_streams.len(),
            "fd_growth": fd_grew, "heap_growth": heap_grew})
    );
    !open.is_empty()
        || !wrongly_dead.is_empty()
        || no_reason > 0
        || !l.strangers.is_empty()
        || fd_grew
        || heap_grew
}

/// Prints one process life's figures; (descriptors grew, the live heap's floor grew).
fn report_life(life: &Life) -> (bool, bool) {
    let after_warmup: Vec<&Sample> =
        life.samples.iter().filter(|s| s.at >= life.samples[0].at + 30.0).collect();
    if after_warmup.is_empty() {
        println!("  bridge pid {} ({}): lived under 30 s, no samples after its warm-up", life.pid, life.end);
        return (false, false);
    }
    let quarter = (after_warmup.len() / 4).max(1);
    let first = |f: fn(&Sample) -> f64| median(after_warmup.iter().take(quarter).map(|s| f(s)).collect());
    let last =
        |f: fn(&Sample) -> f64| median(after_warmup.iter().rev().take(quarter).map(|s| f(s)).collect());
    let max = |f: fn(&Sample) -> f64| after_warmup.iter().map(|s| f(s)).fold(0.0, f64::max);
    let fds: Vec<usize> = after_warmup.iter().map(|s| s.proc.fds).collect();
    let (fd_min, fd_max) = (fds.iter().min().copied().unwrap_or(0), fds.iter().max().copied().unwrap_or(0));
    let fd_last = fds.last().copied().unwrap_or(0);
    let fd_grew = fd_last > fd_min + 16;
    let span = life.samples.last().map(|s| s.at - life.samples[0].at).unwrap_or(0.0);
    println!("  bridge pid {} ({}, {} samples over {span:.0} s):", life.pid, life.end, life.samples.len());
    let row = |what: &str, unit: &str, f: fn(&Sample) -> f64| {
        println!(
            "    {what}: median of the first quarter {:.1}{unit}, of the last {:.1}{unit}, max {:.1}{unit}",
            first(f),
            last(f),
            max(f)
        )
    };
    row("RSS", " MiB", |s| s.proc.rss_mib);
    row("  anonymous (heap, stacks)", " MiB", |s| s.proc.anon_mib);
    row("  mapped files (code read so far)", " MiB", |s| s.proc.file_mib);
    row("live heap", " MiB", |s| s.heap_mib);
    row("pending asks", "", |s| s.pending);
    row("unacknowledged", "", |s| s.unacked);
    println!("    descriptors: min {fd_min} max {fd_max} last {fd_last}");
    // The floor, not the median: a sample taken in a catch-up burst holds that burst.
    let (early, late) = after_warmup.split_at(after_warmup.len() / 2);
    let floor = |half: &[&Sample]| half.iter().map(|s| s.heap_mib).fold(f64::INFINITY, f64::min);
    let (from, to) = (floor(early), floor(late));
    let heap_grew = if from.is_finite() && to.is_finite() {
        let grew = to - from > HEAP_GROWTH_MIB;
        println!(
            "    live heap floor: {from:.2} MiB in the first half, {to:.2} MiB in the second{}",
            if grew { format!(": GREW by more than {HEAP_GROWTH_MIB} MiB") } else { String::new() }
        );
        grew
    } else {
        println!("    live heap floor: not judged (too few samples, or no bridge_heap_bytes)");
        false
    };
    (fd_grew, heap_grew)
}
