//! Repository automation: `cargo xtask <task>`.
//!
//! - `ci`: formatting, clippy and the test suite, as `.ci/run` runs them.
//! - `codegen [--check]`: regenerate `contracts/v1` vectors from their
//!   ECMAScript generator (`--check` fails when they are stale).
//! - `e2e [--prepare]`: install the pinned real clients (Qwen Code, MCP
//!   Inspector, the Python MCP SDK) into `target/e2e-cache/` and run
//!   `tests/e2e` (`--prepare`: only the installs).
//! - `bench [--quick]`: measure the runtime and the packager against the
//!   TypeScript SDK, a stdio floor, `tar | gzip` and `mcpb`, and the
//!   edit-check loop; writes `bench/RESULTS.md`. `bench --edit-loop`
//!   measures only the loop and prints it; `bench --ceiling` only the
//!   remote adapter against the hyper ceiling; `bench --peers [--quick]`
//!   only the peers' rulers (sco3/mcp-benchmark's single client and TM
//!   Dev Lab's 50 users against the adapter, rmcp's server and FastMCP).
//! - `fuzz [--time N] [--build] [--sanitizer none|address]`: run every
//!   `cargo fuzz` target of `fuzz/` for N seconds each (default 60) from its
//!   seed corpus in `fuzz/seeds/`; fails on a crash, a timeout or an
//!   out-of-memory (installs cargo-fuzz first when it is missing; needs the
//!   nightly toolchain); `--build` only builds them; the sanitizer is none
//!   unless `address` is asked for (the weekly workflow job).
//! - `rmcp-next`: the runtime requires rmcp `~3.11` because its Streamable
//!   HTTP endpoint is a port of rmcp 3.11's rules; this copies the checkout
//!   into `target/rmcp-next/`, lets rmcp float to the newest 3.x there, and
//!   runs the byte-for-byte comparison with rmcp's own service
//!   (`tests/it/http_protocol.rs`). Pass: the pin may move to that version
//!   (a deliberate runtime release). Needs the crates.io registry.
//! - `demo`: install `ecp` (README's `cargo install --locked --path .`, into
//!   `target/demo-install`), scaffold and lint an extension, run one MCP
//!   session of `ecp serve` against the example corpus, then one call to the
//!   same runtime as the remote adapter (`--listen`, Streamable HTTP) and
//!   stop it with SIGTERM; ends on a one-line verdict. `demo --install`:
//!   only the install (CI builds it beside the fuzz targets).

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    run_in(&root(), &[], program, args)
}

/// Runs `program ARGS` in `dir` with `env` added, showing the command.
fn run_in(dir: &Path, env: &[(&str, &Path)], program: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} {} failed ({status})", args.join(" ")))
    }
}

fn ci() -> Result<(), String> {
    run("cargo", &["fmt", "--all", "--", "--check"])?;
    run(
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    )?;
    run("cargo", &["test", "--workspace"])
}

fn codegen(check: bool) -> Result<(), String> {
    let script = "xtask/contracts/generate.mjs";
    if check {
        run("node", &[script, "--check"])
    } else {
        run("node", &[script])
    }
}

/// The pinned peers of the real-client suite.
const QWEN: &str = "@qwen-code/qwen-code@0.24.4";
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";
/// The authorization server of the OAuth end-to-end test.
const OIDC_PROVIDER: &str = "oidc-provider@9.13.3";
const PYTHON_MCP: &str = "mcp==2.3.0";
/// A stdio server nobody here wrote, for `ecp check --conformance`. (The
/// official conformance suite itself is installed by ecp, on demand,
/// against its own lockfile: `contracts/conformance/`.)
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The other clients and channels of `tests/e2e/channels.rs`, at the
/// versions `docs/channels-facts.md` measured, and a loopback npm registry.
const CHANNELS: &[&str] = &[
    "@google/gemini-cli@0.61.0",
    "@anthropic-ai/claude-code@2.1.332",
    "@anthropic-ai/mcpb@2.1.2",
    "verdaccio@6.10.4",
];

