use super::*;
use crate::telemetry::Event as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `request` written to a served endpoint in `pieces`; the whole answer, as sent.
async fn exchange(metrics: Arc<Metrics>, pieces: &[&str]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(listener, None, metrics, Services::default(), shutdown.clone()));
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

/// A file of the TLS fixtures in `tests/tls` (a CA, and a server certificate for `localhost`).
fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls").join(name)
}

/// A TLS client trusting the fixtures' CA, connected to `addr` as `localhost`.
async fn https_client(
    addr: std::net::SocketAddr,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let opts = crate::stomp::TlsOptions { ca_file: Some(fixture("ca.pem")), ..Default::default() };
    let config = crate::stomp::tls_client_config(&opts).unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await
}

#[tokio::test]
async fn with_a_certificate_the_endpoint_is_https_and_a_stalled_handshake_holds_no_one_back() {
    let tls = tls::server_config(&fixture("server.pem"), &fixture("server.key")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(
        listener,
        Some(tls),
        Arc::new(Metrics::default()),
        Services::default(),
        shutdown.clone(),
    ));
    // A client that connects and never says hello.
    let _stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut client = https_client(addr).await.expect("the handshake");
    client.write_all(get("/healthz").as_bytes()).await.unwrap();
    let mut answer = String::new();
    client.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok\n"), "{answer}");
    // Plain HTTP on the HTTPS port gets no answer from the routes.
    let mut plain = tokio::net::TcpStream::connect(addr).await.unwrap();
    plain.write_all(get("/healthz").as_bytes()).await.unwrap();
    let mut refused = Vec::new();
    let _ = plain.read_to_end(&mut refused).await;
    assert!(!String::from_utf8_lossy(&refused).contains("200 OK"), "{refused:?}");
    shutdown.cancel();
    served.await.unwrap();
}

#[test]
fn a_certificate_without_a_usable_key_is_refused_with_why() {
    let e = tls::server_config(&fixture("server.pem"), &fixture("client.key")).unwrap_err();
    assert!(e.contains("cannot be used together"), "{e}");
    let e = tls::server_config(&fixture("missing.pem"), &fixture("server.key")).unwrap_err();
    assert!(e.contains("missing.pem"), "{e}");
}
