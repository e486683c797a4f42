//! The PyPI tools of `tests/ci-tools.txt` in a venv at `target/ci-tools`,
//! installed on first use as `.ci/run` installs them. A venv's scripts
//! name its own path, so it is built in place; a copy of the list written
//! last marks a finished install of exactly that list, and anything else
//! there (a half-finished or older install) is removed and made again.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `target/ci-tools/bin/NAME`, installed first when needed.
pub fn tool(name: &str) -> PathBuf {
    let _guard = INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let list = std::fs::read_to_string(Path::new(ROOT).join("tests/ci-tools.txt")).unwrap();
    let root = Path::new(ROOT).join("target/ci-tools");
    let installed = root.join("bin").join(name);
    let marker = root.join(".ecp-installed");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == list) && installed.is_file() {
        return installed;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let venv = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&root)
        .status()
        .expect("python3 runs (the test suite needs it)");
    assert!(
        venv.success(),
        "python3 -m venv failed (Debian: apt-get install python3-venv)"
    );
    let pip = Command::new(root.join("bin/pip"))
        .args(["install", "--quiet", "-r"])
        .arg(Path::new(ROOT).join("tests/ci-tools.txt"))
        .status()
        .unwrap();
    assert!(pip.success(), "pip install -r tests/ci-tools.txt failed");
    std::fs::write(&marker, &list).unwrap();
    assert!(
        installed.is_file(),
        "{} after installing tests/ci-tools.txt",
        installed.display()
    );
    installed
}
