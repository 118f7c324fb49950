//! TLS against a fake STOMP broker on `stomp+ssl://` (the PKI of tests/tls/, made by
//! tests/tls/make-certs.sh): the right CA connects; a wrong CA or a host the certificate does
//! not name fails closed with an error that says which; a broker that requires a client
//! certificate accepts the bridge's and refuses a bridge without one.

use futures_util::{SinkExt, StreamExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use stomp_agent_bridge::stomp::codec::Inbound;
use stomp_agent_bridge::stomp::{Client, ClientConfig, Command, Frame, Limits, StompCodec, TlsOptions};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig, crypto};
use tokio_util::codec::Framed;

fn pem(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tls").join(name)
}

fn certs(name: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(pem(name)).unwrap().map(Result::unwrap).collect()
}

/// A broker that speaks TLS with the `localhost` certificate, requiring a client certificate
/// signed by the test CA when `client_auth`, and answers one CONNECT with CONNECTED. Its
/// port, and what became of its one connection (the client certificate's presence, or why
/// the handshake failed).
async fn tls_broker(client_auth: bool) -> (u16, tokio::task::JoinHandle<Result<bool, String>>) {
    let provider = Arc::new(crypto::ring::default_provider());
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap();
    let builder = if client_auth {
        let mut roots = RootCertStore::empty();
        roots.add(certs("ca.pem").remove(0)).unwrap();
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let key = PrivateKeyDer::from_pem_file(pem("server.key")).unwrap();
    let config = builder.with_single_cert(certs("server.pem"), key).unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let tls = acceptor.accept(tcp).await.map_err(|e| e.to_string())?;
        let had_client_cert = tls.get_ref().1.peer_certificates().is_some();
        let mut framed = Framed::new(tls, StompCodec::new(Limits::default()));
        match framed.next().await {
            Some(Ok(Inbound::Frame(f))) if f.command == Command::Connect => {}
            other => return Err(format!("no CONNECT: {other:?}")),
        }
        let connected = Frame::new(Command::Connected).with("version", "1.2").with("heart-beat", "0,0");
        framed.send(connected).await.map_err(|e| e.to_string())?;
        Ok(had_client_cert)
    });
    (port, served)
}

async fn connect(host: &str, port: u16, tls: TlsOptions) -> Result<Client, String> {
    let url = format!("stomp+ssl://{host}:{port}").parse().unwrap();
    let mut config = ClientConfig::new(url, None, None);
    config.tls = tls;
    config.connect_timeout = Duration::from_secs(10);
    Client::connect(config).await.map(|(client, _events)| client).map_err(|e| e.to_string())
}

fn trusting(ca: &str) -> TlsOptions {
    TlsOptions { ca_file: Some(pem(ca)), ..TlsOptions::default() }
}

#[tokio::test]
async fn the_right_ca_and_name_connect() {
    let (port, served) = tls_broker(false).await;
    let client = connect("localhost", port, trusting("ca.pem")).await.expect("connected over TLS");
    assert_eq!(served.await.unwrap(), Ok(false));
    client.disconnect().await.ok();
}

#[tokio::test]
async fn a_certificate_from_another_ca_fails_closed_and_says_so() {
    let (port, served) = tls_broker(false).await;
    let err = connect("localhost", port, trusting("other-ca.pem")).await.expect_err("an unknown issuer");
    assert!(err.contains("invalid peer certificate") && err.contains("UnknownIssuer"), "{err}");
    assert!(served.await.unwrap().is_err(), "the broker saw no CONNECT");
}

#[tokio::test]
async fn a_host_the_certificate_does_not_name_fails_closed_and_says_so() {
    let (port, served) = tls_broker(false).await;
    let err = connect("127.0.0.1", port, trusting("ca.pem")).await.expect_err("not valid for 127.0.0.1");
    assert!(err.contains("invalid peer certificate") && err.contains("not valid for name"), "{err}");
    assert!(err.contains("127.0.0.1") && err.contains("localhost"), "names both: {err}");
    assert!(served.await.unwrap().is_err(), "the broker saw no CONNECT");
}

#[tokio::test]
async fn a_broker_that_requires_a_client_certificate_accepts_the_bridges_and_refuses_none() {
    let (port, served) = tls_broker(true).await;
    let with_cert = TlsOptions {
        cert_file: Some(pem("client.pem")),
        key_file: Some(pem("client.key")),
        ..trusting("ca.pem")
    };
    let client = connect("localhost", port, with_cert).await.expect("connected with a client certificate");
    assert_eq!(served.await.unwrap(), Ok(true), "the broker saw the client certificate");
    client.disconnect().await.ok();

    let (port, served) = tls_broker(true).await;
    let err = connect("localhost", port, trusting("ca.pem")).await.expect_err("no client certificate");
    assert!(err.contains("CertificateRequired"), "the broker said why: {err}");
    let broker_side = served.await.unwrap().expect_err("the broker refused the handshake");
    assert!(broker_side.contains("certificate"), "{broker_side}");
}
