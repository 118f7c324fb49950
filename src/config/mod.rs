//! The bridge's configuration: TOML (every key overridable by `BRIDGE__SECTION__KEY`
//! environment variables), typed, with unknown keys refused, validated once at start, and
//! every problem of a file reported at once with its key, line and column.

pub mod a2a;
mod codecs;
mod decode;
mod delivery;
pub mod diff;
pub mod jwt;
pub mod mcp;
pub mod mirror;
pub mod push;
pub mod registry;
mod report;
mod rules;
mod source;
pub mod store;
pub mod traces;

use crate::envelope::civitas::Encoding;
use crate::envelope::codecs::Framework;
use crate::stomp::{BrokerUrl, Secret, TlsOptions};
pub use delivery::{DeliveryConfig, DeliveryMode};
use serde::{Deserialize, Serialize};
use source::Node;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub broker: BrokerConfig,
    #[serde(default)]
    pub wiseagents: WiseAgentsConfig,
    #[serde(default)]
    pub protocols: Frameworks,
    /// The agents the bridge stands in for (proxied agents), each with its framework.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    #[serde(default)]
    pub delivery: DeliveryConfig,
    #[serde(default)]
    pub http: HttpConfig,
    #[serde(default)]
    pub log: LogConfig,
    /// Mirror mode (off unless the table is present): docs/OPERATING.md, "Mirror mode".
    #[serde(default)]
    pub mirror: Option<mirror::MirrorConfig>,
    /// Native agents served as A2A agents (off unless the table is present): docs/A2A.md.
    #[serde(default)]
    pub a2a: Option<a2a::A2aConfig>,
    /// The society's agents served as MCP tools (off unless the table is present): docs/MCP.md.
    #[serde(default)]
    pub mcp: Option<mcp::McpConfig>,
    /// Traces and the conversations page: docs/OBSERVABILITY.md.
    #[serde(default)]
    pub traces: traces::TracesConfig,
}

/// How to reach the broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerConfig {
    /// `stomp://host:port`, or `stomp+ssl://host:port` for TLS: a broker that runs alone.
    /// Set this or `urls`, not both.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// The addresses of a broker that fails over (a live/backup pair, a master/slave pair on
    /// a shared store, a cluster's nodes), all `stomp://` or all `stomp+ssl://`: the first
    /// that accepts is used, and on a lost connection the others are tried in order (the
    /// next one first) with the reconnect backoff. Set this or `url`, not both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    #[serde(default)]
    pub login: Option<String>,
    /// Never logged or shown. Prefer `passcode_file` or the environment variable
    /// `BRIDGE__BROKER__PASSCODE` to writing it here.
    #[serde(default)]
    pub passcode: Option<Secret>,
    /// A file holding the passcode (a container secret such as `/run/secrets/broker`), one
    /// trailing line end dropped; relative to the configuration file. Not with `passcode`.
    #[serde(default)]
    pub passcode_file: Option<PathBuf>,
    /// The CONNECT `host` header: the virtual host (RabbitMQ: `/` or its vhost name).
    #[serde(default = "default_vhost")]
    pub vhost: String,
    /// Heart-beats [send, receive] in milliseconds; 0 turns one off.
    #[serde(default = "default_heartbeat")]
    pub heartbeat_ms: [u64; 2],
    /// PEM CA file for `stomp+ssl://` (default: the system's roots).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate and key, for brokers that require them.
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// TLS files of their own for some of the addresses, keyed by the address as `url` or
    /// `urls` gives it (`[broker.address_tls."stomp+ssl://backup:61617"]`): for that address a
    /// file set there replaces the one above, and the one above applies where none is set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub address_tls: BTreeMap<String, AddressTls>,
    /// Longest wait between reconnect attempts.
    #[serde(default = "default_reconnect_max_ms")]
    pub reconnect_max_ms: u64,
}

