use super::*;
use crate::config::{AddressTls, BrokerConfig};
use crate::stomp::TlsOptions;

#[test]
fn the_client_gets_settings_of_its_own_only_for_an_address_whose_tls_files_differ() {
    let mut broker = BrokerConfig::new("");
    broker.urls = ["a", "b", "c"].iter().map(|h| format!("stomp+ssl://{h}:61617")).collect();
    broker.ca_file = Some("ca.pem".into());
    let own = |ca: &str| AddressTls { ca_file: Some(ca.into()), ..AddressTls::default() };
    broker.address_tls = [
        ("stomp+ssl://b:61617".to_owned(), own("b-ca.pem")),
        ("stomp+ssl://c:61617/".to_owned(), own("ca.pem")),
    ]
    .into();
    let client = client_config(&Config::new(broker)).unwrap();
    let ca = |file: &str| TlsOptions { ca_file: Some(file.into()), ..TlsOptions::default() };
    assert_eq!(client.tls, ca("ca.pem"));
    assert_eq!(client.address_tls, [(client.urls[1].clone(), ca("b-ca.pem"))], "c's are the broker's");
}
