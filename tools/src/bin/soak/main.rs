//! soak: the bridge under mixed traffic, broker restarts and `kill -9`, with every message
//! accounted for.
//!
//!   scripts/soak.sh [MINUTES]        (a private ActiveMQ, the release build; docs/HARDENING.md)
//!   soak --minutes N [--rate R] [--restart-every S] [--kills K] [--bridge PATH] [--broker activemq|artemis]
//!
//! Against ActiveMQ on SAB_ACTIVEMQ_PORT (default 61613), or Artemis on SAB_ARTEMIS_PORT. Traffic at a steady R messages/s:
//! Wise Agents asks (YAML) to a Civitas agent (JSON), a Civitas agent speaking msgpack, a VOX
//! agent and a PenguiFlow agent, each answered the way that framework answers (Civitas
//! `reply()`, one in ten as a stream; VOX's automatic `message_acknowledged` then
//! `command_result`; PenguiFlow `model_copy`); Civitas and PenguiFlow asks answered by a Wise
//! Agents agent; and 1% malformed bodies on every ingress. Every `--restart-every` seconds the
//! broker is restarted (`scripts/brokers.sh restart activemq|artemis`, with this environment), and
//! `--kills` times the bridge is killed with SIGKILL and started again.
//!
//! At the end, after the traffic stops and the queues drain: every message the broker
//! confirmed must have arrived at least once (asks at the agent they were for, answers at the
//! asker), or be in the dead-letter queue with its reason. The bridge's RSS and open file
//! descriptors are sampled every 10 s, with its `bridge_heap_bytes` (the live heap),
//! `bridge_pending_asks` and `bridge_unacknowledged` gauges beside them. Exit status 1 when a
//! message is unaccounted for, when a well-formed message was dead-lettered, or when
//! descriptors or the live heap grew within one process life (RSS is reported, not judged:
//! after a burst glibc keeps freed memory).

use bridge_tools::support::bodies::{self, Civitas};
use bridge_tools::support::{self, BridgeProcess, Broker};
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command as Process;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use stomp_agent_bridge::config::{AgentConfig, CivitasConfig, Frameworks, PenguiFlowConfig, VoxConfig};
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::civitas::Encoding;
use stomp_agent_bridge::envelope::codecs::Framework;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
use stomp_agent_bridge::stomp::{
    AckMode, Backoff, Client, Command, Event, Events, Frame, Message, Subscription,
};

const CALLER: &str = "SoakCaller";
const WA_AGENT: &str = "SoakWA";
const CIV: &str = "SoakCiv";
const IDX: &str = "SoakIdx"; // Civitas, msgpack
const VOX: &str = "SoakVox";
const PF: &str = "SoakPf";
const DEAD: &str = "/queue/soak.dead";
const INGRESS: [(&str, &str); 3] = [
    ("civitas", "/queue/soak.bridge.civitas"),
    ("vox", "/queue/soak.bridge.vox"),
    ("penguiflow", "/queue/soak.bridge.penguiflow"),
];

/// soak: the bridge under mixed traffic, broker restarts and `kill -9`, with every message
/// accounted for (docs/HARDENING.md).
#[derive(clap::Parser)]
#[command(name = "soak")]
struct Args {
    /// How long the traffic runs.
    #[arg(long, default_value_t = 5.0)]
    minutes: f64,
    /// Messages per second.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Seconds between two broker restarts (0: none).
    #[arg(long, default_value_t = 300)]
    restart_every: u64,
    /// How many times the bridge is killed with SIGKILL and started again.
    #[arg(long, default_value_t = 2)]
    kills: u32,
    /// The bridge binary (the one beside this tool unless given).
    #[arg(long, default_value_os_t = support::sibling_bridge())]
    bridge: PathBuf,
    /// The broker, restarted with `scripts/brokers.sh restart <broker>` (RabbitMQ cannot be
    /// run privately by that script, so it is not offered).
    #[arg(long, value_enum, default_value_t = Broker::ActiveMq)]
    broker: Broker,
}

