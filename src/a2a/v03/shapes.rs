//! A2A 0.3's JSON shapes into A2A 1.0's (ProtoJSON, as the SDK reads them) and back, after the
//! official Python SDK's compatibility layer (a2a-python `src/a2a/compat/v0_3/conversions.py`):
//! a part's `kind` becomes the field that holds it (`text`, `data`, `raw` or `url`), roles and
//! task states their 1.0 enum names, `blocking` its opposite `returnImmediately`, a webhook's
//! `schemes` list its first `scheme`; and back: `kind` on every task, message, part and event,
//! `final` on a status update whose state ends the task. Every other field has one name in
//! both. Both ways for each: a 0.3 client's requests and the answers it is given, and the
//! bridge's requests to a 0.3 agent and its answers. Pure; an error is why a body cannot be read
//! (a request's `-32602`, an answer's failed call).

use serde_json::{Map, Value, json};

/// A 0.3 task state and its 1.0 name.
const STATES: [(&str, &str); 9] = [
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("canceled", "TASK_STATE_CANCELED"),
    ("failed", "TASK_STATE_FAILED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ("unknown", "TASK_STATE_UNSPECIFIED"),
];

/// The 0.3 states whose status update is `final` (as the Python SDK's layer marks them).
const FINAL: [&str; 4] = ["completed", "canceled", "failed", "rejected"];

type Shaped = Result<Value, String>;

/// `value` as an object, or why not.
fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    value.as_object().ok_or_else(|| format!("{what} must be an object"))
}

/// The field named `camel` (0.3's JSON) or `snake` (its Python names, which 0.3 servers accept too).
fn field<'a>(from: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    from.get(camel).or_else(|| from.get(snake)).filter(|v| !v.is_null())
}

/// `keys` of `from` copied into `to` where present (each has one name in both versions).
fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[(&str, &str)]) {
    for (camel, snake) in keys {
        if let Some(value) = field(from, camel, snake) {
            to.insert((*camel).to_owned(), value.clone());
        }
    }
}

const MESSAGE_KEYS: [(&str, &str); 6] = [
    ("messageId", "message_id"),
    ("contextId", "context_id"),
    ("taskId", "task_id"),
    ("referenceTaskIds", "reference_task_ids"),
    ("metadata", "metadata"),
    ("extensions", "extensions"),
];

/// A 0.3 `Message` as 1.0's.
pub fn message_to_v1(message: &Value) -> Shaped {
    let from = object(message, "message")?;
    let mut to = Map::new();
    copy(from, &mut to, &MESSAGE_KEYS);
    let role = match from.get("role").and_then(Value::as_str) {
        Some("user") => "ROLE_USER",
        Some("agent") => "ROLE_AGENT",
        _ => return Err("message.role must be \"user\" or \"agent\"".into()),
    };
    to.insert("role".into(), role.into());
    let parts = from.get("parts").and_then(Value::as_array).ok_or("message.parts must be a list")?;
    let parts: Result<Vec<Value>, String> = parts.iter().map(part_to_v1).collect();
    to.insert("parts".into(), Value::Array(parts?));
    Ok(Value::Object(to))
}

/// A 0.3 `Part` (`kind` text, data or file; without `kind`, the field it has) as 1.0's.
fn part_to_v1(part: &Value) -> Shaped {
    let from = object(part, "a part")?;
    let mut to = Map::new();
    let mut metadata = field(from, "metadata", "metadata").and_then(Value::as_object).cloned();
    let kind = from.get("kind").and_then(Value::as_str);
    if kind == Some("text") || (kind.is_none() && from.contains_key("text")) {
        let text = from.get("text").and_then(Value::as_str).ok_or("a text part's text must be a string")?;
        to.insert("text".into(), text.into());
    } else if kind == Some("data") || (kind.is_none() && from.contains_key("data")) {
        let data =
            from.get("data").filter(|d| d.is_object()).ok_or("a data part's data must be an object")?;
        // A value that is not an object was wrapped by the Python SDK as `{"value": …}` and marked.
        let wrapped = metadata.as_mut().and_then(|m| m.remove("data_part_compat")) == Some(Value::Bool(true));
        let data = if wrapped { data.get("value").cloned().unwrap_or(Value::Null) } else { data.clone() };
        to.insert("data".into(), data);
    } else if kind == Some("file") || (kind.is_none() && from.contains_key("file")) {
        let file = object(from.get("file").unwrap_or(&Value::Null), "a file part's file")?;
        match (field(file, "bytes", "bytes"), field(file, "uri", "uri")) {
            (Some(bytes), None) => to.insert("raw".into(), bytes.clone()),
            (None, Some(uri)) => to.insert("url".into(), uri.clone()),
            _ => return Err("a file part's file must have either bytes or uri".into()),
        };
        if let Some(media) = field(file, "mimeType", "mime_type") {
            to.insert("mediaType".into(), media.clone());
        }
        if let Some(name) = field(file, "name", "name") {
            to.insert("filename".into(), name.clone());
        }
    } else {
        return Err(format!("a part of kind {:?} is not A2A 0.3's (text, data or file)", kind.unwrap_or("")));
    }
    if let Some(metadata) = metadata.filter(|m| !m.is_empty()) {
        to.insert("metadata".into(), Value::Object(metadata));
    }
    Ok(Value::Object(to))
}

