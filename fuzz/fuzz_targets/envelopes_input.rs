//! The body of the `envelopes` fuzz target, shared with `tests/fuzz_regressions.rs`: the first
//! byte chooses the framework (bits 0–1: Wise Agents, Civitas, VOX, PenguiFlow), the direction
//! (bit 2: request, response) and the content type ((byte >> 3) % 3: none, JSON, msgpack);
//! the rest is decoded, and what decodes is encoded into every framework. An error is fine, a
//! panic is not.

use stomp_agent_bridge::envelope::Direction;
use stomp_agent_bridge::envelope::SystemClock;
use stomp_agent_bridge::envelope::codecs::{Codecs, Framework, Origin};

const FRAMEWORKS: [Framework; 4] =
    [Framework::WiseAgents, Framework::Civitas, Framework::Vox, Framework::PenguiFlow];
const CONTENT_TYPES: [Option<&str>; 3] = [None, Some("application/json"), Some("application/msgpack")];

/// Decodes `data[1..]` as `data[0]` selects, then encodes the result into every framework.
pub fn run(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let from = FRAMEWORKS[usize::from(selector & 3)];
    let direction = if selector & 4 == 0 { Direction::Request } else { Direction::Response };
    let content_type = CONTENT_TYPES[usize::from(selector >> 3) % 3];
    let mut codecs = Codecs::default();
    let origin = Origin { direction, recipient: "Agent", content_type };
    let Ok(envelope) = codecs.decode(from, body, origin, &mut SystemClock) else { return };
    for to in FRAMEWORKS {
        let _ = codecs.encode(to, &envelope, None, &mut SystemClock);
    }
}
