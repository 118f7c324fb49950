//! The tasks in Redis (`[a2a.store]`): every bridge that names the same Redis and prefix reads
//! and changes the same tasks, and a restarted bridge finds its own. Each change is one Lua
//! script ([`super::scripts`]); a task that ended stays as it ended. The bounds are the memory
//! store's: `a2a.max_tasks` (the finished tasks that finished first make room), `a2a.task_ttl_ms`
//! for a finished task, and a running task is forgotten `a2a.reply_timeout_ms` past the TTL
//! (its bridge gone, no answer came).

use super::follow::{Follow, Followed};
use super::pool::Pool;
use super::{MAX_WEBHOOKS, scripts};
use crate::a2a::push::{Pusher, Updates};
use crate::config::store::StoreConfig;
use crate::wise_registry::resp::{RedisError, Reply};
use a2a::{
    A2AError, ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig, TaskState, error_code,
};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Tries of a change that found its task changed by another bridge meanwhile.
const RACES: usize = 16;

pub struct Shared {
    pool: Arc<Pool>,
    prefix: String,
    max: usize,
    ttl: Duration,
    /// How long a task that has not ended is kept.
    running_ttl: Duration,
    pusher: Option<Arc<Pusher>>,
    /// The webhooks' workers this bridge started, by task: each change it makes goes to them.
    workers: Mutex<HashMap<String, Vec<(String, Updates)>>>,
    follow: Arc<Follow>,
}

/// What an update did.
enum Updated {
    Done { version: TaskVersion, previous: Option<Box<Task>>, hooks: Vec<TaskPushNotificationConfig> },
    Unknown,
    Ended,
    Raced,
}

impl Shared {
    /// The store of `config`; its subscription to the group's changes starts beside it.
    pub fn new(
        config: StoreConfig,
        max: usize,
        ttl: Duration,
        reply_timeout: Duration,
        pusher: Option<Arc<Pusher>>,
    ) -> Arc<Shared> {
        let prefix = config.prefix.clone();
        let pool = Arc::new(Pool::new(config));
        let follow = Follow::spawn(pool.clone(), &prefix);
        Arc::new(Shared {
            pool,
            prefix,
            max: max.max(1),
            ttl,
            running_ttl: ttl + reply_timeout,
            pusher,
            workers: Mutex::default(),
            follow,
        })
    }

    pub fn pushes(&self) -> bool {
        self.pusher.is_some()
    }