/// `message/send`'s and `message/stream`'s params (`MessageSendParams`) as 1.0's `SendMessageRequest`.
pub fn send_params_to_v1(params: &Value) -> Shaped {
    let from = object(params, "params")?;
    let mut to = Map::new();
    to.insert("message".into(), message_to_v1(from.get("message").unwrap_or(&Value::Null))?);
    if let Some(configuration) = field(from, "configuration", "configuration") {
        to.insert("configuration".into(), configuration_to_v1(configuration)?);
    }
    copy(from, &mut to, &[("metadata", "metadata")]);
    Ok(Value::Object(to))
}

fn configuration_to_v1(configuration: &Value) -> Shaped {
    let from = object(configuration, "params.configuration")?;
    let mut to = Map::new();
    copy(
        from,
        &mut to,
        &[("acceptedOutputModes", "accepted_output_modes"), ("historyLength", "history_length")],
    );
    if let Some(blocking) = field(from, "blocking", "blocking") {
        let blocking = blocking.as_bool().ok_or("configuration.blocking must be true or false")?;
        to.insert("returnImmediately".into(), (!blocking).into());
    }
    if let Some(webhook) = field(from, "pushNotificationConfig", "push_notification_config") {
        to.insert("taskPushNotificationConfig".into(), webhook_to_v1(webhook, None)?);
    }
    Ok(Value::Object(to))
}

/// A 0.3 `PushNotificationConfig` (of task `task`, when named) as 1.0's `TaskPushNotificationConfig`.
fn webhook_to_v1(webhook: &Value, task: Option<&Value>) -> Shaped {
    let from = object(webhook, "pushNotificationConfig")?;
    let mut to = Map::new();
    if let Some(task) = task {
        to.insert("taskId".into(), task.clone());
    }
    copy(from, &mut to, &[("id", "id"), ("url", "url"), ("token", "token")]);
    if let Some(auth) = field(from, "authentication", "authentication") {
        let auth = object(auth, "pushNotificationConfig.authentication")?;
        let mut info = Map::new();
        if let Some(scheme) = auth.get("schemes").and_then(Value::as_array).and_then(|s| s.first()) {
            info.insert("scheme".into(), scheme.clone());
        }
        copy(auth, &mut info, &[("credentials", "credentials")]);
        to.insert("authentication".into(), Value::Object(info));
    }
    Ok(Value::Object(to))
}

/// `tasks/pushNotificationConfig/set`'s params (`TaskPushNotificationConfig`) as 1.0's.
pub fn set_webhook_params_to_v1(params: &Value) -> Shaped {
    let from = object(params, "params")?;
    let task = field(from, "taskId", "task_id").ok_or("params.taskId is required")?;
    let webhook = field(from, "pushNotificationConfig", "push_notification_config")
        .ok_or("params.pushNotificationConfig is required")?;
    webhook_to_v1(webhook, Some(task))
}

/// The params of the 0.3 methods that name a task by `id` (and a webhook by
/// `pushNotificationConfigId`) as 1.0's, where the task is `taskId` and the webhook `id`.
pub fn webhook_of_task_to_v1(params: &Value) -> Shaped {
    let from = object(params, "params")?;
    let mut to = Map::new();
    let task = from.get("id").ok_or("params.id (the task's) is required")?;
    to.insert("taskId".into(), task.clone());
    if let Some(webhook) = field(from, "pushNotificationConfigId", "push_notification_config_id") {
        to.insert("id".into(), webhook.clone());
    }
    Ok(Value::Object(to))
}

