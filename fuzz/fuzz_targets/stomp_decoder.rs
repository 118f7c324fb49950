//! Feeds arbitrary bytes, split at an arbitrary point, to the STOMP decoder: it must return
//! frames, "incomplete" or an error, and never panic or run past its limits.
#![no_main]

mod stomp_decoder_input;

libfuzzer_sys::fuzz_target!(|data: &[u8]| stomp_decoder_input::run(data));
