//! `ecp new --template local-ts`: the TypeScript runtime is copied verbatim
//! from `runtimes/typescript`; the generated project installs from its
//! lockfile, passes its own `node:test` suites (the contract vectors byte
//! for byte, the binding against loopback servers), builds one
//! self-contained `dist/main.js` under 1 MiB, and `ecp lint`, `ecp package`
//! (the same bytes from two folders) and `ecp check` (folder and archive,
//! repeatedly) pass on it. npm's cache is shared in `target/npm-cache`.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
};

use serde_json::Value;

use crate::cli::ecp;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn show(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `PROGRAM ARGS` in `dir` with the shared npm cache, no audit, no funding
/// messages and no stdin.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("npm_config_cache", crate::cli::npm_cache())
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// `ecp ARGS` with the shared npm cache (ecp package runs npm).
fn ecp_npm(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ecp"));
    command
        .args(args)
        .current_dir(dir)
        .env("npm_config_cache", crate::cli::npm_cache())
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null());
    command.output().unwrap()
}

fn generate(dir: &Path) {
    let output = ecp(&[
        "new",
        "acme-context",
        "--template",
        "local-ts",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", show(&output));
}

#[test]
fn the_typescript_runtime_is_copied_verbatim_and_the_package_files_derive_from_it() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    generate(&dir);
    let root = Path::new(ROOT);
    let mut copied = 0;
    for (path, contents) in ecp::scaffold::typescript::verbatim_files() {
        let source = if let Some(rest) = path.strip_prefix("contracts/v1/") {
            root.join("crates/ecp-runtime/contracts/v1").join(rest)
        } else {
            root.join("runtimes/typescript").join(&path)
        };
        let on_disk =
            std::fs::read(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            on_disk == contents,
            "{path} differs from {}",
            source.display()
        );
        let generated = std::fs::read(dir.join(&path)).unwrap();
        assert!(
            generated == on_disk,
            "the generated {path} drifted from its source"
        );
        copied += 1;
    }
    assert!(copied >= 12, "{copied} files");
    // The provider's own file is its mapping only, on the runtime's client
    // (issue 29: at most 80 lines as generated).
    let provider = std::fs::read_to_string(dir.join("src/provider.ts")).unwrap();
    assert!(
        provider.lines().count() <= 80,
        "{} lines",
        provider.lines().count()
    );
    assert!(provider.contains("Upstream") && provider.contains(".post(\"v1/context/search\")"));
    // package.json: the runtime's, with the extension's name and version.
    let runtime: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("runtimes/typescript/package.json")).unwrap(),
    )
    .unwrap();
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    assert_eq!(package["name"], "acme-context");
    assert_eq!(package["version"], "0.1.0");
    for key in ["scripts", "dependencies", "devDependencies", "engines"] {
        assert_eq!(package[key], runtime[key], "{key}");
    }
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package-lock.json")).unwrap())
            .unwrap();
    assert_eq!(lock["name"], "acme-context");
    assert_eq!(lock["packages"][""]["name"], "acme-context");
    assert_eq!(
        lock["packages"][""]["dependencies"],
        runtime["dependencies"]
    );
    // Every version pinned exactly.
    for key in ["dependencies", "devDependencies"] {
        for (name, version) in runtime[key].as_object().into_iter().flatten() {
            let version = version.as_str().unwrap();
            assert!(
                version.chars().all(|c| c.is_ascii_digit() || c == '.'),
                "{name}@{version} is not pinned"
            );
        }
    }
    // The node shape of the reference manifest, passing lint as generated
    // (without the bundle, lint says to build it).
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("qwen-extension.json")).unwrap())
            .unwrap();
    let server = &manifest["mcpServers"]["acme-context"];
    assert_eq!(server["command"], "node");
    assert_eq!(server["args"][0], "${extensionPath}${/}dist${/}main.js");
    let lint = ecp(&["lint", dir.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&lint.stdout).contains("entry-point-missing"),
        "{}",
        show(&lint)
    );
    // A fresh extension carries this ecp's runtime: nothing to upgrade
    // (earlier ones: `tests/it/upgrade.rs`).
    let upgrade = ecp(&["upgrade", dir.to_str().unwrap()]);
    assert_eq!(upgrade.status.code(), Some(0), "{}", show(&upgrade));
    assert!(
        String::from_utf8_lossy(&upgrade.stdout).contains("is current; nothing to do"),
        "{}",
        show(&upgrade)
    );
}

