//! `ecp try` without Qwen Code on `PATH` (the real client is driven by the
//! e2e suite, `tests/e2e/main.rs`): a source folder is packaged only when
//! its archive for this machine is missing, older than the sources or not
//! made by this machine's `ecp package`, and
//! the exact `qwen` commands are printed; `ecp lint` of a source folder
//! says when Qwen could not run it as installed.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
};

use crate::{
    cli::{ecp, ecp_new},
    hostile::text,
};

/// `ecp try ARGS` in `dir` with a `PATH` that has no `qwen` and a `HOME`
/// of its own, so nothing can reach a Qwen Code on this machine.
fn ecp_try(dir: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ecp"))
        .arg("try")
        .args(args)
        .current_dir(dir)
        .env("PATH", home)
        .env("HOME", home)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn try_packages_when_needed_and_prints_the_qwen_commands() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context-remote");
    crate::cli::ecp_new_remote(&dir, "acme-context-remote");
    let home = temp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let archive = dir.join("dist/linux.acme-context-remote.tar.gz");

    // No archive yet: packaged, then the commands (Qwen is not on PATH).
    let output = ecp_try(&dir, &home, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("packaging first") && said.contains("does not exist yet"),
        "{said}"
    );
    assert!(said.contains("Qwen Code is not on PATH"), "{said}");
    // Only the commands on stdout (the package steps went to stderr), so
    // `ecp try --print | sh` runs them.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "qwen extensions install {} --consent\nqwen mcp list\n",
            archive.display()
        )
    );
    assert!(archive.is_file());
    let made = std::fs::metadata(&archive).unwrap().modified().unwrap();

    // Current: not packaged again.
    let output = ecp_try(&dir, &home, &["--print"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("is current"), "{}", text(&output));
    assert!(!text(&output).contains("not on PATH"), "{}", text(&output));
    assert_eq!(
        std::fs::metadata(&archive).unwrap().modified().unwrap(),
        made
    );

    // The folder as a clone or a download brings it, its dist/ included
    // and every time kept, with another archive in place of the one ecp
    // made, newer than every source: never installed as the folder, made
    // again from the sources.
    let copy = temp.path().join("copy");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&dir)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let copied = copy.join("dist/linux.acme-context-remote.tar.gz");
    let output = ecp_try(&copy, &home, &["--print"]);
    assert!(
        text(&output).contains("was not made by ecp package here"),
        "{}",
        text(&output)
    );
    assert_eq!(
        std::fs::read(&copied).unwrap(),
        std::fs::read(&archive).unwrap()
    );
    std::fs::write(&copied, b"an archive the repository brought").unwrap();
    let file = std::fs::File::options().append(true).open(&copied).unwrap();
    file.set_modified(made + std::time::Duration::from_secs(60))
        .unwrap();
    let output = ecp_try(&copy, &home, &["--print"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("was not made by ecp package here"),
        "{}",
        text(&output)
    );
    assert_eq!(
        std::fs::read(&copied).unwrap(),
        std::fs::read(&archive).unwrap()
    );

    // A source file changed since: packaged again.
    let readme = std::fs::File::options()
        .append(true)
        .open(dir.join("README.md"))
        .unwrap();
    readme
        .set_modified(made + std::time::Duration::from_secs(5))
        .unwrap();
    let output = ecp_try(&dir, &home, &["--print"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("README.md changed since"),
        "{}",
        text(&output)
    );

    // The archive itself, and the release folder (Qwen's pick for this
    // machine), print the same line.
    for path in [archive.clone(), dir.join("dist")] {
        let output = ecp_try(temp.path(), &home, &["--print", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        assert!(
            String::from_utf8_lossy(&output.stdout).starts_with(&format!(
                "qwen extensions install {} --consent",
                archive.display()
            )),
            "{}",
            text(&output)
        );
    }
    // Nothing was installed anywhere.
    assert!(!home.join(".qwen").exists());
}

/// Issue 47: an argument `ecp try` cannot use is refused before anything
/// is packaged or run: a `--qwen` that is no program leaves the folder as
/// it was (no `dist/`).
#[test]
fn try_refuses_a_qwen_that_is_no_program_before_packaging() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context-remote");
    crate::cli::ecp_new_remote(&dir, "acme-context-remote");
    let home = temp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let missing = temp.path().join("no-such-qwen");
    let output = ecp_try(&dir, &home, &["--qwen", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("no such program") && text(&output).contains("help:"),
        "{}",
        text(&output)
    );
    assert!(!dir.join("dist").exists(), "{}", text(&output));
}

#[test]
fn try_refuses_an_archive_that_fails_lint_and_a_file_that_is_none() {
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path();
    let bad = temp.path().join("linux.x64.bad.tar.gz");
    std::fs::write(&bad, "not gzip").unwrap();
    let output = ecp_try(temp.path(), home, &["--print", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let notes = temp.path().join("notes.txt");
    std::fs::write(&notes, "x").unwrap();
    let output = ecp_try(temp.path(), home, &[notes.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("help:"), "{}", text(&output));
}

#[test]
fn lint_says_when_qwen_could_not_run_a_source_folder_as_installed() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &[]).status.success());
    let output = ecp(&["lint", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("note: Qwen cannot run this folder as installed: `dist/main`")
            && stdout.contains("`ecp try`"),
        "{stdout}"
    );
    let output = ecp(&["lint", dir.to_str().unwrap(), "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["notes"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    // With dist/main there (as an unpacked archive has it), no note.
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    std::fs::write(dir.join("dist/main"), "#!/bin/sh\n").unwrap();
    let output = ecp(&["lint", dir.to_str().unwrap()]);
    assert!(!text(&output).contains("note:"), "{}", text(&output));
    // A Node project with node_modules would be copied whole.
    let ts = temp.path().join("acme-context-ts");
    assert!(ecp_new(&ts, &["--template", "local-ts"]).status.success());
    std::fs::create_dir_all(ts.join("node_modules/x")).unwrap();
    std::fs::create_dir_all(ts.join("dist")).unwrap();
    std::fs::write(ts.join("dist/main.js"), "\"use strict\";\n").unwrap();
    let output = ecp(&["lint", ts.to_str().unwrap()]);
    assert!(
        text(&output).contains("note: installing this folder would copy its node_modules"),
        "{}",
        text(&output)
    );
}

/// Issue 45, finding 4: `ecp try` packages as `ecp package` does, so a
/// received folder whose `dist` links elsewhere is refused before anything
/// is written there.
#[test]
fn try_writes_nothing_through_a_linked_dist() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context-remote");
    crate::cli::ecp_new_remote(&dir, "acme-context-remote");
    let elsewhere = temp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("dist")).unwrap();
    let home = temp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let output = ecp_try(&dir, &home, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("dist is a symlink"),
        "{}",
        text(&output)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
