//! A provider engineer's first hour: README's quickstart run as written, and
//! what each first step says when something is missing (snapshots of the
//! exact messages), progress and stale archives of `ecp package`, and the
//! hint `ecp serve` gives on a terminal.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use ecp::check::upstream::{Reply, Upstream};

use crate::cli::ecp_new;

fn ecp_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ecp")
}

/// The ```sh blocks of README's "Quickstart" section, in order.
fn quickstart_blocks() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("\n## Quickstart\n")
        .nth(1)
        .expect("README has a Quickstart section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .split("```sh\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap_or("").to_owned())
        .collect()
}

/// README's quickstart, verbatim, in a temp folder: `ecp new`, `cargo
/// test`, `ecp lint`, `ecp package`, `ecp check .`, `ecp call . --fixture`.
/// The install line is the main job's (`cargo xtask demo` runs it).
#[test]
fn quickstart_runs_as_written() {
    let blocks = quickstart_blocks();
    assert_eq!(
        blocks.first().map(|b| b.trim()),
        Some("cargo install --locked --path ."),
        "the first Quickstart block installs ecp"
    );
    let script = blocks
        .get(1)
        .expect("a second block: the quickstart itself");
    assert!(script.contains("ecp new acme-context"), "{script}");
    let (temp, stdout, stderr) = run_block(script);
    assert!(
        stdout.contains("conforms to the External Context MCP Profile v1"),
        "{stdout}"
    );
    assert!(stdout.contains("\"id\": \"deploy-policy\""), "{stdout}");
    assert!(stderr.contains("ecp package: sums:"), "{stderr}");
    let dist = temp.path().join("acme-context/dist");
    assert!(dist.join("linux.x64.acme-context.tar.gz").is_file());
    // Then the generated README's own blocks, in the same folder.
    let ran =
        crate::generated_readme::run_every_block(&temp.path().join("acme-context"), "acme-context");
    assert!(ran >= 4, "{ran} blocks of the generated README ran");
}

/// One Quickstart block run by bash in a temp folder with the built ecp
/// first on PATH; it must succeed.
fn run_block(script: &str) -> (tempfile::TempDir, String, String) {
    let temp = tempfile::tempdir().unwrap();
    std::fs::write(
        temp.path().join("quickstart.sh"),
        format!("set -euo pipefail\n{script}"),
    )
    .unwrap();
    let bin_dir = Path::new(ecp_bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("quickstart.sh")
        .current_dir(temp.path())
        .env("PATH", path)
        .env("EDITOR", "true")
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .env("CARGO_NET_OFFLINE", "true")
        .env("npm_config_cache", crate::cli::npm_cache())
        .env_remove("ACME_CONTEXT_BASE_URL")
        .env_remove("ACME_CONTEXT_TOKEN")
        .env_remove("ACME_CONTEXT_TS_BASE_URL")
        .env_remove("ACME_CONTEXT_TS_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "the quickstart failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    (temp, stdout, stderr)
}

/// README's TypeScript quickstart, verbatim.
#[test]
fn the_typescript_quickstart_runs_as_written() {
    let blocks = quickstart_blocks();
    let script = blocks
        .get(2)
        .expect("a third block: the TypeScript quickstart");
    assert!(script.contains("--template local-ts"), "{script}");
    // A name of its own: both blocks can run in one folder.
    assert!(script.contains("ecp new acme-context-ts "), "{script}");
    let (temp, stdout, stderr) = run_block(script);
    assert!(
        stdout.contains("conforms to the External Context MCP Profile v1"),
        "{stdout}"
    );
    assert!(stdout.contains("\"id\": \"deploy-policy\""), "{stdout}");
    assert!(
        stderr.contains("ecp package: build: npm run build"),
        "{stderr}"
    );
    let release = temp.path().join("acme-context-ts/release");
    for platform in ["linux", "darwin", "win32"] {
        assert!(
            release
                .join(format!("{platform}.acme-context-ts.tar.gz"))
                .is_file()
        );
    }
    let ran = crate::generated_readme::run_every_block(
        &temp.path().join("acme-context-ts"),
        "acme-context-ts",
    );
    assert!(ran >= 2, "{ran} blocks of the generated README ran");
}

/// `ecp ARGS` in `dir` with extra variables: status, stdout and stderr in
/// one text, temp paths and the binary's path replaced.
fn said(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = Command::new(ecp_bin())
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .env("CARGO_NET_OFFLINE", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "exit: {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = dir.canonicalize().unwrap();
    text.replace(&dir.display().to_string(), "[DIR]")
        .replace(&dir.display().to_string().replace("/private", ""), "[DIR]")
        .replace(ecp_bin(), "[ecp]")
}

#[test]
fn a_missing_path_or_manifest_says_where_and_what_to_do() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    insta::assert_snapshot!("lint_missing_path", said(dir, &["lint", "./nope"], &[]));
    insta::assert_snapshot!("check_missing_path", said(dir, &["check", "./nope"], &[]));
    insta::assert_snapshot!("check_empty_folder", said(dir, &["check"], &[]));
    insta::assert_snapshot!("package_empty_folder", said(dir, &["package"], &[]));
    insta::assert_snapshot!("lint_empty_folder", said(dir, &["lint"], &[]));
}

/// A folder whose manifest runs `dist/main` with neither that file nor a
/// crate to build it from: check and call say what to put there.
#[test]
fn a_folder_without_its_entry_point_or_a_crate_says_what_makes_it() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &[]).status.success());
    std::fs::remove_file(dir.join("Cargo.toml")).unwrap();
    insta::assert_snapshot!("check_unbuilt_folder", said(&dir, &["check", "."], &[]));
    insta::assert_snapshot!(
        "call_unbuilt_folder",
        said(&dir, &["call", ".", "deployment policy"], &[])
    );
}

