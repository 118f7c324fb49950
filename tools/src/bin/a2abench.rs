//! The A2A benchmark (docs/PERFORMANCE.md, "A2A"): round trips per second and latency of A2A
//! `SendMessage` through the bridge to a native Wise Agents echo agent, against the broker's
//! own round trip to the same agent (a STOMP asker), at 1 and 64 concurrent clients; then the
//! bridge's RSS and CPU with 1,000 streaming tasks open. The client is the official A2A Rust
//! SDK's (`a2a-client-lf`), the bridge the release binary as a process.
//!
//! cargo build --release --workspace && target/release/a2abench --broker activemq

use a2a::{Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState};
use a2a_client::A2AClientFactory;
use a2a_client::agent_card::AgentCardResolver;
use bridge_tools::support::{self, BridgeProcess, Broker, unique};
use clap::Parser;
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
use stomp_agent_bridge::stomp::{AckMode, Client, Command, Event, Events, Frame, Subscription};
use tokio::sync::{Mutex, oneshot};

#[derive(Parser)]
struct Args {
    #[arg(long, value_enum, default_value = "activemq")]
    broker: Broker,
    /// Round trips per measurement.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Streaming tasks held open at once.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// The bridge binary (default: target/release/stomp-agent-bridge beside this tool).
    #[arg(long)]
    bridge: Option<std::path::PathBuf>,
}

/// A native Wise Agents agent that answers each request with its text, echoing `_tool_id`
/// and `_context_name` to the response queue of `_sender`, as upstream's agents do.
async fn echo_agent(broker: Broker, name: &str) {
    let (client, mut events) = broker.connect(|_| {}).await;
    let (request, response) = broker.prefixes();
    let sub = Subscription::new(format!("{request}{name}"), AckMode::Auto).with("prefetch-count", "1000");
    client.subscribe(sub).await.expect("subscribe the echo agent");
    let name = name.to_owned();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let Event::Message(m) = event else { continue };
            let Ok(ask) = WiseMessage::parse(m.body()) else { continue };
            let Some(to) = ask.sender.clone() else { continue };
            let answer =
                WiseMessage { message_type: Some(Intent::Response), sender: Some(name.clone()), ..ask };
            let frame = Frame::new(Command::Send)
                .with("destination", format!("{response}{to}"))
                .with_body(answer.to_yaml().into_bytes());
            let _ = client.send(frame).await;
        }
    });
}

/// The broker's round trip: a STOMP asker sends Wise Agents requests to the echo agent and
/// reads the answers on its own response queue, `concurrency` at a time; as the bridge does
/// it, each request persistent and confirmed by a receipt, each answer acknowledged.
async fn stomp_round_trips(broker: Broker, agent: &str, n: usize, concurrency: usize) -> Run {
    let asker = unique("a2a.asker").replace('.', "_");
    let (client, mut events): (Client, Events) = broker.connect(|_| {}).await;
    let (request, response) = broker.prefixes();
    let answers = Subscription::new(format!("{response}{asker}"), AckMode::ClientIndividual);
    client
        .subscribe(answers.with("activemq.prefetchSize", "1000").with("prefetch-count", "1000"))
        .await
        .expect("subscribe");
    let ask = |i: usize| {
        let body = support::bodies::wise_ask(format!("{i}"), &asker, Some(i.to_string()), None);
        let frame = Frame::new(Command::Send)
            .with("destination", format!("{request}{agent}"))
            .with("persistent", "true")
            .with_body(body.into_bytes());
        let client = client.clone();
        tokio::spawn(
            async move { client.send_confirmed(frame).await.expect("the broker confirms a request") },
        );
    };
    let mut sent_at = vec![Instant::now(); n];
    let mut latencies = Vec::with_capacity(n);
    let start = Instant::now();
    let mut sent = 0;
    while sent < concurrency.min(n) {
        sent_at[sent] = Instant::now();
        ask(sent);
        sent += 1;
    }
    while latencies.len() < n {
        let Some(Event::Message(m)) = events.recv().await else { continue };
        let _ = client.ack(&m.ack).await;
        let Ok(answer) = WiseMessage::parse(m.body()) else { continue };
        let i: usize = answer.tool_id.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0);
        latencies.push(sent_at[i].elapsed());
        if sent < n {
            sent_at[sent] = Instant::now();
            ask(sent);
            sent += 1;
        }
    }
    let _ = client.disconnect().await;
    Run::of(start.elapsed(), latencies)
}

/// A2A `SendMessage` through the bridge, `concurrency` clients at once.
async fn a2a_round_trips(client: Arc<Client2>, n: usize, concurrency: usize) -> Run {
    let next = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let start = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, next, latencies) = (client.clone(), next.clone(), latencies.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    let at = Instant::now();
                    match client.send_message(&ask("ping")).await {
                        Ok(SendMessageResponse::Task(t)) if t.status.state == TaskState::Completed => {}
                        other => panic!("not completed: {other:?}"),
                    }
                    latencies.lock().await.push(at.elapsed());
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("a client");
    }
    let latencies = std::mem::take(&mut *latencies.lock().await);
    Run::of(start.elapsed(), latencies)
}

