//! The remote adapter's own Streamable HTTP layer held to rmcp's: every
//! request of a corpus (methods, hosts, media types, revisions, per-request
//! metadata, the standard `Mcp-*` headers, bodies of every JSON-RPC kind
//! and of every MCP method) is sent to `ecp serve --listen` over a socket
//! and to rmcp's `StreamableHttpService` in this process, configured as
//! runtime 0.2.3 configured it, around the same handler and corpus; status,
//! content type, `Allow` and body must be the same bytes.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use ecp::providers::fixture::FixtureCorpus;
use ecp::runtime::{ContextSearchServer, ProviderBudget, RuntimeConfig};
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};
use serde_json::{Value, json};

use crate::remote::RemoteServer;

type Oracle = StreamableHttpService<ContextSearchServer<FixtureCorpus>, NeverSessionManager>;

/// rmcp's service as runtime 0.2.3 set it up (`remote/http.rs`).
fn oracle(oauth: bool) -> Oracle {
    let corpus = FixtureCorpus::open(std::path::Path::new(&crate::cli::corpus())).unwrap();
    let config = RuntimeConfig {
        name: "ecp serve".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        budget: ProviderBudget::DEFAULT,
    };
    let server = ContextSearchServer::new(Arc::new(corpus), config);
    let mcp_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_max_request_body_bytes(65536);
    let mcp_config = if oauth {
        mcp_config.disable_allowed_hosts()
    } else {
        mcp_config
    };
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        mcp_config,
    )
}

/// One request: method, request target, headers in order (names lower
/// case), body.
#[derive(Clone, Debug)]
pub struct Case {
    method: &'static str,
    target: &'static str,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
struct Reply {
    status: u16,
    content_type: Option<String>,
    allow: Option<String>,
    body: String,
}

async fn ask_oracle(oracle: &Oracle, case: &Case) -> Reply {
    let mut builder = hyper::Request::builder()
        .method(case.method)
        .uri(case.target);
    for (name, value) in &case.headers {
        builder = builder.header(name.as_str(), value.as_slice());
    }
    let request = builder
        .body(Full::new(Bytes::from(case.body.clone())))
        .unwrap();
    let response = oracle.handle(request).await;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let (status, content_type, allow) = (
        response.status().as_u16(),
        header("content-type"),
        header("allow"),
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        content_type,
        allow,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// The case over a fresh connection, as raw HTTP/1.1 (so that a missing or
/// odd `Host` reaches the server as written).
async fn ask_adapter(origin: &str, token: Option<&str>, case: &Case) -> Reply {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = origin.trim_start_matches("http://");
    let mut request = format!("{} {} HTTP/1.1\r\n", case.method, case.target).into_bytes();
    for (name, value) in &case.headers {
        request.extend_from_slice(name.as_bytes());
        request.extend_from_slice(b": ");
        request.extend_from_slice(value);
        request.extend_from_slice(b"\r\n");
    }
    if let Some(token) = token {
        request.extend_from_slice(format!("authorization: Bearer {token}\r\n").as_bytes());
    }
    request.extend_from_slice(
        format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            case.body.len()
        )
        .as_bytes(),
    );
    request.extend_from_slice(&case.body);
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(&request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("the adapter answers in time")
        .unwrap();
    parse_response(&answer)
}

fn parse_response(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut decoded = Vec::new();
        let mut rest = &body[..];
        loop {
            let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            decoded.extend_from_slice(&rest[end + 2..end + 2 + size]);
            rest = &rest[end + 4 + size..];
        }
        body = decoded;
    }
    Reply {
        status,
        content_type: header("content-type"),
        allow: header("allow"),
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

const HOST: &str = "127.0.0.1:8080";
const BOTH: &str = "application/json, text/event-stream";

fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    })
}

fn request(id: Value, method: &str, params: Option<Value>) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    message
}

fn call(arguments: Value) -> Value {
    json!({"name": "context_search", "arguments": arguments})
}

fn with_meta(mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    params
}

