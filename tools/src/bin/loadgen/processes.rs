//! The bridge and the reference bridge as processes, each with its own configuration.

use bridge_tools::support::{self, BridgeProcess, Broker, unique};
use std::path::PathBuf;
use std::process::{Child, Command as Process, Stdio};
use stomp_agent_bridge::config::{AgentConfig, CivitasConfig};
use stomp_agent_bridge::envelope::codecs::Framework;

/// The bridge as a process, with its own configuration.
pub struct Bridge {
    process: BridgeProcess,
    _dir: PathBuf,
}

impl Bridge {
    /// The bridge proxying `agent` and `idle` more Civitas agents that nobody writes to.
    pub fn start(
        bin: &std::path::Path,
        broker: Broker,
        agent: &str,
        idle: usize,
        inbox: &str,
        ingress: &str,
    ) -> Bridge {
        let dir = support::temp_dir("load.bridge");
        let mut config = broker.bridge_config();
        config.protocols.civitas = Some(CivitasConfig::new(inbox, ingress));
        config.agents = std::iter::once(agent.to_owned())
            .chain((0..idle).map(|i| format!("{agent}Idle{i}")))
            .map(|name| AgentConfig::new(name, Framework::Civitas))
            .collect();
        config.delivery.dead_letter = format!("/queue/{}", unique("load.dead"));
        traces(&mut config.traces);
        let path = dir.join("bridge.toml");
        support::write_config(&path, &config);
        let process = BridgeProcess::start(bin, &path, false).unwrap_or_else(|e| panic!("{e}"));
        Bridge { process, _dir: dir }
    }

    /// `perf record` on the bridge until the returned child is interrupted, when `LOADGEN_PERF`
    /// names an output file, with the call graph `LOADGEN_PERF_CALL_GRAPH` names (docs/PERFORMANCE.md:
    /// how the profiles were taken).
    pub fn profile(&self) -> Option<Child> {
        let out = std::env::var("LOADGEN_PERF").ok()?;
        let pid = self.process.pid().to_string();
        // `fp` (frame pointers) by default; `dwarf` walks through the C library too.
        let graph = std::env::var("LOADGEN_PERF_CALL_GRAPH").unwrap_or_else(|_| "fp".into());
        Process::new("perf")
            .args(["record", "-F", "997", "--call-graph", &graph, "-o", &out, "-p", &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| eprintln!("[loadgen] cannot run perf: {e}"))
            .ok()
    }

    /// CPU seconds used so far (user + system).
    pub fn cpu_secs(&self) -> f64 {
        self.process.stats().cpu_secs
    }

    /// (peak RSS, current RSS) in MiB.
    pub fn rss_mib(&self) -> (f64, f64) {
        let s = self.process.stats();
        (s.peak_rss_mib, s.rss_mib)
    }

    pub fn stop(self) {
        self.process.stop();
    }
}

/// The reference bridge (tools/ref_bridge.py) as a process, proxying `agent`.
pub struct Reference {
    child: Child,
}

impl Reference {
    pub fn start(
        script: &std::path::Path,
        broker: Broker,
        agent: &str,
        inbox: &str,
        ingress: &str,
    ) -> Option<Reference> {
        if !script.exists() {
            eprintln!("[loadgen] no reference bridge at {}: run 6 skipped", script.display());
            return None;
        }
        let venv = std::env::var("SAB_VENV").unwrap_or_else(|_| ".venv".into());
        let (login, passcode) = broker.credentials();
        let (req, resp) = broker.prefixes();
        let port = broker.port().to_string();
        let mut child = Process::new(PathBuf::from(venv).join("bin/python"))
            .arg(script)
            .args(["--agents", agent, "--request-prefix", req, "--response-prefix", resp])
            .args([
                "--inbox",
                inbox,
                "--ingress",
                ingress,
                "--dead-letter",
                &format!("/queue/{}", unique("load.refdead")),
            ])
            .env("STOMP_PORT", port)
            .env("STOMP_USER", login)
            .env("STOMP_PASSWORD", passcode)
            .env("STOMP_VHOST", "/")
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| eprintln!("[loadgen] cannot start the reference bridge: {e}"))
            .ok()?;
        let stdout = child.stdout.take()?;
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
        if line.trim() != "ready" {
            eprintln!("[loadgen] the reference bridge did not start: {line:?}");
            let _ = child.kill();
            return None;
        }
        Some(Reference { child })
    }

    pub fn stats(&self) -> support::ProcStats {
        support::ProcStats::of(self.child.id())
    }

    pub fn stop(mut self) {
        support::terminate(&mut self.child);
    }
}

/// `LOADGEN_TRACES` (docs/PERFORMANCE.md, the cost of traces): `off` (no page, no export),
/// `page` (the default: the conversations page alone), `page=<N>` (the page keeping N
/// conversations), or `<OTLP endpoint>@<sampling ratio>` (`http://127.0.0.1:4318@0.01`: the
/// page and the export).
fn traces(config: &mut stomp_agent_bridge::config::traces::TracesConfig) {
    let Ok(mode) = std::env::var("LOADGEN_TRACES") else { return };
    match mode.split_once('@') {
        _ if mode == "off" => config.conversations = 0,
        _ if mode == "page" => {}
        _ if mode.starts_with("page=") => {
            let n = &mode["page=".len()..];
            config.conversations =
                n.parse().unwrap_or_else(|_| panic!("LOADGEN_TRACES: bad page size {n:?}"));
        }
        Some((endpoint, ratio)) => {
            config.endpoint = endpoint.to_owned();
            config.sampling_ratio =
                ratio.parse().unwrap_or_else(|_| panic!("LOADGEN_TRACES: bad ratio {ratio:?}"));
        }
        None => panic!("LOADGEN_TRACES: {mode:?} is not off, page, page=<N> or <endpoint>@<ratio>"),
    }
}