/// Installs `what` once: `install` runs only when `marker` does not hold
/// `what` (missing, or written for another list), and the marker is written
/// after it succeeds.
fn once(
    marker: &Path,
    what: &str,
    install: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    if std::fs::read_to_string(marker).is_ok_and(|done| done == what) {
        eprintln!("{what}: cached");
        return Ok(());
    }
    install()?;
    std::fs::write(marker, what).map_err(|e| format!("{}: {e}", marker.display()))
}

/// Installs pinned npm `packages` into `dir` once (cached by a marker).
fn npm_once(dir: &Path, packages: &[&str]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir_str = dir.to_str().ok_or("non-UTF-8 path")?;
    once(&dir.join(".installed"), &packages.join(" "), || {
        let mut args = vec![
            "install",
            "--prefix",
            dir_str,
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ];
        args.extend_from_slice(packages);
        run("npm", &args)
    })
}

/// The real clients' installs (npm, PyPI), which `e2e` makes on first use;
/// `.ci/run` makes them beside the test step.
fn e2e_prepare() -> Result<(), String> {
    let cache = root().join("target/e2e-cache");
    npm_once(&cache.join("npm"), &[QWEN, INSPECTOR, OIDC_PROVIDER])?;
    npm_once(&cache.join("everything"), &[EVERYTHING])?;
    npm_once(&cache.join("channels"), CHANNELS)?;
    let venv = cache.join("pyenv");
    let venv_str = venv.to_str().ok_or("non-UTF-8 path")?;
    once(&cache.join(".python-installed"), PYTHON_MCP, || {
        run("python3", &["-m", "venv", venv_str])?;
        let pip = venv.join("bin/pip");
        run(
            pip.to_str().ok_or("non-UTF-8 path")?,
            &["install", "--quiet", PYTHON_MCP],
        )
    })
}

fn e2e() -> Result<(), String> {
    e2e_prepare()?;
    let cache = root().join("target/e2e-cache");
    // A deliberately broken server proves the clients' validation is on.
    run("cargo", &["build", "--quiet", "--example", "broken-server"])?;
    // Two at a time: the tests share only what a `OnceLock` makes once (the
    // packaged extension and its unpacked copy) and an archive `ecp package`
    // replaces by a rename. Measured 2026-12-08 on 2 cores after a clean
    // clone's suite: 337 s one at a time, 198 and 203 s two at a time (the
    // clients' start-ups and waits overlap), the 35 tests passing each run.
    eprintln!(
        "$ ECP_E2E_CACHE={} cargo test --test e2e -- --test-threads=2",
        cache.display()
    );
    let status = Command::new("cargo")
        .args(["test", "--test", "e2e", "--", "--test-threads=2"])
        .env("ECP_E2E_CACHE", &cache)
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("the end-to-end suite failed".into())
    }
}

/// Whether every file under `a` exists under `b` with the same bytes (the
/// generated tree has no other files to compare).
fn same_tree(a: &Path, b: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(a) else {
        return false;
    };
    entries.filter_map(Result::ok).all(|entry| {
        let (from, to) = (entry.path(), b.join(entry.file_name()));
        if from.is_dir() {
            same_tree(&from, &to)
        } else {
            matches!((std::fs::read(&from), std::fs::read(&to)), (Ok(x), Ok(y)) if x == y)
        }
    })
}

/// The peers of the benchmarks.
const TS_SDK: &str = "@modelcontextprotocol/sdk@1.32.2";
const ZOD: &str = "zod@3.25.76";
const MCPB: &str = "@anthropic-ai/mcpb@2.1.2";
/// The Python peer of the HTTP comparison, from PyPI.
const FASTMCP: &str = "fastmcp==4.2.3";

/// Builds ecp and the bench program for release, and two fresh `ecp new`
/// extensions (each rebuilt only when a generated file changed): the
/// default one, whose `dist/main` the stdio rows and the size and build
/// targets measure, and one made with `--server`, the build a remote
/// deployment runs, which the HTTP rows measure. Returns ecp, the two
/// release binaries and the default extension's folder.
fn bench_extension() -> Result<(PathBuf, PathBuf, PathBuf, PathBuf), String> {
    let target = root().join("target");
    run(
        "cargo",
        &[
            "build",
            "--release",
            "--quiet",
            "--bin",
            "ecp",
            "--example",
            "bench",
        ],
    )?;
    let ecp = target.join("release/ecp");
    let (main, extension) = generated_extension(&ecp, "acme-context", &[])?;
    // The same name (so the same environment variables), its own folder
    // and target folder.
    let (server_main, _) = generated_extension(&ecp, "acme-context-server", &["--server"])?;
    Ok((ecp, main, server_main, extension))
}

