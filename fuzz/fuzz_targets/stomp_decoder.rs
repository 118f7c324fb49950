//! Feeds arbitrary bytes, split at an arbitrary point, to the STOMP decoder: it must return
//! frames, "incomplete" or an error, and never panic or run past its limits.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use stomp_agent_bridge::stomp::{Limits, StompCodec};
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let cut = (split as usize).min(rest.len());
    let limits = Limits { max_frame_bytes: 4096, max_headers: 16, max_header_line: 256 };
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::from(&rest[..cut]);
    for chunk in [&rest[cut..], &[][..]] {
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(_) => return,
            }
        }
        assert!(buf.len() <= limits.max_frame_bytes + 1, "buffered past the frame limit");
        buf.extend_from_slice(chunk);
    }
});
