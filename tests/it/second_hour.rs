//! Issue 34, "the second hour": a closed stdout stops every command
//! quietly, one path rule for every command, help and the generated README
//! that agree with the tool, and a remote template whose placeholder
//! endpoint cannot be released.

use std::{
    io::Read,
    path::Path,
    process::{Command, Output, Stdio},
};

use crate::cli::{ecp, ecp_new, prebuilt};
use crate::hostile::text;

fn ecp_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ecp")
}

/// A command whose stdout is a pipe nobody reads any more.
fn with_closed_stdout(args: &[&str], cwd: &Path) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(ecp_bin())
        .args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// A command whose reader takes the first bytes of stdout, then goes away
/// (`| head -c 1`): (status, stderr).
fn with_stdout_cut(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(ecp_bin())
        .args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    let _ = stdout.read(&mut first);
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_quiet(args: &[&str], code: Option<i32>, stderr: &str) {
    for noise in ["panicked", "backtrace", "Broken pipe", "failed printing"] {
        assert!(!stderr.contains(noise), "ecp {args:?}: {stderr}");
    }
    assert_ne!(code, Some(101), "ecp {args:?}: {stderr}");
}

#[test]
fn a_closed_stdout_stops_every_command_quietly_with_141() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &["--template", "remote"]).status.success());
    let folder = dir.to_str().unwrap();
    let serve = [ecp_bin(), "serve", "--fixture", "example"];
    let commands: Vec<Vec<&str>> = vec![
        vec!["explain", "include-tools"],
        vec!["explain"],
        vec!["lint", "--help"],
        vec!["check", "--help"],
        vec!["package", "--help"],
        vec!["--version"],
        vec!["lint", folder, "--format", "json"],
        vec!["lint", folder],
        vec!["completions", "bash"],
        vec!["new", "beta-context", "--yes", "--template", "remote"],
        // A command that writes to a server's stdin first: only stdout's
        // reader went away.
        [&["call", "deployment policy", "--"][..], &serve[..]].concat(),
    ];
    for args in &commands {
        let output = with_closed_stdout(args, temp.path());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_quiet(args, output.status.code(), &stderr);
        // Nothing could be written: the status says so, as cat's would.
        assert_eq!(output.status.code(), Some(141), "ecp {args:?}: {stderr}");
        let (code, stderr) = with_stdout_cut(args, temp.path());
        assert_quiet(args, code, &stderr);
        assert!(
            matches!(code, Some(0 | 1 | 141)),
            "ecp {args:?}: {code:?} {stderr}"
        );
    }
    // Through a shell, as a user types it.
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "\"{}\" explain | head -1 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
            ecp_bin()
        ))
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(matches!(status.as_str(), "0" | "141"), "{}", text(&output));
    assert_quiet(&["explain"], None, &String::from_utf8_lossy(&output.stderr));
}

