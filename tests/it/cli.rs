//! Running the built `ecp` binary from the tests.

use std::{
    io::{Read, Write},
    path::Path,
    process::{Child, Command, ExitStatus, Output, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// Where generated crates are built: one folder shared by every test.
pub fn generated_target() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/generated")
}

/// The release profile these tests build generated crates with: the
/// template's own (`opt-level`, `strip`) without its fat LTO and single
/// codegen unit. Measured 2026-12-07 on 2 cores, a release build of an
/// edited crate took 40 s with them and 11 s without, and the suite makes
/// a few dozen; no test here is about what LTO does to a binary. The
/// shipped profile's reproducibility is proven as shipped
/// (`provenance::builds_are_reproducible_and_a_rebuild_proves_it`, with
/// [`ecp_shipped_profile`]).
pub const LIGHT_RELEASE: [(&str, &str); 2] = [
    ("CARGO_PROFILE_RELEASE_LTO", "off"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
];

/// Points a command that builds generated crates at the shared target
/// folder, with the tests' release profile ([`LIGHT_RELEASE`]).
pub fn build_generated(command: &mut Command) -> &mut Command {
    command
        .env("CARGO_TARGET_DIR", generated_target())
        .envs(LIGHT_RELEASE)
}

/// `cargo build` (the dev profile, whose dependencies every generated
/// crate's `cargo test` shares) of the generated crate in `dir`, into the
/// shared target folder; the executable named `bin`.
pub fn cargo_dev_build(dir: &Path, bin: &str) -> std::path::PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet", "--bin", bin])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", generated_target())
        .status()
        .unwrap();
    assert!(status.success(), "cargo build failed in {}", dir.display());
    generated_target().join("debug").join(bin)
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
/// An `ecp new ... --dir DIR` has its vendored runtime dated as below
/// ([`share_vendored_runtime`]).
pub fn ecp(args: &[&str]) -> Output {
    let output = build_generated(&mut Command::new(env!("CARGO_BIN_EXE_ecp")))
        .args(args)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if args.first() == Some(&"new")
        && output.status.success()
        && let Some(at) = args.iter().position(|a| *a == "--dir")
    {
        share_vendored_runtime(Path::new(args[at + 1]));
    }
    output
}

/// Dates every file of the runtime `ecp new` vendored into `dir` at the
/// time the `ecp` under test was built, so that the suite's many generated
/// crates share one build of it in the shared target folder. Cargo
/// passes the vendored sources to rustc by relative paths and names the
/// artifact by the package (name, version, relative path), so crates made
/// in other folders reuse one artifact when its sources are no newer than
/// it; fresh sources (the moment of `ecp new`) made every crate compile
/// the runtime again: measured 2026-12-08, 13 s of a 14 s dev build of a
/// second crate, none once dated. Dated at the binary's build, never
/// earlier: a runtime an earlier `ecp` carried (the same version, other
/// bytes, while it is being changed) was built before this binary, so its
/// artifact stays older than these sources and is rebuilt.
pub fn share_vendored_runtime(dir: &Path) {
    let built = std::fs::metadata(env!("CARGO_BIN_EXE_ecp"))
        .and_then(|m| m.modified())
        .unwrap();
    let vendored = dir.join(ecp::scaffold::vendor::VENDOR_DIR);
    if !vendored.is_dir() {
        return;
    }
    for file in files_under(&vendored) {
        std::fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(built))
            .unwrap();
    }
}

/// [`ecp`] with the generated crate's release profile as it ships (fat
/// LTO, one codegen unit), for the test that proves it reproducible.
pub fn ecp_shipped_profile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(args)
        .env("CARGO_TARGET_DIR", generated_target())
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A small executable standing in for a build (`ecp package --binary`).
pub fn prebuilt(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("prebuilt-main");
    std::fs::write(&path, "#!/bin/sh\necho prebuilt\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    path
}

/// `ecp package DIR --out-dir OUT EXTRA...`, which must succeed.
pub fn package_into(dir: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "package",
        dir.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = ecp(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// npm's download cache, shared by every project the tests install.
pub fn npm_cache() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-cache/_npm")
}

/// `ecp new NAME --template remote --yes` for the endpoint
/// `https://context.acme.dev/mcp` (a real-looking one: no placeholder), in
/// `dir`; it must succeed.
pub fn ecp_new_remote(dir: &Path, name: &str) {
    let made = ecp(&[
        "new",
        name,
        "--template",
        "remote",
        "--yes",
        "--endpoint",
        "https://context.acme.dev/mcp",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
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

/// The first line a child writes to stderr (piped), read byte by byte so
/// that nothing after it is waited for.
pub fn first_stderr_line(child: &mut Child) -> String {
    let mut line = String::new();
    let mut stderr = child.stderr.take().unwrap();
    let mut byte = [0u8; 1];
    while stderr.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        line.push(byte[0] as char);
    }
    line
}

/// Runs `command_line` on a pseudo-terminal (util-linux `script`): for each
/// step, waits until `text` appears on the screen, then types `keys`.
/// Returns the exit status and everything the screen showed.
pub fn on_a_terminal(command_line: &str, steps: &[(&str, &str)]) -> (ExitStatus, String) {
    let mut child = Command::new("script")
        .args(["-qec", command_line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` provides the pseudo-terminal");
    let screen = Arc::new(Mutex::new(String::new()));
    let reader = {
        let screen = screen.clone();
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 1024];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                screen
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let mut seen = 0;
    for (text, keys) in steps {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let shown = screen.lock().unwrap().clone();
            if let Some(at) = shown[seen..].find(text) {
                seen += at + text.len();
                break;
            }
            assert!(Instant::now() < deadline, "no {text:?} in:\n{shown}");
            std::thread::sleep(Duration::from_millis(20));
        }
        stdin.write_all(keys.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    drop(stdin);
    reader.join().unwrap();
    let shown = screen.lock().unwrap().clone();
    (status, shown)
}

/// `program ARGS` (an adapter asked to `--listen` on loopback) reads
/// `ECP_NO_AUTH` with the words every adapter takes: 1, yes, ON serve
/// without OAuth, 0 asks for an authorization server, anything else is
/// refused before start (exit 2). `ecp serve` and a built `dist/main` are
/// both held to it.
pub fn assert_no_auth_words(program: &str, args: &[&str], env: &[(&str, &str)]) {
    for (value, listens) in [("1", true), ("yes", true), ("ON", true), ("0", false)] {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .env("ECP_NO_AUTH", value)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let first = first_stderr_line(&mut child);
        let _ = child.kill();
        let _ = child.wait();
        if listens {
            assert!(
                first.contains("\"event\":\"listening\"") && first.contains("\"auth\":\"none\""),
                "ECP_NO_AUTH={value}: {first}"
            );
        } else {
            assert!(
                first.contains("--authorization-server"),
                "ECP_NO_AUTH={value}: {first}"
            );
        }
    }
    let refused = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .env("ECP_NO_AUTH", "maybe")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}
