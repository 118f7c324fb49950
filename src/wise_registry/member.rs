//! Proxied agents as members of a Wise Agents system: registered while the bridge runs, and
//! their answers handled as `WiseAgent.handle_response` (core.py ~899–956) would handle them
//! in the context's collaboration. The bridge asks [`WiseRegistry::needs`] of every frame it
//! is about to publish, and the registry's stage (`stage.rs`) runs [`WiseRegistry::apply`]
//! on those that do, off the bridge's engine.

use super::resp::RedisError;
use super::store::{Answer, Collaboration, Context, Member, RegistryError, Routed, Store};
use crate::config::Config;
use crate::config::registry::RegistryConfig;
use crate::envelope::Intent;
use crate::envelope::wiseagents::WiseMessage;
use crate::names::is_glob;
use crate::stomp::Frame;
use crate::telemetry::registry::{RegistryAnswered, RegistryUnavailable};
use crate::telemetry::{Event as _, Metrics};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How often the registrations are checked (re-registered after Redis lost them).
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(10);

/// With `[wiseagents.registry]`: the proxied agents registered, and kept registered until
/// `shutdown` (checked every [`REFRESH`]). A name another process holds is an error; Redis
/// not answering is not (they are registered when it does).
pub async fn start(
    config: &Config,
    cards: &HashMap<String, String>,
    shutdown: &CancellationToken,
    metrics: &Arc<Metrics>,
) -> Result<Option<Arc<WiseRegistry>>, RegistryError> {
    let Some(registry) = WiseRegistry::of(config, cards) else { return Ok(None) };
    match registry.start().await {
        // Redis away at start is no reason not to bridge: the keeper registers the agents
        // once it answers, and the messages that need it wait for it.
        Err(error) if error.is_unavailable() => {
            warn!(%error, every_s = REFRESH.as_secs(), "the Wise Agents registry does not answer: registering when it does")
        }
        started => started?,
    }
    let registry = Arc::new(registry);
    let (keeper, shutdown, metrics) = (registry.clone(), shutdown.clone(), metrics.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => match keeper.refresh().await {
                    // Redis answers again: the A2A and MCP requests use the registry again.
                    Ok(()) => {
                        RegistryAnswered.emit(&metrics.registry);
                    }
                    Err(error) if error.is_unavailable() => {
                        RegistryUnavailable { error: &error.to_string(), retried: false }.emit(&metrics.registry);
                    }
                    Err(_) => {}
                },
            }
        }
    });
    Ok(Some(registry))
}

/// The registry, when `[wiseagents.registry]` is configured.
pub struct WiseRegistry {
    config: RegistryConfig,
    members: Vec<Member>,
    request_prefix: String,
    response_prefix: String,
    store: Mutex<Option<Store>>,
}

/// A frame to a Wise Agents queue, read: which kind of queue, and its message.
#[derive(Debug, Clone)]
pub struct WiseFrame {
    request: bool,
    message: WiseMessage,
}

impl WiseRegistry {
    /// The registry the configuration names, with every proxied agent named exactly; an
    /// agent's description is the configuration's, else what its A2A card says (`cards`,
    /// by agent), else a default naming its framework.
    pub fn of(config: &Config, cards: &HashMap<String, String>) -> Option<Self> {
        let registry = config.wiseagents.registry.clone()?;
        let members = config
            .agents
            .iter()
            .filter(|a| !is_glob(&a.name))
            .map(|a| {
                let said = registry.agent(&a.name);
                let framework = a.protocol;
                Member {
                    name: a.name.clone(),
                    description: said
                        .and_then(|s| s.description.clone())
                        .or_else(|| cards.get(&a.name).cloned())
                        .unwrap_or_else(|| {
                            format!("{}: a {framework} agent behind stomp-agent-bridge", a.name)
                        }),
                    tool: said
                        .filter(|s| s.tool)
                        .map(|s| s.parameters.clone().unwrap_or_else(|| serde_json::json!({}))),
                }
            })
            .collect();
        Some(WiseRegistry {
            config: registry,
            members,
            request_prefix: config.wiseagents.request_prefix.clone(),
            response_prefix: config.wiseagents.response_prefix.clone(),
            store: Mutex::new(None),
        })
    }

