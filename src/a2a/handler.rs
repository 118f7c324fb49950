//! The request handler both bindings' routers call: the SDK's own (`DefaultRequestHandler`),
//! with one method answered here, `ListTaskPushNotificationConfigs`, from the store's webhooks:
//! the store lists none to the SDK, whose sender the bridge's workers replace (`store::Webhooks`).

use super::store::Tasks;
use a2a::{
    A2AError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest,
    ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig, error_code,
};
use a2a_server::pagination::resolve_page_size;
use a2a_server::{DefaultRequestHandler, RequestHandler, ServiceParams};
use futures_util::stream::BoxStream;

pub struct Handler {
    pub sdk: DefaultRequestHandler,
    pub tasks: Tasks,
}

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn send_message(
        &self,
        p: &ServiceParams,
        r: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        self.sdk.send_message(p, r).await
    }

    async fn send_streaming_message(
        &self,
        p: &ServiceParams,
        r: SendMessageRequest,
    ) -> Result<Events, A2AError> {
        self.sdk.send_streaming_message(p, r).await
    }

    async fn get_task(&self, p: &ServiceParams, r: GetTaskRequest) -> Result<Task, A2AError> {
        self.sdk.get_task(p, r).await
    }

    async fn list_tasks(
        &self,
        p: &ServiceParams,
        r: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        self.sdk.list_tasks(p, r).await
    }

    async fn cancel_task(&self, p: &ServiceParams, r: CancelTaskRequest) -> Result<Task, A2AError> {
        self.sdk.cancel_task(p, r).await
    }

    async fn subscribe_to_task(
        &self,
        p: &ServiceParams,
        r: SubscribeToTaskRequest,
    ) -> Result<Events, A2AError> {
        let id = r.id.clone();
        match (self.sdk.subscribe_to_task(p, r).await, self.tasks.shared()) {
            // Not run here: with the tasks shared, it may run on another bridge.
            (Err(e), Some(shared)) if e.code == error_code::TASK_NOT_FOUND => {
                super::follow::follow(shared.clone(), &id).await?.ok_or(e)
            }
            (result, _) => result,
        }
    }

    async fn create_push_config(
        &self,
        p: &ServiceParams,
        r: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.sdk.create_push_config(p, r).await
    }

    async fn get_push_config(
        &self,
        p: &ServiceParams,
        r: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.sdk.get_push_config(p, r).await
    }

    /// The task's webhooks, a page of them, as the SDK pages them (by id, its page size).
    async fn list_push_configs(
        &self,
        p: &ServiceParams,
        r: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        if !self.tasks.pushes() {
            return self.sdk.list_push_configs(p, r).await;
        }
        let mut configs = self.tasks.webhooks(&r.task_id).await?;
        configs.sort_by(|a, b| a.id.cmp(&b.id));
        let from = match r.page_token.as_deref() {
            Some(token) => {
                token.parse::<usize>().map_err(|_| A2AError::invalid_params("invalid page token"))?
            }
            None => 0,
        };
        let from = from.min(configs.len());
        let to = (from + resolve_page_size(r.page_size)).min(configs.len());
        let next_page_token = (to < configs.len()).then(|| to.to_string());
        Ok(ListTaskPushNotificationConfigsResponse { configs: configs[from..to].to_vec(), next_page_token })
    }

    async fn delete_push_config(
        &self,
        p: &ServiceParams,
        r: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        self.sdk.delete_push_config(p, r).await
    }

    async fn get_extended_agent_card(
        &self,
        p: &ServiceParams,
        r: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        self.sdk.get_extended_agent_card(p, r).await
    }
}