/// The one line of a could-not-run error, and its help.
fn refused(output: &Output) -> (String, String) {
    assert_eq!(output.status.code(), Some(2), "{}", text(output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let error = stderr
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"))
        .to_owned();
    let help = stderr
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("= help: "))
        .unwrap_or_else(|| panic!("no help line: {stderr}"))
        .to_owned();
    (error, help)
}

#[test]
fn one_path_rule_for_every_command() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path();
    let dir = root.join("ext");
    assert!(ecp_new(&dir, &[]).status.success());
    let manifest = dir.join("qwen-extension.json");
    let manifest = manifest.to_str().unwrap();
    let archive = root.join("linux.x64.acme-context.tar.gz");
    std::fs::write(&archive, "not really").unwrap();
    let archive = archive.to_str().unwrap();
    let dist = root.join("dist");
    std::fs::create_dir(&dist).unwrap();
    std::fs::write(dist.join("linux.x64.acme-context.tar.gz"), "x").unwrap();
    let folder_named_archive = root.join("folder.tar.gz");
    std::fs::create_dir(&folder_named_archive).unwrap();
    let plain_folder = root.join("plain");
    std::fs::create_dir(&plain_folder).unwrap();
    let plain_folder = plain_folder.to_str().unwrap();
    let ext = dir.to_str().unwrap();

    // (args, the path named, what the message says, what the help says)
    let cases: Vec<(Vec<&str>, &str, &str, String)> = vec![
        // A file where a folder is expected.
        (
            vec!["package", archive],
            archive,
            "is a file; `ecp package` takes the extension folder",
            "`ecp lint`, `ecp check` and `ecp verify` take archives".into(),
        ),
        (
            vec!["package", manifest],
            manifest,
            "is a file; `ecp package` takes the extension folder",
            format!("`ecp package {ext}`"),
        ),
        (
            vec!["upgrade", manifest],
            manifest,
            "is a file; `ecp upgrade` takes the extension folder",
            format!("`ecp upgrade {ext}`"),
        ),
        (
            vec!["upgrade", archive],
            archive,
            "is a file; `ecp upgrade` takes the extension folder",
            "take archives".into(),
        ),
        (
            vec!["new", "beta-context", "--yes", "--dir", archive],
            archive,
            "is a file; `ecp new --dir` takes a folder",
            "pick another path".into(),
        ),
        (
            vec!["check", manifest],
            manifest,
            "is a file; `ecp check` takes an extension folder or a .tar.gz/.zip archive",
            format!("`ecp check {ext}`"),
        ),
        (
            vec!["call", manifest, "deployment policy"],
            manifest,
            "is a file; `ecp call` takes an extension folder or a .tar.gz/.zip archive",
            format!("`ecp call {ext}`"),
        ),
        (
            vec!["package", ext, "--out-dir", archive],
            archive,
            "is a file; `ecp package --out-dir` takes a folder",
            "pick another path".into(),
        ),
        // A folder where a file is expected.
        (
            vec!["verify", dist.to_str().unwrap()],
            dist.to_str().unwrap(),
            "is a folder; `ecp verify` takes a .tar.gz/.zip release archive",
            "e.g. `ecp verify".into(),
        ),
        (
            vec!["verify", ext],
            ext,
            "is a folder; `ecp verify` takes a .tar.gz/.zip release archive",
            "`ecp package` writes its archives into dist/".into(),
        ),
        (
            vec!["lint", folder_named_archive.to_str().unwrap()],
            folder_named_archive.to_str().unwrap(),
            "is a folder; `ecp lint` takes",
            "pass the archive file itself".into(),
        ),
        (
            vec!["package", ext, "--binary", plain_folder],
            plain_folder,
            "is a folder; `ecp package --binary` takes a file",
            "pass the file itself".into(),
        ),
        (
            vec!["check", ext, "--cassette", plain_folder],
            plain_folder,
            "is a folder; `ecp check --cassette` takes a file",
            "pass the file itself".into(),
        ),
        (
            vec!["call", ext, "q", "--fixture", plain_folder],
            plain_folder,
            "is a folder; `ecp call --fixture` takes a file",
            "pass the file itself".into(),
        ),
        (
            vec!["verify", archive, "--key", plain_folder],
            plain_folder,
            "is a folder; `ecp verify --key` takes a file",
            "pass the file itself".into(),
        ),
    ];
    for (args, path, says, helps) in cases {
        let output = ecp(&args);
        let (error, help) = refused(&output);
        assert!(
            error.starts_with(&format!("{path} {says}")),
            "ecp {args:?}: {error}"
        );
        // The path once, never joined to what the command looks for in it.
        assert_eq!(
            text(&output).matches(path).count(),
            1 + help.matches(path).count()
        );
        assert!(!text(&output).contains(&format!("{path}/")) || help.contains(path));
        assert!(help.contains(&helps), "ecp {args:?}: {help}");
    }
    // Nothing was written beside the archive or into the manifest's name.
    assert!(!root.join("linux.x64.acme-context.tar.gz/dist").exists());
    assert!(!dir.join("dist").exists());
}

