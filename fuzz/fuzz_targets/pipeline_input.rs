//! The body of the `pipeline` fuzz target, shared with `tests/fuzz_regressions.rs`: one
//! pipeline built from `config/bridge.toml` (without `BRIDGE__` environment overrides) takes
//! every input in turn, so asks, answers and streams build up state between them. The first
//! byte chooses the destination (byte % the number of subscriptions, in their sorted order)
//! and, with bit 7, a msgpack content type; the rest is the body. A message becomes a frame to
//! publish, is held or absorbed, or is an error; never a panic.

use std::path::Path;
use std::sync::{Mutex, OnceLock};
use stomp_agent_bridge::bridge::pipeline::{Consumed, Now, Pipeline, Processed};
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::stomp::{AckRef, Command, Frame, Message};

struct Fixture {
    pipeline: Pipeline,
    destinations: Vec<String>,
}

/// The pipeline and its subscriptions, built once per process.
fn fixture() -> &'static Mutex<Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // The crate is the repository (the test) or its `fuzz/` folder (the fuzz target).
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .find(|dir| dir.join("config/bridge.toml").is_file())
            .expect("config/bridge.toml above the crate");
        let config = Config::load_with_env(&repo.join("config/bridge.toml"), Some(Default::default()))
            .expect("config/bridge.toml");
        let pipeline = Pipeline::of(&config);
        let destinations = pipeline.router().subscriptions();
        Mutex::new(Fixture { pipeline, destinations })
    })
}

/// Sends `data[1..]` as a MESSAGE on the destination `data[0]` selects.
pub fn run(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let mut f = fixture().lock().unwrap_or_else(|e| e.into_inner());
    let destination = &f.destinations[usize::from(selector) % f.destinations.len()];
    let mut frame = Frame::new(Command::Message).with("destination", destination.as_str());
    if selector & 0x80 != 0 {
        frame = frame.with("content-type", "application/msgpack");
    }
    let frame = frame.with_body(body.to_vec());
    let ack = AckRef { epoch: 1, subscription: "1".into(), message_id: "m".into(), ack_id: None };
    let msg = Message { ack, destination: destination.clone(), frame };
    let mut ids = stomp_agent_bridge::envelope::new_uuid7;
    if let Ok(Processed::Send(out)) = f.pipeline.process(Consumed::of(&msg), &mut Now::system(&mut ids)) {
        assert!(out.frame.header("destination").is_some(), "a SEND without a destination");
    }
}