fn conforms(target: &Path, dir: &Path) {
    let output = ecp_npm(
        dir,
        &["check", target.to_str().unwrap(), "--format", "json"],
    );
    let report: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", show(&output)));
    let failed: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "pass" && !crate::check::legitimately_not_applicable(c))
        .collect();
    assert!(failed.is_empty(), "{target:?}: {failed:#?}");
    assert_eq!(report["verdict"], "conforms", "{target:?}");
    // The TypeScript SDK (1.32.2) speaks the initialize revisions only: the
    // 2026-07-28 checks are not applicable, saying so.
    assert_eq!(report["revisions"], serde_json::json!(["2025-11-25"]));
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
}

/// What a stdio session wrote, and how it ended.
struct Session {
    status: std::process::ExitStatus,
    /// stdout's lines, without the `initialize` answer (its `serverInfo`
    /// names the server).
    answers: Vec<String>,
    stderr: String,
    /// The growth of the peak resident set while the input was read
    /// (Linux), in bytes.
    grew: Option<u64>,
}

/// A field of `/proc/PID/status` in bytes (Linux).
fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Runs `command` as Qwen runs a stdio server: `initialize`, then `lines`,
/// then a `ping` whose answer says everything before it was read; stdin
/// closes only then. Each step has a deadline; the process must end within
/// it.
fn session(command: &mut Command, lines: &std::sync::Arc<Vec<Vec<u8>>>) -> Session {
    use std::io::{BufRead as _, Read as _, Write as _};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    const DEADLINE: Duration = Duration::from_secs(60);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (said, answers) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if said.send(line).is_err() {
                break;
            }
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let next = |what: &str| {
        answers.recv_timeout(DEADLINE).unwrap_or_else(|_| {
            panic!("no answer within {DEADLINE:?}, or the process ended ({what})")
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}\n")
        .unwrap();
    let initialized = next("initialize");
    assert!(initialized.contains("\"serverInfo\""), "{initialized}");
    let before = proc_status(pid, "VmRSS:");
    let lines = std::sync::Arc::clone(lines);
    let writer = std::thread::spawn(move || {
        for line in lines.iter() {
            stdin.write_all(line).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"end\",\"method\":\"ping\"}\n")
            .unwrap();
        stdin
    });
    let mut said = Vec::new();
    loop {
        let line = next("the lines");
        let end = line == r#"{"jsonrpc":"2.0","id":"end","result":{}}"#;
        said.push(line);
        if end {
            break;
        }
    }
    let after = proc_status(pid, "VmHWM:");
    drop(writer.join().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("still running after stdin closed: {said:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    said.extend(answers.try_iter());
    Session {
        status,
        answers: said,
        stderr: errors.join().unwrap(),
        grew: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
    }
}

/// The built bundle, as Qwen runs it, against hostile stdin (issue 28,
/// finding 10): a line of 10 MiB + 1 byte and one of 128 MiB, lines that
/// are not UTF-8 or not JSON, batches, odd ids, and the rest of what the
/// Rust runtime's framing refuses. Every line gets the answer the Rust
/// runtime (`ecp serve`) gives, byte for byte; both serve on after each
/// and end with stdin, status 0, saying nothing on stderr; the bundle runs
/// under a 64 MiB heap and its resident set grows by less than 64 MiB
/// while it skips the 128 MiB line.
fn frames_stdin_like_the_rust_runtime(bundle: &Path) {
    const MIB: usize = 1024 * 1024;
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let mut lines: Vec<Vec<u8>> = vec![
        vec![b'a'; 10 * MIB + 1],
        b"not json".to_vec(),
        b"{\xff}".to_vec(),
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".to_vec(),
        b"[]".to_vec(),
        b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]".to_vec(),
        b"7".to_vec(),
        nested(127).into_bytes(),
        nested(128).into_bytes(),
        br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}"#.to_vec(),
        br#"{"jsonrpc":"1.0","id":"a\ud800\u0001\/","method":"ping"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":2,"method":5}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"context_search","arguments":"q"}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":5,"method":"nope"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":6,"method":"tools/call"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"other"}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"context_search","arguments":null}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":null,"extra":1}"#.to_vec(),
        b" \x0c{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}\r".to_vec(),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":99,"result":{}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":11,"method":"tools/list"}"#.to_vec(),
        vec![b' '; 128 * MIB],
    ];
    for id in [
        r#"{"x":1}"#,
        "[1]",
        "1.5",
        "1.0",
        "1e2",
        "-0",
        "null",
        "18446744073709551616",
    ] {
        lines.push(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).into_bytes());
    }
    let lines = std::sync::Arc::new(lines);
    let typescript = session(
        Command::new("node")
            .arg("--max-old-space-size=64")
            .arg(bundle)
            .env("ACME_CONTEXT_BASE_URL", "http://127.0.0.1:9")
            .env("ACME_CONTEXT_TOKEN", "x"),
        &lines,
    );
    let rust = session(
        Command::new(env!("CARGO_BIN_EXE_ecp")).args(["serve", "--fixture", "example"]),
        &lines,
    );
    for (who, ran) in [("typescript", &typescript), ("rust", &rust)] {
        assert_eq!(ran.status.code(), Some(0), "{who}: {}", ran.stderr);
        assert_eq!(ran.stderr, "", "{who} said something on stderr");
        assert_eq!(
            ran.answers.len(),
            lines.len() - 2 + 1,
            "{who}: {:#?}",
            ran.answers
        );
    }
    // The server's own answers may pass the framing's: compared as sets.
    let sorted = |answers: &[String]| {
        let mut answers = answers.to_vec();
        answers.sort();
        answers
    };
    assert_eq!(sorted(&typescript.answers), sorted(&rust.answers));
    let answers = &typescript.answers;
    let too_long = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the line is too long."}}"#;
    assert_eq!(answers[0], too_long);
    assert_eq!(answers.iter().filter(|a| *a == too_long).count(), 2);
    for expected in [
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON."}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not UTF-8."}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: send one JSON-RPC object per line (no batches)."}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: `id` must be a string or an integer."}}"#,
    ] {
        assert!(
            answers.iter().any(|a| a == expected),
            "{expected}: {answers:#?}"
        );
    }
    assert!(
        answers.iter().any(|a| a.starts_with(
            r#"{"jsonrpc":"2.0","id":11,"result":{"tools":[{"name":"context_search""#
        )),
        "{answers:#?}"
    );
    if let Some(grew) = typescript.grew {
        assert!(
            grew < 64 * MIB as u64,
            "the bundle's resident set grew by {grew} bytes"
        );
    }
}

