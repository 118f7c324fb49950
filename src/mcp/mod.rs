//! The society's agents as MCP tools (docs/MCP.md): the official Rust SDK (`rmcp`) serves the
//! Streamable HTTP transport, stateless, at `/mcp` on the `[http]` listener; this module is
//! its handler. `tools/list` lists the agents of `mcp.tools` ([`tools`], pure); `tools/call`
//! asks the agent on the broker through the [`Relay`], as an A2A task does ([`call`]); for a
//! client that declares MCP's tasks extension (`io.modelcontextprotocol/tasks`), as a task that
//! it polls (`tasks/get`) and may cancel, kept by the SDK's task manager.

mod call;
pub mod serve;
pub mod tools;

use crate::a2a::jwt::{Claims, Jwt, Refusal};
use crate::config::Config;
use crate::config::mcp::McpConfig;
use crate::envelope::trace::SpanContext;
use crate::relay::Relay;
use crate::telemetry::Event;
use crate::telemetry::mcp::CallEnded;
use call::{Asked, Progress};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, GetTaskParams,
    GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// How long a task's result is kept after its reply timeout, for the client to fetch it
/// (`tasks/get`); the task's TTL is the two together.
const TASK_KEPT_MS: u64 = 300_000;

/// The MCP server (`[mcp]`): the relay its calls ask through, its settings at start, and the
/// checker of its JWTs (`[mcp.jwt]`).
pub struct McpService {
    pub relay: Arc<Relay>,
    pub config: McpConfig,
    pub jwt: Option<Arc<Jwt>>,
}

impl McpService {
    /// The server of `config`'s `[mcp]`, if it is set, asking through `relay`; with
    /// `[mcp.jwt]`, its keys are read again on a period beside it (on the runtime).
    pub fn of(config: &Config, relay: &Arc<Relay>) -> Result<Option<McpService>, String> {
        let Some(mcp) = config.mcp.clone() else { return Ok(None) };
        let jwt = mcp.jwt.as_ref().map(|j| serve::checker(j, relay)).transpose()?;
        Ok(Some(McpService { relay: relay.clone(), config: mcp, jwt }))
    }
}

/// What a request was let in with, as the guard found it ([`serve`]): `mcp.token_file`'s
/// token, or a JWT of `[mcp.jwt]` and its claims. None goes with a request when neither is set.
#[derive(Debug, Clone)]
pub enum Principal {
    Token,
    Jwt(Claims),
}

/// The MCP server's handler: every agent of `mcp.tools` a tool.
#[derive(Clone)]
pub struct Tools {
    relay: Arc<Relay>,
    /// A permit per call waiting for its answer (`mcp.max_calls`).
    calls: Arc<Semaphore>,
    /// The checker of `[mcp.jwt]`: with a JWT, a request lists and calls only the tools its
    /// `allow` lets it.
    jwt: Option<Arc<Jwt>>,
    /// The calls made tasks (`io.modelcontextprotocol/tasks`), running and ended, until their
    /// TTL: the SDK's task manager.
    tasks: TaskManager,
    /// Who made each task kept (the [`owner`] of its request): only they read or cancel it. At
    /// most `mcp.max_calls` are kept.
    owners: Arc<std::sync::Mutex<HashMap<String, String>>>,
    max_calls: usize,
}

impl Tools {
    pub fn new(relay: Arc<Relay>, max_calls: usize, jwt: Option<Arc<Jwt>>) -> Tools {
        relay.metrics.mcp.served.enable();
        let (tasks, owners) = (TaskManager::new(), Arc::default());
        Tools { relay, calls: Arc::new(Semaphore::new(max_calls)), jwt, tasks, owners, max_calls }
    }

    /// `asked`'s call of `agent` as a task: asked now, its result kept for `tasks/get`; a
    /// `tasks/cancel` ends its wait (the task is then `cancelled`). It holds `permit` (one of
    /// `mcp.max_calls`) until its answer or its end.
    fn task(
        &self,
        agent: String,
        question: tools::Question,
        permit: OwnedSemaphorePermit,
        asked: Asked,
        owner: String,
    ) -> Result<CreateTaskResult, String> {
        let mut owners = lock(&self.owners);
        owners.retain(|id, _| self.tasks.get_task(id).is_ok());
        if owners.len() >= self.max_calls {
            return Err("the bridge keeps mcp.max_calls tasks (running, or ended and not yet expired): try again later".into());
        }
        let relay = self.relay.clone();
        let ttl = asked.reply_timeout.as_millis() as u64 + TASK_KEPT_MS;
        let task = self.tasks.spawn(TaskOptions::new().with_ttl_ms(ttl), move |task| {
            Box::pin(async move {
                let _permit = permit;
                let gone = asked.gone.clone();
                let asking = call::ask(relay, &agent, question, asked);
                tokio::pin!(asking);
                tokio::select! {
                    result = &mut asking => Ok(result),
                    _ = task.cancelled() => {
                        gone.cancel();
                        asking.await;
                        Err(TaskExit::Cancelled)
                    }
                }
            })
        });
        owners.insert(task.task_id.clone(), owner);
        Ok(CreateTaskResult::new(task))
    }