fn args() -> Args {
    let args = <Args as clap::Parser>::parse();
    if args.rate <= 0.0 || args.minutes <= 0.0 {
        eprintln!("soak: --rate and --minutes must be positive");
        std::process::exit(2);
    }
    if args.broker == Broker::RabbitMq {
        eprintln!("soak: --broker activemq or artemis (a private RabbitMQ cannot be restarted here)");
        std::process::exit(2);
    }
    let _ = BROKER.set(args.broker);
    args
}

/// The soak's broker (`--broker`): ActiveMQ on SAB_ACTIVEMQ_PORT or Artemis on SAB_ARTEMIS_PORT.
static BROKER: std::sync::OnceLock<Broker> = std::sync::OnceLock::new();

fn broker() -> Broker {
    *BROKER.get().unwrap_or(&Broker::ActiveMq)
}

mod report;
use report::{Kind, Ledger, Life, Sample, report, unaccounted};

type Shared = Arc<Mutex<Ledger>>;

fn count(map: &mut HashMap<String, u32>, token: &str) {
    *map.entry(token.to_owned()).or_default() += 1;
}

/// The first `soak-…` token in a body (answers carry `answer:soak-…`).
fn token(body: &[u8]) -> Option<String> {
    let at = body.windows(5).position(|w| w == b"soak-")?;
    let t: Vec<u8> =
        body[at..].iter().copied().take_while(|b| b.is_ascii_alphanumeric() || *b == b'-').collect();
    String::from_utf8(t).ok()
}

fn is_answer(body: &[u8]) -> bool {
    body.windows(12).any(|w| w == b"answer:soak-")
}

/// The soak's own connections. They come back within a second of a broker restart (the soak
/// restarts the broker itself), so that traffic resumes at once: with the client's default
/// backoff, up to 30 s, a broker back after 12 s on a busy machine had the producer wait 20 s
/// more, and a two-minute run sent nothing after its last restart.
async fn connect() -> (Client, Events) {
    broker()
        .connect(|c| {
            c.receipt_timeout = Duration::from_secs(10);
            c.backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(1) };
            c.max_buffered = MAX_BUFFERED;
        })
        .await
}

