//! The rules of the configuration that types alone cannot say: destinations that are
//! destinations, agents with their framework's table, bounds that are at least 1.

use super::mirror::PROBE_AGENT;
use super::report::{At, ConfigError, Problem};
use super::source::toml_key;
use super::{Config, Discovery};
use crate::envelope::codecs::Framework;
use crate::names::{glob_matches, is_glob};
use crate::stomp::BrokerUrl;

/// The longest `delivery.coalesce_us`.
const MAX_COALESCE_US: u64 = 10_000;

impl Config {
    /// Checks what types alone cannot; every problem is reported, not just the first.
    pub fn validate(&self, file: &str) -> Result<(), ConfigError> {
        let problems: Vec<Problem> =
            self.rules().iter().map(|(k, why)| Problem::new(k, why, At::File)).collect();
        match problems.is_empty() {
            true => Ok(()),
            false => Err(ConfigError { file: file.to_owned(), text: String::new(), problems }),
        }
    }

    /// The rules that relate keys, each broken one as its key and why.
    pub(super) fn rules(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        let mut bad = |key: &str, why: String| problems.push((key.to_owned(), why));
        self.validate_addresses(&mut bad);
        if self.broker.cert_file.is_some() != self.broker.key_file.is_some() {
            bad("broker.cert_file", "a client certificate needs both cert_file and key_file".into());
        }
        self.validate_address_tls(&mut bad);
        self.validate_wiseagents(&mut bad);
        self.validate_timeouts(&mut bad);
        self.validate_protocols(&mut bad);
        self.validate_agents(&mut bad);
        if let Some(mirror) = &self.mirror {
            let wa = &self.wiseagents;
            for (key, why) in mirror.problems(&wa.request_prefix, &wa.response_prefix) {
                bad(&key, why);
            }
        }
        if let Some(a2a) = &self.a2a {
            let proxied = |name: &str| self.agents.iter().any(|a| a.name == name);
            for (key, why) in a2a.problems(&self.http.listen, &proxied) {
                bad(&key, why);
            }
        }
        if let Some(mcp) = &self.mcp {
            for (key, why) in mcp.problems(&self.http.listen) {
                bad(&key, why);
            }
        }
        for (key, why) in self.traces.problems() {
            bad(&key, why);
        }
        self.validate_limits(&mut bad);
        self.validate_http(&mut bad);
        if !self.http.listen.is_empty() && self.http.listen.parse::<std::net::SocketAddr>().is_err() {
            bad("http.listen", format!("{:?} is not host:port", self.http.listen));
        }
        if !matches!(self.log.format.as_str(), "auto" | "json" | "text") {
            bad("log.format", format!("{:?} is not auto, json or text", self.log.format));
        }
        problems
    }

    /// `broker.url` or `broker.urls`: one of them, each address well formed, a list neither
    /// repeated nor mixed (a failover from `stomp+ssl://` to `stomp://` would drop TLS).
    fn validate_addresses(&self, bad: &mut impl FnMut(&str, String)) {
        let b = &self.broker;
        match (b.url.is_empty(), b.urls.is_empty()) {
            (true, true) => {
                return bad("broker.url", "missing: set broker.url, or broker.urls for a list".into());
            }
            (false, false) => return bad("broker.urls", "set broker.url or broker.urls, not both".into()),
            (false, true) => {
                if let Err(e) = b.url.parse::<BrokerUrl>() {
                    bad("broker.url", e.to_string());
                }
                return;
            }
            (true, false) => {}
        }
        let mut parsed: Vec<BrokerUrl> = Vec::new();
        for (i, text) in b.urls.iter().enumerate() {
            match text.parse::<BrokerUrl>() {
                Err(e) => bad(&format!("broker.urls[{i}]"), e.to_string()),
                Ok(url) if parsed.contains(&url) => {
                    bad(&format!("broker.urls[{i}]"), format!("{url} is listed twice"))
                }
                Ok(url) => parsed.push(url),
            }
        }
        let scheme = |u: &BrokerUrl| (u.tls, u.memory);
        if parsed.windows(2).any(|w| scheme(&w[0]) != scheme(&w[1])) {
            let why = "mixes schemes: every address must be stomp:// or every one stomp+ssl:// (a failover must not drop TLS)";
            bad("broker.urls", why.into());
        }
    }

