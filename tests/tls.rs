//! TLS against a fake STOMP broker on `stomp+ssl://` (the PKI of tests/tls/, made by
//! tests/tls/make-certs.sh): the right CA connects; a wrong CA or a host the certificate does
//! not name fails closed with an error that says which; a broker that requires a client
//! certificate accepts the bridge's and refuses a bridge without one; an address with TLS
//! settings of its own is connected, and explained, with them.
//!
//! Then the bridge as a process against ActiveMQ Classic's and Artemis's acceptors that require
//! a client certificate (`needClientAuth`, the STOMP port + 2: 61615 and 61635), with the CA and
//! client certificate `scripts/brokers.sh start` made: its certificate carries a request
//! through; none, or one from another CA, is refused, nothing moves, and the log says why.
//! And the bridge on both brokers' TLS acceptors (the STOMP port + 1: 61614 and 61634) as two
//! addresses, one of them given a CA of its own that does not trust its broker
//! (`broker.address_tls`): that one fails with a certificate error, the other carries a request.

#[macro_use]
mod common;

use common::bridge::{BridgeProcess, Names, config, free_port, proxied};
use common::{Broker, next_message};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use stomp_agent_bridge::config::{AddressTls, Config};
use stomp_agent_bridge::stomp::codec::Wire;
use stomp_agent_bridge::stomp::{
    AckMode, BrokerUrl, Client, ClientConfig, Command, Frame, Limits, StompCodec, Subscription, TlsOptions,
};
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
/// signed by the CA in `client_ca` when it is given, and answers one CONNECT with CONNECTED.
/// Its port, and what became of its one connection (the client certificate's presence, or
/// why the handshake failed).
async fn tls_broker(client_ca: Option<&str>) -> (u16, tokio::task::JoinHandle<Result<bool, String>>) {
    let provider = Arc::new(crypto::ring::default_provider());
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap();
    let builder = if let Some(ca) = client_ca {
        let mut roots = RootCertStore::empty();
        roots.add(certs(ca).remove(0)).unwrap();
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
            Some(Ok(Wire::Frame(f))) if f.command == Command::Connect => {}
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
    let (port, served) = tls_broker(None).await;
    let client = connect("localhost", port, trusting("ca.pem")).await.expect("connected over TLS");
    assert_eq!(served.await.unwrap(), Ok(false));
    client.disconnect().await.ok();
}

#[tokio::test]
async fn a_certificate_from_another_ca_fails_closed_and_says_so() {
    let (port, served) = tls_broker(None).await;
    let err = connect("localhost", port, trusting("other-ca.pem")).await.expect_err("an unknown issuer");
    assert!(err.contains("invalid peer certificate") && err.contains("UnknownIssuer"), "{err}");
    assert!(served.await.unwrap().is_err(), "the broker saw no CONNECT");
}

#[tokio::test]
async fn a_host_the_certificate_does_not_name_fails_closed_and_says_so() {
    let (port, served) = tls_broker(None).await;
    let err = connect("127.0.0.1", port, trusting("ca.pem")).await.expect_err("not valid for 127.0.0.1");
    assert!(err.contains("invalid peer certificate") && err.contains("not valid for name"), "{err}");
    assert!(err.contains("127.0.0.1") && err.contains("localhost"), "names both: {err}");
    assert!(served.await.unwrap().is_err(), "the broker saw no CONNECT");
}

#[tokio::test]
async fn a_broker_that_requires_a_client_certificate_accepts_the_bridges_and_refuses_none() {
    let (port, served) = tls_broker(Some("ca.pem")).await;
    let with_cert = TlsOptions {
        cert_file: Some(pem("client.pem")),
        key_file: Some(pem("client.key")),
        ..trusting("ca.pem")
    };
    let client = connect("localhost", port, with_cert).await.expect("connected with a client certificate");
    assert_eq!(served.await.unwrap(), Ok(true), "the broker saw the client certificate");
    client.disconnect().await.ok();

    let (port, served) = tls_broker(Some("ca.pem")).await;
    let err = connect("localhost", port, trusting("ca.pem")).await.expect_err("no client certificate");
    assert_eq!(
        err,
        "the broker refused the TLS handshake: received fatal alert: CertificateRequired \
         (no client certificate was presented: does the broker require one?)"
    );
    let broker_side = served.await.unwrap().expect_err("the broker refused the handshake");
    assert!(broker_side.contains("certificate"), "{broker_side}");
}

/// A client of the fake brokers on `ports`, tried in order, with `tls` for every address but
/// the first, which has `own`.
async fn connect_each_with_its_own(
    ports: &[u16],
    tls: TlsOptions,
    own: TlsOptions,
) -> Result<Client, String> {
    let urls: Vec<BrokerUrl> =
        ports.iter().map(|port| format!("stomp+ssl://localhost:{port}").parse().unwrap()).collect();
    let mut config = ClientConfig::new(urls[0].clone(), None, None);
    config.address_tls = vec![(urls[0].clone(), own)];
    (config.urls, config.tls) = (urls, tls);
    Client::connect(config).await.map(|(client, _events)| client).map_err(|e| e.to_string())
}

#[tokio::test]
async fn an_address_whose_own_ca_does_not_trust_its_broker_is_passed_over_for_the_next() {
    let (first, first_served) = tls_broker(None).await;
    let (second, second_served) = tls_broker(None).await;
    let client = connect_each_with_its_own(&[first, second], trusting("ca.pem"), trusting("other-ca.pem"))
        .await
        .expect("the second address, with the common CA, connects");
    assert_eq!(client.address().port, second);
    let refused = first_served.await.unwrap().expect_err("the first refused by its own CA");
    assert!(refused.contains("UnknownCA"), "the client said its CA does not know the broker's: {refused}");
    assert_eq!(second_served.await.unwrap(), Ok(false));
    client.disconnect().await.ok();
}

#[tokio::test]
async fn a_client_certificate_refused_at_an_address_is_named_from_that_addresss_settings() {
    // The broker trusts only client certificates of the other CA; the address's own settings
    // present the test client's, the common settings none.
    let (port, served) = tls_broker(Some("other-ca.pem")).await;
    let own = TlsOptions {
        cert_file: Some(pem("client.pem")),
        key_file: Some(pem("client.key")),
        ..trusting("ca.pem")
    };
    let err = connect_each_with_its_own(&[port], trusting("ca.pem"), own).await.expect_err("refused");
    assert!(err.starts_with("the broker refused the TLS handshake: received fatal alert: "), "{err}");
    let asked = format!("(does the broker trust the client certificate {}?)", pem("client.pem").display());
    assert!(err.ends_with(&asked), "{err}");
    let broker_side = served.await.unwrap().expect_err("the broker refused the handshake");
    assert!(broker_side.contains("UnknownIssuer"), "the address's certificate was presented: {broker_side}");
}

/// A file `scripts/brokers.sh start` made for ActiveMQ's SSL connectors, beside the test CA.
/// Without it the test fails; it never skips.
fn brokers_tls(name: &str) -> PathBuf {
    let path = common::test_ca().with_file_name(name);
    assert!(path.is_file(), "{} is missing: run scripts/brokers.sh start", path.display());
    path
}

/// The broker's STOMP+SSL connector with `needClientAuth=true` (scripts/brokers.sh).
fn client_auth_port(broker: Broker) -> u16 {
    broker.port() + 2
}

/// A bridge for one Civitas agent `civ` whose only broker URL is the broker's connector that
/// requires a client certificate, with the brokers' test CA, and `client`'s certificate and
/// key if given.
fn client_auth_bridge(
    broker: Broker,
    names: &Names,
    civ: &str,
    client: Option<(&Path, &Path)>,
    http_port: u16,
) -> Config {
    let mut config = config(broker, names, vec![proxied(civ, "civitas")], http_port);
    let tls = &mut config.broker;
    tls.url = format!("stomp+ssl://127.0.0.1:{}", client_auth_port(broker));
    tls.ca_file = Some(brokers_tls("ca.pem"));
    if let Some((cert, key)) = client {
        (tls.cert_file, tls.key_file) = (Some(cert.into()), Some(key.into()));
    }
    config
}

/// A Wise Agents query from `sender`, as a Wise Agents agent sends it.
fn wise_agents_query(text: &str, sender: &str) -> Vec<u8> {
    common::wise_query(text, sender, "Books").to_yaml().into_bytes()
}

/// A client of the broker's plain STOMP connector subscribed to `dest`: the agents' side.
async fn listen(broker: Broker, dest: &str) -> (Client, stomp_agent_bridge::stomp::Events) {
    let (client, events) = broker.connect().await;
    client.subscribe(Subscription::new(dest, AckMode::Auto)).await.unwrap();
    (client, events)
}

async fn send_request(broker: Broker, names: &Names, civ: &str, body: Vec<u8>) {
    let (producer, _) = broker.connect().await;
    let frame = Frame::new(Command::Send).with("destination", names.request(civ)).with_body(body);
    producer.send_confirmed(frame).await.expect("the request is on its queue");
    producer.disconnect().await.ok();
}

async fn the_bridge_with_a_client_certificate_carries_a_request_through_the_client_auth_connector(
    broker: Broker,
) {
    let names = Names::new(broker);
    let civ = names.agent("Weather");
    let caller = names.agent("LLMAgent");
    let (cert, key) = (brokers_tls("client.pem"), brokers_tls("client.key"));
    let http_port = free_port();
    let config = client_auth_bridge(broker, &names, &civ, Some((&cert, &key)), http_port);
    let bridge = BridgeProcess::start(&config, http_port, &names.uid);
    assert_eq!(bridge.http_get("/readyz").0, 200, "connected through port {}", client_auth_port(broker));

    let (_agent, mut inbox) = listen(broker, &names.dest(&format!("civitas.in.{civ}"))).await;
    send_request(broker, &names, &civ, wise_agents_query("which books on TLS?", &caller)).await;
    let m = next_message(&mut inbox, 30).await;
    let asked: Value = serde_json::from_slice(m.body()).unwrap();
    assert_eq!(asked["type"], "message", "{asked}");
    assert_eq!(asked["recipient"], civ.as_str(), "{asked}");
    assert_eq!(asked["reply_to"], caller.as_str(), "{asked}");
    assert_eq!(asked["payload"]["message"], "which books on TLS?", "{asked}");
}

/// Runs the bridge with `client`'s certificate and key, if any, against the connector that
/// requires a client certificate, with a request waiting for it: the bridge never becomes
/// ready, the request stays on its queue unread and the Civitas inbox stays empty. The error
/// it logged.
async fn refused_by_the_client_auth_connector(broker: Broker, client: Option<(&Path, &Path)>) -> String {
    let names = Names::new(broker);
    let civ = names.agent("Weather");
    let (_agent, mut inbox) = listen(broker, &names.dest(&format!("civitas.in.{civ}"))).await;
    let body = wise_agents_query("this must not move", &names.agent("LLMAgent"));
    send_request(broker, &names, &civ, body.clone()).await;

    let http_port = free_port();
    let config = client_auth_bridge(broker, &names, &civ, client, http_port);
    let mut bridge = BridgeProcess::spawn(&config, http_port, &names.uid);
    let first = bridge.wait_log("cannot connect to the broker", 30);
    bridge.wait_log("cannot connect to the broker", 30);
    assert_ne!(bridge.http_get("/readyz").0, 200, "not ready without a connection");
    assert!(bridge.logged("bridge ready").is_empty(), "never ready");
    bridge.kill9();

    let nothing = tokio::time::timeout(std::time::Duration::from_secs(1), inbox.next_message()).await;
    assert!(nothing.is_err(), "nothing reached the Civitas inbox: {nothing:?}");
    let (_c, mut requests) = listen(broker, &names.request(&civ)).await;
    assert_eq!(next_message(&mut requests, 30).await.body(), &body[..], "the request is still on its queue");
    let error: Value = serde_json::from_str(&first).unwrap();
    let error = error["error"].as_str().unwrap_or_else(|| panic!("no error field: {first}"));
    error.to_owned()
}

async fn the_bridge_without_a_client_certificate_is_refused_by_the_client_auth_connector_and_says_why(
    broker: Broker,
) {
    let error = refused_by_the_client_auth_connector(broker, None).await;
    assert_eq!(
        error,
        "the broker refused the TLS handshake: received fatal alert: BadCertificate \
         (no client certificate was presented: does the broker require one?)"
    );
}

async fn a_client_certificate_from_another_ca_is_refused_by_the_client_auth_connector_and_says_why(
    broker: Broker,
) {
    // tests/tls/'s client certificate: its CA is not in the broker's truststore.
    let error =
        refused_by_the_client_auth_connector(broker, Some((&pem("client.pem"), &pem("client.key")))).await;
    let said = "the broker refused the TLS handshake: received fatal alert: CertificateUnknown";
    let asked = format!("(does the broker trust the client certificate {}?)", pem("client.pem").display());
    assert_eq!(error, format!("{said} {asked}"));
}

mod activemq {
    on!(ActiveMq:
        the_bridge_with_a_client_certificate_carries_a_request_through_the_client_auth_connector,
        the_bridge_without_a_client_certificate_is_refused_by_the_client_auth_connector_and_says_why,
        a_client_certificate_from_another_ca_is_refused_by_the_client_auth_connector_and_says_why,
    );
}

mod artemis {
    on!(Artemis:
        the_bridge_with_a_client_certificate_carries_a_request_through_the_client_auth_connector,
        the_bridge_without_a_client_certificate_is_refused_by_the_client_auth_connector_and_says_why,
        a_client_certificate_from_another_ca_is_refused_by_the_client_auth_connector_and_says_why,
    );
}

/// The broker's STOMP+SSL connector without client authentication (scripts/brokers.sh).
fn tls_address(broker: Broker) -> String {
    format!("stomp+ssl://127.0.0.1:{}", broker.port() + 1)
}

/// The bridge on two addresses, the TLS connectors of `refusing` then of `accepting`, with the
/// brokers' test CA (`broker.ca_file`) for both but `refusing`, whose own `ca_file` is
/// tests/tls/'s other CA (it signs neither broker's certificate). The bridge logs the
/// certificate error of `refusing`, connects every connection to `accepting` (`/readyz` names
/// it alone), and carries a request through it.
///
/// Run as (ActiveMQ, Artemis): ActiveMQ's own CA refuses it, the bridge goes on to Artemis.
/// The converse, (Artemis, ActiveMQ): the wrong CA is Artemis's alone, ActiveMQ has no entry
/// and so the broker-level CA, and the bridge connects to ActiveMQ. The address with the wrong
/// CA comes first each time, so that it is tried.
async fn an_address_whose_own_ca_does_not_trust_its_broker_is_passed_over(
    refusing: Broker,
    accepting: Broker,
) {
    let names = Names::new(accepting);
    let civ = names.agent("Weather");
    let caller = names.agent("LLMAgent");
    let http_port = free_port();
    let mut config = config(accepting, &names, vec![proxied(&civ, "civitas")], http_port);
    let b = &mut config.broker;
    (b.url, b.urls) = (String::new(), vec![tls_address(refusing), tls_address(accepting)]);
    b.ca_file = Some(brokers_tls("ca.pem"));
    let own = AddressTls { ca_file: Some(pem("other-ca.pem")), ..AddressTls::default() };
    b.address_tls = [(tls_address(refusing), own)].into();
    let mut bridge = BridgeProcess::spawn(&config, http_port, &names.uid);

    // At the default level: a TLS failure is a setting to fix, said at warn.
    let passed_over = bridge.wait_log("this address refuses the TLS settings", 30);
    let line: Value = serde_json::from_str(&passed_over).unwrap();
    assert_eq!(line["broker"], tls_address(refusing).as_str(), "{passed_over}");
    let error = line["error"].as_str().unwrap_or_else(|| panic!("no error field: {passed_over}"));
    assert!(error.contains("invalid peer certificate") && error.contains("UnknownIssuer"), "{error}");
    bridge.wait_log("bridge ready", 30);
    let (status, ready) = bridge.http_get("/readyz");
    assert_eq!(
        (status, ready.lines().collect::<Vec<_>>()),
        (200, vec!["ready", &format!("broker: {}", tls_address(accepting))])
    );
    let metrics = bridge.http_get("/metrics").1;
    let connected = format!("bridge_broker_connected{{address=\"{}\"}}", tls_address(refusing));
    assert!(!metrics.contains(&connected), "never connected to {}: {metrics}", tls_address(refusing));

    let (_agent, mut inbox) = listen(accepting, &names.dest(&format!("civitas.in.{civ}"))).await;
    send_request(accepting, &names, &civ, wise_agents_query("which books on failover?", &caller)).await;
    let asked: Value = serde_json::from_slice(next_message(&mut inbox, 30).await.body()).unwrap();
    assert_eq!(asked["payload"]["message"], "which books on failover?", "{asked}");
    assert_eq!(asked["reply_to"], caller.as_str(), "{asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activemqs_own_ca_refuses_it_and_the_bridge_connects_to_artemis() {
    an_address_whose_own_ca_does_not_trust_its_broker_is_passed_over(Broker::ActiveMq, Broker::Artemis).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artemiss_own_ca_refuses_it_and_the_bridge_connects_to_activemq_with_the_brokers_ca() {
    an_address_whose_own_ca_does_not_trust_its_broker_is_passed_over(Broker::Artemis, Broker::ActiveMq).await
}
