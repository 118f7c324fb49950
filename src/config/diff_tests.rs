use super::*;
use std::collections::BTreeMap;
use std::path::Path;

const BASE: &str = include_str!("../../config/bridge.toml");

/// `config/bridge.toml` with each `(from, to)` replaced, typed in memory.
fn config(edits: &[(&str, &str)]) -> Config {
    let mut text = BASE.to_owned();
    for (from, to) in edits {
        assert!(text.contains(from), "{from:?} is in the example");
        text = text.replacen(from, to, 1);
    }
    let (config, problems) = Config::read(&text, &BTreeMap::new(), Path::new("bridge.toml"));
    assert!(problems.is_empty(), "{problems:?}");
    config.unwrap()
}

fn keys(refused: &[Refusal]) -> Vec<&str> {
    refused.iter().map(|r| r.key.as_str()).collect()
}

#[test]
fn the_same_configuration_changes_nothing() {
    assert!(diff(&config(&[]), &config(&[])).is_empty());
}

#[test]
fn an_agent_added_removed_and_changed_is_live_and_named() {
    let old = config(&[]);
    let new = config(&[
        ("name = \"WeatherAgent\"", "name = \"NewsAgent\""),
        ("encoding = \"msgpack\"                   # per-agent", "encoding = \"json\" # per-agent"),
    ]);
    let d = diff(&old, &new);
    assert_eq!(d.refused, []);
    assert_eq!(d.live, ["agents (added NewsAgent; removed WeatherAgent; changed Indexer)"]);
}

#[test]
fn queue_mappings_contexts_timeouts_and_the_log_level_are_live() {
    let old = config(&[]);
    let new = config(&[
        ("inbox = \"/queue/civitas.{agent}\"", "inbox = \"/queue/civ2.{agent}\""),
        ("ingress = \"/queue/bridge.vox\"", "ingress = \"/queue/bridge.vox2\""),
        ("contexts = []", "contexts = [\"Trips.*\"]"),
        ("reply_timeout_ms = 0", "reply_timeout_ms = 30000"),
        ("[http]", "[log]\nlevel = \"debug\"\n\n[http]"),
    ]);
    let d = diff(&old, &new);
    assert_eq!(d.refused, []);
    assert_eq!(
        d.live,
        [
            "wiseagents.contexts",
            "protocols.civitas",
            "protocols.vox",
            "delivery.reply_timeout_ms",
            "log.level"
        ]
    );
}

#[test]
fn the_broker_url_and_the_settlement_are_refused_each_by_name() {
    let old = config(&[]);
    let new = config(&[
        ("url = \"stomp://127.0.0.1:61613\"", "url = \"stomp://127.0.0.1:61623\""),
        ("in_flight = 1024", "in_flight = 64"),
        ("[delivery]", "[delivery]\nmode = \"transaction\""),
        ("contexts = []", "contexts = [\"Books\"]"),
    ]);
    let d = diff(&old, &new);
    assert_eq!(keys(&d.refused), ["broker.url", "delivery.mode", "delivery.in_flight"]);
    assert_eq!(d.refused[0].to_string(), "broker.url cannot change without a restart");
    assert!(d.refusals().contains("delivery.in_flight cannot change without a restart (the subscriptions'"));
    assert_eq!(d.live, ["wiseagents.contexts"], "live keys are still reported");
}

#[test]
fn a_passcode_change_is_refused_without_showing_it() {
    let d = diff(&config(&[]), &config(&[("passcode = \"admin\"", "passcode = \"s3cret\"")]));
    assert_eq!(keys(&d.refused), ["broker.passcode"]);
    assert!(!d.refusals().contains("s3cret") && !d.refusals().contains("admin"));
}

#[test]
fn an_agent_named_by_a_glob_is_refused() {
    let d = diff(&config(&[]), &config(&[("name = \"Planner\"", "name = \"Plan*\"")]));
    assert_eq!(keys(&d.refused), ["agents"]);
    assert!(d.refused[0].why.contains("\"Plan*\"") && d.refused[0].why.contains("glob"), "{:?}", d.refused);
}

#[test]
fn a_glob_removed_for_an_agent_named_exactly_is_live() {
    let d = diff(&config(&[("name = \"Planner\"", "name = \"Plan*\"")]), &config(&[]));
    assert!(d.refused.is_empty(), "{:?}", d.refused);
    assert_eq!(d.live, ["agents (added Planner; removed Plan*)"]);
}

#[test]
fn agents_are_refused_while_the_wise_agents_registry_registers_them() {
    let with_registry = |extra: &str| {
        let registry = format!("[wiseagents.registry]\nhost = \"127.0.0.1\"\n\n[protocols.civitas]{extra}");
        config(&[("[protocols.civitas]", &registry)])
    };
    let old = with_registry("");
    let mut new = with_registry("");
    new.agents.pop();
    let d = diff(&old, &new);
    assert_eq!(keys(&d.refused), ["agents"]);
    assert!(d.refused[0].why.contains("[wiseagents.registry]"), "{:?}", d.refused);
}