/// `ecp new acme-context --yes EXTRA` in `target/bench-work/FOLDER`, built
/// for release into `target/generated` (`target/generated-FOLDER` for
/// another folder): the binary and the folder. It is generated anew every
/// run but only replaces the previous one when a file differs, so an
/// unchanged extension is not rebuilt.
fn generated_extension(
    ecp: &Path,
    folder: &str,
    extra: &[&str],
) -> Result<(PathBuf, PathBuf), String> {
    let name = "acme-context";
    let target = root().join("target");
    let work = target.join("bench-work");
    let extension = work.join(folder);
    let fresh = work.join("fresh");
    let _ = std::fs::remove_dir_all(&fresh);
    let mut args = vec![
        "new",
        name,
        "--yes",
        "--dir",
        fresh.to_str().ok_or("non-UTF-8 path")?,
    ];
    args.extend_from_slice(extra);
    run(ecp.to_str().ok_or("non-UTF-8 path")?, &args)?;
    if same_tree(&fresh, &extension) {
        let _ = std::fs::remove_dir_all(&fresh);
    } else {
        let _ = std::fs::remove_dir_all(&extension);
        std::fs::rename(&fresh, &extension).map_err(|e| format!("{}: {e}", extension.display()))?;
    }
    let target_dir = match folder {
        "acme-context" => target.join("generated"),
        other => target.join(format!("generated-{other}")),
    };
    let status = Command::new("cargo")
        .args(["build", "--release", "--quiet"])
        .current_dir(&extension)
        .env("CARGO_TARGET_DIR", &target_dir)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the generated extension in {folder} failed"
        ));
    }
    Ok((target_dir.join("release").join(name), extension))
}

fn bench(quick: bool) -> Result<(), String> {
    let (ecp, main, server_main, extension) = bench_extension()?;
    let target = root().join("target");
    let ecp_str = ecp.to_str().ok_or("non-UTF-8 path")?;
    let work = target.join("bench-work");

    // The TypeScript template, generated and packaged (npm ci, npm run build).
    let ts_extension = work.join("typescript/acme-context");
    let _ = std::fs::remove_dir_all(&ts_extension);
    run(
        ecp_str,
        &[
            "new",
            "acme-context",
            "--template",
            "local-ts",
            "--yes",
            "--dir",
            ts_extension.to_str().ok_or("non-UTF-8 path")?,
        ],
    )?;
    run(
        ecp_str,
        &["package", ts_extension.to_str().ok_or("non-UTF-8 path")?],
    )?;

    // The peers: the TypeScript SDK server and mcpb.
    let npm = target.join("bench-cache/npm");
    npm_once(&npm, &[TS_SDK, ZOD, MCPB])?;
    for (from, to) in [
        ("tests/bench/reference-server.mjs", "reference-server.mjs"),
        ("xtask/contracts/render.mjs", "render.mjs"),
    ] {
        std::fs::copy(root().join(from), npm.join(to)).map_err(|e| format!("{from}: {e}"))?;
    }

    let mut args = fastmcp_args()?;
    args.extend([
        "--ecp".to_owned(),
        ecp_str.to_owned(),
        "--main".to_owned(),
        main.display().to_string(),
        "--server-main".to_owned(),
        server_main.display().to_string(),
        "--extension".to_owned(),
        extension.display().to_string(),
        "--node-server".to_owned(),
        npm.join("reference-server.mjs").display().to_string(),
        "--ts-extension".to_owned(),
        ts_extension.display().to_string(),
        "--mcpb".to_owned(),
        npm.join("node_modules/.bin/mcpb").display().to_string(),
        "--out".to_owned(),
        root().join("bench/RESULTS.md").display().to_string(),
    ]);
    if quick {
        args.push("--quick".to_owned());
    }
    let bench = target.join("release/examples/bench");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(bench.to_str().ok_or("non-UTF-8 path")?, &args)?;
    let section = edit_loop(&ecp, quick)?;
    let results = root().join("bench/RESULTS.md");
    let text =
        std::fs::read_to_string(&results).map_err(|e| format!("{}: {e}", results.display()))?;
    std::fs::write(&results, format!("{text}{section}"))
        .map_err(|e| format!("{}: {e}", results.display()))
}