/// The TLS files of one broker address (`[broker.address_tls."<address>"]`); each one left
/// out is the broker's (`broker.ca_file`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddressTls {
    /// PEM CA file to trust for this address.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate and key for this address: both, or neither (then the broker's
    /// pair, if any).
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    #[serde(default)]
    pub key_file: Option<PathBuf>,
}

/// Wise Agents' naming, and the native agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WiseAgentsConfig {
    /// Request queue of agent A: this prefix + A. On RabbitMQ use `/queue/request.`.
    #[serde(default = "default_request_prefix")]
    pub request_prefix: String,
    #[serde(default = "default_response_prefix")]
    pub response_prefix: String,
    /// The context a message gets when its source had none (a context is never invented).
    #[serde(default = "default_context")]
    pub default_context: String,
    /// Native agents known by name (registered for VOX's name ↔ UUID registry). Any name
    /// that is not a proxied agent is taken as native.
    #[serde(default)]
    pub agents: Vec<String>,
    /// How queues of proxied agents named by a glob are found: `activemq-advisory` (ActiveMQ
    /// Classic's advisory topic, read as JSON) or `none` (then every agent must be named).
    #[serde(default = "default_discovery")]
    pub discovery: Discovery,
    /// Contexts the native agents know (globs allowed), besides `default_context`. A context
    /// from another framework that none names is replaced by the default (a Wise Agents
    /// agent fails on a context it does not know).
    #[serde(default)]
    pub contexts: Vec<String>,
    /// Contexts of phased and chat collaborations (globs, e.g. `"*_PhasedCoordinator.*"`:
    /// sub-contexts are `<parent>_<Coordinator>.<uuid4>`): answers to asks made in them
    /// arrive as ACK, the only type those agents accept.
    #[serde(default)]
    pub ack_contexts: Vec<String>,
    /// The Wise Agents registry in Redis (`[wiseagents.registry]`, docs/MAPPING.md).
    #[serde(default)]
    pub registry: Option<registry::RegistryConfig>,
    /// The name the bridge asks Wise Agents agents as when the asker has no response queue the
    /// bridge consumes (Civitas's `Runtime.ask()` asks as `_runtime`): answers come to its
    /// response queue. Bridges that are not one active/standby pair each need their own name,
    /// or one takes the answers another awaits.
    #[serde(default = "default_reply_agent")]
    pub reply_agent: String,
}

/// Discovery of the queues of agents named by a glob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Discovery {
    ActivemqAdvisory,
    None,
}