#[test]
fn stream_bounds_the_mirror_and_the_listener_are_refused() {
    let old = config(&[]);
    let new = config(&[
        ("tenant = \"default\"", "tenant = \"acme\"\nstream_max_bytes = 1024"),
        ("listen = \"127.0.0.1:9464\"", "listen = \"127.0.0.1:9465\""),
        ("[http]", "[mirror]\ntap = \"activemq\"\n\n[http]"),
    ]);
    let d = diff(&old, &new);
    assert_eq!(keys(&d.refused), ["protocols.penguiflow.stream_max_bytes", "http.listen", "mirror"]);
    assert_eq!(d.live, ["protocols.penguiflow"], "the tenant alone is live");
}

/// Every leaf of a TOML value with its path (`["delivery", "in_flight"]`, `["agents", "0",
/// "name"]`: a key may hold dots, as an address in `broker.address_tls` does); an array of
/// plain values is one leaf.
fn leaves(value: &toml::Value, path: &[String], out: &mut Vec<Vec<String>>) {
    let join = |key: &str| [path, &[key.to_owned()]].concat();
    match value {
        toml::Value::Table(table) => table.iter().for_each(|(k, v)| leaves(v, &join(k), out)),
        toml::Value::Array(items) if items.iter().any(toml::Value::is_table) => {
            items.iter().enumerate().for_each(|(i, v)| leaves(v, &join(&i.to_string()), out))
        }
        _ => out.push(path.to_owned()),
    }
}

fn at<'a>(value: &'a mut toml::Value, path: &[String]) -> &'a mut toml::Value {
    path.iter().fold(value, |v, key| match v {
        toml::Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
        other => &mut other[key.as_str()],
    })
}

/// Other values of the same shape as `value`, the spellings of the configuration's enums
/// among the strings.
fn others(value: &toml::Value) -> Vec<toml::Value> {
    use toml::Value as V;
    const SPELLINGS: [&str; 15] = [
        "confirm",
        "transaction",
        "json",
        "msgpack",
        "text",
        "none",
        "activemq-advisory",
        "civitas",
        "vox",
        "penguiflow",
        "canonical",
        "activemq",
        "rabbitmq-firehose",
        "artemis",
        "6f9619ff-8b86-4d01-b42d-00cf4fc964ff",
    ];
    match value {
        V::String(s) => {
            let mut all = vec![V::String(format!("{s}x")), V::String(format!("/queue/x.{s}"))];
            all.extend(SPELLINGS.iter().map(|s| V::String((*s).into())));
            all
        }
        V::Integer(i) => vec![V::Integer(i + 1), V::Integer(i - 1)],
        V::Float(f) => vec![V::Float(f + 0.5)],
        V::Boolean(b) => vec![V::Boolean(!b)],
        V::Array(items) => {
            let mut longer = items.clone();
            longer.extend(items.first().cloned());
            let mut changed = items.clone();
            if let Some(first) = changed.first_mut() {
                *first = others(first).remove(0);
            }
            vec![V::Array(changed), V::Array(longer)]
        }
        other => vec![other.clone()],
    }
}

#[test]
fn every_key_of_the_configuration_reloads_as_live_or_refused_never_as_nothing_changed() {
    let base = crate::config::tests::everything();
    let table = toml::Value::try_from(&base).unwrap();
    let mut paths = Vec::new();
    leaves(&table, &[], &mut paths);
    assert!(paths.len() > 60, "the every-key configuration has {} keys", paths.len());
    let mut unclassified = Vec::new();
    for path in &paths {
        let changed = others(&at(&mut table.clone(), path).clone()).into_iter().find_map(|other| {
            let mut edited = table.clone();
            *at(&mut edited, path) = other;
            edited.try_into::<Config>().ok().filter(|c| *c != base)
        });
        match changed {
            Some(new) if diff(&base, &new).is_empty() => unclassified.push(path.join(".")),
            Some(_) => {}
            None => unclassified.push(format!("{} (no other value of its type to try)", path.join("."))),
        }
    }
    assert!(unclassified.is_empty(), "changed, these keys reload as 'nothing changed': {unclassified:?}");
}

#[test]
fn tls_files_of_one_address_are_refused_as_the_brokers_are() {
    const TLS: (&str, &str) = ("url = \"stomp://127.0.0.1:61613\"", "url = \"stomp+ssl://127.0.0.1:61614\"");
    let own =
        "[broker.address_tls.\"stomp+ssl://127.0.0.1:61614\"]\nca_file = \"backup-ca.pem\"\n\n[wiseagents]";
    let d = diff(&config(&[TLS]), &config(&[TLS, ("[wiseagents]", own)]));
    assert_eq!(keys(&d.refused), ["broker.address_tls"]);
    assert_eq!(d.refusals(), "broker.address_tls cannot change without a restart");
    assert_eq!(d.live, [] as [String; 0]);
}
