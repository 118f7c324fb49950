//! Feeds arbitrary bytes to each framework's decoder (Wise Agents YAML, fast path and full
//! parser; Civitas JSON and msgpack; VOX; PenguiFlow), then encodes what decoded into every
//! framework: an error is fine, a panic is not.
#![no_main]

mod envelopes_input;

libfuzzer_sys::fuzz_target!(|data: &[u8]| envelopes_input::run(data));
