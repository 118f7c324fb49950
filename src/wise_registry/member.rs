//! Proxied agents as members of a Wise Agents system: registered while the bridge runs, and
//! their answers handled as `WiseAgent.handle_response` (core.py ~899–956) would handle them
//! in the context's collaboration. The bridge calls [`WiseRegistry::before_publish`] on
//! every frame it is about to publish; everything here is async Redis work.

use super::resp::RedisError;
use super::store::{Collaboration, Member, RegistryError, Store};
use crate::config::Config;
use crate::config::registry::RegistryConfig;
use crate::envelope::Intent;
use crate::envelope::wiseagents::WiseMessage;
use crate::names::is_glob;
use crate::stomp::Frame;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How often the registrations are checked (re-registered after Redis lost them).
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(10);

/// With `[wiseagents.registry]`: the proxied agents registered, and kept registered until
/// `shutdown` (checked every [`REFRESH`]). A name another process holds is an error.
pub async fn start(
    config: &Config,
    shutdown: &CancellationToken,
) -> Result<Option<Arc<WiseRegistry>>, RegistryError> {
    let Some(registry) = WiseRegistry::of(config) else { return Ok(None) };
    registry.start().await?;
    let registry = Arc::new(registry);
    let (keeper, shutdown) = (registry.clone(), shutdown.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => keeper.refresh().await,
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

/// Where a frame to a Wise Agents queue goes.
struct WiseFrame {
    request: bool,
    message: WiseMessage,
}

impl WiseRegistry {
    /// The registry the configuration names, with every proxied agent named exactly.
    pub fn of(config: &Config) -> Option<Self> {
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
                    description: said.and_then(|s| s.description.clone()).unwrap_or_else(|| {
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

    /// Periodically: a member missing from `agents` (Redis restarted empty, another instance
    /// stopped) is registered again.
    pub async fn refresh(&self) {
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
        if let Err(error) = result {
            forget_broken(&mut guard, &error);
            warn!(%error, "the Wise Agents registry could not be checked");
        }
    }

    /// Before a frame to a Wise Agents queue is published: its context exists in the
    /// registry (created if not), and a proxied agent's answer is routed as its context's
    /// collaboration says. Other frames are left alone.
    pub async fn before_publish(&self, frame: &mut Frame) -> Result<(), RegistryError> {
        let Some(mut wise) = self
            .wise_frame(frame)
            .filter(|w| w.message.context_name.as_deref().is_some_and(|c| !c.is_empty()))
        else {
            return Ok(());
        };
        let mut guard = self.store.lock().await;
        let result = async {
            let store = connected(&mut guard, &self.config).await?;
            let ctx = wise.message.context_name.clone().unwrap_or_default();
            store.ensure_context(&ctx).await?;
            let answerer = wise.message.sender.as_deref().filter(|s| self.is_member(s)).map(str::to_owned);
            match answerer {
                Some(answerer) if !wise.request => {
                    self.route_answer(store, frame, &mut wise, &ctx, &answerer).await
                }
                _ => Ok(()),
            }
        }
        .await;
        if let Err(error) = &result {
            forget_broken(&mut guard, error);
        }
        result
    }

    /// `handle_response` for a proxied agent's answer in context `ctx`.
    async fn route_answer(
        &self,
        store: &mut Store,
        frame: &mut Frame,
        wise: &mut WiseFrame,
        ctx: &str,
        answerer: &str,
    ) -> Result<(), RegistryError> {
        let text = wise.message.message.clone();
        let plain = |message: String| WiseMessage {
            message,
            sender: Some(answerer.to_owned()),
            context_name: Some(ctx.to_owned()),
            ..WiseMessage::default()
        };
        let (request, to, message) = match store.collaboration(ctx).await? {
            Collaboration::Independent => return Ok(()),
            Collaboration::Shared => {
                store.append_answer(ctx, &text).await?;
                let asker = self.recipient(frame).unwrap_or_default();
                (false, asker, WiseMessage { message_type: Some(Intent::Ack), ..plain(text) })
            }
            Collaboration::Sequential { memory } => {
                if memory {
                    store.append_answer(ctx, &text).await?;
                }
                let sequence = store.agents_sequence(ctx).await?;
                let next = sequence.iter().position(|a| a == answerer).and_then(|i| sequence.get(i + 1));
                match next {
                    Some(next) => (true, next.clone(), plain(text)),
                    None if store.restart_sequence(ctx).await? && !sequence.is_empty() => {
                        let query = store.current_query(ctx).await?.unwrap_or_default();
                        store.clear_restart_sequence(ctx).await?;
                        (true, sequence[0].clone(), plain(query))
                    }
                    None => {
                        let to = store
                            .route_response_to(ctx)
                            .await?
                            .unwrap_or_else(|| self.recipient(frame).unwrap_or_default());
                        (false, to, plain(text))
                    }
                }
            }
        };
        if to.is_empty() {
            let why = "names no agent to send the answer to";
            return Err(RegistryError::Shape { key: ctx.into(), field: "route_response_to".into(), why });
        }
        let prefix = if request { &self.request_prefix } else { &self.response_prefix };
        set_header(frame, "destination", format!("{prefix}{to}"));
        frame.body = message.to_yaml().into_bytes().into();
        Ok(())
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

/// The open store, opened first if needed.
async fn connected<'a>(
    slot: &'a mut Option<Store>,
    config: &RegistryConfig,
) -> Result<&'a mut Store, RegistryError> {
    let store = match slot.take() {
        Some(store) => store,
        None => Store::open(config).await?,
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