    /// With `[a2a.push]`: whether a webhook may be on a private address.
    pub fn allows_private(&self) -> Option<bool> {
        self.pusher.as_ref().map(|p| p.config.allow_private)
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}{id}", self.prefix)
    }

    fn failed(&self, e: &RedisError) -> A2AError {
        A2AError::internal(format!("the A2A task store (Redis at {}) failed: {e}", self.pool.address()))
    }

    async fn eval(&self, script: &str, keys: &[&str], args: &[&str]) -> Result<Reply, A2AError> {
        let n = keys.len().to_string();
        let mut call: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), n.as_bytes()];
        call.extend(keys.iter().map(|k| k.as_bytes()));
        call.extend(args.iter().map(|a| a.as_bytes()));
        self.pool.call_waiting(&call).await.and_then(Reply::ok).map_err(|e| self.failed(&e))
    }

    /// The task and its version.
    pub async fn get_versioned(&self, id: &str) -> Result<Option<(Task, TaskVersion)>, A2AError> {
        let key = self.key("task:", id);
        let reply = self.pool.call_waiting(&[b"HMGET", key.as_bytes(), b"task", b"version"]).await;
        let Reply::Array(Some(fields)) = reply.and_then(Reply::ok).map_err(|e| self.failed(&e))? else {
            return Ok(None);
        };
        let mut fields = fields.into_iter().map(|f| f.into_bytes().ok().flatten());
        let (Some(Some(json)), Some(Some(version))) = (fields.next(), fields.next()) else { return Ok(None) };
        let task = decode(&json)?;
        let version = std::str::from_utf8(&version).ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(Some((task, version)))
    }

    /// Writes `task`, if it has not ended otherwise (and, with `expected`, has not changed).
    async fn write(&self, task: &Task, expected: Option<TaskVersion>) -> Result<Updated, A2AError> {
        let json = encode(task)?;
        let (state, terminal) = (state_of(&task.status.state), task.status.state.is_terminal());
        let keys = [self.key("task:", &task.id), self.key("ended", ""), self.key("hooks:", &task.id)];
        let expected = expected.map(|v| v.to_string()).unwrap_or_default();
        let (now, ttl) = (now_ms().to_string(), millis(self.ttl).to_string());
        let args: [&str; 8] = [&self.prefix, &task.id, &json, &state, flag(terminal), &now, &ttl, &expected];
        let keys = keys.each_ref().map(String::as_str);
        let Reply::Array(Some(out)) = self.eval(scripts::UPDATE, &keys, &args).await? else {
            return Err(A2AError::internal("the A2A task store's update answered no list"));
        };
        let mut out = out.into_iter();
        let version = out.next().and_then(|v| v.into_int().ok()).unwrap_or(-1);
        Ok(match version {
            -1 => Updated::Unknown,
            -2 => Updated::Ended,
            -3 => Updated::Raced,
            v => {
                let previous = out.next().and_then(|p| p.into_bytes().ok().flatten());
                let previous = previous.map(|p| decode(&p).map(Box::new)).transpose()?;
                let hooks = out.filter_map(|h| h.into_bytes().ok().flatten());
                let hooks = hooks.filter_map(|h| serde_json::from_slice(&h).ok()).collect();
                Updated::Done { version: u64::try_from(v).unwrap_or(0), previous, hooks }
            }
        })
    }

    /// Hands the task's new state to its webhooks' workers on this bridge (started when first
    /// needed), when its status or its artifacts changed.
    fn push(&self, task: &Task, previous: Option<&Task>, hooks: Vec<TaskPushNotificationConfig>) {
        let Some(pusher) = &self.pusher else { return };
        if hooks.is_empty()
            || previous.is_some_and(|p| p.status == task.status && p.artifacts == task.artifacts)
        {
            return;
        }
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        if workers.len() >= self.max {
            // Tasks whose end another bridge wrote: their workers end with their senders.
            workers.clear();
        }
        let started = workers.entry(task.id.clone()).or_default();
        for hook in hooks {
            let id = hook.id.clone().unwrap_or_default();
            let at = match started.iter().position(|(i, _)| *i == id) {
                Some(at) => at,
                None => {
                    started.push((id, pusher.start(hook)));
                    started.len() - 1
                }
            };
            started[at].1.send_replace(Some(task.clone()));
        }
        if task.status.state.is_terminal() {
            workers.remove(&task.id);
        }
    }

    /// Changes a task as `change` says, from its stored state, as often as another bridge
    /// changed it meanwhile. `Ok(None)` when it is unknown; `change` returns `None` to leave it.
    pub async fn change(
        &self,
        id: &str,
        change: impl Fn(Task) -> Result<Option<Task>, A2AError>,
    ) -> Result<Option<Task>, A2AError> {
        for _ in 0..RACES {
            let Some((task, version)) = self.get_versioned(id).await? else { return Ok(None) };
            let Some(changed) = change(task)? else { return Ok(None) };
            match self.write(&changed, Some(version)).await? {
                Updated::Done { previous, hooks, .. } => {
                    self.push(&changed, previous.as_deref(), hooks);
                    return Ok(Some(changed));
                }
                Updated::Unknown => return Ok(None),
                Updated::Ended => return Err(A2AError::task_not_cancelable(id)),
                Updated::Raced => {}
            }
        }
        Err(A2AError::internal(format!("task {id} kept changing on other bridges ({RACES} tries)")))
    }

    /// Tells the bridge that runs `id`, if one does, that its answer was written here.
    pub async fn announce_adopted(&self, id: &str) -> Result<(), RedisError> {
        let channel = self.key("adopted", "");
        self.pool
            .call_within(&[b"PUBLISH", channel.as_bytes(), id.as_bytes()], Duration::from_secs(5))
            .await?;
        Ok(())
    }

    /// Wakes on each change of `id` on any bridge (and now and then without one).
    pub fn follow(&self, id: &str) -> Followed {
        self.follow.changed(id)
    }

    /// Wakes when another bridge wrote the answer of `id`, which this bridge runs.
    pub fn adopted(&self, id: &str) -> Followed {
        self.follow.adopted(id)
    }

    /// The webhooks of `task_id`.
    pub async fn hooks(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        if self.get_versioned(task_id).await?.is_none() {
            return Err(A2AError::task_not_found(task_id));
        }
        let key = self.key("hooks:", task_id);
        let reply = self.pool.call_waiting(&[b"HVALS", key.as_bytes()]).await.map_err(|e| self.failed(&e))?;
        let Reply::Array(Some(values)) = reply else { return Ok(Vec::new()) };
        let values = values.into_iter().filter_map(|v| v.into_bytes().ok().flatten());
        Ok(values.filter_map(|v| serde_json::from_slice(&v).ok()).collect())
    }

    pub async fn save_hook(&self, config: &TaskPushNotificationConfig) -> Result<(), A2AError> {
        let id = config.id.clone().unwrap_or_default();
        let json = serde_json::to_string(config).map_err(|e| A2AError::internal(e.to_string()))?;
        let keys = [self.key("task:", &config.task_id), self.key("hooks:", &config.task_id)];
        let most = MAX_WEBHOOKS.to_string();
        let reply = self.eval(scripts::SAVE_HOOK, &[&keys[0], &keys[1]], &[&id, &json, &most]).await?;
        match reply.into_int().unwrap_or(-1) {
            -1 => Err(A2AError::task_not_found(&config.task_id)),
            -2 => Err(A2AError::invalid_params(format!("a task has at most {MAX_WEBHOOKS} webhooks"))),
            _ => Ok(()),
        }
    }

    pub async fn hook(&self, task_id: &str, config_id: &str) -> Result<TaskPushNotificationConfig, A2AError> {
        let key = self.key("hooks:", task_id);
        let reply = self.pool.call_waiting(&[b"HGET", key.as_bytes(), config_id.as_bytes()]).await;
        let json = reply.and_then(Reply::into_bytes).map_err(|e| self.failed(&e))?;
        json.and_then(|j| serde_json::from_slice(&j).ok()).ok_or_else(|| {
            A2AError::new(
                error_code::TASK_NOT_FOUND,
                format!("push notification config not found: {config_id}"),
            )
        })
    }

    /// Deletes one webhook (`Some`) or all of a task's.
    pub async fn delete_hooks(&self, task_id: &str, config_id: Option<&str>) -> Result<(), A2AError> {
        let key = self.key("hooks:", task_id);
        let reply = match config_id {
            Some(id) => self.pool.call_waiting(&[b"HDEL", key.as_bytes(), id.as_bytes()]).await,
            None => self.pool.call_waiting(&[b"DEL", key.as_bytes()]).await,
        };
        reply.and_then(Reply::ok).map_err(|e| self.failed(&e))?;
        Ok(())
    }

    /// Whether the error says Redis was away (not the data's fault).
    pub fn is_unavailable(e: &A2AError) -> bool {
        e.code == error_code::INTERNAL_ERROR && e.message.starts_with("the A2A task store (Redis at")
    }
}

