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

#[test]
fn a_list_of_broker_addresses_is_checked_address_by_address_and_as_a_whole() {
    let mut config = Config::load(&example()).unwrap();
    config.broker.url = String::new();
    config.broker.urls = vec!["stomp://127.0.0.1:61700".into(), "stomp://127.0.0.1:61701".into()];
    assert!(config.validate("x.toml").is_ok());
    assert_eq!(config.broker.addresses(), ["stomp://127.0.0.1:61700", "stomp://127.0.0.1:61701"]);

    let problems = |urls: &[&str], url: &str| {
        let mut c = config.clone();
        c.broker.urls = urls.iter().map(|u| (*u).to_owned()).collect();
        c.broker.url = url.to_owned();
        c.rules()
    };
    let mixed = problems(&["stomp://a:1", "stomp+ssl://b:2"], "");
    assert_eq!(mixed.len(), 1, "{mixed:?}");
    assert_eq!(mixed[0].0, "broker.urls");
    assert!(mixed[0].1.contains("must not drop TLS"), "{mixed:?}");
    let malformed = problems(&["stomp://a:1", "http://b:2", "stomp://a:1"], "");
    let keys: Vec<&str> = malformed.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["broker.urls[1]", "broker.urls[2]"], "{malformed:?}");
    assert!(malformed[1].1.contains("listed twice"), "{malformed:?}");
    let both = problems(&["stomp://a:1"], "stomp://a:1");
    assert_eq!(both, [("broker.urls".to_owned(), "set broker.url or broker.urls, not both".to_owned())]);
    let neither = problems(&[], "");
    assert_eq!(neither[0].0, "broker.url", "{neither:?}");
    assert!(problems(&["stomp://a:1@b:2"], "")[0].1.contains("credentials"), "a password is refused");
}

/// A broker on `urls` with the broker-level TLS files `ca.pem`, `client.pem`, `client.key`,
/// and `address_tls` as written in a file; typed, the rules not checked.
fn with_address_tls(urls: &[&str], address_tls: &str) -> Config {
    let urls: Vec<String> = urls.iter().map(|u| format!("{u:?}")).collect();
    toml::from_str(&format!(
        "[broker]\nurls = [{}]\nca_file = \"ca.pem\"\ncert_file = \"client.pem\"\nkey_file = \"client.key\"\n{address_tls}",
        urls.join(", ")
    ))
    .unwrap()
}

#[test]
fn an_address_takes_the_tls_files_it_sets_and_the_brokers_for_the_others() {
    let config = with_address_tls(
        &["stomp+ssl://live:61617", "stomp+ssl://backup:61617", "stomp+ssl://spare:61617"],
        "[broker.address_tls.\"stomp+ssl://backup:61617/\"]\nca_file = \"backup-ca.pem\"\n\
         [broker.address_tls.\"stomp+ssl://spare:61617\"]\ncert_file = \"spare.pem\"\nkey_file = \"spare.key\"\n",
    );
    assert_eq!(config.rules(), [], "a trailing slash names the address as the list does");
    let tls = |url: &str| config.broker.tls_for(&url.parse().unwrap());
    let files = |ca: &str, cert: &str, key: &str| TlsOptions {
        ca_file: Some(ca.into()),
        cert_file: Some(cert.into()),
        key_file: Some(key.into()),
    };
    assert_eq!(tls("stomp+ssl://live:61617"), files("ca.pem", "client.pem", "client.key"));
    assert_eq!(tls("stomp+ssl://backup:61617"), files("backup-ca.pem", "client.pem", "client.key"));
    assert_eq!(tls("stomp+ssl://spare:61617"), files("ca.pem", "spare.pem", "spare.key"));
}

