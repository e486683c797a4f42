//! The fuzz target of `fuzz/harness/http_mcp.rs`, where its input is
//! described; `cargo test` replays its seeds through the same function.
#![no_main]

#[path = "../harness/http_mcp.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
