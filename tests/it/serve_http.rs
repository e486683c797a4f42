//! `ecp serve --http` as a real child process, spoken to over MCP by rmcp's
//! client, with a scripted upstream on 127.0.0.1: the whole stack.

use std::time::{Duration, Instant};

use ecp::profile::SEARCH_FAILED;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use ecp::check::upstream::{Reply, Upstream};

use crate::{
    contracts::render_vectors,
    mcp::{Server, call, text_of},
};

const TOKEN: &str = "tok-CANARY-5f1e2d3c4b";
const QUERY_CANARY: &str = "QUERYCANARY8812";
const BODY_CANARY: &str = "BODYCANARY4471";
const MIB: usize = 1024 * 1024;

async fn serve_http(upstream: &Upstream, budget_ms: u64) -> Server {
    let budget = budget_ms.to_string();
    Server::spawn(
        &["serve", "--http", "--budget-ms", &budget],
        &[
            ("PROVIDER_CONTEXT_BASE_URL", &upstream.base_url),
            ("PROVIDER_CONTEXT_TOKEN", TOKEN),
        ],
    )
    .await
}

/// No canary, and no part of the endpoint, in `text`.
fn assert_redacted(text: &str, upstream: &Upstream, place: &str) {
    let port = upstream.base_url.rsplit(':').next().unwrap();
    for secret in [
        TOKEN,
        QUERY_CANARY,
        BODY_CANARY,
        &upstream.base_url,
        "127.0.0.1",
        port,
    ] {
        assert!(!text.contains(secret), "{place} leaks {secret:?}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_vectors_survive_the_whole_stack_byte_for_byte() {
    let vectors = render_vectors();
    let bodies: Vec<String> = vectors
        .iter()
        .map(|v| format!(r#"{{"items":{}}}"#, v.provider_items.get()))
        .collect();
    let upstream = Upstream::start(move |request| {
        let index: usize = request
            .query()
            .trim_start_matches("vector ")
            .parse()
            .unwrap();
        Reply::json(bodies[index].clone())
    })
    .await;
    let server = serve_http(&upstream, 5000).await;

    for (index, vector) in vectors.iter().enumerate() {
        let result = server.search(&format!("vector  {index} ")).await;
        assert_eq!(result.is_error, Some(false), "{}", vector.name);
        let expected = vector.http_text.as_ref().unwrap_or(&vector.text);
        assert_eq!(text_of(&result), expected, "{}", vector.name);
        let parsed: Value = serde_json::from_str(expected).unwrap();
        assert_eq!(
            result.structured_content.as_ref(),
            Some(&parsed),
            "{}",
            vector.name
        );
    }

    // The request is exactly the binding's, with the normalized query.
    let requests = upstream.requests();
    assert_eq!(
        requests.len(),
        vectors.len(),
        "one upstream request per call"
    );
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/context/search");
    assert_eq!(first.header("accept"), Some("application/json"));
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(first.body, r#"{"query":"vector 0","limit":5}"#);
    let stderr = server.finish().await;
    assert_redacted(&stderr, &upstream, "stderr");
}

/// Each fault by name: the upstream's reply to a query that starts with it.
fn fault(name: &str) -> Reply {
    let canary_body = format!(r#"{{"error":"{BODY_CANARY}"}}"#);
    match name {
        "timeout" => Reply::After(
            Duration::from_secs(20),
            Box::new(Reply::json(r#"{"items":[]}"#)),
        ),
        "redirect" => Reply::Redirect,
        "rate-limited" => Reply::status(429, &canary_body),
        "server-error" => Reply::status(500, &canary_body),
        "not-found" => Reply::status(404, &canary_body),
        "malformed" => Reply::json(format!(r#"{{"items":[{{"id":"{BODY_CANARY}""#)),
        "no-items" => Reply::json(format!(r#"{{"results":["{BODY_CANARY}"]}}"#)),
        "declared-oversize" => Reply::DeclaredLength { len: MIB + 1 },
        "streamed-oversize" => Reply::ChunkedJson { len: MIB + 1 },
        "invalid-utf8" => Reply::Body {
            status: 200,
            body: [
                br#"{"items":[{"id":"a","content":""#.as_slice(),
                BODY_CANARY.as_bytes(),
                b"\xff\"}]}",
            ]
            .concat(),
        },
        "slow-body" => Reply::Trickle {
            body: br#"{"items":[]}"#.to_vec(),
            every: Duration::from_millis(400),
        },
        "connection-closed" => Reply::Close,
        "exactly-one-mib" => Reply::ChunkedJson { len: MIB },
        other => panic!("unknown fault {other}"),
    }
}

const FAULTS: [&str; 12] = [
    "timeout",
    "redirect",
    "rate-limited",
    "server-error",
    "not-found",
    "malformed",
    "no-items",
    "declared-oversize",
    "streamed-oversize",
    "invalid-utf8",
    "slow-body",
    "connection-closed",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_gives_the_stable_redacted_error_within_the_budget_without_retry() {
    let upstream = Upstream::start(|request| {
        let query = request.query();
        fault(query.split(' ').next().unwrap())
    })
    .await;
    let budget = Duration::from_millis(1500);
    let server = serve_http(&upstream, budget.as_millis() as u64).await;

    for name in FAULTS {
        let started = Instant::now();
        let result = server.search(&format!("{name} {QUERY_CANARY}")).await;
        let elapsed = started.elapsed();
        assert_eq!(result.is_error, Some(true), "{name}");
        assert_eq!(text_of(&result), SEARCH_FAILED, "{name}");
        assert_eq!(result.structured_content, None, "{name}");
        // The budget bounds every fault; far below the upstream's 20 s.
        assert!(
            elapsed < budget + Duration::from_secs(3),
            "{name} took {elapsed:?}"
        );
    }

    // Exactly 1 MiB is still fine.
    let result = server.search("exactly-one-mib").await;
    assert_eq!(
        result.is_error,
        Some(false),
        "a body of exactly 1 MiB is accepted"
    );

    // Give a retry every chance to show up, then count: one request each.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let requests = upstream.requests();
    for name in FAULTS {
        let seen = requests
            .iter()
            .filter(|r| r.query().starts_with(name))
            .count();
        assert_eq!(seen, 1, "{name}: upstream requests");
    }
    let stderr = server.finish().await;
    assert_redacted(&stderr, &upstream, "stderr");
    assert!(
        stderr.contains("context_search failed: provider budget exceeded"),
        "{stderr}"
    );
    assert!(stderr.contains("upstream rate limited"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_closes_the_upstream_connection() {
    let upstream = Upstream::start(|request| {
        if request.query() == "hang" {
            Reply::Hang
        } else {
            Reply::json(r#"{"items":[{"id":"after","content":"still serving"}]}"#)
        }
    })
    .await;
    // A budget far longer than the test: only cancellation can end the call.
    let server = serve_http(&upstream, 600_000).await;
    let peer = server.client.peer().clone();
    let call = tokio::spawn(async move {
        let mut params = CallToolRequestParams::new("context_search");
        params.arguments = json!({ "query": "hang" }).as_object().cloned();
        peer.call_tool(params).await
    });
    upstream
        .wait_for(
            Duration::from_secs(10),
            "the upstream request",
            |requests, _| !requests.is_empty(),
        )
        .await;
    assert!(upstream.closed_connections().is_empty());

    // Dropping the call makes rmcp's client send notifications/cancelled.
    call.abort();
    upstream
        .wait_for(
            Duration::from_secs(5),
            "the connection to close",
            |_, closed| !closed.is_empty(),
        )
        .await;

    // The server carries on.
    let result = server.search("next").await;
    assert_eq!(result.is_error, Some(false));
    assert!(text_of(&result).contains("still serving"));
    assert_eq!(
        upstream.requests().len(),
        2,
        "no retry of the cancelled call"
    );
    let stderr = server.finish().await;
    assert!(stderr.contains("cancelled by the client"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_calls_are_all_answered() {
    let upstream = Upstream::start(|request| {
        let body = json!({ "items": [{ "id": request.query(), "content": "concurrent" }] });
        Reply::After(
            Duration::from_millis(200),
            Box::new(Reply::json(body.to_string())),
        )
    })
    .await;
    let server = serve_http(&upstream, 5000).await;
    let calls = (0..50).map(|n| {
        let peer = server.client.peer().clone();
        tokio::spawn(async move {
            let mut params = CallToolRequestParams::new("context_search");
            params.arguments = json!({ "query": format!("call-{n}") }).as_object().cloned();
            (n, peer.call_tool(params).await.expect("answered"))
        })
    });
    for call in calls.collect::<Vec<_>>() {
        let (n, result) = call.await.unwrap();
        let structured = result.structured_content.expect("a success");
        assert_eq!(
            structured["untrusted_external_context"]["items"][0]["id"],
            format!("call-{n}")
        );
    }
    assert_eq!(upstream.requests().len(), 50);
    server.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_fail_without_echo_and_without_an_upstream_request() {
    let upstream = Upstream::start(|_| Reply::json(r#"{"items":[]}"#)).await;
    let server = serve_http(&upstream, 5000).await;
    let cases = [
        (
            json!({ "query": QUERY_CANARY, "corpus": QUERY_CANARY }),
            "Only the query argument is accepted; remove any other argument.",
        ),
        (json!({}), "Search query is required."),
        (json!({ "query": 42 }), "Search query must be a string."),
        (
            json!({ "query": [QUERY_CANARY] }),
            "Search query must be a string.",
        ),
        (
            json!({ "query": " \u{3000}\t" }),
            "Search query must not be empty.",
        ),
        (
            json!({ "query": format!("{QUERY_CANARY}{}", "x".repeat(2000)) }),
            "Search query is too long.",
        ),
    ];
    for (arguments, message) in cases {
        let result = call(&server.client, arguments.clone()).await;
        assert_eq!(result.is_error, Some(true), "{arguments}");
        assert_eq!(text_of(&result), message);
        assert_eq!(result.structured_content, None);
    }
    // No arguments at all.
    let result = server
        .client
        .call_tool(CallToolRequestParams::new("context_search"))
        .await
        .unwrap();
    assert_eq!(text_of(&result), "Search query is required.");
    // A tool that does not exist is a protocol error.
    assert!(
        server
            .client
            .call_tool(CallToolRequestParams::new("context_remember"))
            .await
            .is_err()
    );
    assert!(upstream.requests().is_empty());
    let stderr = server.finish().await;
    assert_redacted(&stderr, &upstream, "stderr");
}