/// The bundle never ends silently: with its stdout gone (the client went
/// away), it says so on stderr in one line and exits 1.
fn says_why_it_stops(bundle: &Path) {
    use std::io::{Read as _, Write as _};
    let mut child = Command::new("node")
        .arg(bundle)
        .env("ACME_CONTEXT_BASE_URL", "http://127.0.0.1:9")
        .env("ACME_CONTEXT_TOKEN", "x")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // Each line is answered; the first answer written finds no reader.
    let _ = stdin.write_all(b"[]\n[]\n");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "still running without a stdout"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr, "acme-context: cannot write to stdout (Error EPIPE)\n",
        "one line, naming no data"
    );
}

#[test]
fn a_generated_typescript_extension_tests_builds_packages_reproducibly_and_conforms() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("one/acme-context");
    generate(&dir);
    let install = run(&dir, "npm", &["ci"]);
    assert!(install.status.success(), "{}", show(&install));
    // Quiet: esbuild's install script is denied by name (`allowScripts`),
    // so npm 11 has nothing to warn about (the bundler's binary comes from
    // its platform package; the build below proves it).
    assert!(
        !String::from_utf8_lossy(&install.stderr).contains("npm warn"),
        "{}",
        show(&install)
    );
    let test = run(&dir, "npm", &["test"]);
    assert!(test.status.success(), "{}", show(&test));
    let said = String::from_utf8_lossy(&test.stdout);
    assert!(
        said.contains("# fail 0") && said.contains("every render vector renders byte for byte"),
        "{said}"
    );
    // One failing assertion before a test closes its loopback server: the
    // run still ends, failed (it hung until killed while the servers were
    // closed only by the tests themselves). `timeout` says 124 if not.
    let tests = dir.join("test/provider.test.ts");
    let kept = std::fs::read_to_string(&tests).unwrap();
    let broken = kept.replacen(
        r#"assert.equal(seen.method, "POST");"#,
        r#"assert.equal(seen.method, "PUT");"#,
        1,
    );
    assert_ne!(broken, kept);
    std::fs::write(&tests, broken).unwrap();
    let failing = run(&dir, "timeout", &["300", "npm", "test"]);
    assert_eq!(failing.status.code(), Some(1), "{}", show(&failing));
    std::fs::write(&tests, kept).unwrap();

    let package = ecp_npm(&dir, &["package"]);
    assert!(package.status.success(), "{}", show(&package));
    let steps = String::from_utf8_lossy(&package.stderr);
    assert!(
        steps.contains("build: npm ci") && steps.contains("build: npm run build"),
        "{steps}"
    );
    let bundle = std::fs::metadata(dir.join("dist/main.js")).unwrap().len();
    assert!(bundle < 1024 * 1024, "the bundle is {bundle} bytes");
    frames_stdin_like_the_rust_runtime(&dir.join("dist/main.js"));
    says_why_it_stops(&dir.join("dist/main.js"));
    // An https upstream directly and through a real forward proxy's CONNECT
    // tunnel (tinyproxy, nginx with a test CA), as the Rust runtime's.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(crate::proxy::https_upstream_through_tinyproxy(
            crate::proxy::Adapter::TypeScript(&dir.join("dist/main.js")),
        ));
    let release = dir.join("release");
    let lint = ecp(&[
        "lint",
        release.to_str().unwrap(),
        "--deny-warnings",
        "--release-tag",
        "v0.1.0",
    ]);
    assert!(lint.status.success(), "{}", show(&lint));
    let archive = release.join("linux.acme-context.tar.gz");
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&archive)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listing.stdout),
        "README.md\ndist/main.js\nqwen-extension.json\n",
        "only the bundle, the manifest and the README ship"
    );

    // The same bytes from another folder, made there by the generated
    // release workflow's own gate script, from a clean tree.
    let other = temp.path().join("two/acme-context");
    generate(&other);
    let workflow = std::fs::read_to_string(other.join(".github/workflows/release.yml")).unwrap();
    let script: String = workflow
        .split("        run: |\n")
        .nth(1)
        .expect("the gate step")
        .lines()
        .take_while(|line| line.starts_with("          "))
        .map(|line| format!("{}\n", line.trim_start()))
        .collect();
    assert!(script.contains("ecp package --out-dir release"), "{script}");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ecp")).parent().unwrap();
    let gate = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(&other)
        .env("TAG", "v0.1.0")
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("npm_config_cache", crate::cli::npm_cache())
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        gate.status.success(),
        "the workflow's gate failed: {}",
        show(&gate)
    );
    assert!(
        std::fs::read(&archive).unwrap()
            == std::fs::read(other.join("release/linux.acme-context.tar.gz")).unwrap(),
        "two builds in two folders differ"
    );

    // Conforms as a folder (twice: the timing faults must not flake) and
    // as the archive Qwen installs.
    conforms(&dir, &dir);
    conforms(&dir, &dir);
    conforms(&archive, &dir);
    // The same provider as Qwen's Auto Recall hook (`node dist/main.js
    // --hook user-prompt-submit`), from the folder and from the archive.
    crate::auto_recall::assert_hook_conforms(&dir);
    crate::auto_recall::assert_hook_conforms(&archive);

    stale_bundles_are_never_judged(&dir);
}