/// `params` with only `keys` kept (`tasks/get`, `tasks/cancel`, `tasks/resubscribe`: the
/// names are 1.0's already).
pub fn kept(params: &Value, keys: &[(&str, &str)]) -> Shaped {
    let mut to = Map::new();
    copy(object(params, "params")?, &mut to, keys);
    Ok(Value::Object(to))
}

/// A 1.0 `Task` as 0.3's.
pub fn task_to_v03(task: &Value) -> Value {
    let mut to = Map::new();
    to.insert("kind".into(), "task".into());
    let from = task.as_object().cloned().unwrap_or_default();
    to.insert("id".into(), from.get("id").cloned().unwrap_or_else(|| "".into()));
    to.insert("contextId".into(), from.get("contextId").cloned().unwrap_or_else(|| "".into()));
    let status = from.get("status").map_or_else(|| json!({"state": "unknown"}), status_to_v03);
    to.insert("status".into(), status);
    if let Some(history) = from.get("history").and_then(Value::as_array).filter(|h| !h.is_empty()) {
        to.insert("history".into(), history.iter().map(message_to_v03).collect());
    }
    if let Some(artifacts) = from.get("artifacts").and_then(Value::as_array).filter(|a| !a.is_empty()) {
        to.insert("artifacts".into(), artifacts.iter().map(artifact_to_v03).collect());
    }
    copy(&from, &mut to, &[("metadata", "metadata")]);
    Value::Object(to)
}

fn status_to_v03(status: &Value) -> Value {
    let mut to = Map::new();
    let state = status.get("state").and_then(Value::as_str).unwrap_or_default();
    let state = STATES.iter().find(|(_, v1)| *v1 == state).map_or("unknown", |(v03, _)| *v03);
    to.insert("state".into(), state.into());
    if let Some(message) = status.get("message").filter(|m| m.is_object()) {
        to.insert("message".into(), message_to_v03(message));
    }
    if let Some(timestamp) = status.get("timestamp").filter(|t| !t.is_null()) {
        to.insert("timestamp".into(), timestamp.clone());
    }
    Value::Object(to)
}

/// A 1.0 `Message` as 0.3's.
pub fn message_to_v03(message: &Value) -> Value {
    let from = message.as_object().cloned().unwrap_or_default();
    let mut to = Map::new();
    to.insert("kind".into(), "message".into());
    copy(&from, &mut to, &MESSAGE_KEYS);
    to.entry("messageId").or_insert_with(|| "".into());
    let role = if from.get("role").and_then(Value::as_str) == Some("ROLE_USER") { "user" } else { "agent" };
    to.insert("role".into(), role.into());
    to.insert("parts".into(), parts_to_v03(from.get("parts")));
    Value::Object(to)
}

fn parts_to_v03(parts: Option<&Value>) -> Value {
    parts.and_then(Value::as_array).map_or_else(Vec::new, |p| p.iter().map(part_to_v03).collect()).into()
}

/// A 1.0 `Part` (text, data, raw or url) as 0.3's (text, data or file).
fn part_to_v03(part: &Value) -> Value {
    let from = part.as_object().cloned().unwrap_or_default();
    let mut metadata = from.get("metadata").and_then(Value::as_object).cloned();
    let mut to = Map::new();
    if let Some(text) = from.get("text") {
        to.insert("kind".into(), "text".into());
        to.insert("text".into(), text.clone());
    } else if let Some(data) = from.get("data") {
        to.insert("kind".into(), "data".into());
        // 0.3's data is an object: any other value is wrapped and marked, as the Python SDK does.
        let data = match data {
            Value::Object(_) => data.clone(),
            other => {
                metadata.get_or_insert_with(Map::new).insert("data_part_compat".into(), true.into());
                json!({"value": other})
            }
        };
        to.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        match (from.get("raw"), from.get("url")) {
            (Some(raw), _) => file.insert("bytes".into(), raw.clone()),
            (None, url) => file.insert("uri".into(), url.cloned().unwrap_or_else(|| "".into())),
        };
        if let Some(media) = from.get("mediaType") {
            file.insert("mimeType".into(), media.clone());
        }
        if let Some(name) = from.get("filename") {
            file.insert("name".into(), name.clone());
        }
        to.insert("kind".into(), "file".into());
        to.insert("file".into(), Value::Object(file));
    }
    if let Some(metadata) = metadata {
        to.insert("metadata".into(), Value::Object(metadata));
    }
    Value::Object(to)
}

