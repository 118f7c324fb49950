use super::*;
use bytes::Bytes;
use proptest::prelude::*;

fn decode_all(codec: &mut StompCodec, bytes: &[u8]) -> Result<Vec<Wire>, FrameError> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    while let Some(item) = codec.decode(&mut buf)? {
        out.push(item);
    }
    Ok(out)
}

fn frames(items: Vec<Wire>) -> Vec<Frame> {
    items
        .into_iter()
        .filter_map(|i| match i {
            Wire::Frame(f) => Some(f),
            Wire::Heartbeat => None,
        })
        .collect()
}

/// The frame as it was before encoding: the encoder adds `content-length`.
fn without_content_length(item: Option<Wire>) -> Option<Wire> {
    match item {
        Some(Wire::Frame(mut f)) => {
            f.headers.retain(|(n, _)| n != "content-length");
            Some(Wire::Frame(f))
        }
        other => other,
    }
}

fn encode(frame: &Frame) -> BytesMut {
    let mut buf = BytesMut::new();
    StompCodec::default().encode(frame, &mut buf).expect("encodes");
    buf
}

#[test]
fn decodes_a_message_without_content_length() {
    let wire = b"MESSAGE\ndestination:/queue/a\nmessage-id:1\n\nhello\0";
    let got = frames(decode_all(&mut StompCodec::default(), wire).unwrap());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].command, Command::Message);
    assert_eq!(got[0].header("destination"), Some("/queue/a"));
    assert_eq!(&got[0].body[..], b"hello");
}

#[test]
fn content_length_lets_a_body_carry_nul_bytes() {
    let wire = b"MESSAGE\ncontent-length:5\n\na\0b\0c\0";
    let got = frames(decode_all(&mut StompCodec::default(), wire).unwrap());
    assert_eq!(&got[0].body[..], b"a\0b\0c");
}

#[test]
fn crlf_line_ends_and_heartbeats_between_frames_are_accepted() {
    let wire = b"\r\n\nRECEIPT\r\nreceipt-id:7\r\n\r\n\0\n\nRECEIPT\nreceipt-id:8\n\n\0";
    let items = decode_all(&mut StompCodec::default(), wire).unwrap();
    assert!(items.contains(&Wire::Heartbeat));
    let got = frames(items);
    assert_eq!(got.iter().map(|f| f.header("receipt-id").unwrap()).collect::<Vec<_>>(), ["7", "8"]);
}

#[test]
fn repeated_header_first_value_wins() {
    let wire = b"MESSAGE\nfoo:first\nfoo:second\n\n\0";
    let got = frames(decode_all(&mut StompCodec::default(), wire).unwrap());
    assert_eq!(got[0].header("foo"), Some("first"));
    assert_eq!(got[0].headers.len(), 2);
}

#[test]
fn escaped_headers_are_unescaped_except_on_connected() {
    let wire = b"MESSAGE\nk\\cey:a\\nb\\\\c\\rd\n\n\0CONNECTED\nserver:x\\ny\n\n\0";
    let got = frames(decode_all(&mut StompCodec::default(), wire).unwrap());
    assert_eq!(got[0].header("k:ey"), Some("a\nb\\c\rd"));
    assert_eq!(got[1].header("server"), Some("x\\ny"));
}

#[test]
fn an_undefined_escape_is_an_error() {
    let err = decode_all(&mut StompCodec::default(), b"MESSAGE\na:\\t\n\n\0").unwrap_err();
    assert!(matches!(err, FrameError::InvalidEscape('t')), "{err}");
}

#[test]
fn a_header_that_is_not_utf8_is_kept_lossily_instead_of_resetting() {
    let got = frames(decode_all(&mut StompCodec::default(), b"MESSAGE\na:\xff\xfe\n\nx\0").unwrap());
    assert_eq!(got[0].header("a"), Some("\u{fffd}\u{fffd}"));
}

#[test]
fn a_frame_split_across_reads_decodes_once_complete() {
    let wire = encode(&Frame::new(Command::Send).with("destination", "/q").with_body("0123456789"));
    for cut in 0..wire.len() {
        let mut codec = StompCodec::default();
        let mut buf = BytesMut::from(&wire[..cut]);
        assert_eq!(codec.decode(&mut buf).unwrap(), None, "cut at {cut}");
        buf.extend_from_slice(&wire[cut..]);
        let got = codec.decode(&mut buf).unwrap();
        assert!(matches!(got, Some(Wire::Frame(ref f)) if &f.body[..] == b"0123456789"), "cut at {cut}");
    }
}

#[test]
fn unknown_command_and_missing_colon_are_errors() {
    assert!(matches!(
        decode_all(&mut StompCodec::default(), b"HELLO\n\n\0"),
        Err(FrameError::UnknownCommand(c)) if c == "HELLO"
    ));
    assert!(matches!(
        decode_all(&mut StompCodec::default(), b"MESSAGE\nnocolon\n\n\0"),
        Err(FrameError::MalformedHeader(_))
    ));
}

#[test]
fn content_length_not_followed_by_nul_is_an_error() {
    let err = decode_all(&mut StompCodec::default(), b"MESSAGE\ncontent-length:1\n\nab\0").unwrap_err();
    assert!(matches!(err, FrameError::MissingNul(1)));
}