#[test]
fn package_help_names_the_real_default_time() {
    let help = String::from_utf8_lossy(&ecp(&["package", "--help"]).stdout).into_owned();
    assert!(help.contains("else 1980-01-01"), "{help}");
    assert!(!help.contains("2000-01-01"), "{help}");
    // 1980-01-01T00:00:00Z.
    assert_eq!(ecp::package::DEFAULT_EPOCH, 315_532_800);
}

/// The ```sh block after "By hand" in a generated README.
fn by_hand_block(readme: &str) -> String {
    let after = readme
        .split("By hand, for the machine you are on:")
        .nth(1)
        .expect("the README has its by-hand release steps");
    after
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap()
        .to_owned()
}

#[test]
fn the_generated_readmes_by_hand_release_steps_work_as_written() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    assert!(ecp_new(&dir, &[]).status.success());
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let block = by_hand_block(&readme);
    let lines: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(lines[0], "ecp package", "{block}");
    // The build is stood in for by a prebuilt file (the tests are about
    // the steps, not the compiler); the lint runs exactly as written.
    let binary = prebuilt(temp.path());
    let script = format!(
        "set -e\n{} --binary {}\n{}\n",
        lines[0],
        binary.display(),
        lines[1..].join("\n")
    );
    let bin_dir = Path::new(ecp_bin()).parent().unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env(
            "PATH",
            format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
        )
        .env("CARGO_NET_OFFLINE", "true")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "{script}\n{}", text(&output));
    assert!(
        text(&output).contains("ecp lint: clean"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_placeholder_endpoint_is_a_lint_error_and_new_says_so() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    let output = ecp_new(&dir, &["--template", "remote"]);
    assert!(output.status.success(), "{}", text(&output));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("Before release, give the endpoint")
            && said.contains("--endpoint URL")
            && said.contains("https://context.acme.example/mcp"),
        "{said}"
    );
    let output = ecp(&["lint", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert_eq!(rules, ["remote-placeholder"], "{report}");
    // It is not packaged for release.
    let output = ecp(&["package", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("remote-placeholder"),
        "{}",
        text(&output)
    );
    assert!(!dir.join("dist").exists());
    // `ecp explain` knows the rule.
    let output = ecp(&["explain", "remote-placeholder"]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("--endpoint URL"));

    // The reserved names, and real ones that only look alike.
    for (url, reserved) in [
        ("https://context.acme.example/mcp", true),
        ("https://ctx.acme.test/mcp", true),
        ("https://ctx.invalid/mcp", true),
        ("https://localhost:8443/mcp", true),
        ("https://a.localhost/mcp", true),
        ("https://search.example.com/mcp", true),
        ("https://example.org/mcp", true),
        ("https://EXAMPLE.NET./mcp", true),
        ("https://context.acme.dev/mcp", false),
        ("https://example.company.com/mcp", false),
        ("https://notexample.com/mcp", false),
        ("https://context.example.co/mcp", false),
        ("https://127.0.0.1/mcp", true),
        ("https://127.9.9.9:8443/mcp", true),
        ("https://[::1]/mcp", true),
        ("https://0.0.0.0/mcp", true),
        ("https://10.0.0.7/mcp", false),
        ("https://[2001:db8::1]/mcp", false),
    ] {
        assert_eq!(
            ecp::lint::manifest::reserved_domain(url).is_some(),
            reserved,
            "{url}"
        );
    }

    // With --endpoint, nothing to say.
    let dir = temp.path().join("real");
    let output = ecp_new(
        &dir,
        &[
            "--template",
            "remote",
            "--endpoint",
            "https://context.acme.dev/mcp",
        ],
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("Before release"));
    assert!(ecp(&["lint", dir.to_str().unwrap()]).status.success());
}

#[test]
fn the_remote_prompt_asks_for_a_real_endpoint() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    let (status, screen) = crate::cli::on_a_terminal(
        &format!(
            "{} new acme-context --template remote --dir {}",
            ecp_bin(),
            dir.display()
        ),
        &[
            ("Description", "\r"),
            ("Endpoint", "https://context.acme.example/mcp\r"),
            ("reserved domain", "https://context.acme.dev/mcp\r"),
        ],
    );
    assert!(status.success(), "{screen}");
    let manifest = std::fs::read_to_string(dir.join("qwen-extension.json")).unwrap();
    assert!(
        manifest.contains("https://context.acme.dev/mcp"),
        "{manifest}"
    );
    assert!(!screen.contains("Before release"), "{screen}");
}

#[test]
fn an_endpoint_that_cannot_be_reached_says_what_to_do() {
    // The placeholder the remote template writes with --yes: a reserved
    // name, said as such, with the fix.
    let output = ecp(&["check", "--url", "https://context.acme.example/mcp"]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("cannot resolve context.acme.example"),
        "{said}"
    );
    assert!(
        said.contains("= help: that is a reserved placeholder name")
            && said.contains("--endpoint URL"),
        "{said}"
    );
    // Nothing listening: the fix too.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = ecp(&[
        "call",
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
        "q",
    ]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("connection refused") && said.contains("= help: start the server"),
        "{said}"
    );
}

