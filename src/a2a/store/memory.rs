//! The tasks, bounded: at most `a2a.max_tasks` (a new task evicts the one that finished first,
//! and is refused when every task is still running), a finished task kept `a2a.task_ttl_ms`;
//! with each task its webhooks (`[a2a.push]`), whose workers it sends each new state.
//! In memory, the default: a restart forgets them (docs/A2A.md, "Where tasks are kept").

use super::MAX_WEBHOOKS;
use crate::a2a::push::{Pusher, Updates};
use a2a::{
    A2AError, ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig, TaskState, error_code,
};
use a2a_server::task_store::TaskVersion;
use a2a_server::{PushConfigStore, TaskStore};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The store; its clones are the same store.
#[derive(Clone)]
pub struct Memory {
    max: usize,
    ttl: Duration,
    inner: Arc<Mutex<Inner>>,
    /// The webhooks' caller, with `[a2a.push]`.
    pusher: Option<Arc<Pusher>>,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Entry>,
    /// Task ids, oldest first (for listing; ids of forgotten tasks are dropped now and then).
    created: VecDeque<String>,
    /// Finished tasks, by when they finished, first first: what ages out and what is evicted.
    ended: VecDeque<(Instant, String)>,
}

struct Entry {
    task: Task,
    version: TaskVersion,
    /// When the task reached a terminal state.
    ended: Option<Instant>,
    /// Its webhooks, in the order they were set.
    webhooks: Vec<Webhook>,
}

/// A webhook of a task, and its worker's channel (dropped with it: the worker ends).
struct Webhook {
    config: TaskPushNotificationConfig,
    updates: Updates,
}

impl Entry {
    fn new(task: Task) -> Entry {
        Entry { task, version: 1, ended: None, webhooks: Vec::new() }
    }

    /// Keeps `task` as this task's state, and sends it to the webhooks when its status or its
    /// artifacts changed (not for a message only added to its history).
    fn set(&mut self, task: Task) {
        if task.status != self.task.status || task.artifacts != self.task.artifacts {
            for webhook in &self.webhooks {
                webhook.updates.send_replace(Some(task.clone()));
            }
        }
        self.task = task;
        self.version += 1;
    }
}

impl Memory {
    pub fn new(max: usize, ttl: Duration, pusher: Option<Arc<Pusher>>) -> Self {
        Memory { max: max.max(1), ttl, inner: Arc::default(), pusher }
    }

    /// Whether push notifications are offered (`[a2a.push]`).
    pub fn pushes(&self) -> bool {
        self.pusher.is_some()
    }