/// The frameworks' destinations and options (`[protocols.<framework>]`: the configuration
/// spells a framework "protocol", as `agents[].protocol` does); a framework is usable when its
/// table exists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frameworks {
    pub civitas: Option<CivitasConfig>,
    pub vox: Option<VoxConfig>,
    pub penguiflow: Option<PenguiFlowConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CivitasConfig {
    /// Where the bridge delivers to a Civitas agent; `{agent}` is its name.
    pub inbox: String,
    /// Where Civitas agents send to agents of other frameworks.
    pub ingress: String,
    /// `json` or `msgpack`, unless an agent says otherwise.
    #[serde(default)]
    pub encoding: Encoding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoxConfig {
    pub inbox: String,
    pub ingress: String,
    /// Namespace of the UUIDv5 an agent gets when it has no `uuid` of its own.
    pub namespace: Uuid,
    /// `message_source` of messages the bridge writes.
    #[serde(default = "default_message_source")]
    pub message_source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PenguiFlowConfig {
    pub inbox: String,
    pub ingress: String,
    /// `headers.tenant` when the source has none.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Write responses as `FinalAnswer{text}` (else as plain text).
    #[serde(default = "default_true")]
    pub response_as_final_answer: bool,
    /// Stream chunks buffered at most, in bytes, across all streams.
    #[serde(default = "default_stream_max_bytes")]
    pub stream_max_bytes: usize,
    /// Longest wait for a stream to finish.
    #[serde(default = "default_stream_max_wait_ms")]
    pub stream_max_wait_ms: u64,
}

/// One proxied agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    /// The framework the agent lives in: `civitas`, `vox`, `penguiflow`, or `a2a` (an A2A 1.0
    /// agent reached over HTTP at `url`: docs/A2A.md).
    #[serde(deserialize_with = "proxied_framework", serialize_with = "proxied_framework_name")]
    pub protocol: Framework,
    /// Civitas only: `json` or `msgpack` for this agent.
    #[serde(default)]
    pub encoding: Option<Encoding>,
    /// VOX only: the agent's UUID (else UUIDv5 of its name).
    #[serde(default)]
    pub uuid: Option<Uuid>,
    /// This agent's own `delivery.reply_timeout_ms` (for asks it is sent and asks it makes).
    #[serde(default)]
    pub reply_timeout_ms: Option<u64>,
    /// A2A only: the agent's URL (`http://` or `https://`); its card is read from
    /// `<url>/.well-known/agent-card.json`, its JSON-RPC endpoint is the one the card names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A2A only: a file holding the bearer token sent with every call to the agent, one
    /// trailing line end dropped; relative to the configuration file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The token read from `token_file` (never written out, never logged).
    #[serde(skip)]
    pub token: Option<Secret>,
    /// A2A only: PEM CA file for an `https://` agent (default: the system's roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// A2A only: calls under way to this agent at once (default 4); its request queue's
    /// prefetch is twice this, and the requests beyond wait on the broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<usize>,
    /// A2A only: attempts of one call when the agent is unreachable, answers 5xx or times
    /// out (default 3), within the reply timeout; then the asker gets CANNOT_ANSWER and the
    /// request is dead-lettered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

impl AgentConfig {
    /// A proxied agent `name` of `protocol`, with every optional key unset.
    pub fn new(name: impl Into<String>, protocol: Framework) -> Self {
        AgentConfig {
            name: name.into(),
            protocol,
            encoding: None,
            uuid: None,
            reply_timeout_ms: None,
            url: None,
            token_file: None,
            token: None,
            ca_file: None,
            max_calls: None,
            max_attempts: None,
        }
    }
}

/// Decodes `protocol`: the frameworks a proxied agent can live in, spelt as the configuration
/// spells them (never Wise Agents).
fn proxied_framework<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Framework, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Proxied {
        Civitas,
        Vox,
        Penguiflow,
        A2a,
    }
    Ok(match Proxied::deserialize(d)? {
        Proxied::Civitas => Framework::Civitas,
        Proxied::Vox => Framework::Vox,
        Proxied::Penguiflow => Framework::PenguiFlow,
        Proxied::A2a => Framework::A2a,
    })
}

/// Writes `protocol` as [`proxied_framework`] reads it; Wise Agents, which no proxied agent
/// lives in, is refused.
fn proxied_framework_name<S: serde::Serializer>(framework: &Framework, s: S) -> Result<S::Ok, S::Error> {
    match framework {
        Framework::WiseAgents => Err(serde::ser::Error::custom("a proxied agent cannot live in Wise Agents")),
        f => s.serialize_str(f.as_str()),
    }
}

/// The HTTP endpoint for `/metrics`, `/healthz` and `/readyz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// `host:port`; an empty string turns the endpoint off.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// PEM certificate chain: with `key_file`, the endpoint (and the A2A service on it) is
    /// HTTPS only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
}

/// Log output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `auto` (human-readable on a terminal, JSON lines otherwise), `json` or `text`.
    #[serde(default = "default_log_format")]
    pub format: String,
    /// A tracing filter, such as `info` or `stomp_agent_bridge=debug`.
    #[serde(default = "default_log_level")]
    pub level: String,
}

