//! Running the built `ecp` binary from the tests.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
};

/// Where generated crates are built: one folder shared by every test.
pub fn generated_target() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/generated")
}

/// The example corpus `ecp serve --fixture` tests serve.
pub fn corpus() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("templates/corpus/example.jsonl")
        .display()
        .to_string()
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

/// `ecp new acme-context --yes --dir DIR EXTRA...`.
pub fn ecp_new(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "new",
        "acme-context",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ecp(&args)
}

/// Every file under `root` (not folders), sorted.
pub fn files_under(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The path of `file` relative to `root`, `/`-separated.
pub fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}
