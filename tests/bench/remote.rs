//! The remote adapter (`--listen`, the extension made with `ecp new
//! --server`, as a remote deployment builds it) over Streamable HTTP on
//! loopback: per-call latency with one client, then requests per second and
//! p99 with concurrent clients against one process and two (round-robin by
//! client), every call carrying a JWT the server verifies. Reported as
//! ratios against the stdio per-call time of the same run. Then the time
//! from process start to the first answered `initialize` (the JWKS fetched
//! from a URL first), and a comparison under the same load with the
//! servers a provider would otherwise deploy: the TypeScript SDK's
//! stateless Streamable HTTP server, FastMCP's, and a plain hyper server
//! answering a fixed body (the ceiling of this machine), with the load
//! generator and the servers pinned to different cores where there are two.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use ecp::check::upstream::{Reply, Upstream};

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
    /// With OAuth from `jwks` (a file or a URL), or `--no-auth` without;
    /// on the CPUs `pin` names, if any.
    fn spawn(main: &Path, base_url: &str, jwks: Option<&str>, pin: Option<&str>) -> HttpServer {
        let mut command = pinned(main, pin);
        command.args(["--listen", "127.0.0.1:0"]);
        match jwks {
            Some(jwks) => command.args(["--authorization-server", jwt::ISSUER, "--jwks", jwks]),
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

/// This program's `--hyper-ceiling` server answering every POST with
/// `body`, on the CPUs `pin` names; the file it serves lives as long as the
/// returned handle.
fn fixed_body_server(body: &[u8], pin: Option<&str>) -> (Peer, tempfile::NamedTempFile) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), body).unwrap();
    let port = free_port();
    let mut command = pinned(std::env::current_exe().unwrap(), pin);
    command
        .args(["--hyper-ceiling", &port.to_string()])
        .arg(file.path());
    (Peer::spawn(command, port), file)
}

/// User plus system CPU time of process `pid` so far, in seconds
/// (`/proc/PID/stat`, in the kernel's 100 Hz user ticks). `taskset` execs
/// the program, so a pinned child's pid is the server's own.
pub(super) fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let after_name = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |at: usize| {
        fields
            .get(at)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    (ticks(11) + ticks(12)) / 100.0
}