#[test]
fn tls_files_for_an_address_that_is_not_a_tls_one_of_the_list_are_refused_each_by_its_key() {
    let rules = |urls: &[&str], address_tls: &str| with_address_tls(urls, address_tls).rules();
    let pair = ["stomp+ssl://live:61617", "stomp+ssl://backup:61617"];
    assert_eq!(
        rules(&pair, "[broker.address_tls.\"stomp+ssl://other.example:61617\"]\nca_file = \"x.pem\"\n"),
        [(
            "broker.address_tls.\"stomp+ssl://other.example:61617\"".to_owned(),
            "stomp+ssl://other.example:61617 is not one of the broker's addresses (broker.urls)".to_owned()
        )]
    );
    assert_eq!(
        rules(&pair, "[broker.address_tls.\"stomp+ssl://backup\"]\nca_file = \"x.pem\"\n")[0].1,
        "stomp+ssl://backup:61614 is not one of the broker's addresses (broker.urls)",
        "the default port is 61614, not the list's 61617"
    );
    let plain = ["stomp://live:61613", "stomp://backup:61613"];
    assert_eq!(
        rules(&plain, "[broker.address_tls.\"stomp://backup:61613\"]\nca_file = \"x.pem\"\n"),
        [(
            "broker.address_tls.\"stomp://backup:61613\"".to_owned(),
            "stomp://backup:61613 is a stomp:// address: TLS settings are for stomp+ssl:// ones".to_owned()
        )]
    );
    let twice = "[broker.address_tls.\"stomp+ssl://backup:61617\"]\nca_file = \"x.pem\"\n\
                 [broker.address_tls.\"stomp+ssl://backup:61617/\"]\nca_file = \"y.pem\"\n";
    assert_eq!(
        rules(&pair, twice),
        [(
            "broker.address_tls.\"stomp+ssl://backup:61617/\"".to_owned(),
            "stomp+ssl://backup:61617 is already named by \"stomp+ssl://backup:61617\"".to_owned()
        )]
    );
    let malformed = rules(&pair, "[broker.address_tls.backup]\nca_file = \"x.pem\"\n");
    assert_eq!(malformed[0].0, "broker.address_tls.backup", "{malformed:?}");
    assert!(malformed[0].1.contains("stomp:// or stomp+ssl://"), "{malformed:?}");
    let password =
        rules(&pair, "[broker.address_tls.\"stomp+ssl://u:pw@backup:61617\"]\nca_file = \"x.pem\"\n");
    assert_eq!(password[0].0, "broker.address_tls", "the key holds a password: {password:?}");
    assert!(!format!("{password:?}").contains("pw"), "{password:?}");
}

#[test]
fn an_address_sets_its_client_certificate_with_its_key_or_neither() {
    let url = "[broker.address_tls.\"stomp+ssl://b:61617\"]";
    let rules = |files: &str| {
        with_address_tls(&["stomp+ssl://a:61617", "stomp+ssl://b:61617"], &format!("{url}\n{files}")).rules()
    };
    let why = "a client certificate needs both cert_file and key_file here (or neither: then \
               broker.cert_file and broker.key_file apply)";
    let key = |field: &str| format!("broker.address_tls.\"stomp+ssl://b:61617\".{field}");
    assert_eq!(rules("cert_file = \"b.pem\"\n"), [(key("cert_file"), why.to_owned())]);
    assert_eq!(rules("key_file = \"b.key\"\n"), [(key("key_file"), why.to_owned())]);
    assert_eq!(rules("cert_file = \"b.pem\"\nkey_file = \"b.key\"\n"), []);
    assert_eq!(rules("ca_file = \"b-ca.pem\"\n"), []);
}

