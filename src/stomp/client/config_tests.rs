use super::*;

fn config_with(n: usize) -> ClientConfig {
    let url = |i: usize| format!("stomp://127.0.0.1:{}", 61700 + i).parse().unwrap();
    let mut config = ClientConfig::new(url(0), None, None);
    config.urls = (0..n).map(url).collect();
    config
}

#[test]
fn after_a_loss_the_next_address_comes_first_then_the_others_in_order_wrapping_round() {
    let three = config_with(3);
    let walk: Vec<(usize, u32)> = (0..7).map(|attempt| three.reconnect_target(1, attempt)).collect();
    assert_eq!(walk, [(2, 0), (0, 0), (1, 0), (2, 1), (0, 1), (1, 1), (2, 2)]);
}

#[test]
fn with_one_address_every_attempt_is_a_backoff_step_as_before() {
    let one = config_with(1);
    let walk: Vec<(usize, u32)> = (0..4).map(|attempt| one.reconnect_target(0, attempt)).collect();
    assert_eq!(walk, [(0, 0), (0, 1), (0, 2), (0, 3)]);
}

#[test]
fn an_address_with_tls_settings_of_its_own_gets_them_and_the_others_the_common_ones() {
    let mut config = config_with(2);
    let ca = |file: &str| TlsOptions { ca_file: Some(file.into()), ..TlsOptions::default() };
    config.tls = ca("common.pem");
    config.address_tls = vec![(config.urls[1].clone(), ca("own.pem"))];
    assert_eq!(config.tls_for(&config.urls[0]), &ca("common.pem"));
    assert_eq!(config.tls_for(&config.urls[1]), &ca("own.pem"));
}
