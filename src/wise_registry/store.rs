//! The registry's data in Redis, as `WiseAgentRegistry` and `WiseAgentContext` keep it
//! (core.py at 5d76309): the `agents`, `tools` and `contexts` hashes, and one hash per context.
//! Reads decode pickles as data; writes use the same optimistic transactions.

use super::dumps::{append, dumps};
use super::pickle::{PickleError, Value, loads};
use super::resp::{Connection, RedisError, Reply};
use crate::config::registry::RegistryConfig;

/// The hash that marks which bridge instance registered an agent (field: agent name).
pub const OWNERS: &str = "stomp-agent-bridge:owners";
/// Optimistic transactions retried at most (Wise Agents retries for ever).
const MAX_RETRIES: usize = 100;
/// The prefix of the records of answers handled (`answer_once`), one per source message.
pub const ANSWERED: &str = "stomp-agent-bridge:answered:";
/// How long such a record is kept: a redelivery later than this (the bridge down for a day
/// with the answer unacknowledged) would append the answer again.
pub const ANSWERED_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Redis(#[from] RedisError),
    #[error(
        "the agent name {agent:?} is already in the Wise Agents registry (agents hash), registered by {owner}: \
         stop that agent, or give the proxied agent another name"
    )]
    Taken { agent: String, owner: String },
    #[error("{key} {field}: {error}")]
    Pickle { key: String, field: String, error: PickleError },
    #[error("{key} {field}: {why}")]
    Shape { key: String, field: String, why: &'static str },
    #[error("the registry kept changing under a transaction on {0} ({MAX_RETRIES} tries)")]
    Contended(String),
}

impl RegistryError {
    /// Redis is away, slow or contended: nothing is wrong with the message or the registry's
    /// data, and the same call may succeed later. Every other error is the data's (a pickle or
    /// a field of a shape Wise Agents does not write, a value of the wrong Redis type) or a
    /// name taken.
    pub fn is_unavailable(&self) -> bool {
        match self {
            RegistryError::Redis(RedisError::Server(message)) => !message.starts_with("WRONGTYPE"),
            RegistryError::Redis(_) | RegistryError::Contended(_) => true,
            RegistryError::Taken { .. } | RegistryError::Pickle { .. } | RegistryError::Shape { .. } => false,
        }
    }

    fn pickle(key: &str, field: &str, error: PickleError) -> Self {
        RegistryError::Pickle { key: key.to_owned(), field: field.to_owned(), error }
    }
}

/// A proxied agent as the registry shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub name: String,
    pub description: String,
    /// The tool's parameters schema, when it is registered as an agent tool.
    pub tool: Option<serde_json::Value>,
}

/// A context's collaboration, as `handle_response` reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Collaboration {
    #[default]
    Independent,
    Sequential {
        memory: bool,
    },
    /// Phased or chat: the answer goes into the chat completion, the reply is ACK.
    Shared,
}

/// What an answer's routing reads of its context's hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub collaboration: Collaboration,
    /// `agents_sequence` (sequential only; missing: empty).
    pub sequence: Vec<String>,
    /// `restart_sequence` (sequential only; missing: false).
    pub restart: bool,
    /// `get_current_query()`, the first of `queries` (read only when `restart`).
    pub query: Option<String>,
    /// `route_response_to`, a plain string (sequential only).
    pub route_response_to: Option<String>,
}

/// Where an answer goes and what it says, as its frame carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub destination: String,
    pub body: String,
}

impl Routed {
    /// As recorded: the destination, a newline, the body.
    fn write(&self) -> Vec<u8> {
        format!("{}\n{}", self.destination, self.body).into_bytes()
    }

    fn read(recorded: &[u8]) -> Routed {
        let text = String::from_utf8_lossy(recorded);
        let (destination, body) = text.split_once('\n').unwrap_or((&text, ""));
        Routed { destination: destination.to_owned(), body: body.to_owned() }
    }
}

/// What handling an answer does: where it goes, and what it writes in its context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub routed: Routed,
    /// The text appended to `llm_chat_completion` as the assistant's.
    pub append: Option<String>,
    /// `set_restart_sequence(False)`.
    pub clear_restart: bool,
}

fn decode(key: &str, field: &str, bytes: &[u8]) -> Result<Value, RegistryError> {
    loads(bytes).map_err(|e| RegistryError::pickle(key, field, e))
}

fn s(text: &str) -> Value {
    Value::Str(text.to_owned())
}

fn instance(module: &str, name: &str, state: Vec<(Value, Value)>) -> Value {
    Value::Object {
        class: Box::new(Value::Global { module: module.into(), name: name.into() }),
        args: Box::new(Value::Tuple(Vec::new())),
        state: Some(Box::new(Value::Dict(state))),
    }
}