#[test]
fn relative_tls_files_are_read_from_the_configuration_files_folder() {
    let text = "[broker]\nurl = \"stomp+ssl://b:61614\"\nca_file = \"certs/ca.pem\"\n\
                cert_file = \"/abs/client.pem\"\nkey_file = \"client.key\"\n\
                [broker.address_tls.\"stomp+ssl://b:61614\"]\nca_file = \"b-ca.pem\"\n\
                [http]\ncert_file = \"srv.pem\"\nkey_file = \"srv.key\"\n\
                [[agents]]\nname = \"T\"\nprotocol = \"a2a\"\nurl = \"https://t.example\"\nca_file = \"t-ca.pem\"\n";
    let (config, _) = Config::read(text, &BTreeMap::new(), Path::new("/etc/sab/bridge.toml"));
    let config = config.expect("typed");
    let at = |f: &Option<PathBuf>| f.as_deref().map(|p| p.display().to_string());
    let b = &config.broker;
    assert_eq!(at(&b.ca_file).as_deref(), Some("/etc/sab/certs/ca.pem"));
    assert_eq!(at(&b.cert_file).as_deref(), Some("/abs/client.pem"), "an absolute path stays");
    assert_eq!(at(&b.key_file).as_deref(), Some("/etc/sab/client.key"));
    let own = &b.address_tls["stomp+ssl://b:61614"];
    assert_eq!(at(&own.ca_file).as_deref(), Some("/etc/sab/b-ca.pem"));
    assert_eq!(at(&config.http.cert_file).as_deref(), Some("/etc/sab/srv.pem"));
    assert_eq!(at(&config.http.key_file).as_deref(), Some("/etc/sab/srv.key"));
    assert_eq!(at(&config.agents[0].ca_file).as_deref(), Some("/etc/sab/t-ca.pem"));
}

/// `text` read as a file is (no environment, nothing relative to the file).
fn read_text(text: &str) -> Config {
    let (config, problems) = Config::read(text, &BTreeMap::new(), Path::new("x.toml"));
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    config.unwrap()
}

/// A configuration with every section and table set, and every key away from its default
/// (but `broker.passcode_file`, which is not set with `passcode`, `a2a.token_file` and
/// `mcp.token_file`).
pub(super) fn everything() -> Config {
    let namespace = Uuid::parse_str("0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10").unwrap();
    Config {
        broker: BrokerConfig {
            login: Some("admin".into()),
            passcode: Some(Secret::new("s3cret \"quoted\"")),
            vhost: "tenants".into(),
            heartbeat_ms: [2000, 0],
            ca_file: Some("tls/ca.pem".into()),
            cert_file: Some("tls/client.pem".into()),
            key_file: Some("tls/client.key".into()),
            reconnect_max_ms: 1000,
            url: String::new(),
            urls: vec!["stomp+ssl://127.0.0.1:61614".into(), "stomp+ssl://127.0.0.1:61714".into()],
            address_tls: [(
                "stomp+ssl://127.0.0.1:61714".to_owned(),
                AddressTls {
                    ca_file: Some("tls/backup-ca.pem".into()),
                    cert_file: Some("tls/backup-client.pem".into()),
                    key_file: Some("tls/backup-client.key".into()),
                },
            )]
            .into(),
            ..BrokerConfig::new("")
        },
        wiseagents: every_wiseagents_key(),
        protocols: Frameworks {
            civitas: Some(CivitasConfig {
                encoding: Encoding::Msgpack,
                ..CivitasConfig::new("/queue/civ.{agent}", "/queue/civ.in")
            }),
            vox: Some(VoxConfig {
                message_source: "ops".into(),
                ..VoxConfig::new("/queue/vox.{agent}", "/queue/vox.in", namespace)
            }),
            penguiflow: Some(PenguiFlowConfig {
                tenant: "acme".into(),
                response_as_final_answer: false,
                stream_max_bytes: 1 << 10,
                stream_max_wait_ms: 500,
                ..PenguiFlowConfig::new("/queue/pf.{agent}", "/queue/pf.in")
            }),
        },
        agents: vec![
            AgentConfig {
                encoding: Some(Encoding::Json),
                reply_timeout_ms: Some(1500),
                ..AgentConfig::new("Weather", Framework::Civitas)
            },
            AgentConfig {
                uuid: Some(Uuid::new_v5(&namespace, b"Ops")),
                ..AgentConfig::new("Ops", Framework::Vox)
            },
            AgentConfig::new("Planner", Framework::PenguiFlow),
        ],
        delivery: every_delivery_key(),
        http: HttpConfig {
            listen: "127.0.0.1:9999".into(),
            cert_file: Some("http.pem".into()),
            key_file: Some("http.key".into()),
        },
        log: LogConfig { format: "json".into(), level: "stomp_agent_bridge=debug".into() },
        mirror: every_mirror_key(),
        a2a: Some(every_a2a_key()),
        mcp: Some(every_mcp_key()),
        traces: super::traces::TracesConfig {
            endpoint: "http://collector:4318".into(),
            protocol: "http/protobuf".into(),
            headers_file: Some("otlp-headers".into()),
            sampling_ratio: 0.25,
            service_name: "bridge-eu".into(),
            resource: [("deployment.environment.name".to_owned(), "prod".to_owned())].into(),
            max_queue: 100,
            conversations: 50,
        },
    }
}

