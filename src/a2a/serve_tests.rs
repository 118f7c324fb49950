use super::*;
use crate::config::Config;
use crate::telemetry::Metrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn hub() -> Arc<A2aService> {
    let mut config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    let mut a2a: crate::config::a2a::A2aConfig =
        toml::from_str("serve = [\"Echo\"]\nmax_body_bytes = 512").unwrap();
    a2a.token = Some(crate::stomp::Secret::new("s3cret"));
    config.a2a = Some(a2a);
    let relay = crate::relay::Relay::of(&config, Arc::new(Metrics::default())).unwrap();
    A2aService::of(&config, &relay).unwrap().unwrap()
}

/// A service with `[a2a.push]` (and no token).
fn pushing_hub() -> Arc<A2aService> {
    let mut config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    config.a2a = Some(toml::from_str("serve = [\"Echo\"]\n[push]\n").unwrap());
    let relay = crate::relay::Relay::of(&config, Arc::new(Metrics::default())).unwrap();
    A2aService::of(&config, &relay).unwrap().unwrap()
}

/// One request to the routes, served on a local port; the whole answer.
async fn exchange(hub: Arc<A2aService>, request: String) -> String {
    exchanges(hub, vec![request]).await.remove(0)
}

/// Requests to the same routes (one task store), one after the other, each on a connection
/// of its own; their whole answers.
async fn exchanges(hub: Arc<A2aService>, requests: Vec<String>) -> Vec<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = tokio::spawn(async move { axum::serve(listener, routes(hub)).await });
    let mut answers = Vec::new();
    for request in requests {
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        answers.push(answer);
    }
    served.abort();
    answers
}