    /// `[broker.address_tls]`: each key one of the `stomp+ssl://` addresses, compared as
    /// addresses (`stomp+ssl://b:61617/` is `stomp+ssl://b:61617`), none named twice; a client
    /// certificate with its key.
    fn validate_address_tls(&self, bad: &mut impl FnMut(&str, String)) {
        let b = &self.broker;
        let list = if b.urls.is_empty() { "broker.url" } else { "broker.urls" };
        let addresses: Vec<BrokerUrl> = b.addresses().iter().filter_map(|a| a.parse().ok()).collect();
        let mut named: Vec<(BrokerUrl, &str)> = Vec::new();
        for (text, tls) in &b.address_tls {
            let key = address_key(text);
            let url = match text.parse::<BrokerUrl>() {
                Ok(url) => url,
                Err(e) => {
                    // A key with credentials is not shown: the problem is the table's.
                    bad(if text.contains('@') { "broker.address_tls" } else { &key }, e.to_string());
                    continue;
                }
            };
            if !addresses.contains(&url) {
                bad(&key, format!("{url} is not one of the broker's addresses ({list})"));
            } else if !url.tls {
                bad(&key, format!("{url} is a stomp:// address: TLS settings are for stomp+ssl:// ones"));
            }
            match named.iter().find(|(u, _)| *u == url) {
                Some((_, first)) => bad(&key, format!("{url} is already named by {first:?}")),
                None => named.push((url, text)),
            }
            let why = "a client certificate needs both cert_file and key_file here (or neither: then \
                       broker.cert_file and broker.key_file apply)";
            match (&tls.cert_file, &tls.key_file) {
                (Some(_), None) => bad(&format!("{key}.cert_file"), why.into()),
                (None, Some(_)) => bad(&format!("{key}.key_file"), why.into()),
                _ => {}
            }
        }
    }

    /// The `[wiseagents]` names: prefixes, the reply agent, contexts.
    fn validate_wiseagents(&self, bad: &mut impl FnMut(&str, String)) {
        for (key, prefix) in [
            ("wiseagents.request_prefix", &self.wiseagents.request_prefix),
            ("wiseagents.response_prefix", &self.wiseagents.response_prefix),
        ] {
            if !prefix.starts_with('/') {
                bad(key, format!("{prefix:?} is not a STOMP destination prefix (it must start with /)"));
            }
        }
        if self.wiseagents.request_prefix == self.wiseagents.response_prefix {
            bad("wiseagents.response_prefix", "must differ from request_prefix".into());
        }
        if self.wiseagents.reply_agent.is_empty() || is_glob(&self.wiseagents.reply_agent) {
            bad("wiseagents.reply_agent", "must be a name, neither empty nor a glob".into());
        }
        if self.wiseagents.default_context.is_empty() {
            bad("wiseagents.default_context", "must not be empty".into());
        }
        for (key, list) in [
            ("wiseagents.contexts", &self.wiseagents.contexts),
            ("wiseagents.ack_contexts", &self.wiseagents.ack_contexts),
        ] {
            for (i, name) in list.iter().enumerate() {
                if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    bad(&format!("{key}[{i}]"), format!("{name:?} is not a context name or glob"));
                }
            }
        }
    }

    /// Every reply timeout is below the time an ask is remembered.
    fn validate_timeouts(&self, bad: &mut impl FnMut(&str, String)) {
        let ttl = self.delivery.correlation_ttl_ms;
        let timeouts =
            std::iter::once(("delivery.reply_timeout_ms".to_owned(), self.delivery.reply_timeout_ms)).chain(
                self.agents.iter().enumerate().filter_map(|(i, a)| {
                    a.reply_timeout_ms.map(|t| (format!("agents[{i}].reply_timeout_ms"), t))
                }),
            );
        for (key, timeout) in timeouts {
            if timeout >= ttl {
                bad(
                    &key,
                    format!(
                        "{timeout} must be below delivery.correlation_ttl_ms ({ttl}): an ask is forgotten then"
                    ),
                );
            }
        }
    }

    /// The `[delivery]` bounds that must be at least 1.
    /// HTTPS needs both the certificate and its key, and a listener.
    fn validate_http(&self, bad: &mut impl FnMut(&str, String)) {
        let h = &self.http;
        match (&h.cert_file, &h.key_file) {
            (Some(_), None) => bad("http.key_file", "http.cert_file needs its key: set http.key_file".into()),
            (None, Some(_)) => {
                bad("http.cert_file", "http.key_file needs its certificate: set http.cert_file".into())
            }
            (Some(_), Some(_)) if h.listen.is_empty() => bad(
                "http.cert_file",
                "the endpoint is off (http.listen is empty): nothing to serve over HTTPS".into(),
            ),
            _ => {}
        }
    }

    fn validate_limits(&self, bad: &mut impl FnMut(&str, String)) {
        for (key, value) in [
            ("delivery.in_flight", self.delivery.in_flight),
            ("delivery.batch_max", self.delivery.batch_max),
            ("delivery.batches_in_flight", self.delivery.batches_in_flight),
            ("delivery.max_attempts", self.delivery.max_attempts as usize),
            ("delivery.max_body_bytes", self.delivery.max_body_bytes),
            ("delivery.unconfirmed_max", self.delivery.unconfirmed_max.unwrap_or(1)),
        ] {
            if value == 0 {
                bad(key, "must be at least 1".into());
            }
        }
        if self.delivery.max_hops == 0 {
            bad("delivery.max_hops", "must be at least 1".into());
        }
        // The wait adds to a busy message's latency: past 10 ms it would be more than a
        // broker's own round trip here (docs/PERFORMANCE.md, "Wake-ups"; 500 µs was measured).
        if self.delivery.coalesce_us > MAX_COALESCE_US {
            bad("delivery.coalesce_us", format!("must be at most {MAX_COALESCE_US} (10 ms)"));
        }
    }

    fn validate_protocols(&self, bad: &mut impl FnMut(&str, String)) {
        let p = &self.protocols;
        let tables = [
            ("civitas", p.civitas.as_ref().map(|c| (&c.inbox, &c.ingress))),
            ("vox", p.vox.as_ref().map(|c| (&c.inbox, &c.ingress))),
            ("penguiflow", p.penguiflow.as_ref().map(|c| (&c.inbox, &c.ingress))),
        ];
        for (name, dests) in tables {
            let Some((inbox, ingress)) = dests else { continue };
            if !inbox.contains("{agent}") {
                bad(&format!("protocols.{name}.inbox"), format!("{inbox:?} must contain {{agent}}"));
            }
            if !ingress.starts_with('/') || ingress.contains("{agent}") {
                bad(&format!("protocols.{name}.ingress"), format!("{ingress:?} must be one destination"));
            }
        }
    }

    fn validate_agents(&self, bad: &mut impl FnMut(&str, String)) {
        let mut seen = std::collections::HashSet::new();
        for (i, agent) in self.agents.iter().enumerate() {
            let key = format!("agents[{i}]");
            if agent.name.is_empty() || agent.name.contains(['/', ' ']) {
                bad(
                    &format!("{key}.name"),
                    format!("{:?} is not an agent name or glob (no / or spaces)", agent.name),
                );
            }
            if is_glob(&agent.name) && self.wiseagents.discovery == Discovery::None {
                let why = "a glob needs wiseagents.discovery = \"activemq-advisory\"; on other brokers list every name";
                bad(&format!("{key}.name"), why.into());
            }
            if !seen.insert(agent.name.as_str()) {
                bad(&format!("{key}.name"), format!("{:?} is listed twice", agent.name));
            }
            let configured = match agent.protocol {
                Framework::Civitas => self.protocols.civitas.is_some(),
                Framework::Vox => self.protocols.vox.is_some(),
                Framework::PenguiFlow => self.protocols.penguiflow.is_some(),
                Framework::A2a => true,
                // Never decoded: `protocol` names only the frameworks an agent is proxied in.
                Framework::WiseAgents => true,
            };
            if !configured {
                let name = agent.protocol;
                bad(&format!("{key}.protocol"), format!("{name} is used but [protocols.{name}] is missing"));
            }
            if agent.encoding.is_some() && agent.protocol != Framework::Civitas {
                bad(&format!("{key}.encoding"), "only Civitas agents have an encoding".into());
            }
            if agent.uuid.is_some() && agent.protocol != Framework::Vox {
                bad(&format!("{key}.uuid"), "only VOX agents have a uuid".into());
            }
            if self.wiseagents.agents.contains(&agent.name) {
                bad(&format!("{key}.name"), format!("{:?} is also listed as a native agent", agent.name));
            }
            validate_a2a_agent(agent, &key, bad);
            let probed = self.mirror.as_ref().is_some_and(|m| m.probe_timeout_ms > 0);
            if probed && glob_matches(&agent.name, PROBE_AGENT) {
                let why = format!(
                    "{:?} matches the mirror's probe queue ({PROBE_AGENT}): narrow it, or set mirror.probe_timeout_ms = 0",
                    agent.name
                );
                bad(&format!("{key}.name"), why);
            }
        }
    }
}