/// FastMCP in a virtual environment of its own (installed once), and the
/// bench program's arguments that name it and its server script.
fn fastmcp_args() -> Result<Vec<String>, String> {
    let target = root().join("target");
    let venv = target.join("bench-cache/pyenv");
    let venv_str = venv.to_str().ok_or("non-UTF-8 path")?;
    once(
        &target.join("bench-cache/.python-installed"),
        FASTMCP,
        || {
            run("python3", &["-m", "venv", venv_str])?;
            let pip = venv.join("bin/pip");
            run(
                pip.to_str().ok_or("non-UTF-8 path")?,
                &["install", "--quiet", FASTMCP],
            )
        },
    )?;
    Ok(vec![
        "--python".to_owned(),
        venv.join("bin/python").display().to_string(),
        "--fastmcp-server".to_owned(),
        root()
            .join("tests/bench/fastmcp_server.py")
            .display()
            .to_string(),
    ])
}

/// `cargo xtask bench --peers [--quick]`: only the peers' rulers
/// (sco3/mcp-benchmark's single client, TM Dev Lab's 50 users) against the
/// remote adapter, rmcp's server and FastMCP, printed.
fn bench_peers(quick: bool) -> Result<(), String> {
    let (_, _, server_main, _) = bench_extension()?;
    let mut args = fastmcp_args()?;
    args.extend([
        "--peers".to_owned(),
        "--main".to_owned(),
        server_main.display().to_string(),
    ]);
    if quick {
        args.push("--quick".to_owned());
    }
    let bench = root().join("target/release/examples/bench");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(bench.to_str().ok_or("non-UTF-8 path")?, &args)
}

/// `cargo xtask bench --ceiling`: only the remote adapter with OAuth against
/// the hyper fixed-body ceiling, the rounds of the full bench's HTTP
/// comparison, printed (a minute, for working on the HTTP path).
fn bench_ceiling() -> Result<(), String> {
    let (_, _, server_main, _) = bench_extension()?;
    let bench = root().join("target/release/examples/bench");
    run(
        bench.to_str().ok_or("non-UTF-8 path")?,
        &[
            "--ceiling",
            "--main",
            server_main.to_str().ok_or("non-UTF-8 path")?,
        ],
    )
}

/// `cargo xtask bench --edit-loop`: only the edit-check loop, printed.
fn bench_edit_loop() -> Result<(), String> {
    run("cargo", &["build", "--release", "--quiet", "--bin", "ecp"])?;
    print!("{}", edit_loop(&root().join("target/release/ecp"), false)?);
    Ok(())
}

/// The line of the generated mapping the loop edits, and what it becomes:
/// a real change of code (not a comment) that behaves the same, so every
/// round ends on the same verdict.
const MAPPING_EDIT: [&str; 2] = [
    "id: string(value, \"id\").unwrap_or_default(),",
    "id: string(value, \"id\").unwrap_or_else(String::new),",
];

