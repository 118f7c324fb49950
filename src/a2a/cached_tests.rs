use super::*;

fn request(if_none_match: &[&str]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for value in if_none_match {
        headers.append(header::IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
    }
    headers
}

fn card(description: &str) -> serde_json::Value {
    serde_json::json!({"name": "Echo", "description": description})
}

#[test]
fn the_card_comes_with_cache_control_and_an_etag_of_its_body() {
    let answer = answer(&card("echoes"), &request(&[]), |_| OffsetDateTime::UNIX_EPOCH);
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()[header::CACHE_CONTROL], "public, max-age=60");
    assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/json");
    let body = serde_json::to_vec(&card("echoes")).unwrap();
    assert_eq!(answer.headers()[header::ETAG].to_str().unwrap(), etag(&body));
}

#[test]
fn the_etag_follows_the_body() {
    let tag = etag(b"{\"a\":1}");
    assert_eq!(tag, etag(b"{\"a\":1}"));
    assert_ne!(tag, etag(b"{\"a\":2}"));
    assert!(tag.starts_with('"') && tag.ends_with('"') && tag.len() == 18, "{tag}");
}

#[tokio::test]
async fn if_none_match_naming_the_tag_is_304_without_a_body() {
    let tag = etag(&serde_json::to_vec(&card("echoes")).unwrap());
    let weak = format!("W/{tag}");
    let listed = format!("\"other\", {tag}");
    for held in [
        vec![tag.as_str()],
        vec![weak.as_str()],
        vec![listed.as_str()],
        vec!["\"x\"", tag.as_str()],
        vec!["*"],
    ] {
        let answer = answer(&card("echoes"), &request(&held), |_| OffsetDateTime::UNIX_EPOCH);
        assert_eq!(answer.status(), StatusCode::NOT_MODIFIED, "{held:?}");
        assert_eq!(answer.headers()[header::ETAG].to_str().unwrap(), tag);
        assert_eq!(answer.headers()[header::CACHE_CONTROL], "public, max-age=60");
        let body = axum::body::to_bytes(answer.into_body(), 1 << 16).await.unwrap();
        assert!(body.is_empty(), "{held:?}: {body:?}");
    }
    // The card changed (its description, say): the client's tag is old, the card comes whole.
    let answer = answer(&card("echoes, now louder"), &request(&[&tag]), |_| OffsetDateTime::UNIX_EPOCH);
    assert_eq!(answer.status(), StatusCode::OK);
    assert_ne!(answer.headers()[header::ETAG].to_str().unwrap(), tag);
}

#[test]
fn last_modified_is_when_a_body_was_first_served_and_if_modified_since_is_answered_304() {
    let versions = Versions::default();
    let t0 = OffsetDateTime::from_unix_timestamp(784_111_777).unwrap(); // Sun, 06 Nov 1994 08:49:37 GMT
    let later = t0 + time::Duration::hours(1);
    assert_eq!(versions.since("Echo", "\"a\"", t0), t0);
    assert_eq!(versions.since("Echo", "\"a\"", later), t0, "the same body keeps its date");
    assert_eq!(versions.since("Echo", "\"b\"", later), later, "a new body is modified now");

    let first = answer(&card("echoes"), &request(&[]), |_| t0);
    assert_eq!(first.headers()[header::LAST_MODIFIED], "Sun, 06 Nov 1994 08:49:37 GMT");
    let since = |date: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_MODIFIED_SINCE, HeaderValue::from_str(date).unwrap());
        answer(&card("echoes"), &headers, |_| t0).status()
    };
    assert_eq!(since("Sun, 06 Nov 1994 08:49:37 GMT"), StatusCode::NOT_MODIFIED);
    assert_eq!(since("Mon, 07 Nov 1994 08:00:00 GMT"), StatusCode::NOT_MODIFIED);
    assert_eq!(since("Sun, 06 Nov 1994 08:49:36 GMT"), StatusCode::OK);
    assert_eq!(since("yesterday"), StatusCode::OK);
    // With If-None-Match, If-Modified-Since is not read (RFC 9110 §13.1.3).
    let mut both = request(&["\"other\""]);
    both.insert(header::IF_MODIFIED_SINCE, HeaderValue::from_static("Mon, 07 Nov 1994 08:00:00 GMT"));
    assert_eq!(answer(&card("echoes"), &both, |_| t0).status(), StatusCode::OK);
}
