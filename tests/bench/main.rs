//! `cargo xtask bench`: ecp's runtime and packager against the alternatives
//! a team would otherwise use, side by side in one run. Every figure is a
//! median over rounds with its spread, and every target is a ratio against
//! a baseline measured in the same run (machines here are shared and
//! noisy). xtask builds what is measured and passes the paths.
//!
//! `bench --floor` is the like-for-like floor of a call: a newline-JSON loop
//! that makes the same loopback HTTP request the adapter makes (on one
//! kept-alive connection) and wraps the answer, with no MCP machinery, no
//! checks and no rendering. The adapter over the floor is the runtime's own
//! cost.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::Instant,
};

use ecp::{
    check::upstream::{Reply, Upstream},
    profile::{self, ProviderItem},
};
use serde_json::{Value, json};

mod peers;
mod remote;

struct Settings {
    quick: bool,
    ecp: PathBuf,
    main: PathBuf,
    /// The same extension made with `ecp new --server` (`opt-level = 3`):
    /// the build a remote deployment runs, which the HTTP rows measure.
    server_main: PathBuf,
    /// The generated extension's folder (for the fresh build).
    extension: PathBuf,
    node_server: PathBuf,
    /// A generated `--template local-ts` extension, packaged (its
    /// `dist/main.js` built).
    ts_extension: PathBuf,
    mcpb: PathBuf,
    out: PathBuf,
}

fn arg(args: &[String], name: &str) -> PathBuf {
    let at = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("missing {name}"));
    PathBuf::from(&args[at + 1])
}

/// Median, minimum and maximum of `samples` (sorted in place).
fn stats(samples: &mut [f64]) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A running stdio server and its pipes.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn spawn(command: &[String], base_url: &str) -> Server {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            // The generated extension reads ACME_CONTEXT_*, the others PROVIDER_CONTEXT_*.
            .env("PROVIDER_CONTEXT_BASE_URL", base_url)
            .env("PROVIDER_CONTEXT_TOKEN", "bench-token")
            .env("ACME_CONTEXT_BASE_URL", base_url)
            .env("ACME_CONTEXT_TOKEN", "bench-token")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
        }
    }

    fn request(&mut self, message: &Value) -> String {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed its stdout"
            );
            if line.contains("\"id\"") {
                return line;
            }
        }
    }

    fn initialize(&mut self) -> String {
        let answer = self.request(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}));
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        answer
    }

    /// Peak resident set size so far, in KiB (Linux).
    fn peak_rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
            })
            .unwrap_or(0)
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(id: u64, query: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "context_search", "arguments": {"query": query}}})
}

/// Upstream items: `count` items of `length` code points each.
fn items_json(count: usize, length: usize) -> String {
    let items: Vec<Value> = (0..count)
        .map(|i| {
            json!({"id": format!("doc-{i}"), "content": "x".repeat(length), "title": format!("Title {i}"),
                   "uri": format!("https://docs.example.com/{i}"), "score": 0.5})
        })
        .collect();
    json!({ "items": items }).to_string()
}

struct Row {
    name: String,
    value: String,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    targets: Vec<(String, bool, String)>,
}

impl Report {
    fn row(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        eprintln!("  {name:<58} {value}");
        self.rows.push(Row { name, value });
    }

    fn target(&mut self, what: &str, met: bool, detail: String) {
        eprintln!(
            "  target {what}: {} ({detail})",
            if met { "met" } else { "MISSED" }
        );
        self.targets.push((what.to_owned(), met, detail));
    }
}

fn cold_start(command: &[String], base_url: &str, rounds: usize) -> Vec<f64> {
    (0..rounds)
        .map(|_| {
            let started = Instant::now();
            let mut server = Server::spawn(command, base_url);
            server.initialize();
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            server.stop();
            ms
        })
        .collect()
}

