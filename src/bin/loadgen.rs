//! loadgen: the whole path measured against the broker's own ceiling, in one run.
//!
//!   cargo run --release --bin loadgen -- [--broker activemq|rabbitmq|artemis] [--messages N]
//!                                        [--backlog N] [--bridge PATH] [--one-hop-only]
//!                                        [--agents N] [--reference SCRIPT]
//!   (SAB_ACTIVEMQ_PORT / SAB_RABBITMQ_PORT / SAB_ARTEMIS_PORT: another instance's STOMP port)
//!
//! Against a local broker (`scripts/brokers.sh start`), with persistent Wise Agents YAML bodies:
//! 1. one hop: producer → queue → consumer, the broker's pass-through;
//! 2. two hops: producer → queue → an idle forwarder (the bridge's settlement engine, no
//!    translation) → queue → consumer, what any bridge costs the broker;
//! 3. the bridge (the release binary as a process), Wise Agents → Civitas;
//! 4. the bridge, Civitas replies → Wise Agents;
//! 5. the bridge with `--agents` proxied agents configured (default 20), one of them busy,
//!    Wise Agents → Civitas: what a busy queue gets of the budget beside idle ones;
//! 6. a reference bridge of the user's kind (`--reference`, default tools/ref_bridge.py, a
//!    stomp.py script that confirms each SEND then acks its source, prefetch 256 per
//!    subscription; run with `$SAB_VENV/bin/python`, default .venv), Wise Agents → Civitas;
//!
//! then end-to-end latency at half the bridge's peak rate (one hop and bridge), the bridge's
//! CPU-seconds per 10,000 messages and peak RSS, and its RSS while it drains a backlog of
//! `--backlog` messages that were waiting before it started. Prints a Markdown table and one
//! JSON line. docs/PERFORMANCE.md explains the method. `LOADGEN_PERF=FILE` records a `perf`
//! profile of the bridge during runs 3 and 4; `RUST_LOG=stomp_agent_bridge::bridge::settle=debug`
//! shows the forwarder's batches (size, and how long their SENDs and COMMIT took).

mod support;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use stomp_agent_bridge::bridge::delivery::{Delivery, Outcome, Work};
use stomp_agent_bridge::bridge::settle::{Attempts, Mode, Settler, next_batch};
use stomp_agent_bridge::config::DeliveryMode;
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
use stomp_agent_bridge::stomp::{AckMode, Client, ClientConfig, Command, Event, Events, Frame, Subscription};
use support::BridgeProcess;

#[derive(Clone, Copy, PartialEq)]
enum Broker {
    ActiveMq,
    RabbitMq,
    Artemis,
}

impl Broker {
    /// The broker of `scripts/brokers.sh`, or another instance's port from `SAB_ACTIVEMQ_PORT`
    /// / `SAB_RABBITMQ_PORT` / `SAB_ARTEMIS_PORT` (as the tests read them).
    fn url(self) -> String {
        let (var, port) = match self {
            Broker::ActiveMq => ("SAB_ACTIVEMQ_PORT", 61613),
            Broker::RabbitMq => ("SAB_RABBITMQ_PORT", 61623),
            Broker::Artemis => ("SAB_ARTEMIS_PORT", 61633),
        };
        let port = std::env::var(var).ok().and_then(|p| p.parse::<u16>().ok()).unwrap_or(port);
        format!("stomp://127.0.0.1:{port}")
    }
    fn credentials(self) -> (&'static str, &'static str) {
        match self {
            Broker::ActiveMq | Broker::Artemis => ("admin", "admin"),
            Broker::RabbitMq => ("guest", "guest"),
        }
    }
    /// Wise Agents' queue prefixes as this broker allows them.
    fn prefixes(self) -> (&'static str, &'static str) {
        match self {
            Broker::ActiveMq | Broker::Artemis => ("/queue/request/", "/queue/response/"),
            Broker::RabbitMq => ("/queue/request.", "/queue/response."),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Broker::ActiveMq => "ActiveMQ Classic",
            Broker::RabbitMq => "RabbitMQ",
            Broker::Artemis => "ActiveMQ Artemis",
        }
    }
}