    /// `task_id` if the request of `context` may read or cancel it: its request's [`owner`]
    /// made it; else "unknown task", as for one that is not kept.
    fn owned<'a>(
        &self,
        context: &RequestContext<RoleServer>,
        task_id: &'a str,
    ) -> Result<&'a str, ErrorData> {
        match lock(&self.owners).get(task_id) {
            Some(owner) if *owner == self::owner(context) => Ok(task_id),
            _ => Err(ErrorData::invalid_params(format!("unknown task: {task_id}"), None)),
        }
    }

    /// Why the request of `context` may not call `tool`, if it may not: its JWT's claims
    /// (when it came with a JWT) hold none of the values `mcp.jwt.allow` gives the tool.
    /// With `[mcp.jwt]`, a request the guard let in with neither is refused (it never is: the
    /// check does not rest on that).
    fn forbidden(&self, context: &RequestContext<RoleServer>, tool: &str) -> Option<String> {
        let jwt = self.jwt.as_ref()?;
        let refused = match principal(context) {
            None => return Some("the request came with no credentials the bridge checked".into()),
            Some(Principal::Token) => return None,
            Some(Principal::Jwt(claims)) => jwt.allows(claims, tool).err()?,
        };
        match refused {
            Refusal::NotAllowed(why) | Refusal::Invalid(why) => Some(why),
            Refusal::Missing => Some("no token".into()),
        }
    }

    /// The tools served now (the running configuration's, the registry's agents), their
    /// descriptions read all at once (a registry that does not answer costs one wait, not one
    /// per tool).
    pub async fn listed(&self) -> Vec<rmcp::model::Tool> {
        let config = self.relay.running();
        let registered = self.relay.registered().await;
        let names = tools::names(&config, &registered);
        let descriptions = futures_util::future::join_all(names.iter().map(|n| self.description(n))).await;
        names.iter().zip(descriptions).map(|(name, description)| tools::tool(name, description)).collect()
    }

    /// What `agent`'s tool says it does: `mcp.descriptions`, else its entry in the Wise
    /// Agents registry, else the default.
    async fn description(&self, agent: &str) -> String {
        let said = self.relay.running().mcp.as_ref().and_then(|m| m.descriptions.get(agent).cloned());
        if let Some(said) = said {
            return said;
        }
        match self.relay.registered_description(agent).await {
            Some(description) => description,
            None => tools::default_description(agent),
        }
    }

    /// Whether `name` is a tool (a name of `mcp.tools`, or one its globs match).
    fn serves(&self, name: &str) -> bool {
        tools::is_tool_name(name) && self.relay.running().mcp.as_ref().is_some_and(|m| m.serves(name))
    }

    fn reply_timeout(&self) -> Duration {
        let ms = self.relay.running().mcp.as_ref().map_or(120_000, |m| m.reply_timeout_ms);
        Duration::from_millis(ms)
    }
}

/// What the request of `context` was let in with, if anything.
fn principal(context: &RequestContext<RoleServer>) -> Option<&Principal> {
    context.extensions.get::<axum::http::request::Parts>()?.extensions.get::<Principal>()
}

/// Who made the request of `context`, as its tasks' owner: a JWT's holder, the static token's
/// (one for all who hold it), or anyone when the server takes requests without a token.
fn owner(context: &RequestContext<RoleServer>) -> String {
    match principal(context) {
        Some(Principal::Jwt(claims)) => format!("jwt {}", claims.holder()),
        Some(Principal::Token) => "token".into(),
        None => String::new(),
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The span a call continues: its `_meta.traceparent` (SEP-414), else the HTTP request's
/// `traceparent` header.
fn arrived(context: &RequestContext<RoleServer>) -> Option<SpanContext> {
    let header = || {
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        parts.headers.get("traceparent")?.to_str().ok()
    };
    context.meta.get_traceparent().or_else(header).and_then(SpanContext::parse)
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let implementation = Implementation::new("stomp-agent-bridge", env!("CARGO_PKG_VERSION"));
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
            .with_server_info(implementation)
            .with_instructions("Each tool asks one agent of the Wise Agents society over its broker.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.listed().await;
        tools.retain(|tool| self.forbidden(&context, &tool.name).is_none());
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let refused = |why: &str| {
            CallEnded { tool: name, call: "-", end: "refused", reason: Some(why) }
                .emit(&self.relay.metrics.mcp)
        };
        if !self.serves(name) {
            let why = format!("unknown tool {name:?} (tools/list lists them)");
            refused(&why);
            return Err(ErrorData::invalid_params(why, None));
        }
        if let Some(why) = self.forbidden(&context, name) {
            let why = format!("this token may not call {name}: {why}");
            refused(&why);
            return Err(ErrorData::invalid_request(why, None));
        }
        let question = match tools::question(request.arguments.as_ref()) {
            Ok(question) => question,
            Err(why) => {
                refused(&why);
                return Ok(tools::failure(why).into());
            }
        };
        let Ok(permit) = self.calls.clone().try_acquire_owned() else {
            let why = "the bridge has mcp.max_calls calls waiting for their answers: try again later";
            refused(why);
            return Ok(tools::failure(why.into()).into());
        };
        if context.client_capabilities().is_some_and(|c| c.supports_tasks()) {
            // A task outlives its request: it is ended by tasks/cancel, not by the request's end.
            let asked = Asked {
                reply_timeout: self.reply_timeout(),
                progress: None,
                gone: CancellationToken::new(),
                arrived: arrived(&context),
            };
            return match self.task(name.to_owned(), question, permit, asked, owner(&context)) {
                Ok(task) => Ok(CallToolResponse::Task(task)),
                Err(why) => {
                    refused(&why);
                    Ok(tools::failure(why).into())
                }
            };
        }
        let asked = Asked {
            reply_timeout: self.reply_timeout(),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| Progress { token, peer: context.peer.clone() }),
            gone: context.ct.clone(),
            arrived: arrived(&context),
        };
        let answer = call::ask(self.relay.clone(), name, question, asked).await;
        drop(permit);
        Ok(answer.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(self.owned(&context, &request.task_id)?)?))
    }

    /// No call asks its client for input: a response to none is ignored, as the spec says.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update_task(self.owned(&context, &request.task_id)?, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(self.owned(&context, &request.task_id)?)
    }
}