/// A provider engineer's loop in a fresh `ecp new` extension (built once
/// first, into the shared `target/generated`): edit one line of the
/// mapping, then `ecp check .` to its verdict (ecp builds the extension
/// with cargo's dev profile, as `cargo test` does). Rounds of the rebuild
/// alone (`cargo build`) and of the whole loop, and, as the baseline in the
/// same run (not with `--quick`), one release rebuild after the same edit,
/// which is what running `ecp package` (or `cargo build --release`) before
/// each check cost. Returns a RESULTS.md section; the loop's target (under
/// 15 s on 2 cores) is reported, never asserted.
fn edit_loop(ecp: &Path, quick: bool) -> Result<String, String> {
    let target_dir = root().join("target/generated");
    let extension = root().join("target/bench-work/edit-loop/loop-context");
    let _ = std::fs::remove_dir_all(&extension);
    let ecp_str = ecp.to_str().ok_or("non-UTF-8 path")?;
    let extension_str = extension.to_str().ok_or("non-UTF-8 path")?;
    run(
        ecp_str,
        &["new", "loop-context", "--yes", "--dir", extension_str],
    )?;
    let provider = extension.join("src/provider.rs");
    let mut round = 0;
    let mut edit = || -> Result<(), String> {
        let code = std::fs::read_to_string(&provider).map_err(|e| e.to_string())?;
        let (from, to) = (MAPPING_EDIT[round % 2], MAPPING_EDIT[(round + 1) % 2]);
        round += 1;
        if !code.contains(from) {
            return Err(format!(
                "{} no longer holds `{from}`; update MAPPING_EDIT",
                provider.display()
            ));
        }
        std::fs::write(&provider, code.replacen(from, to, 1)).map_err(|e| e.to_string())
    };
    let timed = |program: &str, args: &[&str]| -> Result<(f64, Option<i32>), String> {
        let started = std::time::Instant::now();
        let status = Command::new(program)
            .args(args)
            .current_dir(&extension)
            .env("CARGO_TARGET_DIR", &target_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        Ok((started.elapsed().as_secs_f64(), status.code()))
    };
    let median = |mut samples: Vec<f64>| {
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    let cargo = |profile: &'static str| ["build", "--quiet", "--profile", profile];
    eprintln!("edit-check loop: first dev build, then the check");
    let (first, verdict) = timed(ecp_str, &["check", "."])?;
    if verdict != Some(0) {
        return Err(format!(
            "ecp check of a fresh extension exited with {verdict:?}"
        ));
    }
    let rounds = if quick { 3 } else { 5 };
    let (mut rebuilds, mut loops) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        edit()?;
        rebuilds.push(timed("cargo", &cargo("dev"))?.0);
        edit()?;
        let (seconds, verdict) = timed(ecp_str, &["check", "."])?;
        if verdict != Some(0) {
            return Err(format!("ecp check after an edit exited with {verdict:?}"));
        }
        loops.push(seconds);
    }
    let (rebuild, whole) = (median(rebuilds), median(loops));
    let mut rows = vec![
        (
            "ecp check ., first (the dev build of a new folder: the runtime and the crate)"
                .to_owned(),
            format!("{first:.1} s"),
        ),
        (
            "one-line mapping edit: cargo build (dev)".to_owned(),
            format!("{rebuild:.1} s"),
        ),
        (
            "one-line mapping edit: ecp check . to its verdict (the whole loop)".to_owned(),
            format!("{whole:.1} s"),
        ),
    ];
    if quick {
        rows.push((
            "one-line mapping edit: cargo build --release".to_owned(),
            "skipped (--quick)".to_owned(),
        ));
    } else {
        eprintln!("edit-check loop: the release baseline");
        timed("cargo", &cargo("release"))?;
        edit()?;
        let release = timed("cargo", &cargo("release"))?.0;
        rows.push((
            "one-line mapping edit: cargo build --release (the baseline)".to_owned(),
            format!(
                "{release:.1} s; the dev build takes {:.2}x of it",
                rebuild / release
            ),
        ));
    }
    let mut text = format!(
        "\n## Edit-check loop\n\nMedians of {rounds} rounds in a fresh `ecp new` extension: one line of src/provider.rs changed \
(`{}` and back), then the command. Target: the whole loop under 15 s on 2 cores ({}: {whole:.1} s).\n\n\
| measurement | value |\n|---|---|\n",
        MAPPING_EDIT[0],
        if whole < 15.0 { "met" } else { "**missed**" },
    );
    for (name, value) in rows {
        text += &format!("| {name} | {value} |\n");
    }
    Ok(text)
}

const DEMO_SESSION: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"xtask-demo","version":"0"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"deployment policy"}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"html script"}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"x","corpus":"everything"}}}"#,
];

