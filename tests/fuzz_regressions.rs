//! Every input kept in `fuzz/regressions/<target>/` (the fuzz runs' minimised corpora and any
//! crash input) goes through the same code as its cargo-fuzz target, without libFuzzer: the
//! targets' bodies are these `#[path]` modules. None may panic or fail the targets' asserts.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

#[path = "../fuzz/fuzz_targets/envelopes_input.rs"]
mod envelopes;
#[path = "../fuzz/fuzz_targets/pickles_input.rs"]
mod pickles;
#[path = "../fuzz/fuzz_targets/pipeline_input.rs"]
mod pipeline;
#[path = "../fuzz/fuzz_targets/stomp_decoder_input.rs"]
mod stomp_decoder;

/// Runs every file of `fuzz/regressions/<target>/`, in name order, through `run`; there must
/// be at least `at_least` of them (a folder lost or emptied fails).
fn replay(target: &str, at_least: usize, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions").join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<_> = entries.map(|entry| entry.unwrap().path()).collect();
    files.sort();
    let count = files.len();
    assert!(count >= at_least, "{}: {count} inputs, expected at least {at_least}", dir.display());
    for file in files {
        let data = std::fs::read(&file).unwrap();
        // A stack overflow aborts without a panic message: the last name shown is the input.
        eprintln!("replaying {}", file.display());
        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
            panic!("{} panicked (its message is above)", file.display());
        }
    }
}

#[test]
fn the_stomp_decoder_regressions_decode_without_panic() {
    replay("stomp_decoder", 200, stomp_decoder::run);
}

#[test]
fn the_envelope_regressions_decode_and_encode_without_panic() {
    replay("envelopes", 4_000, envelopes::run);
}

#[test]
fn the_pipeline_regressions_pass_through_one_pipeline_without_panic() {
    replay("pipeline", 4_000, pipeline::run);
}

#[test]
fn the_pickle_regressions_read_write_and_append_without_panic() {
    replay("pickles", 700, pickles::run);
}
