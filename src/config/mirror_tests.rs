use super::*;

#[test]
fn defaults_are_dotted_topics_and_pass() {
    let c: MirrorConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(c.tap, TapKind::Activemq);
    assert_eq!(c.topics.enabled().count(), 4);
    assert!(c.problems("/queue/request/", "/queue/response/").is_empty());
}

#[test]
fn output_the_bridge_would_read_back_is_refused() {
    let c: MirrorConfig = serde_json::from_value(serde_json::json!({"buffer": 0, "topics": {
        "civitas": "/queue/request/x.{agent}", "vox": "mirror",
        "penguiflow": "/topic/mirror.wiseagents", "canonical": ""}}))
    .unwrap();
    let keys: Vec<String> =
        c.problems("/queue/request/", "/queue/response/").into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        ["mirror.buffer", "mirror.topics.civitas", "mirror.topics.vox", "mirror.topics.penguiflow"]
    );
    assert_eq!(c.topics.enabled().count(), 3);
    let firehose: MirrorConfig =
        serde_json::from_value(serde_json::json!({"tap": "rabbitmq-firehose"})).unwrap();
    let problems = firehose.problems("/exchange/x/request.", "/queue/response.");
    assert_eq!(problems.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["mirror.tap"]);
    assert!(firehose.problems("/queue/request.", "/queue/response.").is_empty());
}