/// `WiseAgentMetaData(description)` as Wise Agents pickles it: a `WiseAgentsYAMLObject`,
/// whose state has the leading underscores stripped, in `__new__`'s then `__init__`'s order.
pub fn metadata(description: &str) -> Vec<u8> {
    dumps(&instance(
        "wiseagents.core",
        "WiseAgentMetaData",
        vec![
            (s("system_message"), Value::None),
            (s("pre_user_messages"), Value::None),
            (s("post_user_messages"), Value::None),
            (s("description"), s(description)),
        ],
    ))
}

/// `WiseAgentTool(name, description, agent_tool=True, parameters_json_schema)`.
pub fn tool(name: &str, description: &str, parameters: &serde_json::Value) -> Vec<u8> {
    dumps(&instance(
        "wiseagents.core",
        "WiseAgentTool",
        vec![
            (s("name"), s(name)),
            (s("description"), s(description)),
            (s("parameters_json_schema"), json_value(parameters)),
            (s("agent_tool"), Value::Bool(true)),
            (s("call_back"), Value::None),
        ],
    ))
}

/// `WiseAgentContext(name, config)`: `_name` and a `_config` that makes a loading Wise Agents
/// process connect to Redis (no secrets copied in).
pub fn context(name: &str, host: &str, port: u16) -> Vec<u8> {
    let config = Value::Dict(vec![
        (s("use_redis"), Value::Bool(true)),
        (s("redis_ssl"), Value::Bool(false)),
        (s("redis_host"), s(host)),
        (s("redis_port"), Value::Int(i64::from(port))),
    ]);
    dumps(&instance(
        "wiseagents.core",
        "WiseAgentContext",
        vec![(s("_name"), s(name)), (s("_config"), config)],
    ))
}

/// A JSON value as the Python value `json.loads` gives.
pub fn json_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::None,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            n.as_i64().map(Value::Int).unwrap_or_else(|| Value::Float(n.as_f64().unwrap_or(0.0)))
        }
        serde_json::Value::String(t) => s(t),
        serde_json::Value::Array(items) => Value::List(items.iter().map(json_value).collect()),
        serde_json::Value::Object(map) => {
            Value::Dict(map.iter().map(|(k, v)| (s(k), json_value(v))).collect())
        }
    }
}

/// One connection to the registry's Redis, with its settings.
pub struct Store {
    conn: Connection,
    config: RegistryConfig,
}

impl Store {
    /// Whether its connection can take another call (none was given up on half-way).
    pub fn is_usable(&self) -> bool {
        self.conn.is_usable()
    }

    pub async fn open(config: &RegistryConfig) -> Result<Self, RegistryError> {
        let auth = config.password.as_deref().map(|p| (config.username.as_deref(), p));
        let conn = Connection::open(&config.host, config.port, auth, config.db).await?;
        Ok(Store { conn, config: config.clone() })
    }

    async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, RegistryError> {
        Ok(self.conn.call(args).await?.ok()?)
    }

    async fn hget(&mut self, key: &str, field: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        Ok(self.conn.call(&[b"HGET", key.as_bytes(), field.as_bytes()]).await?.into_bytes()?)
    }

    async fn hexists(&mut self, key: &str, field: &str) -> Result<bool, RegistryError> {
        Ok(self.conn.call(&[b"HEXISTS", key.as_bytes(), field.as_bytes()]).await?.into_int()? == 1)
    }

    /// Runs `MULTI`, the commands, `EXEC`: `false` when a watched key changed.
    async fn exec(&mut self, commands: &[Vec<&[u8]>]) -> Result<bool, RegistryError> {
        self.call(&[b"MULTI"]).await?;
        for command in commands {
            self.call(command).await?;
        }
        Ok(!matches!(self.call(&[b"EXEC"]).await?, Reply::Array(None)))
    }