/// Per-call latencies in µs over `calls` sequential calls, and the peak RSS.
fn per_call(command: &[String], base_url: &str, calls: usize) -> (Vec<f64>, u64) {
    let mut server = Server::spawn(command, base_url);
    server.initialize();
    for id in 1..=20 {
        server.request(&call(id, "warm up"));
    }
    let mut samples: Vec<f64> = (0..calls)
        .map(|n| {
            let started = Instant::now();
            let answer = server.request(&call(100 + n as u64, "deployment policy"));
            let us = started.elapsed().as_secs_f64() * 1e6;
            assert!(answer.contains("untrusted_external_context"), "{answer}");
            us
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    let rss = server.peak_rss_kib();
    server.stop();
    (samples, rss)
}

/// Wall time (ms, measured here) and peak RSS (KiB, from GNU time).
fn timed(command: &mut Command) -> (f64, u64) {
    let started = Instant::now();
    let output = Command::new("/usr/bin/time")
        .args(["-f", "ECP_BENCH %e %M"])
        .arg(command.get_program())
        .args(command.get_args())
        .envs(command.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .current_dir(command.get_current_dir().unwrap_or(Path::new(".")))
        .stdout(Stdio::null())
        .output()
        .expect("GNU time (/usr/bin/time)");
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("ECP_BENCH "))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    (started.elapsed().as_secs_f64() * 1000.0, kib)
}

/// `rounds` runs of a command: median, min and max wall time (ms) and the
/// median peak RSS (KiB).
fn measure(rounds: usize, mut command: impl FnMut() -> Command) -> (f64, f64, f64, f64) {
    let (mut times, mut peaks): (Vec<f64>, Vec<f64>) = (0..rounds)
        .map(|_| {
            let (ms, kib) = timed(&mut command());
            (ms, kib as f64)
        })
        .unzip();
    let (ms, min, max) = stats(&mut times);
    let (kib, _, _) = stats(&mut peaks);
    (ms, min, max, kib)
}

/// An extension folder with `files` small assets and a `binary_mib` binary:
/// the generated extension's release `main`, padded with random bytes
/// (a program runs with bytes after its last segment), so that the
/// package's `tools.lock` step unpacks the archive, starts it and lists
/// its tools, as for a real release.
fn tree(
    root: &Path,
    ecp: &Path,
    main: &Path,
    files: usize,
    binary_mib: usize,
) -> (PathBuf, PathBuf) {
    let dir = root.join(format!("ext-{files}"));
    let status = Command::new(ecp)
        .args(["new", "acme-context", "--yes", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    for i in 0..files {
        std::fs::write(
            dir.join(format!("assets/f{i:05}.txt")),
            "x".repeat(100 + i % 900),
        )
        .unwrap();
    }
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        cargo.replace("include = []", "include = [\"assets\"]"),
    )
    .unwrap();
    let binary = root.join(format!("main-{binary_mib}"));
    let mut bytes = std::fs::read(main).unwrap();
    let padding = (binary_mib * 1024 * 1024).saturating_sub(bytes.len());
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    bytes.extend((0..padding).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    }));
    std::fs::write(&binary, bytes).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The same tree, staged for tar and mcpb.
    let staged = root.join(format!("staged-{files}"));
    std::fs::create_dir_all(staged.join("dist")).unwrap();
    std::fs::copy(&binary, staged.join("dist/main")).unwrap();
    for name in ["qwen-extension.json", "README.md"] {
        std::fs::copy(dir.join(name), staged.join(name)).unwrap();
    }
    let copy = Command::new("cp")
        .arg("-r")
        .arg(dir.join("assets"))
        .arg(&staged)
        .status()
        .unwrap();
    assert!(copy.success());
    std::fs::write(
        staged.join("manifest.json"),
        json!({"manifest_version": "0.2", "name": "acme-context", "version": "0.1.0",
               "description": "bench", "author": {"name": "bench"},
               "server": {"type": "binary", "entry_point": "dist/main",
                          "mcp_config": {"command": "${__dirname}/dist/main", "args": []}}})
        .to_string(),
    )
    .unwrap();
    (dir, binary)
}

/// Packages a tree of `files` files plus a 20 MiB binary; with `compare`,
/// also the tar pipeline, mcpb and lint. Returns ecp's (ms, peak KiB).
fn packaging(
    settings: &Settings,
    report: &mut Report,
    rounds: usize,
    files: usize,
    compare: bool,
) -> (f64, f64) {
    let temp = tempfile::tempdir().unwrap();
    let (dir, binary) = tree(temp.path(), &settings.ecp, &settings.main, files, 20);
    let staged = temp.path().join(format!("staged-{files}"));
    let out = temp.path().join("out");
    let row = |report: &mut Report, what: String, (ms, min, max, kib): (f64, f64, f64, f64)| {
        report.row(
            what,
            format!(
                "{ms:.0} ms [{min:.0}-{max:.0}], peak {:.1} MiB",
                kib / 1024.0
            ),
        );
    };
    let ecp = measure(rounds, || {
        let mut command = Command::new(&settings.ecp);
        command
            .args([
                "package",
                dir.to_str().unwrap(),
                "--format",
                "tar.gz",
                "--binary",
            ])
            .arg(&binary)
            .arg("--out-dir")
            .arg(&out);
        command
    });
    row(
        report,
        format!("ecp package tar.gz, {files} files + 20 MiB (incl. lint and tools.lock)"),
        ecp,
    );
    let (ecp_ms, _, _, ecp_kib) = ecp;
    if !compare {
        return (ecp_ms, ecp_kib);
    }
    let tarball = temp.path().join("t.tar.gz");
    let script = format!(
        "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C {} -c . | gzip -n -6 > {}",
        staged.display(),
        tarball.display()
    );
    let tar = measure(rounds, || {
        let mut command = Command::new("sh");
        command.args(["-c", &script]);
        command
    });
    row(
        report,
        "tar --sort=name | gzip -n -6, same tree".into(),
        tar,
    );
    let mcpb = measure(rounds, || {
        let mut command = Command::new(&settings.mcpb);
        command
            .arg("pack")
            .arg(&staged)
            .arg(temp.path().join("bundle.mcpb"));
        command
    });
    row(report, "mcpb pack, same tree".into(), mcpb);
    let (tar_ms, mcpb_ms) = (tar.0, mcpb.0);
    report.target(
        "packaging at most 1.2x the tar pipeline",
        ecp_ms <= 1.2 * tar_ms,
        format!("{:.2}x", ecp_ms / tar_ms),
    );
    report.target(
        "packaging faster than mcpb pack",
        ecp_ms < mcpb_ms,
        format!("{:.2}x of mcpb", ecp_ms / mcpb_ms),
    );

    // Lint: a manifest and the 20 MiB archive.
    let archive = out.join("linux.x64.acme-context.tar.gz");
    for (what, path) in [
        (
            "ecp lint qwen-extension.json",
            dir.join("qwen-extension.json"),
        ),
        ("ecp lint, 20 MiB archive", archive),
    ] {
        let mut runs: Vec<f64> = (0..rounds)
            .map(|_| timed(Command::new(&settings.ecp).arg("lint").arg(&path)).0)
            .collect();
        let (ms, min, max) = stats(&mut runs);
        report.row(what, format!("{ms:.1} ms [{min:.1}-{max:.1}]"));
    }
    (ecp_ms, ecp_kib)
}

fn floor(args: &[String]) {
    let _ = args;
    // The same loopback request the adapter makes for every call, on one
    // kept-alive connection: POST {base}/v1/context/search with the bearer
    // and the JSON body, the answer read by its Content-Length.
    let base = std::env::var("PROVIDER_CONTEXT_BASE_URL").unwrap_or_default();
    let address = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut upstream: Option<BufReader<std::net::TcpStream>> = None;
    let mut search = |query: &str| -> Option<String> {
        if upstream.is_none() {
            let stream = std::net::TcpStream::connect(&address).ok()?;
            stream.set_nodelay(true).ok()?;
            upstream = Some(BufReader::new(stream));
        }
        let connection = upstream.as_mut()?;
        let body = json!({"query": query, "limit": 5}).to_string();
        let request = format!(
            "POST /v1/context/search HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer bench-token\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        connection.get_mut().write_all(request.as_bytes()).ok()?;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            connection.read_line(&mut line).ok()?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok()?;
            }
        }
        let mut answer = vec![0u8; length];
        std::io::Read::read_exact(connection, &mut answer).ok()?;
        String::from_utf8(answer).ok()
    };
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let result = match message["method"].as_str() {
            Some("initialize") => {
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                         "serverInfo": {"name": "floor", "version": "0"}})
            }
            _ => {
                let query = message["params"]["arguments"]["query"]
                    .as_str()
                    .unwrap_or("");
                let answer = search(query).unwrap_or_default();
                let items: Value = serde_json::from_str(&answer).unwrap_or_default();
                let envelope = json!({"untrusted_external_context": {"items": items["items"]}});
                json!({"content": [{"type": "text", "text": envelope.to_string()}],
                        "structuredContent": envelope, "isError": false})
            }
        };
        let _ = writeln!(
            stdout,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        );
        let _ = stdout.flush();
    }
}