/// Bodies of every kind, each with the method its `Mcp-Method` header would
/// name (if any) and the tool its `Mcp-Name` would.
fn bodies() -> Vec<(Vec<u8>, Option<&'static str>, Option<&'static str>)> {
    let initialize = |version: &str| json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let query = json!({"query": "deployment policy"});
    let mut values: Vec<(Value, Option<&'static str>, Option<&'static str>)> = Vec::new();
    for version in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
        "2099-01-01",
    ] {
        values.push((
            request(json!(1), "initialize", Some(initialize(version))),
            Some("initialize"),
            None,
        ));
    }
    values.extend([
        (request(json!(1), "initialize", Some(json!({"protocolVersion": "2025-06-18"}))), Some("initialize"), None),
        (request(json!(1), "initialize", None), Some("initialize"), None),
        (json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some("notifications/initialized"), None),
        (json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}), Some("notifications/cancelled"), None),
        (json!({"jsonrpc": "2.0", "method": "notifications/whatever"}), Some("notifications/whatever"), None),
        (request(json!(2), "ping", None), Some("ping"), None),
        (request(json!("p"), "ping", Some(json!({}))), Some("ping"), None),
        (request(json!(2), "ping", Some(json!({"_meta": meta("2026-07-28")}))), Some("ping"), None),
        (request(json!(3), "tools/list", None), Some("tools/list"), None),
        (request(json!(3), "tools/list", Some(json!({"cursor": "x"}))), Some("tools/list"), None),
        (request(json!(3), "tools/list", Some(json!({"_meta": meta("2026-07-28")}))), Some("tools/list"), None),
        (request(json!(3), "tools/list", Some(json!({"_meta": meta("2025-06-18")}))), Some("tools/list"), None),
        (request(json!(3), "tools/list", Some(json!({"_meta": meta("2099-01-01")}))), Some("tools/list"), None),
        (request(json!(3), "tools/list", Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}))), Some("tools/list"), None),
        (request(json!(3), "tools/list", Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 5, "io.modelcontextprotocol/clientCapabilities": {}}}))), Some("tools/list"), None),
        (request(json!(4), "tools/call", Some(call(query.clone()))), Some("tools/call"), Some("context_search")),
        (request(json!("c"), "tools/call", Some(call(json!({"query": ""})))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(call(json!({"query": 5})))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(call(json!({"query": "x", "more": 1})))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(with_meta(call(query.clone()), meta("2026-07-28")))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(with_meta(call(json!({"query": ""})), meta("2026-07-28")))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(with_meta(call(query.clone()), meta("2025-06-18")))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(with_meta(call(query.clone()), json!({"progressToken": 3})))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(json!({"name": "other", "arguments": {}}))), Some("tools/call"), Some("other")),
        (request(json!(4), "tools/call", Some(with_meta(json!({"name": "other", "arguments": {}}), meta("2026-07-28")))), Some("tools/call"), Some("other")),
        (request(json!(4), "tools/call", Some(json!({"name": "context_search"}))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(json!({"name": "context_search", "arguments": null}))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(json!({"name": "context_search", "arguments": ["q"]}))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(json!({"arguments": {}}))), Some("tools/call"), None),
        (request(json!(4), "tools/call", None), Some("tools/call"), None),
        (request(json!(4), "tools/call", Some(json!("x"))), Some("tools/call"), None),
        (request(json!(4), "tools/call", Some(json!({"name": "context_search", "arguments": {"query": "x"}, "task": {"ttl": 1000}}))), Some("tools/call"), Some("context_search")),
        (request(json!(5), "server/discover", None), Some("server/discover"), None),
        (request(json!(5), "server/discover", Some(json!({}))), Some("server/discover"), None),
        (request(json!(5), "server/discover", Some(json!({"_meta": meta("2026-07-28")}))), Some("server/discover"), None),
        (request(json!(5), "server/discover", Some(json!({"_meta": meta("2025-06-18")}))), Some("server/discover"), None),
        (request(json!(6), "resources/list", None), Some("resources/list"), None),
        (request(json!(6), "resources/read", Some(json!({"uri": "x:y"}))), Some("resources/read"), None),
        (request(json!(6), "resources/templates/list", None), Some("resources/templates/list"), None),
        (request(json!(6), "prompts/list", None), Some("prompts/list"), None),
        (request(json!(6), "prompts/get", Some(json!({"name": "p"}))), Some("prompts/get"), None),
        (request(json!(6), "logging/setLevel", Some(json!({"level": "info"}))), Some("logging/setLevel"), None),
        (request(json!(6), "completion/complete", Some(json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}))), Some("completion/complete"), None),
        (request(json!(6), "tasks/list", None), Some("tasks/list"), None),
        (request(json!(6), "tasks/get", Some(json!({"taskId": "t"}))), Some("tasks/get"), None),
        (request(json!(6), "resources/subscribe", Some(json!({"uri": "x:y"}))), Some("resources/subscribe"), None),
        (request(json!(6), "subscriptions/listen", Some(json!({"_meta": meta("2026-07-28")}))), Some("subscriptions/listen"), None),
        (request(json!(6), "no/such/method", None), Some("no/such/method"), None),
        (request(json!(6), "no/such/method", Some(json!({"_meta": meta("2026-07-28")}))), Some("no/such/method"), None),
        (json!({"jsonrpc": "2.0", "id": 9, "result": {}}), None, None),
        (json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -1, "message": "m"}}), None, None),
        (json!([request(json!(1), "ping", None)]), None, None),
        (json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}), Some("ping"), None),
        (json!({"id": 1, "method": "ping"}), Some("ping"), None),
        (json!({"jsonrpc": "2.0", "id": null, "method": "ping"}), Some("ping"), None),
        (json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}), Some("ping"), None),
        (json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}), Some("ping"), None),
        (json!({"jsonrpc": "2.0", "id": 1, "method": 5}), None, None),
        (json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}), Some("ping"), None),
        (json!({}), None, None),
        (json!(5), None, None),
        (json!({"jsonrpc": "2.0", "id": 1.0, "method": "ping"}), Some("ping"), None),
        (json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "ping"}), Some("ping"), None),
        (json!({"jsonrpc": "2.0", "id": -1, "method": "tools/list"}), Some("tools/list"), None),
        (request(json!(5), "server/discover", Some(json!({"x": 1, "_meta": meta("2026-07-28")}))), Some("server/discover"), None),
        (request(json!(4), "tools/call", Some(with_meta(json!({"name": "other", "arguments": {}}), json!({"io.modelcontextprotocol/protocolVersion": "2025-06-18"})))), Some("tools/call"), Some("other")),
        (request(json!(4), "tools/call", Some(with_meta(call(query.clone()), json!({"io.modelcontextprotocol/protocolVersion": "2025-06-18"})))), Some("tools/call"), Some("context_search")),
        (request(json!(4), "tools/call", Some(with_meta(call(query.clone()), meta("2099-01-01")))), Some("tools/call"), Some("context_search")),
        (request(json!(3), "tools/list", Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": 5}}))), Some("tools/list"), None),
        (request(json!(1), "initialize", Some(with_meta(initialize("2025-06-18"), meta("2026-07-28")))), Some("initialize"), None),
        (request(json!(1), "initialize", Some(with_meta(initialize("2026-07-28"), meta("2026-07-28")))), Some("initialize"), None),
        (json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": meta("2026-07-28")}}), Some("notifications/cancelled"), None),
        (request(json!(6), "prompts/get", Some(json!({"name": "p", "_meta": meta("2026-07-28")}))), Some("prompts/get"), None),
        (request(json!(6), "resources/read", Some(json!({"uri": "x:y", "_meta": meta("2026-07-28")}))), Some("resources/read"), None),
        (request(json!(6), "tasks/get", Some(json!({"taskId": "t", "_meta": meta("2026-07-28")}))), Some("tasks/get"), None),
        (request(json!(6), "resources/unsubscribe", Some(json!({"uri": "x:y"}))), Some("resources/unsubscribe"), Some("x:y")),
        (request(json!(6), "tasks/update", Some(json!({"taskId": "t", "inputResponses": {}}))), Some("tasks/update"), Some("t")),
        (request(json!(6), "tasks/cancel", Some(json!({"taskId": "t"}))), Some("tasks/cancel"), Some("t")),
        (request(json!(6), "resources/read", Some(json!({"uri": "x:y", "_meta": meta("2026-07-28")}))), Some("resources/read"), Some("x:y")),
        (request(json!(4), "tools/call", Some(json!({"name": 5, "arguments": {}}))), Some("tools/call"), None),
        (json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "context_search"}}), Some("tools/call"), Some("context_search")),
        (request(json!(5), "server/discover", Some(json!({"_meta": meta("2099-01-01")}))), Some("server/discover"), None),
        (request(json!(5), "server/discover", Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}))), Some("server/discover"), None),
        (request(json!(2), "ping", Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}))), Some("ping"), None),
        (request(json!(2), "ping", Some(json!({"_meta": meta("2025-06-18")}))), Some("ping"), None),
        (request(json!(2), "ping", Some(json!({"_meta": 5}))), Some("ping"), None),
        (request(json!(2), "ping", Some(json!({"_meta": null}))), Some("ping"), None),
        (json!({"params": {"arguments": {"query": "install"}, "name": "context_search"}, "method": "tools/call", "id": 3, "jsonrpc": "2.0"}), Some("tools/call"), Some("context_search")),
        (request(json!("é\""), "tools/call", Some(call(json!({"query": "install"})))), Some("tools/call"), Some("context_search")),
    ]);
    let mut bodies: Vec<(Vec<u8>, Option<&'static str>, Option<&'static str>)> = values
        .into_iter()
        .map(|(v, m, n)| (v.to_string().into_bytes(), m, n))
        .collect();
    for raw in [
        &b""[..],
        b"not json",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"context_search\",\"arguments\":{\"query\":\"a\\ud800b\"}}}",
        b"\xff\xfe",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n",
        b" {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"context_search\",\"name\":\"x\",\"arguments\":{}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"context_search\",\"arguments\":{\"query\":\"a\",\"query\":\"b\"}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1e2,\"method\":\"tools/call\",\"params\":{\"name\":\"context_search\",\"arguments\":{\"query\":\"a\"}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"tools/call\",\"params\":{\"name\":\"context_search\",\"arguments\":{\"query\":\"a\"}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":9007199254740992.0,\"method\":\"tools/call\",\"params\":{\"name\":\"context_search\",\"arguments\":{\"query\":\"a\"}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"context\\u005fsearch\",\"arguments\":{\"query\":\"a\"}}}",
    ] {
        bodies.push((raw.to_vec(), Some("ping"), None));
    }
    bodies
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect()
}

