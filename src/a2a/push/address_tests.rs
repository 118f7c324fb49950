use super::*;

#[test]
fn public_http_and_https_urls_are_webhooks() {
    for url in
        ["https://hooks.example.com/a2a?k=1", "http://203.0.113.7:8080/push", "https://[2001:db8::1]/x"]
    {
        assert_eq!(refusal(url, false), None, "{url}");
    }
}

#[test]
fn other_schemes_and_non_urls_are_refused_whatever_is_allowed() {
    for url in ["ftp://example.com/x", "file:///etc/passwd", "not a url", "unix:/run/x"] {
        assert!(refusal(url, true).is_some(), "{url}");
    }
}

#[test]
fn loopback_private_link_local_and_metadata_hosts_are_refused_unless_allowed() {
    for url in [
        "http://127.0.0.1:9000/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://app.localhost/",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://metadata.google.internal/",
        "http://[::1]/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",
    ] {
        let why = refusal(url, false).unwrap_or_default();
        assert!(why.contains("a2a.push.allow_private"), "{url}: {why}");
        assert_eq!(refusal(url, true), None, "{url}");
    }
}

#[tokio::test]
async fn the_resolver_keeps_no_loopback_address() {
    let name: Name = "localhost".parse().unwrap();
    let Err(refused) = Guarded.resolve(name).await else {
        panic!("localhost resolved to an allowed address")
    };
    assert!(refused.to_string().contains("a2a.push.allow_private"), "{refused}");
}
