//! `ecp new --template local-ts`: the TypeScript runtime is copied verbatim
//! from `runtimes/typescript`; the generated project installs from its
//! lockfile, passes its own `node:test` suites (the contract vectors byte
//! for byte, the binding against loopback servers), builds one
//! self-contained `dist/main.js` under 1 MiB, and `ecp lint`, `ecp package`
//! (the same bytes from two folders) and `ecp check` (folder and archive,
//! repeatedly) pass on it. npm's cache is shared in `target/npm-cache`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use serde_json::Value;

use crate::cli::ecp;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// npm's download cache, shared by every project the tests install.
fn npm_cache() -> PathBuf {
    Path::new(ROOT).join("target/npm-cache/_npm")
}

fn show(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("npm_config_cache", npm_cache())
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
        .env("npm_config_cache", npm_cache())
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
        for (name, version) in runtime[key].as_object().unwrap() {
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
    // `ecp upgrade` says plainly that it does not handle this layout yet.
    let upgrade = ecp(&["upgrade", dir.to_str().unwrap()]);
    assert_eq!(upgrade.status.code(), Some(2), "{}", show(&upgrade));
    assert!(
        String::from_utf8_lossy(&upgrade.stderr).contains("a TypeScript (local-ts) extension"),
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
        .filter(|c| c["status"] != "pass")
        .collect();
    assert!(failed.is_empty(), "{target:?}: {failed:#?}");
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
}

/// The built bundle, as Qwen runs it, against hostile stdin (issue 28): a
/// line over 10 MiB, a line that is not JSON, a batch, an object id. Each
/// gets the Rust runtime's answer, the server keeps serving, its heap stays
/// small (Node under a 64 MiB old-space cap), and it ends with stdin,
/// status 0, never silently before.
fn frames_stdin_like_the_rust_runtime(bundle: &Path) {
    use std::io::Write as _;
    let mut child = Command::new("node")
        .arg("--max-old-space-size=64")
        .arg(bundle)
        .env("ACME_CONTEXT_BASE_URL", "http://127.0.0.1:9")
        .env("ACME_CONTEXT_TOKEN", "x")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let piece = vec![b'a'; 1024 * 1024];
        for _ in 0..11 {
            stdin.write_all(&piece).unwrap();
        }
        stdin.write_all(b"\nnot json\n[]\n").unwrap();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}\n")
            .unwrap();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}\n")
            .unwrap();
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    let answers: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let codes: Vec<i64> = answers
        .iter()
        .filter_map(|a| a["error"]["code"].as_i64())
        .collect();
    assert_eq!(codes, [-32600, -32700, -32600, -32600], "{answers:?}");
    assert_eq!(
        answers[0]["error"]["message"],
        "Invalid Request: the line is too long."
    );
    let listed = answers
        .iter()
        .find(|a| a["id"] == 5)
        .expect("tools/list answered");
    assert_eq!(listed["result"]["tools"][0]["name"], "context_search");
}

#[test]
fn a_generated_typescript_extension_tests_builds_packages_reproducibly_and_conforms() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("one/acme-context");
    generate(&dir);
    let install = run(&dir, "npm", &["ci"]);
    assert!(install.status.success(), "{}", show(&install));
    let test = run(&dir, "npm", &["test"]);
    assert!(test.status.success(), "{}", show(&test));
    let said = String::from_utf8_lossy(&test.stdout);
    assert!(
        said.contains("# fail 0") && said.contains("every render vector renders byte for byte"),
        "{said}"
    );

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
        .env("npm_config_cache", npm_cache())
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
