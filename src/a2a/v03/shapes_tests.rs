use super::*;

/// `message/send`'s params as the a2a-sdk 0.3.7 client sends them (`model_dump(mode="json",
/// exclude_none=True)` of its pydantic models).
const SENT: &str = r#"{"configuration":{"acceptedOutputModes":[],"blocking":true},
    "message":{"kind":"message","messageId":"m1","contextId":"c1","parts":[{"kind":"text","text":"hi"}],"role":"user"}}"#;

fn value(json: &str) -> Value {
    serde_json::from_str(json).unwrap()
}

#[test]
fn a_send_of_the_0_3_client_is_the_1_0_request_it_means() {
    let v1 = send_params_to_v1(&value(SENT)).unwrap();
    let want = json!({
        "configuration": {"acceptedOutputModes": [], "returnImmediately": false},
        "message": {"messageId": "m1", "contextId": "c1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    });
    assert_eq!(v1, want);
}

#[test]
fn file_and_data_parts_become_raw_url_and_data() {
    let message = json!({"role": "agent", "messageId": "m", "parts": [
        {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        {"kind": "file", "file": {"uri": "https://x/y.png"}, "metadata": {"k": 1}},
        {"kind": "data", "data": {"a": [1, 2]}},
        {"kind": "data", "data": {"value": 7}, "metadata": {"data_part_compat": true}},
        {"text": "no kind, a text part by its field"},
    ]});
    let v1 = message_to_v1(&message).unwrap();
    assert_eq!(v1["role"], "ROLE_AGENT");
    assert_eq!(
        v1["parts"],
        json!([
            {"raw": "aGk=", "mediaType": "text/plain", "filename": "a.txt"},
            {"url": "https://x/y.png", "metadata": {"k": 1}},
            {"data": {"a": [1, 2]}},
            {"data": 7},
            {"text": "no kind, a text part by its field"},
        ])
    );
}

#[test]
fn what_0_3_does_not_give_that_shape_is_said() {
    let cases = [
        (
            json!({"messageId": "m", "role": "ROLE_USER", "parts": []}),
            "message.role must be \"user\" or \"agent\"",
        ),
        (json!({"messageId": "m", "role": "user"}), "message.parts must be a list"),
        (json!({"role": "user", "parts": [{"kind": "video"}]}), "a part of kind \"video\" is not A2A 0.3's"),
        (
            json!({"role": "user", "parts": [{"kind": "data", "data": [1]}]}),
            "a data part's data must be an object",
        ),
        (json!({"role": "user", "parts": [{"kind": "file", "file": {}}]}), "either bytes or uri"),
        (json!("text"), "message must be an object"),
    ];
    for (message, why) in cases {
        let error = message_to_v1(&message).unwrap_err();
        assert!(error.contains(why), "{message}: {error}");
    }
    assert!(send_params_to_v1(&json!({})).unwrap_err().contains("message must be an object"));
    let blocking = json!({"message": {"role": "user", "parts": []}, "configuration": {"blocking": "yes"}});
    assert!(send_params_to_v1(&blocking).unwrap_err().contains("blocking must be true or false"));
}

#[test]
fn a_webhook_keeps_its_first_scheme_and_comes_back_as_a_list() {
    let set = json!({"taskId": "t1", "pushNotificationConfig": {"id": "w1", "url": "https://h/hook", "token": "tk",
        "authentication": {"schemes": ["Bearer", "Basic"], "credentials": "c"}}});
    let v1 = set_webhook_params_to_v1(&set).unwrap();
    let want = json!({"taskId": "t1", "id": "w1", "url": "https://h/hook", "token": "tk",
        "authentication": {"scheme": "Bearer", "credentials": "c"}});
    assert_eq!(v1, want);
    let back = webhook_to_v03(&v1);
    assert_eq!(back["taskId"], "t1");
    assert_eq!(back["pushNotificationConfig"]["authentication"]["schemes"], json!(["Bearer"]));
    assert_eq!(webhooks_to_v03(&json!({"configs": [v1]})).as_array().map(Vec::len), Some(1));
    let of_task = webhook_of_task_to_v1(&json!({"id": "t1", "pushNotificationConfigId": "w1"})).unwrap();
    assert_eq!(of_task, json!({"taskId": "t1", "id": "w1"}));
    assert!(webhook_of_task_to_v1(&json!({})).is_err());
}

/// A task as the SDK writes it in ProtoJSON: ended, with its answer as an artifact and the
/// question in its history.
fn task() -> Value {
    json!({"id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-07T22:00:00Z"},
        "artifacts": [{"artifactId": "a1", "name": "answer", "parts": [{"text": "echo: hi"}]}],
        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "c1", "taskId": "t1"}]})
}

#[test]
fn a_task_is_written_as_0_3_s_task() {
    let want = json!({"kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": "completed", "timestamp": "2026-12-07T22:00:00Z"},
        "artifacts": [{"artifactId": "a1", "name": "answer", "parts": [{"kind": "text", "text": "echo: hi"}]}],
        "history": [{"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}],
            "contextId": "c1", "taskId": "t1"}]});
    assert_eq!(task_to_v03(&task()), want);
    assert_eq!(send_result_to_v03(&json!({"task": task()})), want);
    let said = json!({"message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"data": [1]}]}});
    let said = send_result_to_v03(&said);
    assert_eq!(said["kind"], "message");
    assert_eq!(said["role"], "agent");
    assert_eq!(
        said["parts"][0],
        json!({"kind": "data", "data": {"value": [1]}, "metadata": {"data_part_compat": true}})
    );
}

#[test]
fn every_state_has_its_0_3_name_and_an_unknown_one_is_unknown() {
    for (v03, v1) in STATES {
        let task = task_to_v03(&json!({"id": "t", "contextId": "c", "status": {"state": v1}}));
        assert_eq!(task["status"]["state"], v03);
    }
    let task =
        task_to_v03(&json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_NEW_IN_1_1"}}));
    assert_eq!(task["status"]["state"], "unknown");
}

#[test]
fn a_status_update_is_final_when_its_state_ends_the_task() {
    for (state, last) in
        [("TASK_STATE_WORKING", false), ("TASK_STATE_COMPLETED", true), ("TASK_STATE_FAILED", true)]
    {
        let event = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}});
        let event = event_to_v03(&event);
        assert_eq!(event["kind"], "status-update");
        assert_eq!(event["final"], last, "{event}");
        assert_eq!(event["taskId"], "t1");
    }
    let artifact = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": false, "lastChunk": true,
        "artifact": {"artifactId": "a1", "parts": [{"text": "echo: hi"}]}}});
    let want = json!({"kind": "artifact-update", "taskId": "t1", "contextId": "c1", "append": false, "lastChunk": true,
        "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": "echo: hi"}]}});
    assert_eq!(event_to_v03(&artifact), want);
    assert_eq!(event_to_v03(&json!({"task": task()}))["kind"], "task");
}

#[test]
fn a_message_goes_to_1_0_and_back_unchanged() {
    let message = json!({"kind": "message", "messageId": "m1", "role": "user", "contextId": "c", "taskId": "t",
        "referenceTaskIds": ["r"], "metadata": {"k": "v"}, "extensions": ["https://e"],
        "parts": [{"kind": "text", "text": "hi", "metadata": {"p": 1}},
                  {"kind": "file", "file": {"uri": "https://x", "mimeType": "image/png", "name": "x.png"}}]});
    assert_eq!(message_to_v03(&message_to_v1(&message).unwrap()), message);
}