/// The keys only an A2A agent has: set on one and only there, a URL it can be called at.
fn validate_a2a_agent(agent: &super::AgentConfig, key: &str, bad: &mut impl FnMut(&str, String)) {
    let a2a = agent.protocol == Framework::A2a;
    let only = [
        ("url", agent.url.is_some()),
        ("token_file", agent.token_file.is_some()),
        ("ca_file", agent.ca_file.is_some()),
        ("max_calls", agent.max_calls.is_some()),
        ("max_attempts", agent.max_attempts.is_some()),
    ];
    for (field, set) in only {
        if set && !a2a {
            bad(&format!("{key}.{field}"), "only A2A agents (protocol = \"a2a\") have it".into());
        }
    }
    if !a2a {
        return;
    }
    if is_glob(&agent.name) {
        bad(&format!("{key}.name"), "an A2A agent is named exactly: each has its own url".into());
    }
    match agent.url.as_deref() {
        None => bad(&format!("{key}.url"), "an A2A agent needs the url its card is read from".into()),
        Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 => {
            bad(&format!("{key}.url"), format!("{url:?} is not an http:// or https:// URL"))
        }
        Some(url)
            if url.split("://").nth(1).and_then(|r| r.split('/').next()).is_some_and(|a| a.contains('@')) =>
        {
            bad(&format!("{key}.url"), "credentials do not go in the URL: use token_file".into())
        }
        Some(_) => {}
    }
    if agent.max_calls == Some(0) {
        bad(&format!("{key}.max_calls"), "must be at least 1".into());
    }
    if agent.max_attempts == Some(0) {
        bad(&format!("{key}.max_attempts"), "must be at least 1".into());
    }
}

/// `broker.address_tls."<address>"`, the key of one address's TLS files.
fn address_key(address: &str) -> String {
    format!("broker.address_tls.{}", toml_key(address))
}
