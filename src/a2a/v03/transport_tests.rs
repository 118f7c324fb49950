use super::*;

#[test]
fn a_json_rpc_error_is_the_call_s_error_with_its_code() {
    let error = result(br#"{"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"Task not found"}}"#)
        .unwrap_err();
    assert_eq!((error.code, error.message.as_str()), (-32001, "Task not found"));
    let error = result(b"<html>bad gateway</html>").unwrap_err();
    assert_eq!(error.code, error_code::INTERNAL_ERROR);
    assert!(result(br#"{"jsonrpc":"2.0","id":"1"}"#).unwrap_err().message.contains("missing result"));
}

#[test]
fn an_event_of_a_0_3_stream_is_read_as_the_sdk_s_1_0_event() {
    // As sse-starlette (the a2a-sdk 0.3 server's) writes it, lines ended by CRLF: the splitter
    // has dropped the CRs.
    let status = r#"{"jsonrpc":"2.0","id":"1","result":{"kind":"status-update","taskId":"t1","contextId":"c1","final":true,"status":{"state":"completed","timestamp":"2026-12-07T22:00:00.123456+00:00"}}}"#;
    let chunk = format!("event: message\r\ndata: {status}\r\n\r\n: ping\r\n\r\n");
    let events = Events::default().feed(chunk.as_bytes()).unwrap();
    assert_eq!(events.len(), 2);
    let Some(Ok(StreamResponse::StatusUpdate(update))) = event(&events[0]) else {
        panic!("{:?}", event(&events[0]))
    };
    assert_eq!((update.task_id.as_str(), update.status.state.clone()), ("t1", a2a::TaskState::Completed));
    assert!(event(&events[1]).is_none(), "a comment is no event");

    let task = r#"{"jsonrpc":"2.0","id":"1","result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},
        "artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"partial"}]}]}}"#
        .replace('\n', "");
    let Some(Ok(StreamResponse::Task(task))) = event(format!("data: {task}\n\n").as_bytes()) else {
        panic!("no task")
    };
    assert_eq!(task.status.state, a2a::TaskState::Working);
    let error =
        event(br#"data: {"jsonrpc":"2.0","id":"1","result":{"kind":"nothing"}}"#).unwrap().unwrap_err();
    assert!(error.message.contains("could not be read"), "{}", error.message);
}

#[test]
fn a_1_0_send_is_posted_as_0_3_s_message_send() {
    let request: SendMessageRequest = protojson_conv::from_value(json!({
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "c1"},
        "configuration": {"returnImmediately": false}
    }))
    .unwrap();
    let params = shapes::send_params_to_v03(&protojson(&request).unwrap());
    assert_eq!(params["message"]["kind"], "message");
    assert_eq!(params["message"]["role"], "user");
    assert_eq!(params["message"]["parts"], json!([{"kind": "text", "text": "hi"}]));
    assert_eq!(params["configuration"]["blocking"], true);
    let answer = json!({"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "echo: hi"}]}]});
    let Ok(SendMessageResponse::Task(task)) = v1::<SendMessageResponse>(shapes::send_result_to_v1(&answer))
    else {
        panic!("not a task")
    };
    assert_eq!(task.status.state, a2a::TaskState::Completed);
}