fn post(extra: &[(&str, &str)], body: &[u8]) -> Case {
    let mut pairs = vec![
        ("host", HOST),
        ("accept", BOTH),
        ("content-type", "application/json"),
    ];
    pairs.extend_from_slice(extra);
    Case {
        method: "POST",
        target: "/mcp",
        headers: headers(&pairs),
        body: body.to_vec(),
    }
}

/// [`post`] with one of its own headers (`host`, `accept`, `content-type`)
/// reading `value` instead.
fn replacing(name: &str, value: &str, body: &[u8]) -> Case {
    let mut case = post(&[], body);
    let at = case.headers.iter().position(|(n, _)| n == name).unwrap();
    case.headers[at].1 = value.as_bytes().to_vec();
    case
}

/// Every body under every revision header, with and without the standard
/// headers; then every header rule around a plain call and an initialize.
pub fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    for (body, method, name) in bodies() {
        cases.push(post(&[], &body));
        for version in [
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28",
            "2099-01-01",
        ] {
            cases.push(post(&[("mcp-protocol-version", version)], &body));
        }
        if let Some(method) = method {
            cases.push(post(
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", method),
                ],
                &body,
            ));
            cases.push(post(
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/list"),
                ],
                &body,
            ));
            cases.push(post(&[("mcp-method", method)], &body));
            if let Some(name) = name {
                cases.push(post(
                    &[
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", method),
                        ("mcp-name", name),
                    ],
                    &body,
                ));
                cases.push(post(
                    &[
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", method),
                        ("mcp-name", "someone_else"),
                    ],
                    &body,
                ));
            }
        }
        cases.push(post(&[("mcp-session-id", "abc")], &body));
    }
    let plain = request(
        json!(1),
        "tools/call",
        Some(call(json!({"query": "install"}))),
    )
    .to_string()
    .into_bytes();
    let negotiated = request(
        json!(1),
        "tools/call",
        Some(with_meta(
            call(json!({"query": "install"})),
            meta("2026-07-28"),
        )),
    )
    .to_string()
    .into_bytes();
    for body in [&plain, &negotiated] {
        for accept in [
            "application/json",
            "text/event-stream",
            "*/*",
            "application/json;q=0, text/event-stream",
            "application/json, text/event-stream;q=0",
            "application/json;q=0.5, text/event-stream; q=1",
            "application/json;q=bogus, text/event-stream",
            "APPLICATION/JSON, TEXT/EVENT-STREAM",
            "text/event-stream, application/json; charset=utf-8",
            "application/json; x=\"a,b\", text/event-stream",
            "",
            "application/json;q=0.000, text/event-stream",
            "application/json;q=0.0001, text/event-stream",
            "application/json;Q=0, text/event-stream",
            "application/json;q = 0, text/event-stream",
            "application/json;q=\"0\", text/event-stream",
            "application/json,text/event-stream",
            "text/event-stream, application/json",
            "text/event-stream;q=1.0, application/json;q=0.001",
        ] {
            cases.push(replacing("accept", accept, body));
        }
        let mut split = post(&[("accept", "text/event-stream")], body);
        split.headers[1].1 = b"application/json".to_vec();
        cases.push(split);
        let mut no_accept = post(&[], body);
        no_accept.headers.remove(1);
        cases.push(no_accept);
        for kind in [
            "application/json; charset=utf-8",
            "Application/JSON",
            "text/plain",
            "application/json-seq",
            "",
        ] {
            cases.push(replacing("content-type", kind, body));
        }
        let mut no_host = post(&[], body);
        no_host.headers.remove(0);
        cases.push(no_host);
        let mut two_kinds = post(&[], body);
        two_kinds
            .headers
            .push(("content-type".into(), b"text/plain".to_vec()));
        cases.push(two_kinds);
        cases.push(post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "context_search"),
            ],
            body,
        ));
        cases.push(post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?Y29udGV4dF9zZWFyY2g=?="),
            ],
            body,
        ));
        cases.push(post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?!!?="),
            ],
            body,
        ));
        cases.push(post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "context_search"),
                ("mcp-name", "context_search"),
            ],
            body,
        ));
        let mut no_kind = post(&[], body);
        no_kind.headers.remove(2);
        cases.push(no_kind);
        for host in [
            "localhost",
            "localhost:1",
            "LOCALHOST:8080",
            "[::1]:8080",
            "[::1]",
            "127.0.0.1",
            "example.com",
            "127.0.0.2:8080",
            "bad host",
            "",
            "[localhost]:8080",
            "user@localhost",
            "localhost:abc",
            "localhost:99999",
            "127.0.0.1.:8080",
            "[::1]x",
        ] {
            cases.push(replacing("host", host, body));
        }
        for origin in [
            "http://127.0.0.1:8080",
            "https://evil.example",
            "null",
            "bogus",
        ] {
            cases.push(post(&[("origin", origin)], body));
        }
        cases.push(post(
            &[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-protocol-version", "2025-03-26"),
            ],
            body,
        ));
        let mut odd_version = post(&[], body);
        odd_version
            .headers
            .push(("mcp-protocol-version".into(), b"2025-06-18\xff".to_vec()));
        cases.push(odd_version);
        for target in [
            "http://127.0.0.1:8080/mcp",
            "http://example.com/mcp",
            "http://[::1]:8080/mcp",
        ] {
            let mut absolute = post(&[], body);
            absolute.headers.remove(0);
            absolute.target = target;
            cases.push(absolute.clone());
            absolute
                .headers
                .insert(0, ("host".into(), b"localhost".to_vec()));
            cases.push(absolute);
        }
        let mut zero_then_both = post(&[("accept", BOTH)], body);
        zero_then_both.headers[1].1 = b"application/json;q=0".to_vec();
        cases.push(zero_then_both);
        for version in ["2026-07-29", "9", "abc", "1", ""] {
            cases.push(post(&[("mcp-protocol-version", version)], body));
        }
        for name in [
            "=?base64??=",
            "=?base64?Y29udGV4dF9zZWFyY2g?=",
            "=?base64?/w==?=",
            "=?base64?",
            // (Trailing whitespace cannot arrive: HTTP/1.1 trims it.)
            "Context_search",
        ] {
            cases.push(post(
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", name),
                ],
                body,
            ));
        }
        let mut odd_method = post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-name", "context_search"),
            ],
            body,
        );
        odd_method
            .headers
            .push(("mcp-method".into(), b"tools/call\xff".to_vec()));
        cases.push(odd_method);
    }
    let initialize = |version: &str| {
        request(
            json!(1),
            "initialize",
            Some(json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})),
        )
        .to_string()
        .into_bytes()
    };
    for version in ["2026-07-29", "9", "1", "abc"] {
        cases.push(post(
            &[("mcp-protocol-version", version)],
            &initialize(version),
        ));
    }
    let plain_initialize = initialize("2025-06-18");
    for method in [&b"initialize\xff"[..], b"Initialize", b"initialize"] {
        let mut case = post(&[("mcp-protocol-version", "2026-07-28")], &plain_initialize);
        case.headers.push(("mcp-method".into(), method.to_vec()));
        cases.push(case.clone());
        case.headers.push(("mcp-method".into(), method.to_vec()));
        cases.push(case);
    }
    for depth in 126..=129 {
        let nested = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"context_search","arguments":{{"query":"x","deep":{}{}}}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        cases.push(post(&[], nested.as_bytes()));
        cases.push(post(
            &[("mcp-protocol-version", "2025-06-18")],
            nested.as_bytes(),
        ));
    }
    for host in ["example.com", "bad host"] {
        let mut case = replacing("host", host, b"");
        case.method = "GET";
        cases.push(case);
    }
    for method in ["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD", "post"] {
        let mut case = post(&[], b"");
        case.method = method;
        cases.push(case);
        let mut case = post(&[("mcp-session-id", "abc")], b"");
        case.method = method;
        cases.push(case);
    }
    cases
}