/// Sends until the broker confirms; a refused or lost connection is waited out.
async fn send_confirmed(client: &Client, frame: Frame) {
    loop {
        match client.send_confirmed(frame.clone()).await {
            Ok(()) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

fn send_frame(dest: &str, body: impl Into<Bytes>) -> Frame {
    Frame::new(Command::Send).with("destination", dest).with("persistent", "true").with_body(body.into())
}

/// The n-th message of the run: its token, kind, and the frame that carries it.
fn nth(n: u64) -> (String, Kind, Frame) {
    let malformed = n % 100 == 37;
    // A malformed body names its kind in its token: the report groups dead letters by it.
    let t = if malformed {
        format!("soak-bad-{}-{n}", ["wa", "civitas", "vox", "penguiflow"][((n / 100) % 4) as usize])
    } else {
        format!("soak-ok-{n}")
    };
    let ask_wa = |agent: &str| {
        let body =
            bodies::wise_ask(format!("what now? {t}"), CALLER, Some(format!("call_{n}")), Some(CALLER));
        send_frame(&format!("/queue/request/{agent}"), body)
    };
    let frame = if malformed {
        match (n / 100) % 4 {
            0 => send_frame(
                &format!("/queue/request/{CIV}"),
                format!("_message: [unclosed {t}\n_sender: {CALLER}\n"),
            ),
            1 => send_frame(
                INGRESS[0].1,
                format!("{{\"type\": \"message\", \"sender\": \"{CIV}\", \"payload\": {t}"),
            ),
            2 => send_frame(INGRESS[1].1, json!({"message_id": t, "type": "command_request"}).to_string()),
            _ => send_frame(INGRESS[2].1, format!("[\"not a PenguiFlow message\", \"{t}\"]")),
        }
    } else {
        match n % 10 {
            0..=2 => ask_wa(CIV),
            3 => ask_wa(IDX),
            4 | 5 => ask_wa(VOX),
            6 | 7 => ask_wa(PF),
            8 => send_frame(
                INGRESS[0].1,
                Civitas {
                    correlation_id: json!(format!("c-{n}")),
                    ..Civitas::new(
                        "message",
                        CIV,
                        json!(WA_AGENT),
                        json!({"message": format!("a question from Civitas {t}")}),
                    )
                }
                .to_json()
                .to_string(),
            ),
            _ => send_frame(
                INGRESS[2].1,
                json!({"payload": format!("a question from PenguiFlow {t}"),
                    "headers": {"tenant": "default", "topic": "soak", "priority": 0},
                    "trace_id": format!("{n:032x}"), "ts": 1.8e9, "deadline_s": null,
                    "meta": {"message_id": format!("pf-{n}"), "sender": PF, "recipient": WA_AGENT}})
                .to_string(),
            ),
        }
    };
    (t, if malformed { Kind::Malformed } else { Kind::Ask }, frame)
}

/// Sends message after message at `rate`, until `until`; returns how many.
async fn produce(ledger: Shared, rate: f64, run_for: Duration) -> u64 {
    let (client, mut events) = connect().await;
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < run_for {
        tokio::time::sleep_until((start + Duration::from_secs_f64(n as f64 / rate)).into()).await;
        let (t, kind, frame) = nth(n);
        send_confirmed(&client, frame).await;
        ledger.lock().expect("ledger").sent.insert(t, kind);
        n += 1;
    }
    let _ = client.disconnect().await;
    n
}

/// Messages each of the soak's subscriptions may hold unacknowledged.
const PREFETCH: usize = 64;

/// Messages a soak connection holds before it stops reading its socket: more than its
/// subscriptions can be sent unasked (4 × 64 on ActiveMQ; on Artemis 4 windows of 128 KiB, at
/// least 200 bytes a message there), beside the 1,024 of the client's channel. An agent waits
/// for its answer's receipt on the connection it consumes from: with the client's default of
/// 64, a catch-up after a restart filled it, the RECEIPT stayed unread behind the messages,
/// and the agent never got to take them.
const MAX_BUFFERED: usize = 4 * PREFETCH * 2048 / 200 + 1024;

/// Client acknowledgement with a prefetch of [`PREFETCH`] messages on every broker. Artemis
/// reads `activemq.prefetchSize` as a window in bytes (and then lets one message through at a
/// time, src/bridge/run.rs), so its `consumer-window-size` gives it room for as many messages
/// of up to 2 KiB.
fn subscribe(dest: &str) -> Subscription {
    Subscription::new(dest, AckMode::ClientIndividual)
        .with("activemq.prefetchSize", PREFETCH.to_string())
        .with("consumer-window-size", (PREFETCH * 2048).to_string())
}

/// The token of a message the soak consumed, or, for a message it cannot attribute (no token
/// in its body), what the run reports of it: a stranger fails the run. Either way the
/// message is acknowledged: left unacknowledged it held its subscription's window, and on
/// Artemis every dead letter after it went unread (issue 27).
fn attribute(m: &Message) -> Result<String, String> {
    token(m.body()).ok_or_else(|| {
        let header = |name: &str| m.header(name).unwrap_or("-").to_owned();
        format!(
            "a message on {} the soak did not send (no token): bridge-error-kind {}, bridge-source {}, bridge-error {}, body {:.120}",
            m.destination,
            header("bridge-error-kind"),
            header("bridge-source"),
            header("bridge-error"),
            String::from_utf8_lossy(m.body())
        )
    })
}

/// The Civitas, VOX and PenguiFlow agents: answer each ask the way the framework does; record
/// answers to the asks they made themselves.
async fn native_agents(ledger: Shared) {
    let (client, mut events) = connect().await;
    for agent in [CIV, IDX] {
        client.subscribe(subscribe(&format!("/queue/soak.civitas.{agent}"))).await.expect("subscribe");
    }
    client.subscribe(subscribe(&format!("/queue/soak.vox.{VOX}"))).await.expect("subscribe");
    client.subscribe(subscribe(&format!("/queue/soak.penguiflow.{PF}"))).await.expect("subscribe");
    while let Some(event) = events.recv().await {
        let Event::Message(m) = event else { continue };
        let t = match attribute(&m) {
            Ok(t) => t,
            Err(stranger) => {
                ledger.lock().expect("ledger").strangers.push(stranger);
                let _ = client.ack(&m.ack).await;
                continue;
            }
        };
        if is_answer(m.body()) {
            count(&mut ledger.lock().expect("ledger").answered, &t);
        } else {
            count(&mut ledger.lock().expect("ledger").delivered, &t);
            for frame in native_answer(&m, &t) {
                send_confirmed(&client, frame).await;
            }
        }
        let _ = client.ack(&m.ack).await; // a stale ack after a reconnect: redelivered, answered again
    }
}

/// What the agent that received `m` sends back.
fn native_answer(m: &Message, t: &str) -> Vec<Frame> {
    let text = format!("answer:{t}");
    let asked: Value = if m.header("content-type") == Some("application/msgpack") {
        rmp_serde::from_slice(m.body()).unwrap_or(Value::Null)
    } else {
        serde_json::from_slice(m.body()).unwrap_or(Value::Null)
    };
    let dest = &m.destination;
    if dest.contains(".vox.") {
        let reply = |kind: &str, details: Value| {
            json!({"message_id": uuid::Uuid::now_v7().to_string(), "message_source": "soak",
                "emitted_at": "2026-12-01T06:00:00+00:00", "source": asked["target"], "target": asked["source"],
                "type": kind, "details": details, "reply_to": asked["message_id"]})
            .to_string()
        };
        let ingress = INGRESS[1].1;
        vec![
            send_frame(ingress, reply("message_acknowledged", json!({}))),
            send_frame(ingress, reply("command_result", json!({"message": text}))),
        ]
    } else if dest.contains(".penguiflow.") {
        let mut answer = asked;
        answer["payload"] = json!(text); // message.model_copy(update={"payload": ...})
        vec![send_frame(INGRESS[2].1, answer.to_string())]
    } else {
        let me = if dest.ends_with(IDX) { IDX } else { CIV };
        let to = asked.get("reply_to").filter(|v| !v.is_null()).unwrap_or(&asked["sender"]).clone();
        let base = |kind: &str, payload: Value, seq: Option<u64>| {
            Civitas {
                correlation_id: asked["correlation_id"].clone(),
                trace_id: asked["trace_id"].clone(),
                parent_span_id: asked["span_id"].clone(),
                seq,
                ..Civitas::new(kind, me, to.clone(), payload)
            }
            .to_json()
        };
        let stream = t.ends_with('0') && me == CIV; // one in ten: civitas stream_reply()
        let bodies: Vec<Value> = if stream {
            let (a, b) = text.split_at(text.len() / 2);
            vec![
                base("civitas.stream.chunk", json!({"token": a}), Some(0)),
                base("civitas.stream.chunk", json!({"token": b}), Some(1)),
                base("civitas.stream.end", json!({}), Some(2)),
            ]
        } else {
            vec![base("reply", json!({"message": text}), None)]
        };
        bodies
            .into_iter()
            .map(|v| {
                if me == IDX {
                    let packed = rmp_serde::to_vec_named(&v).expect("msgpack of JSON");
                    send_frame(INGRESS[0].1, packed).with("content-type", "application/msgpack")
                } else {
                    send_frame(INGRESS[0].1, v.to_string()).with("content-type", "application/json")
                }
            })
            .collect()
    }
}

/// The Wise Agents side: the asker reads its answers, an agent answers the Civitas and
/// PenguiFlow asks (echoing `_tool_id`), and the dead-letter queue is read with its reasons.
async fn wise_agents(ledger: Shared) {
    let (client, mut events) = connect().await;
    for dest in [format!("/queue/response/{CALLER}"), format!("/queue/request/{WA_AGENT}"), DEAD.to_owned()] {
        client.subscribe(subscribe(&dest)).await.expect("subscribe");
    }
    while let Some(event) = events.recv().await {
        let Event::Message(m) = event else { continue };
        let t = match attribute(&m) {
            Ok(t) => t,
            Err(stranger) => {
                {
                    let mut l = ledger.lock().expect("ledger");
                    match cut_stream(&m) {
                        Some(t) => {
                            count(&mut l.answered, &t);
                            l.cut_streams.insert(t);
                        }
                        None => l.strangers.push(stranger),
                    }
                }
                let _ = client.ack(&m.ack).await;
                continue;
            }
        };
        if m.destination == DEAD {
            let kind = m.header("bridge-error-kind").unwrap_or("").to_owned();
            ledger.lock().expect("ledger").dead.entry(t).or_default().push(kind);
        } else if m.destination.starts_with("/queue/response/") {
            count(&mut ledger.lock().expect("ledger").answered, &t);
        } else {
            count(&mut ledger.lock().expect("ledger").delivered, &t);
            match WiseMessage::parse(m.body()) {
                Ok(ask) => {
                    let to = ask.route_response_to.clone().or(ask.sender.clone()).unwrap_or_default();
                    let answer = WiseMessage {
                        message: format!("answer:{t}"),
                        message_type: Some(Intent::Response),
                        sender: Some(WA_AGENT.into()),
                        tool_id: ask.tool_id,
                        route_response_to: None,
                        context_name: ask.context_name,
                        extra: vec![],
                    }
                    .to_yaml();
                    send_confirmed(&client, send_frame(&format!("/queue/response/{to}"), answer)).await;
                }
                Err(e) => ledger.lock().expect("ledger").strangers.push(format!("{t}: unreadable ask: {e}")),
            }
        }
        let _ = client.ack(&m.ack).await;
    }
}

/// The ask whose streamed answer the bridge gave up on, if `m` is the error answer it then
/// gives the asker: a `kill -9` cut the stream (the chunks the killed bridge had taken in are
/// lost with it, docs/OPERATING.md, "A crash mid-stream"), or it stayed incomplete past
/// `stream_max_wait_ms`. It names the ask by the `_tool_id` it echoes (`call_<n>`), not by a
/// token.
fn cut_stream(m: &Message) -> Option<String> {
    if !m.destination.starts_with("/queue/response/") {
        return None;
    }
    let answer = WiseMessage::parse(m.body()).ok()?;
    let cut = answer.message_type == Some(Intent::CannotAnswer)
        && answer.message.starts_with("the streamed answer could not be delivered");
    let n: u64 = answer.tool_id?.strip_prefix("call_")?.parse().ok()?;
    cut.then(|| format!("soak-ok-{n}"))
}

fn bridge_config(dir: &std::path::Path, http_port: u16) -> PathBuf {
    let mut config = broker().bridge_config();
    config.broker.heartbeat_ms = [5000, 5000];
    config.wiseagents.agents = vec![CALLER.into(), WA_AGENT.into()];
    let namespace = "0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10".parse().expect("a uuid");
    config.protocols = Frameworks {
        civitas: Some(CivitasConfig::new("/queue/soak.civitas.{agent}", INGRESS[0].1)),
        vox: Some(VoxConfig::new("/queue/soak.vox.{agent}", INGRESS[1].1, namespace)),
        penguiflow: Some(PenguiFlowConfig::new("/queue/soak.penguiflow.{agent}", INGRESS[2].1)),
    };
    config.agents = vec![
        AgentConfig::new(CIV, Framework::Civitas),
        AgentConfig { encoding: Some(Encoding::Msgpack), ..AgentConfig::new(IDX, Framework::Civitas) },
        AgentConfig::new(VOX, Framework::Vox),
        AgentConfig::new(PF, Framework::PenguiFlow),
    ];
    config.delivery.dead_letter = DEAD.into();
    config.http.listen = format!("127.0.0.1:{http_port}");
    let path = dir.join("soak-bridge.toml");
    support::write_config(&path, &config);
    path
}

/// The broker's restarts, at k × restart_every, and the kills, half-way between two restarts,
/// spread over the run: seconds into the run.
fn schedule(args: &Args, secs: f64) -> (Vec<f64>, Vec<f64>) {
    let restarts: Vec<f64> = if args.restart_every == 0 {
        vec![]
    } else {
        (1..).map(|k| (k * args.restart_every) as f64).take_while(|t| *t < secs).collect()
    };
    let kills: Vec<f64> = (1..=args.kills)
        .map(|k| {
            let at = secs * f64::from(k) / f64::from(args.kills + 1);
            let r = args.restart_every.max(1) as f64;
            (at / r).floor() * r + r / 2.0
        })
        .collect();
    (restarts, kills)
}

/// `kill -9` the bridge, then a new one with the same configuration.
fn kill_and_restart(bridge: BridgeProcess, args: &Args, config: &std::path::Path) -> BridgeProcess {
    eprintln!("[soak] kill -9 the bridge (pid {})", bridge.pid());
    bridge.kill9();
    BridgeProcess::start(&args.bridge, config, true).unwrap_or_else(|e| panic!("{e}"))
}

/// `scripts/brokers.sh restart <broker>`, with this environment, off the runtime's threads.
async fn restart_broker() {
    eprintln!("[soak] restarting {}", broker().name());
    let t0 = Instant::now();
    tokio::task::spawn_blocking(restart_broker_now).await.expect("restart");
    eprintln!("[soak] {} back after {:.1} s", broker().name(), t0.elapsed().as_secs_f64());
}

/// The restart the soak is about: one that does not happen fails the soak (a soak that only
/// says it restarted the broker proves nothing about restarts).
fn restart_broker_now() {
    // tools/ is a member of the workspace whose root holds scripts/.
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/brokers.sh");
    let which = if broker() == Broker::Artemis { "artemis" } else { "activemq" };
    match Process::new(&script).args(["restart", which]).output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("[soak] the broker restart failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!("[soak] cannot run {}: {e}", script.display()),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = args();
    let run_for = Duration::from_secs_f64(args.minutes * 60.0);
    let dir = support::temp_dir("soak");
    let http_port = support::free_port();
    let config = bridge_config(&dir, http_port);
    eprintln!(
        "[soak] {} min at {} msg/s on {} :{}; broker restart every {} s, {} kill -9",
        args.minutes,
        args.rate,
        broker().name(),
        broker().port(),
        args.restart_every,
        args.kills
    );

    let ledger = Shared::default();
    let mut bridge = BridgeProcess::start(&args.bridge, &config, true).unwrap_or_else(|e| panic!("{e}"));
    let natives = tokio::spawn(native_agents(ledger.clone()));
    let wise = tokio::spawn(wise_agents(ledger.clone()));
    let start = Instant::now();
    let producing = tokio::spawn(produce(ledger.clone(), args.rate, run_for));

    let (restarts, kills) = schedule(&args, run_for.as_secs_f64());
    let (mut next_restart, mut next_kill) = (0, 0);
    let mut lives = vec![Life { pid: bridge.pid(), samples: vec![], end: "running" }];
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    let drain_until = Duration::from_secs(180);
    let mut last_progress = (0usize, Instant::now());
    loop {
        tick.tick().await;
        let now = start.elapsed().as_secs_f64();
        let s = Sample::of(&bridge, http_port, now);
        s.log(now);
        let life = lives.last_mut().expect("a life");
        life.samples.push(s);
        // Whether the producer had finished before the ledger is read: read after, a message it
        // sent in between would be missing from `open`, and the run would end without it.
        let produced_all = producing.is_finished();
        let (sent, open) = {
            let l = ledger.lock().expect("ledger");
            (l.sent.len(), unaccounted(&l).len())
        };
        eprintln!("[soak] {now:6.0} s: sent {sent}, unaccounted {open}");
        if next_kill < kills.len() && now >= kills[next_kill] {
            life.end = "kill -9";
            bridge = kill_and_restart(bridge, &args, &config);
            lives.push(Life { pid: bridge.pid(), samples: vec![], end: "running" });
            next_kill += 1;
        }
        if next_restart < restarts.len() && now >= restarts[next_restart] {
            restart_broker().await;
            next_restart += 1;
        }
        if produced_all {
            if open == 0 {
                break;
            }
            if open != last_progress.0 {
                last_progress = (open, Instant::now());
            } else if last_progress.1.elapsed() > drain_until {
                eprintln!("[soak] no progress for {drain_until:?} with {open} unaccounted: giving up");
                break;
            }
        }
    }
    let produced = producing.await.expect("producer");
    let last = Sample::of(&bridge, http_port, start.elapsed().as_secs_f64());
    lives.last_mut().expect("a life").samples.push(last);
    bridge.stop();
    natives.abort();
    wise.abort();
    let failed = report(&ledger.lock().expect("ledger"), produced, &lives, start.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
    std::process::exit(i32::from(failed));
}

#[cfg(test)]
#[path = "main_tests.rs"]
mod tests;
