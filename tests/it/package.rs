//! `ecp package`: byte-identical archives from different folders and
//! mtimes, archives that the system `tar` and `unzip` extract into a tree
//! whose `dist/main` serves MCP, refusals that leave nothing behind, a
//! manifest-only extension, and `--binary`/`--target`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, SystemTime},
};

use rmcp::{ServiceExt, transport::TokioChildProcess};

use crate::cli::{ecp, ecp_new, files_under, prebuilt, relative};
use serde_json::Value;

fn new_extension(parent: &Path, extra: &[&str]) -> PathBuf {
    let dir = parent.join("acme-context");
    let output = ecp_new(&dir, extra);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir
}

/// A generated remote extension: a manifest-only one.
fn remote_extension(parent: &Path) -> PathBuf {
    new_extension(
        parent,
        &[
            "--template",
            "remote",
            "--endpoint",
            "https://context.acme.dev/mcp",
        ],
    )
}

fn package(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["package", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    ecp(&args)
}

fn succeed(output: Output) -> String {
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Every file under `root` (relative) with its permission bits.
fn tree_with_modes(root: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    files_under(root)
        .iter()
        .map(|file| {
            let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
            (relative(root, file), mode)
        })
        .collect()
}

/// Sets every file's mtime under `root` to `when`.
fn touch_all(root: &Path, when: SystemTime) {
    for file in files_under(root) {
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
}

async fn assert_serves_tools_list(main: &Path) {
    let mut command = tokio::process::Command::new(main);
    command
        .env("ACME_CONTEXT_BASE_URL", "http://127.0.0.1:9")
        .env("ACME_CONTEXT_TOKEN", "unused");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(),
        ["context_search"]
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packages_are_reproducible_and_extract_into_a_working_extension() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let one = new_extension(first.path(), &[]);
    let two = new_extension(second.path(), &[]);
    touch_all(
        &one,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000),
    );
    touch_all(&two, SystemTime::now());

    // One build; the second folder packages that build's binary
    // (`--binary`), so what is compared here is the archive writer (and the
    // staging), across folders and mtimes. That two folders build the same binary is the
    // provenance test's (`builds_are_reproducible_and_a_rebuild_proves_it`).
    let summary = succeed(package(&one, &[]));
    assert!(
        summary.contains("Packaged acme-context 0.1.0 for linux.x64"),
        "{summary}"
    );
    let built = tempfile::tempdir().unwrap();
    let tar = Command::new("tar")
        .arg("xzf")
        .arg(one.join("dist/linux.x64.acme-context.tar.gz"))
        .arg("-C")
        .arg(built.path())
        .status()
        .unwrap();
    assert!(tar.success());
    succeed(package(
        &two,
        &["--binary", built.path().join("dist/main").to_str().unwrap()],
    ));
    for name in [
        "linux.x64.acme-context.tar.gz",
        "linux.x64.acme-context.zip",
        "SHA256SUMS",
    ] {
        let a = std::fs::read(one.join("dist").join(name)).unwrap();
        let b = std::fs::read(two.join("dist").join(name)).unwrap();
        assert!(a == b, "{name} differs between two runs");
    }
    let sums = std::fs::read_to_string(one.join("dist/SHA256SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 2);
    assert_the_tool_surface_is_pinned(&one, &two);
    assert!(
        sums.lines()
            .all(|l| l.len() == 64 + 2 + l.split("  ").nth(1).unwrap().len())
    );

    // The system tools extract both into the same tree, modes included.
    let expected = vec![
        ("README.md".to_owned(), 0o644),
        ("dist/main".to_owned(), 0o755),
        ("qwen-extension.json".to_owned(), 0o644),
    ];
    let out = tempfile::tempdir().unwrap();
    let untarred = out.path().join("tar");
    let unzipped = out.path().join("zip");
    std::fs::create_dir_all(&untarred).unwrap();
    std::fs::create_dir_all(&unzipped).unwrap();
    let tar = Command::new("tar")
        .arg("xzf")
        .arg(one.join("dist/linux.x64.acme-context.tar.gz"))
        .arg("-C")
        .arg(&untarred)
        .status()
        .unwrap();
    assert!(tar.success());
    let unzip = Command::new("unzip")
        .arg("-q")
        .arg(one.join("dist/linux.x64.acme-context.zip"))
        .arg("-d")
        .arg(&unzipped)
        .status()
        .expect("unzip is installed (CI installs it)");
    assert!(unzip.success());
    assert_eq!(tree_with_modes(&untarred), expected);
    assert_eq!(tree_with_modes(&unzipped), expected);
    assert_serves_tools_list(&untarred.join("dist/main")).await;
    assert_serves_tools_list(&unzipped.join("dist/main")).await;

    // Entry times are the documented constant (1980-01-01).
    let listing = Command::new("tar")
        .args(["tvzf"])
        .arg(one.join("dist/linux.x64.acme-context.tar.gz"))
        .output()
        .unwrap();
    let listing = String::from_utf8(listing.stdout).unwrap();
    assert!(
        listing
            .lines()
            .all(|l| l.contains("0/0") && l.contains("1980-01-01")),
        "{listing}"
    );
}

/// `tools.lock`: written by both runs alike, a subject of the statement,
/// and what `ecp check --lock` holds the archive to.
fn assert_the_tool_surface_is_pinned(one: &Path, two: &Path) {
    let lock = std::fs::read(one.join("dist/tools.lock")).unwrap();
    assert_eq!(lock, std::fs::read(two.join("dist/tools.lock")).unwrap());
    let statement: serde_json::Value = serde_json::from_slice(
        &std::fs::read(one.join("dist/provenance.linux.x64.intoto.json")).unwrap(),
    )
    .unwrap();
    let subject = (statement["subject"].as_array().unwrap().iter())
        .find(|s| s["name"] == "tools.lock")
        .unwrap_or_else(|| panic!("no tools.lock subject: {statement:#}"));
    assert_eq!(subject["digest"]["sha256"], ecp::digest::sha256(&lock));
    let checked = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", "--format", "json", "--lock"])
        .arg(one.join("dist/tools.lock"))
        .arg(one.join("dist/linux.x64.acme-context.tar.gz"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    let locked = (report["checks"].as_array().unwrap().iter())
        .find(|c| c["id"] == "tools-locked")
        .unwrap();
    assert_eq!(locked["status"], "pass", "{report:#}");
}

fn archives_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn binary_and_target_name_the_archives() {
    let temp = tempfile::tempdir().unwrap();
    let dir = new_extension(temp.path(), &[]);
    let binary = prebuilt(temp.path());
    let out = temp.path().join("out");
    let json = succeed(package(
        &dir,
        &[
            "--binary",
            binary.to_str().unwrap(),
            "--target",
            "aarch64-apple-darwin",
            "--out-dir",
            out.to_str().unwrap(),
            "--json",
        ],
    ));
    let document: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(document["platform"], "darwin.arm64");
    assert_eq!(document["files"][1]["name"], "dist/main");
    assert_eq!(document["files"][1]["mode"], "0755");
    assert_eq!(
        archives_in(&out),
        [
            "SHA256SUMS",
            "darwin.arm64.acme-context.tar.gz",
            "darwin.arm64.acme-context.zip",
            "provenance.darwin.arm64.intoto.json",
        ]
    );
    // The prebuilt file is shipped as is.
    let unpacked = temp.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    assert!(
        Command::new("tar")
            .arg("xzf")
            .arg(out.join("darwin.arm64.acme-context.tar.gz"))
            .arg("-C")
            .arg(&unpacked)
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(
        std::fs::read(unpacked.join("dist/main")).unwrap(),
        std::fs::read(&binary).unwrap()
    );

    // Windows targets ship dist/main.exe; only the formats asked for; a
    // second target packaged into the same folder adds its lines to the
    // one SHA256SUMS.
    succeed(package(
        &dir,
        &[
            "--binary",
            binary.to_str().unwrap(),
            "--target",
            "x86_64-pc-windows-msvc",
            "--format",
            "zip",
            "--out-dir",
            out.to_str().unwrap(),
        ],
    ));
    assert_eq!(
        archives_in(&out),
        [
            "SHA256SUMS",
            "darwin.arm64.acme-context.tar.gz",
            "darwin.arm64.acme-context.zip",
            "provenance.darwin.arm64.intoto.json",
            "provenance.win32.x64.intoto.json",
            "win32.x64.acme-context.zip",
        ]
    );
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).unwrap();
    let listed: Vec<&str> = sums.lines().map(|l| &l[66..]).collect();
    assert_eq!(
        listed,
        [
            "darwin.arm64.acme-context.tar.gz",
            "darwin.arm64.acme-context.zip",
            "win32.x64.acme-context.zip"
        ]
    );
    // The same as sha256sum says, in its own format.
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let listing = Command::new("unzip")
        .arg("-l")
        .arg(out.join("win32.x64.acme-context.zip"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listing.stdout).contains("dist/main.exe"));

    let output = package(
        &dir,
        &[
            "--binary",
            binary.to_str().unwrap(),
            "--target",
            "riscv64gc-unknown-none-elf",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unsupported target"));
}

#[test]
fn a_manifest_only_extension_gets_one_archive_per_platform() {
    let temp = tempfile::tempdir().unwrap();
    let dir = remote_extension(temp.path());
    // A sums file ecp 0.2 left for an archive of this name goes.
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    std::fs::write(dir.join("dist/linux.acme-context.tar.gz.sha256"), "x").unwrap();
    let output = package(&dir, &[]);
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("linux.acme-context.tar.gz.sha256: its name starts with a platform prefix"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    succeed(output);
    let names = [
        "darwin.acme-context.tar.gz",
        "linux.acme-context.tar.gz",
        "win32.acme-context.tar.gz",
    ];
    let mut expected = vec!["SHA256SUMS"];
    expected.extend(&names[..2]);
    expected.push("provenance.intoto.json");
    expected.push(names[2]);
    assert_eq!(archives_in(&dir.join("dist")), expected);
    // The same bytes under each platform's name.
    let bytes: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(dir.join("dist").join(n)).unwrap())
        .collect();
    assert!(bytes.windows(2).all(|w| w[0] == w[1]));
    // The folder is a release Qwen resolves on every platform.
    let lint = ecp(&[
        "lint",
        dir.join("dist").to_str().unwrap(),
        "--deny-warnings",
        "--release-tag",
        "v0.1.0",
    ]);
    assert!(
        lint.status.success(),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(dir.join("dist/linux.acme-context.tar.gz"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listing.stdout),
        "README.md\nqwen-extension.json\n"
    );
}

/// A run that fails leaves the extension folder as it was: the client
/// manifests `--clients` wrote before lint refused the extension are put
/// back (a Gemini file to its own bytes, a Claude plugin removed with the
/// folder it made), and no output folder is left behind.
#[test]
fn a_failed_package_leaves_the_folder_byte_identical() {
    let temp = tempfile::tempdir().unwrap();
    let dir = remote_extension(temp.path());
    // A lint error (`trust`), found only after the client files are written.
    let path = dir.join("qwen-extension.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["mcpServers"]["acme-context"]["trust"] = Value::Bool(true);
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    std::fs::write(
        dir.join("gemini-extension.json"),
        b"{\"kept\": \"as it was\"}\n",
    )
    .unwrap();
    let before = contents_under(&dir);
    let output = package(&dir, &["--clients", "gemini,claude"]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("put back"), "{stderr}");
    assert_eq!(contents_under(&dir), before, "{stderr}");
    assert!(!dir.join(".claude-plugin").exists() && !dir.join("dist").exists());
}

/// Sets `[package.metadata.ecp] include` of a generated extension.
fn set_include(dir: &Path, include: &str) {
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        cargo.replace("include = []", &format!("include = {include}")),
    )
    .unwrap();
}

/// Damages a freshly generated extension.
type Breakage = fn(&Path);

#[test]
fn refusals_are_clear_and_leave_no_archive() {
    let temp = tempfile::tempdir().unwrap();
    let binary = prebuilt(temp.path());
    let binary = binary.to_str().unwrap();

    let cases: Vec<(&str, Breakage, &str)> = vec![
        (
            "symlink",
            |dir: &Path| {
                std::fs::remove_file(dir.join("README.md")).unwrap();
                std::os::unix::fs::symlink("/etc/hostname", dir.join("README.md")).unwrap();
            },
            "refusing to package README.md: it is a symlink",
        ),
        (
            "env",
            |dir: &Path| {
                std::fs::write(dir.join(".env"), "ACME_CONTEXT_TOKEN=secret").unwrap();
                set_include(dir, r#"[".env"]"#);
            },
            "refusing to package .env: it is an environment or key file",
        ),
        (
            "outside",
            |dir: &Path| {
                set_include(dir, r#"["../secrets.txt"]"#);
            },
            "it is outside the extension folder",
        ),
        (
            "linked-folder",
            |dir: &Path| {
                std::os::unix::fs::symlink("/etc", dir.join("docs")).unwrap();
                set_include(dir, r#"["docs/"]"#);
            },
            "it is a symlink",
        ),
        (
            "linked-parent",
            |dir: &Path| {
                std::os::unix::fs::symlink("/etc", dir.join("docs")).unwrap();
                set_include(dir, r#"["docs/hostname"]"#);
            },
            "the folder `docs` on its way is a symlink",
        ),
        (
            "linked-context-folder",
            |dir: &Path| {
                std::os::unix::fs::symlink("/etc", dir.join("ctx")).unwrap();
                let manifest = std::fs::read_to_string(dir.join("qwen-extension.json")).unwrap();
                std::fs::write(
                    dir.join("qwen-extension.json"),
                    manifest.replacen(
                        "\"version\"",
                        "\"contextFileName\": \"ctx/hostname\", \"version\"",
                        1,
                    ),
                )
                .unwrap();
            },
            "the folder `ctx` on its way is a symlink",
        ),
        (
            "fifo",
            |dir: &Path| {
                std::fs::create_dir(dir.join("data")).unwrap();
                let fifo = dir.join("data/pipe");
                assert!(
                    Command::new("mkfifo")
                        .arg(&fifo)
                        .status()
                        .unwrap()
                        .success()
                );
                set_include(dir, r#"["data/"]"#);
            },
            "it is a FIFO, socket or device",
        ),
        (
            "lint",
            |dir: &Path| {
                let manifest = std::fs::read_to_string(dir.join("qwen-extension.json")).unwrap();
                std::fs::write(
                    dir.join("qwen-extension.json"),
                    manifest.replace("\"timeout\": 8000,", "\"timeout\": 8000, \"trust\": true,"),
                )
                .unwrap();
            },
            "error[trust]",
        ),
    ];
    for (name, break_it, message) in cases {
        let parent = temp.path().join(name);
        std::fs::create_dir(&parent).unwrap();
        let dir = new_extension(&parent, &[]);
        break_it(&dir);
        let output = package(&dir, &["--binary", binary]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(message), "{name}: {stderr}");
        let left: Vec<String> = archives_in(&dir.join("dist"));
        assert!(left.is_empty(), "{name}: left {left:?}");
    }

    // A missing prebuilt binary.
    let parent = temp.path().join("missing-binary");
    std::fs::create_dir(&parent).unwrap();
    let dir = new_extension(&parent, &[]);
    let output = package(&dir, &["--binary", "/nonexistent/main"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("the entry point /nonexistent/main cannot be packaged")
    );
    assert!(archives_in(&dir.join("dist")).is_empty());
}

/// Every file under `root`, relative, with its bytes.
fn contents_under(root: &Path) -> Vec<(String, Vec<u8>)> {
    files_under(root)
        .iter()
        .map(|file| (relative(root, file), std::fs::read(file).unwrap()))
        .collect()
}

/// Arranges a received folder: (the extension, a folder outside it).
type Arrange = fn(&Path, &Path);

/// Issue 45, finding 4: an output folder, a client folder or one output
/// that is a link (or a FIFO) in a received folder: `ecp package` refuses
/// before it writes or removes anything (exit 2), and the link's target
/// keeps what it held, old archive and sums included.
#[test]
fn package_writes_and_removes_nothing_through_a_link_in_the_folder() {
    use std::os::unix::fs::symlink;
    let temp = tempfile::tempdir().unwrap();
    let binary = prebuilt(temp.path());
    let binary = binary.to_str().unwrap();
    let sums = format!("{}  linux.arm64.acme-context.tar.gz\n", "ab".repeat(32));
    let cases: Vec<(&str, Arrange, &[&str], &str)> = vec![
        (
            "linked-dist",
            |dir, elsewhere| symlink(elsewhere, dir.join("dist")).unwrap(),
            &[],
            "dist is a symlink",
        ),
        (
            "linked-plugin",
            |dir, elsewhere| symlink(elsewhere, dir.join(".claude-plugin")).unwrap(),
            &["--clients", "claude"],
            ".claude-plugin is a symlink",
        ),
        (
            "linked-archive",
            |dir, elsewhere| {
                std::fs::create_dir(dir.join("dist")).unwrap();
                symlink(
                    elsewhere.join("linux.x64.acme-context.tar.gz"),
                    dir.join("dist/linux.x64.acme-context.tar.gz"),
                )
                .unwrap();
            },
            &[],
            "linux.x64.acme-context.tar.gz is a symlink",
        ),
        (
            "linked-sums",
            |dir, elsewhere| {
                std::fs::create_dir(dir.join("dist")).unwrap();
                symlink(elsewhere.join("SHA256SUMS"), dir.join("dist/SHA256SUMS")).unwrap();
            },
            &[],
            "SHA256SUMS is a symlink",
        ),
        (
            "fifo-provenance",
            |dir, _| {
                std::fs::create_dir(dir.join("dist")).unwrap();
                let fifo = dir.join("dist/provenance.linux.x64.intoto.json");
                assert!(
                    Command::new("mkfifo")
                        .arg(&fifo)
                        .status()
                        .unwrap()
                        .success()
                );
            },
            &[],
            "provenance.linux.x64.intoto.json is a FIFO",
        ),
    ];
    for (name, arrange, extra, message) in cases {
        let parent = temp.path().join(name);
        std::fs::create_dir(&parent).unwrap();
        let dir = new_extension(&parent, &[]);
        let elsewhere = parent.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("linux.x64.acme-context.tar.gz"), "old").unwrap();
        std::fs::write(elsewhere.join("SHA256SUMS"), &sums).unwrap();
        arrange(&dir, &elsewhere);
        // An earlier run's archive in a real dist/ stays.
        if std::fs::symlink_metadata(dir.join("dist")).is_ok_and(|m| m.is_dir()) {
            std::fs::write(dir.join("dist/linux.x64.acme-context.zip"), "earlier").unwrap();
        }
        let before = contents_under(&elsewhere);
        let mut args = vec!["--binary", binary, "--target", "x86_64-unknown-linux-gnu"];
        args.extend_from_slice(extra);
        let output = package(&dir, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains("error: ") && stderr.contains(message) && stderr.contains("= help: "),
            "{name}: {stderr}"
        );
        assert_eq!(contents_under(&elsewhere), before, "{name}: {stderr}");
        if std::fs::symlink_metadata(dir.join("dist")).is_ok_and(|m| m.is_dir()) {
            assert_eq!(
                std::fs::read(dir.join("dist/linux.x64.acme-context.zip")).unwrap(),
                b"earlier",
                "{name}"
            );
            let written: Vec<String> = std::fs::read_dir(dir.join("dist"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("acme-context.tar.gz") && !n.starts_with("linux.x64"))
                .collect();
            assert!(written.is_empty(), "{name}: {written:?}");
        }
    }

    // `--out-dir` that is itself a link: refused the same way; the folder
    // that holds it is the user's own (a link there is followed).
    let parent = temp.path().join("linked-out");
    std::fs::create_dir(&parent).unwrap();
    let dir = new_extension(&parent, &[]);
    let elsewhere = parent.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let out = parent.join("out");
    symlink(&elsewhere, &out).unwrap();
    let output = package(
        &dir,
        &["--binary", binary, "--out-dir", out.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("out is a symlink"), "{stderr}");
    assert!(contents_under(&elsewhere).is_empty(), "{stderr}");
    let users_link = parent.join("users-link");
    symlink(&elsewhere, &users_link).unwrap();
    let through = users_link.join("release");
    let output = package(
        &dir,
        &["--binary", binary, "--out-dir", through.to_str().unwrap()],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(elsewhere.join("release/SHA256SUMS").is_file());
}
