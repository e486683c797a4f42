//! Pinned npm packages the tests need (schemas, peers), installed once from
//! the npm registry into `target/npm-cache/`.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Mutex,
};

static INSTALL: Mutex<()> = Mutex::new(());

/// The installed package folder of `name@version`, installing it first if
/// needed (atomically: a half-finished install is never reused).
pub fn package(name: &str, version: &str) -> PathBuf {
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-cache");
    let root = cache.join(format!("{}@{version}", name.replace('/', "+")));
    let installed = root.join("node_modules").join(name);
    if installed.join("package.json").is_file() {
        return installed;
    }
    let staging = cache.join(format!("{}@{version}.partial", name.replace('/', "+")));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).unwrap();
    let status = Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&staging)
        .arg(format!("{name}@{version}"))
        .status()
        .expect("npm runs (Node.js 20 with npm is required by the test suite)");
    assert!(status.success(), "npm install {name}@{version} failed");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::rename(&staging, &root).unwrap();
    installed
}

/// Runs `node -e script package`, with `input` as JSON on its stdin; what
/// it prints on stdout, read as JSON.
pub fn node_json<T: serde::de::DeserializeOwned>(
    script: &str,
    package: &Path,
    input: &impl serde::Serialize,
) -> T {
    use std::io::Write;
    let mut child = Command::new("node")
        .args(["-e", script])
        .arg(package)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(input).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "node -e failed");
    serde_json::from_slice(&output.stdout).unwrap()
}
