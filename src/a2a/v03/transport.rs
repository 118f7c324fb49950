//! The bridge's calls to an A2A agent whose card says 0.3: the SDK's client over a transport of
//! its JSON-RPC binding in 0.3's methods and shapes (the SDK has 1.0's only). A call is the 1.0
//! request the bridge makes (in ProtoJSON, as the SDK writes it) in 0.3's shape ([`shapes`]),
//! posted without `A2A-Version` (0.3 has none: a server that serves both reads its absence as
//! 0.3); the answer, or each event of a stream, is made 1.0's again and read by the SDK's types.
//! Only what the bridge calls: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel` and
//! `tasks/resubscribe`.

use super::{Events, shapes};
use a2a::{
    A2AError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest,
    ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig, error_code,
};
use a2a_client::transport::{ServiceParams, Transport};
use a2a_pb::protojson_conv::{self, ProtoJsonPayload};
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};
use std::collections::VecDeque;

/// The JSON-RPC binding of one A2A 0.3 agent, at its card's `url`.
pub struct Transport03 {
    http: reqwest::Client,
    endpoint: String,
}

impl Transport03 {
    pub fn new(http: reqwest::Client, endpoint: String) -> Transport03 {
        Transport03 { http, endpoint }
    }

    /// The POST of `method` with `params`, the call's headers but `A2A-Version`.
    async fn post(
        &self,
        headers: &ServiceParams,
        method: &str,
        params: Value,
    ) -> Result<reqwest::Response, A2AError> {
        let id = uuid::Uuid::now_v7().to_string();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self.http.post(&self.endpoint).header("content-type", "application/json");
        for (name, values) in headers.iter().filter(|(name, _)| !name.eq_ignore_ascii_case("a2a-version")) {
            for value in values {
                request = request.header(name, value);
            }
        }
        if method == "message/stream" || method == "tasks/resubscribe" {
            request = request.header("accept", "text/event-stream");
        }
        let body = serde_json::to_vec(&body).map_err(|e| A2AError::internal(e.to_string()))?;
        request.body(body).send().await.map_err(|e| A2AError::internal(format!("HTTP request failed: {e}")))
    }

    /// `method`'s result, in 0.3's shape.
    async fn call(&self, headers: &ServiceParams, method: &str, params: Value) -> Result<Value, A2AError> {
        let answer = self.post(headers, method, params).await?;
        let status = answer.status();
        let body =
            answer.bytes().await.map_err(|e| A2AError::internal(format!("HTTP response failed: {e}")))?;
        // A JSON-RPC error is the call's whatever the HTTP status; another body, with a failed
        // status, is that status.
        if !status.is_success() && serde_json::from_slice::<Value>(&body).is_err() {
            return Err(A2AError::internal(format!("HTTP {status}")));
        }
        result(&body)
    }

    /// `method`'s events, each made 1.0's; an answer that is not a stream is its error.
    async fn stream(
        &self,
        headers: &ServiceParams,
        method: &str,
        params: Value,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        let answer = self.post(headers, method, params).await?;
        let streams = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .is_none_or(|t| t.as_bytes().starts_with(b"text/event-stream"));
        if !streams {
            let body =
                answer.bytes().await.map_err(|e| A2AError::internal(format!("HTTP response failed: {e}")))?;
            result(&body)?;
            return Err(A2AError::internal("a stream was asked for and a single answer came"));
        }
        let state = (answer.bytes_stream().boxed(), Events::default(), VecDeque::new(), false);
        let events =
            futures_util::stream::unfold(state, |(mut bytes, mut cut, mut ready, mut ended)| async move {
                loop {
                    if let Some(next) = ready.pop_front() {
                        return Some((next, (bytes, cut, ready, ended)));
                    }
                    if ended {
                        return None;
                    }
                    match bytes.next().await {
                        Some(Ok(chunk)) => match cut.feed(&chunk) {
                            Ok(whole) => ready.extend(whole.iter().filter_map(|e| event(e))),
                            Err(why) => {
                                ready.push_back(Err(A2AError::internal(why)));
                                ended = true;
                            }
                        },
                        Some(Err(e)) => {
                            ready.push_back(Err(A2AError::internal(format!("SSE stream error: {e}"))));
                            ended = true;
                        }
                        None => {
                            ready.extend(cut.rest().and_then(|e| event(&e)));
                            ended = true;
                        }
                    }
                }
            });
        Ok(events.boxed())
    }
}

