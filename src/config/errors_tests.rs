//! Each kind of mistake in a configuration, and the whole message the operator reads.

use super::*;

const BROKER: &str = "[broker]\nurl = \"stomp://127.0.0.1:61613\"\n";

/// The report for `text` as the file `c.toml` in a fresh folder, with `env` as the environment.
fn report(name: &str, text: &str, env: &[(&str, &str)]) -> String {
    let dir = std::env::temp_dir().join(format!("sab-config-errors-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(&path, text).unwrap();
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let err = Config::load_with_env(&path, Some(env)).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    err.to_string().replace(&dir.display().to_string(), "DIR")
}

#[test]
fn three_mistakes_in_three_tables_are_all_reported_in_the_order_of_the_file() {
    let text = format!(
        "{BROKER}colour = \"red\"\n[protocols.civitas]\ninbox = \"/queue/c.{{agent}}\"\ningress = \"/queue/in\"\n\n[[agents]]\nname = \"A\"\nprotocol = \"civitaz\"\n\n[delivery]\nbatch_max = \"lots\"\n"
    );
    assert_eq!(
        report("three", &text, &[]),
        r#"error: broker.colour: unknown key, expected one of url, urls, login, passcode, passcode_file, vhost, heartbeat_ms, ca_file, cert_file, key_file, address_tls, reconnect_max_ms
 --> DIR/c.toml:3:1
  |
3 | colour = "red"
  | ^^^^^^

error: agents[0].protocol: found "civitaz", expected one of civitas, vox, penguiflow, a2a
  --> DIR/c.toml:10:12
   |
10 | protocol = "civitaz"
   |            ^^^^^^^^^

error: delivery.batch_max: found "lots", expected a whole number, 0 or more
  --> DIR/c.toml:13:13
   |
13 | batch_max = "lots"
   |             ^^^^^^

error: DIR/c.toml has 3 problems"#
    );
}

#[test]
fn every_syntax_error_is_shown_at_its_place_and_nothing_is_typed() {
    assert_eq!(
        report("syntax", "[broker\nurl = \"x\"\n[http]\nlisten = = 1\n", &[]),
        r#"error: unclosed table, expected `]`
 --> DIR/c.toml:1:8
  |
1 | [broker
  |        ^

error: extra `=`, expected nothing
 --> DIR/c.toml:4:10
  |
4 | listen = = 1
  |          ^

error: unexpected key or value, expected newline, `#`
 --> DIR/c.toml:4:12
  |
4 | listen = = 1
  |            ^

error: DIR/c.toml has 3 problems"#
    );
}

#[test]
fn missing_keys_point_at_their_table_and_a_misspelt_table_gets_a_suggestion() {
    let text = "[broker]\nlogin = \"a\"\n[[agents]]\nname = \"A\"\n[delivry]\nin_flight = 3\n";
    assert_eq!(
        report("missing", text, &[]),
        r#"error: agents[0].protocol: missing: this key is required
 --> DIR/c.toml:3:1
  |
3 | [[agents]]
  | ^^^^^^^^^^

error: delivry: unknown key, expected one of broker, wiseagents, protocols, agents, delivery, http, log, mirror, a2a, mcp, traces
 --> DIR/c.toml:5:2
  |
5 | [delivry]
  |  ^^^^^^^
  = help: did you mean `delivery`?

error: DIR/c.toml has 2 problems"#
    );
}

/// With neither `broker.url` nor `broker.urls` the rule says so, at the `[broker]` table
/// (a rule runs once the file decodes, so this comes after the decoding problems are fixed).
#[test]
fn a_broker_without_an_address_is_refused_at_its_table() {
    let text = "[broker]\nlogin = \"a\"\n";
    let report = report("no-address", text, &[]);
    assert!(
        report.starts_with(
            "error: broker.url: missing: set broker.url, or broker.urls for a list\n --> DIR/c.toml:1:1"
        ),
        "{report}"
    );
}

#[test]
fn values_set_by_the_environment_name_the_variable_instead_of_a_line() {
    let env = [
        ("BRIDGE__DELIVERY__IN_FLIGHT", "many"),
        ("BRIDGE__HTTP__LISTEN", "nowhere"),
        ("BRIDGE__BROKER__URL__HOST", "x"),
        ("BRIDGE__DELIVERY__EXCLUSIVE", "maybe"),
        ("BRIDGE__DELIVERY__BATCHMAX", "3"),
    ];
    assert_eq!(
        report("env", BROKER, &env),
        r#"error: broker.url: cannot set broker.url.host: `broker.url` is not a table
 --> the environment variable BRIDGE__BROKER__URL__HOST (over DIR/c.toml)

error: delivery.batchmax: unknown key, expected one of dead_letter, in_flight, batch_max, batches_in_flight, mode, max_attempts, shutdown_timeout_ms, receipt_timeout_ms, max_hops, exclusive, correlation_capacity, correlation_ttl_ms, reply_timeout_ms, max_body_bytes, unconfirmed_max, coalesce_us
 --> the environment variable BRIDGE__DELIVERY__BATCHMAX (over DIR/c.toml)
  = help: did you mean `batch_max`?

error: delivery.exclusive: found "maybe", expected true or false
 --> the environment variable BRIDGE__DELIVERY__EXCLUSIVE (over DIR/c.toml)

error: delivery.in_flight: found "many", expected a whole number, 0 or more
 --> the environment variable BRIDGE__DELIVERY__IN_FLIGHT (over DIR/c.toml)

error: http.listen: "nowhere" is not host:port
 --> the environment variable BRIDGE__HTTP__LISTEN (over DIR/c.toml)

error: DIR/c.toml has 5 problems"#
    );
}

#[test]
fn a_passcode_of_the_wrong_type_is_located_but_never_shown_and_rules_point_at_values() {
    let text = "[broker]\nurl = \"stomp://127.0.0.1:61613\"\npasscode = 7\n[delivery]\nbatch_max = 0\nreply_timeout_ms = 3600000\n";
    assert_eq!(
        report("secret", text, &[]),
        r#"error: broker.passcode: found a value (not shown), expected a string
 --> DIR/c.toml:3:12

error: delivery.batch_max: must be at least 1
 --> DIR/c.toml:5:13
  |
5 | batch_max = 0
  |             ^

error: delivery.reply_timeout_ms: 3600000 must be below delivery.correlation_ttl_ms (3600000): an ask is forgotten then
 --> DIR/c.toml:6:20
  |
6 | reply_timeout_ms = 3600000
  |                    ^^^^^^^

error: DIR/c.toml has 3 problems"#
    );
}

#[test]
fn a_rule_broken_by_a_default_points_at_the_table_and_says_the_default_applies() {
    let text = "[broker]\nurl = \"stomp://127.0.0.1:61613\"\n[delivery]\ncorrelation_ttl_ms = 0\n";
    assert_eq!(
        report("near", text, &[]),
        r#"error: delivery.reply_timeout_ms: 0 must be below delivery.correlation_ttl_ms (0): an ask is forgotten then
 --> DIR/c.toml:3:1
  |
3 | [delivery]
  | ^^^^^^^^^^
  = note: the key is not set in this table, so its default applies

error: DIR/c.toml has 1 problem"#
    );
}

#[test]
fn type_errors_in_optional_keys_and_broken_rules_are_reported_together() {
    let text = "[broker]\nurl = \"stomp://127.0.0.1:61613\"\n[[agents]]\nname = \"A\"\nprotocol = \"vox\"\nuuid = \"nope\"\n[[agents]]\nname = \"B\"\nprotocol = \"vox\"\nencodng = \"json\"\n";
    assert_eq!(
        report("both", text, &[]),
        r#"error: agents[0].protocol: vox is used but [protocols.vox] is missing
 --> DIR/c.toml:5:12
  |
5 | protocol = "vox"
  |            ^^^^^

error: agents[0].uuid: found "nope": UUID parsing failed: invalid character: found `n` at 0
 --> DIR/c.toml:6:8
  |
6 | uuid = "nope"
  |        ^^^^^^

error: agents[1].protocol: vox is used but [protocols.vox] is missing
 --> DIR/c.toml:9:12
  |
9 | protocol = "vox"
  |            ^^^^^

error: agents[1].encodng: unknown key, expected one of name, protocol, encoding, uuid, reply_timeout_ms, url, token_file, ca_file, max_calls, max_attempts
  --> DIR/c.toml:10:1
   |
10 | encodng = "json"
   | ^^^^^^^
  = help: did you mean `encoding`?

error: DIR/c.toml has 4 problems"#
    );
}

#[test]
fn every_bad_agent_is_reported_under_its_own_index_after_earlier_ones_were_set_aside() {
    let text = format!(
        "{BROKER}[[agents]]\nname = \"A\"\n\n[[agents]]\nname = \"B\"\n\n[[agents]]\nname = \"C\"\nprotocol = \"civitaz\"\n"
    );
    assert_eq!(
        report("agents", &text, &[]),
        r#"error: agents[0].protocol: missing: this key is required
 --> DIR/c.toml:3:1
  |
3 | [[agents]]
  | ^^^^^^^^^^

error: agents[1].protocol: missing: this key is required
 --> DIR/c.toml:6:1
  |
6 | [[agents]]
  | ^^^^^^^^^^

error: agents[2].protocol: found "civitaz", expected one of civitas, vox, penguiflow, a2a
  --> DIR/c.toml:11:12
   |
11 | protocol = "civitaz"
   |            ^^^^^^^^^

error: DIR/c.toml has 3 problems"#
    );
}

#[test]
fn two_variables_that_differ_only_in_case_are_refused_rather_than_one_silently_winning() {
    let env = [("BRIDGE__DELIVERY__IN_FLIGHT", "7"), ("bridge__delivery__in_flight", "8")];
    assert_eq!(
        report("case", BROKER, &env),
        r#"error: delivery.in_flight: also set by BRIDGE__DELIVERY__IN_FLIGHT: set it by one variable only
 --> the environment variable bridge__delivery__in_flight (over DIR/c.toml)

error: DIR/c.toml has 1 problem"#
    );
}

#[test]
fn a_cap_of_no_unconfirmed_sends_is_refused_and_an_unset_one_is_the_brokers() {
    let text = "[broker]\nurl = \"stomp://127.0.0.1:61613\"\n[delivery]\nunconfirmed_max = 0\n";
    let out = report("cap", text, &[]);
    assert!(
        out.starts_with("error: delivery.unconfirmed_max: must be at least 1\n --> DIR/c.toml:4:19"),
        "{out}"
    );
    let unset: Config = toml::from_str("[broker]\nurl = \"stomp://127.0.0.1:61613\"\n").unwrap();
    assert_eq!(unset.delivery.unconfirmed_max, None);
}

#[test]
fn a_coalescing_wait_past_10_ms_is_refused_and_an_unset_one_is_500_us() {
    let text = "[broker]\nurl = \"stomp://127.0.0.1:61613\"\n[delivery]\ncoalesce_us = 10001\n";
    let out = report("coalesce", text, &[]);
    assert!(out.starts_with("error: delivery.coalesce_us: must be at most 10000 (10 ms)\n"), "{out}");
    let unset: Config = toml::from_str("[broker]\nurl = \"stomp://127.0.0.1:61613\"\n").unwrap();
    assert_eq!(unset.delivery.coalesce_us, 500);
}

#[test]
fn an_a2a_agent_needs_an_http_url_and_its_keys_belong_to_it_alone() {
    let civitas = "[protocols.civitas]\ninbox = \"/queue/c.{agent}\"\ningress = \"/queue/in\"\n";
    let agents = "[[agents]]\nname = \"Remote\"\nprotocol = \"a2a\"\n\n\
                  [[agents]]\nname = \"Far*\"\nprotocol = \"a2a\"\nurl = \"ftp://far\"\nmax_calls = 0\n\n\
                  [[agents]]\nname = \"Civ\"\nprotocol = \"civitas\"\nurl = \"http://127.0.0.1:1\"\n\n\
                  [[agents]]\nname = \"Secret\"\nprotocol = \"a2a\"\nurl = \"https://agent.example\"\ntoken_file = \"missing-token\"\n\n\
                  [[agents]]\nname = \"Inline\"\nprotocol = \"a2a\"\nurl = \"https://me:pw@agent.example/a2a\"\n";
    let report = report("a2a", &format!("{BROKER}{civitas}\n{agents}"), &[]);
    for expected in [
        "agents[0].url: an A2A agent needs the url its card is read from",
        "agents[1].name: an A2A agent is named exactly: each has its own url",
        "agents[1].url: \"ftp://far\" is not an http:// or https:// URL",
        "agents[1].max_calls: must be at least 1",
        "agents[2].url: only A2A agents (protocol = \"a2a\") have it",
        "agents[3].token_file: cannot read DIR/missing-token",
        "agents[4].url: credentials do not go in the URL: use token_file",
    ] {
        assert!(report.contains(expected), "{expected:?} not in:\n{report}");
    }
}

#[test]
fn tls_files_of_an_address_are_shown_under_its_quoted_key_at_their_place() {
    let text = "[broker]\nurls = [\"stomp+ssl://live.example:61617\", \"stomp+ssl://backup.example:61617\"]\n\n[broker.address_tls.\"stomp+ssl://backup.example:61617\"]\ncert_file = \"backup.pem\"\n\n[broker.address_tls.\"stomp+ssl://spare.example:61617\"]\nca_file = \"spare-ca.pem\"\n";
    assert_eq!(
        report("address-tls", text, &[]),
        r#"error: broker.address_tls."stomp+ssl://backup.example:61617".cert_file: a client certificate needs both cert_file and key_file here (or neither: then broker.cert_file and broker.key_file apply)
 --> DIR/c.toml:5:13
  |
5 | cert_file = "backup.pem"
  |             ^^^^^^^^^^^^

error: broker.address_tls."stomp+ssl://spare.example:61617": stomp+ssl://spare.example:61617 is not one of the broker's addresses (broker.urls)
 --> DIR/c.toml:7:1
  |
7 | [broker.address_tls."stomp+ssl://spare.example:61617"]
  | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

error: DIR/c.toml has 2 problems"#
    );
}

#[test]
fn an_unknown_key_in_an_address_table_is_named_under_the_quoted_address() {
    let text = "[broker]\nurl = \"stomp+ssl://b.example:61617\"\n[broker.address_tls.\"stomp+ssl://b.example:61617\"]\nca_fle = \"ca.pem\"\n";
    assert_eq!(
        report("address-tls-key", text, &[]),
        r#"error: broker.address_tls."stomp+ssl://b.example:61617".ca_fle: unknown key, expected one of ca_file, cert_file, key_file
 --> DIR/c.toml:4:1
  |
4 | ca_fle = "ca.pem"
  | ^^^^^^
  = help: did you mean `ca_file`?

error: DIR/c.toml has 1 problem"#
    );
}

#[test]
fn an_address_key_holding_a_password_is_reported_without_it() {
    let text = "[broker]\nurl = \"stomp+ssl://b.example:61617\"\n[broker.address_tls.\"stomp+ssl://u:pw@b.example:61617\"]\nca_file = \"ca.pem\"\n";
    let out = report("address-tls-password", text, &[]);
    assert!(!out.contains("pw"), "{out}");
    assert!(out.starts_with("error: broker.address_tls: invalid broker URL \"…@b.example:61617\""), "{out}");
}