/// Issue 47: `ecp check .` and `ecp call .` on a TypeScript source folder
/// whose `src/` changed after `dist/main.js` run `npm run build` first and
/// say so (the edited code is what answers); without `node_modules` they
/// refuse, naming the commands, and run nothing.
fn stale_bundles_are_never_judged(dir: &Path) {
    let provider = dir.join("src/provider.ts");
    let kept = std::fs::read_to_string(&provider).unwrap();
    // A side effect esbuild keeps, to find in the bundle.
    std::fs::write(
        &provider,
        format!("{kept}\n(globalThis as Record<string, unknown>).ecpEdit = \"edit-7731\";\n"),
    )
    .unwrap();
    let call = ecp_npm(dir, &["call", ".", "deployment policy"]);
    let said = String::from_utf8_lossy(&call.stderr);
    assert!(
        said.contains(&format!(
            "note: running {}, built now by `npm run build` (src/provider.ts changed since;",
            dir.join("dist/main.js").display()
        )),
        "{}",
        show(&call)
    );
    let bundle = std::fs::read_to_string(dir.join("dist/main.js")).unwrap();
    assert!(bundle.contains("edit-7731"), "the bundle was not rebuilt");
    // Current now: no build, and the note says which bundle runs.
    let again = ecp_npm(dir, &["call", ".", "deployment policy"]);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("the bundle of the current code"),
        "{}",
        show(&again)
    );

    std::fs::write(&provider, &kept).unwrap();
    let modules = dir.join("node_modules");
    let away = dir.join("../node_modules.away");
    std::fs::rename(&modules, &away).unwrap();
    let refused = ecp_npm(dir, &["check", ".", "--format", "json"]);
    std::fs::rename(&away, &modules).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("dist/main.js is not the build of the current code (src/provider.ts changed since), and the dependencies are not installed")
            && said.contains("= help: run `npm ci && npm run build` in "),
        "{said}"
    );
    assert!(refused.stdout.is_empty(), "{}", show(&refused));
}

