//! Discovery of the queues of agents named by a glob, against the fake broker (in memory,
//! under tokio's paused clock): each queue is subscribed once, whatever the broker's receipts
//! and the reloads do, unsubscribed when no glob names its agent any more, and at the end.

mod common;

use common::fake::{Conn, Pair, start_in_memory, stop_pair, weather_config};
use std::sync::Arc;
use stomp_agent_bridge::bridge::Attached;
use stomp_agent_bridge::bridge::reload::Reload;
use stomp_agent_bridge::config::{Config, DeliveryConfig};
use stomp_agent_bridge::stomp::{Command, Frame, memory};
use stomp_agent_bridge::telemetry::Metrics;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

const ADVISORY: &str = "/topic/ActiveMQ.Advisory.Queue";

/// The fake broker's configuration with the agents `Civ*` in place of `Weather`.
fn config(port: u16) -> Config {
    // The default receipt timeout (5 s): the clock is paused, so waiting it out takes no time.
    let mut config = weather_config(port, [0, 0], DeliveryConfig::default());
    config.agents[0].name = "Civ*".into();
    config
}

/// ActiveMQ's advisory for a new queue, as `jms-advisory-json` writes it.
async fn announce(conn: &mut Conn, subscription: &str, n: u32, queue: &str) {
    let body =
        format!(r#"{{"DestinationInfo":{{"operationType":0,"destination":{{"physicalName":"{queue}"}}}}}}"#);
    let advisory = Frame::new(Command::Message)
        .with("subscription", subscription)
        .with("message-id", format!("ID:advisory-{n}"))
        .with("destination", ADVISORY)
        .with_body(body);
    conn.send(advisory).await;
}

/// The next SUBSCRIBE (its destination and id), confirmed or not.
async fn subscribed(conn: &mut Conn, confirm: bool) -> (String, String) {
    let sub = conn.expect(Command::Subscribe).await;
    if confirm {
        conn.receipt(&sub).await;
    }
    let header = |name| sub.header(name).unwrap_or_default().to_owned();
    (header("destination"), header("id"))
}

#[tokio::test(start_paused = true)]
async fn a_discovered_queue_whose_receipt_is_late_is_subscribed_once_and_unsubscribed_at_the_end() {
    let (listener, _metrics, shutdown, bridge) = start_in_memory("discovery", config).await;
    let mut conn = Conn::accept(&listener).await;
    // Confirm mode publishes on a connection of its own; nothing is published here.
    let publishing = Conn::accept(&listener).await;
    assert_eq!(subscribed(&mut conn, true).await.0, "/queue/fake.civ.ingress");
    assert_eq!(subscribed(&mut conn, true).await.0, "/queue/response/_bridge", "the bridge's reply name");
    let (advisory, advisory_id) = subscribed(&mut conn, true).await;
    assert_eq!(advisory, ADVISORY);

    announce(&mut conn, &advisory_id, 1, "request/CivScout").await;
    // No RECEIPT: the bridge's wait (`receipt_timeout_ms`) runs out. STOMP 1.2 would have
    // ended the connection with an ERROR had the broker refused the SUBSCRIBE, so it stands.
    let (late, late_id) = subscribed(&mut conn, false).await;
    assert_eq!(late, "/queue/request/CivScout");

    // The broker announces it again (ActiveMQ does, to every new advisory subscriber), then
    // another queue: the next SUBSCRIBE must be the other queue's.
    announce(&mut conn, &advisory_id, 2, "request/CivScout").await;
    announce(&mut conn, &advisory_id, 3, "request/CivOther").await;
    assert_eq!(subscribed(&mut conn, true).await.0, "/queue/request/CivOther", "CivScout once only");

    let stopping = stop_pair(Pair { consuming: conn, publishing }, shutdown, bridge).await;
    let unsubscribed: Vec<&str> = stopping
        .iter()
        .filter(|f| f.command == Command::Unsubscribe)
        .map(|f| f.header("id").unwrap_or_default())
        .collect();
    assert_eq!(stopping.len(), unsubscribed.len() + 1, "UNSUBSCRIBEs, then DISCONNECT: {stopping:?}");
    assert!(unsubscribed.contains(&late_id.as_str()), "the late subscription {late_id} in {unsubscribed:?}");
    assert_eq!(unsubscribed.len(), 5, "ingress, _bridge, advisory, CivScout, CivOther: {unsubscribed:?}");
}

/// The bridge on `config` with reloads: the in-process listener, the reloads' sender, the
/// shutdown and the bridge's task.
async fn start_reloadable(
    name: &str,
) -> (memory::Listener, mpsc::Sender<Reload>, CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = memory::Listener::bind(&format!("{name}-{}", std::process::id()));
    let mut start = config(0);
    start.broker.url = listener.url();
    let start = common::fake::config(name, &start);
    let (reloads, requests) = mpsc::channel(1);
    let shutdown = CancellationToken::new();
    let (metrics, stop) = (Arc::new(Metrics::default()), shutdown.clone());
    let attached = Attached { reloads: Some(requests), ..Attached::default() };
    let bridge = tokio::spawn(async move {
        stomp_agent_bridge::bridge::run_with(start, metrics, stop, attached).await.expect("the bridge runs");
    });
    (listener, reloads, shutdown, bridge)
}

/// Started with the glob `Civ*`: its three SUBSCRIBEs confirmed, then `request/CivScout`
/// announced and subscribed. Returns the connections, the advisory's subscription id and
/// CivScout's.
async fn with_civscout_discovered(listener: &memory::Listener) -> (Pair, String, String) {
    let mut conn = Conn::accept(listener).await;
    let publishing = Conn::accept(listener).await;
    subscribed(&mut conn, true).await;
    subscribed(&mut conn, true).await;
    let (advisory, advisory_id) = subscribed(&mut conn, true).await;
    assert_eq!(advisory, ADVISORY);
    announce(&mut conn, &advisory_id, 1, "request/CivScout").await;
    let (scout, scout_id) = subscribed(&mut conn, true).await;
    assert_eq!(scout, "/queue/request/CivScout");
    (Pair { consuming: conn, publishing }, advisory_id, scout_id)
}

/// Reloads with `agents` (each a Civitas agent) in place of `Civ*`: plays the broker (every receipt answered) until
/// the engine says what changed. Returns that and the frames the bridge sent meanwhile.
async fn reload(
    reloads: &mpsc::Sender<Reload>,
    listener: &memory::Listener,
    conn: &mut Conn,
    agents: &[&str],
) -> (String, Vec<Frame>) {
    let mut new = config(0);
    new.agents = agents.iter().map(|a| common::bridge::proxied(a, "civitas")).collect();
    new.broker.url = listener.url();
    let new = common::fake::config(&format!("discovery-reload-{}", agents.join("-")), &new);
    let (done, answer) = oneshot::channel();
    reloads.send(Reload { config: new, done }).await.expect("the engine takes reloads");
    let mut answer = std::pin::pin!(answer);
    let mut sent = Vec::new();
    loop {
        tokio::select! {
            outcome = &mut answer => return (outcome.unwrap().expect("the reload applies"), sent),
            frame = conn.next() => {
                let frame = frame.expect("the bridge is connected");
                if frame.header("receipt").is_some() {
                    conn.receipt(&frame).await;
                }
                sent.push(frame);
            }
        }
    }
}

/// The SUBSCRIBEs' destinations and the UNSUBSCRIBEs' ids among `frames`.
fn changes(frames: &[Frame]) -> (Vec<String>, Vec<String>) {
    let of = |command, header| {
        frames
            .iter()
            .filter(move |f| f.command == command)
            .map(move |f| f.header(header).unwrap_or_default().to_owned())
    };
    (of(Command::Subscribe, "destination").collect(), of(Command::Unsubscribe, "id").collect())
}

/// The frames up to the bridge's next SUBSCRIBE or UNSUBSCRIBE, every receipt answered, until
/// `n` of them came.
async fn more_changes(conn: &mut Conn, n: usize, sent: &mut Vec<Frame>) {
    while changes(sent).0.len() + changes(sent).1.len() < n {
        let frame = conn.next().await.expect("the bridge is connected");
        if frame.header("receipt").is_some() {
            conn.receipt(&frame).await;
        }
        sent.push(frame);
    }
}

#[tokio::test(start_paused = true)]
async fn a_reload_that_drops_the_glob_unsubscribes_the_queue_discovery_found_under_it() {
    let (listener, reloads, shutdown, bridge) = start_reloadable("discovery-drop-glob").await;
    let (mut pair, _, scout_id) = with_civscout_discovered(&listener).await;

    let (said, mut sent) = reload(&reloads, &listener, &mut pair.consuming, &["Weather"]).await;
    assert!(said.contains(r#"unsubscribed ["/queue/request/CivScout"]"#), "{said}");
    more_changes(&mut pair.consuming, 3, &mut sent).await;
    let (subscribed, unsubscribed) = changes(&sent);
    assert_eq!(
        unsubscribed,
        std::slice::from_ref(&scout_id),
        "CivScout's queue, discovered under the glob: {sent:?}"
    );
    assert_eq!(subscribed, ["/queue/request/Weather", "/queue/response/Weather"], "{sent:?}");

    let stopping = stop_pair(pair, shutdown, bridge).await;
    let (again, ended) = changes(&stopping);
    assert!(again.is_empty(), "{stopping:?}");
    assert!(!ended.contains(&scout_id), "CivScout was already unsubscribed: {ended:?}");
    assert_eq!(ended.len(), 5, "ingress, _bridge, advisory, Weather's two: {ended:?}");
}

#[tokio::test(start_paused = true)]
async fn a_reload_naming_an_agent_whose_queue_discovery_holds_subscribes_that_queue_once() {
    let (listener, reloads, shutdown, bridge) = start_reloadable("discovery-name-found").await;
    let (mut pair, _, scout_id) = with_civscout_discovered(&listener).await;

    let (said, mut sent) = reload(&reloads, &listener, &mut pair.consuming, &["Civ*", "CivScout"]).await;
    assert!(said.contains(r#"subscribed ["/queue/response/CivScout"], unsubscribed []"#), "{said}");
    more_changes(&mut pair.consuming, 1, &mut sent).await;
    assert_eq!(changes(&sent), (vec!["/queue/response/CivScout".to_owned()], vec![]), "{sent:?}");

    let stopping = stop_pair(pair, shutdown, bridge).await;
    let (again, ended) = changes(&stopping);
    assert!(again.is_empty(), "no second SUBSCRIBE of CivScout's request queue: {stopping:?}");
    assert!(ended.contains(&scout_id), "{ended:?}");
    assert_eq!(ended.len(), 5, "ingress, _bridge, advisory, CivScout's two: {ended:?}");
}
