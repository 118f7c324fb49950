use super::*;

#[test]
fn urls_parse_with_default_ports_and_ipv6() {
    let u: BrokerUrl = "stomp://127.0.0.1:61623".parse().unwrap();
    assert_eq!((u.host.as_str(), u.port, u.tls), ("127.0.0.1", 61623, false));
    let u: BrokerUrl = "stomp+ssl://broker.example".parse().unwrap();
    assert_eq!((u.port, u.tls), (61614, true));
    let u: BrokerUrl = "stomp://[::1]:1234/".parse().unwrap();
    assert_eq!((u.host.as_str(), u.port), ("::1", 1234));
    assert_eq!(u.to_string(), "stomp://[::1]:1234");
}

#[test]
fn bad_urls_say_what_is_wrong() {
    for (url, needle) in [
        ("tcp://x:1", "scheme"),
        ("stomp://x:notaport", "port"),
        ("stomp://:61613", "host is empty"),
        ("stomp://x:70000", "port"),
    ] {
        let err = url.parse::<BrokerUrl>().unwrap_err().to_string();
        assert!(err.contains(needle), "{url}: {err}");
    }
}

#[test]
fn a_missing_ca_file_is_a_tls_error_naming_the_file() {
    let opts = TlsOptions { ca_file: Some("/nonexistent/ca.pem".into()), ..Default::default() };
    let err = tls_connector(&opts).err().expect("fails").to_string();
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
}

#[test]
fn a_tls_alert_from_the_broker_says_it_refused_the_handshake_and_asks_about_the_certificate() {
    let alert = |a| {
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, rustls::Error::AlertReceived(a));
        SessionError::Frame(FrameError::Io(io))
    };
    let none = TlsOptions::default();
    let err = refused_handshake(alert(AlertDescription::BadCertificate), &none).to_string();
    assert_eq!(
        err,
        "the broker refused the TLS handshake: received fatal alert: BadCertificate \
         (no client certificate was presented: does the broker require one?)"
    );
    let with = TlsOptions { cert_file: Some("/etc/bridge/client.pem".into()), ..Default::default() };
    let connect = SessionError::Connect {
        addr: "broker:61614".into(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(AlertDescription::UnknownCA),
        ),
    };
    let err = refused_handshake(connect, &with).to_string();
    assert_eq!(
        err,
        "the broker refused the TLS handshake: received fatal alert: UnknownCA \
         (does the broker trust the client certificate /etc/bridge/client.pem?)"
    );
    let err = refused_handshake(alert(AlertDescription::ProtocolVersion), &with).to_string();
    assert_eq!(err, "the broker refused the TLS handshake: received fatal alert: ProtocolVersion");
    // Anything else is left as it was.
    let reset = SessionError::Frame(FrameError::Io(std::io::ErrorKind::ConnectionReset.into()));
    assert!(matches!(refused_handshake(reset, &none), SessionError::Frame(_)));
}

#[tokio::test]
async fn an_in_process_broker_is_reached_by_its_name_and_an_unknown_name_is_refused() {
    let url: BrokerUrl = "stomp+memory://fake-1".parse().unwrap();
    assert!(url.memory && !url.tls);
    assert_eq!((url.host.as_str(), url.to_string()), ("fake-1", "stomp+memory://fake-1".to_owned()));
    assert!("stomp+memory://".parse::<BrokerUrl>().is_err());
    let refused = open(&url, None).await.err().expect("nothing listens under that name yet");
    assert!(matches!(refused, SessionError::Connect { .. }), "{refused}");

    let listener = crate::stomp::memory::Listener::bind("fake-1");
    let mut client = open(&url, None).await.unwrap();
    let mut broker = listener.accept().await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    client.write_all(b"CONNECT\n\n\0").await.unwrap();
    let mut read = [0u8; 10];
    broker.read_exact(&mut read).await.unwrap();
    assert_eq!(&read, b"CONNECT\n\n\0");
    drop(listener);
    assert!(open(&url, None).await.is_err(), "a dropped listener takes its name with it");
}
