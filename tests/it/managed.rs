//! `ecp managed` against what an attacker or a careless input may hold
//! (issue 45): the POSIX launcher refuses yargs' dot-notation spellings of
//! the flags that drop the pinned server (and the PowerShell launcher's
//! pattern does too), a variable name no shell can carry is refused, and
//! the README's `tar` line runs nothing that the archive's name holds.
//! The real Qwen behind a deployment is driven by the e2e suite
//! (`tests/e2e/doctor.rs`).

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use crate::{
    cli::{ecp, ecp_new, ecp_new_remote},
    hostile::text,
};

/// A program standing in for Qwen: it appends its arguments to `ran`.
fn fake_qwen(dir: &Path, ran: &Path) -> PathBuf {
    let path = dir.join("fake-qwen");
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `ecp managed --extension EXTENSION --out OUT` with settings under `temp`.
fn managed(temp: &Path, extension: &Path, out: &Path, extra: &[&str]) -> Output {
    let settings = temp.join("etc/settings.json");
    let mut args = vec![
        "managed",
        "--extension",
        extension.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--settings-path",
        settings.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ecp(&args)
}

/// Every spelling of `--bare`, `--safe-mode` and `--mcp-config` that Qwen's
/// yargs reads as the flag: dashed or camel case, alone, with `=`, or with
/// dot notation (an object option that is still truthy), and a negation
/// that carries a value.
const DROPPING: &[&str] = &[
    "--bare",
    "--bare=true",
    "--bare.x",
    "--safe-mode",
    "--safe-mode=true",
    "--safe-mode.x",
    "--safe-mode.0",
    "--safeMode",
    "--safeMode.y=true",
    "--mcp-config",
    "--mcp-config=x.json",
    "--mcp-config.x=",
    "--mcpConfig.a=b",
    // A negation with a value: what it sets depends on the parser.
    "--no-safe-mode=false",
    "--no-bare.x",
];

#[test]
fn the_launchers_refuse_every_spelling_that_drops_the_pinned_server() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context-remote");
    ecp_new_remote(&dir, "acme-context-remote");
    let ran = temp.path().join("ran.txt");
    let qwen = fake_qwen(temp.path(), &ran);
    let out = temp.path().join("deploy");
    let written = managed(temp.path(), &dir, &out, &["--qwen", qwen.to_str().unwrap()]);
    assert_eq!(written.status.code(), Some(0), "{}", text(&written));
    let launcher = out.join("qwen-acme-context-remote");
    let home = temp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let run = |arg: &str| {
        Command::new("sh")
            .arg(&launcher)
            .arg(arg)
            .env("HOME", &home)
            .env_remove("QWEN_HOME")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for arg in DROPPING {
        let output = run(arg);
        assert_eq!(output.status.code(), Some(2), "{arg}: {}", text(&output));
        assert!(
            text(&output).contains("would replace or drop the pinned"),
            "{arg}: {}",
            text(&output)
        );
        assert!(!ran.exists(), "{arg} reached Qwen");
    }
    // What does not drop the server still reaches Qwen.
    for arg in [
        "mcp",
        "--no-safe-mode",
        "--safe-modes",
        "--model=x.safe-mode",
    ] {
        let output = run(arg);
        assert_eq!(output.status.code(), Some(0), "{arg}: {}", text(&output));
    }
    assert_eq!(
        std::fs::read_to_string(&ran).unwrap(),
        "mcp\n--no-safe-mode\n--safe-modes\n--model=x.safe-mode\n"
    );

    // The PowerShell launcher's pattern (no PowerShell here: .NET's
    // regular expressions read this one as the regex crate does).
    let ps1 = std::fs::read_to_string(out.join("qwen-acme-context-remote.ps1")).unwrap();
    let pattern = ps1
        .split_once("-match '")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(pattern, _)| pattern)
        .unwrap_or_else(|| panic!("no -match in {ps1}"));
    let pattern = regex::Regex::new(pattern).unwrap();
    for arg in DROPPING {
        assert!(pattern.is_match(arg), "the .ps1 lets {arg} through");
    }
    for arg in [
        "mcp",
        "--no-safe-mode",
        "--safe-modes",
        "--model=x.safe-mode",
    ] {
        assert!(!pattern.is_match(arg), "the .ps1 refuses {arg}");
    }
}

/// A release archive of the local template, its token variable renamed
/// to `token` in the manifest, packaged with a stand-in binary.
fn local_archive(temp: &Path, token: &str) -> PathBuf {
    let dir = temp.join("acme-context");
    let made = ecp_new(&dir, &[]);
    assert!(made.status.success(), "{}", text(&made));
    let manifest = dir.join("qwen-extension.json");
    let text_before = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text_before.replace("${ACME_CONTEXT_TOKEN}", &format!("${{{token}}}")),
    )
    .unwrap();
    let binary = crate::cli::prebuilt(temp);
    let packaged = ecp(&[
        "package",
        dir.to_str().unwrap(),
        "--binary",
        binary.to_str().unwrap(),
        "--target",
        "x86_64-unknown-linux-gnu",
        "--format",
        "tar.gz",
    ]);
    assert!(packaged.status.success(), "{}", text(&packaged));
    dir.join("dist/linux.x64.acme-context.tar.gz")
}