/// `--ceiling --main SERVER_MAIN`: the HTTP comparison's adapter (the
/// `--server` build) and hyper rounds only, printed.
fn ceiling(main: &Path) {
    let (_tokio, upstream) = scripted_upstream();
    let mut report = Report::default();
    remote::ceiling(main, &upstream.base_url, &mut report);
}

/// `--peers --main SERVER_MAIN --python PY --fastmcp-server FILE
/// [--quick]`: the peers' rulers only, printed.
fn peer_rulers(args: &[String]) {
    let (_tokio, upstream) = scripted_upstream();
    let peers = remote::Peers {
        node_server: PathBuf::new(),
        python: arg(args, "--python"),
        fastmcp_server: arg(args, "--fastmcp-server"),
    };
    let quick = args.iter().any(|a| a == "--quick");
    let mut report = Report::default();
    peers::bench(
        &arg(args, "--main"),
        &upstream.base_url,
        &peers,
        quick,
        &mut report,
    );
}

/// The scripted upstream every measured call reaches (3 items of 300 code
/// points), on a runtime of its own that lives as long as it is used.
fn scripted_upstream() -> (tokio::runtime::Runtime, Upstream) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fixed = items_json(3, 300);
    let upstream = tokio.block_on(Upstream::start(move |_| Reply::json(fixed.clone())));
    (tokio, upstream)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--floor") {
        return floor(&args);
    }
    if args.get(1).is_some_and(|a| a == "--hyper-ceiling") {
        return remote::hyper_ceiling(&args);
    }
    if args.get(1).is_some_and(|a| a == "--client-alone") {
        return remote::client_alone(&args);
    }
    if args.get(1).is_some_and(|a| a == "--rmcp-peer") {
        return peers::rmcp_peer(&args);
    }
    if args.iter().any(|a| a == "--ceiling") {
        return ceiling(&arg(&args, "--main"));
    }
    if args.iter().any(|a| a == "--peers") {
        return peer_rulers(&args);
    }
    let settings = Settings {
        quick: args.iter().any(|a| a == "--quick"),
        ecp: arg(&args, "--ecp"),
        main: arg(&args, "--main"),
        server_main: arg(&args, "--server-main"),
        extension: arg(&args, "--extension"),
        node_server: arg(&args, "--node-server"),
        ts_extension: arg(&args, "--ts-extension"),
        mcpb: arg(&args, "--mcpb"),
        out: arg(&args, "--out"),
    };
    let (rounds, calls) = if settings.quick { (3, 200) } else { (15, 1000) };
    let (tokio, upstream) = scripted_upstream();
    let base_url = upstream.base_url.clone();

    let main_cmd = vec![settings.main.display().to_string()];
    let node_cmd = vec![
        "node".to_owned(),
        settings.node_server.display().to_string(),
    ];
    let floor_cmd = vec![
        std::env::current_exe().unwrap().display().to_string(),
        "--floor".to_owned(),
    ];
    let ts_bundle = settings.ts_extension.join("dist/main.js");
    let ts_cmd = vec!["node".to_owned(), ts_bundle.display().to_string()];
    let mut report = Report::default();

    eprintln!("cold start (spawn to initialize answer), {rounds} rounds");
    let (main_start, main_min, main_max) = stats(&mut cold_start(&main_cmd, &base_url, rounds));
    let (node_start, node_min, node_max) = stats(&mut cold_start(&node_cmd, &base_url, rounds));
    report.row(
        "cold start, ecp new dist/main",
        format!("{main_start:.2} ms [{main_min:.2}-{main_max:.2}]"),
    );
    report.row(
        "cold start, TypeScript SDK server",
        format!("{node_start:.2} ms [{node_min:.2}-{node_max:.2}]"),
    );
    report.target(
        "cold start at least 50x faster",
        node_start / main_start >= 50.0,
        format!("{:.0}x", node_start / main_start),
    );

    let (ts_start, ts_min, ts_max) = stats(&mut cold_start(&ts_cmd, &base_url, rounds));
    report.row(
        "cold start, ecp new --template local-ts dist/main.js",
        format!("{ts_start:.2} ms [{ts_min:.2}-{ts_max:.2}]"),
    );

    eprintln!("per call, {calls} sequential tools/call through a loopback upstream");
    // dist/main and the floor in alternating rounds, so that a slow moment
    // of the shared machine falls on both; the RSS is after all the calls of
    // one process.
    let (mut main_calls, main_rss) = per_call(&main_cmd, &base_url, calls);
    let (node_calls, node_rss) = per_call(&node_cmd, &base_url, calls);
    let mut floor_calls = Vec::new();
    for _ in 0..5 {
        floor_calls.extend(per_call(&floor_cmd, &base_url, calls / 5).0);
        main_calls.extend(per_call(&main_cmd, &base_url, calls / 5).0);
    }
    main_calls.sort_by(f64::total_cmp);
    floor_calls.sort_by(f64::total_cmp);
    for (name, samples) in [
        ("dist/main", &main_calls),
        ("TypeScript SDK server", &node_calls),
        (
            "newline-JSON floor (the same upstream request)",
            &floor_calls,
        ),
    ] {
        report.row(
            format!("per call p50 / p99, {name}"),
            format!(
                "{:.0} / {:.0} µs",
                percentile(samples, 0.5),
                percentile(samples, 0.99)
            ),
        );
    }
    let (ts_calls, ts_rss) = per_call(&ts_cmd, &base_url, calls);
    report.row(
        "per call p50 / p99, local-ts dist/main.js",
        format!(
            "{:.0} / {:.0} µs",
            percentile(&ts_calls, 0.5),
            percentile(&ts_calls, 0.99)
        ),
    );
    let ts_p50 = percentile(&ts_calls, 0.5);
    let node_p50 = percentile(&node_calls, 0.5);
    report.target(
        "local-ts per-call p50 no worse than the TypeScript SDK server's",
        ts_p50 <= node_p50,
        format!("{:.2}x the reference server", ts_p50 / node_p50),
    );
    report.row(
        "peak RSS after the calls, local-ts dist/main.js",
        format!("{:.1} MiB", ts_rss as f64 / 1024.0),
    );
    report.target(
        "local-ts peak RSS no worse than the TypeScript SDK server's",
        ts_rss <= node_rss,
        format!(
            "{:.1} MiB against {:.1} MiB",
            ts_rss as f64 / 1024.0,
            node_rss as f64 / 1024.0
        ),
    );
    // Issue 50: bare Node starts at 40 MiB here; the runtime without the
    // SDK and undici (0.6.1) peaks near 60 after its calls.
    report.target(
        "local-ts peak RSS at most 64 MiB",
        ts_rss <= 64 * 1024,
        format!("{:.1} MiB", ts_rss as f64 / 1024.0),
    );
    let bundle = std::fs::metadata(&ts_bundle).map(|m| m.len()).unwrap_or(0);
    report.row(
        "local-ts dist/main.js size",
        format!("{:.0} KiB", bundle as f64 / 1024.0),
    );
    report.target(
        "local-ts bundle under 1 MiB",
        bundle < 1024 * 1024,
        format!("{:.0} KiB", bundle as f64 / 1024.0),
    );
    let (package_ms, _) = timed(
        Command::new(&settings.ecp)
            .args(["package", "--out-dir"])
            .arg(settings.ts_extension.join("release"))
            .arg(&settings.ts_extension),
    );
    report.row(
        "ecp package, local-ts (npm ci, npm run build, archives)",
        format!("{:.1} s", package_ms / 1000.0),
    );
    let main_p50 = percentile(&main_calls, 0.5);
    report.target(
        "per-call p50 at least 2x better than TypeScript",
        percentile(&node_calls, 0.5) / main_p50 >= 2.0,
        format!("{:.1}x", percentile(&node_calls, 0.5) / main_p50),
    );
    report.target(
        "per-call p50 within 1.5x of the like-for-like floor",
        main_p50 / percentile(&floor_calls, 0.5) <= 1.5,
        format!(
            "{:.2}x the floor (which makes the same upstream request)",
            main_p50 / percentile(&floor_calls, 0.5)
        ),
    );
    eprintln!("the remote adapter over Streamable HTTP");
    let peers = remote::Peers {
        node_server: settings.node_server.clone(),
        python: arg(&args, "--python"),
        fastmcp_server: arg(&args, "--fastmcp-server"),
    };
    remote::bench(
        &settings.server_main,
        &base_url,
        calls,
        main_p50,
        &peers,
        &mut report,
    );
    eprintln!("the peers' rulers (sco3/mcp-benchmark, TM Dev Lab v2)");
    peers::bench(
        &settings.server_main,
        &base_url,
        &peers,
        settings.quick,
        &mut report,
    );

    let items: Vec<ProviderItem> =
        serde_json::from_str::<Value>(&items_json(3, 300)).unwrap()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(ecp::runtime::ProviderItem::from_json)
            .collect();
    let renders = 20_000;
    let started = Instant::now();
    for _ in 0..renders {
        std::hint::black_box(profile::render(std::hint::black_box(&items)));
    }
    report.row(
        "rendering alone, 3 items of 300 code points",
        format!(
            "{:.2} µs",
            started.elapsed().as_secs_f64() * 1e6 / renders as f64
        ),
    );

    report.row(
        "peak RSS after the calls, dist/main",
        format!("{:.1} MiB", main_rss as f64 / 1024.0),
    );
    report.row(
        "peak RSS after the calls, TypeScript SDK server",
        format!("{:.1} MiB", node_rss as f64 / 1024.0),
    );
    report.target(
        "memory under 8 MiB",
        main_rss < 8 * 1024,
        format!("{:.1} MiB", main_rss as f64 / 1024.0),
    );
    report.target(
        "memory at least 10x below TypeScript",
        node_rss as f64 / main_rss as f64 >= 10.0,
        format!("{:.1}x", node_rss as f64 / main_rss as f64),
    );
    let size = std::fs::metadata(&settings.main)
        .map(|m| m.len())
        .unwrap_or(0);
    report.row(
        "release dist/main size",
        format!("{:.2} MiB", size as f64 / (1024.0 * 1024.0)),
    );

    eprintln!("packaging and lint, {rounds} rounds");
    packaging(&settings, &mut report, rounds, 2000, true);

    eprintln!("scale");
    let shapes: &[(usize, usize)] = if settings.quick {
        &[(1, 10), (5, 1000)]
    } else {
        &[(1, 10), (1, 1000), (3, 300), (5, 10), (5, 1000)]
    };
    for &(count, length) in shapes {
        let body = items_json(count, length);
        let scaled = tokio.block_on(Upstream::start(move |_| Reply::json(body.clone())));
        let (samples, _) = per_call(&main_cmd, &scaled.base_url, calls / 4);
        report.row(
            format!("per call p50, {count} items x {length} code points"),
            format!("{:.0} µs", percentile(&samples, 0.5)),
        );
    }
    let trees: &[usize] = if settings.quick {
        &[10, 1000]
    } else {
        &[10, 100, 1000, 10_000]
    };
    let mut peaks = Vec::new();
    for &files in trees {
        let (ms, kib) = packaging(
            &settings,
            &mut Report::default(),
            rounds.min(5),
            files,
            false,
        );
        report.row(
            format!("ecp package, {files} files + 20 MiB"),
            format!("{ms:.0} ms, peak {:.1} MiB", kib / 1024.0),
        );
        peaks.push(kib);
    }
    let (smallest, largest) = (peaks[0], peaks[peaks.len() - 1]);
    report.target(
        "packaging memory flat in tree size",
        largest <= 1.5 * smallest,
        format!(
            "{:.1} MiB at {} files, {:.1} MiB at {} files",
            smallest / 1024.0,
            trees[0],
            largest / 1024.0,
            trees[trees.len() - 1]
        ),
    );

    lint_scaling(&settings, &mut report);
    first_hour(&settings, &mut report, rounds);
    fresh_build(&settings, &mut report);

    write_results(&settings, &report);
}