/// `program` started through `taskset -c CPUS` when `pin` names CPUs.
pub(super) fn pinned(program: impl AsRef<std::ffi::OsStr>, pin: Option<&str>) -> Command {
    match pin {
        Some(cpus) => {
            let mut command = Command::new("taskset");
            command.args(["-c", cpus]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Sets the CPUs of every thread of this process (`taskset -a -p`).
pub(super) fn pin_self(cpus: &str) {
    let status = Command::new("taskset")
        .args(["-a", "-c", "-p", cpus, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("taskset (util-linux)");
    assert!(status.success(), "taskset -a -c -p {cpus}");
}

pub(super) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A peer server process on a fixed port; killed when dropped.
pub(super) struct Peer {
    pub(super) child: Child,
    pub(super) url: String,
}

impl Peer {
    /// Starts `command` and waits (up to 60 s: FastMCP's imports take
    /// seconds) until `127.0.0.1:port` accepts connections.
    pub(super) fn spawn(command: Command, port: u16) -> Peer {
        Peer::spawn_logging(command, port, Stdio::inherit())
    }

    /// [`Peer::spawn`] with its stderr sent to `log`.
    pub(super) fn spawn_logging(mut command: Command, port: u16, log: Stdio) -> Peer {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{command:?} ended before listening"
            );
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{command:?} never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Peer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The peers' programs.
pub struct Peers {
    /// `tests/bench/reference-server.mjs` beside the SDK's node_modules.
    pub node_server: PathBuf,
    /// A Python with `fastmcp` installed, and `tests/bench/fastmcp_server.py`.
    pub python: PathBuf,
    pub fastmcp_server: PathBuf,
}

/// The hyper ceiling, and the fixed upstream of the comparison (`bench
/// --hyper-ceiling PORT BODY_FILE`): every POST is
/// read whole and answered with the file's bytes as JSON, over HTTP/1.1
/// keep-alive; nothing else.
pub fn hyper_ceiling(args: &[String]) {
    use http_body_util::{BodyExt, Full};
    use hyper::{Request, Response, body::Incoming, service::service_fn};
    let port: u16 = args[2].parse().unwrap();
    let body = bytes::Bytes::from(std::fs::read(&args[3]).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let body = body.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let body = body.clone();
                    async move {
                        request.into_body().collect().await?;
                        Ok::<_, hyper::Error>(
                            Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(body))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

/// `bench --client-alone runtime|legacy|hyper BASE_URL SECONDS`: 16 tasks
/// on one thread POST the template's request to `BASE_URL`'s search path
/// for SECONDS, through the runtime's own upstream client (`Upstream`:
/// hyper-util's pool behind the runtime's connector, the base URL joined,
/// the status and size rules; reqwest until runtime 0.4.2), through
/// hyper-util's legacy `Client` bare (a client a task) or through hyper's HTTP/1
/// connection API (a connection a task, nothing else: the least an
/// upstream client can do); prints the requests made and this process's
/// CPU seconds.
pub fn client_alone(args: &[String]) {
    use ecp::runtime::http::{Credential, Upstream};
    use http_body_util::Full;
    let (mode, base_url) = (args[2].clone(), args[3].clone());
    let seconds: f64 = args[4].parse().unwrap();
    ecp::runtime::install_tls_provider();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let requests = tokio.block_on(async move {
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let upstream = std::sync::Arc::new(
            Upstream::new(&base_url, "BASE", &Credential::bearer("TOKEN"), Some("t")).unwrap(),
        );
        let uri: hyper::Uri = format!("{base_url}v1/context/search").parse().unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..16 {
            let (mode, upstream, uri) = (mode.clone(), upstream.clone(), uri.clone());
            tasks.spawn(async move {
                let mut made = 0u64;
                if mode == "runtime" {
                    while Instant::now() < deadline {
                        let text = upstream
                            .post("v1/context/search")
                            .json_bytes(SEARCH_BODY.to_vec())
                            .send_text()
                            .await
                            .unwrap();
                        std::hint::black_box(text);
                        made += 1;
                    }
                    return made;
                }
                if mode == "legacy" {
                    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
                    connector.set_nodelay(true);
                    let client = hyper_util::client::legacy::Client::builder(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .pool_idle_timeout(Duration::from_secs(90))
                    .build::<_, Full<bytes::Bytes>>(connector);
                    while Instant::now() < deadline {
                        let answer = client.request(search(&uri, None)).await.unwrap();
                        drain(answer).await;
                        made += 1;
                    }
                    return made;
                }
                let authority = uri.authority().unwrap().to_string();
                let stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
                stream.set_nodelay(true).unwrap();
                let (mut send, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await
                        .unwrap();
                tokio::spawn(connection);
                while Instant::now() < deadline {
                    send.ready().await.unwrap();
                    let request = search(&uri, Some(&authority));
                    drain(send.send_request(request).await.unwrap()).await;
                    made += 1;
                }
                made
            });
        }
        let mut requests = 0;
        while let Some(made) = tasks.join_next().await {
            requests += made.unwrap();
        }
        requests
    });
    println!("{requests} {}", cpu_seconds(std::process::id()));
}

/// The body of the template's search request.
const SEARCH_BODY: &[u8] = br#"{"query":"deployment policy","limit":5}"#;

/// The template's search request for hyper's clients; `host` where the
/// client does not write it.
fn search(
    uri: &hyper::Uri,
    host: Option<&str>,
) -> hyper::Request<http_body_util::Full<bytes::Bytes>> {
    let mut request = hyper::Request::post(uri.clone());
    if let Some(host) = host {
        request = request.header("host", host);
    }
    request
        .header("accept", "application/json")
        .header("authorization", "Bearer t")
        .header("content-type", "application/json")
        .header("user-agent", "bench/0")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            SEARCH_BODY,
        )))
        .unwrap()
}

/// Reads an answer of [`search`] whole.
async fn drain(answer: hyper::Response<hyper::body::Incoming>) {
    use http_body_util::BodyExt;
    assert_eq!(answer.status().as_u16(), 200);
    std::hint::black_box(answer.into_body().collect().await.unwrap().to_bytes());
}

/// Server CPU a request of the runtime's upstream client, hyper-util's
/// legacy `Client` and hyper's connection API, each alone on `pin` against
/// `base_url`: the medians of three alternating rounds, in µs.
fn clients_alone(base_url: &str, pin: Option<&str>) -> [f64; 3] {
    let mut rounds: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..3 {
        for (index, mode) in ["runtime", "legacy", "hyper"].iter().enumerate() {
            let output = pinned(std::env::current_exe().unwrap(), pin)
                .args(["--client-alone", mode, &format!("{base_url}/"), "1.5"])
                .stderr(Stdio::inherit())
                .output()
                .unwrap();
            assert!(output.status.success(), "--client-alone {mode}");
            let text = String::from_utf8(output.stdout).unwrap();
            let (made, cpu) = text.trim().split_once(' ').unwrap();
            let made: f64 = made.parse().unwrap();
            rounds[index].push(cpu.parse::<f64>().unwrap() * 1e6 / made.max(1.0));
        }
    }
    rounds.map(|mut of| {
        of.sort_by(f64::total_cmp);
        of[of.len() / 2]
    })
}

/// Process start to the first `initialize` answered with 200 at `port`
/// (one new connection per attempt, every millisecond), in ms.
fn start_to_initialize(mut command: Command, port: u16, token: &str) -> f64 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let answered = loop {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no initialize answer in 10 s"
        );
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            let mut answer = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut answer).is_ok()
                && answer.starts_with("HTTP/1.1 200")
            {
                break started.elapsed();
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = child.kill();
    let _ = child.wait();
    answered.as_secs_f64() * 1000.0
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
    load_until(targets, clients, calls, None).await
}

/// [`load`], each client stopping early at `deadline` when one is given.
async fn load_until(
    targets: &[(String, String)],
    clients: usize,
    calls: usize,
    deadline: Option<Instant>,
) -> Load {
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
            let mut latencies = Vec::with_capacity(calls.min(1 << 16));
            for _ in 0..calls {
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    break;
                }
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
    let mut latencies = Vec::new();
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

/// Measures and reports `main` (the `--server` build); `stdio_p50` is the
/// default build's stdio per-call p50 (µs).
pub fn bench(
    main: &Path,
    base_url: &str,
    calls: usize,
    stdio_p50: f64,
    peers: &Peers,
    report: &mut Report,
) {
    let load_side = Clients::new();
    let (tokio, signer) = (&load_side.tokio, &load_side.signer);
    let jwks_file = load_side.jwks.to_str().unwrap();
    let servers = [
        HttpServer::spawn(main, base_url, Some(jwks_file), None),
        HttpServer::spawn(main, base_url, Some(jwks_file), None),
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
    let open_server = HttpServer::spawn(main, base_url, None, None);
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
    drop(servers);
    drop(open_server);
    let rounds = if calls < 1000 { 5 } else { 15 };
    start_time(main, base_url, tokio, signer, rounds, report);
    compare(
        main,
        base_url,
        calls,
        tokio,
        signer,
        jwks_file,
        Some(peers),
        report,
    );
}

/// `bench --ceiling`: only the adapter with OAuth (one process and two)
/// against the hyper ceiling, the full bench's rounds.
pub fn ceiling(main: &Path, base_url: &str, report: &mut Report) {
    let load_side = Clients::new();
    compare(
        main,
        base_url,
        1000,
        &load_side.tokio,
        &load_side.signer,
        load_side.jwks.to_str().unwrap(),
        None,
        report,
    );
}

/// What the load needs: the clients' runtime (threads of their own, apart
/// from the upstream's), the token signer and its key set in a file.
struct Clients {
    tokio: tokio::runtime::Runtime,
    signer: jwt::Signer,
    jwks: PathBuf,
    _dir: tempfile::TempDir,
}

impl Clients {
    fn new() -> Clients {
        ecp::runtime::install_tls_provider();
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let signer = jwt::Signer::es256("bench");
        let dir = tempfile::tempdir().unwrap();
        let jwks = dir.path().join("jwks.json");
        std::fs::write(&jwks, jwt::jwks(&[&signer])).unwrap();
        Clients {
            tokio,
            signer,
            jwks,
            _dir: dir,
        }
    }
}

/// Process start to the first answered `initialize`, the key set fetched
/// from a URL at start, over `rounds` starts; and how soon a start with an
/// unreachable key set ends.
fn start_time(
    main: &Path,
    base_url: &str,
    tokio: &tokio::runtime::Runtime,
    signer: &jwt::Signer,
    rounds: usize,
    report: &mut Report,
) {
    let keys = jwt::jwks(&[signer]);
    let key_server = tokio.block_on(Upstream::start(move |_| Reply::json(keys.clone())));
    let jwks_url = format!("{}/jwks", key_server.base_url);
    let adapter = |port: u16, jwks: &str| {
        let mut command = Command::new(main);
        command
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--authorization-server", jwt::ISSUER, "--jwks", jwks])
            .env("ACME_CONTEXT_BASE_URL", base_url)
            .env("ACME_CONTEXT_TOKEN", "bench-token");
        command
    };
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let port = free_port();
            let token = signer.token(&jwt::claims(&format!("http://127.0.0.1:{port}/mcp")));
            start_to_initialize(adapter(port, &jwks_url), port, &token)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let worst = times[times.len() - 1];
    report.row(
        "Streamable HTTP, process start to the first answered initialize (JWKS from a URL)",
        format!(
            "{:.1} ms [{:.1}-{worst:.1}] over {rounds} starts",
            percentile(&times, 0.5),
            times[0]
        ),
    );
    report.target(
        "HTTP start to first initialize well inside Qwen's 5 s discovery timeout",
        worst < 1000.0,
        format!("{worst:.0} ms at worst"),
    );
    // Port 1 on loopback refuses connections.
    let started = Instant::now();
    let status = adapter(free_port(), "http://127.0.0.1:1/jwks")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let refused = started.elapsed().as_secs_f64() * 1000.0;
    assert!(!status.success(), "started without its key set");
    report.row(
        "Streamable HTTP start with the JWKS host refusing connections",
        format!(
            "exit status {} after {refused:.0} ms",
            status.code().unwrap_or(-1)
        ),
    );
    report.target(
        "an unreachable JWKS ends the start within 1 s",
        refused < 1000.0,
        format!("{refused:.0} ms"),
    );
}

/// The cores, and where the servers and the load go: with two or more,
/// the load generator (this process, pinned here) and the upstream on CPU
/// 0, the servers on the others (a `taskset` list); with one, nowhere in
/// particular.
pub(super) fn placement() -> (usize, Option<String>, Option<&'static str>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let servers_on = (cores >= 2).then(|| format!("1-{}", cores - 1));
    let clients_on = (cores >= 2).then_some("0");
    if let Some(cpus) = clients_on {
        pin_self(cpus);
    }
    (cores, servers_on, clients_on)
}

/// The upstream every server of a comparison calls: a hyper process on
/// `pin` (beside the load generator) answering every POST with the
/// scripted upstream's search answer, so that the upstream's own
/// bookkeeping weighs on no one; alive while the handle is, with its base
/// URL.
pub(super) fn fixed_upstream(
    tokio: &tokio::runtime::Runtime,
    base_url: &str,
    pin: Option<&str>,
) -> ((Peer, tempfile::NamedTempFile), String) {
    let items = tokio.block_on(async {
        reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("{base_url}/v1/context/search"))
            .body("{}")
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    });
    let upstream = fixed_body_server(&items, pin);
    let url = upstream.0.url.trim_end_matches("/mcp").to_owned();
    (upstream, url)
}

/// The same load (16 clients, keep-alive, `tools/call` with the same query
/// to the same upstream) against the adapter with OAuth on one and two
/// processes, the TypeScript SDK's and FastMCP's stateless Streamable HTTP
/// servers, and the hyper ceiling; the load generator and the upstream (a
/// hyper process with a fixed answer) on CPU 0, the servers on the others,
/// when there are two or more.
#[allow(clippy::too_many_arguments)]
fn compare(
    main: &Path,
    base_url: &str,
    calls: usize,
    tokio: &tokio::runtime::Runtime,
    signer: &jwt::Signer,
    jwks: &str,
    peers: Option<&Peers>,
    report: &mut Report,
) {
    let (cores, servers_on, clients_on) = placement();
    let pin = servers_on.as_deref();
    let (_upstream, upstream_url) = fixed_upstream(tokio, base_url, clients_on);
    let base_url = upstream_url.as_str();
    let servers: Vec<HttpServer> = (0..2)
        .map(|_| HttpServer::spawn(main, base_url, Some(jwks), pin))
        .collect();
    let ours: Vec<(String, String)> = servers
        .iter()
        .map(|server| (server.url.clone(), signer.token(&jwt::claims(&server.url))))
        .collect();

    // The peers a provider would otherwise deploy (not in `--ceiling`).
    let peer_servers = peers.map(|peers| {
        let node_port = free_port();
        let mut node = pinned("node", pin);
        node.arg(&peers.node_server)
            .args(["--listen", &node_port.to_string()])
            .current_dir(peers.node_server.parent().unwrap())
            .env("PROVIDER_CONTEXT_BASE_URL", base_url)
            .env("PROVIDER_CONTEXT_TOKEN", "bench-token");
        let node = Peer::spawn(node, node_port);

        let fastmcp_port = free_port();
        let mut fastmcp = pinned(&peers.python, pin);
        fastmcp
            .arg(&peers.fastmcp_server)
            .arg(fastmcp_port.to_string())
            .env("PROVIDER_CONTEXT_BASE_URL", base_url)
            .env("PROVIDER_CONTEXT_TOKEN", "bench-token");
        (node, Peer::spawn(fastmcp, fastmcp_port))
    });

    // The ceiling answers with the adapter's own answer to the call.
    let answer = tokio.block_on(async {
        reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(&ours[0].0)
            .bearer_auth(&ours[0].1)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"deployment policy"}}}"#)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
    });
    let (hyper, _body_file) = fixed_body_server(&answer, pin);

    let open = |peer: &Peer| vec![(peer.url.clone(), String::new())];
    // (label, the servers the clients spread over, their processes, one
    // round only: the slow peers answer a few hundred calls a round)
    type Run<'a> = (&'a str, Vec<(String, String)>, Vec<u32>, bool);
    let mut runs: Vec<Run> = vec![
        (
            "ecp adapter (--server build), OAuth, 1 process",
            ours[..1].to_vec(),
            vec![servers[0].child.id()],
            false,
        ),
        (
            "ecp adapter (--server build), OAuth, 2 processes",
            ours.clone(),
            servers.iter().map(|s| s.child.id()).collect(),
            false,
        ),
        (
            "hyper, a fixed body (the ceiling)",
            open(&hyper),
            vec![hyper.child.id()],
            false,
        ),
    ];
    if let Some((node, fastmcp)) = &peer_servers {
        runs.push((
            "TypeScript SDK 1.32.2, stateless, no auth",
            open(node),
            vec![node.child.id()],
            true,
        ));
        runs.push((
            "FastMCP 4.2.3, stateless, no auth",
            open(fastmcp),
            vec![fastmcp.child.id()],
            true,
        ));
    }
    // Each run is time-boxed; the fast servers run several rounds,
    // interleaved so that a slow moment of the shared machine falls on all
    // of them, and each reports its median round.
    let clients = 16;
    let (rounds, round_time) = if calls >= 1000 {
        (5, Duration::from_millis(1500))
    } else {
        (3, Duration::from_millis(600))
    };
    for (_, targets, _, _) in &runs {
        tokio.block_on(load(targets, 4, 20)); // warm up
    }
    let mut results: Vec<Vec<(Load, f64)>> = runs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (index, (_, targets, pids, once)) in runs.iter().enumerate() {
            if round > 0 && *once {
                continue;
            }
            let cpu_before: f64 = pids.iter().map(|&pid| cpu_seconds(pid)).sum();
            let deadline = Instant::now() + round_time;
            let loaded = tokio.block_on(load_until(targets, clients, usize::MAX, Some(deadline)));
            let cpu: f64 = pids.iter().map(|&pid| cpu_seconds(pid)).sum::<f64>() - cpu_before;
            let cpu_per_call = cpu * 1e6 / loaded.latencies.len().max(1) as f64;
            results[index].push((loaded, cpu_per_call));
        }
    }
    let mut measured = Vec::new();
    for ((label, _, _, _), mut rounds_of) in runs.iter().zip(results) {
        rounds_of.sort_by(|a, b| a.0.per_second.total_cmp(&b.0.per_second));
        let count = rounds_of.len();
        let (loaded, cpu_per_call) = &rounds_of[count / 2];
        let (p50, p99) = (
            percentile(&loaded.latencies, 0.5) / 1000.0,
            percentile(&loaded.latencies, 0.99) / 1000.0,
        );
        let of_rounds = if count > 1 {
            format!(
                " (median of {count} rounds of {:.1} s, {:.0}-{:.0})",
                round_time.as_secs_f64(),
                rounds_of[0].0.per_second,
                rounds_of[count - 1].0.per_second
            )
        } else {
            format!(" (one round of {:.1} s)", round_time.as_secs_f64())
        };
        report.row(
            format!("HTTP comparison, {label}, {clients} clients"),
            format!(
                "{:.0} req/s, p50 {p50:.2} ms, p99 {p99:.2} ms, server CPU {cpu_per_call:.0} µs/call{of_rounds}",
                loaded.per_second
            ),
        );
        measured.push((loaded.per_second, p99));
    }
    // The upstream client alone, on the servers' CPU against the same
    // upstream: what an upstream client on hyper's connection API could
    // save a call at most.
    let [runtime_client, legacy, bare] = clients_alone(base_url, pin);
    report.row(
        "upstream client alone, the runtime's, 16 tasks on one thread",
        format!("{runtime_client:.1} µs of CPU a request (median of 3 rounds of 1.5 s)"),
    );
    report.row(
        "upstream client alone, hyper-util's legacy Client, the same load",
        format!("{legacy:.1} µs of CPU a request (median of 3 rounds of 1.5 s)"),
    );
    report.row(
        "upstream client alone, hyper's HTTP/1 connection API, the same load",
        format!("{bare:.1} µs of CPU a request (median of 3 rounds of 1.5 s)"),
    );
    if cores >= 2 {
        pin_self(&format!("0-{}", cores - 1));
    }
    let (ecp_rate, ecp_p99) = measured[0];
    if peer_servers.is_some() {
        let (node_rate, node_p99) = measured[3];
        report.target(
            "HTTP req/s at least 5x the TypeScript SDK's, at a lower p99",
            ecp_rate >= 5.0 * node_rate && ecp_p99 < node_p99,
            format!(
                "{:.1}x, p99 {ecp_p99:.2} ms against {node_p99:.2} ms",
                ecp_rate / node_rate
            ),
        );
        report.target(
            "HTTP req/s at least 3x FastMCP's",
            ecp_rate >= 3.0 * measured[4].0,
            format!("{:.1}x", ecp_rate / measured[4].0),
        );
    }
    report.target(
        "HTTP req/s at least a third of the hyper ceiling",
        ecp_rate * 3.0 >= measured[2].0,
        format!("{:.2} of it", ecp_rate / measured[2].0),
    );
    report.target(
        "HTTP req/s at least half of the hyper ceiling",
        ecp_rate * 2.0 >= measured[2].0,
        format!("{:.2} of it", ecp_rate / measured[2].0),
    );
    // Two processes scale only where each has a core of its own besides
    // the load generator's: with fewer, they share CPU 1 and the ratio
    // says nothing about the adapter.
    if cores >= 3 {
        report.target(
            "HTTP, 2 processes at least 1.6x 1 process with two cores free",
            measured[1].0 >= 1.6 * ecp_rate,
            format!("{:.2}x", measured[1].0 / ecp_rate),
        );
    } else {
        report.row(
            "HTTP, 2 processes against 1 with two cores free",
            format!(
                "not measurable here: {cores} cores, the load generator takes one and the servers share the other"
            ),
        );
    }
}
