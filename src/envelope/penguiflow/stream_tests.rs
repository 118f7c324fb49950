use super::*;
use crate::envelope::penguiflow::Headers;

fn chunk(seq: u64, text: &str, done: bool) -> (PenguiMessage, StreamChunk) {
    let c = StreamChunk { stream_id: "s1".into(), seq, text: text.into(), done, meta: Map::new() };
    let msg = PenguiMessage {
        payload: serde_json::to_value(&c).unwrap(),
        headers: Headers { tenant: "acme".into(), topic: None, priority: 0 },
        trace_id: "995ab2f90da84424bdda4810c6221488".into(),
        ts: 1.0,
        deadline_s: None,
        meta: Map::new(),
    };
    (msg, c)
}

fn feed(a: &mut StreamAssembler<u64>, seq: u64, text: &str, done: bool) -> Fed<u64> {
    let (m, c) = chunk(seq, text, done);
    a.feed(m, c, seq, Instant::now()).map_err(|e| e.error).unwrap()
}

#[test]
fn chunks_out_of_order_join_in_seq_order_when_all_have_come() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(60));
    assert!(matches!(feed(&mut a, 2, "c", true), Fed::Pending));
    assert!(matches!(feed(&mut a, 0, "a", false), Fed::Pending));
    assert!(matches!(feed(&mut a, 0, "a", false), Fed::Pending), "a redelivered chunk");
    let Fed::Complete { message, mut tokens } = feed(&mut a, 1, "b", false) else { panic!("complete") };
    assert_eq!(message.payload, json!({"text": "abc", "citations": []}));
    tokens.sort();
    assert_eq!(tokens, [0, 0, 1, 2], "every delivery's token comes back to be acked");
    assert_eq!(a.buffered_bytes(), 0);
}

#[test]
fn too_many_buffered_bytes_abandon_the_stream_with_its_tokens() {
    let mut a = StreamAssembler::new(4, Duration::from_secs(60));
    assert!(matches!(feed(&mut a, 0, "abc", false), Fed::Pending));
    let (m, c) = chunk(1, "def", false);
    let abandoned = a.feed(m, c, 1, Instant::now()).expect_err("over the bound");
    assert_eq!(abandoned.tokens, [0, 1]);
    assert_eq!(abandoned.error.kind(), "stream");
    assert_eq!(a.buffered_bytes(), 0);
}

#[test]
fn a_last_seq_at_the_end_of_u64_is_refused_with_the_streams_tokens() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(60));
    assert!(matches!(feed(&mut a, 0, "a", false), Fed::Pending));
    let (m, c) = chunk(u64::MAX, "z", true);
    let abandoned = a.feed(m, c, 9, Instant::now()).expect_err("a stream that can never be whole");
    assert_eq!(abandoned.tokens, [0, 9]);
    assert!(abandoned.error.to_string().contains("18446744073709551615"), "{}", abandoned.error);
    assert_eq!(a.buffered_bytes(), 0);
}

#[test]
fn a_stream_that_never_finishes_expires() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(5));
    let start = Instant::now();
    let (m, c) = chunk(0, "a", false);
    assert!(matches!(a.feed(m, c, 7, start), Ok(Fed::Pending)));
    assert!(a.expire(start + Duration::from_secs(4)).is_empty());
    let gone = a.expire(start + Duration::from_secs(6));
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].tokens, [7]);
}