/// What the harness compares, for a readable failure.
fn show(case: &Case) -> String {
    let headers: Vec<String> = case
        .headers
        .iter()
        .map(|(n, v)| format!("{n}: {}", String::from_utf8_lossy(v)))
        .collect();
    format!(
        "{} {:?} {}",
        case.method,
        headers,
        String::from_utf8_lossy(&case.body)
    )
}

async fn compare(server: &RemoteServer, token: Option<&str>, oracle: &Oracle) -> usize {
    let mut differences = Vec::new();
    let cases = corpus();
    for case in &cases {
        let mut expected = ask_oracle(oracle, case).await;
        if case.method == "HEAD" {
            // hyper sends no body in an answer to HEAD, whoever wrote one.
            expected.body.clear();
        }
        let got = ask_adapter(&server.origin, token, case).await;
        if got != expected {
            differences.push(format!(
                "{}\n  rmcp:    {expected:?}\n  adapter: {got:?}",
                show(case)
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} differ:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
    cases.len()
}

/// Without OAuth (rmcp's loopback `Host` list) and with it (any host, and
/// a valid token on every request, which rmcp never sees).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_answered_as_rmcp_answers_it() {
    let corpus = crate::cli::corpus();
    let open = RemoteServer::start(&["--fixture", &corpus, "--no-auth"], &[]).await;
    let compared = compare(&open, None, &oracle(false)).await;
    assert!(compared > 900, "{compared}");

    let signer = crate::jwt::Signer::es256("k");
    let (_keys, jwks) = crate::serve_remote::jwks_file(&[&signer]);
    let mut args = vec!["--fixture".to_owned(), corpus.clone()];
    args.extend(crate::remote::auth_args(&jwks));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let guarded = RemoteServer::start(&args, &[]).await;
    let token = signer.token(&crate::jwt::claims(&guarded.url));
    compare(&guarded, Some(&token), &oracle(true)).await;
}
