use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `request` written to a served endpoint in `pieces`; the whole answer, as sent.
async fn exchange(metrics: Arc<Metrics>, pieces: &[&str]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(listener, metrics, None, shutdown.clone()));
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client.set_nodelay(true).unwrap();
    for piece in pieces {
        client.write_all(piece.as_bytes()).await.unwrap();
        client.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    let mut answer = String::new();
    client.read_to_string(&mut answer).await.unwrap();
    shutdown.cancel();
    served.await.unwrap();
    answer
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
}

#[tokio::test]
async fn a_request_that_arrives_in_pieces_is_answered_whole() {
    let pieces = ["GE", "T /rea", "dyz HTTP/1.1\r\n", "host: x\r\n", "connection: close\r\n", "\r\n"];
    let answer = exchange(Arc::new(Metrics::default()), &pieces).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.ends_with("not ready: not connected or not subscribed\n"), "{answer}");
}

#[tokio::test]
async fn readiness_follows_the_metrics_state() {
    let m = Arc::new(Metrics::default());
    m.set_connected(true);
    m.set_subscribed(true);
    assert!(exchange(m.clone(), &[&get("/readyz")]).await.starts_with("HTTP/1.1 200"));
    assert!(exchange(m.clone(), &[&get("/healthz")]).await.ends_with("\r\n\r\nok\n"));
    let metrics = exchange(m.clone(), &[&get("/metrics")]).await;
    assert!(
        metrics.contains("content-type: text/plain; version=0.0.4") && metrics.contains("bridge_ready 1")
    );
    let post = "POST /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    assert!(exchange(m.clone(), &[post]).await.starts_with("HTTP/1.1 405"));
    assert!(exchange(m, &[&get("/nothing")]).await.starts_with("HTTP/1.1 404"));
}

#[tokio::test]
async fn readyz_tells_why_it_is_not_ready() {
    let m = Arc::new(Metrics::default());
    m.set_connected(true);
    m.set_subscribed(true);
    let stall = crate::telemetry::PublishStalled { since: tokio::time::Instant::now(), messages: 3 }.emit(&m);
    let answer = exchange(m.clone(), &[&get("/readyz")]).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.contains("not ready: publishing stalled: no confirmation from the broker for 0 s"),
        "{answer}"
    );
    drop(stall);
    assert!(exchange(m, &[&get("/readyz")]).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn an_http_1_0_request_as_the_health_command_and_scripts_send_it_is_answered_and_closed() {
    let answer = exchange(Arc::new(Metrics::default()), &["GET /healthz HTTP/1.0\r\n\r\n"]).await;
    assert_eq!(answer.split_whitespace().nth(1), Some("200"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nok\n"), "{answer}");
}

#[tokio::test]
async fn the_config_route_says_how_the_last_reload_ended() {
    let answer = exchange(Arc::new(Metrics::default()), &[&get("/config")]).await;
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("content-type: application/json"),
        "{answer}"
    );
    assert!(answer.contains("\"last_reload\":null"), "{answer}");
}
