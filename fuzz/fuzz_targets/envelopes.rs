//! Feeds arbitrary bytes to each framework's decoder (Wise Agents YAML, fast path and full
//! parser; Civitas JSON and msgpack; VOX; PenguiFlow), then encodes what decoded into every
//! framework: an error is fine, a panic is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stomp_agent_bridge::envelope::Direction;
use stomp_agent_bridge::envelope::codecs::{Codecs, Framework, Origin};

const FRAMEWORKS: [Framework; 4] =
    [Framework::WiseAgents, Framework::Civitas, Framework::Vox, Framework::PenguiFlow];
const CONTENT_TYPES: [Option<&str>; 3] = [None, Some("application/json"), Some("application/msgpack")];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let from = FRAMEWORKS[usize::from(selector & 3)];
    let direction = if selector & 4 == 0 { Direction::Request } else { Direction::Response };
    let content_type = CONTENT_TYPES[usize::from(selector >> 3) % 3];
    let codecs = Codecs::default();
    let origin = Origin { direction, recipient: "Agent", content_type };
    let Ok(envelope) = codecs.decode(from, body, origin) else { return };
    for to in FRAMEWORKS {
        let _ = codecs.encode(to, &envelope, None);
    }
});