struct Args {
    broker: Broker,
    /// Only the one-hop rate, on a plain queue and on a Wise Agents request queue (which a
    /// mirror tap copies): the broker-side cost of mirror mode.
    one_hop_only: bool,
    messages: usize,
    backlog: usize,
    bridge: PathBuf,
    /// Proxied agents configured for run 5 (0: skip it).
    agents: usize,
    /// The reference bridge's script for run 6 (skipped when it does not exist).
    reference: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        broker: Broker::ActiveMq,
        one_hop_only: false,
        messages: 20_000,
        backlog: 100_000,
        bridge: support::sibling_bridge(),
        agents: 20,
        reference: "tools/ref_bridge.py".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--broker" => {
                a.broker = match value()?.as_str() {
                    "activemq" => Broker::ActiveMq,
                    "rabbitmq" => Broker::RabbitMq,
                    "artemis" => Broker::Artemis,
                    other => return Err(format!("unknown broker {other:?}")),
                }
            }
            "--messages" => a.messages = value()?.parse().map_err(|e| format!("--messages: {e}"))?,
            "--backlog" => a.backlog = value()?.parse().map_err(|e| format!("--backlog: {e}"))?,
            "--bridge" => a.bridge = value()?.into(),
            "--agents" => a.agents = value()?.parse().map_err(|e| format!("--agents: {e}"))?,
            "--reference" => a.reference = value()?.into(),
            "--one-hop-only" => a.one_hop_only = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

fn now_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos()
}

