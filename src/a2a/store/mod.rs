//! Where the served agents' tasks are kept: in memory ([`memory`], the default: a restart
//! forgets them), or in Redis with `[a2a.store]` ([`shared`]: shared by the bridges that name the
//! same Redis and prefix, and kept over a restart). Both are the SDK's `TaskStore` and
//! `PushConfigStore` (see [`Webhooks`]).

mod follow;
mod memory;
mod pool;
mod scripts;
mod shared;

pub use follow::Followed;
pub use memory::Memory;
pub use shared::Shared;

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig};
use a2a_server::task_store::TaskVersion;
use a2a_server::{PushConfigStore, TaskStore};
use std::sync::Arc;

/// Webhooks one task may have at most: one is what a client needs, a few let it fan out.
pub const MAX_WEBHOOKS: usize = 10;

/// The store; its clones are the same store.
#[derive(Clone)]
pub enum Tasks {
    Memory(Memory),
    Shared(Arc<Shared>),
}

impl Tasks {
    /// Whether push notifications are offered (`[a2a.push]`).
    pub fn pushes(&self) -> bool {
        match self {
            Tasks::Memory(m) => m.pushes(),
            Tasks::Shared(s) => s.pushes(),
        }
    }

    /// The webhooks of `task_id`.
    pub async fn webhooks(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        match self {
            Tasks::Memory(m) => m.webhooks(task_id),
            Tasks::Shared(s) => s.hooks(task_id).await,
        }
    }

    /// The Redis store, when the tasks are there.
    pub fn shared(&self) -> Option<&Arc<Shared>> {
        match self {
            Tasks::Memory(_) => None,
            Tasks::Shared(s) => Some(s),
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for Tasks {
    async fn create(&self, task: Task) -> Result<TaskVersion, A2AError> {
        match self {
            Tasks::Memory(m) => m.create(task).await,
            Tasks::Shared(s) => s.create(task).await,
        }
    }

    async fn update(&self, task: Task) -> Result<TaskVersion, A2AError> {
        match self {
            Tasks::Memory(m) => m.update(task).await,
            Tasks::Shared(s) => s.update(task).await,
        }
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        match self {
            Tasks::Memory(m) => TaskStore::get(m, task_id).await,
            Tasks::Shared(s) => TaskStore::get(s.as_ref(), task_id).await,
        }
    }

    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        match self {
            Tasks::Memory(m) => TaskStore::list(m, req).await,
            Tasks::Shared(s) => TaskStore::list(s.as_ref(), req).await,
        }
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        match self {
            Tasks::Memory(m) => m.begin_cancel(task_id).await,
            Tasks::Shared(s) => s.begin_cancel(task_id).await,
        }
    }
}

/// The webhooks of the store's tasks, as the SDK's handler reads and writes them: set, read,
/// deleted. Its `list` is what the SDK's own sender would call before each event, and lists
/// none, so that the SDK sends nothing: the bridge's workers do ([`super::push`]);
/// `ListTaskPushNotificationConfigs` is answered from [`Tasks::webhooks`] ([`super::handler`]).
pub struct Webhooks(pub Tasks);

#[async_trait::async_trait]
impl PushConfigStore for Webhooks {
    async fn save(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let shared = match &self.0 {
            Tasks::Memory(m) => return PushConfigStore::save(m, config).await,
            Tasks::Shared(s) => s,
        };
        let Some(allow_private) = shared.allows_private() else {
            return Err(A2AError::push_notification_not_supported());
        };
        if let Some(why) = super::push::refusal(&config.url, allow_private) {
            return Err(A2AError::invalid_params(why));
        }
        config.id.get_or_insert_with(|| uuid::Uuid::now_v7().to_string());
        shared.save_hook(&config).await?;
        Ok(config)
    }

    async fn get(&self, task_id: &str, config_id: &str) -> Result<TaskPushNotificationConfig, A2AError> {
        match &self.0 {
            Tasks::Memory(m) => PushConfigStore::get(m, task_id, config_id).await,
            Tasks::Shared(s) => s.hook(task_id, config_id).await,
        }
    }

    async fn list(&self, _task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        Ok(Vec::new())
    }

    /// Deleting a webhook that is not there is not an error (A2A 1.0: deletion is idempotent).
    async fn delete(&self, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        match &self.0 {
            Tasks::Memory(m) => PushConfigStore::delete(m, task_id, config_id).await,
            Tasks::Shared(s) => s.delete_hooks(task_id, Some(config_id)).await,
        }
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), A2AError> {
        match &self.0 {
            Tasks::Memory(m) => m.delete_all(task_id).await,
            Tasks::Shared(s) => s.delete_hooks(task_id, None).await,
        }
    }
}
