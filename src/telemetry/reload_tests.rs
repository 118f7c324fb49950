use super::*;

#[test]
fn each_outcome_is_counted_and_the_last_one_is_kept_with_its_reason() {
    let m = ReloadMetrics::default();
    let status: serde_json::Value = serde_json::from_str(&m.status()).unwrap();
    assert_eq!(status["last_reload"], serde_json::Value::Null);
    ConfigReloaded { outcome: ReloadOutcome::Invalid, file: "b.toml", reason: "error: agents[0].protocol" }
        .emit(&m);
    ConfigReloaded { outcome: ReloadOutcome::Refused, file: "b.toml", reason: "broker.url cannot change" }
        .emit(&m);
    let status: serde_json::Value = serde_json::from_str(&m.status()).unwrap();
    assert_eq!(status["reloads"], serde_json::json!({"applied": 0, "refused": 1, "invalid": 1}));
    assert_eq!(status["last_reload"]["outcome"], "refused");
    assert_eq!(status["last_reload"]["reason"], "broker.url cannot change");
    assert_eq!(status["last_reload"]["file"], "b.toml");
    let mut text = String::new();
    m.render(&mut text);
    assert!(text.contains("bridge_config_reloads_total{outcome=\"applied\"} 0\n"), "{text}");
    assert!(text.contains("bridge_config_reloads_total{outcome=\"invalid\"} 1\n"), "{text}");
}
