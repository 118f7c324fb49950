//! loadgen: the whole path measured against the broker's own ceiling, in one run.
//!
//!   cargo run --release -p bridge-tools --bin loadgen -- [--broker activemq|rabbitmq|artemis] [--messages N]
//!                                        [--backlog N] [--bridge PATH] [--one-hop-only]
//!                                        [--agents N] [--reference SCRIPT]
//!   (SAB_ACTIVEMQ_PORT / SAB_RABBITMQ_PORT / SAB_ARTEMIS_PORT: another instance's STOMP port)
//!
//! Against a local broker (`scripts/brokers.sh start`), with persistent Wise Agents YAML bodies:
//! 1. one hop: producer → queue → consumer, the broker's pass-through;
//! 2. two hops: producer → queue → an idle forwarder (the bridge's settlement engine, no
//!    translation) → queue → consumer, what any bridge costs the broker;
//!    2b. on Artemis, two hops through its own core bridge inside the broker (no client);
//! 3. the bridge (the release binary as a process), Wise Agents → Civitas;
//! 4. the bridge, Civitas replies → Wise Agents;
//! 5. the bridge with `--agents` proxied agents configured (default 20), one of them busy,
//!    Wise Agents → Civitas: what a busy queue gets of the budget beside idle ones;
//! 6. a reference bridge of the user's kind (`--reference`, default tools/ref_bridge.py, a
//!    stomp.py script that confirms each SEND then acks its source, prefetch 256 per
//!    subscription; run with `$SAB_VENV/bin/python`, default .venv), Wise Agents → Civitas;
//!
//! then end-to-end latency at half the bridge's peak rate (one hop, the idle forwarder of run 2
//! at the same rate, and the bridge), the bridge's
//! CPU-seconds per 10,000 messages and peak RSS, and its RSS while it drains a backlog of
//! `--backlog` messages that were waiting before it started. Prints a Markdown table and one
//! JSON line. docs/PERFORMANCE.md explains the method. `LOADGEN_PERF=FILE` records a `perf`
//! profile of the bridge during runs 3 and 4; `RUST_LOG=stomp_agent_bridge::bridge::settle=debug`
//! shows the forwarder's batches (size, and how long their SENDs and COMMIT took).

mod processes;

use bridge_tools::support::broker::now_nanos;
use bridge_tools::support::{self, Broker, bodies, unique};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use processes::{Bridge, Reference};
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command as Process;
use std::time::{Duration, Instant};
use stomp_agent_bridge::bridge::delivery::{Delivery, Outcome, Work};
use stomp_agent_bridge::bridge::settle::{Attempts, Settlement, Settler, next_batch};
use stomp_agent_bridge::config::DeliveryMode;
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Event, Events, Frame, Subscription};

/// loadgen: the whole path measured against the broker's own ceiling, in one run
/// (docs/PERFORMANCE.md).
#[derive(clap::Parser)]
#[command(name = "loadgen")]
struct Args {
    #[arg(long, value_enum, default_value = "activemq")]
    broker: Broker,
    /// Only the one-hop rate, on a plain queue and on a Wise Agents request queue (which a
    /// mirror tap copies): the broker-side cost of mirror mode.
    #[arg(long)]
    one_hop_only: bool,
    /// Messages per run.
    #[arg(long, default_value_t = 20_000)]
    messages: usize,
    /// Messages waiting before the bridge starts, for its RSS while it drains them (0: skip).
    #[arg(long, default_value_t = 100_000)]
    backlog: usize,
    /// The bridge binary (the one beside this tool unless given).
    #[arg(long, default_value_os_t = support::sibling_bridge())]
    bridge: PathBuf,
    /// Proxied agents configured for run 5 (0: skip it).
    #[arg(long, default_value_t = 20)]
    agents: usize,
    /// The reference bridge's script for run 6 (skipped when it does not exist).
    #[arg(long, default_value = "tools/ref_bridge.py")]
    reference: PathBuf,
}

