//! One webhook's worker: its task's newest state, delivered with bounded attempts.

use super::Pusher;
use crate::telemetry::Event as _;
use crate::telemetry::push::Pushed;
use a2a::{StreamResponse, Task, TaskPushNotificationConfig};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The header the client's `token` is sent in (A2A 1.0).
const TOKEN_HEADER: &str = "A2A-Notification-Token";

/// Why a webhook did not take a state.
enum Failure {
    /// The bridge does not call it with this state (its credentials cannot be a header).
    Refused(String),
    /// It was called and did not take it; `retry` when another call may go right.
    Failed { why: String, retry: bool },
}

/// Delivers each new state sent on `updates` to `webhook`, until the task's final state was
/// delivered (or given up on) or the sender is dropped.
pub async fn run(
    pusher: Arc<Pusher>,
    webhook: TaskPushNotificationConfig,
    mut updates: watch::Receiver<Option<Task>>,
) {
    let host = reqwest::Url::parse(&webhook.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    loop {
        if updates.changed().await.is_err() {
            return;
        }
        let Some(task) = updates.borrow_and_update().clone() else { continue };
        let last = deliver(&pusher, &webhook, &host, task, &mut updates).await;
        if last.status.state.is_terminal() {
            return;
        }
    }
}

/// Calls `webhook` with `task` until it takes it, or `a2a.push.attempts` calls failed, or a
/// call cannot succeed; a newer state sent meanwhile is tried instead. The state last tried.
async fn deliver(
    pusher: &Pusher,
    webhook: &TaskPushNotificationConfig,
    host: &str,
    mut task: Task,
    updates: &mut watch::Receiver<Option<Task>>,
) -> Task {
    let config = &pusher.config;
    let mut wait = Duration::from_millis(config.backoff_ms);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let failure = match call(pusher, webhook, &task).await {
            Ok(()) => {
                let pushed = Pushed { task: &task.id, host, result: "delivered", attempts, why: None };
                pushed.emit(pusher.metrics());
                return task;
            }
            Err(failure) => failure,
        };
        let given_up = match &failure {
            Failure::Refused(why) => Some(("refused", why)),
            Failure::Failed { why, retry } => {
                (!retry || attempts >= config.attempts).then_some(("failed", why))
            }
        };
        if let Some((result, why)) = given_up {
            let pushed = Pushed { task: &task.id, host, result, attempts, why: Some(why) };
            pushed.emit(pusher.metrics());
            return task;
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            changed = updates.changed() => {
                // A newer state replaces this one; a dropped sender leaves this one to finish.
                if changed.is_ok()
                    && let Some(newer) = updates.borrow_and_update().clone()
                {
                    task = newer;
                }
            }
        }
        wait = (wait * 2).min(Duration::from_millis(config.max_backoff_ms));
        pusher.metrics().retried();
    }
}

/// One call of `webhook` with `task`: taken on a 2xx answer.
async fn call(pusher: &Pusher, webhook: &TaskPushNotificationConfig, task: &Task) -> Result<(), Failure> {
    let refused = Failure::Refused;
    let body = serde_json::to_vec(&StreamResponse::Task(task.clone()))
        .map_err(|e| refused(format!("the task cannot be written as JSON: {e}")))?;
    let mut request =
        pusher.http.post(&webhook.url).header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(token) = &webhook.token {
        let token = HeaderValue::from_str(token)
            .map_err(|_| refused("the client's token cannot be a header value".into()))?;
        request = request.header(TOKEN_HEADER, token);
    }
    if let Some(auth) = &webhook.authentication
        && let Some(credentials) = &auth.credentials
    {
        let value = HeaderValue::from_str(&format!("{} {credentials}", auth.scheme))
            .map_err(|_| refused("the client's credentials cannot be a header value".into()))?;
        request = request.header(AUTHORIZATION, value);
    }
    let answer = request
        .body(body)
        .send()
        .await
        .map_err(|e| Failure::Failed { why: reasons(&e.without_url()), retry: true })?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    // A redirect is not followed (module docs), and a client error does not change by itself,
    // except a timeout or a request to slow down.
    let retry = status.is_server_error() || matches!(status.as_u16(), 408 | 429);
    Err(Failure::Failed { why: format!("the webhook answered {status}"), retry })
}

/// `error` and its causes, in one line (reqwest's own says only "error sending request"; the
/// cause says a refused connection, a timeout, or an address the resolver would not give).
fn reasons(error: &dyn std::error::Error) -> String {
    let mut why = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        why.push_str(": ");
        why.push_str(&e.to_string());
        cause = e.source();
    }
    why
}
