//! settle_probe: what each way of settling a batch costs the broker, measured alone.
//!
//!   cargo run --release --example settle_probe -- [activemq|rabbitmq] [BATCH] [REPS]
//!
//! Fills a queue, takes the messages unacknowledged (`client-individual`), then settles them
//! batch after batch (one in flight, so each figure is the broker's own time) in several ways
//! and prints the median milliseconds per batch of each. docs/PERFORMANCE.md uses it to say
//! why the bridge settles the way it does.

use bytes::Bytes;
use std::time::{Duration, Instant};
use stomp_agent_bridge::stomp::{
    AckMode, AckRef, Client, ClientConfig, Command, Frame, Item, Message, Subscription,
};

const BODY: &[u8] = &[b'x'; 390];

async fn connect(url: &str, login: &str, passcode: &str) -> (Client, stomp_agent_bridge::stomp::Events) {
    let mut c = ClientConfig::new(url.parse().expect("url"), Some(login.into()), Some(passcode.into()));
    c.max_buffered = 1 << 20;
    c.event_capacity = 1 << 16;
    c.receipt_timeout = Duration::from_secs(60);
    Client::connect(c).await.expect("connect")
}

fn send(dest: &str, tx: Option<&str>) -> Frame {
    let f = Frame::new(Command::Send)
        .with("destination", dest)
        .with("persistent", "true")
        .with_body(Bytes::from_static(BODY));
    match tx {
        Some(tx) => f.with("transaction", tx),
        None => f,
    }
}

fn ack(m: &AckRef, tx: Option<&str>) -> Item {
    Item::Ack { msg: m.clone(), nack: false, transaction: tx.map(str::to_owned) }
}

/// One round: the items, then every receipt they asked for.
async fn round(client: &Client, items: Vec<Item>) {
    for r in client.submit(items).await.expect("submit") {
        r.confirmed().await.expect("receipt");
    }
}

/// A frame carrying a receipt, as the last of a round.
fn with_receipt(frame: Frame) -> Item {
    Item::Frame { frame, receipt: true }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let broker = args.next().unwrap_or_else(|| "activemq".into());
    let batch: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(150);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let (url, login, passcode) = match broker.as_str() {
        "rabbitmq" => ("stomp://127.0.0.1:61623", "guest", "guest"),
        _ => ("stomp://127.0.0.1:61613", "admin", "admin"),
    };
    let stamp = std::process::id();
    let src = format!("/queue/sab.probe.src.{stamp}");
    let dst = format!("/queue/sab.probe.dst.{stamp}");
    let variants = [
        "tx: SENDs (receipt on last), then ACKs + COMMIT (the bridge)",
        "tx: SENDs + ACKs + COMMIT, one round",
        "tx: SENDs + COMMIT only",
        "tx: ACKs + COMMIT only",
        "no tx: SENDs, receipt on each",
        "no tx: ACKs, receipt on a last frame",
    ];
    let total = batch * reps * variants.len();

    let (producer, _) = connect(url, login, passcode).await;
    let mut fill: Vec<Item> =
        (0..total).map(|_| Item::Frame { frame: send(&src, None), receipt: false }).collect();
    if let Some(Item::Frame { receipt, .. }) = fill.last_mut() {
        *receipt = true;
    }
    round(&producer, fill).await;
    eprintln!("[probe] {total} messages in {src}");

    let (client, mut events) = connect(url, login, passcode).await;
    let prefetch = total.to_string();
    let sub = Subscription::new(&src, AckMode::ClientIndividual)
        .with("activemq.prefetchSize", prefetch.as_str())
        .with("prefetch-count", prefetch.as_str());
    client.subscribe(sub).await.expect("subscribe");
    let mut messages: Vec<Message> = Vec::with_capacity(total);
    while messages.len() < total {
        messages.push(events.next_message().await.expect("message"));
    }
    eprintln!("[probe] {total} messages taken");
    let mut chunks = messages.chunks(batch);
    let mut tx_n = 0;
    println!(
        "| {broker}: batch of {batch}, {reps} batches each, one in flight | median ms per batch | msg/s |"
    );
    println!("|---|---|---|");
    for (v, name) in variants.iter().enumerate() {
        if v == 0 && broker == "rabbitmq" {
            // Its receipt for a transacted SEND never came before the COMMIT (the probe
            // waited forever): the bridge uses confirm mode there.
            println!("| {name} | no receipt before COMMIT | |");
            for _ in 0..reps {
                chunks.next();
            }
            continue;
        }
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let chunk = chunks.next().expect("enough messages");
            tx_n += 1;
            let tx = format!("probe-{tx_n}");
            let t = Some(tx.as_str());
            let begin = Item::Frame {
                frame: Frame::new(Command::Begin).with("transaction", tx.clone()),
                receipt: false,
            };
            let commit = with_receipt(Frame::new(Command::Commit).with("transaction", tx.clone()));
            let start = Instant::now();
            match v {
                0 => {
                    let mut first = vec![begin];
                    first.extend(chunk.iter().map(|_| Item::Frame { frame: send(&dst, t), receipt: false }));
                    if let Some(Item::Frame { receipt, .. }) = first.last_mut() {
                        *receipt = true;
                    }
                    round(&client, first).await;
                    let mut second: Vec<Item> = chunk.iter().map(|m| ack(&m.ack, t)).collect();
                    second.push(commit);
                    round(&client, second).await;
                }
                1..=3 => {
                    let mut items = vec![begin];
                    if v != 3 {
                        items.extend(
                            chunk.iter().map(|_| Item::Frame { frame: send(&dst, t), receipt: false }),
                        );
                    }
                    if v != 2 {
                        items.extend(chunk.iter().map(|m| ack(&m.ack, t)));
                    }
                    items.push(commit);
                    round(&client, items).await;
                }
                4 => {
                    round(&client, chunk.iter().map(|_| with_receipt(send(&dst, None))).collect()).await;
                }
                _ => {
                    let mut items: Vec<Item> = chunk.iter().map(|m| ack(&m.ack, None)).collect();
                    // A frame after the ACKs whose receipt says they were taken.
                    items.push(with_receipt(Frame::new(Command::Begin).with("transaction", tx.clone())));
                    items.push(Item::Frame {
                        frame: Frame::new(Command::Abort).with("transaction", tx),
                        receipt: false,
                    });
                    round(&client, items).await;
                }
            }
            times.push(start.elapsed());
        }
        times.sort();
        let median = times[times.len() / 2].as_secs_f64() * 1e3;
        println!("| {name} | {median:.1} | {:.0} |", batch as f64 / (median / 1e3));
    }
    let _ = client.disconnect().await;
    let _ = producer.disconnect().await;
}