fn default_vhost() -> String {
    "/".into()
}
const fn default_heartbeat() -> [u64; 2] {
    [10_000, 10_000]
}
const fn default_reconnect_max_ms() -> u64 {
    30_000
}
fn default_request_prefix() -> String {
    "/queue/request/".into()
}
fn default_response_prefix() -> String {
    "/queue/response/".into()
}
/// The default `_sender` the bridge writes on an ask to a Wise Agents agent when the asker is
/// not an agent whose response queue the bridge consumes (Civitas's `Runtime.ask()` asks as
/// `_runtime`; `wiseagents.reply_agent` names another): the agent answers to
/// `<response_prefix>_bridge`, which the bridge consumes
/// whenever some framework can ask (an ingress is configured), and the answer finds its asker
/// through the pending ask.
pub const REPLY_AGENT: &str = "_bridge";

/// The longest reply timeout of the HTTP services (`a2a.`, `mcp.reply_timeout_ms`): a day (a
/// deadline that far is a request held, not an answer awaited).
pub const MAX_REPLY_TIMEOUT_MS: u64 = 86_400_000;

fn default_context() -> String {
    "default".into()
}
fn default_reply_agent() -> String {
    REPLY_AGENT.into()
}
const fn default_discovery() -> Discovery {
    Discovery::ActivemqAdvisory
}
fn default_message_source() -> String {
    "wiseagents".into()
}
fn default_tenant() -> String {
    "default".into()
}
const fn default_true() -> bool {
    true
}
const fn default_stream_max_bytes() -> usize {
    4 << 20
}
const fn default_stream_max_wait_ms() -> u64 {
    60_000
}
fn default_listen() -> String {
    "127.0.0.1:9464".into()
}
fn default_log_format() -> String {
    "auto".into()
}
fn default_log_level() -> String {
    "info".into()
}

impl Default for WiseAgentsConfig {
    fn default() -> Self {
        WiseAgentsConfig {
            request_prefix: default_request_prefix(),
            response_prefix: default_response_prefix(),
            default_context: default_context(),
            agents: Vec::new(),
            discovery: default_discovery(),
            contexts: Vec::new(),
            ack_contexts: Vec::new(),
            registry: None,
            reply_agent: default_reply_agent(),
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig { listen: default_listen(), cert_file: None, key_file: None }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { format: default_log_format(), level: default_log_level() }
    }
}

/// Values built in code (the tests and the load tools write their files from them): each
/// constructor takes the keys that have no default and sets every other key to the default
/// the file would give it.
impl Config {
    /// `broker`, and every other section as a file without it has it (no framework, no agent).
    pub fn new(broker: BrokerConfig) -> Config {
        Config {
            broker,
            wiseagents: WiseAgentsConfig::default(),
            protocols: Frameworks::default(),
            agents: Vec::new(),
            delivery: DeliveryConfig::default(),
            http: HttpConfig::default(),
            log: LogConfig::default(),
            mirror: None,
            a2a: None,
            mcp: None,
            traces: traces::TracesConfig::default(),
        }
    }
}

impl BrokerConfig {
    /// The broker's addresses in the order tried: `urls`, or the one `url`.
    pub fn addresses(&self) -> Vec<&str> {
        match self.urls.is_empty() {
            true => vec![self.url.as_str()],
            false => self.urls.iter().map(String::as_str).collect(),
        }
    }