/// `ecp call . QUERY` in `dir` against `base_url`, with the shared npm cache
/// and target folder.
fn call_against(dir: &Path, base_url: &str) -> Output {
    Command::new(ecp_bin())
        .args(["call", ".", "deployment policy"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .env("CARGO_NET_OFFLINE", "true")
        .env("ACME_CONTEXT_BASE_URL", base_url)
        .env("ACME_CONTEXT_TOKEN", "t")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The documented edit (the mapping reads `body` where it read `content`)
/// reaches the result through the whole server, in both local templates:
/// nothing between the upstream and the mapping reads the V1 names first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_renamed_in_each_templates_mapping_reaches_the_result() {
    use ecp::check::upstream::{Reply, Upstream};
    let upstream = Upstream::start(|_| {
        Reply::json(r#"{"items":[{"id":"a","body":"renamed field reached the result","content":"the V1 name"}]}"#)
    })
    .await;
    let temp = tempfile::tempdir().unwrap();

    // A name of its own: `ecp call .` builds `target/generated/debug/NAME`,
    // which other tests build from unedited acme-context folders.
    let rust = temp.path().join("renamed-context");
    let made = ecp(&[
        "new",
        "renamed-context",
        "--yes",
        "--env-prefix",
        "ACME_CONTEXT",
        "--dir",
        rust.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let mapping = rust.join("src/provider.rs");
    let source = std::fs::read_to_string(&mapping).unwrap();
    let edited = source.replace(
        "content: string(value, \"content\")",
        "content: string(value, \"body\")",
    );
    assert_ne!(
        edited, source,
        "the Rust mapping names `content` as documented"
    );
    std::fs::write(&mapping, edited).unwrap();

    let ts = temp.path().join("acme-context-ts");
    assert!(ecp_new(&ts, &["--template", "local-ts"]).status.success());
    let mapping = ts.join("src/provider.ts");
    let source = std::fs::read_to_string(&mapping).unwrap();
    let edited = source.replace("content: text(item?.content)", "content: text(item?.body)");
    assert_ne!(
        edited, source,
        "the TypeScript mapping names `content` as documented"
    );
    std::fs::write(&mapping, edited).unwrap();
    let cache = crate::cli::npm_cache();
    for args in [&["ci", "--no-audit", "--no-fund"][..], &["run", "build"]] {
        let output = Command::new("npm")
            .args(args)
            .current_dir(&ts)
            .env("npm_config_cache", &cache)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "npm {args:?}: {}", text(&output));
    }

    for dir in [&rust, &ts] {
        let output = tokio::task::block_in_place(|| call_against(dir, &upstream.base_url));
        assert!(
            output.status.success(),
            "{}: {}",
            dir.display(),
            text(&output)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("renamed field reached the result") && !stdout.contains("the V1 name"),
            "{}: {stdout}",
            dir.display()
        );
    }
}
