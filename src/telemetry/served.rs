//! What a service of the HTTP listener that asks on the broker (the A2A service, the MCP
//! server) lets an operator observe, the same for both: its requests by how they ended, those
//! waiting for their Wise Agents answer, answers that came for none waiting, and requests
//! refused for their token. Each service names its families.

use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// A service's metric families: name and help text of each.
pub struct Names {
    pub ended: (&'static str, &'static str),
    pub late: (&'static str, &'static str),
    pub unauthorized: (&'static str, &'static str),
    pub waiting: (&'static str, &'static str),
}

/// The counters and the gauge, rendered once the service runs; `N` ways a request ends.
#[derive(Debug)]
pub struct Served<const N: usize> {
    enabled: AtomicBool,
    waiting: AtomicI64,
    ended: [AtomicU64; N],
    late: AtomicU64,
    unauthorized: AtomicU64,
}

impl<const N: usize> Default for Served<N> {
    fn default() -> Self {
        Served {
            enabled: AtomicBool::new(false),
            waiting: AtomicI64::new(0),
            ended: std::array::from_fn(|_| AtomicU64::new(0)),
            late: AtomicU64::new(0),
            unauthorized: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Served<N> {
    /// The service runs: its families are rendered from now on.
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Whether the service runs (its families are rendered).
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn waiting(&self, delta: i64) {
        self.waiting.fetch_add(delta, Ordering::Relaxed);
    }

    pub fn unauthorized(&self) {
        self.unauthorized.fetch_add(1, Ordering::Relaxed);
    }

    /// A request ended as `ends[i]`.
    pub fn ended(&self, i: usize) {
        if let Some(n) = self.ended.get(i) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn late(&self) {
        self.late.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn render(&self, out: &mut String, names: &Names, ends: &[&str; N]) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let (name, help) = names.ended;
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n");
        for (end, n) in ends.iter().zip(&self.ended) {
            let _ = writeln!(out, "{name}{{end=\"{end}\"}} {}", n.load(Ordering::Relaxed));
        }
        for ((name, help), value) in [(names.late, &self.late), (names.unauthorized, &self.unauthorized)] {
            let value = value.load(Ordering::Relaxed);
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n");
        }
        let ((name, help), waiting) = (names.waiting, self.waiting.load(Ordering::Relaxed));
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {waiting}\n");
    }
}
