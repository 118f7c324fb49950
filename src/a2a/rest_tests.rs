use super::*;

fn headers(version: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(version) = version {
        headers.insert("a2a-version", HeaderValue::from_str(version).unwrap());
    }
    headers
}

async fn error_of(answer: Response) -> (StatusCode, serde_json::Value) {
    let status = answer.status();
    assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/json");
    let body = axum::body::to_bytes(answer.into_body(), 1 << 16).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

const WHOLE: &[u8] = br#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;

#[tokio::test]
async fn a_call_without_a_1_x_version_is_told_the_version_in_the_bindings_shape() {
    for version in [None, Some("0.3"), Some("2.0")] {
        let refused = refused(&headers(version), "/a2a/Echo/tasks/t1", b"").expect("refused");
        let (status, body) = error_of(refused).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["status"], "FAILED_PRECONDITION", "{body}");
        assert_eq!(body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED", "{body}");
        assert_eq!(body["error"]["details"][0]["domain"], "a2a-protocol.org", "{body}");
    }
    assert!(refused(&headers(Some("1.0")), "/a2a/Echo/tasks/t1", b"").is_none());
    assert!(refused(&headers(Some("1")), "/a2a/Echo/message:send", WHOLE).is_none());
}

#[tokio::test]
async fn a_message_without_what_a2a_requires_is_400_invalid_argument_on_every_send_path() {
    let bare = br#"{"message":{"parts":[{"text":"hi"}]}}"#;
    for path in SENDS {
        let refused = refused(&headers(Some("1.0")), &format!("/a2a/Echo{path}"), bare).expect(path);
        let (status, body) = error_of(refused).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{body}");
        assert_eq!(body["error"]["details"][0]["reason"], "INVALID_PARAMS", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("invalid params: message lacks what A2A 1.0 requires"), "{body}");
    }
    // Only a send is read: a task's path with the same body passes.
    assert!(refused(&headers(Some("1.0")), "/a2a/Echo/tasks/t1:cancel", bare).is_none());
}

#[tokio::test]
async fn the_routers_json_is_application_json_and_its_plain_text_refusals_the_bindings_shape() {
    let typed = |media: &'static str, status: StatusCode| {
        (status, [(header::CONTENT_TYPE, HeaderValue::from_static(media))], "{}").into_response()
    };
    for media in ["application/a2a+json", "application/problem+json"] {
        let answer = conformed(typed(media, StatusCode::OK)).await;
        assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/json", "{media}");
    }
    let stream = conformed(typed("text/event-stream", StatusCode::OK)).await;
    assert_eq!(stream.headers()[header::CONTENT_TYPE], "text/event-stream");
    let refused =
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "Expected request with `Content-Type: application/json`");
    let (status, body) = error_of(conformed(refused.into_response()).await).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(body["error"]["code"], 415, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "INVALID_REQUEST", "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("Content-Type"), "{body}");
}
