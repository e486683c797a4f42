//! The peers' rulers: two published MCP server benchmarks rerun here, in
//! one run, against the remote adapter (`dist/main --listen`, the `--server`
//! build, `--no-auth` as the peers have none), rmcp's own Streamable HTTP
//! service (`StreamableHttpService` with its `LocalSessionManager`, as in
//! rmcp's `examples/servers/src/counter_streamhttp.rs`) and FastMCP
//! (`--transport http`, its stateful SSE default). rmcp's service runs
//! around the runtime's own `context_search` handler and V1 binding (the
//! same tool and upstream request as the adapter: the targets compare
//! these) and around the example's counter (no upstream, shown beside),
//! each in rmcp's default stateful settings and in the stateless JSON
//! settings TM Dev Lab's rmcp row ran.
//!
//! - **sco3/mcp-benchmark's single client** (`src/bin/sdk-benchmark.rs`):
//!   one rmcp client, three sequential phases of N operations each: N
//!   sessions opened and closed (`initialize`, `notifications/initialized`,
//!   `DELETE`), N `tools/list` in one session, N `tools/call` in a new one;
//!   operations a second are successes over the phase's wall time, with
//!   the mean latency.
//! - **TM Dev Lab's v2 load** (`benchmark/benchmark.js`, k6): 50 virtual
//!   users, each iteration three fresh sessions (`initialize`,
//!   `notifications/initialized`, `tools/call`, `DELETE`), one more for
//!   `tools/list`, then a 50 ms sleep; requests a second count every HTTP
//!   request. Here a driver of the same pattern (no k6), all 50 users from
//!   the start (no ramp) for a fixed time.
//!
//! The load generator and the upstream share CPU 0; every server runs on
//! the others (taskset), as in the HTTP comparison.

use std::{
    path::Path,
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use super::remote::{
    Peer, Peers, cpu_seconds, fixed_upstream, free_port, pin_self, pinned, placement,
};
use super::{Report, percentile};

/// rmcp's counter: one `increment` tool, one counter a session.
#[derive(Clone, Default)]
struct Counter(Arc<std::sync::Mutex<i64>>);

fn increment_tool() -> Tool {
    let schema: JsonObject = serde_json::from_value(json!({"type": "object", "properties": {}}))
        .expect("a schema object");
    Tool::new("increment", "Increment the counter by 1", Arc::new(schema))
}

impl ServerHandler for Counter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-counter", "3.11.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![increment_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "increment" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let value = {
            let mut counter = self.0.lock().expect("counter lock");
            *counter += 1;
            *counter
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(value.to_string())]).into())
    }
}

/// `bench --rmcp-peer PORT stateful|stateless counter|context_search`:
/// rmcp's Streamable HTTP service, served by hyper's HTTP/1 (TCP_NODELAY)
/// on `127.0.0.1:PORT/mcp`, around [`Counter`] (a new counter a session,
/// as in rmcp's example) or around the runtime's own `context_search`
/// handler and V1 binding (`PROVIDER_CONTEXT_BASE_URL`,
/// `PROVIDER_CONTEXT_TOKEN`): the same tool and upstream request as the
/// adapter, on rmcp's HTTP layer instead of the adapter's.
pub fn rmcp_peer(args: &[String]) {
    use ecp::providers::http::{HttpSearchConfig, HttpSearchProvider};
    use ecp::runtime::{ContextSearchServer, ProviderBudget, RuntimeConfig};
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    let port: u16 = args[2].parse().unwrap();
    let config = match args[3].as_str() {
        "stateful" => StreamableHttpServerConfig::default(),
        _ => StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    };
    ecp::runtime::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if args[4] == "counter" {
        return runtime.block_on(serve_rmcp(port, config, Counter::default));
    }
    let (base, token) = ("PROVIDER_CONTEXT_BASE_URL", "PROVIDER_CONTEXT_TOKEN");
    let provider = runtime.block_on(async {
        HttpSearchProvider::new(HttpSearchConfig::from_env(base, token).unwrap())
    });
    let server = ContextSearchServer::new(
        Arc::new(provider),
        RuntimeConfig {
            name: "rmcp-context-search".to_owned(),
            version: "3.11.0".to_owned(),
            budget: ProviderBudget::DEFAULT,
        },
    );
    runtime.block_on(serve_rmcp(port, config, move || server.clone()));
}