/// The edit-check loop: `ecp check .` in a source folder that was never
/// built builds it with cargo's dev profile and says so; after a
/// one-line edit of the mapping the next check meets the edited code, not
/// a stale binary. (A name of its own: the binary's path in the shared
/// target folder is the package's name.)
#[test]
fn check_in_a_source_folder_builds_and_checks_the_current_code() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("edit-loop-context");
    let dir_str = dir.to_str().unwrap();
    let created = crate::cli::ecp(&["new", "edit-loop-context", "--yes", "--dir", dir_str]);
    assert!(created.status.success(), "{created:?}");
    let check = || crate::cli::ecp(&["check", dir_str, "--mutations", "20"]);

    let first = check();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr),
    );
    assert_eq!(first.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "cargo's dev build of the current code (`ecp package` builds the release one)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("/debug/edit-loop-context"), "{stderr}");
    assert!(!stderr.contains("warning:"), "{stderr}");

    // One line of the mapping: every answer now maps to no items.
    let provider = dir.join("src/provider.rs");
    let code = std::fs::read_to_string(&provider).unwrap();
    let line = "Ok(items.iter().map(item).collect())";
    assert!(
        code.contains(line),
        "the template's mapping changed:\n{code}"
    );
    std::fs::write(
        &provider,
        code.replace(line, "Ok(items.iter().map(item).take(0).collect())"),
    )
    .unwrap();
    let second = check();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&second.stdout),
        String::from_utf8_lossy(&second.stderr),
    );
    assert_eq!(second.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    assert!(stderr.contains("cargo's dev build"), "{stderr}");

    // Code that does not compile: could not run, with the compiler's words.
    std::fs::write(&provider, code.replace(line, "Ok(items.iter().map(item))")).unwrap();
    let broken = check();
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert_eq!(broken.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cargo build failed in"), "{stderr}");
    assert!(stderr.contains("src/provider.rs"), "{stderr}");
    assert!(stderr.contains("  = help: fix the code"), "{stderr}");
}

#[test]
fn call_takes_the_query_last_and_says_so() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    insta::assert_snapshot!("call_path_without_query", said(dir, &["call", "."], &[]));
    insta::assert_snapshot!("call_nothing", said(dir, &["call"], &[]));
    let help = said(dir, &["call", "--help"], &[]);
    let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert_eq!(
        usage,
        "Usage: ecp call [OPTIONS] [PATH | --url URL | -- CMD ARGS...] <QUERY>"
    );
}

#[test]
fn transport_failures_are_plain_sentences() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    insta::assert_snapshot!(
        "check_url_refused",
        said(dir, &["check", "--url", "http://127.0.0.1:1/mcp"], &[])
    );
    insta::assert_snapshot!(
        "call_url_not_http",
        said(dir, &["call", "--url", "ftp://127.0.0.1/mcp", "q"], &[])
    );
    // A server that dies before the handshake: its status and stderr, the
    // same every run (no broken pipe).
    let dying = [
        "check",
        "--",
        "sh",
        "-c",
        "echo 'missing ACME_TOKEN' >&2; exit 3",
    ];
    let first = said(dir, &dying, &[]);
    insta::assert_snapshot!("check_server_exits_before_handshake", first);
    for _ in 0..3 {
        assert_eq!(said(dir, &dying, &[]), first);
    }
    // `ecp serve --http` without its environment, through `ecp call`.
    insta::assert_snapshot!(
        "call_server_without_environment",
        said(
            dir,
            &[
                "call",
                "deployment policy",
                "--",
                ecp_bin(),
                "serve",
                "--http"
            ],
            &[]
        )
        .replace(ecp_bin(), "[ecp]")
    );
}