/// A JSON-RPC response's result, or its error.
fn result(body: &[u8]) -> Result<Value, A2AError> {
    let unread = |e: serde_json::Error| A2AError::internal(format!("failed to parse JSON-RPC response: {e}"));
    let mut response: Value = serde_json::from_slice(body).map_err(unread)?;
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        let code = error.get("code").and_then(Value::as_i64).map_or(error_code::INTERNAL_ERROR, |c| c as i32);
        let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
        return Err(A2AError::new(code, message.to_owned()));
    }
    response
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| A2AError::internal("JSON-RPC response missing result"))
}

/// One SSE event's `data` as the 1.0 event it is; `None` for an event without data (a comment).
fn event(text: &[u8]) -> Option<Result<StreamResponse, A2AError>> {
    let data: Vec<u8> = text
        .split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .flat_map(|data| data.strip_prefix(b" ").unwrap_or(data).trim_ascii_end().to_vec())
        .collect();
    if data.is_empty() {
        return None;
    }
    Some(result(&data).and_then(|event| v1(shapes::event_to_v1(&event))))
}

/// A 1.0 answer in ProtoJSON as the SDK's type, or why the agent's answer could not be read.
fn v1<T: ProtoJsonPayload>(shaped: Result<Value, String>) -> Result<T, A2AError> {
    let why = |e: String| A2AError::internal(format!("the A2A 0.3 agent's answer could not be read: {e}"));
    protojson_conv::from_value(shaped.map_err(why)?).map_err(|e| why(e.to_string()))
}

/// `request` in ProtoJSON, as the SDK writes it.
fn protojson<T: ProtoJsonPayload>(request: &T) -> Result<Value, A2AError> {
    protojson_conv::to_value(request)
        .map_err(|e| A2AError::internal(format!("failed to serialize request: {e}")))
}

fn not_called<T>(what: &str) -> Result<T, A2AError> {
    Err(A2AError::unsupported_operation(format!("{what} is not called over A2A 0.3 by the bridge")))
}

#[async_trait::async_trait]
impl Transport for Transport03 {
    async fn send_message(
        &self,
        params: &ServiceParams,
        req: &SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        let result = self.call(params, "message/send", shapes::send_params_to_v03(&protojson(req)?)).await?;
        v1(shapes::send_result_to_v1(&result))
    }

    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        req: &SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.stream(params, "message/stream", shapes::send_params_to_v03(&protojson(req)?)).await
    }

    async fn get_task(&self, params: &ServiceParams, req: &GetTaskRequest) -> Result<Task, A2AError> {
        let query = shapes::kept(&protojson(req)?, &[("id", ""), ("historyLength", "")])
            .map_err(A2AError::internal)?;
        v1(shapes::task_to_v1(&self.call(params, "tasks/get", query).await?))
    }

    async fn list_tasks(
        &self,
        _: &ServiceParams,
        _: &ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        not_called("ListTasks")
    }

    async fn cancel_task(&self, params: &ServiceParams, req: &CancelTaskRequest) -> Result<Task, A2AError> {
        let query =
            shapes::kept(&protojson(req)?, &[("id", ""), ("metadata", "")]).map_err(A2AError::internal)?;
        v1(shapes::task_to_v1(&self.call(params, "tasks/cancel", query).await?))
    }

    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: &SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        let query = shapes::kept(&protojson(req)?, &[("id", "")]).map_err(A2AError::internal)?;
        self.stream(params, "tasks/resubscribe", query).await
    }

    async fn create_push_config(
        &self,
        _: &ServiceParams,
        _: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        not_called("CreateTaskPushNotificationConfig")
    }

    async fn get_push_config(
        &self,
        _: &ServiceParams,
        _: &GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        not_called("GetTaskPushNotificationConfig")
    }

    async fn list_push_configs(
        &self,
        _: &ServiceParams,
        _: &ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        not_called("ListTaskPushNotificationConfigs")
    }

    async fn delete_push_config(
        &self,
        _: &ServiceParams,
        _: &DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        not_called("DeleteTaskPushNotificationConfig")
    }

    async fn get_extended_agent_card(
        &self,
        _: &ServiceParams,
        _: &GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        not_called("GetExtendedAgentCard")
    }

    async fn destroy(&self) -> Result<(), A2AError> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