async fn serve_rmcp<S: ServerHandler>(
    port: u16,
    config: rmcp::transport::streamable_http_server::StreamableHttpServerConfig,
    make: impl Fn() -> S + Send + Sync + 'static,
) {
    use hyper::{Request, body::Incoming, service::service_fn};
    use rmcp::transport::streamable_http_server::{
        StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let handler = service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await;
        });
    }
}

impl Load {
    /// Every HTTP request counted, as TM Dev Lab counts.
    fn per_second(&self) -> f64 {
        self.requests as f64 / self.seconds
    }
}

/// One server under the rulers: its URL, the tool a call names with its
/// arguments, and its process.
struct Subject {
    label: &'static str,
    url: String,
    tool: &'static str,
    arguments: Value,
    pid: u32,
}

/// One phase of the single-client ruler.
struct Phase {
    done: usize,
    failed: usize,
    seconds: f64,
    mean_ms: f64,
    /// The server's CPU an operation, µs.
    cpu_us: f64,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.done as f64 / self.seconds
    }
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect(http: &reqwest::Client, url: &str) -> Result<Client, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    ().serve(transport).await.map_err(|e| e.to_string())
}

/// The CPU time of the threads process `pid` has now, in seconds, to the
/// nanosecond (`/proc/PID/task/*/schedstat`; `/proc/PID/stat` counts
/// 10 ms ticks, too coarse for a phase of a thousand 50 µs operations).
fn thread_cpu_seconds(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let nanoseconds: u64 = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    nanoseconds as f64 / 1e9
}

/// Runs `operation` `n` times in sequence: successes, failures, wall time,
/// mean latency and the CPU of process `pid` an operation.
async fn phase<F, Fut>(n: usize, pid: u32, mut operation: F) -> Phase
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let (mut done, mut failed, mut total) = (0, 0, 0.0);
    let cpu_before = thread_cpu_seconds(pid);
    let started = Instant::now();
    for _ in 0..n {
        let one = Instant::now();
        match operation().await {
            Ok(()) => {
                done += 1;
                total += one.elapsed().as_secs_f64();
            }
            Err(_) => failed += 1,
        }
    }
    Phase {
        done,
        failed,
        seconds: started.elapsed().as_secs_f64(),
        mean_ms: total * 1000.0 / done.max(1) as f64,
        cpu_us: (thread_cpu_seconds(pid) - cpu_before) * 1e6 / done.max(1) as f64,
    }
}