/// An event's `taskId` and `contextId`, which 0.3 requires (ProtoJSON leaves an empty one out).
fn ids(from: &Map<String, Value>) -> Map<String, Value> {
    let id = |key: &str| from.get(key).cloned().unwrap_or_else(|| "".into());
    Map::from_iter([("taskId".to_owned(), id("taskId")), ("contextId".to_owned(), id("contextId"))])
}

fn artifact_to_v03(artifact: &Value) -> Value {
    let from = artifact.as_object().cloned().unwrap_or_default();
    let mut to = Map::new();
    to.insert("artifactId".into(), from.get("artifactId").cloned().unwrap_or_else(|| "".into()));
    copy(&from, &mut to, &[("name", ""), ("description", ""), ("metadata", ""), ("extensions", "")]);
    to.insert("parts".into(), parts_to_v03(from.get("parts")));
    Value::Object(to)
}

/// `SendMessage`'s answer (`{"task": …}` or `{"message": …}`) as `message/send`'s (the task or
/// the message itself).
pub fn send_result_to_v03(result: &Value) -> Value {
    match (result.get("task"), result.get("message")) {
        (Some(task), _) => task_to_v03(task),
        (None, Some(message)) => message_to_v03(message),
        (None, None) => result.clone(),
    }
}

/// A 1.0 `StreamResponse` as the 0.3 event it is: a task, a message, a `status-update` (with
/// `final`) or an `artifact-update`.
pub fn event_to_v03(event: &Value) -> Value {
    if let Some(update) = event.get("statusUpdate") {
        let from = update.as_object().cloned().unwrap_or_default();
        let status = from.get("status").map_or_else(|| json!({"state": "unknown"}), status_to_v03);
        let last = status.get("state").and_then(Value::as_str).is_some_and(|s| FINAL.contains(&s));
        let mut to = ids(&from);
        to.insert("kind".into(), "status-update".into());
        copy(&from, &mut to, &[("metadata", "")]);
        to.insert("status".into(), status);
        to.insert("final".into(), last.into());
        return Value::Object(to);
    }
    if let Some(update) = event.get("artifactUpdate") {
        let from = update.as_object().cloned().unwrap_or_default();
        let mut to = ids(&from);
        to.insert("kind".into(), "artifact-update".into());
        copy(&from, &mut to, &[("append", ""), ("lastChunk", ""), ("metadata", "")]);
        to.insert("artifact".into(), artifact_to_v03(from.get("artifact").unwrap_or(&Value::Null)));
        return Value::Object(to);
    }
    send_result_to_v03(event)
}

/// A 1.0 `TaskPushNotificationConfig` as 0.3's (the task's id, and its webhook apart).
pub fn webhook_to_v03(config: &Value) -> Value {
    let from = config.as_object().cloned().unwrap_or_default();
    let mut webhook = Map::new();
    copy(&from, &mut webhook, &[("id", ""), ("url", ""), ("token", "")]);
    if let Some(auth) = from.get("authentication").and_then(Value::as_object) {
        let schemes: Vec<Value> = auth.get("scheme").into_iter().cloned().collect();
        let mut info = Map::from_iter([("schemes".to_owned(), Value::Array(schemes))]);
        copy(auth, &mut info, &[("credentials", "")]);
        webhook.insert("authentication".into(), Value::Object(info));
    }
    json!({"taskId": from.get("taskId").cloned().unwrap_or_else(|| "".into()), "pushNotificationConfig": webhook})
}

/// `ListTaskPushNotificationConfigs`'s answer (`{"configs": […]}`) as 0.3's list.
pub fn webhooks_to_v03(result: &Value) -> Value {
    result
        .get("configs")
        .and_then(Value::as_array)
        .map_or_else(Vec::new, |c| c.iter().map(webhook_to_v03).collect())
        .into()
}

/// 1.0's `SendMessageRequest` as the params of `message/send` and `message/stream`
/// (`MessageSendParams`): the bridge calling an agent that speaks only 0.3.
pub fn send_params_to_v03(request: &Value) -> Value {
    let from = request.as_object().cloned().unwrap_or_default();
    let mut to = Map::new();
    to.insert("message".into(), message_to_v03(from.get("message").unwrap_or(&Value::Null)));
    if let Some(configuration) = from.get("configuration").and_then(Value::as_object) {
        let mut c = Map::new();
        copy(configuration, &mut c, &[("acceptedOutputModes", ""), ("historyLength", "")]);
        let immediately = configuration.get("returnImmediately").and_then(Value::as_bool).unwrap_or(false);
        c.insert("blocking".into(), (!immediately).into());
        if let Some(webhook) = configuration.get("taskPushNotificationConfig") {
            c.insert(
                "pushNotificationConfig".into(),
                webhook_to_v03(webhook)["pushNotificationConfig"].clone(),
            );
        }
        to.insert("configuration".into(), Value::Object(c));
    }
    copy(&from, &mut to, &[("metadata", "")]);
    Value::Object(to)
}