#[test]
fn a_variable_name_no_shell_can_carry_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    // The manifest's own variable starts with a digit: the launcher line
    // `1ACME_TOKEN=...` would be a command that prints the secret.
    let archive = local_archive(temp.path(), "1ACME_TOKEN");
    let out = temp.path().join("deploy");
    let given = [
        "--env",
        "ACME_CONTEXT_BASE_URL=https://kb.acme.example",
        "--credential",
        "1ACME_TOKEN=/etc/qwen-code/acme.secret",
    ];
    let output = managed(temp.path(), &archive, &out, &given);
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("error: ") && shown.contains("1ACME_TOKEN"),
        "{shown}"
    );
    assert!(shown.contains("= help: "), "{shown}");
    assert!(!out.exists(), "{shown}");

    // Given on the command line, for any manifest: refused the same way.
    let dir = temp.path().join("acme-context-remote");
    ecp_new_remote(&dir, "acme-context-remote");
    for (flag, pair) in [
        ("--credential", "1ACME_TOKEN=/etc/x.secret"),
        ("--env", "9X=value"),
        ("--env", "A-B=value"),
    ] {
        let output = managed(temp.path(), &dir, &out, &[flag, pair]);
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(2), "{pair}: {shown}");
        assert!(
            shown.contains("error: ") && shown.contains("= help: "),
            "{pair}: {shown}"
        );
        assert!(shown.contains("shell variable name"), "{pair}: {shown}");
        assert!(!out.exists(), "{pair}: {shown}");
    }
}

#[test]
fn the_readmes_tar_line_runs_nothing_the_archive_name_holds() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context-remote");
    ecp_new_remote(&dir, "acme-context-remote");
    let packaged = ecp(&["package", dir.to_str().unwrap()]);
    assert!(packaged.status.success(), "{}", text(&packaged));
    let built = std::fs::read_dir(dir.join("dist"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let hostile = temp.path().join("x$(touch pwned).tar.gz");
    std::fs::copy(&built, &hostile).unwrap();
    let out = temp.path().join("deploy");
    let install = temp.path().join("opt/it's here");
    let output = managed(
        temp.path(),
        &hostile,
        &out,
        &["--install-dir", install.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.contains("tar -xzf"))
        .and_then(|l| l.split('`').nth(1))
        .unwrap_or_else(|| panic!("no tar line in {readme}"));
    let ran = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(!out.join("pwned").exists(), "{line} ran the name's $(...)");
    assert!(ran.status.success(), "{line}: {}", text(&ran));
    assert!(install.join("qwen-extension.json").is_file(), "{line}");
}
