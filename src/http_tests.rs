use super::*;

#[tokio::test]
async fn a_request_that_arrives_in_pieces_is_answered_whole() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metrics = Arc::new(Metrics::default());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(listener, metrics, shutdown.clone()));
    let mut client = TcpStream::connect(addr).await.unwrap();
    client.set_nodelay(true).unwrap();
    for piece in ["GE", "T /rea", "dyz HTTP/1.1\r\n", "host: x\r\n", "\r\n"] {
        client.write_all(piece.as_bytes()).await.unwrap();
        client.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    let mut answer = String::new();
    client.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    shutdown.cancel();
}

#[test]
fn readiness_follows_the_metrics_state() {
    let m = Metrics::default();
    assert_eq!(respond(true, "/readyz", &m).0, "503 Service Unavailable");
    m.set_connected(true);
    m.set_subscribed(true);
    assert_eq!(respond(true, "/readyz", &m).0, "200 OK");
    assert_eq!(respond(true, "/healthz", &m).0, "200 OK");
    assert!(respond(true, "/metrics", &m).2.contains("bridge_ready 1"));
    assert_eq!(respond(false, "/metrics", &m).0, "405 Method Not Allowed");
}

#[test]
fn readyz_tells_why_it_is_not_ready() {
    let m = Arc::new(Metrics::default());
    assert_eq!(respond(true, "/readyz", &m).2, "not ready: not connected or not subscribed\n");
    m.set_connected(true);
    m.set_subscribed(true);
    let stall = crate::telemetry::PublishStalled { since: tokio::time::Instant::now(), messages: 3 }.emit(&m);
    let (status, _, body) = respond(true, "/readyz", &m);
    assert_eq!(status, "503 Service Unavailable");
    assert!(
        body.starts_with("not ready: publishing stalled: no confirmation from the broker for 0 s"),
        "{body}"
    );
    drop(stall);
    assert_eq!(respond(true, "/readyz", &m).0, "200 OK");
}

#[test]
fn the_config_route_says_how_the_last_reload_ended() {
    let m = Metrics::default();
    let (status, content_type, body) = respond(true, "/config", &m);
    assert_eq!((status, content_type), ("200 OK", "application/json"));
    assert!(body.contains("\"last_reload\":null"), "{body}");
}
