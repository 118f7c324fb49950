//! How much memory the bridge keeps per unanswered ask: 10,000 Wise Agents asks to a Civitas
//! agent through the pipeline of config/bridge.toml, RSS before and after.
//!
//!   cargo run --release --example ask_memory
use stomp_agent_bridge::bridge::pipeline::{Consumed, Now, Pipeline};
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::envelope::Intent;
use stomp_agent_bridge::envelope::wiseagents::WiseMessage;
use stomp_agent_bridge::stomp::{Command, Frame};

fn rss_kib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn main() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bridge.toml");
    let config = Config::load(&path).unwrap();
    let mut pipeline = Pipeline::of(&config);
    let mut ids = stomp_agent_bridge::envelope::new_uuid7;
    let n = 10_000;
    let bodies: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            WiseMessage {
                message: format!("{{\"city\": \"Paris\", \"units\": \"metric\", \"n\": {i}}}"),
                message_type: Some(Intent::Query),
                sender: Some("LoadCaller".into()),
                tool_id: Some(format!("call_{i:08}")),
                route_response_to: Some("LoadCaller".into()),
                context_name: Some("default".into()),
                extra: vec![],
            }
            .to_yaml()
            .into_bytes()
        })
        .collect();
    let before = rss_kib();
    for body in bodies {
        let dest = "/queue/request/WeatherAgent";
        let frame = Frame::new(Command::Message).with("destination", dest).with_body(body);
        let out = pipeline.process(Consumed { destination: dest, frame: &frame }, &mut Now::system(&mut ids));
        drop(out);
    }
    let after = rss_kib();
    let size = std::mem::size_of::<stomp_agent_bridge::routing::table::PendingAsk>();
    println!("a PendingAsk is {size} bytes inline");
    println!(
        "{n} asks pending: {}; RSS +{:.0} KiB, {:.0} bytes per ask",
        pipeline.pending_asks(),
        after - before,
        (after - before) * 1024.0 / n as f64
    );
}
