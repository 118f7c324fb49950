use super::request::question;
use super::*;
use crate::telemetry::Metrics;
use a2a::{Part, Role};

fn hub() -> Arc<A2aService> {
    let mut config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    config.a2a = Some(toml::from_str("serve = [\"Echo\", \"Tool*\"]").unwrap());
    let relay = Relay::of(&config, Arc::new(Metrics::default())).unwrap();
    A2aService::of(&config, &relay).unwrap().unwrap()
}

#[test]
fn served_agents_are_the_names_and_the_names_a_glob_matches() {
    let hub = hub();
    assert!(hub.serves("Echo") && hub.serves("ToolBox"));
    assert!(!hub.serves("Other") && !hub.serves("Tool/../x"));
}

#[test]
fn text_and_data_parts_are_asked_and_a_file_is_refused() {
    let mut m = a2a::Message::new(
        Role::User,
        vec![Part::text("weather?"), Part::data(serde_json::json!({"city": "Rome"}))],
    );
    assert_eq!(question(&m).unwrap(), "weather?\n{\"city\":\"Rome\"}");
    m.parts.push(Part::url("https://example.com/a.pdf"));
    assert!(question(&m).unwrap_err().to_string().contains("file part"));
    assert!(question(&a2a::Message::new(Role::User, vec![])).is_err());
}

#[tokio::test]
async fn without_the_registry_the_description_is_the_configured_or_default_one() {
    let hub = hub();
    assert_eq!(hub.description("Echo").await, hub.config.description("Echo"));
}
