//! The fuzz target of `fuzz/harness/mem0_config.rs`, where its input is
//! described; `cargo test` replays its seeds through the same function.
#![no_main]

#[path = "../harness/mem0_config.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
