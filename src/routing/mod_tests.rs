use super::*;

fn router() -> Router {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    Router::new(&Config::load(&path).unwrap())
}

fn env(recipient: &str, direction: Direction) -> Envelope {
    Envelope { recipient: Some(recipient.into()), direction, ..Default::default() }
}

#[test]
fn it_consumes_each_proxied_agents_wise_agents_queues_and_each_ingress() {
    let subs = router().subscriptions();
    for want in [
        "/queue/request/WeatherAgent",
        "/queue/response/WeatherAgent",
        "/queue/request/Ops",
        "/queue/bridge.vox",
    ] {
        assert!(subs.iter().any(|s| s == want), "{want} missing from {subs:?}");
    }
    assert!(!subs.iter().any(|s| s.ends_with("/Assistant")), "never a native agent's queue");
    assert!(subs.iter().any(|s| s == "/queue/response/_bridge"), "the bridge's own reply name");
    assert_eq!(subs.len(), 4 * 2 + 3 + 1);
}

#[test]
fn destinations_are_recognised_with_either_separator() {
    let r = router();
    let want = Some(Source::WiseAgents { agent: "Planner".into(), direction: Direction::Response });
    assert_eq!(r.classify("/queue/response/Planner"), want);
    assert_eq!(r.classify("/queue/response.Planner"), want);
    assert_eq!(r.classify("/queue/bridge.civitas"), Some(Source::Ingress(Framework::Civitas)));
    assert_eq!(r.classify("/queue/request/Assistant"), None);
}

#[test]
fn proxied_recipients_go_to_their_inbox_and_native_ones_to_their_queue() {
    let r = router();
    let t = r.target(&env("Indexer", Direction::Request)).unwrap();
    assert_eq!(
        (t.framework, t.destination.as_str(), t.encoding),
        (Framework::Civitas, "/queue/civitas.Indexer", Some(Encoding::Msgpack))
    );
    assert_eq!(r.target(&env("User", Direction::Response)).unwrap().destination, "/queue/response/User");
    assert_eq!(r.target(&env("User", Direction::Request)).unwrap().destination, "/queue/request/User");
    assert!(matches!(r.target(&env("a/b", Direction::Request)), Err(RouteError::BadRecipient(_))));
    assert!(matches!(r.target(&Envelope::default()), Err(RouteError::NoRecipient)));
}

#[test]
fn agents_named_by_a_glob_are_routed_and_their_queues_discovered() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    let mut config = Config::load(&path).unwrap();
    config.agents.push(crate::config::AgentConfig::new("Civ*", crate::envelope::codecs::Framework::Civitas));
    let r = Router::new(&config);
    assert!(r.has_patterns());
    assert_eq!(r.target(&env("CivA", Direction::Request)).unwrap().destination, "/queue/civitas.CivA");
    assert_eq!(r.discover("request/CivA").as_deref(), Some("/queue/request/CivA"));
    assert_eq!(r.discover("response.CivB").as_deref(), Some("/queue/response.CivB"));
    assert_eq!(r.discover("request/WeatherAgent"), None, "named agents are subscribed already");
    assert_eq!(r.discover("request/Assistant"), None, "never a native agent's queue");
    assert!(!r.subscriptions().iter().any(|s| s.contains('*')));
}

#[test]
fn the_bridges_reply_queue_is_consumed_from_the_start_never_discovered() {
    let r = router();
    assert!(r.classify("/queue/response/_bridge").is_some());
    assert_eq!(r.discover("response/_bridge"), None, "already subscribed");
    assert!(r.classify("/queue/request/_bridge").is_none(), "nobody asks the bridge itself");
}

#[test]
fn a_configured_reply_name_is_consumed_instead_of_the_default() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    let mut config = Config::load(&path).unwrap();
    config.wiseagents.reply_agent = "_bridge-eu1".into();
    let r = Router::new(&config);
    let subs = r.subscriptions();
    assert!(subs.iter().any(|s| s == "/queue/response/_bridge-eu1"), "{subs:?}");
    assert!(!subs.iter().any(|s| s == "/queue/response/_bridge"), "{subs:?}");
    assert_eq!(r.reply_agent(), "_bridge-eu1");
    assert!(r.classify("/queue/response/_bridge").is_none(), "another bridge's answers are not taken");
}
