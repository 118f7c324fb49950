use super::*;

fn headers(version: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(version) = version {
        headers.insert("a2a-version", HeaderValue::from_str(version).unwrap());
    }
    headers
}

const GET: &str = r#"{"jsonrpc":"2.0","id":"r1","method":"tasks/get","params":{"id":"t1","historyLength":2,"metadata":{}}}"#;

#[test]
fn a_0_3_method_without_a_version_is_the_1_0_call_it_is() {
    for version in [None, Some("0.3"), Some("0.3.0"), Some("")] {
        let Some(Ok((method, v1))) = read(&headers(version), GET.as_bytes()) else {
            panic!("not read as 0.3")
        };
        assert_eq!(method, Method::GetTask);
        let v1: Value = serde_json::from_slice(&v1).unwrap();
        assert_eq!(
            v1,
            json!({"jsonrpc": "2.0", "id": "r1", "method": "GetTask", "params": {"id": "t1", "historyLength": 2}})
        );
    }
}

#[test]
fn a_1_0_call_or_a_body_that_is_not_json_is_not_this_layer_s() {
    let send = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#;
    for body in [send, "not json", r#"{"jsonrpc":"2.0","id":1}"#, r#"{"method":"tasks/list"}"#] {
        assert!(read(&headers(None), body.as_bytes()).is_none(), "{body}");
    }
}

/// The JSON-RPC error of a refusal.
async fn error_of(answer: Response) -> Value {
    let body = axum::body::to_bytes(answer.into_body(), usize::MAX).await.unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    body["error"].clone()
}

#[tokio::test]
async fn a_0_3_method_under_a_1_0_version_is_told_the_version_and_bad_params_are_invalid() {
    let Some(Err(answer)) = read(&headers(Some("1.0")), GET.as_bytes()) else { panic!("not refused") };
    let error = error_of(answer).await;
    assert_eq!(error["code"], -32009, "{error}");
    assert!(error["message"].as_str().unwrap_or_default().contains("tasks/get is A2A 0.3's"), "{error}");

    let send = r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"role":"robot","parts":[]}}}"#;
    let Some(Err(answer)) = read(&headers(None), send.as_bytes()) else { panic!("not refused") };
    let error = error_of(answer).await;
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap_or_default().contains("message.role"), "{error}");
}

/// An SSE body as the SDK's router writes a stream (an id and a JSON-RPC response per event,
/// a keep-alive comment between), cut at `cuts`.
fn sse(cuts: &[usize]) -> (Body, String) {
    let status = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}"#;
    let task = r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}}"#;
    let whole = format!("id: 1\ndata: {task}\n\n:\n\nid: 2\ndata: {status}\n\n");
    let mut chunks = Vec::new();
    let mut at = 0;
    for cut in cuts.iter().chain([&whole.len()]) {
        chunks.push(Ok::<_, std::io::Error>(Bytes::from(whole[at..*cut].to_owned())));
        at = *cut;
    }
    (Body::from_stream(futures_util::stream::iter(chunks)), whole)
}

#[tokio::test]
async fn a_stream_s_events_are_rewritten_whole_wherever_its_chunks_are_cut() {
    for cuts in [vec![], vec![3, 20, 140, 141, 145], (1..200).collect()] {
        let (body, _) = sse(&cuts);
        let out: Vec<Bytes> = events(Method::Stream, body).map(Result::unwrap).collect().await;
        assert!(out.iter().all(|chunk| !chunk.is_empty()));
        let out = String::from_utf8(out.concat()).unwrap();
        let events: Vec<&str> = out.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3, "{out}");
        assert!(events[0].starts_with("id: 1\ndata: "), "{out}");
        let task: Value = serde_json::from_str(events[0].trim_start_matches("id: 1\ndata: ")).unwrap();
        assert_eq!(task["result"]["kind"], "task");
        assert_eq!(task["result"]["status"]["state"], "submitted");
        assert_eq!(events[1], ":", "a comment passes as it is: {out}");
        let status: Value = serde_json::from_str(events[2].trim_start_matches("id: 2\ndata: ")).unwrap();
        assert_eq!(status["id"], 1);
        assert_eq!(status["result"]["kind"], "status-update");
        assert_eq!(status["result"]["final"], true);
    }
}

#[test]
fn an_error_passes_as_it_is_and_a_result_is_rewritten() {
    let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task not found: t9"}}"#;
    assert_eq!(rewritten(Method::GetTask, error), error.to_vec());
    let deleted = br#"{"jsonrpc":"2.0","id":1,"result":null}"#;
    let deleted: Value = serde_json::from_slice(&rewritten(Method::DeleteWebhook, deleted)).unwrap();
    assert_eq!(deleted["result"], Value::Null);
}

#[test]
fn the_card_has_0_3_s_fields_beside_1_0_s() {
    let card: AgentCard = serde_json::from_value(json!({
        "name": "Echo", "description": "d", "version": "1",
        "supportedInterfaces": [
            {"url": "http://x/a2a/Echo", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://x/a2a/Echo", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [],
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]
    }))
    .unwrap();
    let written = super::card(&card);
    assert_eq!(written["url"], "http://x/a2a/Echo");
    assert_eq!(written["preferredTransport"], "JSONRPC");
    assert_eq!(written["protocolVersion"], "0.3");
    assert_eq!(written["security"], json!([{"bearer": []}]));
    let scheme = &written["securitySchemes"]["bearer"];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "Bearer");
    assert_eq!(scheme["bearerFormat"], "JWT");
    // A 1.0 reader (the SDK's own types) still reads it as it was.
    let read: AgentCard = serde_json::from_value(written).unwrap();
    assert_eq!(read, card);
}

#[test]
fn events_end_at_any_line_end_and_what_is_left_is_the_last() {
    let mut cut = Events::default();
    let events = cut.feed(b"data: 1\r\n\r\ndata: 2\r\rdata: 3\r").unwrap();
    assert_eq!(events, [b"data: 1\n\n".to_vec(), b"data: 2\n\n".to_vec()]);
    // The CR that ended "data: 3" is followed by its LF in the next chunk: one line end.
    assert_eq!(cut.feed(b"\n").unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(cut.rest(), Some(b"data: 3\n".to_vec()));
    assert_eq!(cut.rest(), None);
    let mut cut = Events::default();
    let big = vec![b'x'; MAX_EVENT_BYTES + 1];
    assert!(cut.feed(&big).unwrap_err().contains("longer than"));
}
