//! The reviewer's other tools against an attacker (issue 28): `ecp check`
//! against a hostile target, `ecp verify` against forged provenance, `ecp
//! upgrade` and `ecp package` against a hostile folder. Each test builds its
//! hostile shape at test time and asserts the refusal or the bounded,
//! escaped output, with `ecp` under the memory cap and timeout of
//! [`super::hostile::ecp_capped`].

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use super::hostile::{ecp_capped, text};

/// The processes named `marker` (their `argv[0]`, set by `exec -a`;
/// Linux `/proc`).
fn processes_marked(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        // A zombie has an empty command line; it runs nothing.
        if cmdline.split(|&b| b == 0).next() == Some(marker.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Waits until no process holds `marker` (they are killed, not asked),
/// within a generous bound; the processes left, if any.
fn wait_gone(marker: &str) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left = processes_marked(marker);
        if left.is_empty() || start.elapsed() > Duration::from_secs(20) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A shell target that starts one child in its group and one that leaves
/// the group (`setsid`), both named `marker`, then runs `rest`.
fn spawning_target(marker: &str, rest: &str) -> String {
    format!(
        "(exec -a {marker} sleep 3600) & setsid bash -c 'exec -a {marker} sleep 3600' & sleep 0.3; {rest}"
    )
}

#[test]
fn check_shows_a_dying_targets_stderr_escaped_masked_and_bounded() {
    let token = "ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb";
    // Clear screen, an OSC title, a token, then 20 MiB of noise and a
    // last line, before it dies without a handshake.
    let script = format!(
        "printf '\\033[2J\\033]0;owned\\007 token {token}\\n' >&2; \
         head -c 20971520 /dev/zero | tr '\\0' 'A' >&2; \
         printf '\\nlast words \\033[31mred\\n' >&2; exit 3"
    );
    let output = ecp_capped(&["check", "--", "bash", "-c", &script], &[], None);
    let shown = text(&output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        &shown[..shown.len().min(2000)]
    );
    assert!(shown.len() < 64 * 1024, "{} bytes out", shown.len());
    assert!(!shown.contains('\u{1b}'), "{shown}");
    assert!(!shown.contains(token), "{shown}");
    assert!(shown.contains("exited with status 3"), "{shown}");
    assert!(shown.contains("last words \\u{1b}[31mred"), "{shown}");
    assert!(shown.contains("earlier bytes not shown"), "{shown}");
    // Short stderr: shown whole, the token masked, the escapes visible.
    let script = format!("printf '\\033]0;owned\\007 token {token}\\n' >&2; exit 3");
    let output = ecp_capped(&["check", "--", "bash", "-c", &script], &[], None);
    let shown = text(&output);
    assert!(
        shown.contains("\\u{1b}]0;owned\\u{7} token ghp_****"),
        "{shown}"
    );
    assert!(
        !shown.contains(token) && !shown.contains('\u{1b}'),
        "{shown}"
    );
}

#[test]
fn check_leaves_nothing_a_target_started_running() {
    let marker = format!("ecp-hostile-group-{}", std::process::id());
    let output = ecp_capped(
        &[
            "check",
            "--",
            "bash",
            "-c",
            &spawning_target(&marker, "exit 1"),
        ],
        &[],
        None,
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("exited with status 1"),
        "{}",
        text(&output)
    );
    assert_eq!(wait_gone(&marker), Vec::<u32>::new(), "left running");
}

#[test]
fn check_stops_everything_a_target_started_on_ctrl_c_and_sigterm() {
    for signal in ["INT", "TERM"] {
        check_stops_on(signal);
    }
}

/// `ecp check` of a target that starts a child and never answers, stopped
/// by `kill -SIGNAL`: exit 130, and nothing the target started is left.
fn check_stops_on(signal: &str) {
    let marker = format!("ecp-hostile-sig{signal}-{}", std::process::id());
    // The target never answers initialize: ecp would wait 30 s for it.
    let mut ecp = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args([
            "check",
            "--",
            "bash",
            "-c",
            &spawning_target(&marker, "exec sleep 3600"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while processes_marked(&marker).len() < 2 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_marked(&marker).len(),
        2,
        "the target did not start"
    );
    let status = Command::new("kill")
        .args([format!("-{signal}"), ecp.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = ecp.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = ecp.kill();
            panic!("ecp check did not stop on SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut ecp.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(wait_gone(&marker), Vec::<u32>::new(), "left running");
}

/// A tar entry: name, type flag, data, link target.
type TarEntry<'a> = (&'a str, u8, &'a [u8], &'a str);

/// A `.tar.gz` of `entries`, as GNU tar writes them.
fn tar_gz(path: &Path, entries: &[TarEntry]) {
    let mut tar = Vec::new();
    for (name, flag, data, link) in entries {
        let mut header =
            ecp::extension::tar::raw_header(name.as_bytes(), *flag, data.len() as u64, 0o755);
        header[157..157 + link.len()].copy_from_slice(link.as_bytes());
        // The checksum again, over the link name too.
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
        header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        tar.extend_from_slice(&header);
        tar.extend_from_slice(data);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.extend([0u8; 1024]);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &tar).unwrap();
    std::fs::write(path, encoder.finish().unwrap()).unwrap();
}

const MANIFEST: &str = r#"{"name":"acme-context","version":"0.1.0","mcpServers":{"acme-context":{"command":"${extensionPath}${/}dist${/}main","timeout":8000,"includeTools":["context_search"]}}}"#;

#[test]
fn check_unpacks_an_archive_through_the_bounded_reader_of_lint() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // A link as the entry point, a link out of the folder, a FIFO: the
    // tar crate's unpack wrote the links; lint's reader refuses them.
    let cases: [(&str, TarEntry); 3] = [
        ("link", ("dist/main", b'2', b"", "/bin/sh")),
        ("escape", ("dist", b'2', b"", "../outside")),
        ("fifo", ("dist/main", b'6', b"", "")),
    ];
    for (case, entry) in cases {
        let archive = dir.path().join(format!("{case}.tar.gz"));
        tar_gz(
            &archive,
            &[
                ("qwen-extension.json", b'0', MANIFEST.as_bytes(), ""),
                entry,
            ],
        );
        let output = ecp_capped(&["check", archive.to_str().unwrap()], &[], None);
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(2), "{case}: {shown}");
        assert!(shown.contains("= help: ecp lint"), "{case}: {shown}");
        assert!(
            shown.contains("is a link") || shown.contains("is a FIFO"),
            "{case}: {shown}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // Entries after the end of the unpacked budget are never written: a
    // path out of the folder is refused before anything is read.
    let archive = dir.path().join("dotdot.tar.gz");
    tar_gz(
        &archive,
        &[
            ("qwen-extension.json", b'0', MANIFEST.as_bytes(), ""),
            ("../outside/evil", b'0', b"x", ""),
        ],
    );
    let output = ecp_capped(&["check", archive.to_str().unwrap()], &[], None);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("unsafe path"), "{}", text(&output));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// `git ARGS` in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@ecp.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

#[test]
fn package_runs_nothing_a_received_folders_git_configuration_names() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    let output = super::cli::ecp_new(
        &dir,
        &[
            "--template",
            "remote",
            "--endpoint",
            "https://context.acme.dev/mcp",
        ],
    );
    assert!(output.status.success(), "{output:?}");
    std::fs::write(dir.join(".gitattributes"), "* filter=evil\n").unwrap();
    git(&dir, &["init", "--quiet"]);
    git(&dir, &["add", "--all"]);
    git(&dir, &["commit", "--quiet", "-m", "received"]);
    // What `git status` would run: an fsmonitor command, and a filter
    // driver's clean command for a file that changed without changing its
    // size or time (racily clean, so git reads it again).
    let marker = temp.path().join("ran");
    let run = format!("touch {}; cat", marker.display());
    git(&dir, &["config", "core.fsmonitor", &run]);
    git(&dir, &["config", "filter.evil.clean", &run]);
    let readme = dir.join("README.md");
    let was = std::fs::read_to_string(&readme).unwrap();
    std::fs::write(&readme, was.replacen('a', "b", 1)).unwrap();
    let status = Command::new("touch")
        .args(["-d", "2000-01-01", readme.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    // The shape is live: a plain `git status` here runs both.
    let plain = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert!(
        marker.exists(),
        "the hostile configuration did not run under plain git"
    );
    std::fs::remove_file(&marker).unwrap();

    let out = temp.path().join("out");
    let output = ecp_capped(
        &[
            "package",
            dir.to_str().unwrap(),
            "--out-dir",
            out.to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        !marker.exists(),
        "ecp package ran the folder's git configuration"
    );
    // git still answered: the statement names the commit, and the change.
    let statement: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("provenance.intoto.json")).unwrap())
            .unwrap();
    let build = &statement["predicate"]["buildDefinition"];
    assert!(
        build["externalParameters"]["source"]["digest"]["gitCommit"].is_string(),
        "{statement:#}"
    );
    assert_eq!(build["internalParameters"]["dirty"], true, "{statement:#}");
}

#[test]
fn package_says_a_build_runs_the_folders_code_and_can_skip_install_scripts() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    let output = super::cli::ecp_new(&dir, &["--template", "local-ts"]);
    assert!(output.status.success(), "{output:?}");
    // The generated project's own dependencies are not needed to show it:
    // a package.json with an install script and a build script that writes
    // a bundle, and no dependencies (npm ci runs offline).
    let marker = temp.path().join("installed");
    let package_json = serde_json::json!({
        "name": "acme-context",
        "version": "0.1.0",
        "private": true,
        "scripts": {
            "preinstall": format!("touch {}", marker.display()),
            "build": "mkdir -p dist && cp src-main.js dist/main.js",
        },
    });
    std::fs::write(dir.join("package.json"), package_json.to_string()).unwrap();
    std::fs::remove_file(dir.join("package-lock.json")).unwrap();
    std::fs::write(dir.join("src-main.js"), "process.stdout.write('');\n").unwrap();
    let lock = Command::new("npm")
        .args([
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--offline",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(lock.status.success(), "{lock:?}");

    let out = temp.path().join("out");
    let package = |extra: &[&str]| {
        let mut args = vec![
            "package",
            dir.to_str().unwrap(),
            "--out-dir",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        // Not under the memory cap: Node reserves more address space.
        super::cli::ecp(&args)
    };
    let output = package(&["--ignore-scripts"]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("this runs code from the folder: npm run build"),
        "{said}"
    );
    assert!(
        said.contains("npm ci --no-audit --no-fund --ignore-scripts"),
        "{said}"
    );
    assert!(!marker.exists(), "--ignore-scripts ran an install script");
    assert!(
        dir.join("dist/main.js").exists(),
        "the build script did not run"
    );

    let output = package(&[]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("npm ci runs the install scripts of package.json and of every dependency (--ignore-scripts turns them off)"),
        "{said}"
    );
    assert!(
        marker.exists(),
        "npm ci without --ignore-scripts ran no install script"
    );

    let help = super::cli::ecp(&["verify", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("runs the source's build code"), "{help}");
}

#[test]
fn lint_refuses_a_cargo_toml_or_package_json_it_cannot_read_and_names_it() {
    let temp = tempfile::tempdir().unwrap();
    for (case, file) in [
        ("fifo", "Cargo.toml"),
        ("zero", "Cargo.toml"),
        ("fifo", "package.json"),
    ] {
        let dir = temp.path().join(format!("{case}-{file}"));
        std::fs::create_dir_all(dir.join("dist")).unwrap();
        std::fs::write(dir.join("qwen-extension.json"), MANIFEST).unwrap();
        let path = dir.join(file);
        if case == "fifo" {
            let status = Command::new("mkfifo").arg(&path).status().unwrap();
            assert!(status.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        }
        let output = ecp_capped(&["lint", dir.to_str().unwrap()], &[], None);
        let said = text(&output);
        assert_eq!(output.status.code(), Some(2), "{case} {file}: {said}");
        assert!(said.contains(file), "{case} {file}: {said}");
        assert!(
            said.contains("is a FIFO") || said.contains("leads out of the folder"),
            "{case} {file}: {said}"
        );
        assert!(!said.contains("clean"), "{case} {file}: {said}");
    }
}