/// README's install line, into a folder of the demo's own; the release
/// build reuses target/ (cargo shows its progress). Returns the installed
/// `ecp`.
/// `cargo install --locked --path .` into `target/demo-install`; with
/// `debug`, in the dev profile, whose build `cargo test` already made in
/// `target/debug` (CI: the release profile's build of every dependency
/// again is minutes of its two cores).
fn demo_install(debug: bool) -> Result<PathBuf, String> {
    let install_root = root().join("target/demo-install");
    let install_root_str = install_root.to_str().ok_or("non-UTF-8 path")?;
    let target_dir = root().join("target");
    let mut args = vec![
        "install",
        "--locked",
        "--path",
        ".",
        "--root",
        install_root_str,
        "--target-dir",
        target_dir.to_str().ok_or("non-UTF-8 path")?,
        "--force",
    ];
    if debug {
        args.push("--debug");
    }
    run("cargo", &args)?;
    Ok(install_root.join("bin/ecp"))
}

fn demo(debug: bool) -> Result<(), String> {
    let ecp = demo_install(debug)?;
    let ecp_str = ecp.to_str().ok_or("non-UTF-8 path")?;

    // Scaffold an extension and lint it, as a provider team would.
    let scratch = root().join("target/demo");
    let _ = std::fs::remove_dir_all(&scratch);
    let extension = scratch.join("acme-context");
    let extension_str = extension.to_str().ok_or("non-UTF-8 path")?;
    run(
        ecp_str,
        &["new", "acme-context", "--yes", "--dir", extension_str],
    )?;
    run(ecp_str, &["lint", extension_str])?;

    // One MCP session against the embedded runtime with the example corpus.
    let corpus = root().join("templates/corpus/example.jsonl");
    eprintln!("$ ecp serve --fixture templates/corpus/example.jsonl  (one scripted MCP session)");
    let mut child = Command::new(&ecp)
        .args(["serve", "--fixture"])
        .arg(&corpus)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", ecp.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    for line in DEMO_SESSION {
        println!("> {line}");
        writeln!(stdin, "{line}").map_err(|e| e.to_string())?;
    }
    drop(stdin);
    let mut output = String::new();
    child
        .stdout
        .take()
        .ok_or("no stdout")?
        .read_to_string(&mut output)
        .map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    for line in output.lines() {
        println!("< {line}");
    }
    if !status.success() || output.lines().count() != DEMO_SESSION.len() - 1 {
        return Err(format!("the session did not complete ({status})"));
    }
    remote_demo(&ecp, &corpus)?;
    eprintln!(
        "demo: ok: installed ecp with `cargo install --locked --path .`; `ecp new` wrote an extension that `ecp lint` passes; \
         `ecp serve` answered {} MCP requests over stdio (initialize, tools/list, two searches, one refused argument); \
         the remote adapter answered one search over HTTP and stopped cleanly on SIGTERM",
        DEMO_SESSION.len() - 1
    );
    Ok(())
}