/// The send time written into a body as `t=<unix nanos>;`, read back from any format.
fn stamp_of(body: &[u8]) -> Option<u128> {
    let at = body.windows(2).position(|w| w == b"t=")? + 2;
    let digits: Vec<u8> = body[at..].iter().copied().take_while(u8::is_ascii_digit).collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// A Wise Agents request as Wise Agents writes it (about 390 bytes on the wire).
fn wise_body(i: usize) -> Bytes {
    WiseMessage {
        message: format!(
            "{{\"city\": \"Paris\", \"units\": \"metric\", \"n\": {i}, \"at\": \"t={};\"}}",
            now_nanos()
        ),
        message_type: Some(Intent::Query),
        sender: Some("LoadCaller".into()),
        tool_id: Some(format!("call_{i:08}")),
        route_response_to: Some("LoadCaller".into()),
        context_name: Some("default".into()),
        extra: vec![],
    }
    .to_yaml()
    .into()
}

/// A Civitas reply to the caller, as Civitas's `to_dict()` writes it in JSON.
fn civitas_reply(i: usize) -> Bytes {
    serde_json::json!({
        "schema_version": 1, "id": uuid::Uuid::now_v7().to_string(), "type": "reply",
        "sender": "LoadAgent", "recipient": "LoadCaller", "correlation_id": null, "reply_to": null,
        "payload": {"message": format!("sunny, 21 C (n={i}, t={};)", now_nanos())},
        "timestamp": 1.8e9, "trace_id": "", "span_id": "", "parent_span_id": null,
        "attempt": 0, "priority": 0, "ttl": null, "seq": null
    })
    .to_string()
    .into()
}

async fn connect(broker: Broker) -> (Client, Events) {
    let (login, passcode) = broker.credentials();
    let mut c =
        ClientConfig::new(broker.url().parse().expect("url"), Some(login.into()), Some(passcode.into()));
    c.max_buffered = 1 << 20;
    c.event_capacity = 1 << 16;
    c.receipt_timeout = Duration::from_secs(30);
    Client::connect(c).await.unwrap_or_else(|e| panic!("cannot reach {}: {e}", broker.name()))
}

fn unique(what: &str) -> String {
    format!("sab.load.{what}.{}.{}", std::process::id(), now_nanos() % 1_000_000_000)
}

/// Sends `n` persistent bodies, paced at `rate` msg/s when given.
async fn produce(client: &Client, dest: &str, n: usize, rate: Option<f64>, body: fn(usize) -> Bytes) {
    let start = Instant::now();
    for i in 0..n {
        if let Some(rate) = rate {
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        }
        let frame =
            Frame::new(Command::Send).with("destination", dest).with("persistent", "true").with_body(body(i));
        let frame = if i + 1 == n { client.send_confirmed(frame).await } else { client.send(frame).await };
        frame.expect("send");
    }
}

/// What a consumer saw: when the first and last message came, and each one's latency.
struct Received {
    last: Instant,
    latencies: Vec<Duration>,
}

async fn consume(events: &mut Events, n: usize, deadline: Duration) -> Received {
    let mut latencies = Vec::with_capacity(n);
    let until = Instant::now() + deadline;
    while latencies.len() < n {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(Some(m)) = tokio::time::timeout(left, events.next_message()).await else {
            panic!("only {} of {n} messages arrived within {deadline:?}", latencies.len());
        };
        let sent = stamp_of(m.body()).unwrap_or_else(now_nanos);
        latencies.push(Duration::from_nanos(now_nanos().saturating_sub(sent) as u64));
    }
    Received { last: Instant::now(), latencies }
}

/// Artemis reads `activemq.prefetchSize` as a window in BYTES, so that alone it lets one
/// message through at a time; like the bridge (src/bridge/run.rs), `consumer-window-size`
/// gives it this many bytes per prefetched message.
const ARTEMIS_WINDOW_PER_MESSAGE: usize = 2048;

/// A consumer that acknowledges automatically, 5,000 messages ahead on every broker (on
/// Artemis, an unbounded window: `-1`).
fn sink_subscription(sink: &str) -> Subscription {
    Subscription::new(sink, AckMode::Auto)
        .with("activemq.prefetchSize", "5000")
        .with("prefetch-count", "5000")
        .with("consumer-window-size", "-1")
}

/// One timed run: a consumer on `sink`, `n` bodies produced into `source`.
async fn run_path(
    broker: Broker,
    source: &str,
    sink: &str,
    n: usize,
    rate: Option<f64>,
    body: fn(usize) -> Bytes,
) -> (f64, Vec<Duration>) {
    let (consumer, mut events) = connect(broker).await;
    consumer.subscribe(sink_subscription(sink)).await.expect("subscribe");
    let (producer, _) = connect(broker).await;
    let start = Instant::now();
    let sending = produce(&producer, source, n, rate, body);
    let (_, received) = tokio::join!(sending, consume(&mut events, n, Duration::from_secs(600)));
    let _ = producer.disconnect().await;
    let _ = consumer.disconnect().await;
    let secs = received.last.duration_since(start).as_secs_f64();
    (n as f64 / secs, received.latencies)
}

/// Artemis's core bridge of scripts/brokers/artemis.properties: from this queue to that address.
const CORE_SOURCE: &str = "/queue/loadgen-core-source";
const CORE_TARGET: &str = "/queue/loadgen-core-target";

/// Run 2b, Artemis only: its own core bridge moving the messages between two queues inside the
/// broker, the second two-hop limit. A probe first, which also drains what an earlier run left
/// on the target; `None` when the probe does not come through (an instance started before the
/// bridge was configured: `scripts/brokers.sh restart artemis`).
async fn core_bridge(broker: Broker, n: usize) -> Option<f64> {
    let (consumer, mut events) = connect(broker).await;
    consumer.subscribe(sink_subscription(CORE_TARGET)).await.expect("subscribe");
    let (producer, _) = connect(broker).await;
    let probe = unique("core.probe");
    let frame =
        Frame::new(Command::Send).with("destination", CORE_SOURCE).with_body(Bytes::from(probe.clone()));
    producer.send_confirmed(frame).await.expect("send");
    let _ = producer.disconnect().await;
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    let came = loop {
        match tokio::time::timeout_at(until, events.next_message()).await {
            Ok(Some(m)) if m.body() == probe.as_bytes() => break true,
            Ok(Some(_)) => continue, // left over from an earlier run
            _ => break false,
        }
    };
    let _ = consumer.disconnect().await;
    if !came {
        eprintln!(
            "[loadgen] no core bridge from {CORE_SOURCE} to {CORE_TARGET} on this Artemis: run 2b skipped"
        );
        return None;
    }
    let (rate, _) = run_path(broker, CORE_SOURCE, CORE_TARGET, n, None, wise_body).await;
    eprintln!("[loadgen] two hops (Artemis core bridge): {rate:.0} msg/s");
    Some(rate)
}

/// The idle forwarder: the bridge's settlement engine moving bytes from `from` to `to`, with
/// the prefetch the bridge's busy subscription gets in the configuration `Bridge` writes (the
/// default `in_flight` shared by three subscriptions).
async fn forward(
    broker: Broker,
    from: String,
    to: String,
    subscribed: tokio::sync::oneshot::Sender<()>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let (client, mut events) = connect(broker).await;
    let mode = Mode::choose(match std::env::var("BRIDGE__DELIVERY__MODE").as_deref() {
        Ok("transaction") => DeliveryMode::Transaction,
        _ => DeliveryMode::Auto,
    });
    // As the bridge: in confirm mode the SENDs on a connection of their own and the whole
    // budget as prefetch; in transaction mode one connection and a third of it.
    let in_flight = stomp_agent_bridge::config::DeliveryConfig::default().in_flight;
    let (publisher, prefetch) = match mode {
        Mode::Confirm => (connect(broker).await.0, in_flight.to_string()),
        Mode::Transaction => (client.clone(), (in_flight / 3).to_string()),
    };
    let window = (prefetch.parse::<usize>().unwrap_or(1) * ARTEMIS_WINDOW_PER_MESSAGE).to_string();
    let sub = Subscription::new(&from, AckMode::ClientIndividual)
        .with("activemq.prefetchSize", prefetch.as_str())
        .with("prefetch-count", prefetch.as_str())
        .with("consumer-window-size", window);
    client.subscribe(sub).await.expect("subscribe");
    let _ = subscribed.send(());
    let mut settler =
        Settler::new(publisher.clone(), client.clone(), Default::default(), mode, Duration::from_secs(30));
    let (dropped, _keep) = tokio::sync::mpsc::unbounded_channel();
    let mut ready = VecDeque::new();
    let mut batches = FuturesUnordered::new();
    let attempts = Attempts::default();
    let mut tally = stomp_agent_bridge::bridge::delivery::Tally::default();
    // The bridge's own settings (and the same environment overrides), so that the forwarder
    // is the bridge with nothing to translate.
    let defaults = stomp_agent_bridge::config::DeliveryConfig::default();
    let setting = |key: &str, default: usize| {
        std::env::var(format!("BRIDGE__DELIVERY__{key}")).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let window = setting("BATCHES_IN_FLIGHT", defaults.batches_in_flight);
    let batch_max = setting("BATCH_MAX", defaults.batch_max);
    tokio::pin!(stop);
    loop {
        while batches.len() < window && !ready.is_empty() {
            let batch = next_batch(&mut ready, &attempts, batch_max);
            batches.push(settler.start(batch).await);
        }
        tokio::select! {
            _ = &mut stop => break,
            Some(done) = batches.next(), if !batches.is_empty() => {
                assert!(done.result.is_ok(), "forwarder batch failed: {:?}", done.result.err());
                for w in done.works { w.source.settle(stomp_agent_bridge::bridge::delivery::Settled::Acked, &mut tally); }
            }
            Some(Event::Message(m)) = events.recv() => {
                let frame = Frame::new(Command::Send).with("destination", to.as_str()).with("persistent", "true").with_body(m.frame.body.clone());
                let outcome = Outcome::Delivered { route: "forward".into(), destination: to.clone(), correlated: false, unmatched_reply: false, ask: None };
                ready.push_back(Work { source: Delivery::new(m, dropped.clone()), stream: None, publish: vec![frame], outcome });
            }
        }
    }
    let _ = client.disconnect().await;
    let _ = publisher.disconnect().await;
}

/// The bridge as a process, with its own configuration.
struct Bridge {
    process: BridgeProcess,
    _dir: PathBuf,
}

impl Bridge {
    /// The bridge proxying `agent` and `idle` more Civitas agents that nobody writes to.
    fn start(
        bin: &std::path::Path,
        broker: Broker,
        agent: &str,
        idle: usize,
        inbox: &str,
        ingress: &str,
    ) -> Bridge {
        let dir = std::env::temp_dir().join(unique("bridge"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (login, passcode) = broker.credentials();
        let (req, resp) = broker.prefixes();
        let agents: String = std::iter::once(agent.to_owned())
            .chain((0..idle).map(|i| format!("{agent}Idle{i}")))
            .map(|name| format!("[[agents]]\nname = \"{name}\"\nprotocol = \"civitas\"\n\n"))
            .collect();
        let config = format!(
            "[broker]\nurl = \"{}\"\nlogin = \"{login}\"\npasscode = \"{passcode}\"\n\n\
             [wiseagents]\nrequest_prefix = \"{req}\"\nresponse_prefix = \"{resp}\"\n\n\
             [protocols.civitas]\ninbox = \"{inbox}\"\ningress = \"{ingress}\"\n\n{agents}\
             [delivery]\ndead_letter = \"/queue/{}\"\n\n[http]\nlisten = \"\"\n\n[log]\nformat = \"json\"\nlevel = \"info\"\n",
            broker.url(),
            unique("dead")
        );
        let path = dir.join("bridge.toml");
        std::fs::write(&path, config).expect("config");
        let process = BridgeProcess::start(bin, &path, false).unwrap_or_else(|e| panic!("{e}"));
        Bridge { process, _dir: dir }
    }

    /// `perf record` on the bridge until the returned child is interrupted, when `LOADGEN_PERF`
    /// names an output file (docs/PERFORMANCE.md: how the profiles were taken).
    fn profile(&self) -> Option<Child> {
        let out = std::env::var("LOADGEN_PERF").ok()?;
        let pid = self.process.pid().to_string();
        Process::new("perf")
            .args(["record", "-F", "997", "-g", "-o", &out, "-p", &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| eprintln!("[loadgen] cannot run perf: {e}"))
            .ok()
    }

    /// CPU seconds used so far (user + system).
    fn cpu_secs(&self) -> f64 {
        self.process.stats().cpu_secs
    }

    /// (peak RSS, current RSS) in MiB.
    fn rss_mib(&self) -> (f64, f64) {
        let s = self.process.stats();
        (s.peak_rss_mib, s.rss_mib)
    }

    fn stop(self) {
        self.process.stop();
    }
}

/// The reference bridge (tools/ref_bridge.py) as a process, proxying `agent`.
struct Reference {
    child: Child,
}

impl Reference {
    fn start(
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
        let port = broker.url().rsplit(':').next().unwrap_or_default().to_owned();
        let mut child = Process::new(PathBuf::from(venv).join("bin/python"))
            .arg(script)
            .args(["--agents", agent, "--request-prefix", req, "--response-prefix", resp])
            .args([
                "--inbox",
                inbox,
                "--ingress",
                ingress,
                "--dead-letter",
                &format!("/queue/{}", unique("refdead")),
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

    fn stats(&self) -> support::ProcStats {
        support::ProcStats::of(self.child.id())
    }

    fn stop(mut self) {
        let _ = Process::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// Run 5: the bridge with `agents` proxied agents configured, one busy; its rate.
async fn many_agents(args: &Args, inbox_pattern: &str, ingress: &str) -> Option<f64> {
    if args.agents < 2 {
        return None;
    }
    let (b, (req, _)) = (args.broker, args.broker.prefixes());
    let agent = format!("LoadMany{}", std::process::id());
    let inbox = inbox_pattern.replace("{agent}", &agent);
    let bridge = Bridge::start(&args.bridge, b, &agent, args.agents - 1, inbox_pattern, ingress);
    let (rate, _) = run_path(b, &format!("{req}{agent}"), &inbox, args.messages, None, wise_body).await;
    bridge.stop();
    eprintln!(
        "[loadgen] bridge with {} agents configured, one busy, WA -> Civitas: {rate:.0} msg/s",
        args.agents
    );
    Some(rate)
}

/// Run 6: the reference bridge, Wise Agents → Civitas: its rate, CPU s per 10,000 and peak RSS.
async fn reference(args: &Args, inbox_pattern: &str, ingress: &str) -> Option<(f64, f64, f64)> {
    let (b, (req, _)) = (args.broker, args.broker.prefixes());
    let agent = format!("LoadRef{}", std::process::id());
    let inbox = inbox_pattern.replace("{agent}", &agent);
    let script = Reference::start(&args.reference, b, &agent, &inbox, ingress)?;
    let cpu0 = script.stats().cpu_secs;
    let (rate, _) = run_path(b, &format!("{req}{agent}"), &inbox, args.messages, None, wise_body).await;
    let stats = script.stats();
    script.stop();
    let cpu = (stats.cpu_secs - cpu0) / args.messages as f64 * 10_000.0;
    eprintln!("[loadgen] reference bridge (stomp.py), WA -> Civitas: {rate:.0} msg/s");
    Some((rate, cpu, stats.peak_rss_mib))
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

fn latency(mut l: Vec<Duration>) -> [f64; 3] {
    l.sort();
    [percentile(&l, 0.5), percentile(&l, 0.99), percentile(&l, 0.999)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(2);
        }
    };
    // RUST_LOG=stomp_agent_bridge::bridge::settle=debug shows the forwarder's batches.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let b = args.broker;
    let n = args.messages;
    let (req, resp) = b.prefixes();
    eprintln!("[loadgen] {} , {n} persistent messages per run", b.name());

    // A warm-up, so that the broker's JIT and caches are what they are in the runs that count.
    let q = format!("/queue/{}", unique("warmup"));
    let _ = run_path(b, &q, &q, n.min(5000), None, wise_body).await;
    let q = format!("/queue/{}", unique("onehop"));
    let (one_hop, _) = run_path(b, &q, &q, n, None, wise_body).await;
    eprintln!("[loadgen] one hop: {one_hop:.0} msg/s");
    if args.one_hop_only {
        let q = format!("{req}LoadOneHop{}", std::process::id());
        let (tapped, _) = run_path(b, &q, &q, n, None, wise_body).await;
        eprintln!("[loadgen] one hop on {q}: {tapped:.0} msg/s");
        println!(
            "{}",
            serde_json::json!({"broker": b.name(), "messages": n, "one_hop": one_hop, "one_hop_request_queue": tapped})
        );
        return;
    }

    let (q1, q2) = (format!("/queue/{}", unique("hop1")), format!("/queue/{}", unique("hop2")));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let (subscribed_tx, subscribed) = tokio::sync::oneshot::channel();
    let forwarder = tokio::spawn(forward(b, q1.clone(), q2.clone(), subscribed_tx, stop_rx));
    subscribed.await.expect("the forwarder subscribed");
    let (two_hop, _) = run_path(b, &q1, &q2, n, None, wise_body).await;
    let _ = stop_tx.send(());
    let _ = forwarder.await;
    eprintln!("[loadgen] two hops (idle forwarder): {two_hop:.0} msg/s");
    let core = if b == Broker::Artemis { core_bridge(b, n).await } else { None };

    let agent = format!("LoadAgent{}", std::process::id());
    let inbox_pattern = format!("/queue/{}.{{agent}}", unique("civitas.in"));
    let inbox = inbox_pattern.replace("{agent}", &agent);
    let ingress = format!("/queue/{}", unique("civitas.ingress"));
    let bridge = Bridge::start(&args.bridge, b, &agent, 0, &inbox_pattern, &ingress);
    let perf = bridge.profile();
    let cpu0 = bridge.cpu_secs();
    let (wa_civ, _) = run_path(b, &format!("{req}{agent}"), &inbox, n, None, wise_body).await;
    eprintln!("[loadgen] bridge WA -> Civitas: {wa_civ:.0} msg/s");
    let (civ_wa, _) = run_path(b, &ingress, &format!("{resp}LoadCaller"), n, None, civitas_reply).await;
    eprintln!("[loadgen] bridge Civitas -> WA: {civ_wa:.0} msg/s");
    let cpu_per_10k = (bridge.cpu_secs() - cpu0) / (2.0 * n as f64) * 10_000.0;
    if let Some(mut perf) = perf {
        let _ = Process::new("kill").args(["-INT", &perf.id().to_string()]).status();
        let _ = perf.wait();
    }
    let (peak_rss, _) = bridge.rss_mib();

    let half = wa_civ / 2.0;
    let lat_n = (n / 2).max(1000).min((half * 10.0) as usize).max(500);
    let q = format!("/queue/{}", unique("onehop.lat"));
    let (_, l1) = run_path(b, &q, &q, lat_n, Some(half), wise_body).await;
    let (_, lb) = run_path(b, &format!("{req}{agent}"), &inbox, lat_n, Some(half), wise_body).await;
    let (lat_one, lat_bridge) = (latency(l1), latency(lb));
    eprintln!("[loadgen] latency at {half:.0} msg/s: one hop {lat_one:.2?} ms, bridge {lat_bridge:.2?} ms");
    bridge.stop();
    let many = many_agents(&args, &inbox_pattern, &ingress).await;
    let reference = reference(&args, &inbox_pattern, &ingress).await;

    let mut backlog_rss = (0.0, 0.0);
    let mut backlog_rate = 0.0;
    if args.backlog > 0 {
        let (producer, _) = connect(b).await;
        produce(&producer, &format!("{req}{agent}"), args.backlog, None, wise_body).await;
        let _ = producer.disconnect().await;
        let (consumer, mut events) = connect(b).await;
        consumer.subscribe(sink_subscription(&inbox)).await.expect("subscribe");
        let start = Instant::now();
        let bridge = Bridge::start(&args.bridge, b, &agent, 0, &inbox_pattern, &ingress);
        let mut got = 0;
        let mut rss = (0.0f64, 0.0f64);
        while got < args.backlog {
            let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(120), events.next_message()).await
            else {
                panic!("backlog: only {got} of {} drained", args.backlog);
            };
            got += 1;
            if got % 5000 == 0 {
                let now = bridge.rss_mib();
                rss = (rss.0.max(now.0), rss.1.max(now.1));
            }
        }
        backlog_rate = args.backlog as f64 / start.elapsed().as_secs_f64();
        backlog_rss = rss;
        bridge.stop();
        let _ = consumer.disconnect().await;
    }

    let mut out = std::io::stdout().lock();
    // On Artemis, a last column: the ratio to its core bridge (run 2b).
    let to_core = |rate: f64| core.map_or(String::new(), |c| format!(" {:.2} |", rate / c));
    let _ = writeln!(
        out,
        "\n| {} ({n} persistent messages) | msg/s | ratio to one hop | ratio to two hops |{}",
        b.name(),
        if core.is_some() { " ratio to core bridge |" } else { "" }
    );
    let _ = writeln!(out, "|---|---|---|---|{}", if core.is_some() { "---|" } else { "" });
    let _ = writeln!(
        out,
        "| 1. broker pass-through, one hop | {one_hop:.0} | 1.00 | |{}",
        if core.is_some() { " |" } else { "" }
    );
    let _ = writeln!(
        out,
        "| 2. two hops, idle forwarder | {two_hop:.0} | {:.2} | 1.00 |{}",
        two_hop / one_hop,
        to_core(two_hop)
    );
    if let Some(c) = core {
        let _ = writeln!(
            out,
            "| 2b. two hops, Artemis's core bridge inside the broker | {c:.0} | {:.2} | {:.2} | 1.00 |",
            c / one_hop,
            c / two_hop
        );
    }
    let _ = writeln!(
        out,
        "| 3. bridge, Wise Agents → Civitas | {wa_civ:.0} | {:.2} | {:.2} |{}",
        wa_civ / one_hop,
        wa_civ / two_hop,
        to_core(wa_civ)
    );
    let _ = writeln!(
        out,
        "| 4. bridge, Civitas → Wise Agents | {civ_wa:.0} | {:.2} | {:.2} |{}",
        civ_wa / one_hop,
        civ_wa / two_hop,
        to_core(civ_wa)
    );
    if let Some(rate) = many {
        let _ = writeln!(
            out,
            "| 5. bridge, {} agents configured, one busy, Wise Agents → Civitas | {rate:.0} | {:.2} | {:.2} (to run 3: {:.2}) |{}",
            args.agents,
            rate / one_hop,
            rate / two_hop,
            rate / wa_civ,
            to_core(rate)
        );
    }
    if let Some((rate, _, _)) = reference {
        let _ = writeln!(
            out,
            "| 6. reference bridge (stomp.py, confirm then ack), Wise Agents → Civitas | {rate:.0} | {:.2} | {:.2} (run 3 is {:.2}×) |{}",
            rate / one_hop,
            rate / two_hop,
            wa_civ / rate,
            to_core(rate)
        );
    }
    let _ = writeln!(
        out,
        "\nlatency at {half:.0} msg/s (ms, p50 / p99 / p99.9): one hop {:.2} / {:.2} / {:.2}; bridge path {:.2} / {:.2} / {:.2}",
        lat_one[0], lat_one[1], lat_one[2], lat_bridge[0], lat_bridge[1], lat_bridge[2]
    );
    let _ = writeln!(out, "bridge CPU: {cpu_per_10k:.2} s per 10,000 messages; peak RSS {peak_rss:.1} MiB");
    if let Some((_, cpu, rss)) = reference {
        let _ = writeln!(out, "reference bridge CPU: {cpu:.2} s per 10,000 messages; peak RSS {rss:.1} MiB");
    }
    if args.backlog > 0 {
        let _ = writeln!(
            out,
            "backlog of {}: drained at {backlog_rate:.0} msg/s, peak RSS {:.1} MiB, largest RSS {:.1} MiB",
            args.backlog, backlog_rss.0, backlog_rss.1
        );
    }
    let _ = writeln!(
        out,
        "{}",
        serde_json::json!({
            "broker": b.name(), "messages": n, "one_hop": one_hop, "two_hop": two_hop, "two_hop_core_bridge": core,
            "bridge_wa_to_civitas": wa_civ, "bridge_civitas_to_wa": civ_wa,
            "latency_rate": half, "latency_one_hop_ms": lat_one, "latency_bridge_ms": lat_bridge,
            "cpu_s_per_10k": cpu_per_10k, "peak_rss_mib": peak_rss,
            "backlog": args.backlog, "backlog_rate": backlog_rate, "backlog_peak_rss_mib": backlog_rss.0,
            "agents": args.agents, "bridge_many_agents_wa_to_civitas": many,
            "reference_wa_to_civitas": reference.map(|r| r.0), "reference_cpu_s_per_10k": reference.map(|r| r.1),
            "reference_peak_rss_mib": reference.map(|r| r.2)
        })
    );
}
