//! Every fuzz target's body, one module each: the fuzz targets in
//! `fuzz/fuzz_targets/` call them under libFuzzer, and `tests/it/fuzz_seeds.rs`
//! replays `fuzz/seeds/` through them on stable in `cargo test`.

pub mod check_replay;
pub mod declared_pattern;
pub mod http_body;
pub mod http_mcp;
pub mod jsonrpc_stdio;
pub mod jwt;
pub mod lint_archive;
pub mod lint_clients;
pub mod lint_manifest;
pub mod mem0_config;
pub mod outside_text;
pub mod provenance;
pub mod qwen_files;
pub mod release_assets;

/// A target's body: one input.
pub type Body = fn(&[u8]);

/// Each target by its name (the folder of its seeds).
pub const TARGETS: [(&str, Body); 14] = [
    ("check_replay", check_replay::run),
    ("declared_pattern", declared_pattern::run),
    ("http_body", http_body::run),
    ("http_mcp", http_mcp::run),
    ("jsonrpc_stdio", jsonrpc_stdio::run),
    ("jwt", jwt::run),
    ("lint_archive", lint_archive::run),
    ("lint_clients", lint_clients::run),
    ("lint_manifest", lint_manifest::run),
    ("mem0_config", mem0_config::run),
    ("outside_text", outside_text::run),
    ("provenance", provenance::run),
    ("qwen_files", qwen_files::run),
    ("release_assets", release_assets::run),
];
