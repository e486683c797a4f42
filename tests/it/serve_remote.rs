//! The remote adapter (`ecp serve --listen`) as real child processes on
//! 127.0.0.1: the MCP Streamable HTTP flow through rmcp's client, the OAuth
//! resource server refusing bad tokens before the upstream sees anything,
//! client disconnects, replicas behind round-robin, limits and SIGTERM.

use std::{
    net::SocketAddr,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use ecp::check::{
    session::Session,
    upstream::{Reply, SeenRequest, Upstream},
};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{
    jwt::{ISSUER, Signer, claims, claims_with, jwks},
    mcp::{assert_canonical_tool, text_of},
    remote::{RemoteServer, auth_args},
};

const UPSTREAM_TOKEN: &str = "upstream-CANARY-71c2";

/// Answers each query with one item that repeats it; `slow`/`hang` queries
/// take 1.5 s / forever.
fn echo(request: &SeenRequest) -> Reply {
    let query = request.query();
    let body = json!({"items": [{"id": "1", "content": format!("answer: {query}")}]}).to_string();
    match query.as_str() {
        "slow" => Reply::After(Duration::from_millis(1500), Box::new(Reply::json(body))),
        "hang" => Reply::Hang,
        _ => Reply::json(body),
    }
}

/// A JWKS file with `signers` in a fresh folder.
pub fn jwks_file(signers: &[&Signer]) -> (TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(signers)).unwrap();
    (dir, path)
}

/// `ecp serve --http` against `upstream`, with OAuth from `jwks` and `extra`.
async fn remote(upstream: &Upstream, jwks: &Path, extra: &[&str]) -> RemoteServer {
    let mut args: Vec<String> = vec!["--http".into()];
    args.extend(auth_args(jwks));
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    RemoteServer::start(
        &args,
        &[
            ("PROVIDER_CONTEXT_BASE_URL", &upstream.base_url),
            ("PROVIDER_CONTEXT_TOKEN", UPSTREAM_TOKEN),
        ],
    )
    .await
}

/// An [`echo`] upstream and `ecp serve --http` in front of it, trusting one
/// ES256 key, with a valid token for it.
struct Adapter {
    upstream: Upstream,
    server: RemoteServer,
    token: String,
    _keys: TempDir,
}

async fn adapter(extra: &[&str]) -> Adapter {
    let upstream = Upstream::start(echo).await;
    let signer = Signer::es256("k");
    let (keys, jwks) = jwks_file(&[&signer]);
    let server = remote(&upstream, &jwks, extra).await;
    let token = signer.token(&claims(&server.url));
    Adapter {
        upstream,
        server,
        token,
        _keys: keys,
    }
}

fn http() -> reqwest::Client {
    ecp::runtime::install_tls_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// One stateless `tools/call` POST, as a Streamable HTTP client sends it.
fn tools_call(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    query: &str,
) -> reqwest::RequestBuilder {
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "context_search", "arguments": {"query": query}},
    });
    let request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// Sends a request and reads its JSON answer.
trait JsonReply {
    async fn json_reply(self) -> Value;
}

impl JsonReply for reqwest::RequestBuilder {
    async fn json_reply(self) -> Value {
        self.send().await.unwrap().json().await.unwrap()
    }
}

