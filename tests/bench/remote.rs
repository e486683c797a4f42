//! The remote adapter (`dist/main --listen`) over Streamable HTTP on
//! loopback: per-call latency with one client, then requests per second and
//! p99 with concurrent clients against one process and two (round-robin by
//! client), every call carrying a JWT the server verifies. Reported as
//! ratios against the stdio per-call time of the same run.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Instant,
};

use serde_json::{Value, json};

use super::{Report, percentile};

#[path = "../support/jwt.rs"]
mod jwt;

/// A `dist/main --listen 127.0.0.1:0` process; killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    /// With OAuth from `jwks`, or `--no-auth` without.
    fn spawn(main: &Path, base_url: &str, jwks: Option<&Path>) -> HttpServer {
        let mut command = Command::new(main);
        command.args(["--listen", "127.0.0.1:0"]);
        match jwks {
            Some(jwks) => command
                .args(["--authorization-server", jwt::ISSUER, "--jwks"])
                .arg(jwks),
            None => command.arg("--no-auth"),
        };
        let mut child = command
            .env("ACME_CONTEXT_BASE_URL", base_url)
            .env("ACME_CONTEXT_TOKEN", "bench-token")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", main.display()));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "no listening line"
            );
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["event"] == "listening"
            {
                break event["resource"].as_str().unwrap().to_owned();
            }
        };
        // Keep draining the access log so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Requests per second over the whole run and the sorted latencies (µs).
struct Load {
    per_second: f64,
    latencies: Vec<f64>,
}

/// `clients` concurrent clients, each making `calls` sequential calls over
/// its own keep-alive connection to `targets[client % targets.len()]`
/// (a URL and a token for it): round-robin by client.
async fn load(targets: &[(String, String)], clients: usize, calls: usize) -> Load {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "context_search", "arguments": {"query": "deployment policy"}}})
    .to_string();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let (url, token) = targets[client % targets.len()].clone();
        let body = body.clone();
        tasks.spawn(async move {
            let http = reqwest::Client::builder().no_proxy().build().unwrap();
            let mut latencies = Vec::with_capacity(calls);
            for _ in 0..calls {
                let call_started = Instant::now();
                let answer = http
                    .post(&url)
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(answer.status().as_u16(), 200);
                let text = answer.text().await.unwrap();
                assert!(text.contains("untrusted_external_context"), "{text}");
                latencies.push(call_started.elapsed().as_secs_f64() * 1e6);
            }
            latencies
        });
    }
    let mut latencies = Vec::with_capacity(clients * calls);
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done.unwrap());
    }
    let per_second = latencies.len() as f64 / started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    Load {
        per_second,
        latencies,
    }
}

/// Measures and reports; `stdio_p50` is dist/main's stdio per-call p50 (µs).
pub fn bench(main: &Path, base_url: &str, calls: usize, stdio_p50: f64, report: &mut Report) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The clients get their own threads, apart from the upstream's runtime.
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let signer = jwt::Signer::es256("bench");
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, jwt::jwks(&[&signer])).unwrap();
    let servers = [
        HttpServer::spawn(main, base_url, Some(&jwks)),
        HttpServer::spawn(main, base_url, Some(&jwks)),
    ];
    // Tokens are audience-bound: behind a balancer both processes would
    // share one resource URL; here each has its own, and its own token.
    let targets: Vec<(String, String)> = servers
        .iter()
        .map(|server| (server.url.clone(), signer.token(&jwt::claims(&server.url))))
        .collect();
    let one = &targets[..1];

    tokio.block_on(load(one, 1, 20)); // warm up
    let sequential = tokio.block_on(load(one, 1, calls));
    let p50 = percentile(&sequential.latencies, 0.5);
    report.row(
        "Streamable HTTP per call p50 / p99, 1 client",
        format!(
            "{p50:.0} / {:.0} µs ({:.2}x stdio's {stdio_p50:.0} µs)",
            percentile(&sequential.latencies, 0.99),
            p50 / stdio_p50
        ),
    );
    let open_server = HttpServer::spawn(main, base_url, None);
    let open = [(open_server.url.clone(), String::new())];
    tokio.block_on(load(&open, 1, 20));
    let unauthenticated = tokio.block_on(load(&open, 1, calls));
    report.row(
        "Streamable HTTP per call p50, 1 client, --no-auth",
        format!(
            "{:.0} µs (the same server without OAuth)",
            percentile(&unauthenticated.latencies, 0.5)
        ),
    );

    let clients = 16;
    let per_client = (calls / 4).max(50);
    let stdio_rate = 1e6 / stdio_p50;
    for (label, targets) in [("1 process", one), ("2 processes", &targets[..])] {
        let loaded = tokio.block_on(load(targets, clients, per_client));
        report.row(
            format!("Streamable HTTP, {label}, {clients} concurrent clients"),
            format!(
                "{:.0} req/s, p99 {:.2} ms ({:.2}x the stdio sequential rate of {stdio_rate:.0}/s)",
                loaded.per_second,
                percentile(&loaded.latencies, 0.99) / 1000.0,
                loaded.per_second / stdio_rate
            ),
        );
    }
}
