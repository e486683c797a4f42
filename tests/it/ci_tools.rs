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

/// `scripts/setup.sh` (README's test command runs it before the tests, and
/// so does `.ci/run`) on a machine that has none of the Debian tools: as a
/// user without root or sudo it stops at once with one message naming the
/// packages and the command; as root without apt-get it says so; with
/// sudo, or as root with apt-get, it installs them (a dry run here says
/// the command it would run).
#[test]
fn setup_names_what_it_would_install_and_stops_when_it_cannot() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let link = |name: &str| {
        let real = which(name).unwrap_or_else(|| panic!("{name} is on PATH"));
        std::os::unix::fs::symlink(real, bin.join(name)).unwrap();
    };
    link("bash");
    link("dirname");
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let setup = || {
        let output = Command::new(Path::new(ROOT).join("scripts/setup.sh"))
            .env("PATH", &bin)
            .env("ECP_SETUP_DRY_RUN", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let packages = "nodejs npm unzip util-linux tinyproxy python3 openssl iproute2 git curl openssh-client shellcheck nginx-light caddy";

    // A user, no sudo.
    script("id", "echo 1000");
    let (code, said) = setup();
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("tinyproxy not found: Debian's tinyproxy is needed (the proxy tests"),
        "{said}"
    );
    assert!(
        said.contains(&format!("error: the tests need Debian's {packages}\n")),
        "{said}"
    );
    assert!(
        said.contains(&format!("= help: install them, then run the tests again: sudo apt-get update && sudo apt-get install -y {packages}\n")),
        "{said}"
    );
    // A user with sudo that needs no password.
    script("sudo", "[ \"$1\" = -n ] && exit 0; exit 1");
    script("apt-get", "exit 0");
    let (code, said) = setup();
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "would run: sudo apt-get update && sudo apt-get install -y {packages}"
        )),
        "{said}"
    );
    // Root without apt-get.
    std::fs::remove_file(bin.join("apt-get")).unwrap();
    script("id", "echo 0");
    let (code, said) = setup();
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("there is no apt-get here"), "{said}");
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// README's test command, as written, is what `.ci/run` runs.
#[test]
fn ci_runs_the_readme_test_command_as_written() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let block = readme.split("```sh\n").nth(1).unwrap();
    let line = block.lines().nth(1).unwrap();
    let command = line.split('#').next().unwrap().trim();
    assert!(command.starts_with("scripts/setup.sh"), "{command}");
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    assert!(ci.contains(&format!("'{command}'")), "{command}");
}
