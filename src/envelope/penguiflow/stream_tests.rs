use super::*;
use crate::envelope::penguiflow::Headers;

fn chunk(seq: u64, text: &str, done: bool) -> (PenguiMessage, StreamChunk) {
    let c = StreamChunk { stream_id: "s1".into(), seq, text: text.into(), done, meta: Map::new() };
    let msg = PenguiMessage {
        payload: serde_json::to_value(&c).unwrap(),
        headers: Headers { tenant: "acme".into(), topic: None, priority: 0 },
        trace_id: Some("995ab2f90da84424bdda4810c6221488".into()),
        ts: Some(1.0),
        deadline_s: None,
        meta: Map::new(),
    };
    (msg, c)
}

fn feed(a: &mut StreamAssembler, seq: u64, text: &str, done: bool) -> ChunkFed {
    let (m, c) = chunk(seq, text, done);
    a.feed(m, c, Instant::now()).unwrap()
}

#[test]
fn chunks_out_of_order_join_in_seq_order_when_all_have_come() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(60));
    assert!(matches!(feed(&mut a, 2, "c", true), ChunkFed::Pending));
    assert!(matches!(feed(&mut a, 0, "a", false), ChunkFed::Pending));
    assert!(matches!(feed(&mut a, 0, "a", false), ChunkFed::Pending), "a redelivered chunk");
    let ChunkFed::Complete(message) = feed(&mut a, 1, "b", false) else { panic!("complete") };
    assert_eq!(message.payload, json!({"text": "abc", "citations": []}));
    assert_eq!(a.buffered_bytes(), 3, "kept until its answer is safe");
    a.settled("s1");
    assert_eq!(a.buffered_bytes(), 0);
    assert!(a.is_empty());
}

#[test]
fn a_stream_far_longer_than_any_prefetch_is_joined_from_its_text_alone() {
    let mut a = StreamAssembler::new(1 << 20, Duration::from_secs(60));
    for seq in 0..9_999 {
        assert!(matches!(feed(&mut a, seq, "x", false), ChunkFed::Pending));
    }
    let ChunkFed::Complete(message) = feed(&mut a, 9_999, "y", true) else { panic!("complete") };
    let text = message.payload["text"].as_str().unwrap();
    assert_eq!((text.len(), text.ends_with("xy")), (10_000, true));
}

#[test]
fn a_whole_stream_whose_answer_was_released_is_handed_out_again_once() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(60));
    feed(&mut a, 0, "a", false);
    assert!(matches!(feed(&mut a, 1, "b", true), ChunkFed::Complete(_)));
    assert!(matches!(feed(&mut a, 1, "b", true), ChunkFed::Pending), "out already: not twice");
    a.released("s1");
    assert!(matches!(feed(&mut a, 1, "b", true), ChunkFed::Complete(_)), "the redelivery completes it again");
    a.settled("s1");
}

#[test]
fn a_chunk_of_a_stream_answered_already_is_a_repeat_taken_in_not_refused() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(60));
    feed(&mut a, 0, "a", false);
    assert!(matches!(feed(&mut a, 1, "b", true), ChunkFed::Complete(_)));
    a.settled("s1");
    // Its sender answered again (its ask redelivered after a broker restart): every frame of
    // the stream comes once more, and none is bad input.
    for (seq, text, done) in [(0, "a", false), (1, "b", true)] {
        assert!(matches!(feed(&mut a, seq, text, done), ChunkFed::Repeated), "seq {seq}");
    }
    assert!(a.is_empty(), "no new stream begun by the repeat");
    assert_eq!(a.buffered_bytes(), 0);
}

#[test]
fn too_many_buffered_bytes_abandon_the_stream_and_refuse_its_later_chunks() {
    let mut a = StreamAssembler::new(4, Duration::from_secs(60));
    assert!(matches!(feed(&mut a, 0, "abc", false), ChunkFed::Pending));
    let ChunkFed::Abandoned(abandoned) = feed(&mut a, 1, "def", false) else { panic!("over the bound") };
    assert_eq!(abandoned.error.kind(), "stream");
    assert_eq!(abandoned.template.headers.tenant, "acme", "the first chunk's message, to answer with");
    assert_eq!(a.buffered_bytes(), 0);
    let (m, c) = chunk(2, "g", true);
    assert!(a.feed(m, c, Instant::now()).is_err(), "not the start of a new stream");
}

#[test]
fn a_last_seq_at_the_end_of_u64_abandons_the_stream() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(60));
    assert!(matches!(feed(&mut a, 0, "a", false), ChunkFed::Pending));
    let ChunkFed::Abandoned(abandoned) = feed(&mut a, u64::MAX, "z", true) else { panic!("never whole") };
    assert!(abandoned.error.to_string().contains("18446744073709551615"), "{}", abandoned.error);
    assert_eq!(a.buffered_bytes(), 0);
}

#[test]
fn a_stream_that_never_finishes_expires() {
    let mut a = StreamAssembler::new(1024, Duration::from_secs(5));
    let start = Instant::now();
    let (m, c) = chunk(3, "a", false);
    assert!(matches!(a.feed(m, c, start), Ok(ChunkFed::Pending)));
    assert!(a.expire(start + Duration::from_secs(4)).is_empty());
    let gone = a.expire(start + Duration::from_secs(6));
    assert_eq!(gone.len(), 1);
    assert!(gone[0].error.to_string().contains("incomplete"), "{}", gone[0].error);
}