    /// The broker at `url`, without credentials.
    pub fn new(url: impl Into<String>) -> BrokerConfig {
        BrokerConfig {
            url: url.into(),
            urls: Vec::new(),
            login: None,
            passcode: None,
            passcode_file: None,
            vhost: default_vhost(),
            heartbeat_ms: default_heartbeat(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            address_tls: BTreeMap::new(),
            reconnect_max_ms: default_reconnect_max_ms(),
        }
    }

    /// The TLS files for `address`: those its `address_tls` entry sets, the broker's for the
    /// others. The client certificate and its key go together: an entry that sets either
    /// takes neither from the broker.
    pub fn tls_for(&self, address: &BrokerUrl) -> TlsOptions {
        let own = self.address_tls.iter().find(|(key, _)| key.parse().ok().as_ref() == Some(address));
        let own = own.map(|(_, tls)| tls).cloned().unwrap_or_default();
        let (cert_file, key_file) = match own.cert_file.is_some() || own.key_file.is_some() {
            true => (own.cert_file, own.key_file),
            false => (self.cert_file.clone(), self.key_file.clone()),
        };
        TlsOptions { ca_file: own.ca_file.or_else(|| self.ca_file.clone()), cert_file, key_file }
    }
}

impl CivitasConfig {
    pub fn new(inbox: impl Into<String>, ingress: impl Into<String>) -> CivitasConfig {
        CivitasConfig { inbox: inbox.into(), ingress: ingress.into(), encoding: Encoding::default() }
    }
}

impl VoxConfig {
    pub fn new(inbox: impl Into<String>, ingress: impl Into<String>, namespace: Uuid) -> VoxConfig {
        VoxConfig {
            inbox: inbox.into(),
            ingress: ingress.into(),
            namespace,
            message_source: default_message_source(),
        }
    }
}

impl PenguiFlowConfig {
    pub fn new(inbox: impl Into<String>, ingress: impl Into<String>) -> PenguiFlowConfig {
        PenguiFlowConfig {
            inbox: inbox.into(),
            ingress: ingress.into(),
            tenant: default_tenant(),
            response_as_final_answer: default_true(),
            stream_max_bytes: default_stream_max_bytes(),
            stream_max_wait_ms: default_stream_max_wait_ms(),
        }
    }
}

pub use codecs::codecs;
pub use report::{At, ConfigError, Problem};

impl Config {
    /// Reads `path`, applies `BRIDGE__…` environment overrides, and validates.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Self::load_with_env(path, None)
    }

