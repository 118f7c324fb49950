//! Feeds arbitrary messages to the whole pipeline as `config/bridge.toml` builds it, one
//! after another on one pipeline (asks, answers and streams build up state between them): a
//! message becomes frames to publish, is held or absorbed, or is an error; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use stomp_agent_bridge::bridge::pipeline::{Pipeline, Processed};
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::stomp::{AckRef, Command, Frame, Message};

struct Fixture {
    pipeline: Pipeline,
    destinations: Vec<String>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/bridge.toml");
        let config = Config::load(&path).expect("config/bridge.toml");
        let pipeline = Pipeline::of(&config);
        let destinations = pipeline.router.subscriptions();
        Fixture { pipeline, destinations }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let f = fixture();
    let destination = &f.destinations[usize::from(selector) % f.destinations.len()];
    let mut frame = Frame::new(Command::Message).with("destination", destination.as_str());
    if selector & 0x80 != 0 {
        frame = frame.with("content-type", "application/msgpack");
    }
    let frame = frame.with_body(body.to_vec());
    let ack = AckRef { epoch: 1, subscription: "1".into(), message_id: "m".into(), ack_id: None };
    let msg = Message { ack, destination: destination.clone(), frame };
    if let Ok(Processed::Send(out)) = f.pipeline.process(&msg) {
        assert!(out.frame.header("destination").is_some(), "a SEND without a destination");
    }
});