#[async_trait::async_trait]
impl TaskStore for Shared {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let json = encode(&task)?;
        let (state, terminal) = (state_of(&task.status.state), task.status.state.is_terminal());
        let keys = [self.key("task:", &task.id), self.key("created", ""), self.key("ended", "")];
        let (now, ttl) = (now_ms().to_string(), millis(self.ttl).to_string());
        let (max, running) = (self.max.to_string(), millis(self.running_ttl).to_string());
        let args: [&str; 10] = [
            &self.prefix,
            &task.id,
            &json,
            &state,
            &task.context_id,
            flag(terminal),
            &now,
            &ttl,
            &max,
            &running,
        ];
        let keys = keys.each_ref().map(String::as_str);
        match self.eval(scripts::CREATE, &keys, &args).await?.into_int().unwrap_or(0) {
            0 => Err(A2AError::internal(format!(
                "the bridges hold {} A2A tasks, all still running (a2a.max_tasks): try again later",
                self.max
            ))),
            v => Ok(u64::try_from(v).unwrap_or(1)),
        }
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        match self.write(&task, None).await? {
            Updated::Done { version, previous, hooks } => {
                self.push(&task, previous.as_deref(), hooks);
                Ok(version)
            }
            Updated::Unknown => Err(A2AError::task_not_found(&task.id)),
            // Ended on another bridge (canceled there, or its answer written there).
            Updated::Ended | Updated::Raced => Err(A2AError::new(
                error_code::TASK_NOT_CANCELABLE,
                format!("task {} has already reached a terminal state", task.id),
            )),
        }
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.get_versioned(task_id).await?.map(|(task, _)| task))
    }

    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        let size = usize::try_from(req.page_size.unwrap_or(50)).unwrap_or(50).max(1);
        let from = req.page_token.as_deref().and_then(|t| t.parse::<usize>().ok()).unwrap_or(0);
        let state = req.status.as_ref().map(state_of).unwrap_or_default();
        let context = req.context_id.clone().unwrap_or_default();
        let created = self.key("created", "");
        let args = [self.prefix.as_str(), &context, &state, &from.to_string(), &size.to_string()];
        let reply = self.eval(scripts::LIST, &[&created], &args).await?;
        let Reply::Array(Some(out)) = reply else {
            return Err(A2AError::internal("the task list answered no list"));
        };
        let mut out = out.into_iter();
        let total = out.next().and_then(|t| t.into_int().ok()).unwrap_or(0);
        let Some(Reply::Array(Some(page))) = out.next() else { return Err(A2AError::internal("no page")) };
        let tasks: Vec<Task> = page
            .into_iter()
            .filter_map(|t| t.into_bytes().ok().flatten())
            .map(|t| decode(&t))
            .collect::<Result<_, _>>()?;
        let total = usize::try_from(total).unwrap_or(0);
        let next = from + tasks.len();
        Ok(ListTasksResponse {
            next_page_token: if next < total { next.to_string() } else { String::new() },
            page_size: i32::try_from(tasks.len()).unwrap_or(i32::MAX),
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
            tasks,
        })
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        let canceled = self
            .change(task_id, |mut task| {
                if task.status.state.is_terminal() {
                    return Err(A2AError::task_not_cancelable(task_id));
                }
                task.status.state = TaskState::Canceled;
                Ok(Some(task))
            })
            .await?;
        canceled.ok_or_else(|| A2AError::task_not_found(task_id))
    }
}

fn encode(task: &Task) -> Result<String, A2AError> {
    serde_json::to_string(task)
        .map_err(|e| A2AError::internal(format!("a task cannot be written as JSON: {e}")))
}

fn decode(json: &[u8]) -> Result<Task, A2AError> {
    serde_json::from_slice(json).map_err(|e| A2AError::internal(format!("a stored task is not a task: {e}")))
}

/// A state as the store compares it: its JSON.
fn state_of(state: &TaskState) -> String {
    serde_json::to_string(state).unwrap_or_default()
}

/// A boolean as the scripts read it.
fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

fn millis(d: Duration) -> u128 {
    d.as_millis().max(1)
}

#[cfg(test)]
#[path = "shared_tests.rs"]
mod tests;
