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
    let answer = answer(&card("echoes"), &request(&[]));
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
        let answer = answer(&card("echoes"), &request(&held));
        assert_eq!(answer.status(), StatusCode::NOT_MODIFIED, "{held:?}");
        assert_eq!(answer.headers()[header::ETAG].to_str().unwrap(), tag);
        assert_eq!(answer.headers()[header::CACHE_CONTROL], "public, max-age=60");
        let body = axum::body::to_bytes(answer.into_body(), 1 << 16).await.unwrap();
        assert!(body.is_empty(), "{held:?}: {body:?}");
    }
    // The card changed (its description, say): the client's tag is old, the card comes whole.
    let answer = answer(&card("echoes, now louder"), &request(&[&tag]));
    assert_eq!(answer.status(), StatusCode::OK);
    assert_ne!(answer.headers()[header::ETAG].to_str().unwrap(), tag);
}