    /// Registers `member` as `register_agent` does (WATCH `agents`, HEXISTS, MULTI, HSET,
    /// EXEC), marked as this instance's; an entry another process made is refused, one this
    /// instance left is taken over.
    pub async fn register(&mut self, member: &Member) -> Result<(), RegistryError> {
        let name = member.name.as_bytes();
        let meta = metadata(&member.description);
        let tool = member.tool.as_ref().map(|p| tool(&member.name, &member.description, p));
        let mine = self.config.instance.clone();
        for _ in 0..MAX_RETRIES {
            self.call(&[b"WATCH", b"agents", OWNERS.as_bytes()]).await?;
            let owner =
                self.hget(OWNERS, &member.name).await?.map(|o| String::from_utf8_lossy(&o).into_owned());
            if self.hexists("agents", &member.name).await? && owner.as_deref() != Some(&mine) {
                self.call(&[b"UNWATCH"]).await?;
                let owner = owner.map_or("another process".to_owned(), |o| format!("bridge instance {o:?}"));
                return Err(RegistryError::Taken { agent: member.name.clone(), owner });
            }
            let mut commands = vec![
                vec![&b"HSET"[..], b"agents", name, &meta],
                vec![&b"HSET"[..], OWNERS.as_bytes(), name, mine.as_bytes()],
            ];
            if let Some(tool) = &tool {
                commands.push(vec![&b"HSET"[..], b"tools", name, tool]);
            }
            if self.exec(&commands).await? {
                return Ok(());
            }
        }
        Err(RegistryError::Contended("agents".into()))
    }

    /// Removes `member`'s entries if this instance made them (`unregister_agent`: HDEL).
    pub async fn unregister(&mut self, member: &Member) -> Result<(), RegistryError> {
        let name = member.name.as_bytes();
        for _ in 0..MAX_RETRIES {
            self.call(&[b"WATCH", OWNERS.as_bytes()]).await?;
            let owner = self.hget(OWNERS, &member.name).await?;
            if owner.as_deref() != Some(self.config.instance.as_bytes()) {
                self.call(&[b"UNWATCH"]).await?;
                return Ok(());
            }
            let mut commands =
                vec![vec![&b"HDEL"[..], b"agents", name], vec![&b"HDEL"[..], OWNERS.as_bytes(), name]];
            if member.tool.is_some() {
                commands.push(vec![&b"HDEL"[..], b"tools", name]);
            }
            if self.exec(&commands).await? {
                return Ok(());
            }
        }
        Err(RegistryError::Contended(OWNERS.into()))
    }

    /// The names in the `agents` hash (`get_agents`'s keys).
    pub async fn agent_names(&mut self) -> Result<Vec<String>, RegistryError> {
        let names = match self.call(&[b"HKEYS", b"agents"]).await? {
            Reply::Array(Some(items)) => items,
            _ => Vec::new(),
        };
        let names = names.into_iter().filter_map(|n| n.into_bytes().ok().flatten());
        Ok(names.map(|n| String::from_utf8_lossy(&n).into_owned()).collect())
    }

    /// What `agent`'s entry in `agents` says it does (`WiseAgentMetaData.description`, its
    /// state written with or without the leading underscore); none when it has no entry.
    pub async fn description(&mut self, agent: &str) -> Result<Option<String>, RegistryError> {
        let Some(pickle) = self.hget("agents", agent).await? else { return Ok(None) };
        let shape = |why| RegistryError::Shape { key: "agents".into(), field: agent.into(), why };
        let value = loads(&pickle).map_err(|error| RegistryError::Pickle {
            key: "agents".into(),
            field: agent.into(),
            error,
        })?;
        let (_, state) = value.instance().ok_or_else(|| shape("not an object"))?;
        let state = state.ok_or_else(|| shape("an object without state"))?;
        let description = state.get("description").or_else(|| state.get("_description"));
        Ok(description.and_then(Value::as_str).map(str::to_owned))
    }

    /// Whether `member` is still in `agents` (Redis may have restarted empty).
    pub async fn is_registered(&mut self, member: &Member) -> Result<bool, RegistryError> {
        self.hexists("agents", &member.name).await
    }

    /// Makes sure the context exists, as `create_context` + `register_context` would make it
    /// (HSETNX: a context another process registered meanwhile is kept). `true` if created.
    pub async fn ensure_context(&mut self, name: &str) -> Result<bool, RegistryError> {
        if self.hexists("contexts", name).await? {
            return Ok(false);
        }
        let pickle = context(name, self.config.context_host(), self.config.port);
        let reply = self.call(&[b"HSETNX", b"contexts", name.as_bytes(), &pickle]).await?;
        Ok(reply == Reply::Int(1))
    }

