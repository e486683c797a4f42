//! The fuzz target of `fuzz/harness/lint_clients.rs`, where its input is
//! described; `cargo test` replays its seeds through the same function.
#![no_main]

#[path = "../harness/lint_clients.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
