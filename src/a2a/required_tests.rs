use super::*;

fn call(method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{params}}}"#)
}

fn why(body: &str) -> String {
    missing(body.as_bytes()).map(|m| m.why).unwrap_or_default()
}

const WHOLE: &str = r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;

#[test]
fn a_message_with_what_a2a_requires_passes_by_either_field_name() {
    assert_eq!(missing(call("SendMessage", WHOLE).as_bytes()), None);
    assert_eq!(missing(call("SendStreamingMessage", WHOLE).as_bytes()), None);
    let snake =
        r#"{"message":{"message_id":"m1","role":1,"parts":[{"data":null},{"raw":"AA=="},{"url":"u"}]}}"#;
    assert_eq!(missing(call("SendMessage", snake).as_bytes()), None);
}

#[test]
fn params_without_a_message_are_refused_with_the_callers_id() {
    for params in ["{}", "null", r#"{"message":null}"#] {
        let refused = missing(call("SendMessage", params).as_bytes());
        assert_eq!(
            refused,
            Some(Missing {
                id: JsonRpcId::Number(7),
                why: "params.message is required (A2A 1.0 SendMessageRequest)".into()
            }),
            "{params}"
        );
    }
    let no_params = r#"{"jsonrpc":"2.0","id":"s","method":"SendStreamingMessage"}"#;
    assert_eq!(missing(no_params.as_bytes()).map(|m| m.id), Some(JsonRpcId::String("s".into())));
}

#[test]
fn a_message_says_all_it_lacks() {
    let bare = why(&call("SendMessage", r#"{"message":{"parts":[{"text":"hi"}]}}"#));
    assert!(bare.contains("messageId (a non-empty string), role (ROLE_USER or ROLE_AGENT)"), "{bare}");
    assert!(!bare.contains("parts"), "{bare}");
    let empty = why(&call(
        "SendStreamingMessage",
        r#"{"message":{"messageId":"","role":"ROLE_UNSPECIFIED","parts":[]}}"#,
    ));
    assert!(
        empty.ends_with(
            "messageId (a non-empty string), role (ROLE_USER or ROLE_AGENT), parts (at least one)"
        ),
        "{empty}"
    );
    let hollow = why(&call(
        "SendMessage",
        r#"{"message":{"messageId":"m","role":0,"parts":[{"text":"a"},{"mediaType":"text/plain"}]}}"#,
    ));
    assert!(
        hollow.ends_with("role (ROLE_USER or ROLE_AGENT), parts each with one of text, raw, url or data"),
        "{hollow}"
    );
}

#[test]
fn other_methods_and_bodies_the_sdk_must_judge_are_left_to_it() {
    assert_eq!(missing(call("GetTask", "{}").as_bytes()), None);
    assert_eq!(missing(br#"{"jsonrpc":"1.0","id":1,"method":"SendMessage","params":{}}"#), None);
    assert_eq!(missing(b"{not json"), None);
    assert_eq!(missing(call("SendMessage", r#"{"message":{"messageId":1,"parts":"x"}}"#).as_bytes()), None);
}

#[test]
fn an_http_json_request_is_checked_as_the_params_of_a_call() {
    assert_eq!(missing_in_request(WHOLE.as_bytes()), None);
    assert_eq!(
        missing_in_request(b"{}").as_deref(),
        Some("message is required (A2A 1.0 SendMessageRequest)")
    );
    let bare = missing_in_request(br#"{"message":{"parts":[{"text":"hi"}]}}"#).unwrap_or_default();
    assert!(bare.starts_with("message lacks what A2A 1.0 requires: messageId"), "{bare}");
    assert!(bare.contains("role"), "{bare}");
    // Not JSON, or not an object: the SDK's own 400 answers it.
    assert_eq!(missing_in_request(b"text"), None);
    assert_eq!(missing_in_request(b"[1]"), None);
}

#[test]
fn the_webhook_a_send_sets_is_found_by_either_field_name() {
    let with = |config: &str| {
        format!(
            r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"x"}}]}},"configuration":{config}}}"#
        )
    };
    let camel = with(r#"{"taskPushNotificationConfig":{"url":"https://hook.example/a"}}"#);
    let snake = with(r#"{"task_push_notification_config":{"url":"https://hook.example/b"}}"#);
    assert_eq!(
        webhook_in_call(call("SendMessage", &camel).as_bytes()),
        Some((JsonRpcId::Number(7), "https://hook.example/a".into()))
    );
    assert_eq!(webhook_in_request(snake.as_bytes()).as_deref(), Some("https://hook.example/b"));
    // None set, or another method: none.
    assert_eq!(webhook_in_call(call("SendMessage", WHOLE).as_bytes()), None);
    assert_eq!(webhook_in_call(call("GetTask", &camel).as_bytes()), None);
    assert_eq!(webhook_in_request(with(r#"{"returnImmediately":true}"#).as_bytes()), None);
}