#[test]
fn a_bundle_that_still_imports_packages_is_not_packaged() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    generate(&dir);
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    std::fs::write(
        dir.join("dist/main.js"),
        "const { z } = require(\"zod\");\nrequire(\"node:fs\");\n",
    )
    .unwrap();
    let output = ecp_npm(&dir, &["package", "--skip-build"]);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("still imports")
            && said.contains("zod")
            && said.contains("Qwen installs no packages"),
        "{said}"
    );
    assert!(
        !dir.join("release")
            .join("linux.acme-context.tar.gz")
            .exists()
    );
}

#[test]
fn a_failed_npm_build_leaves_no_archive_that_looks_current() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    generate(&dir);
    // What an earlier, successful run left.
    let release = dir.join("release");
    std::fs::create_dir_all(&release).unwrap();
    for platform in ["linux", "darwin", "win32"] {
        std::fs::write(
            release.join(format!("{platform}.acme-context.tar.gz")),
            "old",
        )
        .unwrap();
    }
    // A lockfile npm cannot read: `npm ci` fails at once.
    std::fs::write(dir.join("package-lock.json"), "{ not json").unwrap();
    let output = ecp_npm(&dir, &["package"]);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("npm ci") && said.contains("failed"), "{said}");
    assert!(
        said.contains("removed the previous linux.acme-context.tar.gz"),
        "{said}"
    );
    for platform in ["linux", "darwin", "win32"] {
        assert!(
            !release
                .join(format!("{platform}.acme-context.tar.gz"))
                .exists()
        );
    }
}

/// Every process below `root` that `/proc` shows, with its command line.
fn descendants(root: u32) -> Vec<(u32, String)> {
    let all: Vec<(u32, u32, String)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid = stat[stat.rfind(')')? + 1..]
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            Some((pid, ppid, cmdline))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, ppid, cmdline) in &all {
            if *ppid == parent && !found.iter().any(|(p, _)| p == pid) {
                found.push((*pid, cmdline.clone()));
                frontier.push(*pid);
            }
        }
    }
    found
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
            Some(state != "Z")
        })
        .unwrap_or(false)
}

/// `ecp package` in `dir`, started the way a shell starts a foreground job
/// (a process group of its own); once a process below it whose command
/// line holds `marker` runs, the whole group gets SIGINT, as a terminal's
/// Ctrl-C sends it. Returns ecp's output and what was running below it.
fn package_interrupted_at(dir: &Path, marker: &str) -> (Output, Vec<(u32, String)>) {
    use std::os::unix::process::CommandExt;
    let child = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .arg("package")
        .current_dir(dir)
        .env("npm_config_cache", crate::cli::npm_cache())
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = std::time::Instant::now();
    let below = loop {
        let below = descendants(pid);
        if below.iter().any(|(_, cmdline)| cmdline.contains(marker)) {
            break below;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "nothing ran {marker:?} below ecp package: {below:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    (child.wait_with_output().unwrap(), below)
}

#[test]
fn ctrl_c_during_package_stops_npm_and_a_rerun_succeeds() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    generate(&dir);
    // A build script that takes a while (and starts a grandchild), so that
    // the Ctrl-C surely lands inside `npm run build`.
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("\"build\": \"esbuild", "\"build\": \"sleep 120 && esbuild"),
    )
    .unwrap();
    let lock = std::fs::read(dir.join("package-lock.json")).unwrap();
    std::fs::remove_file(dir.join("package-lock.json")).unwrap();
    for marker in ["--package-lock-only", "npm ci", "sleep 120"] {
        let (output, below) = package_interrupted_at(&dir, marker);
        assert_eq!(
            output.status.code(),
            Some(130),
            "{marker}: {}",
            show(&output)
        );
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains("interrupted:"), "{marker}: {said}");
        assert!(
            said.contains("run the same command again"),
            "{marker}: {said}"
        );
        // Nothing ecp started outlives it: npm, node, sh and sleep alike.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let left: Vec<&(u32, String)> = below.iter().filter(|(pid, _)| alive(*pid)).collect();
        assert!(left.is_empty(), "{marker}: still running {left:?}");
        let release: Vec<_> = std::fs::read_dir(dir.join("release"))
            .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(release.is_empty(), "{marker}: written {release:?}");
        if marker == "--package-lock-only" {
            // The next points need npm ci to be reached quickly: the
            // project's own lockfile back.
            std::fs::write(dir.join("package-lock.json"), &lock).unwrap();
        }
    }
    std::fs::write(&manifest, &text).unwrap();
    let output = ecp_npm(&dir, &["package"]);
    assert!(output.status.success(), "{}", show(&output));
    let archive = dir.join("release/linux.acme-context.tar.gz");
    let output = ecp(&["lint", archive.to_str().unwrap()]);
    assert!(output.status.success(), "{}", show(&output));
}
