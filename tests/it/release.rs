//! `ecp lint` on a release folder: every asset set that Qwen's installer
//! could resolve to something other than the right archive, on any of
//! linux, darwin and win32 on x64 and arm64, is refused with the platform
//! it breaks; sums and versions agree. The archives are real `ecp package`
//! output around stand-in executables whose headers name the target.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::{ecp, ecp_new, package_into};

/// The five targets of a release, with the header of a build for each.
const TARGETS: [(&str, Header); 5] = [
    ("x86_64-unknown-linux-gnu", Header::Elf(0x3e)),
    ("aarch64-unknown-linux-gnu", Header::Elf(0xb7)),
    ("x86_64-apple-darwin", Header::MachO(0x0100_0007)),
    ("aarch64-apple-darwin", Header::MachO(0x0100_000c)),
    ("x86_64-pc-windows-msvc", Header::Pe(0x8664)),
];

#[derive(Clone, Copy)]
enum Header {
    Elf(u16),
    MachO(u32),
    Pe(u16),
}

/// A file that starts like an executable for `header` (what lint reads).
fn executable(dir: &Path, header: Header) -> PathBuf {
    let mut bytes = vec![0u8; 512];
    match header {
        Header::Elf(machine) => {
            bytes[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1]);
            bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        }
        Header::MachO(cpu) => {
            bytes[..4].copy_from_slice(&[0xcf, 0xfa, 0xed, 0xfe]);
            bytes[4..8].copy_from_slice(&cpu.to_le_bytes());
        }
        Header::Pe(machine) => {
            bytes[..2].copy_from_slice(b"MZ");
            bytes[0x3c] = 0x80;
            bytes[0x80..0x84].copy_from_slice(b"PE\0\0");
            bytes[0x84..0x86].copy_from_slice(&machine.to_le_bytes());
        }
    }
    let path = dir.join(format!("build-{}", dir.read_dir().unwrap().count()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn extension(parent: &Path, template: &str) -> PathBuf {
    let dir = parent.join("acme-context");
    let mut args = vec!["--template", template];
    if template == "remote" {
        // A real endpoint: lint refuses the placeholder (remote-placeholder).
        args.extend(["--endpoint", "https://context.acme.dev/mcp"]);
    }
    let output = ecp_new(&dir, &args);
    assert!(output.status.success(), "{output:?}");
    dir
}

/// Packages `targets` of the local template into `out`, each from a
/// stand-in build with `header`.
fn release(parent: &Path, out: &Path, targets: &[(&str, Header)]) -> PathBuf {
    let dir = extension(parent, "local");
    let builds = parent.join("builds");
    std::fs::create_dir_all(&builds).unwrap();
    for (triple, header) in targets {
        let binary = executable(&builds, *header);
        package_into(
            &dir,
            out,
            &["--binary", binary.to_str().unwrap(), "--target", triple],
        );
    }
    dir
}

/// `ecp lint PATH ARGS --format json`: exit code and (rule, message) pairs.
fn lint(path: &Path, extra: &[&str]) -> (Option<i32>, Vec<(String, String)>) {
    let mut args = vec!["lint", path.to_str().unwrap(), "--format", "json"];
    args.extend_from_slice(extra);
    let output = ecp(&args);
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let findings = document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (output.status.code(), findings)
}

fn rules(findings: &[(String, String)]) -> Vec<&str> {
    findings.iter().map(|(rule, _)| rule.as_str()).collect()
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn five_targets_are_a_release_every_platform_installs_in_any_order() {
    let temp = tempfile::tempdir().unwrap();
    let out = temp.path().join("dist");
    release(temp.path(), &out, &TARGETS);
    let (code, findings) = lint(&out, &["--deny-warnings", "--release-tag", "v0.1.0"]);
    assert_eq!((code, findings.clone()), (Some(0), vec![]), "{findings:?}");
    // Ten archives (tar.gz and zip per target), one SHA256SUMS, and one
    // provenance statement per target, whose name starts with no platform.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 16, "{names:?}");
    assert!(names.iter().all(|n| {
        n == "SHA256SUMS"
            || (n.starts_with("provenance.") && n.ends_with(".intoto.json"))
            || ["linux.", "darwin.", "win32."]
                .iter()
                .any(|p| n.starts_with(p))
    }));
    // The human report says what it read.
    let human = ecp(&["lint", out.to_str().unwrap()]);
    assert!(human.status.success());
}

#[test]
fn assets_that_would_trip_qwen_are_refused_with_the_platform_they_break() {
    let temp = tempfile::tempdir().unwrap();
    let good = temp.path().join("good");
    release(temp.path(), &good, &TARGETS);
    let case = |name: &str| {
        let dir = temp.path().join(name);
        copy_folder(&good, &dir);
        dir
    };

    // A per-archive checksum starts with the platform prefix.
    let sums_beside = case("sums-beside");
    std::fs::write(
        sums_beside.join("linux.x64.acme-context.tar.gz.sha256"),
        "0".repeat(64),
    )
    .unwrap();
    let (code, findings) = lint(&sums_beside, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(rules(&findings), ["release-asset"], "{findings:?}");
    assert!(
        findings[0]
            .1
            .contains("`linux.x64.acme-context.tar.gz.sha256` is not an archive")
            && findings[0].1.contains("on linux x64 ")
            && !findings[0].1.contains("arm64"),
        "{findings:?}"
    );

    // Linux only: macOS and Windows clone the repository.
    let linux_only = temp.path().join("linux-only");
    release(&temp.path().join("l"), &linux_only, &TARGETS[..2]);
    let (code, findings) = lint(&linux_only, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(rules(&findings), ["release-asset"], "{findings:?}");
    assert!(
        findings[0]
            .1
            .starts_with("on darwin x64, darwin arm64, win32 x64, win32 arm64 no asset matches"),
        "{findings:?}"
    );

    // Two builds missing: they borrow another architecture's binary.
    let three = temp.path().join("three");
    release(
        &temp.path().join("t"),
        &three,
        &[TARGETS[0], TARGETS[3], TARGETS[4]],
    );
    let (code, findings) = lint(&three, &[]);
    assert_eq!(code, Some(0), "a warning alone passes: {findings:?}");
    assert!(
        rules(&findings)
            .iter()
            .all(|r| *r == "release-platform-missing"),
        "{findings:?}"
    );
    let text: String = findings.iter().map(|(_, m)| m.as_str()).collect();
    assert!(
        text.contains("linux arm64 would install `linux.x64.acme-context.tar.gz`, whose entry point is built for linux x64")
            && text.contains("darwin x64 would install `darwin.arm64.acme-context.tar.gz`"),
        "{findings:?}"
    );
    // Windows on Arm runs the x64 build: not a finding.
    assert!(!text.contains("win32 arm64"), "{findings:?}");
    assert_eq!(lint(&three, &["--deny-warnings"]).0, Some(1));

    // An archive named for x64 that holds an arm64 build.
    let mislabelled = temp.path().join("mislabelled");
    release(
        &temp.path().join("m"),
        &mislabelled,
        &[("x86_64-unknown-linux-gnu", Header::Elf(0xb7))],
    );
    let (_, findings) = lint(&mislabelled, &[]);
    assert!(
        findings.iter().any(|(rule, message)| rule == "release-architecture"
            && message
                == "`linux.x64.acme-context.tar.gz` is named for linux x64 but its entry point is built for linux arm64"),
        "{findings:?}"
    );

    // A platform-less archive under its plain name stops being found once
    // the sums are uploaded beside it.
    let plain = temp.path().join("plain");
    let remote = extension(&temp.path().join("r"), "remote");
    package_into(&remote, &plain, &[]);
    let (code, findings) = lint(&plain, &["--deny-warnings"]);
    assert_eq!((code, findings), (Some(0), vec![]));
    for platform in ["darwin", "win32"] {
        std::fs::remove_file(plain.join(format!("{platform}.acme-context.tar.gz"))).unwrap();
    }
    std::fs::rename(
        plain.join("linux.acme-context.tar.gz"),
        plain.join("acme-context.tar.gz"),
    )
    .unwrap();
    let sums = std::fs::read_to_string(plain.join("SHA256SUMS")).unwrap();
    let line = sums
        .lines()
        .find(|l| l.ends_with("linux.acme-context.tar.gz"))
        .unwrap()
        .replace("linux.acme-context", "acme-context");
    std::fs::write(plain.join("SHA256SUMS"), format!("{line}\n")).unwrap();
    let (code, findings) = lint(&plain, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(rules(&findings), ["release-asset"], "{findings:?}");
    assert!(
        findings[0].1.starts_with(
            "on linux x64, linux arm64, darwin x64, darwin arm64, win32 x64, win32 arm64 no asset matches"
        ),
        "{findings:?}"
    );
    // ... and is found when it is the only asset (the statement is an
    // asset too: beside it the lone-asset step no longer applies).
    std::fs::remove_file(plain.join("SHA256SUMS")).unwrap();
    std::fs::remove_file(plain.join("provenance.intoto.json")).unwrap();
    let (_, findings) = lint(&plain, &[]);
    assert_eq!(rules(&findings), ["release-sums"], "{findings:?}");
}

#[test]
fn sums_and_versions_must_agree_with_the_folder_and_the_tag() {
    let temp = tempfile::tempdir().unwrap();
    let good = temp.path().join("good");
    let dir = release(temp.path(), &good, &TARGETS[..1]);
    let case = |name: &str| {
        let copy = temp.path().join(name);
        copy_folder(&good, &copy);
        copy
    };

    // A changed (here: broken) archive, and an archive the sums do not
    // list; the broken one is a finding, the others are still read.
    let changed = case("changed");
    let archive = changed.join("linux.x64.acme-context.zip");
    let mut bytes = std::fs::read(&archive).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&archive, bytes).unwrap();
    std::fs::copy(
        changed.join("linux.x64.acme-context.tar.gz"),
        changed.join("linux.arm64.acme-context.tar.gz"),
    )
    .unwrap();
    let (code, findings) = lint(&changed, &[]);
    assert_eq!(code, Some(1));
    assert!(
        findings.iter().any(|(rule, m)| rule == "archive-malformed"
            && m.starts_with("not a readable archive")),
        "{findings:?}"
    );
    let messages: Vec<&str> = findings
        .iter()
        .filter(|(rule, _)| rule == "release-sums")
        .map(|(_, m)| m.as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("`linux.x64.acme-context.zip` has sha256 ")),
        "{findings:?}"
    );
    assert!(
        messages.contains(&"`linux.arm64.acme-context.tar.gz` is not listed in SHA256SUMS"),
        "{findings:?}"
    );

    // Sums that are not sha256sum output.
    let garbled = case("garbled");
    std::fs::write(
        garbled.join("SHA256SUMS"),
        format!("{}  x\n", "z".repeat(64)),
    )
    .unwrap();
    let (_, findings) = lint(&garbled, &[]);
    assert!(
        findings.iter().any(|(rule, m)| rule == "release-sums"
            && m.contains("line 1: the digest is not 64 hexadecimal digits")),
        "{findings:?}"
    );
    // ... and `ecp package` refuses to merge into them.
    let output = ecp(&[
        "package",
        dir.to_str().unwrap(),
        "--out-dir",
        garbled.to_str().unwrap(),
        "--binary",
        executable(&temp.path().join("builds"), TARGETS[0].1)
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("it is not sha256sum output"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The tag names another version: the release folder, one archive and
    // the source folder all say so.
    for path in [
        good.clone(),
        good.join("linux.x64.acme-context.tar.gz"),
        dir.clone(),
    ] {
        let (code, findings) = lint(&path, &["--release-tag", "v0.2.0"]);
        assert_eq!(code, Some(1), "{path:?}");
        assert_eq!(
            findings
                .iter()
                .filter(|(rule, _)| rule == "release-version")
                .map(|(_, m)| m.as_str())
                .collect::<Vec<_>>(),
            ["the release tag `v0.2.0` names version 0.2.0, but the manifest says 0.1.0"],
            "{path:?}: {findings:?}"
        );
        let (_, findings) = lint(&path, &["--release-tag", "0.1.0"]);
        assert!(
            !rules(&findings).contains(&"release-version"),
            "{path:?}: {findings:?}"
        );
    }

    // Two versions in one release folder.
    let mixed = case("mixed");
    for file in ["qwen-extension.json", "Cargo.toml"] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("0.1.0", "0.2.0", 1)).unwrap();
    }
    package_into(
        &dir,
        &mixed,
        &[
            "--binary",
            executable(&temp.path().join("builds"), TARGETS[1].1)
                .to_str()
                .unwrap(),
            "--target",
            TARGETS[1].0,
        ],
    );
    let (code, findings) = lint(&mixed, &[]);
    assert_eq!(code, Some(1));
    assert!(
        findings.iter().any(|(rule, m)| rule == "release-version"
            && m.starts_with("the archives are not one release: acme-context 0.1.0 (linux.x64.acme-context.tar.gz, linux.x64.acme-context.zip); acme-context 0.2.0 (linux.arm64")),
        "{findings:?}"
    );
}

/// An archive packed by GNU tar, not ecp: the manifest of `ecp new` and
/// `binary` stored as `entry` with mode 0755.
fn tar_archive(parent: &Path, name: &str, entry: &str, header: Header) -> PathBuf {
    let dir = extension(&parent.join(name.replace('.', "-")), "local");
    let stage = parent.join(format!("stage-{name}"));
    std::fs::create_dir_all(stage.join("dist")).unwrap();
    std::fs::copy(
        dir.join("qwen-extension.json"),
        stage.join("qwen-extension.json"),
    )
    .unwrap();
    let builds = parent.join(format!("builds-{name}"));
    std::fs::create_dir_all(&builds).unwrap();
    std::fs::copy(executable(&builds, header), stage.join(entry)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(stage.join(entry), std::fs::Permissions::from_mode(0o755)).unwrap();
    let archive = parent.join(name);
    let status = std::process::Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .args(["-C", stage.to_str().unwrap(), "qwen-extension.json", entry])
        .status()
        .unwrap();
    assert!(status.success());
    archive
}

#[test]
fn an_entry_point_named_for_another_platform_is_refused_as_qwen_would_not_start_it() {
    let temp = tempfile::tempdir().unwrap();
    // Qwen on Windows runs `dist\main` as `dist\main.exe` (cross-spawn and
    // PATHEXT); an extensionless PE is never started.
    let windows = tar_archive(
        temp.path(),
        "win32.x64.acme-context.tar.gz",
        "dist/main",
        Header::Pe(0x8664),
    );
    let (code, findings) = lint(&windows, &[]);
    assert_eq!(code, Some(1), "{findings:?}");
    assert!(
        findings
            .iter()
            .any(|(rule, message)| rule == "archive-entry-point"
                && message.contains("Windows executable without `.exe`")),
        "{findings:?}"
    );
    let windows = tar_archive(
        temp.path(),
        "win32.x64.acme-context-2.tar.gz",
        "dist/main.exe",
        Header::Pe(0x8664),
    );
    let (code, findings) = lint(&windows, &[]);
    assert!(
        !rules(&findings).contains(&"archive-entry-point"),
        "{findings:?}"
    );
    assert_eq!(code, Some(0), "{findings:?}");
    // Elsewhere the path is run exactly: a `main.exe` is never found.
    let linux = tar_archive(
        temp.path(),
        "linux.x64.acme-context.tar.gz",
        "dist/main.exe",
        Header::Elf(0x3e),
    );
    let (code, findings) = lint(&linux, &[]);
    assert_eq!(code, Some(1), "{findings:?}");
    assert!(
        findings
            .iter()
            .any(|(rule, message)| rule == "archive-entry-point"
                && message.contains("runs `dist/main` exactly")),
        "{findings:?}"
    );
}
