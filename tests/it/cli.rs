//! Running the built `ecp` binary from the tests.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
};

/// Where generated crates are built: one folder shared by every test.
pub fn generated_target() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/generated")
}

/// Runs `ecp ARGS` with no stdin; builds it triggers go to the shared,
/// offline target folder, and archives get the documented default times.
pub fn ecp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(args)
        .env("CARGO_TARGET_DIR", generated_target())
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}