    /// Reads what answering in `ctx` depends on (its collaboration and sequence fields).
    async fn read_context(&mut self, ctx: &str) -> Result<Context, RegistryError> {
        let fields: [&[u8]; 5] = [
            b"collaboration_type",
            b"agents_sequence",
            b"restart_sequence",
            b"queries",
            b"route_response_to",
        ];
        let mut args: Vec<&[u8]> = vec![b"HMGET", ctx.as_bytes()];
        args.extend(fields);
        let Reply::Array(Some(values)) = self.call(&args).await? else {
            return Err(RedisError::Protocol("HMGET answered no array").into());
        };
        let mut values = values.into_iter().map(Reply::into_bytes);
        let mut next = || values.next().unwrap_or(Ok(None));
        let (kind, sequence, restart, queries, route) = (next()?, next()?, next()?, next()?, next()?);
        let collaboration = match kind.as_deref() {
            Some(b"sequential") => Collaboration::Sequential { memory: false },
            Some(b"sequential_memory") => Collaboration::Sequential { memory: true },
            Some(b"phased" | b"chat") => Collaboration::Shared,
            _ => Collaboration::Independent,
        };
        let mut context = Context { collaboration, ..Context::default() };
        if !matches!(collaboration, Collaboration::Sequential { .. }) {
            return Ok(context);
        }
        let shape = |why| RegistryError::Shape { key: ctx.into(), field: "agents_sequence".into(), why };
        context.sequence = match sequence {
            Some(bytes) => {
                decode(ctx, "agents_sequence", &bytes)?.as_str_list().ok_or(shape("not a list of str"))?
            }
            None => Vec::new(),
        };
        context.restart = match restart {
            Some(bytes) => matches!(decode(ctx, "restart_sequence", &bytes)?, Value::Bool(true)),
            None => false,
        };
        // `get_current_query()`: the first of `queries`.
        if let (true, Some(bytes)) = (context.restart, queries)
            && let Value::List(items) = decode(ctx, "queries", &bytes)?
        {
            context.query = items.into_iter().next().and_then(|v| v.as_str().map(str::to_owned));
        }
        context.route_response_to = route.map(|b| String::from_utf8_lossy(&b).into_owned());
        Ok(context)
    }

    /// An answer in `ctx` handled once per source message, however often the broker delivers
    /// it: `decide` reads the context; its writes (the answer appended to `llm_chat_completion`
    /// with Wise Agents' own read-modify-write, `restart_sequence` cleared) and a record of
    /// where the answer went, kept [`ANSWERED_FOR`] under `source`, are made in one
    /// transaction. A source seen before gets its recorded routing again and writes nothing.
    /// `None`: the context's collaboration leaves the answer as it is.
    pub async fn answer_once(
        &mut self,
        ctx: &str,
        source: &str,
        decide: impl Fn(&Context) -> Result<Option<Answer>, RegistryError>,
    ) -> Result<Option<Routed>, RegistryError> {
        let record = format!("{ANSWERED}{source}");
        for _ in 0..MAX_RETRIES {
            self.call(&[b"WATCH", ctx.as_bytes(), record.as_bytes()]).await?;
            let answer = match self.read_context(ctx).await.and_then(|c| decide(&c)) {
                Ok(Some(answer)) => answer,
                other => {
                    self.call(&[b"UNWATCH"]).await?;
                    return other.map(|_| None);
                }
            };
            if let Some(recorded) = self.call(&[b"GET", record.as_bytes()]).await?.into_bytes()? {
                self.call(&[b"UNWATCH"]).await?;
                return Ok(Some(Routed::read(&recorded)));
            }
            let chat = match &answer.append {
                Some(text) => Some(self.appended(ctx, text).await?),
                None => None,
            };
            let routed = answer.routed.write();
            let ttl = ANSWERED_FOR.as_secs().to_string();
            let mut commands = Vec::new();
            if let Some(chat) = &chat {
                commands.push(vec![&b"HSET"[..], ctx.as_bytes(), b"llm_chat_completion", chat]);
            }
            let cleared = dumps(&Value::Bool(false));
            if answer.clear_restart {
                commands.push(vec![&b"HSET"[..], ctx.as_bytes(), b"restart_sequence", &cleared]);
            }
            commands.push(vec![&b"SET"[..], record.as_bytes(), &routed, b"EX", ttl.as_bytes()]);
            if self.exec(&commands).await? {
                return Ok(Some(answer.routed));
            }
        }
        Err(RegistryError::Contended(ctx.into()))
    }

    /// `llm_chat_completion` with `{"role": "assistant", "content": text}` appended
    /// (`append_chat_completion`), read under the caller's WATCH.
    async fn appended(&mut self, ctx: &str, text: &str) -> Result<Vec<u8>, RegistryError> {
        let item = Value::Dict(vec![(s("role"), s("assistant")), (s("content"), s(text))]);
        let stored = self.hget(ctx, "llm_chat_completion").await?;
        match append(stored.as_deref(), &item) {
            Ok(updated) => Ok(updated),
            Err(e) => {
                self.call(&[b"UNWATCH"]).await?;
                Err(RegistryError::pickle(ctx, "llm_chat_completion", e))
            }
        }
    }
}
