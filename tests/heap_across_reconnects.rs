//! A connection lost and made again, with a burst settled on each, leaves nothing behind:
//! the bridge's live heap (counted by the daemon's own allocator, installed here) is the same
//! after many more reconnects and bursts. The soak sees the same on a real broker (docs/HARDENING.md).

mod common;

use common::fake::{Conn, start as start_bridge, stop, wait_for, weather_config};
use stomp_agent_bridge::stomp::Command;
use stomp_agent_bridge::telemetry::heap::{Counting, live_bytes};
use tokio::net::TcpListener;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One life of the connection: subscribed, a burst of `BURST` requests delivered, each
/// published (confirmed) and acknowledged.
async fn one_connection(listener: &TcpListener, round: usize) -> Conn {
    let mut conn = Conn::accept(listener).await;
    let sub = conn.subscriptions().await;
    for i in 0..BURST {
        conn.deliver(&sub, &format!("ack-{round}-{i}")).await;
    }
    let mut acked = 0;
    while acked < BURST {
        let frame = conn.next().await.expect("the bridge settles the burst");
        match frame.command {
            Command::Send => conn.receipt(&frame).await,
            Command::Ack => acked += 1,
            other => panic!("{other:?} while the burst was settled"),
        }
    }
    conn
}

const BURST: usize = 32;

#[tokio::test]
async fn many_reconnects_leave_the_live_heap_where_a_few_left_it() {
    // The correlation table is kept full from the start (Weather never answers), so the asks
    // it holds do not grow with the rounds.
    let (listener, metrics, shutdown, bridge) = start_bridge("heap-reconnects", |port| {
        weather_config(port, "[0, 0]", "dead_letter = \"/queue/fake.dead\"\ncorrelation_capacity = 2")
    })
    .await;
    let mut heap = Vec::with_capacity(60); // allocated once: the test counts its own heap too
    let mut conn = one_connection(&listener, 0).await;
    for round in 1..=60 {
        wait_for(&metrics, &format!("outcome=\"delivered\"}} {}", round * BURST)).await;
        heap.push(live_bytes().expect("the counting allocator is installed"));
        drop(conn); // the broker goes away; the bridge connects again
        conn = one_connection(&listener, round).await;
    }
    stop(conn, shutdown, bridge).await;
    eprintln!("live heap after each reconnect: {heap:?}");
    let floor = |rounds: &[usize]| rounds.iter().copied().min().unwrap_or(0);
    let (after_ten, after_sixty) = (floor(&heap[10..20]), floor(&heap[50..60]));
    assert!(
        after_sixty <= after_ten + 2048,
        "the live heap grew by {} bytes over 40 reconnects: {heap:?}",
        after_sixty.saturating_sub(after_ten)
    );
}