/// What a provider team's CI pays on every run: a fresh `cargo build
/// --release` of the generated crate (empty target folder, crates from the
/// local registry cache), its peak memory, and the size of `dist/main`.
/// Targets: under 90 s on this machine, under 4 MiB.
fn fresh_build(settings: &Settings, report: &mut Report) {
    if settings.quick {
        report.row(
            "fresh release build of the generated crate",
            "skipped (--quick)",
        );
        return;
    }
    eprintln!("fresh release build of the generated crate");
    let target = tempfile::tempdir().unwrap();
    let (ms, kib) = timed(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--offline", "--quiet"])
            .current_dir(&settings.extension)
            .env("CARGO_TARGET_DIR", target.path()),
    );
    let binary = target.path().join("release/acme-context");
    let bytes = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
    report.row(
        "fresh release build of the generated crate",
        format!(
            "{:.0} s, peak {:.2} GB",
            ms / 1000.0,
            kib as f64 / 1_048_576.0
        ),
    );
    report.row(
        "dist/main of that build",
        format!("{:.2} MiB", bytes as f64 / 1_048_576.0),
    );
    report.target(
        "fresh release build under 90 s",
        ms < 90_000.0,
        format!("{:.0} s", ms / 1000.0),
    );
    report.target(
        "dist/main under 4 MiB",
        bytes < 4 * 1024 * 1024,
        format!("{:.2} MiB", bytes as f64 / 1_048_576.0),
    );
}