    /// The webhooks of `task_id`, in the order they were set.
    pub fn webhooks(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        let inner = self.lock();
        let entry = inner.tasks.get(task_id).ok_or_else(|| A2AError::task_not_found(task_id))?;
        Ok(entry.webhooks.iter().map(|w| w.config.clone()).collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    /// Forgets finished tasks older than `ttl`, then, while one more would not fit under
    /// `max`, those that finished first. False when it cannot make room (every task runs).
    /// Each task is looked at once in all: no scan of the whole store.
    fn make_room(&mut self, max: usize, ttl: Duration, now: Instant) -> bool {
        while self.ended.front().is_some_and(|(at, _)| now.duration_since(*at) >= ttl) {
            if let Some((_, id)) = self.ended.pop_front() {
                self.tasks.remove(&id);
            }
        }
        while self.tasks.len() >= max {
            let Some((_, id)) = self.ended.pop_front() else { return false };
            self.tasks.remove(&id);
        }
        if self.created.len() > 2 * self.tasks.len() + 64 {
            let tasks = &self.tasks;
            self.created.retain(|id| tasks.contains_key(id));
        }
        true
    }

    /// Records that `id` finished, if this is when it did.
    fn ended(&mut self, id: &str, state: &TaskState) {
        let Some(entry) = self.tasks.get_mut(id) else { return };
        if entry.ended.is_none() && state.is_terminal() {
            let now = Instant::now();
            entry.ended = Some(now);
            self.ended.push_back((now, id.to_owned()));
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for Memory {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut inner = self.lock();
        if !inner.make_room(self.max, self.ttl, Instant::now()) {
            return Err(A2AError::internal(format!(
                "the bridge holds {} A2A tasks, all still running (a2a.max_tasks): try again later",
                self.max
            )));
        }
        let (id, state) = (task.id.clone(), task.status.state.clone());
        if inner.tasks.insert(id.clone(), Entry::new(task)).is_none() {
            inner.created.push_back(id.clone());
        }
        inner.ended(&id, &state);
        Ok(1)
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut inner = self.lock();
        let (id, state) = (task.id.clone(), task.status.state.clone());
        let entry = inner.tasks.get_mut(&id).ok_or_else(|| A2AError::task_not_found(&id))?;
        entry.set(task);
        let version = entry.version;
        inner.ended(&id, &state);
        Ok(version)
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.lock().tasks.get(task_id).map(|e| e.task.clone()))
    }

    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        let inner = self.lock();
        let wanted = |t: &Task| {
            req.context_id.as_ref().is_none_or(|c| *c == t.context_id)
                && req.status.as_ref().is_none_or(|s| *s == t.status.state)
        };
        let all: Vec<&Task> = inner
            .created
            .iter()
            .rev()
            .filter_map(|id| inner.tasks.get(id))
            .map(|e| &e.task)
            .filter(|t| wanted(t))
            .collect();
        let size = usize::try_from(req.page_size.unwrap_or(50)).unwrap_or(50).max(1);
        let from = req.page_token.as_deref().and_then(|t| t.parse::<usize>().ok()).unwrap_or(0);
        let tasks: Vec<Task> = all.iter().skip(from).take(size).map(|t| (*t).clone()).collect();
        let next = from + tasks.len();
        Ok(ListTasksResponse {
            next_page_token: if next < all.len() { next.to_string() } else { String::new() },
            page_size: i32::try_from(tasks.len()).unwrap_or(i32::MAX),
            total_size: i32::try_from(all.len()).unwrap_or(i32::MAX),
            tasks,
        })
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        let mut inner = self.lock();
        let entry = inner.tasks.get_mut(task_id).ok_or_else(|| A2AError::task_not_found(task_id))?;
        if entry.task.status.state.is_terminal() {
            return Err(A2AError::task_not_cancelable(task_id));
        }
        let mut task = entry.task.clone();
        task.status.state = TaskState::Canceled;
        entry.set(task.clone());
        inner.ended(task_id, &TaskState::Canceled);
        Ok(task)
    }
}

/// The webhooks of the tasks (see [`super::Webhooks`]).
#[async_trait::async_trait]
impl PushConfigStore for Memory {
    async fn save(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let Some(pusher) = &self.pusher else { return Err(A2AError::push_notification_not_supported()) };
        if let Some(why) = crate::a2a::push::refusal(&config.url, pusher.config.allow_private) {
            return Err(A2AError::invalid_params(why));
        }
        let id = config.id.get_or_insert_with(|| uuid::Uuid::now_v7().to_string()).clone();
        let mut inner = self.lock();
        let task_id = config.task_id.clone();
        let entry = inner.tasks.get_mut(&task_id).ok_or_else(|| A2AError::task_not_found(&task_id))?;
        let same = entry.webhooks.iter().position(|w| w.config.id.as_deref() == Some(id.as_str()));
        if same.is_none() && entry.webhooks.len() >= MAX_WEBHOOKS {
            return Err(A2AError::invalid_params(format!("a task has at most {MAX_WEBHOOKS} webhooks")));
        }
        let webhook = Webhook { config: config.clone(), updates: pusher.start(config.clone()) };
        match same {
            // The old one's worker ends with its channel.
            Some(i) => entry.webhooks[i] = webhook,
            None => entry.webhooks.push(webhook),
        }
        Ok(config)
    }

    async fn get(&self, task_id: &str, config_id: &str) -> Result<TaskPushNotificationConfig, A2AError> {
        let inner = self.lock();
        let webhooks = inner.tasks.get(task_id).map(|e| e.webhooks.as_slice()).unwrap_or_default();
        let found = webhooks.iter().find(|w| w.config.id.as_deref() == Some(config_id));
        found.map(|w| w.config.clone()).ok_or_else(|| {
            // As the SDK's own store answers (A2A 1.0: not found is TaskNotFoundError).
            A2AError::new(
                error_code::TASK_NOT_FOUND,
                format!("push notification config not found: {config_id}"),
            )
        })
    }

    async fn list(&self, _task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        Ok(Vec::new())
    }

    /// Deleting a webhook that is not there is not an error (A2A 1.0: deletion is idempotent).
    async fn delete(&self, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        if let Some(entry) = self.lock().tasks.get_mut(task_id) {
            entry.webhooks.retain(|w| w.config.id.as_deref() != Some(config_id));
        }
        Ok(())
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), A2AError> {
        if let Some(entry) = self.lock().tasks.get_mut(task_id) {
            entry.webhooks.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
