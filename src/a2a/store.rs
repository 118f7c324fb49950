//! The tasks, bounded: at most `a2a.max_tasks` (a new task evicts the one that finished first,
//! and is refused when every task is still running), a finished task kept `a2a.task_ttl_ms`.
//! In memory: a restart forgets them (docs/A2A.md, "Restarts").

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskState};
use a2a_server::TaskStore;
use a2a_server::task_store::TaskVersion;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

pub struct Tasks {
    max: usize,
    ttl: Duration,
    inner: Mutex<Inner>,
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
}

impl Tasks {
    pub fn new(max: usize, ttl: Duration) -> Self {
        Tasks { max: max.max(1), ttl, inner: Mutex::default() }
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
impl TaskStore for Tasks {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut inner = self.lock();
        if !inner.make_room(self.max, self.ttl, Instant::now()) {
            return Err(A2AError::internal(format!(
                "the bridge holds {} A2A tasks, all still running (a2a.max_tasks): try again later",
                self.max
            )));
        }
        let (id, state) = (task.id.clone(), task.status.state.clone());
        if inner.tasks.insert(id.clone(), Entry { task, version: 1, ended: None }).is_none() {
            inner.created.push_back(id.clone());
        }
        inner.ended(&id, &state);
        Ok(1)
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        let mut inner = self.lock();
        let (id, state) = (task.id.clone(), task.status.state.clone());
        let entry = inner.tasks.get_mut(&id).ok_or_else(|| A2AError::task_not_found(&id))?;
        entry.task = task;
        entry.version += 1;
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
        entry.task.status.state = TaskState::Canceled;
        entry.version += 1;
        let task = entry.task.clone();
        inner.ended(task_id, &TaskState::Canceled);
        Ok(task)
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