/// Median wall time (ms) of `rounds` runs of `ecp ARGS` in `dir`, which
/// must exit with `expect`.
fn ecp_ms(ecp: &Path, dir: &Path, args: &[&str], expect: i32, rounds: usize) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            let output = Command::new(ecp)
                .args(args)
                .current_dir(dir)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(
                output.status.code(),
                Some(expect),
                "ecp {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            ms
        })
        .collect();
    stats(&mut samples).0
}

/// What a newcomer waits for: `ecp lint` of one manifest and `ecp check` of
/// a conforming extension, beside the process start of `ecp --version`
/// measured in the same run. Targets: lint at most 1 ms beyond the start,
/// check within the provider budget (5000 ms) plus 2 s.
fn first_hour(settings: &Settings, report: &mut Report, rounds: usize) {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("acme-context");
    let folder_str = folder.to_str().unwrap();
    let created = Command::new(&settings.ecp)
        .args(["new", "acme-context", "--yes", "--dir", folder_str])
        .output()
        .unwrap();
    assert!(created.status.success());
    // Interleaved, one run of each per round, so that a busy moment of the
    // machine falls on all three alike; medians.
    let runs = rounds.max(5) * 4;
    let (mut start, mut manifest, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        start.push(ecp_ms(&settings.ecp, temp.path(), &["--version"], 0, 1));
        manifest.push(ecp_ms(
            &settings.ecp,
            &folder,
            &["lint", "qwen-extension.json"],
            0,
            1,
        ));
        whole.push(ecp_ms(&settings.ecp, &folder, &["lint", "."], 0, 1));
    }
    let (start, manifest, whole) = (
        stats(&mut start).0,
        stats(&mut manifest).0,
        stats(&mut whole).0,
    );
    report.row(
        "process start, ecp --version (baseline)",
        format!("{start:.2} ms"),
    );
    report.row(
        "ecp lint qwen-extension.json (generated)",
        format!(
            "{manifest:.2} ms, {:.2} ms beyond the start",
            manifest - start
        ),
    );
    report.row(
        "ecp lint . (generated folder, with Cargo.toml)",
        format!("{whole:.2} ms, {:.2} ms beyond the start", whole - start),
    );
    report.target(
        "lint of a manifest within 1 ms of process start",
        manifest - start <= 1.0,
        format!("{:.2} ms beyond {start:.2} ms", manifest - start),
    );
    let main = settings.main.display().to_string();
    let check = ecp_ms(
        &settings.ecp,
        temp.path(),
        &[
            "check",
            "--format",
            "json",
            "--base-url-env",
            "ACME_CONTEXT_BASE_URL",
            "--token-env",
            "ACME_CONTEXT_TOKEN",
            "--",
            &main,
        ],
        0,
        3,
    );
    report.row(
        "ecp check of dist/main (conforming, every fault)",
        format!("{check:.0} ms"),
    );
    report.target(
        "check within the budget plus 2 s",
        check - start <= 7000.0,
        format!("{check:.0} ms for a 5000 ms budget"),
    );
}