    /// The proxied agents registered.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// At start: every member registered; a name another process holds is an error.
    pub async fn start(&self) -> Result<(), RegistryError> {
        let mut guard = self.store.lock().await;
        let store = connected(&mut guard, &self.config).await?;
        for member in &self.members {
            store.register(member).await?;
        }
        info!(agents = self.members.len(), host = %self.config.host, port = self.config.port, "registered in the Wise Agents registry");
        Ok(())
    }

    /// At a clean stop: this instance's entries removed, as `stop_agent()` does.
    pub async fn stop(&self) {
        let mut guard = self.store.lock().await;
        let result = async {
            let store = connected(&mut guard, &self.config).await?;
            for member in &self.members {
                store.unregister(member).await?;
            }
            Ok::<(), RegistryError>(())
        }
        .await;
        if let Err(error) = result {
            warn!(%error, "could not remove the proxied agents from the Wise Agents registry");
        }
    }

    /// What the registry says `agent` does (its `agents` entry), for the cards of the agents
    /// served over A2A; none when it has no entry.
    pub async fn description(&self, agent: &str) -> Result<Option<String>, RegistryError> {
        let mut guard = self.store.lock().await;
        let read = async { connected(&mut guard, &self.config).await?.description(agent).await }.await;
        if let Err(error) = &read {
            forget_broken(&mut guard, error);
        }
        read
    }

    /// The agents in the registry (native, and the proxied ones bridges registered).
    pub async fn agent_names(&self) -> Result<Vec<String>, RegistryError> {
        let mut guard = self.store.lock().await;
        let read = async { connected(&mut guard, &self.config).await?.agent_names().await }.await;
        if let Err(error) = &read {
            forget_broken(&mut guard, error);
        }
        read
    }

    /// Makes the context `name` exist (as `create_context` + `register_context` would), for
    /// an A2A `contextId` the bridge asks in.
    pub async fn make_context(&self, name: &str) -> Result<(), RegistryError> {
        let mut guard = self.store.lock().await;
        let made = async { connected(&mut guard, &self.config).await?.ensure_context(name).await }.await;
        if let Err(error) = &made {
            forget_broken(&mut guard, error);
        }
        made.map(|_| ())
    }

    /// Periodically: a member missing from `agents` (Redis restarted empty, another instance
    /// stopped) is registered again.
    pub async fn refresh(&self) -> Result<(), RegistryError> {
        let mut guard = self.store.lock().await;
        let result = async {
            let store = connected(&mut guard, &self.config).await?;
            for member in &self.members {
                if !store.is_registered(member).await? {
                    store.register(member).await?;
                    info!(agent = %member.name, "registered again in the Wise Agents registry");
                }
            }
            Ok::<(), RegistryError>(())
        }
        .await;
        if let Err(error) = &result {
            forget_broken(&mut guard, error);
            warn!(%error, "the Wise Agents registry could not be checked");
        }
        result
    }

    /// The frame's Wise Agents message, if the registry has work to do before it is published:
    /// a frame to a Wise Agents queue that names a context. Pure; other frames are left alone.
    pub fn needs(&self, frame: &Frame) -> Option<WiseFrame> {
        self.wise_frame(frame).filter(|w| w.message.context_name.as_deref().is_some_and(|c| !c.is_empty()))
    }

    /// Before `frame` ([`WiseRegistry::needs`] gave `wise`) is published: its context exists
    /// in the registry (created if not), and a proxied agent's answer is routed as its
    /// context's collaboration says, with the collaboration's writes made once per `source`
    /// (the consumed message's key: a redelivery writes nothing again and is routed as the
    /// first delivery was).
    pub async fn apply(
        &self,
        frame: &mut Frame,
        wise: &WiseFrame,
        source: &str,
    ) -> Result<(), RegistryError> {
        let mut guard = self.store.lock().await;
        let result = async {
            let store = connected(&mut guard, &self.config).await?;
            let ctx = wise.message.context_name.clone().unwrap_or_default();
            store.ensure_context(&ctx).await?;
            let answerer = wise.message.sender.as_deref().filter(|s| self.is_member(s));
            let (Some(answerer), false) = (answerer, wise.request) else { return Ok(()) };
            let asker = self.recipient(frame).unwrap_or_default();
            let text = &wise.message.message;
            let decide = |c: &Context| self.decide(c, &ctx, answerer, &asker, text);
            if let Some(routed) = store.answer_once(&ctx, source, decide).await? {
                set_header(frame, "destination", routed.destination);
                frame.body = routed.body.into_bytes().into();
            }
            Ok(())
        }
        .await;
        if let Err(error) = &result {
            forget_broken(&mut guard, error);
        }
        result
    }

