use super::*;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml")
}

#[test]
fn the_example_config_loads_and_validates() {
    let config = Config::load(&example()).unwrap();
    assert_eq!(config.broker.url, "stomp://127.0.0.1:61613");
    assert_eq!(config.agents.len(), 4);
    assert_eq!(config.protocols.civitas.as_ref().unwrap().encoding, Encoding::Json);
    assert_eq!(config.agents[1].encoding, Some(Encoding::Msgpack));
    assert_eq!(config.delivery.in_flight, 1024);
}

#[test]
fn every_example_config_validates() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked}");
}

#[test]
fn unknown_keys_and_bad_values_name_key_and_file() {
    let dir = std::env::temp_dir().join(format!("sab-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[broker]\nurl = \"stomp://x:1\"\nbogus = 1\n").unwrap();
    let err = Config::load(&path).unwrap_err().to_string();
    assert!(err.contains("bogus") && err.contains("bad.toml"), "{err}");

    let text = "[broker]\nurl = \"tcp://x\"\n[wiseagents]\ndiscovery = \"none\"\n[[agents]]\nname = \"A/B*\"\nprotocol = \"vox\"\n[http]\nlisten = \"nowhere\"\n";
    std::fs::write(&path, text).unwrap();
    let err = Config::load(&path).unwrap_err();
    let all = err.to_string();
    assert_eq!(err.problems.len(), 5, "{all}");
    for key in ["broker.url", "agents[0].name", "agents[0].protocol", "http.listen"] {
        assert!(all.contains(key), "{key} missing in {all}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn environment_strings_keep_their_exact_text_and_numbers_still_parse() {
    let env = [
        ("BRIDGE__BROKER__PASSCODE", "007"),
        ("BRIDGE__BROKER__LOGIN", "1e3"),
        ("BRIDGE__BROKER__VHOST", "TRUE"),
        ("BRIDGE__WISEAGENTS__DEFAULT_CONTEXT", "0x1F"),
        ("BRIDGE__DELIVERY__IN_FLIGHT", "64"),
        ("BRIDGE__DELIVERY__EXCLUSIVE", "true"),
        ("BRIDGE__PROTOCOLS__PENGUIFLOW__RESPONSE_AS_FINAL_ANSWER", "false"),
    ];
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let config = Config::load_with_env(&example(), Some(env)).unwrap();
    assert_eq!(config.broker.passcode.as_ref().map(Secret::expose), Some("007"));
    assert_eq!(config.broker.login.as_deref(), Some("1e3"));
    assert_eq!(config.broker.vhost, "TRUE");
    assert_eq!(config.wiseagents.default_context, "0x1F");
    assert_eq!((config.delivery.in_flight, config.delivery.exclusive), (64, true));
    assert!(!config.protocols.penguiflow.unwrap().response_as_final_answer);
}

#[test]
fn booleans_from_the_environment_read_the_words_the_config_crate_read() {
    for (text, want) in
        [("1", true), ("YES", true), ("On", true), ("0", false), ("no", false), ("OFF", false)]
    {
        let env = [("BRIDGE__DELIVERY__EXCLUSIVE", text)];
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let config = Config::load_with_env(&example(), Some(env)).unwrap();
        assert_eq!(config.delivery.exclusive, want, "{text}");
    }
}

#[test]
fn an_override_prefix_in_lower_or_mixed_case_sets_its_key_as_the_config_crate_did() {
    let env = [("bridge__delivery__in_flight", "7"), ("Bridge__Delivery__Batch_Max", "3")];
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let config = Config::load_with_env(&example(), Some(env)).unwrap();
    assert_eq!((config.delivery.in_flight, config.delivery.batch_max), (7, 3));
}

#[test]
fn conversation_keys_are_read_and_checked() {
    let mut config = Config::load(&example()).unwrap();
    assert_eq!((config.delivery.reply_timeout_ms, config.wiseagents.contexts.len()), (0, 0));
    config.wiseagents.contexts = vec!["Trips.*".into(), "two words".into()];
    config.wiseagents.ack_contexts = vec![String::new()];
    config.delivery.reply_timeout_ms = config.delivery.correlation_ttl_ms;
    config.agents[0].reply_timeout_ms = Some(5000);
    config.agents[1].reply_timeout_ms = Some(u64::MAX);
    let err = config.validate("x.toml").unwrap_err();
    let all = err.to_string();
    for key in [
        "wiseagents.contexts[1]",
        "wiseagents.ack_contexts[0]",
        "delivery.reply_timeout_ms",
        "agents[1].reply_timeout_ms",
    ] {
        assert!(all.contains(key), "{key} missing in {all}");
    }
    assert_eq!(err.problems.len(), 4, "{all}");
}

#[test]
fn a_proxied_glob_that_would_take_the_mirror_probe_is_refused() {
    let mut config = Config::load(&example()).unwrap();
    config.agents[0].name = "bridge-*".into();
    assert!(config.validate("x.toml").is_ok(), "no mirror, no probe");
    let mirror: super::mirror::MirrorConfig = toml::from_str("tap = \"activemq\"").unwrap();
    config.mirror = Some(mirror.clone());
    let err = config.validate("x.toml").unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(err.problems[0].key, "agents[0].name");
    assert!(err.problems[0].message.contains("probe_timeout_ms = 0"), "{err}");
    config.mirror = Some(super::mirror::MirrorConfig { probe_timeout_ms: 0, ..mirror });
    assert!(config.validate("x.toml").is_ok(), "the probe turned off");
}