/// Wall time (ms) and peak RSS (KiB) of `ecp lint PATH` (exit 0 or 1).
fn lint_once(ecp: &Path, path: &Path) -> (f64, u64) {
    let started = Instant::now();
    let output = Command::new("/usr/bin/time")
        .args(["-f", "ECP_BENCH %e %M"])
        .arg(ecp)
        .arg("lint")
        .arg(path)
        .stdout(Stdio::null())
        .output()
        .expect("GNU time (/usr/bin/time)");
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let kib = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("ECP_BENCH "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|k| k.parse().ok())
        .unwrap_or(0);
    (elapsed, kib)
}

fn tar_header(name: &str, flag: u8, size: u64) -> Vec<u8> {
    ecp::extension::tar::raw_header(name.as_bytes(), flag, size, 0o644).to_vec()
}

fn gzip_bytes(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// A manifest of about `bytes` with a finding on every line.
fn noisy_manifest(bytes: usize) -> String {
    let mut text = String::from(
        "{\"name\": \"acme-context\", \"version\": \"0.1.0\", \"mcpServers\": {\"acme-context\": {\"httpUrl\": \"https://x.example/mcp\", \"timeout\": 8000, \"includeTools\": [\"context_search\"], \"oauth\": {\"enabled\": true, \"scopes\": [\"a\"], \"audiences\": [\"b\"]}}},\n\"x\": [\n",
    );
    let mut n = 0;
    while text.len() < bytes {
        text.push_str(&format!("\"ghp_{n:036}\",\n"));
        n += 1;
    }
    text.push_str("\"end\"]}\n");
    text
}

/// An archive of `entries` small files (each a finding: `..` paths).
fn many_entries(entries: usize) -> Vec<u8> {
    let mut tar = Vec::with_capacity(entries * 1024);
    let manifest = br#"{"name":"acme-context","version":"0.1.0","mcpServers":{"acme-context":{"command":"${extensionPath}${/}dist${/}main","cwd":"${extensionPath}","timeout":8000,"includeTools":["context_search"]}}}"#;
    tar.extend(tar_header(
        "qwen-extension.json",
        b'0',
        manifest.len() as u64,
    ));
    tar.extend_from_slice(manifest);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    for n in 0..entries {
        tar.extend(tar_header(&format!("../files/{n}"), b'0', 0));
    }
    tar.extend(vec![0; 1024]);
    gzip_bytes(&tar)
}

/// Lint's time and peak memory as its input grows, and on hostile shapes.
/// Targets: growth at most linear, peak under 64 MiB for anything lint
/// reads, every hostile input answered in under 2 s.
fn lint_scaling(settings: &Settings, report: &mut Report) {
    let temp = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = temp.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let best = |path: &Path| {
        let mut runs: Vec<(f64, u64)> = (0..3).map(|_| lint_once(&settings.ecp, path)).collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        runs[0]
    };
    let mut peak_max = 0u64;
    let mut manifests = Vec::new();
    for (label, bytes) in [
        ("1 KiB", 1024),
        ("100 KiB", 100 * 1024),
        ("1 MiB", 1000 * 1024),
    ] {
        let folder = temp.path().join(format!("manifest-{bytes}"));
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("qwen-extension.json");
        std::fs::write(&path, noisy_manifest(bytes)).unwrap();
        let (ms, kib) = best(&path);
        peak_max = peak_max.max(kib);
        manifests.push((bytes as f64, ms));
        report.row(
            format!("ecp lint, a {label} manifest with a finding per line"),
            format!("{ms:.0} ms, peak {:.1} MiB", kib as f64 / 1024.0),
        );
    }
    let entry_counts: &[usize] = if settings.quick {
        &[10, 10_000]
    } else {
        &[10, 10_000, 100_000]
    };
    let mut archives = Vec::new();
    for &entries in entry_counts {
        let path = write(&format!("entries-{entries}.tar.gz"), &many_entries(entries));
        let (ms, kib) = best(&path);
        peak_max = peak_max.max(kib);
        archives.push((entries as f64, ms));
        report.row(
            format!("ecp lint, an archive of {entries} entries"),
            format!("{ms:.0} ms, peak {:.1} MiB", kib as f64 / 1024.0),
        );
    }
    // Linear: from the middle to the largest size, time grows no faster
    // than the input (with 2x slack for fixed costs and noise).
    let linear = |points: &[(f64, f64)]| {
        let (small, large) = (points[points.len() - 2], points[points.len() - 1]);
        (large.1 / small.1.max(1.0)) <= 2.0 * (large.0 / small.0)
    };
    report.target(
        "lint time at most linear in the input",
        linear(&manifests) && linear(&archives),
        format!(
            "manifests {:.0} -> {:.0} ms, archives {:.0} -> {:.0} ms",
            manifests[manifests.len() - 2].1,
            manifests[manifests.len() - 1].1,
            archives[archives.len() - 2].1,
            archives[archives.len() - 1].1
        ),
    );
    // Hostile shapes.
    let mut long_name = tar_header("././@LongLink", b'L', 1 << 30);
    long_name.extend(std::iter::repeat_n(0u8, 1 << 22));
    let mut bomb = tar_header("bomb", b'0', 10 << 30);
    bomb.extend(std::iter::repeat_n(0u8, 64 << 20));
    let hostile = [
        (
            "a GNU long name declaring 1 GiB",
            write("long.tar.gz", &gzip_bytes(&long_name)),
        ),
        (
            "an entry declaring 10 GiB (64 MiB of it sent)",
            write("bomb.tar.gz", &gzip_bytes(&bomb)),
        ),
        ("a second gzip member", {
            let first = many_entries(10);
            let second = many_entries(10);
            write("members.tar.gz", &[first, second].concat())
        }),
    ];
    let mut slowest = 0f64;
    for (label, path) in &hostile {
        let (ms, kib) = best(path);
        slowest = slowest.max(ms);
        peak_max = peak_max.max(kib);
        report.row(
            format!("ecp lint, {label}"),
            format!("{ms:.0} ms, peak {:.1} MiB", kib as f64 / 1024.0),
        );
    }
    report.target(
        "lint peak memory under 64 MiB",
        peak_max < 64 * 1024,
        format!("largest peak {:.1} MiB", peak_max as f64 / 1024.0),
    );
    report.target(
        "every hostile input answered in under 2 s",
        slowest < 2000.0,
        format!("slowest {slowest:.0} ms"),
    );
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn write_results(settings: &Settings, report: &Report) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    let mut text = String::from("# ecp benchmark results\n\n");
    text += &format!(
        "- date: {}\n- command: `cargo xtask bench{}`\n- machine: {} ({} cores, {})\n- node: {}\n\n",
        command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
        if settings.quick { " --quick" } else { "" },
        command_output("uname", &["-sr"]),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        cpu,
        command_output("node", &["--version"]),
    );
    text += "Medians over rounds, [min-max] where shown. Ratios compare figures taken in the same run. \
The per-call figures include one loopback HTTP request to a scripted upstream, for the floor too \
(the same request on one kept-alive connection, with no MCP machinery: the adapter over it is the runtime's own cost). Cold start does not depend on result size: `initialize` calls no upstream. \
The Streamable HTTP rows run the same dist/main with `--listen`; every call carries an ES256 JWT \
(verified on first use, then remembered until it expires); the load generator, the upstream and \
the server processes share the machine's cores, so on 2 cores a second process adds little. \
The HTTP comparison runs the same 16-client load against the adapter (OAuth on), the TypeScript SDK's and FastMCP's \
stateless Streamable HTTP servers (no auth, which favours them; the same tool, binding, rendering and upstream) and \
a hyper server answering the adapter's own reply as a fixed body (the ceiling), all servers calling one upstream \
(hyper with the scripted answer); with two or more cores the load generator and that upstream are pinned to CPU 0 \
and every server to the others (taskset). Each run lasts a fixed time; the adapter and the ceiling run several \
rounds, interleaved, and show their median round; server CPU per call is the servers' user plus system time \
(/proc) over the calls answered, which does not depend on how fast the load generator is.\n\n";
    text += "## Targets\n\n| target | verdict | measured |\n|---|---|---|\n";
    let cell = |s: &str| s.replace('|', "\\|");
    for (what, met, detail) in &report.targets {
        let verdict = if *met { "met" } else { "**missed**" };
        text += &format!("| {} | {verdict} | {} |\n", cell(what), cell(detail));
    }
    text += "\n## Figures\n\n| measurement | value |\n|---|---|\n";
    for row in &report.rows {
        text += &format!("| {} | {} |\n", cell(&row.name), cell(&row.value));
    }
    std::fs::create_dir_all(settings.out.parent().unwrap()).unwrap();
    std::fs::write(&settings.out, text).unwrap();
    eprintln!("wrote {}", settings.out.display());
}
