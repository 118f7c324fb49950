//! Feeds arbitrary bytes to the registry's pickle reader (Wise Agents' Redis values), writes
//! back what read, and appends to what read as a list: an error is fine, a panic is not.
#![no_main]

mod pickles_input;

libfuzzer_sys::fuzz_target!(|data: &[u8]| pickles_input::run(data));