    /// `handle_response` for `answerer`'s answer `text` to `asker` in context `ctx`, decided
    /// from what the context holds; `None` when it goes as it is (independent).
    fn decide(
        &self,
        context: &Context,
        ctx: &str,
        answerer: &str,
        asker: &str,
        text: &str,
    ) -> Result<Option<Answer>, RegistryError> {
        let plain = |message: &str| WiseMessage {
            message: message.to_owned(),
            sender: Some(answerer.to_owned()),
            context_name: Some(ctx.to_owned()),
            ..WiseMessage::default()
        };
        let sequence = &context.sequence;
        let (request, to, message, append, clear_restart) = match context.collaboration {
            Collaboration::Independent => return Ok(None),
            Collaboration::Shared => {
                let ack = WiseMessage { message_type: Some(Intent::Ack), ..plain(text) };
                (false, asker.to_owned(), ack, Some(text), false)
            }
            Collaboration::Sequential { memory } => {
                let append = memory.then_some(text);
                let next = sequence.iter().position(|a| a == answerer).and_then(|i| sequence.get(i + 1));
                match next {
                    Some(next) => (true, next.clone(), plain(text), append, false),
                    None if context.restart && !sequence.is_empty() => {
                        let query = context.query.as_deref().unwrap_or_default();
                        (true, sequence[0].clone(), plain(query), append, true)
                    }
                    None => {
                        let to = context.route_response_to.clone().unwrap_or_else(|| asker.to_owned());
                        (false, to, plain(text), append, false)
                    }
                }
            }
        };
        if to.is_empty() {
            let why = "names no agent to send the answer to";
            return Err(RegistryError::Shape { key: ctx.into(), field: "route_response_to".into(), why });
        }
        let prefix = if request { &self.request_prefix } else { &self.response_prefix };
        let routed = Routed { destination: format!("{prefix}{to}"), body: message.to_yaml() };
        Ok(Some(Answer { routed, append: append.map(str::to_owned), clear_restart }))
    }

    fn is_member(&self, name: &str) -> bool {
        self.members.iter().any(|m| m.name == name)
    }

    /// The frame's Wise Agents message and queue kind; `None` if it is not for Wise Agents.
    fn wise_frame(&self, frame: &Frame) -> Option<WiseFrame> {
        let destination = frame.header("destination")?;
        let request = if destination.starts_with(&self.request_prefix) {
            true
        } else if destination.starts_with(&self.response_prefix) {
            false
        } else {
            return None;
        };
        let message = WiseMessage::parse(&frame.body).ok()?;
        Some(WiseFrame { request, message })
    }

    /// The agent a frame to a response queue goes to.
    fn recipient(&self, frame: &Frame) -> Option<String> {
        frame.header("destination")?.strip_prefix(&self.response_prefix).map(str::to_owned)
    }
}

/// The open store, opened first if needed, or again if a call on it was given up half-way
/// (a caller's timeout dropped it between its command and its reply: the next reply read
/// would be that one's).
async fn connected<'a>(
    slot: &'a mut Option<Store>,
    config: &RegistryConfig,
) -> Result<&'a mut Store, RegistryError> {
    let store = match slot.take() {
        Some(store) if store.is_usable() => store,
        _ => Store::open(config).await?,
    };
    Ok(slot.insert(store))
}

/// After a connection-level failure the store is dropped: the next call reconnects.
fn forget_broken(slot: &mut Option<Store>, error: &RegistryError) {
    if matches!(
        error,
        RegistryError::Redis(
            RedisError::Io(_) | RedisError::Timeout(_) | RedisError::Protocol(_) | RedisError::Connect { .. }
        ) | RegistryError::Contended(_)
    ) {
        *slot = None;
    }
}

fn set_header(frame: &mut Frame, name: &str, value: String) {
    frame.headers.retain(|(n, _)| n != name);
    frame.headers.insert(0, (name.to_owned(), value));
}
