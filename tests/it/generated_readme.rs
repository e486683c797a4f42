//! Every command block of a generated extension's README, run as written
//! in the folder `ecp new` made (the Quickstart tests call this after their
//! own blocks, so the builds are warm), with only the documented
//! placeholders of the remote-service block replaced: the JWKS URL by a
//! key set file (`--jwks` takes either), and `0.0.0.0:8080` by a loopback
//! port, since the test may not listen beyond loopback. A block that would
//! reach outside this machine is not run, and must be one of [`ELSEWHERE`],
//! each proven where it says.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

/// Blocks not run here, by a line they hold, with where they are proven.
const ELSEWHERE: &[(&str, &str)] = &[
    (
        "qwen extensions install <owner>/<repo> --consent",
        "GitHub: tests/e2e/release.rs installs owner/repo from a release stand-in with the real Qwen Code",
    ),
    (
        "ecp new {name}-adapter --template local",
        "the local template's own build and --listen block, run by the local README here",
    ),
    (
        "target/release/{name}-adapter --listen",
        "the adapter built by the block above; the local README's --listen block is run here",
    ),
];

/// The ```sh blocks of `readme`, in order.
pub fn sh_blocks(readme: &str) -> Vec<String> {
    readme
        .split("```sh\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap_or("").to_owned())
        .collect()
}

/// Runs every block of `dir/README.md` (see the module doc); returns the
/// number of blocks run.
pub fn run_every_block(dir: &Path, name: &str) -> usize {
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let blocks = sh_blocks(&readme);
    assert!(!blocks.is_empty(), "no ```sh block in {}", dir.display());
    let mut ran = 0;
    for block in &blocks {
        let elsewhere = ELSEWHERE
            .iter()
            .find(|(line, _)| block.contains(&line.replace("{name}", name)));
        if let Some((_, proven)) = elsewhere {
            eprintln!("not run here ({proven}):\n{block}");
            continue;
        }
        if block.contains("--listen") {
            serves(dir, block);
        } else {
            let output = bash(dir, block).output().unwrap();
            assert!(
                output.status.success(),
                "a block of {}/README.md failed ({}):\n{block}\n--- stdout\n{}\n--- stderr\n{}",
                dir.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        ran += 1;
    }
    ran
}

/// bash running `block` in `dir` with the built ecp first on PATH, a HOME
/// of its own (no Qwen Code on this machine is touched), the shared target
/// folder (`target/` in the folder leads there; `cargo build --release`
/// with `ecp package`'s flags, so that it reuses that build) and the shared
/// npm cache.
fn bash(dir: &Path, block: &str) -> Command {
    let target = crate::cli::generated_target();
    if dir.join("Cargo.toml").is_file() && !dir.join("target").exists() {
        std::os::unix::fs::symlink(&target, dir.join("target")).unwrap();
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ecp")).parent().unwrap();
    let home = dir.join(".readme-home");
    std::fs::create_dir_all(&home).unwrap();
    let real_home = std::env::var("HOME").unwrap_or_default();
    let mut command = Command::new("bash");
    command
        .args(["-c", &format!("set -euo pipefail\n{block}")])
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("HOME", &home)
        .env(
            "CARGO_HOME",
            std::env::var("CARGO_HOME").unwrap_or(format!("{real_home}/.cargo")),
        )
        .env(
            "RUSTUP_HOME",
            std::env::var("RUSTUP_HOME").unwrap_or(format!("{real_home}/.rustup")),
        )
        .env("EDITOR", "true")
        .env("CARGO_TARGET_DIR", &target)
        .envs(crate::cli::LIGHT_RELEASE)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("RUSTFLAGS")
        .env("npm_config_cache", crate::cli::npm_cache())
        .stdin(Stdio::null());
    // A plain release build gets `ecp package`'s flags, so that it is that
    // build. Only there: every other cargo run (cargo test, `ecp check .`'s
    // dev build) keeps the flags every other test builds with, or the
    // shared target folder would rebuild its dependencies each time one
    // kind of run follows the other.
    let release_build = block.lines().any(|line| {
        let command = line.split('#').next().unwrap_or_default().trim_start();
        command.starts_with("cargo build --release")
    });
    if release_build {
        command.env(
            "CARGO_ENCODED_RUSTFLAGS",
            ecp::extension::build::reproducible_rustflags(dir, &target).join("\x1f"),
        );
    }
    command
}

/// The remote-service block: started (its build first, when it has one),
/// it must log that it listens and still be serving; then its process
/// group is killed.
fn serves(dir: &Path, block: &str) {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let signer = crate::jwt::Signer::es256("readme");
    let jwks = dir.join(".readme-jwks.json");
    std::fs::write(&jwks, crate::jwt::jwks(&[&signer])).unwrap();
    let block = block
        .replace(
            "https://auth.example.com/.well-known/jwks.json",
            jwks.to_str().unwrap(),
        )
        .replace("0.0.0.0:8080", "127.0.0.1:0");
    let mut child = bash(dir, &block)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = String::new();
    let listening = loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(line) => {
                said.push_str(&line);
                said.push('\n');
                if line.contains("listening on http://127.0.0.1:") {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    std::thread::sleep(Duration::from_millis(300));
    let running = child.try_wait().unwrap().is_none();
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    assert!(
        listening && running,
        "the --listen block of {}/README.md did not keep serving:\n{block}\n{said}",
        dir.display()
    );
}

#[test]
fn the_remote_templates_readme_runs_as_written() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context-remote");
    crate::cli::ecp_new_remote(&dir, "acme-context-remote");
    assert_eq!(run_every_block(&dir, "acme-context-remote"), 1);
    assert!(dir.join("dist/linux.acme-context-remote.tar.gz").is_file());
}