/// The send time written into a body as `t=<unix nanos>;`, read back from any format.
fn stamp_of(body: &[u8]) -> Option<u128> {
    let at = body.windows(2).position(|w| w == b"t=")? + 2;
    let digits: Vec<u8> = body[at..].iter().copied().take_while(u8::is_ascii_digit).collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// A Wise Agents request as Wise Agents writes it (about 390 bytes on the wire).
fn wise_body(i: usize) -> Bytes {
    let message =
        format!("{{\"city\": \"Paris\", \"units\": \"metric\", \"n\": {i}, \"at\": \"t={};\"}}", now_nanos());
    bodies::wise_ask(message, "LoadCaller", Some(format!("call_{i:08}")), Some("LoadCaller")).into()
}

/// A Civitas reply to the caller, as Civitas's `to_dict()` writes it in JSON.
fn civitas_reply(i: usize) -> Bytes {
    let payload = serde_json::json!({"message": format!("sunny, 21 C (n={i}, t={};)", now_nanos())});
    bodies::Civitas::new("reply", "LoadAgent", "LoadCaller".into(), payload).to_json().to_string().into()
}

/// A connection with room for a fast producer's frames and a consumer's backlog.
async fn connect(broker: Broker) -> (Client, Events) {
    broker
        .connect(|c| {
            c.max_buffered = 1 << 20;
            c.event_capacity = 1 << 16;
            c.receipt_timeout = Duration::from_secs(30);
        })
        .await
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
    let probe = unique("load.core.probe");
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
    let mode = Settlement::choose(match std::env::var("BRIDGE__DELIVERY__MODE").as_deref() {
        Ok("transaction") => DeliveryMode::Transaction,
        _ => DeliveryMode::Auto,
    });
    // As the bridge: in confirm mode the SENDs on a connection of their own and the whole
    // budget as prefetch; in transaction mode one connection and a third of it.
    let in_flight = stomp_agent_bridge::config::DeliveryConfig::default().in_flight;
    let (publisher, prefetch) = match mode {
        Settlement::Confirm => (connect(broker).await.0, in_flight.to_string()),
        Settlement::Transaction => (client.clone(), (in_flight / 3).to_string()),
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
    let setting = |key: &str| -> Option<usize> {
        std::env::var(format!("BRIDGE__DELIVERY__{key}")).ok().and_then(|v| v.parse().ok())
    };
    let window = setting("BATCHES_IN_FLIGHT").unwrap_or(defaults.batches_in_flight);
    let batch_max = setting("BATCH_MAX").unwrap_or(defaults.batch_max);
    // As the engine: on ActiveMQ Classic and RabbitMQ at most a few SENDs awaiting their receipts.
    let cap = mode.unconfirmed_cap(setting("UNCONFIRMED_MAX"), publisher.server()).unwrap_or(usize::MAX);
    let mut in_batches = 0;
    tokio::pin!(stop);
    loop {
        while batches.len() < window && !ready.is_empty() && in_batches < cap {
            let batch = next_batch(&mut ready, &attempts, batch_max.min(cap - in_batches));
            in_batches += batch.len();
            batches.push(settler.start(batch).await);
        }
        tokio::select! {
            _ = &mut stop => break,
            Some(done) = batches.next(), if !batches.is_empty() => {
                assert!(done.result.is_ok(), "forwarder batch failed: {:?}", done.result.err());
                in_batches -= done.works.len();
                for w in done.works { w.source.settle(stomp_agent_bridge::bridge::delivery::Settled::Acked, &mut tally); }
            }
            Some(Event::Message(m)) = events.recv() => {
                let frame = Frame::new(Command::Send).with("destination", to.as_str()).with("persistent", "true").with_body(m.frame.body.clone());
                let outcome = Outcome::Delivered { route: "forward".into(), destination: to.clone(), correlated: false, unmatched_reply: false, ask: None, answers: None, hop: None };
                ready.push_back(Work { source: Delivery::new(m, dropped.clone()), stream: None, publish: vec![frame], outcome });
            }
        }
    }
    let _ = client.disconnect().await;
    let _ = publisher.disconnect().await;
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

/// Runs 1 and 2 (and 2b on Artemis): what the broker does without the bridge.
struct Limits {
    one_hop: f64,
    two_hop: f64,
    core: Option<f64>,
}

/// The bridge's own figures: runs 3 to 6, latency, CPU, memory.
struct Figures {
    wa_civ: f64,
    civ_wa: f64,
    half: f64,
    lat_one: [f64; 3],
    /// Two hops through the idle forwarder at the same rate: the floor of any bridge that
    /// acknowledges only what the broker confirmed.
    lat_forwarder: [f64; 3],
    lat_bridge: [f64; 3],
    cpu_per_10k: f64,
    peak_rss: f64,
    many: Option<f64>,
    reference: Option<(f64, f64, f64)>,
    backlog_rate: f64,
    backlog_rss: (f64, f64),
}

/// The idle forwarder between two new queues (run 2): its rate.
async fn idle_forwarder(b: Broker, n: usize) -> f64 {
    let (two_hop, _) = through_forwarder(b, n, None).await;
    eprintln!("[loadgen] two hops (idle forwarder): {two_hop:.0} msg/s");
    two_hop
}

/// `n` messages through the idle forwarder, at `rate` if given: the rate and the latencies.
async fn through_forwarder(b: Broker, n: usize, rate: Option<f64>) -> (f64, Vec<Duration>) {
    let (q1, q2) = (format!("/queue/{}", unique("load.hop1")), format!("/queue/{}", unique("load.hop2")));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let (subscribed_tx, subscribed) = tokio::sync::oneshot::channel();
    let forwarder = tokio::spawn(forward(b, q1.clone(), q2.clone(), subscribed_tx, stop_rx));
    subscribed.await.expect("the forwarder subscribed");
    let through = run_path(b, &q1, &q2, n, rate, wise_body).await;
    let _ = stop_tx.send(());
    let _ = forwarder.await;
    through
}

/// The destinations of the bridge's runs: one proxied agent's, and Civitas's.
struct Names {
    agent: String,
    inbox_pattern: String,
    inbox: String,
    ingress: String,
}

impl Names {
    fn new() -> Names {
        let agent = format!("LoadAgent{}", std::process::id());
        let inbox_pattern = format!("/queue/{}.{{agent}}", unique("load.civitas.in"));
        let inbox = inbox_pattern.replace("{agent}", &agent);
        let ingress = format!("/queue/{}", unique("load.civitas.ingress"));
        Names { agent, inbox_pattern, inbox, ingress }
    }
}

/// Runs 3 and 4, then latency at half run 3's rate, with one bridge process; then 5 and 6.
async fn bridge_runs(args: &Args, names: &Names) -> Figures {
    let (b, n, (req, resp)) = (args.broker, args.messages, args.broker.prefixes());
    let asks = format!("{req}{}", names.agent);
    let bridge = Bridge::start(&args.bridge, b, &names.agent, 0, &names.inbox_pattern, &names.ingress);
    let perf = bridge.profile();
    let cpu0 = bridge.cpu_secs();
    let (wa_civ, _) = run_path(b, &asks, &names.inbox, n, None, wise_body).await;
    eprintln!("[loadgen] bridge WA -> Civitas: {wa_civ:.0} msg/s");
    let (civ_wa, _) = run_path(b, &names.ingress, &format!("{resp}LoadCaller"), n, None, civitas_reply).await;
    eprintln!("[loadgen] bridge Civitas -> WA: {civ_wa:.0} msg/s");
    let cpu_per_10k = (bridge.cpu_secs() - cpu0) / (2.0 * n as f64) * 10_000.0;
    if let Some(mut perf) = perf {
        let _ = Process::new("kill").args(["-INT", &perf.id().to_string()]).status();
        let _ = perf.wait();
    }
    let (peak_rss, _) = bridge.rss_mib();

    let half = wa_civ / 2.0;
    let lat_n = (n / 2).max(1000).min((half * 10.0) as usize).max(500);
    let q = format!("/queue/{}", unique("load.onehop.lat"));
    let (_, l1) = run_path(b, &q, &q, lat_n, Some(half), wise_body).await;
    let (_, lb) = run_path(b, &asks, &names.inbox, lat_n, Some(half), wise_body).await;
    let (lat_one, lat_bridge) = (latency(l1), latency(lb));
    eprintln!("[loadgen] latency at {half:.0} msg/s: one hop {lat_one:.2?} ms, bridge {lat_bridge:.2?} ms");
    bridge.stop();
    let lat_forwarder = latency(through_forwarder(b, lat_n, Some(half)).await.1);
    eprintln!("[loadgen] latency at {half:.0} msg/s: idle forwarder {lat_forwarder:.2?} ms");
    let many = many_agents(args, &names.inbox_pattern, &names.ingress).await;
    let reference = reference(args, &names.inbox_pattern, &names.ingress).await;
    let (backlog_rate, backlog_rss) = backlog(args, names).await;
    Figures {
        wa_civ,
        civ_wa,
        half,
        lat_one,
        lat_forwarder,
        lat_bridge,
        cpu_per_10k,
        peak_rss,
        many,
        reference,
        backlog_rate,
        backlog_rss,
    }
}

/// `--backlog` asks waiting before the bridge starts: the rate it drains them at and its
/// (peak, largest current) RSS meanwhile.
async fn backlog(args: &Args, names: &Names) -> (f64, (f64, f64)) {
    if args.backlog == 0 {
        return (0.0, (0.0, 0.0));
    }
    let (b, (req, _)) = (args.broker, args.broker.prefixes());
    let (producer, _) = connect(b).await;
    produce(&producer, &format!("{req}{}", names.agent), args.backlog, None, wise_body).await;
    let _ = producer.disconnect().await;
    let (consumer, mut events) = connect(b).await;
    consumer.subscribe(sink_subscription(&names.inbox)).await.expect("subscribe");
    let start = Instant::now();
    let bridge = Bridge::start(&args.bridge, b, &names.agent, 0, &names.inbox_pattern, &names.ingress);
    let mut got = 0;
    let mut rss = (0.0f64, 0.0f64);
    while got < args.backlog {
        let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(120), events.next_message()).await else {
            panic!("backlog: only {got} of {} drained", args.backlog);
        };
        got += 1;
        if got % 5000 == 0 {
            let now = bridge.rss_mib();
            rss = (rss.0.max(now.0), rss.1.max(now.1));
        }
    }
    let rate = args.backlog as f64 / start.elapsed().as_secs_f64();
    bridge.stop();
    let _ = consumer.disconnect().await;
    (rate, rss)
}

/// The Markdown table of the runs; on Artemis with a last column, the ratio to its core bridge.
fn table(out: &mut impl Write, args: &Args, l: &Limits, f: &Figures) {
    let (one, two) = (l.one_hop, l.two_hop);
    let to_core = |rate: f64| l.core.map_or(String::new(), |c| format!(" {:.2} |", rate / c));
    let row = |out: &mut dyn Write, what: &str, rate: f64, two_hops: String| {
        let _ = writeln!(out, "| {what} | {rate:.0} | {:.2} | {two_hops} |{}", rate / one, to_core(rate));
    };
    let (core_head, core_rule) =
        if l.core.is_some() { (" ratio to core bridge |", "---|") } else { ("", "") };
    let header = format!("{} ({} persistent messages)", args.broker.name(), args.messages);
    let _ = writeln!(out, "\n| {header} | msg/s | ratio to one hop | ratio to two hops |{core_head}");
    let _ = writeln!(out, "|---|---|---|---|{core_rule}");
    let _ = writeln!(
        out,
        "| 1. broker pass-through, one hop | {one:.0} | 1.00 | |{}",
        if l.core.is_some() { " |" } else { "" }
    );
    row(out, "2. two hops, idle forwarder", two, "1.00".into());
    if let Some(c) = l.core {
        let what = "2b. two hops, Artemis's core bridge inside the broker";
        let _ = writeln!(out, "| {what} | {c:.0} | {:.2} | {:.2} | 1.00 |", c / one, c / two);
    }
    row(out, "3. bridge, Wise Agents → Civitas", f.wa_civ, format!("{:.2}", f.wa_civ / two));
    row(out, "4. bridge, Civitas → Wise Agents", f.civ_wa, format!("{:.2}", f.civ_wa / two));
    if let Some(rate) = f.many {
        let what = format!("5. bridge, {} agents configured, one busy, Wise Agents → Civitas", args.agents);
        row(out, &what, rate, format!("{:.2} (to run 3: {:.2})", rate / two, rate / f.wa_civ));
    }
    if let Some((rate, _, _)) = f.reference {
        let what = "6. reference bridge (stomp.py, confirm then ack), Wise Agents → Civitas";
        row(out, what, rate, format!("{:.2} (run 3 is {:.2}×)", rate / two, f.wa_civ / rate));
    }
}

/// The lines under the table, then the JSON line.
fn summary(out: &mut impl Write, args: &Args, l: &Limits, f: &Figures) {
    let (o, w, b) = (f.lat_one, f.lat_forwarder, f.lat_bridge);
    let _ = writeln!(
        out,
        "\nlatency at {:.0} msg/s (ms, p50 / p99 / p99.9): one hop {:.2} / {:.2} / {:.2}; idle forwarder {:.2} / {:.2} / {:.2}; bridge path {:.2} / {:.2} / {:.2}",
        f.half, o[0], o[1], o[2], w[0], w[1], w[2], b[0], b[1], b[2]
    );
    let _ = writeln!(
        out,
        "bridge CPU: {:.2} s per 10,000 messages; peak RSS {:.1} MiB",
        f.cpu_per_10k, f.peak_rss
    );
    if let Some((_, cpu, rss)) = f.reference {
        let _ = writeln!(out, "reference bridge CPU: {cpu:.2} s per 10,000 messages; peak RSS {rss:.1} MiB");
    }
    if args.backlog > 0 {
        let _ = writeln!(
            out,
            "backlog of {}: drained at {:.0} msg/s, peak RSS {:.1} MiB, largest RSS {:.1} MiB",
            args.backlog, f.backlog_rate, f.backlog_rss.0, f.backlog_rss.1
        );
    }
    let reference = f.reference;
    let json = serde_json::json!({
        "broker": args.broker.name(), "messages": args.messages, "one_hop": l.one_hop, "two_hop": l.two_hop,
        "two_hop_core_bridge": l.core, "bridge_wa_to_civitas": f.wa_civ, "bridge_civitas_to_wa": f.civ_wa,
        "latency_rate": f.half, "latency_one_hop_ms": f.lat_one,
        "latency_forwarder_ms": f.lat_forwarder, "latency_bridge_ms": f.lat_bridge,
        "cpu_s_per_10k": f.cpu_per_10k, "peak_rss_mib": f.peak_rss,
        "backlog": args.backlog, "backlog_rate": f.backlog_rate, "backlog_peak_rss_mib": f.backlog_rss.0,
        "agents": args.agents, "bridge_many_agents_wa_to_civitas": f.many,
        "reference_wa_to_civitas": reference.map(|r| r.0), "reference_cpu_s_per_10k": reference.map(|r| r.1),
        "reference_peak_rss_mib": reference.map(|r| r.2)
    });
    let _ = writeln!(out, "{json}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = <Args as clap::Parser>::parse();
    // RUST_LOG=stomp_agent_bridge::bridge::settle=debug shows the forwarder's batches.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let (b, n, (req, _)) = (args.broker, args.messages, args.broker.prefixes());
    eprintln!("[loadgen] {} , {n} persistent messages per run", b.name());

    // A warm-up, so that the broker's JIT and caches are what they are in the runs that count.
    let q = format!("/queue/{}", unique("load.warmup"));
    let _ = run_path(b, &q, &q, n.min(5000), None, wise_body).await;
    let q = format!("/queue/{}", unique("load.onehop"));
    let (one_hop, _) = run_path(b, &q, &q, n, None, wise_body).await;
    eprintln!("[loadgen] one hop: {one_hop:.0} msg/s");
    if args.one_hop_only {
        let q = format!("{req}LoadOneHop{}", std::process::id());
        let (tapped, _) = run_path(b, &q, &q, n, None, wise_body).await;
        eprintln!("[loadgen] one hop on {q}: {tapped:.0} msg/s");
        let json = serde_json::json!({"broker": b.name(), "messages": n, "one_hop": one_hop, "one_hop_request_queue": tapped});
        println!("{json}");
        return;
    }
    let two_hop = idle_forwarder(b, n).await;
    let core = if b == Broker::Artemis { core_bridge(b, n).await } else { None };
    let limits = Limits { one_hop, two_hop, core };
    let figures = bridge_runs(&args, &Names::new()).await;
    let mut out = std::io::stdout().lock();
    table(&mut out, &args, &limits, &figures);
    summary(&mut out, &args, &limits, &figures);
}