fn post(path: &str, token: Option<&str>, body: &str) -> String {
    let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
    format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\na2a-version: 1.0\r\n\
         {auth}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

const SEND: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;

#[tokio::test]
async fn a_call_without_the_token_is_401_and_counted() {
    let hub = hub();
    for token in [None, Some("wrong")] {
        let answer = exchange(hub.clone(), post("/a2a/Echo", token, SEND)).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        assert!(answer.contains("www-authenticate: Bearer"), "{answer}");
    }
    assert!(hub.relay.metrics.render().contains("bridge_a2a_unauthorized_total 2"));
}

#[tokio::test]
async fn an_agent_not_served_is_404_and_a_body_past_the_limit_413() {
    let answer = exchange(hub(), post("/a2a/Other", Some("s3cret"), SEND)).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    let big = SEND.replace("\"hi\"", &format!("\"{}\"", "x".repeat(600)));
    let answer = exchange(hub(), post("/a2a/Echo", Some("s3cret"), &big)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

#[tokio::test]
async fn a_call_with_the_token_reaches_the_sdk_and_fails_the_task_while_nothing_can_be_published() {
    let answer = exchange(hub(), post("/a2a/Echo", Some("s3cret"), SEND)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("TASK_STATE_FAILED"), "{answer}");
    assert!(answer.contains("the broker did not take the request: the bridge is not connected"), "{answer}");
}

#[tokio::test]
async fn the_card_is_readable_without_the_token_and_declares_the_bearer_scheme() {
    let get = "GET /a2a/Echo/.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    let answer = exchange(hub(), get.to_owned()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let card: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(card["supportedInterfaces"][0]["url"], "http://127.0.0.1:9464/a2a/Echo");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer");
}

#[tokio::test]
async fn the_endpoint_with_a_trailing_slash_is_the_same_endpoint() {
    let answer = exchange(hub(), post("/a2a/Echo/", Some("s3cret"), SEND)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("the broker did not take the request: the bridge is not connected"), "{answer}");
    let answer = exchange(hub(), post("/a2a/Other/", Some("s3cret"), SEND)).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    let answer = exchange(hub(), post("/a2a/Echo/", None, SEND)).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

/// The JSON-RPC error of an answer whose body is one JSON object.
fn rpc_error(answer: &str) -> serde_json::Value {
    let body: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    body["error"].clone()
}

#[tokio::test]
async fn a_message_without_what_a2a_requires_is_invalid_params_and_no_task() {
    let hub = hub();
    let bare = r#"{"message":{"parts":[{"text":"hi"}]}}"#;
    for (method, params) in [("SendMessage", "{}"), ("SendMessage", bare), ("SendStreamingMessage", bare)] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":"r1","method":"{method}","params":{params}}}"#);
        let answer = exchange(hub.clone(), post("/a2a/Echo/", Some("s3cret"), &body)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let error = rpc_error(&answer);
        assert_eq!(error["code"], -32602, "{answer}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("invalid params: params.message"), "{answer}");
        if params == bare {
            assert!(message.contains("messageId") && message.contains("role"), "{answer}");
        }
        assert!(answer.contains(r#""id":"r1""#), "{answer}");
    }
    // None of them became a task: no task ended, none refused, none failed to publish.
    let metrics = hub.relay.metrics.render();
    for end in ["completed", "failed", "canceled", "refused"] {
        assert!(metrics.contains(&format!("bridge_a2a_tasks_total{{end=\"{end}\"}} 0")), "{metrics}");
    }
}

#[tokio::test]
async fn a_client_of_another_a2a_version_is_still_told_the_version_first() {
    let request =
        post("/a2a/Echo", Some("s3cret"), r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#)
            .replace("a2a-version: 1.0\r\n", "");
    let answer = exchange(hub(), request).await;
    assert_eq!(rpc_error(&answer)["code"], -32009, "{answer}");
}

#[tokio::test]
async fn the_card_is_cacheable_and_answered_304_when_the_client_holds_it() {
    let get = |held: &str| {
        format!(
            "GET /a2a/Echo/.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{held}\r\n"
        )
    };
    let first = exchange(hub(), get("")).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(first.contains("cache-control: public, max-age=60\r\n"), "{first}");
    let tag = first.lines().find_map(|l| l.strip_prefix("etag: ")).unwrap_or_default().to_owned();
    let body = first.split("\r\n\r\n").nth(1).unwrap_or_default();
    assert_eq!(tag, cached::etag(body.as_bytes()), "{first}");

    let again = exchange(hub(), get(&format!("if-none-match: {tag}\r\n"))).await;
    assert!(again.starts_with("HTTP/1.1 304"), "{again}");
    assert!(again.contains(&format!("etag: {tag}\r\n")), "{again}");
    assert!(again.ends_with("\r\n\r\n"), "a 304 has no body: {again}");
    let stale = exchange(hub(), get("if-none-match: \"0000000000000000\"\r\n")).await;
    assert!(stale.starts_with("HTTP/1.1 200"), "{stale}");
}

#[tokio::test]
async fn a_refused_token_is_401_invalid_token_or_403_insufficient_scope_and_counted_apart() {
    let hub = hub();
    let challenge = |r: &Response| r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap().to_owned();
    let missing = refusal(&hub, "Echo", Refusal::Missing);
    assert_eq!((missing.status(), challenge(&missing)), (StatusCode::UNAUTHORIZED, "Bearer".into()));
    let invalid = refusal(&hub, "Echo", Refusal::Invalid("it has expired (exp)".into()));
    assert_eq!(invalid.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(challenge(&invalid), "Bearer error=\"invalid_token\"");
    let denied = refusal(&hub, "Echo", Refusal::NotAllowed("its \"scope\" claim holds none".into()));
    assert_eq!(denied.status(), StatusCode::FORBIDDEN);
    assert_eq!(challenge(&denied), "Bearer error=\"insufficient_scope\"");
    let body = axum::body::to_bytes(denied.into_body(), 1024).await.unwrap();
    assert_eq!(&body[..], b"its \"scope\" claim holds none\n");
    let metrics = hub.relay.metrics.render();
    assert!(metrics.contains("bridge_a2a_unauthorized_total 2"), "{metrics}");
    assert!(metrics.contains("bridge_a2a_forbidden_total 1"), "{metrics}");
}

#[tokio::test]
async fn with_jwt_the_card_declares_a_jwt_bearer_of_its_issuer_and_audience() {
    let mut config = Config::new(crate::config::BrokerConfig::new("stomp://127.0.0.1:61613"));
    let keys = std::env::temp_dir().join(format!("sab-card-jwks-{}.json", std::process::id()));
    std::fs::write(&keys, "{\"keys\": []}").unwrap();
    let text = format!(
        "serve = [\"Echo\"]\n[jwt]\njwks_file = {:?}\nissuer = \"https://idp\"\naudience = \"bridge\"",
        keys.display().to_string()
    );
    config.a2a = Some(toml::from_str(&text).unwrap());
    let relay = crate::relay::Relay::of(&config, Arc::new(Metrics::default())).unwrap();
    let hub = A2aService::of(&config, &relay).unwrap().unwrap();
    let scheme = &serde_json::to_value(card::card(&hub, "Echo", "http://x", "d".into())).unwrap()["securitySchemes"]
        ["bearer"]["httpAuthSecurityScheme"];
    assert_eq!(scheme["bearerFormat"], "JWT");
    assert_eq!(scheme["description"], "a JWT of issuer https://idp for audience bridge");
    let answer = exchange(hub, post("/a2a/Echo", None, SEND)).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

#[tokio::test]
async fn an_answer_given_before_the_body_was_read_closes_its_connection_and_says_so() {
    // A keep-alive request: the refusal must tell the client not to send another on it.
    let request = post("/a2a/Echo", Some("wrong"), SEND).replace("connection: close\r\n", "");
    let within = std::time::Duration::from_secs(30);
    let answer =
        tokio::time::timeout(within, exchange(hub(), request)).await.expect("the connection stays open");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    let big = SEND.replace("\"hi\"", &format!("\"{}\"", "x".repeat(600)));
    let request = post("/a2a/Echo", Some("s3cret"), &big).replace("connection: close\r\n", "");
    let answer =
        tokio::time::timeout(within, exchange(hub(), request)).await.expect("the connection stays open");
    assert!(answer.starts_with("HTTP/1.1 413") && answer.contains("connection: close"), "{answer}");
}

/// A send that sets a webhook: on JSON-RPC (`path` the agent's) or HTTP+JSON (`…/message:send`).
fn send_with_webhook(path: &str, url: &str) -> String {
    let request = format!(
        r#"{{"message":{{"messageId":"m1","role":"ROLE_USER","parts":[{{"text":"hi"}}]}},"configuration":{{"taskPushNotificationConfig":{{"url":"{url}"}}}}}}"#
    );
    let body = match path.ends_with("message:send") {
        true => request,
        false => format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{request}}}"#),
    };
    post(path, Some("s3cret"), &body)
}

#[tokio::test]
async fn a_webhook_that_cannot_be_is_refused_before_a_task_is_made() {
    // Without [a2a.push]: not supported, on both bindings.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}"#;
    let answers = exchanges(
        hub(),
        vec![
            send_with_webhook("/a2a/Echo", "https://hook.example/a"),
            send_with_webhook("/a2a/Echo/message:send", "https://hook.example/a"),
            post("/a2a/Echo", Some("s3cret"), list),
        ],
    )
    .await;
    assert_eq!(rpc_error(&answers[0])["code"], -32003, "{}", answers[0]);
    assert!(answers[1].starts_with("HTTP/1.1 400"), "{}", answers[1]);
    assert!(answers[1].contains("PUSH_NOTIFICATION_NOT_SUPPORTED"), "{}", answers[1]);
    // An empty list has no `tasks` member (ProtoJSON leaves out an empty repeated field).
    assert!(
        answers[2].contains(r#""result""#) && !answers[2].contains(r#""tasks""#),
        "a task: {}",
        answers[2]
    );

    // With it, a loopback webhook (a2a.push.allow_private is off).
    let hub = pushing_hub();
    let request = send_with_webhook("/a2a/Echo", "http://127.0.0.1:8080/hook")
        .replace("authorization: Bearer s3cret\r\n", "");
    let answer = exchange(hub.clone(), request).await;
    assert_eq!(rpc_error(&answer)["code"], -32602, "{answer}");
    assert!(answer.contains("a2a.push.allow_private"), "{answer}");
    let card = serde_json::to_value(card::card(&hub, "Echo", "http://x", "d".into())).unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
}

#[tokio::test]
async fn the_http_json_binding_is_served_below_the_agent_with_the_same_checks() {
    let rest_send = r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let get = |path: &str, version: &str| {
        format!(
            "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{version}authorization: Bearer s3cret\r\n\r\n"
        )
    };
    let answers = exchanges(
        hub(),
        vec![
            post("/a2a/Echo/message:send", Some("s3cret"), rest_send),
            get("/a2a/Echo/tasks/no-such-task?historyLength=1", "a2a-version: 1.0\r\n"),
            get("/a2a/Echo/tasks/no-such-task", ""),
            post("/a2a/Echo/message:send", None, rest_send),
            post("/a2a/Other/message:send", Some("s3cret"), rest_send),
        ],
    )
    .await;
    // The task is made (and fails: no broker), in the binding's own shape.
    assert!(answers[0].starts_with("HTTP/1.1 200"), "{}", answers[0]);
    assert!(
        answers[0].contains("content-type: application/json") && answers[0].contains("TASK_STATE_FAILED"),
        "{}",
        answers[0]
    );
    // A task's path (a parameter of its own, below the agent's): 404 TASK_NOT_FOUND, not 500.
    assert!(answers[1].starts_with("HTTP/1.1 404"), "{}", answers[1]);
    assert!(answers[1].contains("TASK_NOT_FOUND"), "{}", answers[1]);
    assert!(
        answers[2].starts_with("HTTP/1.1 400") && answers[2].contains("VERSION_NOT_SUPPORTED"),
        "{}",
        answers[2]
    );
    assert!(answers[3].starts_with("HTTP/1.1 401"), "{}", answers[3]);
    assert!(answers[4].starts_with("HTTP/1.1 404"), "{}", answers[4]);
}

#[tokio::test]
async fn an_http_json_delete_answers_an_empty_json_object() {
    let delete = "DELETE /a2a/Echo/tasks/t1/pushNotificationConfigs/w1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\
                  a2a-version: 1.0\r\nauthorization: Bearer s3cret\r\n\r\n";
    let answer = exchange(pushing_hub(), delete.to_owned()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("\r\n\r\n{}"), "{answer}");
}

/// A JSON-RPC call as an A2A 0.3 client sends it: no `A2A-Version`.
fn post_v03(body: &str) -> String {
    post("/a2a/Echo", Some("s3cret"), body).replace("a2a-version: 1.0\r\n", "")
}

#[tokio::test]
async fn an_a2a_0_3_client_is_served_in_0_3_s_shapes_by_the_same_tasks() {
    let send = r#"{"jsonrpc":"2.0","id":"s1","method":"message/send","params":{"configuration":{"blocking":true},
        "message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#;
    let hub = hub();
    let answer = exchange(hub.clone(), post_v03(send)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let task = &body["result"];
    assert_eq!((body["id"].as_str(), task["kind"].as_str()), (Some("s1"), Some("task")), "{answer}");
    // No broker: the task failed, said in 0.3's words.
    assert_eq!(task["status"]["state"], "failed", "{answer}");
    assert_eq!(task["status"]["message"]["role"], "agent", "{answer}");
    assert_eq!(task["status"]["message"]["parts"][0]["kind"], "text", "{answer}");

    // The same task, read by a 0.3 `tasks/get` and by a 1.0 `GetTask`.
    let id = task["id"].as_str().unwrap();
    let get = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{{"id":"{id}"}}}}"#);
    let get_v1 = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{{"id":"{id}"}}}}"#);
    let answers = exchanges(hub, vec![post_v03(&get), post("/a2a/Echo", Some("s3cret"), &get_v1)]).await;
    assert!(
        answers[0].contains(r#""kind":"task""#) && answers[0].contains(r#""state":"failed""#),
        "{}",
        answers[0]
    );
    assert!(answers[1].contains("TASK_STATE_FAILED") && !answers[1].contains(r#""kind""#), "{}", answers[1]);
}

#[tokio::test]
async fn a_0_3_stream_s_events_are_0_3_s_and_the_refusals_are_json_rpc_errors() {
    let stream = r#"{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{
        "message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#;
    let answer = exchange(hub(), post_v03(stream)).await;
    assert!(answer.contains("content-type: text/event-stream"), "{answer}");
    // No broker: the stream is the failed task's last status.
    assert!(answer.contains(r#""kind":"status-update""#) && answer.contains(r#""final":true"#), "{answer}");
    assert!(answer.contains(r#""state":"failed""#), "{answer}");
    assert!(!answer.contains("TASK_STATE_"), "{answer}");

    let get = r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t1"}}"#;
    let answer = exchange(hub(), post("/a2a/Echo", Some("s3cret"), get)).await;
    assert_eq!(rpc_error(&answer)["code"], -32009, "{answer}");
    let bad = r#"{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"role":"user"}}}"#;
    let answer = exchange(hub(), post_v03(bad)).await;
    assert_eq!(rpc_error(&answer)["code"], -32602, "{answer}");
    let missing = r#"{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"no-such-task"}}"#;
    let answer = exchange(hub(), post_v03(missing)).await;
    assert_eq!(rpc_error(&answer)["code"], -32001, "{answer}");
    // The refusals of 1.0 (here, a message without its id) are made on the 1.0 call.
    let bare =
        r#"{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"role":"user","parts":[]}}}"#;
    let answer = exchange(hub(), post_v03(bare)).await;
    assert!(rpc_error(&answer)["message"].as_str().unwrap_or_default().contains("messageId"), "{answer}");
}

#[tokio::test]
async fn the_card_names_the_0_3_interface_last_and_in_0_3_s_fields() {
    let get = "GET /a2a/Echo/.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    let answer = exchange(hub(), get.to_owned()).await;
    let card: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let versions: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["protocolVersion"].as_str())
        .collect();
    assert_eq!(versions, ["1.0", "1.0", "0.3"], "{card}");
    assert_eq!(card["url"], "http://127.0.0.1:9464/a2a/Echo", "{card}");
    assert_eq!(
        (card["preferredTransport"].as_str(), card["protocolVersion"].as_str()),
        (Some("JSONRPC"), Some("0.3"))
    );
    assert_eq!(card["securitySchemes"]["bearer"]["type"], "http", "{card}");
}