/// `[a2a]` with every key set but `token_file` (a file the test would have to write).
fn every_a2a_key() -> a2a::A2aConfig {
    a2a::A2aConfig {
        serve: vec!["Assistant".into(), "Tool*".into()],
        descriptions: [("Assistant".to_owned(), "Answers".to_owned())].into(),
        token_file: None,
        token: None,
        jwt: Some(jwt::JwtConfig {
            jwks_file: Some("/etc/bridge/jwks.json".into()),
            jwks_url: Some("https://idp.example/jwks".into()),
            jwks_refresh_ms: 60_000,
            jwks_min_refresh_ms: 5_000,
            issuer: "https://idp.example".into(),
            audience: "bridge".into(),
            leeway_ms: 1_000,
            claim: "roles".into(),
            allow: [("Assistant".to_owned(), vec!["assist".to_owned()])].into(),
        }),
        push: Some(push::PushConfig {
            allow_private: true,
            timeout_ms: 2_000,
            attempts: 3,
            backoff_ms: 200,
            max_backoff_ms: 800,
        }),
        store: Some(store::StoreConfig {
            host: "redis.tasks".into(),
            port: 6381,
            username: Some("tasks".into()),
            password: Some("tasks-pw".into()),
            db: 3,
            prefix: "group-a:".into(),
            wait_ms: 5_000,
        }),
        public_url: Some("https://bridge.example".into()),
        reply_timeout_ms: 1000,
        max_tasks: 10,
        task_ttl_ms: 1000,
        max_body_bytes: 4096,
    }
}

fn every_mcp_key() -> mcp::McpConfig {
    mcp::McpConfig {
        descriptions: [("Weather".to_owned(), "Knows the weather".to_owned())].into(),
        reply_timeout_ms: 2000,
        max_body_bytes: 8192,
        allowed_hosts: vec!["bridge.example".into()],
        ..mcp::McpConfig::new(vec!["Weather".into(), "Ops*".into()])
    }
}

/// `[wiseagents]` with every key set, the registry's included.
fn every_wiseagents_key() -> WiseAgentsConfig {
    let registered = registry::RegisteredAgent {
        description: Some("Knows the weather".into()),
        tool: true,
        parameters: Some(serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}})),
        ..registry::RegisteredAgent::new("Weather")
    };
    WiseAgentsConfig {
        request_prefix: "/queue/request.".into(),
        response_prefix: "/queue/response.".into(),
        default_context: "Books".into(),
        agents: vec!["Asker".into()],
        discovery: Discovery::None,
        contexts: vec!["Trips.*".into()],
        ack_contexts: vec!["*_PhasedCoordinator.*".into()],
        registry: Some(registry::RegistryConfig {
            host: "redis.local".into(),
            port: 6380,
            username: Some("bridge".into()),
            password: Some("redis-pw".into()),
            db: 2,
            context_host: Some("redis.public".into()),
            instance: "test".into(),
            agents: vec![registered],
        }),
        reply_agent: "_bridge2".into(),
    }
}