type Client2 = a2a_client::A2AClient<Box<dyn a2a_client::Transport>>;

fn ask(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text(text)]),
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

struct Run {
    per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
}

impl Run {
    fn of(elapsed: Duration, mut latencies: Vec<Duration>) -> Run {
        latencies.sort();
        let at = |p: f64| {
            let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
            latencies[i].as_secs_f64() * 1000.0
        };
        Run { per_sec: latencies.len() as f64 / elapsed.as_secs_f64(), p50_ms: at(0.50), p99_ms: at(0.99) }
    }
}

/// `streams` streaming tasks to an agent that never answers, each held open once its first
/// event (the task, SUBMITTED) came; the senders, to close them.
async fn open_streams(client: Arc<Client2>, streams: usize) -> Vec<oneshot::Sender<()>> {
    let mut held = Vec::with_capacity(streams);
    let mut opened = Vec::with_capacity(streams);
    for _ in 0..streams {
        let (close, closed) = oneshot::channel::<()>();
        let (ready_tx, ready) = oneshot::channel::<()>();
        let client = client.clone();
        tokio::spawn(async move {
            let mut stream = client.send_streaming_message(&ask("hold")).await.expect("a stream");
            stream.next().await.expect("the task").expect("no error");
            let _ = ready_tx.send(());
            let _ = closed.await;
        });
        held.push(close);
        opened.push(ready);
    }
    for ready in opened {
        ready.await.expect("a stream opened");
    }
    held
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    // The SDK's client is reqwest's without a provider of its own (as the bridge's A2A calls).
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let bin = args.bridge.clone().unwrap_or_else(support::sibling_bridge);
    let (echo, silent) = (unique("a2a.echo").replace('.', "_"), unique("a2a.silent").replace('.', "_"));
    echo_agent(args.broker, &echo).await;

    let port = support::free_port();
    let dir = support::temp_dir("a2abench");
    let mut config = args.broker.bridge_config();
    config.http.listen = format!("127.0.0.1:{port}");
    config.wiseagents.reply_agent = unique("a2a.bridge").replace('.', "_");
    config.delivery.dead_letter = format!("/queue/{}", unique("a2a.dead"));
    let a2a = format!(
        "serve = [\"{echo}\", \"{silent}\"]\nmax_tasks = {}\nreply_timeout_ms = 600000\n",
        args.streams + 2 * args.requests + 100
    );
    config.a2a = Some(toml::from_str(&a2a).expect("[a2a]"));
    let path = dir.join("bridge.toml");
    support::write_config(&path, &config);
    let bridge = BridgeProcess::start(&bin, &path, true).unwrap_or_else(|e| panic!("{e}"));
    let client = |agent: String| async move {
        let card = AgentCardResolver::new(None)
            .resolve(&format!("http://127.0.0.1:{port}/a2a/{agent}"))
            .await
            .expect("the card");
        Arc::new(A2AClientFactory::builder().build().create_from_card(&card).await.expect("a client"))
    };
    let echo_client = client(echo.clone()).await;

    println!("| {} | clients | round trips/s | p50 ms | p99 ms |", args.broker.name());
    println!("| --- | --- | --- | --- | --- |");
    // Warm both paths first (connections, the broker's queues).
    let _ = stomp_round_trips(args.broker, &echo, 200, 8).await;
    let _ = a2a_round_trips(echo_client.clone(), 200, 8).await;
    for concurrency in [1, 64] {
        let n = if concurrency == 1 { args.requests / 4 } else { args.requests };
        let broker = stomp_round_trips(args.broker, &echo, n, concurrency).await;
        let through = a2a_round_trips(echo_client.clone(), n, concurrency).await;
        for (what, r) in [
            ("the broker's round trip (a STOMP asker)", &broker),
            ("A2A SendMessage through the bridge", &through),
        ] {
            println!("| {what} | {concurrency} | {:.0} | {:.2} | {:.2} |", r.per_sec, r.p50_ms, r.p99_ms);
        }
        println!(
            "| added by the bridge | {concurrency} | | {:+.2} | {:+.2} |",
            through.p50_ms - broker.p50_ms,
            through.p99_ms - broker.p99_ms
        );
    }

    let idle = bridge.stats();
    let silent_client = client(silent.clone()).await;
    let opened_at = Instant::now();
    let held = open_streams(silent_client, args.streams).await;
    let open_secs = opened_at.elapsed().as_secs_f64();
    let before = bridge.stats();
    tokio::time::sleep(Duration::from_secs(10)).await; // a hold of 10 s, measured, not waited on
    let after = bridge.stats();
    println!();
    println!(
        "{} streaming tasks opened in {open_secs:.1} s; bridge RSS {:.1} MiB before, {:.1} MiB with them open \
         (peak {:.1}); CPU while they stay open: {:.1} % of a core over 10 s",
        args.streams,
        idle.rss_mib,
        after.rss_mib,
        after.peak_rss_mib,
        (after.cpu_secs - before.cpu_secs) * 10.0
    );
    drop(held);
    bridge.stop();
}