/// A 0.3 `Task` as 1.0's.
pub fn task_to_v1(task: &Value) -> Shaped {
    let from = object(task, "a task")?;
    let mut to = Map::new();
    copy(from, &mut to, &[("id", "id"), ("contextId", "context_id"), ("metadata", "metadata")]);
    if let Some(status) = from.get("status") {
        to.insert("status".into(), status_to_v1(status)?);
    }
    if let Some(history) = from.get("history").and_then(Value::as_array) {
        to.insert("history".into(), history.iter().map(message_to_v1).collect::<Result<_, _>>()?);
    }
    if let Some(artifacts) = from.get("artifacts").and_then(Value::as_array) {
        to.insert("artifacts".into(), artifacts.iter().map(artifact_to_v1).collect::<Result<_, _>>()?);
    }
    Ok(Value::Object(to))
}

fn status_to_v1(status: &Value) -> Shaped {
    let from = object(status, "a task's status")?;
    let state = from.get("state").and_then(Value::as_str).unwrap_or("unknown");
    let state = STATES.iter().find(|(v03, _)| *v03 == state).map_or("TASK_STATE_UNSPECIFIED", |(_, v1)| *v1);
    let mut to = Map::from_iter([("state".to_owned(), Value::from(state))]);
    if let Some(message) = field(from, "message", "message") {
        to.insert("message".into(), message_to_v1(message)?);
    }
    copy(from, &mut to, &[("timestamp", "timestamp")]);
    Ok(Value::Object(to))
}

fn artifact_to_v1(artifact: &Value) -> Shaped {
    let from = object(artifact, "an artifact")?;
    let mut to = Map::new();
    let keys = [
        ("artifactId", "artifact_id"),
        ("name", ""),
        ("description", ""),
        ("metadata", ""),
        ("extensions", ""),
    ];
    copy(from, &mut to, &keys);
    let parts = from.get("parts").and_then(Value::as_array).ok_or("an artifact's parts must be a list")?;
    to.insert("parts".into(), parts.iter().map(part_to_v1).collect::<Result<_, _>>()?);
    Ok(Value::Object(to))
}

/// `message/send`'s answer (a task or a message, told by its `kind`) as 1.0's `SendMessageResponse`.
pub fn send_result_to_v1(result: &Value) -> Shaped {
    match result.get("kind").and_then(Value::as_str) {
        Some("message") => Ok(json!({"message": message_to_v1(result)?})),
        Some("task") | None if result.get("status").is_some() => Ok(json!({"task": task_to_v1(result)?})),
        None if result.get("role").is_some() => Ok(json!({"message": message_to_v1(result)?})),
        other => Err(format!("an answer of kind {:?} is not a task or a message", other.unwrap_or(""))),
    }
}

/// A 0.3 stream event (by its `kind`) as 1.0's `StreamResponse`.
pub fn event_to_v1(event: &Value) -> Shaped {
    let from = object(event, "an event")?;
    match from.get("kind").and_then(Value::as_str) {
        Some("status-update") => {
            let mut to = Map::new();
            copy(from, &mut to, &[("taskId", "task_id"), ("contextId", "context_id"), ("metadata", "")]);
            to.insert("status".into(), status_to_v1(from.get("status").unwrap_or(&Value::Null))?);
            Ok(json!({"statusUpdate": to}))
        }
        Some("artifact-update") => {
            let mut to = Map::new();
            let keys = [
                ("taskId", "task_id"),
                ("contextId", "context_id"),
                ("append", ""),
                ("lastChunk", "last_chunk"),
            ];
            copy(from, &mut to, &keys);
            copy(from, &mut to, &[("metadata", "")]);
            to.insert("artifact".into(), artifact_to_v1(from.get("artifact").unwrap_or(&Value::Null))?);
            Ok(json!({"artifactUpdate": to}))
        }
        _ => send_result_to_v1(event),
    }
}

#[cfg(test)]
#[path = "shapes_tests.rs"]
mod tests;