#[test]
fn no_auth_off_loopback_is_refused_before_anything_else() {
    let temp = tempfile::tempdir().unwrap();
    insta::assert_snapshot!(
        "serve_no_auth_off_loopback",
        said(
            temp.path(),
            &[
                "serve",
                "--fixture",
                "example",
                "--listen",
                "0.0.0.0:8080",
                "--no-auth"
            ],
            &[]
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_shows_the_servers_own_line() {
    let upstream = Upstream::start(|_| Reply::status(401, r#"{"error":"bad token"}"#)).await;
    let temp = tempfile::tempdir().unwrap();
    let text = said(
        temp.path(),
        &[
            "call",
            "deployment policy",
            "--",
            ecp_bin(),
            "serve",
            "--http",
        ],
        &[
            ("PROVIDER_CONTEXT_BASE_URL", &upstream.base_url),
            ("PROVIDER_CONTEXT_TOKEN", "wrong-token"),
            ("NO_PROXY", "127.0.0.1"),
        ],
    );
    insta::assert_snapshot!("call_upstream_401", text);
}

#[test]
fn call_with_the_example_corpus_needs_no_service() {
    let temp = tempfile::tempdir().unwrap();
    let text = said(
        temp.path(),
        &[
            "call",
            "deployment policy",
            "--fixture",
            "example",
            "--",
            ecp_bin(),
            "serve",
            "--http",
        ],
        &[],
    );
    assert!(text.starts_with("exit: Some(0)"), "{text}");
    assert!(text.contains("\"id\": \"deploy-policy\""), "{text}");
    // The same corpus, served by `ecp serve --fixture example` itself.
    let text = said(
        temp.path(),
        &[
            "call",
            "deployment policy",
            "--",
            ecp_bin(),
            "serve",
            "--fixture",
            "example",
        ],
        &[],
    );
    assert!(text.contains("\"id\": \"deploy-policy\""), "{text}");
}

#[test]
fn ecp_no_auth_takes_the_same_words_as_dist_main() {
    crate::cli::assert_no_auth_words(
        ecp_bin(),
        &["serve", "--fixture", "example", "--listen", "127.0.0.1:0"],
        &[],
    );
}

#[test]
fn package_says_each_step_and_removes_stale_archives_when_it_fails() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    // A real endpoint: lint refuses the placeholder (remote-placeholder).
    let endpoint = ["--endpoint", "https://context.acme.dev/mcp"];
    assert!(
        ecp_new(
            &dir,
            &[&["--template", "remote"][..], &endpoint[..]].concat()
        )
        .status
        .success()
    );
    let text = said(&dir, &["package"], &[]);
    assert!(text.starts_with("exit: Some(0)"), "{text}");
    let steps: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ecp package: "))
        .map(|l| l.split(':').next().unwrap_or(""))
        .collect();
    // One archive per platform for a platform-less extension.
    assert_eq!(
        steps,
        [
            "lint",
            "stage",
            "archive",
            "archive",
            "archive",
            "sums",
            "tools",
            "provenance"
        ],
        "{text}"
    );
    let archive = dir.join("dist/linux.acme-context.tar.gz");
    assert!(archive.is_file());

    // Broken: lint stops the run, and the old archive does not stay behind
    // looking current.
    let manifest = dir.join("qwen-extension.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replacen('{', "{\"trust\": true,", 1)).unwrap();
    let text = said(&dir, &["package"], &[]);
    assert!(text.starts_with("exit: Some(1)"), "{text}");
    assert!(
        text.contains("removed the previous linux.acme-context.tar.gz, darwin.acme-context.tar.gz, win32.acme-context.tar.gz"),
        "{text}"
    );
    assert!(!archive.exists());
    assert!(!dir.join("dist/SHA256SUMS").exists());
    assert!(!dir.join("dist/provenance.intoto.json").exists());

    // --json stays one document, with no step lines.
    std::fs::write(&manifest, text_without_trust(&manifest)).unwrap();
    let output = Command::new(ecp_bin())
        .args(["package", "--json"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
}

fn text_without_trust(manifest: &Path) -> String {
    std::fs::read_to_string(manifest)
        .unwrap()
        .replacen("\"trust\": true,", "", 1)
}

/// On a terminal, `ecp serve` says what it waits for (and how to try it by
/// hand) on stderr; Ctrl-D ends it.
#[test]
fn serve_on_a_terminal_says_what_it_waits_for() {
    let (status, text) = crate::cli::on_a_terminal(
        &format!("{} serve --fixture example", ecp_bin()),
        &[("Ctrl-D ends", "\x04")],
    );
    assert!(status.success(), "{text}");
    assert!(
        text.contains("waiting for an MCP client on stdin")
            && text.contains("ecp call \"deployment policy\" -- ecp serve --fixture example"),
        "{text}"
    );
}

/// Without a terminal there is no hint: stderr stays empty for a client.
#[test]
fn serve_without_a_terminal_says_nothing() {
    let output = Command::new(ecp_bin())
        .args(["serve", "--fixture", "example"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