/// The `structuredContent` items' contents of a JSON-RPC `tools/call` reply.
fn contents(reply: &Value) -> Vec<String> {
    reply["result"]["structuredContent"]["untrusted_external_context"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a result: {reply}"))
        .iter()
        .map(|item| item["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streamable_http_flow_works_through_rmcp_with_rs256_and_es256_tokens() {
    let upstream = Upstream::start(echo).await;
    let (rsa, ec) = (Signer::rs256("rsa-1"), Signer::es256("ec-1"));
    let (_dir, jwks) = jwks_file(&[&rsa, &ec]);
    let server = remote(&upstream, &jwks, &[]).await;
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"));

    for signer in [&rsa, &ec] {
        let token = signer.token(&claims(&server.url));
        let session = Session::connect(&server.url, Some(token.clone()), Duration::from_secs(10))
            .await
            .expect("initialize over Streamable HTTP");
        let tools = session.client.list_all_tools().await.unwrap();
        assert_canonical_tool(&tools);
        let result = session
            .call(json!({"query": "  where <is> the   manual "}))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false));
        let structured = result.structured_content.clone().unwrap();
        assert_eq!(
            structured["untrusted_external_context"]["items"][0]["content"],
            "answer: where <is> the manual",
            "the query is normalized before the provider sees it"
        );
        let text: Value = serde_json::from_str(text_of(&result)).unwrap();
        assert_eq!(text, structured, "the text is the same JSON");
        assert!(text_of(&result).contains(r"\u003cis\u003e"), "escaped text");
        session.close().await;
        assert!(!server.stderr().contains(&token), "a token reached the log");
    }
    let seen = upstream.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {UPSTREAM_TOKEN}").as_str()),
        "the upstream gets the provider's credential, not the client's token"
    );
    server.settle().await;
    let log = server.stderr();
    assert!(
        !log.contains("where") && !log.contains(UPSTREAM_TOKEN),
        "{log}"
    );
    assert!(
        server.events("request").iter().all(|e| e["route"] == "mcp"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_refused_with_the_right_challenge_before_the_upstream_sees_anything() {
    let upstream = Upstream::start(echo).await;
    let good = Signer::es256("k1");
    let impostor = Signer::es256("k1"); // same kid, different key
    let (_dir, jwks) = jwks_file(&[&good]);
    let server = remote(&upstream, &jwks, &[]).await;
    let url = server.url.as_str();
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", server.origin);
    let now = claims(url)["iat"].as_u64().unwrap();
    let none = format!(
        "{}.{}.",
        base64_url(r#"{"alg":"none"}"#),
        base64_url(&claims(url).to_string())
    );
    let cases: Vec<(&str, Option<String>, u16, String)> = vec![
        (
            "missing",
            None,
            401,
            format!(r#"Bearer resource_metadata="{metadata_url}", scope="context.read""#),
        ),
        (
            "expired",
            Some(good.token(&claims_with(url, json!({"exp": now - 600})))),
            401,
            r#"error="invalid_token", error_description="the token has expired""#.into(),
        ),
        (
            "wrong audience",
            Some(good.token(&claims_with(
                url,
                json!({"aud": "https://other.example/mcp"}),
            ))),
            401,
            r#"error="invalid_token", error_description="the token is for another audience""#
                .into(),
        ),
        (
            "wrong issuer",
            Some(good.token(&claims_with(url, json!({"iss": "https://evil.example"})))),
            401,
            r#"error="invalid_token", error_description="the token is from another issuer""#.into(),
        ),
        (
            "wrong scope",
            Some(good.token(&claims_with(url, json!({"scope": "openid context.write"})))),
            403,
            format!(
                r#"Bearer resource_metadata="{metadata_url}", error="insufficient_scope", scope="context.read""#
            ),
        ),
        (
            "forged signature",
            Some(impostor.token(&claims(url))),
            401,
            r#"error_description="the token's signature does not verify""#.into(),
        ),
        (
            "alg none",
            Some(none),
            401,
            r#"error_description="the token's signature algorithm is not accepted""#.into(),
        ),
        (
            "not a JWT",
            Some("opaque-token-value".into()),
            401,
            r#"error_description="the token is not a signed JWT""#.into(),
        ),
    ];
    let client = http();
    for (name, token, status, challenge) in &cases {
        let response = tools_call(&client, url, token.as_deref(), "secret question")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), *status, "{name}");
        let header = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            header.starts_with(&format!(r#"Bearer resource_metadata="{metadata_url}""#))
                && header.contains(challenge.as_str()),
            "{name}: {header}"
        );
        let body: Value = response.json().await.unwrap();
        assert!(body["error"].is_string(), "{name}: {body}");
    }
    assert!(
        upstream.requests().is_empty(),
        "a refused request reached the upstream"
    );

    // The metadata the challenge points at (and its root-path twin).
    for address in [
        metadata_url.clone(),
        format!("{}/.well-known/oauth-protected-resource", server.origin),
    ] {
        let metadata: Value = client.get(&address).json_reply().await;
        assert_eq!(metadata["resource"], url);
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
        assert_eq!(metadata["scopes_supported"], json!(["context.read"]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }

    // The same request with a good token goes through.
    let reply: Value = tools_call(
        &client,
        url,
        Some(&good.token(&claims(url))),
        "secret question",
    )
    .json_reply()
    .await;
    assert_eq!(contents(&reply), ["answer: secret question"]);
    assert_eq!(upstream.requests().len(), 1);

    server.settle().await;
    let log = server.stderr();
    for (_, token, _, _) in &cases {
        if let Some(token) = token {
            assert!(
                !log.contains(token.as_str()),
                "a token reached the log: {log}"
            );
        }
    }
    assert!(
        !log.contains("secret question"),
        "a query reached the log: {log}"
    );
    let refusals: Vec<String> = server
        .events("request")
        .iter()
        .filter(|e| e["status"] != 200)
        .map(|e| e["reason"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(
        refusals.contains(&"the token has expired".to_owned()),
        "{refusals:?}"
    );
}

fn base64_url(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_disconnect_closes_the_upstream_request() {
    // A budget far longer than the test: only the disconnect can end it.
    let Adapter {
        upstream,
        server,
        token,
        ..
    } = adapter(&["--budget-ms", "60000"]).await;
    let started = Instant::now();
    let outcome = tools_call(&http(), &server.url, Some(&token), "hang")
        .timeout(Duration::from_millis(700))
        .send()
        .await;
    assert!(outcome.unwrap_err().is_timeout());
    assert!(
        upstream
            .wait_for_close_of("hang", Duration::from_secs(5))
            .await,
        "the upstream request stayed open after the client left"
    );
    assert!(started.elapsed() < Duration::from_secs(6));
    wait_for_event(&server, "context_search_cancelled").await;
}

async fn wait_for_event(server: &RemoteServer, event: &str) -> Value {
    for _ in 0..100 {
        if let Some(found) = server.events(event).pop() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no {event} event:\n{}", server.stderr());
}

/// A TCP proxy on 127.0.0.1 that sends each new connection to the next
/// backend in turn: a load balancer with no session affinity.
async fn round_robin(listener: tokio::net::TcpListener, backends: Vec<String>) {
    let mut next = 0usize;
    while let Ok((mut inbound, _)) = listener.accept().await {
        let backend = backends[next % backends.len()].clone();
        next += 1;
        tokio::spawn(async move {
            let address = backend.trim_start_matches("http://");
            if let Ok(mut outbound) = tokio::net::TcpStream::connect(address).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_behind_round_robin_answer_200_concurrent_calls() {
    let upstream = Upstream::start(echo).await;
    let signer = Signer::rs256("rsa-1");
    let (_dir, jwks) = jwks_file(&[&signer]);
    let balancer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address: SocketAddr = balancer.local_addr().unwrap();
    let resource = format!("http://{address}/mcp");
    let replicas = [
        remote(&upstream, &jwks, &["--resource-url", &resource]).await,
        remote(&upstream, &jwks, &["--resource-url", &resource]).await,
    ];
    tokio::spawn(round_robin(
        balancer,
        replicas.iter().map(|r| r.origin.clone()).collect(),
    ));
    let token = signer.token(&claims(&resource));
    // One session: initialized through one replica, called through both.
    let session = Arc::new(
        Session::connect(&resource, Some(token), Duration::from_secs(30))
            .await
            .unwrap(),
    );
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200 {
        let session = session.clone();
        calls.spawn(async move {
            let query = format!("question {i}");
            let result = session.call(json!({ "query": query })).await.unwrap();
            assert_eq!(result.is_error, Some(false), "{i}: {result:?}");
            let items = &result.structured_content.unwrap()["untrusted_external_context"]["items"];
            assert_eq!(items[0]["content"], format!("answer: {query}"));
        });
    }
    let mut answered = 0;
    while let Some(call) = calls.join_next().await {
        call.unwrap();
        answered += 1;
    }
    assert_eq!(answered, 200);
    // A replica logs a request after its answer is on the wire, and the
    // log reaches this process through a pipe: wait for the last lines.
    let count = || -> Vec<usize> {
        replicas
            .iter()
            .map(|r| {
                r.events("request")
                    .iter()
                    .filter(|e| e["status"] == 200)
                    .count()
            })
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while count().iter().sum::<usize>() < 201 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let served = count();
    assert!(
        served.iter().all(|&n| n >= 20) && served.iter().sum::<usize>() >= 201,
        "both replicas serve calls: {served:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_call_in_flight_finish_then_exits() {
    let Adapter {
        upstream,
        mut server,
        token,
        ..
    } = adapter(&[]).await;
    let in_flight = tokio::spawn(tools_call(&http(), &server.url, Some(&token), "slow").send());
    upstream
        .wait_for(Duration::from_secs(5), "the slow call", |seen, _| {
            !seen.is_empty()
        })
        .await;
    server.terminate();
    wait_for_event(&server, "draining").await;
    let address = server.origin.trim_start_matches("http://").to_owned();
    assert!(
        tokio::net::TcpStream::connect(&address).await.is_err(),
        "still accepting connections while draining"
    );
    let response = in_flight.await.unwrap().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(contents(&response.json().await.unwrap()), ["answer: slow"]);
    let status = server
        .wait(Duration::from_secs(10))
        .await
        .expect("exits after draining");
    assert!(status.success(), "{status:?}: {}", server.stderr());
    wait_for_event(&server, "stopped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_concurrency_and_body_limits_answer_503_and_413() {
    let Adapter {
        upstream,
        server,
        token,
        ..
    } = adapter(&["--max-concurrent", "1", "--max-body-bytes", "2048"]).await;
    let client = http();
    let first = tokio::spawn(tools_call(&client, &server.url, Some(&token), "slow").send());
    upstream
        .wait_for(Duration::from_secs(5), "the slow call", |seen, _| {
            !seen.is_empty()
        })
        .await;
    let busy = tools_call(&client, &server.url, Some(&token), "second")
        .send()
        .await
        .unwrap();
    assert_eq!(busy.status().as_u16(), 503);
    assert_eq!(busy.headers()["retry-after"], "1");
    let body: Value = busy.json().await.unwrap();
    assert_eq!(body["error"], "busy");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("1 requests are in flight")
    );
    assert_eq!(first.await.unwrap().unwrap().status().as_u16(), 200);

    let large = tools_call(&client, &server.url, Some(&token), &"x".repeat(3000))
        .send()
        .await
        .unwrap();
    assert_eq!(large.status().as_u16(), 413);
    assert_eq!(upstream.requests().len(), 1, "neither reached the upstream");

    let health = client
        .get(format!("{}/healthz", server.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(
        health.json::<Value>().await.unwrap(),
        json!({"status": "ok"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_come_from_a_jwks_url_rotate_and_an_unreachable_one_stops_the_start() {
    let signer = Signer::rs256("rsa-1");
    let document = Arc::new(std::sync::Mutex::new(jwks(&[&signer])));
    let keys = {
        let document = document.clone();
        Upstream::start(move |_| Reply::json(document.lock().unwrap().clone())).await
    };
    let jwks_url = format!("{}/jwks.json", keys.base_url.trim_end_matches('/'));
    let corpus = crate::cli::corpus();
    let corpus = corpus.as_str();
    let server = RemoteServer::start(
        &[
            "--fixture",
            corpus,
            "--authorization-server",
            ISSUER,
            "--jwks",
            &jwks_url,
        ],
        &[],
    )
    .await;
    let reply: Value = tools_call(
        &http(),
        &server.url,
        Some(&signer.token(&claims(&server.url))),
        "install",
    )
    .json_reply()
    .await;
    assert!(reply["result"]["structuredContent"].is_object(), "{reply}");
    assert_eq!(keys.requests().len(), 1, "fetched once at start");
    let started = Instant::now();

    // Rotation: a token from a new key is refused until the key set is
    // fetched again, which an unknown kid causes at most every 30 s.
    let rotated = Signer::es256("ec-2");
    let token = rotated.token(&claims(&server.url));
    let status = |token: String| {
        let url = server.url.clone();
        async move {
            tools_call(&http(), &url, Some(&token), "install")
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(status(token.clone()).await, 401);
    *document.lock().unwrap() = jwks(&[&signer, &rotated]);
    assert_eq!(
        status(token.clone()).await,
        401,
        "not refetched within 30 s"
    );
    assert_eq!(keys.requests().len(), 1);
    tokio::time::sleep(Duration::from_secs(31).saturating_sub(started.elapsed())).await;
    assert_eq!(
        status(token.clone()).await,
        200,
        "refetched for the new kid"
    );
    assert_eq!(keys.requests().len(), 2);
    let stranger = Signer::es256("unknown").token(&claims(&server.url));
    assert_eq!(status(stranger).await, 401);
    assert_eq!(
        keys.requests().len(),
        2,
        "unknown kids do not refetch at will"
    );

    assert_refused(
        &[
            "--fixture",
            corpus,
            "--listen",
            "127.0.0.1:0",
            "--authorization-server",
            ISSUER,
            "--jwks",
            "http://127.0.0.1:9/jwks.json",
        ],
        2,
        "cannot fetch the key set http://127.0.0.1:9/jwks.json",
    );
}

/// `ecp serve ARGS` exits at once with `code` (2: settings refused before
/// anything starts; 1: a failure while starting), saying `message`.
fn assert_refused(args: &[&str], code: i32, message: &str) {
    let output = crate::cli::ecp(&[&["serve"], args].concat());
    assert_eq!(output.status.code(), Some(code));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(message), "{stderr}");
}

#[test]
fn unsafe_remote_settings_are_refused_before_listening() {
    assert_refused(
        &[
            "--fixture",
            "x.json",
            "--listen",
            "0.0.0.0:0",
            "--no-auth",
            "--resource-url",
            "https://ctx.example/mcp",
        ],
        2,
        "--no-auth serves without OAuth and is only allowed on a loopback address",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_host_is_served_with_oauth_and_only_loopback_names_without() {
    let guarded = adapter(&[]).await;
    let (guarded, token) = (&guarded.server, &guarded.token);
    // nginx's default: the upstream group's name as Host.
    let proxied = tools_call(&http(), &guarded.url, Some(token), "behind a proxy")
        .header("host", "adapters")
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status().as_u16(), 200);

    let corpus = crate::cli::corpus();
    let open = RemoteServer::start(&["--fixture", &corpus, "--no-auth"], &[]).await;
    let local = tools_call(&http(), &open.url, None, "install")
        .send()
        .await
        .unwrap();
    assert_eq!(local.status().as_u16(), 200);
    let rebound = tools_call(&http(), &open.url, None, "install")
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        rebound.status().as_u16(),
        403,
        "DNS rebinding guard without OAuth"
    );
}

/// Sends raw bytes on a new connection and returns what came back within
/// `limit` (the status line first).
async fn raw(origin: &str, request: &[u8], limit: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = origin.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(limit, stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// Hostile HTTP: clients that send headers and then no body hold no
/// concurrency slot (a real call still gets through), a declared body over
/// the cap is refused before it is sent, a chunk-size overflow is a 400, and
/// a request with two `Host` headers is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_oversized_declarations_bad_framing_and_two_hosts_are_refused() {
    use tokio::io::AsyncWriteExt;
    let Adapter {
        server,
        token,
        upstream,
        ..
    } = adapter(&["--max-concurrent", "2", "--max-body-bytes", "4096"]).await;
    let address = server.origin.trim_start_matches("http://").to_owned();
    let head = |length: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {length}\r\n\r\n"
        )
    };
    // Ten connections that promise a body and never send it.
    let mut stalled = Vec::new();
    for _ in 0..10 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(head("100").as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let client = http();
    let reply = tools_call(&client, &server.url, Some(&token), "still served")
        .json_reply()
        .await;
    assert_eq!(contents(&reply), ["answer: still served"], "{reply}");

    // Declared over the cap: 413 at once, without sending the body.
    let answer = raw(
        &server.origin,
        head("999999999").as_bytes(),
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // A chunk size that overflows.
    let chunked = head("0").replace("content-length: 0", "transfer-encoding: chunked")
        + "ffffffffffffffffffffffff\r\nx\r\n0\r\n\r\n";
    let answer = raw(&server.origin, chunked.as_bytes(), Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");

    // Two Host headers.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let two_hosts = head(&body.len().to_string()).replace(
        &format!("host: {address}\r\n"),
        &format!("host: {address}\r\nhost: evil.example\r\n"),
    ) + body;
    let answer = raw(&server.origin, two_hosts.as_bytes(), Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert_eq!(
        upstream.requests().len(),
        1,
        "only the real call reached the upstream"
    );
    drop(stalled);
}

/// A plain `tools/call` with `token`, as raw HTTP/1.1 on a kept-alive
/// connection; its body split where the caller may hold the rest back.
fn raw_call(address: &str, token: &str, query: &str) -> (String, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "context_search", "arguments": {"query": query}},
    })
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    (head, body)
}

/// Writes `request` on `stream` and reads one answer (its head and a
/// `content-length` body), within 10 s; what arrived (empty when the
/// server had closed the connection).
async fn answer_on(stream: &mut tokio::net::TcpStream, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        if stream.write_all(request).await.is_err() {
            return;
        }
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|n| n.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if answer.len() >= end + 4 + length {
                    return;
                }
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// Sends `head` (which asks `expect: 100-continue`) and, once the server
/// has read it and is reading the body, `part` of the body: a request in
/// flight.
async fn hold(stream: &mut tokio::net::TcpStream, head: &str, part: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = head.replacen("\r\n", "\r\nexpect: 100-continue\r\n", 1);
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 64];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !answer.ends_with(b"\r\n\r\n") {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before 100 Continue");
            answer.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("100 Continue");
    assert!(answer.starts_with(b"HTTP/1.1 100 Continue"), "{answer:?}");
    stream.write_all(part.as_bytes()).await.unwrap();
}

/// A connection to `address` from the loopback address `source` (all of
/// 127.0.0.0/8 is this machine): another peer for the server.
async fn connect_from(source: &str, address: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(address.parse().unwrap()).await.unwrap()
}

/// Waits until the server has closed each of `streams` (end of stream or a
/// reset), at most until `deadline`; how many it had closed.
async fn closed_by(streams: &mut [tokio::net::TcpStream], deadline: tokio::time::Instant) -> usize {
    use tokio::io::AsyncReadExt;
    let mut closed = 0;
    for stream in streams {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout_at(deadline, stream.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    closed
}

/// One client holding many silent connections (1100 from 127.0.0.1, past
/// the 1024 the server keeps and the 16 of the `/healthz` reserve, which
/// used to take them all: probes and calls got 503) cannot fail a health
/// probe or a call, with the default limits: the peer keeps at most 64
/// idle connections that carried no authorized request, each new one
/// closing its oldest; a kept-alive connection that carried a call stays
/// open and is served between its calls, and a call in flight across the
/// flood is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_cannot_fail_health_probes_or_calls() {
    let Adapter {
        server,
        token,
        upstream: _upstream,
        ..
    } = adapter(&[]).await;
    let address = server.origin.trim_start_matches("http://").to_owned();
    let health = format!("GET /healthz HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n");
    let (head, body) = raw_call(&address, &token, "kept alive");
    let call = format!("{head}{body}");
    let mut kept = tokio::net::TcpStream::connect(&address).await.unwrap();
    let answer = answer_on(&mut kept, call.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // A call in flight across the flood: its head and half its body sent.
    let (head, body) = raw_call(&address, &token, "in flight");
    let (first, rest) = body.split_at(body.len() / 2);
    let mut in_flight = tokio::net::TcpStream::connect(&address).await.unwrap();
    hold(&mut in_flight, &head, first).await;

    let mut flood = Vec::new();
    for n in 1..=1100 {
        flood.push(tokio::net::TcpStream::connect(&address).await.unwrap());
        if n % 275 == 0 {
            let answer = raw(&server.origin, health.as_bytes(), Duration::from_secs(10)).await;
            assert!(
                answer.starts_with("HTTP/1.1 200"),
                "a probe after {n} silent connections: {answer}"
            );
            assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");
            let answer = answer_on(&mut kept, call.as_bytes()).await;
            assert!(
                answer.starts_with("HTTP/1.1 200") && answer.contains("answer: kept alive"),
                "the kept-alive connection after {n}: {answer}"
            );
        }
    }
    let client = http();
    let reply = tools_call(&client, &server.url, Some(&token), "fresh connection")
        .json_reply()
        .await;
    assert_eq!(contents(&reply), ["answer: fresh connection"], "{reply}");
    let answer = answer_on(&mut in_flight, rest.as_bytes()).await;
    assert!(answer.contains("answer: in flight"), "{answer}");

    // The newest silent connection is still open (it is served)...
    let last = flood.last_mut().unwrap();
    let probe = format!("GET /healthz HTTP/1.1\r\nhost: {address}\r\n\r\n");
    let answer = answer_on(last, probe.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "the newest: {answer}");
    // ...and all but the newest 64 were closed, the oldest first.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let closed = closed_by(&mut flood[..1100 - 64], deadline).await;
    assert_eq!(closed, 1100 - 64, "closed of the oldest 1036");
    server.settle().await;
    let closing = server.events("connections_closed");
    assert!(
        closing
            .first()
            .is_some_and(|e| e["level"] == "warn" && e["over_peer_cap"].as_u64() > Some(0)),
        "{closing:?}"
    );
    assert!(closing.len() <= 2, "logged at most every 10 s: {closing:?}");
}

/// The same with small limits (`ECP_MAX_CONNECTIONS=8`,
/// `ECP_MAX_IDLE_PER_PEER=4`) and several peers (127.0.0.2, .3, ...): the
/// cap per peer, a full table making room by closing the heaviest peer's
/// oldest idle connection, a kept-alive connection that carried a call and
/// a call in flight never closed, and, when every place has a request in
/// flight, the `/healthz` reserve, which silent connections cannot hold
/// either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_connection_limits_close_idle_connections_heaviest_peer_first() {
    let upstream = Upstream::start(echo).await;
    let signer = Signer::es256("k");
    let (_keys, jwks) = jwks_file(&[&signer]);
    let mut args: Vec<String> = vec!["--http".into()];
    args.extend(auth_args(&jwks));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = RemoteServer::start(
        &args,
        &[
            ("PROVIDER_CONTEXT_BASE_URL", &upstream.base_url),
            ("PROVIDER_CONTEXT_TOKEN", UPSTREAM_TOKEN),
            ("ECP_MAX_CONNECTIONS", "8"),
            ("ECP_MAX_IDLE_PER_PEER", "4"),
        ],
    )
    .await;
    let token = signer.token(&claims(&server.url));
    let address = server.origin.trim_start_matches("http://").to_owned();
    let health = format!("GET /healthz HTTP/1.1\r\nhost: {address}\r\n\r\n");
    let (head, body) = raw_call(&address, &token, "kept alive");
    let call = format!("{head}{body}");

    // A kept-alive connection that carried a call, and a call in flight
    // (its head and half its body sent).
    let mut kept = tokio::net::TcpStream::connect(&address).await.unwrap();
    assert!(
        answer_on(&mut kept, call.as_bytes())
            .await
            .starts_with("HTTP/1.1 200")
    );
    let (head, body) = raw_call(&address, &token, "in flight");
    let (first, rest) = body.split_at(body.len() / 2);
    let mut in_flight = tokio::net::TcpStream::connect(&address).await.unwrap();
    hold(&mut in_flight, &head, first).await;

    // 127.0.0.2 keeps 4 of its 12 silent connections, the newest.
    let mut two = Vec::new();
    for _ in 0..12 {
        two.push(connect_from("127.0.0.2", &address).await);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    assert_eq!(
        closed_by(&mut two[..8], deadline).await,
        8,
        "over the peer's cap"
    );
    // 127.0.0.3 the same: 2 + 4 + 4 = 10 > 8, so the two peers share the
    // six places left, the heaviest giving up its oldest each time.
    let mut three = Vec::new();
    for _ in 0..12 {
        three.push(connect_from("127.0.0.3", &address).await);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    assert_eq!(
        closed_by(&mut two[8..10], deadline).await,
        2,
        "127.0.0.2's oldest made room"
    );
    assert_eq!(closed_by(&mut three[..8], deadline).await, 8);
    // A probe and a call from other peers take places the same way.
    let mut probe = connect_from("127.0.0.4", &address).await;
    let answer = answer_on(&mut probe, health.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut other = connect_from("127.0.0.5", &address).await;
    let answer = answer_on(&mut other, call.as_bytes()).await;
    assert!(answer.contains("answer: kept alive"), "{answer}");
    // Neither the kept-alive connection nor the call in flight was closed.
    let answer = answer_on(&mut kept, call.as_bytes()).await;
    assert!(answer.contains("answer: kept alive"), "{answer}");
    let answer = answer_on(&mut in_flight, rest.as_bytes()).await;
    assert!(answer.contains("answer: in flight"), "{answer}");

    // Eight calls in flight from 127.0.0.6 take every place (closing the
    // idle connections, the kept-alive ones last)...
    let (head, body) = raw_call(&address, &token, "held");
    let (first, rest) = body.split_at(body.len() / 2);
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut stream = connect_from("127.0.0.6", &address).await;
        hold(&mut stream, &head, first).await;
        held.push(stream);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    assert_eq!(
        closed_by(std::slice::from_mut(&mut kept), deadline).await,
        1
    );
    // ...then a connection gets the reserve, where only `/healthz` is
    // served; 20 silent connections from five peers fill the reserve and
    // do not keep a probe out.
    let mut reserved = connect_from("127.0.0.7", &address).await;
    let answer = answer_on(&mut reserved, call.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("8 connections are open"), "{answer}");
    let mut silent = Vec::new();
    for peer in 10..15 {
        for _ in 0..4 {
            silent.push(connect_from(&format!("127.0.0.{peer}"), &address).await);
        }
    }
    let mut probe = connect_from("127.0.0.9", &address).await;
    let answer = answer_on(&mut probe, health.as_bytes()).await;
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "a probe past the reserve: {answer}"
    );
    for stream in &mut held {
        let answer = answer_on(stream, rest.as_bytes()).await;
        assert!(answer.contains("answer: held"), "{answer}");
    }
    drop(silent);
}

/// `ecp serve --listen` with a JWKS URL: how long it takes to say it cannot
/// start, and what it says.
async fn start_fails_with_jwks(jwks_url: &str) -> (Duration, Option<i32>, String) {
    let started = Instant::now();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_ecp"));
    command
        .args([
            "serve",
            "--fixture",
            "example",
            "--listen",
            "127.0.0.1:0",
            "--authorization-server",
            ISSUER,
            "--jwks",
            jwks_url,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the server gave up in time")
        .unwrap();
    (
        started.elapsed(),
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Qwen gives an HTTP server 5 s to answer discovery: a replica whose key
/// set cannot be had must say so and exit well inside that, never hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_set_that_cannot_be_had_stops_the_start_inside_the_discovery_timeout() {
    // A host that never completes a connection: a listener whose one-slot
    // queue is full, so the kernel leaves further SYNs unanswered.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let full = socket.listen(0).unwrap();
    let address = full.local_addr().unwrap();
    let _queued = std::net::TcpStream::connect(address).unwrap();
    let (took, code, said) = start_fails_with_jwks(&format!("http://{address}/jwks")).await;
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("cannot fetch the key set"), "{said}");
    assert!(took < Duration::from_millis(2500), "{took:?}: {said}");

    // A host that accepts and never answers: the 3 s limit of the first fetch.
    let hanging = Upstream::start(|_| Reply::Hang).await;
    let (took, code, said) = start_fails_with_jwks(&format!("{}/jwks", hanging.base_url)).await;
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("no answer within 3 s"), "{said}");
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_millis(4500),
        "{took:?}: {said}"
    );

    // A key set that answers: the first initialize over HTTP is answered
    // well inside the 5 s.
    let signer = Signer::es256("start");
    let document = jwks(&[&signer]);
    let keys = Upstream::start(move |_| Reply::json(document.clone())).await;
    let jwks_url = format!("{}/jwks", keys.base_url);
    let started = Instant::now();
    let server = RemoteServer::start(
        &[
            "--fixture",
            "example",
            "--authorization-server",
            ISSUER,
            "--jwks",
            &jwks_url,
        ],
        &[],
    )
    .await;
    let token = signer.token(&claims(&server.url));
    let session = Session::connect(&server.url, Some(token), Duration::from_secs(5))
        .await
        .unwrap();
    let took = started.elapsed();
    session.close().await;
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// The 2026-07-28 revision over Streamable HTTP, through rmcp's client:
/// `server/discover` and self-contained requests to the stateless adapter,
/// behind the same OAuth checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2026_07_28_revision_is_served_over_http_too() {
    use rmcp::{
        model::CallToolRequestParams,
        transport::{
            StreamableHttpClientTransport,
            streamable_http_client::StreamableHttpClientTransportConfig,
        },
    };
    let Adapter {
        server,
        token,
        upstream: _upstream,
        ..
    } = adapter(&[]).await;
    ecp::runtime::install_tls_provider();
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(token);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let client = crate::mcp::discover_2026(transport).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_canonical_tool(&tools);
    let mut params = CallToolRequestParams::new("context_search");
    params.arguments = json!({"query": "deployment policy"}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    server.settle().await;
    assert_eq!(
        result.is_error,
        Some(false),
        "{result:?}\n{}",
        server.stderr()
    );
    assert!(text_of(&result).contains("deployment policy"));
    client.cancel().await.unwrap();
}

/// Sends `body` to `url` with `accept` and `version`, returning the status,
/// the content type and the body bytes.
async fn exchange(
    url: &str,
    token: Option<&str>,
    accept: &str,
    version: Option<&str>,
    body: &Value,
) -> (u16, String, Vec<u8>) {
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(body.to_string());
    if let Some(version) = version {
        request = request.header("mcp-protocol-version", version);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, kind, response.bytes().await.unwrap().to_vec())
}

/// The direct path (a plain stateless `tools/call` or `tools/list`, with
/// or without the progress token rmcp's client sends) answers every
/// request byte for byte as the general path does (which `http_protocol`
/// holds to rmcp's Streamable HTTP service): the same request is sent once
/// plainly and once with an `Accept` parameter, which only the general path
/// takes, across revisions, ids, queries that pass and fail, and with OAuth
/// on and off, through an HTTP provider; the access log shows which path
/// answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_path_answers_byte_for_byte_as_the_general_path_does() {
    let guarded = adapter(&[]).await;
    let corpus = crate::cli::corpus();
    let open = RemoteServer::start(&["--fixture", &corpus, "--no-auth"], &[]).await;
    let servers = [
        (&guarded.server, Some(guarded.token.as_str())),
        (&open, None),
    ];
    let long = "q".repeat(2001);
    let arguments = [
        json!({"query": "  where <is> the   manual \u{2028}\"é\" 😀 "}),
        json!({"query": "install"}),
        json!({"query": ""}),
        json!({"query": long}),
        json!({"query": 5}),
        json!({"query": "x", "corpus": "all"}),
        json!({}),
    ];
    let ids = [json!(7), json!("req-\u{1F600}"), json!(i64::MAX), json!(-3)];
    let versions = [
        None,
        Some("2024-11-05"),
        Some("2025-03-26"),
        Some("2025-06-18"),
        Some("2025-11-25"),
    ];
    // Every call plainly and with the progress token rmcp's client sends
    // in `_meta`; then `tools/list` with no params, empty ones and a token.
    let mut bodies = Vec::new();
    for (n, arguments) in arguments.iter().enumerate() {
        let id = &ids[n % ids.len()];
        let mut params = json!({"name": "context_search", "arguments": arguments});
        bodies.push((
            n,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        ));
        params["_meta"] = json!({"progressToken": n});
        bodies.push((
            n + 1,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        ));
    }
    for (n, id) in ids.iter().enumerate() {
        let mut body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        bodies.push((n, body.clone()));
        body["params"] = json!({});
        bodies.push((n + 1, body.clone()));
        body["params"] = json!({"_meta": {"progressToken": format!("p{n}")}});
        bodies.push((n + 2, body));
    }
    let mut plain_sent = [0usize; 2];
    for (at, (server, token)) in servers.iter().enumerate() {
        for (n, body) in &bodies {
            let version = versions[n % versions.len()];
            let direct = exchange(
                &server.url,
                *token,
                "application/json, text/event-stream",
                version,
                body,
            )
            .await;
            plain_sent[at] += 1;
            let general = exchange(
                &server.url,
                *token,
                "application/json;q=1, text/event-stream",
                version,
                body,
            )
            .await;
            assert_eq!(direct.0, 200, "{}", String::from_utf8_lossy(&direct.2));
            assert_eq!(
                (direct.0, &direct.1, String::from_utf8_lossy(&direct.2)),
                (general.0, &general.1, String::from_utf8_lossy(&general.2)),
                "{body} with {version:?}"
            );
        }
    }
    for (at, (server, _)) in servers.iter().enumerate() {
        server.settle().await;
        let requests = server.events("request");
        let direct = requests.iter().filter(|e| e["direct"] == true).count();
        assert_eq!(direct, plain_sent[at], "{}", server.stderr());
        assert_eq!(requests.len(), 2 * plain_sent[at], "{}", server.stderr());
    }
}

/// The request lines are written in batches (runtime 0.4.1): every one
/// still arrives, in order with the others, and none is lost when the
/// server stops right after its last answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_request_lines_all_arrive_and_none_is_lost_at_shutdown() {
    let Adapter {
        mut server, token, ..
    } = adapter(&[]).await;
    let client = http();
    for query in 0..40 {
        let response = tools_call(&client, &server.url, Some(&token), &format!("q{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
    }
    // At most the batch delay after the last answer, the lines are out.
    server.settle().await;
    assert_eq!(server.events("request").len(), 40, "{}", server.stderr());
    // Then a few more, and a stop at once: the shutdown writes the batch.
    for query in 0..5 {
        tools_call(&client, &server.url, Some(&token), &format!("last{query}"))
            .send()
            .await
            .unwrap();
    }
    server.terminate();
    let status = server.wait(Duration::from_secs(10)).await.expect("exits");
    assert!(status.success(), "{status:?}");
    server.settle().await;
    let events: Vec<String> = server
        .stderr()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|line| line["event"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(events.iter().filter(|e| *e == "request").count(), 45);
    // Order: the requests before the drain, then "draining", then "stopped".
    let draining = events.iter().position(|e| e == "draining").unwrap();
    let last_request = events.iter().rposition(|e| e == "request").unwrap();
    assert!(last_request < draining, "{events:?}");
    assert_eq!(events.last().map(String::as_str), Some("stopped"));
}

/// On one core (`taskset -c 0`, as a container's CPU limit reads) the
/// adapter serves on one thread, tokio's current-thread runtime (no
/// worker threads, where the same server on more cores has them): a call
/// whose upstream never answers leaves the others answered while it waits
/// out the budget, and twenty at a time all succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_core_a_slow_call_does_not_hold_the_others() {
    let upstream = Upstream::start(echo).await;
    let signer = Signer::es256("k");
    let (_keys, jwks) = jwks_file(&[&signer]);
    let mut args: Vec<String> = vec!["-c".into(), "0".into(), env!("CARGO_BIN_EXE_ecp").into()];
    args.extend(["serve".into(), "--http".into()]);
    args.extend(auth_args(&jwks));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = RemoteServer::start_program(
        Path::new("taskset"),
        &args,
        &[
            ("PROVIDER_CONTEXT_BASE_URL", upstream.base_url.as_str()),
            ("PROVIDER_CONTEXT_TOKEN", UPSTREAM_TOKEN),
        ],
    )
    .await;
    // Tokio names its workers (and its blocking threads, of which the
    // adapter starts none) `tokio-rt-worker`.
    let workers = |names: &[String]| names.iter().filter(|n| *n == "tokio-rt-worker").count();
    let names = server.thread_names();
    assert_eq!(workers(&names), 0, "{names:?}");
    // The main thread and the log's flusher, nothing else (a worker not
    // yet named would still be a third).
    assert!(names.len() <= 2, "{names:?}");
    if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        let auth = auth_args(&jwks);
        let mut args = vec!["--http"];
        args.extend(auth.iter().map(String::as_str));
        let wide = RemoteServer::start(
            &args,
            &[
                ("PROVIDER_CONTEXT_BASE_URL", upstream.base_url.as_str()),
                ("PROVIDER_CONTEXT_TOKEN", UPSTREAM_TOKEN),
            ],
        )
        .await;
        // Its workers start with its runtime, but a thread takes its name
        // a moment after it starts (seen: three threads still `ecp` under
        // load): wait for one.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut names = wide.thread_names();
        while workers(&names) == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            names = wide.thread_names();
        }
        assert!(workers(&names) >= 1, "{names:?}");
        drop(wide);
    }
    let token = signer.token(&claims(&server.url));
    let client = http();
    let held = tokio::spawn(tools_call(&client, &server.url, Some(&token), "hang").send());
    upstream
        .wait_for(Duration::from_secs(5), "the held call", |seen, _| {
            !seen.is_empty()
        })
        .await;
    let fast: Vec<_> = (0..20)
        .map(|n| {
            let request = tools_call(&client, &server.url, Some(&token), &format!("fast{n}"));
            tokio::spawn(request.send())
        })
        .collect();
    for call in fast {
        let response = call.await.unwrap().unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["result"]["isError"], false, "{body}");
    }
    // The held call waits out the provider budget (5 s), then fails stably.
    assert!(
        !held.is_finished(),
        "the held call answered before its budget"
    );
    let held = held.await.unwrap().unwrap();
    assert_eq!(held.status().as_u16(), 200);
    let body: Value = held.json().await.unwrap();
    assert_eq!(body["result"]["isError"], true, "{body}");
}