    /// [`Config::load`] with the given variables in place of the process environment.
    pub fn load_with_env(path: &Path, env: Option<HashMap<String, String>>) -> Result<Config, ConfigError> {
        let env: BTreeMap<String, String> = match env {
            Some(env) => env.into_iter().collect(),
            None => std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(k, _)| source::env_path(k).is_some())
                .collect(),
        };
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: file.clone(),
            text: String::new(),
            problems: vec![Problem::new("", &format!("cannot read the file: {e}"), At::File)],
        })?;
        let (config, mut problems) = Self::read(&text, &env, path);
        problems.sort_by_key(|p| match &p.at {
            At::Span(s) | At::Near(s) => (0, s.start),
            At::Env(_) => (1, 0),
            At::File => (2, 0),
        });
        match config {
            Some(config) if problems.is_empty() => Ok(config),
            _ => Err(ConfigError { file, text, problems }),
        }
    }

    /// Types `text` with `env` laid over it and checks the rules, finding every problem.
    fn read(text: &str, env: &BTreeMap<String, String>, path: &Path) -> (Option<Config>, Vec<Problem>) {
        let mut tree = match Node::parse(text) {
            Ok(tree) => tree,
            Err(problems) => return (None, problems),
        };
        let mut problems = tree.apply_env(env);
        let decoded = decode::decode::<Config>(&mut tree, &mut problems);
        let Some(mut config) = decoded.value else { return (None, problems) };
        config.anchor_files(path);
        let mut broken = Vec::new();
        if let Err(why) = config.read_passcode_file(path) {
            broken.push(("broker.passcode_file".to_owned(), why));
        }
        if let Some(a2a) = &mut config.a2a
            && let Err(why) = a2a.read_token_file(path)
        {
            broken.push(("a2a.token_file".to_owned(), why));
        }
        if let Some(mcp) = &mut config.mcp
            && let Err(why) = mcp.read_token_file(path)
        {
            broken.push(("mcp.token_file".to_owned(), why));
        }
        for (i, agent) in config.agents.iter_mut().enumerate() {
            if let Some(file) = &agent.token_file {
                match read_secret(path, file) {
                    Ok(token) => agent.token = Some(token),
                    Err(why) => broken.push((format!("agents[{i}].token_file"), why)),
                }
            }
        }
        if !decoded.dropped_table {
            broken.extend(config.rules());
        }
        let typed = problems.len();
        for (key, why) in broken {
            let covered = |p: &Problem| {
                key == p.key || [".", "["].iter().any(|s| key.starts_with(&format!("{}{s}", p.key)))
            };
            if !problems[..typed].iter().any(covered) {
                problems.push(locate(&tree, &key, &why));
            }
        }
        (Some(config), problems)
    }

    /// Makes each relative file read at run time (`broker.ca_file`, `cert_file`, `key_file`, those
    /// of `broker.address_tls`, `agents[].ca_file`, `http.cert_file`, `key_file`,
    /// `a2a.jwt.jwks_file`, `mcp.jwt.jwks_file`) relative to the
    /// folder of the configuration file at `path`, as `passcode_file` and `token_file` are: the
    /// bridge reads the same files whatever folder it is started from.
    fn anchor_files(&mut self, path: &Path) {
        let dir = path.parent().unwrap_or(Path::new("."));
        let anchor = |file: &mut Option<PathBuf>| {
            if let Some(f) = file.as_mut().filter(|f| f.is_relative()) {
                *f = dir.join(&*f);
            }
        };
        let broker = &mut self.broker;
        let tls =
            broker.address_tls.values_mut().map(|t| [&mut t.ca_file, &mut t.cert_file, &mut t.key_file]);
        let own = [&mut broker.ca_file, &mut broker.cert_file, &mut broker.key_file];
        std::iter::once(own).chain(tls).flatten().for_each(anchor);
        self.agents.iter_mut().for_each(|a| anchor(&mut a.ca_file));
        [&mut self.http.cert_file, &mut self.http.key_file].into_iter().for_each(anchor);
        let a2a = self.a2a.as_mut().and_then(|a| a.jwt.as_mut());
        let mcp = self.mcp.as_mut().and_then(|m| m.jwt.as_mut());
        a2a.into_iter().chain(mcp).for_each(|jwt| anchor(&mut jwt.jwks_file));
    }

    /// Puts the text of `broker.passcode_file` (relative to the configuration file at
    /// `path`) in `broker.passcode`, without one trailing line end.
    fn read_passcode_file(&mut self, path: &Path) -> Result<(), String> {
        let Some(file) = &self.broker.passcode_file else { return Ok(()) };
        if self.broker.passcode.is_some() {
            return Err("set broker.passcode or broker.passcode_file, not both".into());
        }
        self.broker.passcode = Some(read_secret(path, file)?);
        Ok(())
    }
}

/// The secret in `file` (relative to the configuration file at `path`), without one
/// trailing line end; an empty file is an error.
fn read_secret(path: &Path, file: &Path) -> Result<Secret, String> {
    let file = path.parent().unwrap_or(Path::new(".")).join(file);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let text = text.strip_suffix('\n').map_or(text.as_str(), |t| t.strip_suffix('\r').unwrap_or(t));
    if text.is_empty() {
        return Err(format!("{} is empty", file.display()));
    }
    Ok(Secret::new(text))
}

/// A rule's problem at its key's place: the value, or the table it would be in.
fn locate(tree: &Node, key: &str, why: &str) -> Problem {
    let steps = source::steps(key);
    let (node, _, found) = tree.find(&steps);
    let at = match &node.origin {
        _ if found < steps.len() => decode::near(node, &steps[..found]),
        source::Origin::File(span) => At::Span(span.clone()),
        source::Origin::Env(var) => At::Env(var.clone()),
    };
    let with_credentials =
        matches!(&node.kind, source::Kind::Leaf(toml::Value::String(s)) if s.contains('@'));
    let mut problem = Problem::new(key, why, at);
    if found < steps.len() {
        problem.note = Some("the key is not set in this table, so its default applies".into());
    }
    let credentials = key.starts_with("broker.url") && with_credentials || key == "broker.address_tls";
    problem.show_line = !(key.ends_with("passcode") || credentials);
    problem
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "errors_tests.rs"]
mod errors_tests;