/// `[delivery]` with every key away from its default.
fn every_delivery_key() -> DeliveryConfig {
    DeliveryConfig {
        dead_letter: "/queue/dead".into(),
        in_flight: 64,
        batch_max: 16,
        batches_in_flight: 1,
        mode: DeliveryMode::Transaction,
        max_attempts: 5,
        shutdown_timeout_ms: 2000,
        receipt_timeout_ms: 3000,
        max_hops: 4,
        exclusive: true,
        correlation_capacity: 10,
        correlation_ttl_ms: 60_000,
        reply_timeout_ms: 30_000,
        max_body_bytes: 4096,
        unconfirmed_max: Some(12),
        coalesce_us: 250,
    }
}

/// `[mirror]` with every key set.
fn every_mirror_key() -> Option<mirror::MirrorConfig> {
    Some(mirror::MirrorConfig {
        tap: mirror::TapKind::RabbitmqFirehose,
        destination: "/topic/copy".into(),
        buffer: 5,
        prefetch: 6,
        max_backlog: 7,
        probe_timeout_ms: 0,
        topics: mirror::MirrorTopics {
            civitas: "/topic/m.civitas.{direction}.{agent}".into(),
            vox: String::new(),
            penguiflow: "/topic/m.pf.{direction}.{agent}".into(),
            canonical: "/topic/m.canonical.{direction}.{agent}".into(),
        },
    })
}

#[test]
fn a_serialised_config_reads_back_equal() {
    let config = everything();
    let text = toml::to_string(&config).unwrap();
    assert_eq!(read_text(&text), config, "{text}");
    let defaults = Config::new(BrokerConfig::new("stomp://127.0.0.1:61613"));
    assert_eq!(read_text(&toml::to_string(&defaults).unwrap()), defaults);
}

#[test]
fn the_constructors_give_what_a_file_gives_for_the_keys_left_out() {
    let text = r#"
        [broker]
        url = "stomp://127.0.0.1:61613"
        [protocols.civitas]
        inbox = "/queue/civ.{agent}"
        ingress = "/queue/civ.in"
        [protocols.vox]
        inbox = "/queue/vox.{agent}"
        ingress = "/queue/vox.in"
        namespace = "0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10"
        [protocols.penguiflow]
        inbox = "/queue/pf.{agent}"
        ingress = "/queue/pf.in"
        [wiseagents.registry]
        [[wiseagents.registry.agents]]
        name = "Weather"
        [[agents]]
        name = "Weather"
        protocol = "civitas"
        [mirror]
    "#;
    let namespace = Uuid::parse_str("0d5f1a7e-3b7c-4c59-9a8e-6f3f2c1d9b10").unwrap();
    let mut built = Config::new(BrokerConfig::new("stomp://127.0.0.1:61613"));
    built.protocols = Frameworks {
        civitas: Some(CivitasConfig::new("/queue/civ.{agent}", "/queue/civ.in")),
        vox: Some(VoxConfig::new("/queue/vox.{agent}", "/queue/vox.in", namespace)),
        penguiflow: Some(PenguiFlowConfig::new("/queue/pf.{agent}", "/queue/pf.in")),
    };
    built.wiseagents.registry = Some(registry::RegistryConfig {
        agents: vec![registry::RegisteredAgent::new("Weather")],
        ..Default::default()
    });
    built.agents = vec![AgentConfig::new("Weather", Framework::Civitas)];
    built.mirror = Some(mirror::MirrorConfig::default());
    assert_eq!(read_text(text), built);
}

#[test]
fn a_wise_agents_agent_is_not_serialised_as_a_proxied_one() {
    let mut config = Config::new(BrokerConfig::new("stomp://127.0.0.1:61613"));
    config.agents = vec![AgentConfig::new("Assistant", Framework::WiseAgents)];
    let err = toml::to_string(&config).unwrap_err().to_string();
    assert!(err.contains("cannot live in Wise Agents"), "{err}");
}
