//! Feeds arbitrary messages to the whole pipeline as `config/bridge.toml` builds it, one
//! after another on one pipeline (asks, answers and streams build up state between them): a
//! message becomes frames to publish, is held or absorbed, or is an error; never a panic.
#![no_main]

mod pipeline_input;

libfuzzer_sys::fuzz_target!(|data: &[u8]| pipeline_input::run(data));
