//! The body of the `stomp_decoder` fuzz target, shared with `tests/fuzz_regressions.rs`: the
//! first byte says where to split the rest; the decoder must return frames, "incomplete" or an
//! error, and never panic or buffer past its limits.

use bytes::BytesMut;
use stomp_agent_bridge::stomp::{Limits, StompCodec};
use tokio_util::codec::Decoder;

/// Decodes `data[1..]` fed in two reads, split at `data[0]`.
pub fn run(data: &[u8]) {
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
}
