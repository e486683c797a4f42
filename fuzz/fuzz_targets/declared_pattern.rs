//! The fuzz target of `fuzz/harness/declared_pattern.rs`, where its input
//! is described; `cargo test` replays its seeds through the same function.
#![no_main]

#[path = "../harness/declared_pattern.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