/// The same runtime as the remote adapter: one stateless Streamable HTTP
/// `tools/call` on loopback (no OAuth, which `--no-auth` allows only there),
/// then SIGTERM and a clean exit.
fn remote_demo(ecp: &Path, corpus: &Path) -> Result<(), String> {
    eprintln!(
        "$ ecp serve --fixture templates/corpus/example.jsonl --listen 127.0.0.1:0 --no-auth  (one HTTP call, then SIGTERM)"
    );
    let mut child = Command::new(ecp)
        .args(["serve", "--fixture"])
        .arg(corpus)
        .args(["--listen", "127.0.0.1:0", "--no-auth"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", ecp.display()))?;
    let mut log = BufReader::new(child.stderr.take().ok_or("no stderr")?);
    let mut listening = String::new();
    log.read_line(&mut listening).map_err(|e| e.to_string())?;
    eprint!("  {listening}");
    let address = listening
        .split("\"address\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .ok_or_else(|| format!("no address in {listening:?}"))?
        .to_owned();
    let body = DEMO_SESSION[3];
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    println!("> POST http://{address}/mcp {body}");
    let mut stream = std::net::TcpStream::connect(&address).map_err(|e| e.to_string())?;
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    let (head, answer) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    println!("< {} {answer}", head.lines().next().unwrap_or(""));
    let stopped = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    let mut rest = String::new();
    let _ = log.read_to_string(&mut rest);
    for line in rest.lines() {
        eprintln!("  {line}");
    }
    if !head.starts_with("HTTP/1.1 200") || !answer.contains("untrusted_external_context") {
        return Err("the HTTP call did not answer with the envelope".into());
    }
    if !stopped.success() || !status.success() {
        return Err(format!(
            "the adapter did not stop cleanly on SIGTERM ({status})"
        ));
    }
    Ok(())
}

/// The fuzz targets of `fuzz/fuzz_targets`.
const FUZZ_TARGETS: &[&str] = &[
    "lint_manifest",
    "lint_archive",
    "http_body",
    "jsonrpc_stdio",
    "jwt",
    "release_assets",
    "provenance",
    "http_mcp",
    "outside_text",
    "check_replay",
    "lint_clients",
    "qwen_files",
    "declared_pattern",
    "mem0_config",
];

/// cargo fuzz's sanitizer, the same for the build and its runs (another
/// builds everything again). `.ci/run` fuzzes with none: the targets'
/// code is safe Rust, so AddressSanitizer's one extra catch is a memory
/// error in a dependency's `unsafe` code, and it cost CI minutes (the
/// build took 10 of them with it, measured); libFuzzer still reports
/// panics, timeouts and out-of-memory. The weekly workflow job fuzzes
/// longer with `address`.
#[derive(Clone, Copy)]
enum Sanitizer {
    None,
    Address,
}

impl Sanitizer {
    fn args(self) -> [&'static str; 2] {
        match self {
            Sanitizer::None => ["--sanitizer", "none"],
            Sanitizer::Address => ["--sanitizer", "address"],
        }
    }
}

/// Every fuzz target built (cargo fuzz, nightly), installing cargo-fuzz
/// when it is missing.
fn fuzz_build(sanitizer: Sanitizer) -> Result<(), String> {
    let has_cargo_fuzz = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_cargo_fuzz {
        run("cargo", &["install", "cargo-fuzz", "--locked"])?;
    }
    let fuzz_dir = root().join("fuzz");
    // Every target built once, then run as many at a time as there are
    // cores (two here): each fuzzer is one process on one core.
    eprintln!("$ cargo +nightly fuzz build");
    let built = Command::new("cargo")
        .args(["+nightly", "fuzz", "build"])
        .args(sanitizer.args())
        .current_dir(&fuzz_dir)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    if !built.success() {
        return Err(format!("cargo fuzz build failed ({built})"));
    }
    Ok(())
}

fn fuzz(seconds: u64, sanitizer: Sanitizer) -> Result<(), String> {
    fuzz_build(sanitizer)?;
    let fuzz_dir = root().join("fuzz");
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut failed = Vec::new();
    for batch in FUZZ_TARGETS.chunks(jobs) {
        let mut running = Vec::new();
        for target in batch {
            // A working corpus outside the repository, grown from the seeds.
            let corpus = root().join("target/fuzz-corpus").join(target);
            std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
            let seeds = fuzz_dir.join("seeds").join(target);
            // Inputs that failed the seed replay in `cargo test`.
            let replayed = root().join("target/fuzz-replay").join(target);
            let time = format!("-max_total_time={seconds}");
            eprintln!("$ cargo +nightly fuzz run {target} ({seconds} s)");
            let child = Command::new("cargo")
                .args(["+nightly", "fuzz", "run", target])
                .args(sanitizer.args())
                .arg(&corpus)
                .arg(&seeds)
                .args(replayed.is_dir().then_some(&replayed))
                .args([
                    "--",
                    &time,
                    "-timeout=10",
                    "-rss_limit_mb=2048",
                    "-max_len=262144",
                    "-print_final_stats=1",
                ])
                .current_dir(&fuzz_dir)
                .spawn()
                .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
            running.push((*target, child));
        }
        for (target, mut child) in running {
            let status = child
                .wait()
                .map_err(|e| format!("cargo fuzz run {target}: {e}"))?;
            if !status.success() {
                failed.push(target);
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz targets found a crash, a timeout or an out-of-memory: {} (inputs in fuzz/artifacts/)",
            failed.join(", ")
        ))
    }
}

/// `fuzz [--time N] [--build] [--sanitizer none|address]`.
fn fuzz_command(args: &[&str]) -> Result<(), String> {
    let (mut seconds, mut build_only, mut sanitizer) = (60, false, Sanitizer::None);
    let mut args = args.iter().copied();
    while let Some(arg) = args.next() {
        match arg {
            "--build" => build_only = true,
            "--time" => {
                let value = args.next().unwrap_or_default();
                seconds = value
                    .parse()
                    .map_err(|_| format!("--time takes whole seconds, not `{value}`"))?;
            }
            "--sanitizer" => {
                sanitizer = match args.next() {
                    Some("none") => Sanitizer::None,
                    Some("address") => Sanitizer::Address,
                    other => {
                        return Err(format!("--sanitizer takes none or address, not {other:?}"));
                    }
                }
            }
            other => return Err(format!("fuzz: unexpected `{other}`")),
        }
    }
    if build_only {
        fuzz_build(sanitizer)
    } else {
        fuzz(seconds, sanitizer)
    }
}

/// `cargo xtask rmcp-next`: the HTTP comparison against the newest rmcp
/// 3.x, in a copy of the checkout (tracked files and the working tree's
/// changes to them) whose runtime requirement is widened to `3`.
fn rmcp_next() -> Result<(), String> {
    let work = root().join("target/rmcp-next");
    let tree = work.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !listed.status.success() {
        return Err("git ls-files failed".to_owned());
    }
    for path in listed.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = std::str::from_utf8(path).map_err(|_| "a non-UTF-8 path in git")?;
        let (from, to) = (root().join(path), tree.join(path));
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::copy(&from, &to).map_err(|e| format!("{path}: {e}"))?;
    }
    let manifest = tree.join("crates/ecp-runtime/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).map_err(|e| e.to_string())?;
    let pinned = "rmcp = { version = \"~3.11.0\"";
    if !text.contains(pinned) {
        return Err(format!(
            "crates/ecp-runtime/Cargo.toml no longer holds `{pinned}`; update xtask's rmcp-next"
        ));
    }
    std::fs::write(&manifest, text.replace(pinned, "rmcp = { version = \"3\""))
        .map_err(|e| e.to_string())?;
    // The newest rmcp even if it asks for a newer Rust than the runtime's
    // `rust-version` (a bump would then raise that too).
    let target = work.join("target");
    let env = [
        ("CARGO_TARGET_DIR", target.as_path()),
        (
            "CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS",
            Path::new("allow"),
        ),
    ];
    let cargo = |args: &[&str]| run_in(&tree, &env, "cargo", args);
    cargo(&["update", "-p", "rmcp", "--recursive"])?;
    let lock = std::fs::read_to_string(tree.join("Cargo.lock")).map_err(|e| e.to_string())?;
    let version = lock
        .split("[[package]]")
        .find(|block| block.contains("\nname = \"rmcp\"\n"))
        .and_then(|block| block.lines().find_map(|l| l.strip_prefix("version = ")))
        .unwrap_or("?")
        .trim_matches('"')
        .to_owned();
    eprintln!("rmcp-next: comparing the runtime's HTTP port with rmcp {version}");
    cargo(&["test", "--test", "it", "--", "http_protocol::"])?;
    println!("rmcp {version}: the runtime's Streamable HTTP port answers as its service does");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["ci"] => ci(),
        ["codegen"] => codegen(false),
        ["codegen", "--check"] => codegen(true),
        ["demo"] => demo(false),
        ["demo", "--debug"] => demo(true),
        ["demo", "--install"] => demo_install(false).map(drop),
        ["rmcp-next"] => rmcp_next(),
        ["ts-history"] => run("xtask/typescript-history.sh", &[]),
        ["e2e"] => e2e(),
        ["e2e", "--prepare"] => e2e_prepare(),
        ["bench"] => bench(false),
        ["bench", "--quick"] => bench(true),
        ["bench", "--edit-loop"] => bench_edit_loop(),
        ["bench", "--ceiling"] => bench_ceiling(),
        ["bench", "--peers"] => bench_peers(false),
        ["bench", "--peers", "--quick"] => bench_peers(true),
        ["fuzz", rest @ ..] => fuzz_command(rest),
        _ => Err(
            "usage: cargo xtask <ci | codegen [--check] | demo [--install | --debug] | rmcp-next | ts-history | e2e [--prepare] | bench [--quick | --edit-loop | --ceiling | --peers [--quick]] | fuzz [--time N] [--build] [--sanitizer none|address]>"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