/// sco3's three phases against `subject`, `n` operations each.
async fn single_client(subject: &Subject, n: usize) -> [Phase; 3] {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = subject.url.as_str();
    let sessions = phase(n, subject.pid, || async {
        let client = connect(&http, url).await?;
        client.cancel().await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
    let client = connect(&http, url).await.expect("a session");
    let lists = phase(n, subject.pid, || async {
        let tools = client.list_tools(None).await.map_err(|e| e.to_string())?;
        match tools.tools.len() {
            1 => Ok(()),
            count => Err(format!("{count} tools")),
        }
    })
    .await;
    let _ = client.cancel().await;
    let client = connect(&http, url).await.expect("a session");
    let mut params = CallToolRequestParams::new(subject.tool);
    params.arguments = subject.arguments.as_object().cloned();
    let calls = phase(n, subject.pid, || async {
        let result = client
            .call_tool(params.clone())
            .await
            .map_err(|e| e.to_string())?;
        match result.is_error {
            Some(true) => Err(format!("{result:?}")),
            _ => Ok(()),
        }
    })
    .await;
    let _ = client.cancel().await;
    [sessions, lists, calls]
}

/// What the 50 users of one server did.
#[derive(Default)]
struct Load {
    iterations: usize,
    requests: usize,
    failed: usize,
    seconds: f64,
    /// `tools/call` latencies, µs, sorted.
    calls: Vec<f64>,
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// One POST or DELETE of a session: the status, the session the answer
/// names and the body read whole.
async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    session: Option<&str>,
    body: Option<&str>,
) -> Result<(u16, Option<String>, String), String> {
    let mut request = http
        .request(method, url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    // Every request after `initialize` names the revision, as MCP asks.
    if body != Some(INITIALIZE) {
        request = request.header("mcp-protocol-version", "2025-11-25");
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(body) = body {
        request = request.body(body.to_owned());
    }
    let answer = request.send().await.map_err(|e| e.to_string())?;
    let status = answer.status().as_u16();
    let named = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = answer.text().await.map_err(|e| e.to_string())?;
    Ok((status, named, text))
}

/// One session of TM Dev Lab's pattern around `body`: the requests made,
/// and the latency of `body`'s request (µs).
async fn session(http: &reqwest::Client, url: &str, body: &str) -> Result<(usize, f64), String> {
    use reqwest::Method;
    let (status, id, _) = send(http, Method::POST, url, None, Some(INITIALIZE)).await?;
    if status != 200 {
        return Err(format!("initialize: {status}"));
    }
    let id = id.as_deref();
    let (status, _, _) = send(http, Method::POST, url, id, Some(INITIALIZED)).await?;
    if status != 202 {
        return Err(format!("initialized: {status}"));
    }
    let started = Instant::now();
    let (status, _, text) = send(http, Method::POST, url, id, Some(body)).await?;
    let latency = started.elapsed().as_secs_f64() * 1e6;
    if status != 200 || !text.contains("\"result\"") || text.contains("\"isError\":true") {
        return Err(format!("{status}: {text}"));
    }
    // A server without sessions may refuse DELETE (405), as MCP allows.
    let (status, _, _) = send(http, Method::DELETE, url, id, None).await?;
    if !matches!(status, 200 | 202 | 204 | 405) {
        return Err(format!("DELETE: {status}"));
    }
    Ok((4, latency))
}

/// One virtual user until `deadline`.
async fn user(url: String, call: String, deadline: Instant) -> Load {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut load = Load::default();
    while Instant::now() < deadline {
        for body in [call.as_str(), call.as_str(), call.as_str(), LIST] {
            match session(&http, &url, body).await {
                Ok((requests, latency)) => {
                    load.requests += requests;
                    if body != LIST {
                        load.calls.push(latency);
                    }
                }
                Err(_) => load.failed += 1,
            }
        }
        load.iterations += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    load
}

/// TM Dev Lab's 50 users against `subject` for `time`.
async fn fifty_users(subject: &Subject, time: Duration) -> Load {
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": subject.tool, "arguments": subject.arguments}})
    .to_string();
    let started = Instant::now();
    let deadline = started + time;
    let mut users = tokio::task::JoinSet::new();
    for _ in 0..50 {
        users.spawn(user(subject.url.clone(), call.clone(), deadline));
    }
    let mut total = Load::default();
    while let Some(done) = users.join_next().await {
        let done = done.unwrap();
        total.iterations += done.iterations;
        total.requests += done.requests;
        total.failed += done.failed;
        total.calls.extend(done.calls);
    }
    total.seconds = started.elapsed().as_secs_f64();
    total.calls.sort_by(f64::total_cmp);
    total
}

/// Peak resident memory of `pid` so far, MiB (`VmHWM`).
fn peak_rss(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Both rulers against the adapter, rmcp's server in both settings and
/// FastMCP, every server calling the same fixed-body upstream: five
/// rounds of 1000 operations a phase and 5 s of load (`quick`: three of
/// 200 and 2 s).
pub fn bench(main: &Path, base_url: &str, peers: &Peers, quick: bool, report: &mut Report) {
    ecp::runtime::install_tls_provider();
    let (cores, servers_on, clients_on) = placement();
    let pin = servers_on.as_deref();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (_upstream, upstream_url) = fixed_upstream(&tokio, base_url, clients_on);

    // The adapter's access log goes to a file, as a deployment's would:
    // read by this process, it would take CPU 0 from the load generator.
    let log = tempfile::tempfile().unwrap();
    let adapter_port = free_port();
    let mut adapter = pinned(main, pin);
    adapter
        .args([
            "--listen",
            &format!("127.0.0.1:{adapter_port}"),
            "--no-auth",
        ])
        .env("ACME_CONTEXT_BASE_URL", &upstream_url)
        .env("ACME_CONTEXT_TOKEN", "bench-token");
    let adapter = Peer::spawn_logging(adapter, adapter_port, log.into());
    let rmcp_peer = |mode: &str, tool: &str| {
        let port = free_port();
        let mut command = pinned(std::env::current_exe().unwrap(), pin);
        command
            .args(["--rmcp-peer", &port.to_string(), mode, tool])
            .env("PROVIDER_CONTEXT_BASE_URL", &upstream_url)
            .env("PROVIDER_CONTEXT_TOKEN", "bench-token");
        Peer::spawn(command, port)
    };
    let rmcp_servers = [
        rmcp_peer("stateful", "context_search"),
        rmcp_peer("stateless", "context_search"),
        rmcp_peer("stateful", "counter"),
        rmcp_peer("stateless", "counter"),
    ];
    let fastmcp_port = free_port();
    let mut fastmcp: Command = pinned(&peers.python, pin);
    fastmcp
        .arg(&peers.fastmcp_server)
        .args([&fastmcp_port.to_string(), "stateful"])
        .env("PROVIDER_CONTEXT_BASE_URL", &upstream_url)
        .env("PROVIDER_CONTEXT_TOKEN", "bench-token");
    let fastmcp = Peer::spawn(fastmcp, fastmcp_port);

    let query = json!({"query": "deployment policy"});
    let subject = |label, peer: &Peer, tool, arguments: &Value| Subject {
        label,
        url: peer.url.clone(),
        tool,
        arguments: arguments.clone(),
        pid: peer.child.id(),
    };
    let none = json!({});
    let subjects = [
        Subject {
            label: "ecp adapter (dist/main --listen, --no-auth)",
            url: adapter.url.clone(),
            tool: "context_search",
            arguments: query.clone(),
            pid: adapter.child.id(),
        },
        subject(
            "rmcp 3.11, the same context_search, stateful SSE (rmcp's default settings)",
            &rmcp_servers[0],
            "context_search",
            &query,
        ),
        subject(
            "rmcp 3.11, the same context_search, stateless JSON (TM Dev Lab's rmcp settings)",
            &rmcp_servers[1],
            "context_search",
            &query,
        ),
        subject(
            "rmcp 3.11 counter (its example; no upstream), stateful SSE",
            &rmcp_servers[2],
            "increment",
            &none,
        ),
        subject(
            "rmcp 3.11 counter (its example; no upstream), stateless JSON",
            &rmcp_servers[3],
            "increment",
            &none,
        ),
        subject(
            "FastMCP 4.2.3, stateful SSE (--transport http)",
            &fastmcp,
            "context_search",
            &query,
        ),
    ];
    let n = if quick { 200 } else { 1000 };
    let (rounds, time) = if quick {
        (3, Duration::from_secs(2))
    } else {
        (5, Duration::from_secs(5))
    };
    // Rounds interleaved, so that a slow moment of the shared machine falls
    // on every server; FastMCP, ten to thirty times slower, runs one round.
    let once = |index: usize| index == subjects.len() - 1;
    let mut single: Vec<Vec<[Phase; 3]>> = subjects.iter().map(|_| Vec::new()).collect();
    let mut loads: Vec<Vec<(Load, f64)>> = subjects.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        eprintln!("peer rulers, round {} of {rounds}", round + 1);
        for (index, subject) in subjects.iter().enumerate() {
            if round > 0 && once(index) {
                continue;
            }
            single[index].push(tokio.block_on(single_client(subject, n)));
            let before = cpu_seconds(subject.pid);
            let load = tokio.block_on(fifty_users(subject, time));
            loads[index].push((load, cpu_seconds(subject.pid) - before));
        }
    }
    if cores >= 2 {
        pin_self(&format!("0-{}", cores - 1));
    }
    let single: Vec<[Phase; 3]> = single.into_iter().map(median_phases).collect();
    let loads: Vec<(Load, f64)> = loads
        .into_iter()
        .map(|mut of| {
            of.sort_by(|a, b| a.0.per_second().total_cmp(&b.0.per_second()));
            let middle = of.len() / 2;
            of.swap_remove(middle)
        })
        .collect();
    let of_rounds = format!(
        "medians of {rounds} rounds, FastMCP's one; {n} operations a phase, {} s of load a round",
        time.as_secs()
    );
    record(&subjects, &single, &loads, &of_rounds, report);
}

/// Each phase's median round.
fn median_phases(rounds: Vec<[Phase; 3]>) -> [Phase; 3] {
    let mut by_phase: [Vec<Phase>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for phases in rounds {
        for (at, phase) in phases.into_iter().enumerate() {
            by_phase[at].push(phase);
        }
    }
    by_phase.map(|mut of| {
        of.sort_by(|a, b| a.per_second().total_cmp(&b.per_second()));
        let middle = of.len() / 2;
        of.swap_remove(middle)
    })
}

/// The rows and the two targets.
fn record(
    subjects: &[Subject],
    single: &[[Phase; 3]],
    loads: &[(Load, f64)],
    of_rounds: &str,
    report: &mut Report,
) {
    for (subject, phases) in subjects.iter().zip(single) {
        let failed: usize = phases.iter().map(|p| p.failed).sum();
        let [sessions, lists, calls] = phases;
        report.row(
            format!("peer ruler, sco3's single client, {}", subject.label),
            format!(
                "sessions {:.0}/s ({:.2} ms, {:.0} µs of server CPU), tools/list {:.0}/s ({:.2} ms, {:.0} µs), tools/call {:.0}/s ({:.2} ms, {:.0} µs); {failed} failed ({of_rounds})",
                sessions.per_second(),
                sessions.mean_ms,
                sessions.cpu_us,
                lists.per_second(),
                lists.mean_ms,
                lists.cpu_us,
                calls.per_second(),
                calls.mean_ms,
                calls.cpu_us,
            ),
        );
    }
    for (subject, (load, cpu)) in subjects.iter().zip(loads) {
        report.row(
            format!("peer ruler, TM Dev Lab's 50 users, {}", subject.label),
            format!(
                "{:.0} req/s, {:.0} iterations/s, tools/call p50 {:.2} ms, p99 {:.2} ms, {} sessions failed, server CPU {:.0} µs/iteration, peak RSS {:.1} MiB ({of_rounds})",
                load.per_second(),
                load.iterations as f64 / load.seconds,
                percentile(&load.calls, 0.5) / 1000.0,
                percentile(&load.calls, 0.99) / 1000.0,
                load.failed,
                cpu * 1e6 / load.iterations.max(1) as f64,
                peak_rss(subject.pid),
            ),
        );
    }
    // Ahead of rmcp's server doing the same work (the same tool, binding
    // and upstream), in its default settings and in TM Dev Lab's.
    let ours = &single[0];
    let worst = single[1..3]
        .iter()
        .flat_map(|theirs| {
            ours.iter()
                .zip(theirs)
                .map(|(a, b)| a.per_second() / b.per_second())
        })
        .fold(f64::INFINITY, f64::min);
    let clean = single[0].iter().all(|p| p.failed == 0);
    report.target(
        "peer ruler, sco3's single client: ahead of rmcp's server (the same tool) in every phase",
        worst > 1.0 && clean,
        format!("{worst:.2}x at the closest phase"),
    );
    let ratio = loads[1..3]
        .iter()
        .map(|(theirs, _)| loads[0].0.per_second() / theirs.per_second())
        .fold(f64::INFINITY, f64::min);
    report.target(
        "peer ruler, TM Dev Lab's 50 users: ahead of rmcp's server (the same tool)",
        ratio > 1.0 && loads[0].0.failed == 0,
        format!("{ratio:.2}x the closer rmcp setting"),
    );
}