#[test]
fn a_content_length_at_the_end_of_usize_is_too_large_not_an_overflow() {
    let frame = format!("MESSAGE\ncontent-length:{}\n\n", usize::MAX);
    match decode_all(&mut StompCodec::new(Limits::default()), frame.as_bytes()) {
        Err(FrameError::FrameTooLarge { size, .. }) => assert_eq!(size, usize::MAX),
        other => panic!("{other:?}"),
    }
}

#[test]
fn limits_are_enforced_before_buffering_the_whole_frame() {
    let limits = Limits { max_frame_bytes: 100, max_headers: 2, max_header_line: 24 };
    let big_len = b"MESSAGE\ncontent-length:1000000\n\n";
    assert!(matches!(
        decode_all(&mut StompCodec::new(limits), big_len),
        Err(FrameError::FrameTooLarge { .. })
    ));
    let no_nul = [b"MESSAGE\n\n".as_slice(), &[b'x'; 200]].concat();
    assert!(matches!(
        decode_all(&mut StompCodec::new(limits), &no_nul),
        Err(FrameError::FrameTooLarge { .. })
    ));
    let many = b"MESSAGE\na:1\nb:2\nc:3\n\n\0";
    assert!(matches!(
        decode_all(&mut StompCodec::new(limits), many),
        Err(FrameError::TooManyHeaders { limit: 2 })
    ));
    let long_line = [b"MESSAGE\na:".as_slice(), &[b'x'; 40]].concat();
    assert!(matches!(
        decode_all(&mut StompCodec::new(limits), &long_line),
        Err(FrameError::HeaderLineTooLong { .. })
    ));
}

#[test]
fn encoder_writes_content_length_and_escapes_headers() {
    let frame = Frame::new(Command::Send).with("a:b", "x\ny\\").with("content-length", "99").with_body("hi");
    assert_eq!(&encode(&frame)[..], b"SEND\na\\cb:x\\ny\\\\\ncontent-length:2\n\nhi\0");
    assert_eq!(&encode(&Frame::new(Command::Disconnect))[..], b"DISCONNECT\n\n\0");
}

#[test]
fn connect_headers_are_not_escaped_and_line_breaks_are_refused() {
    let ok = Frame::new(Command::Connect).with("passcode", "a:b\\c");
    assert_eq!(&encode(&ok)[..], b"CONNECT\npasscode:a:b\\c\n\n\0");
    let bad = Frame::new(Command::Connect).with("passcode", "a\nb");
    let err = StompCodec::default().encode(&bad, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, FrameError::UnencodableHeader { .. }));
}

fn arb_command() -> impl Strategy<Value = Command> {
    proptest::sample::select(Command::ALL.to_vec())
}

fn arb_frame() -> impl Strategy<Value = Frame> {
    let header = ("[a-z\\-:\\\\\n\r é]{1,12}", "[ -~\\n\\r\\\\:é€😀]{0,24}");
    (arb_command(), proptest::collection::vec(header, 0..6), proptest::collection::vec(any::<u8>(), 0..300))
        .prop_map(|(command, headers, body)| {
            let headers = headers.into_iter().filter(|(n, _)| n != "content-length").collect();
            Frame { command, headers, body: Bytes::from(body) }
        })
        .prop_filter("CONNECT-like frames cannot carry line breaks", |f| {
            f.command.escapes_headers()
                || !f.headers.iter().any(|(n, v)| n.contains(':') || has_line_break(n) || has_line_break(v))
        })
}

proptest! {
    #[test]
    fn any_frame_encodes_and_decodes_to_itself(frame in arb_frame(), split in any::<prop::sample::Index>()) {
        let wire = encode(&frame);
        let cut = split.index(wire.len() + 1);
        let mut codec = StompCodec::default();
        let mut buf = BytesMut::from(&wire[..cut]);
        let mut got = codec.decode(&mut buf).unwrap();
        if got.is_none() {
            buf.extend_from_slice(&wire[cut..]);
            got = codec.decode(&mut buf).unwrap();
        } else {
            buf.extend_from_slice(&wire[cut..]);
        }
        prop_assert_eq!(without_content_length(got), Some(Wire::Frame(frame)));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn several_frames_in_one_buffer_all_decode(frames_in in proptest::collection::vec(arb_frame(), 1..5)) {
        let mut wire = BytesMut::new();
        for f in &frames_in {
            wire.extend_from_slice(&encode(f));
            wire.extend_from_slice(b"\n");
        }
        let got: Vec<_> = decode_all(&mut StompCodec::default(), &wire)
            .unwrap()
            .into_iter()
            .filter(|i| *i != Wire::Heartbeat)
            .map(|i| without_content_length(Some(i)))
            .collect();
        let want: Vec<_> = frames_in.into_iter().map(|f| Some(Wire::Frame(f))).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let limits = Limits { max_frame_bytes: 256, max_headers: 8, max_header_line: 64 };
        let _ = decode_all(&mut StompCodec::new(limits), &bytes);
    }

    #[test]
    fn truncated_frames_are_incomplete_not_errors(frame in arb_frame(), split in any::<prop::sample::Index>()) {
        let wire = encode(&frame);
        let cut = split.index(wire.len());
        let mut buf = BytesMut::from(&wire[..cut]);
        prop_assert_eq!(StompCodec::default().decode(&mut buf).unwrap(), None);
    }
}
