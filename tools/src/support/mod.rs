//! What the load tool and the soak share: the brokers and connections to them ([`broker`]),
//! the frameworks' bodies ([`bodies`]), the bridge as a child process, and what /proc says
//! about a process.

pub mod bodies;
pub mod broker;

pub use broker::{Broker, unique, write_config};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::time::Duration;

/// The release (or debug) bridge beside the running tool's own binary.
pub fn sibling_bridge() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("stomp-agent-bridge")))
        .unwrap_or_else(|| "target/release/stomp-agent-bridge".into())
}

/// The bridge as a process, started with `run --config <config>`.
pub struct BridgeProcess {
    pub child: Child,
}

impl BridgeProcess {
    /// Starts the bridge and waits (up to a minute) for its `bridge ready` log line. Lines
    /// above INFO are echoed to stderr as `[bridge] …`; `quiet` drops WARN lines too (a soak's
    /// broker restarts make many).
    pub fn start(bin: &Path, config: &Path, quiet: bool) -> Result<BridgeProcess, String> {
        let mut child = Process::new(bin)
            .env_remove("RUST_LOG") // its `bridge ready` line is at info, whatever the tool logs
            .args(["run", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e} (cargo build --release first)", bin.display()))?;
        let logs = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(logs).lines().map_while(Result::ok) {
                if line.contains("bridge ready") {
                    let _ = tx.send(());
                    continue;
                }
                let routine = line.contains("\"INFO\"") || line.contains("\"DEBUG\"");
                if !(routine || quiet && line.contains("\"WARN\"")) {
                    eprintln!("[bridge] {line}");
                }
            }
        });
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.kill();
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            return Err(format!(
                "the bridge did not become ready within 60 s ({status}; config {})",
                config.display()
            ));
        }
        Ok(BridgeProcess { child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stats(&self) -> ProcStats {
        ProcStats::of(self.pid())
    }

    /// SIGTERM, then waits for the exit.
    pub fn stop(mut self) {
        terminate(&mut self.child);
    }

    /// SIGKILL: nothing is flushed, nothing is settled.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGTERM to a child, then waits for its exit.
pub fn terminate(child: &mut Child) {
    let _ = Process::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = child.wait();
}

/// A new folder under the system's temporary one, named by [`unique`].
pub fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(what));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A process's CPU time, memory and open descriptors, from /proc.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcStats {
    pub cpu_secs: f64,
    pub rss_mib: f64,
    /// The part of the RSS that is the process's own memory (heap, stacks): what a leak grows.
    pub anon_mib: f64,
    /// The part that is mapped files (the binary's code and the libraries' pages read so
    /// far): grows as new code paths first run, up to the binaries' size; shared and clean.
    pub file_mib: f64,
    pub peak_rss_mib: f64,
    pub fds: usize,
}

impl ProcStats {
    pub fn of(pid: u32) -> ProcStats {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or_default();
        let f: Vec<&str> = after.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat; after the command name, field 3 is first.
        let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kb = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0);
        ProcStats {
            cpu_secs: (ticks(11) + ticks(12)) as f64 / 100.0,
            rss_mib: kb("VmRSS:") / 1024.0,
            anon_mib: kb("RssAnon:") / 1024.0,
            file_mib: (kb("RssFile:") + kb("RssShmem:")) / 1024.0,
            peak_rss_mib: kb("VmHWM:") / 1024.0,
            fds,
        }
    }
}

/// A free TCP port on loopback, for the bridge's HTTP endpoint.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

/// The bridge's gauges named in `names`, read from its `/metrics` on `port`; a gauge the
/// bridge did not answer with (not up, or not yet set) reads as `None`.
pub fn gauges<const N: usize>(port: u16, names: [&str; N]) -> [Option<f64>; N] {
    use std::io::{Read, Write};
    let mut text = String::new();
    if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nhost: soak\r\nconnection: close\r\n\r\n");
        let _ = s.read_to_string(&mut text);
    }
    names.map(|name| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|v| v.trim().parse().ok())
    })
}
