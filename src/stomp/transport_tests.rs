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
