use super::*;

fn problems(edit: impl FnOnce(&mut McpConfig)) -> Vec<(String, String)> {
    let mut config = McpConfig::new(vec!["Assistant".into(), "Weather*".into()]);
    edit(&mut config);
    config.problems("127.0.0.1:9464")
}

#[test]
fn the_defaults_with_tools_and_a_listener_are_sound() {
    assert_eq!(problems(|_| {}), []);
    let keys = |p: Vec<(String, String)>| p.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(McpConfig::new(vec!["A".into()]).problems("")), ["mcp.tools"], "no listener");
}

#[test]
fn each_broken_key_is_named_with_why() {
    for (edit, key, says) in [
        (
            Box::new(|c: &mut McpConfig| c.tools.clear()) as Box<dyn FnOnce(&mut McpConfig)>,
            "mcp.tools",
            "names no agent",
        ),
        (Box::new(|c: &mut McpConfig| c.tools.push("a/b".into())), "mcp.tools", "not an agent name"),
        (Box::new(|c: &mut McpConfig| c.max_calls = 0), "mcp.max_calls", "at least 1"),
        (Box::new(|c: &mut McpConfig| c.reply_timeout_ms = u64::MAX), "mcp.reply_timeout_ms", "at most"),
        (Box::new(|c: &mut McpConfig| c.allowed_hosts.clear()), "mcp.allowed_hosts", "names no host"),
    ] {
        let found = problems(edit);
        assert!(found.iter().any(|(k, why)| k == key && why.contains(says)), "{key}: {found:?}");
    }
}

#[test]
fn a_tool_is_a_name_or_one_a_glob_matches() {
    let config = McpConfig::new(vec!["Assistant".into(), "Weather*".into()]);
    assert!(config.serves("Assistant") && config.serves("WeatherCiv"));
    assert!(!config.serves("Other") && !config.serves("Weather/x"));
}

#[test]
fn a_jwt_table_is_judged_as_a2a_s_and_named_under_mcp() {
    let jwt: super::JwtConfig = toml::from_str("issuer = \"\"\naudience = \"bridge\"").unwrap();
    let found = problems(|c| c.jwt = Some(jwt));
    let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["mcp.jwt.jwks_file", "mcp.jwt.issuer"], "{found:?}");
}
