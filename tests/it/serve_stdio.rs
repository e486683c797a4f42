//! `ecp serve` at the byte level: the handshake for every protocol
//! revision, stdout carrying nothing but MCP, exit on stdin EOF, the tool as
//! declared, configuration errors, and the fixture backend.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::{
    cli::corpus,
    mcp::{Server, assert_canonical_tool, text_of},
};

fn ecp(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ecp"));
    command
        .args(args)
        .env_remove("PROVIDER_CONTEXT_BASE_URL")
        .env_remove("PROVIDER_CONTEXT_TOKEN");
    command
}

/// Sends `messages` as JSON lines, closes stdin, and returns the stdout
/// lines, the stderr text and how long the process took to exit.
fn session(args: &[&str], messages: &[Value]) -> (Vec<Value>, String, Duration) {
    let mut child = ecp(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    let started = Instant::now();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    assert!(output.status.success(), "exit status {:?}", output.status);
    let lines = BufReader::new(output.stdout.as_slice())
        .lines()
        .map(|line| {
            let line = line.unwrap();
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is not MCP: {line}"))
        })
        .collect();
    (lines, String::from_utf8(output.stderr).unwrap(), took)
}

fn initialize(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "it", "version": "0"}}})
}

#[test]
fn answers_initialize_for_every_revision_and_exits_on_eof() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let (lines, stderr, took) = session(
            &["serve", "--fixture", &corpus()],
            &[
                initialize(version),
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "context_search", "arguments": {"query": "release train"}}}),
            ],
        );
        assert_eq!(lines.len(), 2, "{version}: {lines:?}");
        assert_eq!(lines[0]["result"]["protocolVersion"], version);
        assert_eq!(lines[0]["result"]["serverInfo"]["name"], "ecp serve");
        assert!(lines[0]["result"]["capabilities"]["tools"].is_object());
        assert_eq!(lines[1]["id"], 2);
        assert_eq!(lines[1]["result"]["isError"], false);
        assert!(stderr.is_empty(), "{stderr}");
        // Idle at EOF: the process ends at once (the bound is generous).
        assert!(
            took < Duration::from_secs(5),
            "{version}: exit took {took:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declares_exactly_the_canonical_tool() {
    let server = Server::spawn(&["serve", "--fixture", &corpus()], &[]).await;
    assert_canonical_tool(&server.client.list_all_tools().await.unwrap());
    server.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_corpus_is_ranked_against_the_query() {
    let server = Server::spawn(&["serve", "--fixture", &corpus()], &[]).await;
    let result = server.search("  deployment\tpolicy ").await;
    let text = text_of(&result);
    let structured = result.structured_content.as_ref().unwrap();
    let items = structured["untrusted_external_context"]["items"]
        .as_array()
        .unwrap();
    assert_eq!(items[0]["id"], "deploy-policy");
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), *structured);

    // The example corpus shows escaping: no raw angle bracket in the text.
    let result = server.search("script html").await;
    assert!(text_of(&result).contains(r"\u003cscript\u003e"));

    let result = server.search("zzzz-no-match").await;
    assert_eq!(
        result.structured_content.unwrap()["untrusted_external_context"]["items"],
        json!([])
    );
    server.finish().await;
}

#[test]
fn http_configuration_errors_are_redacted_could_not_run_errors() {
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[], "PROVIDER_CONTEXT_BASE_URL is not set"),
        (
            &[
                ("PROVIDER_CONTEXT_BASE_URL", "${PROVIDER_CONTEXT_BASE_URL}"),
                ("PROVIDER_CONTEXT_TOKEN", "t"),
            ],
            "PROVIDER_CONTEXT_BASE_URL is not set",
        ),
        (
            &[
                (
                    "PROVIDER_CONTEXT_BASE_URL",
                    "https://user:SECRETPW@ctx.example.com",
                ),
                ("PROVIDER_CONTEXT_TOKEN", "t"),
            ],
            "PROVIDER_CONTEXT_BASE_URL is invalid: it must not contain user info",
        ),
        (
            &[
                ("PROVIDER_CONTEXT_BASE_URL", "http://ctx.example.com"),
                ("PROVIDER_CONTEXT_TOKEN", "SECRETPW"),
            ],
            "PROVIDER_CONTEXT_BASE_URL is invalid: http is allowed only for",
        ),
    ];
    for (env, expected) in cases {
        let output = ecp(&["serve", "--http"])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(output.stdout.is_empty());
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert_eq!(stderr.lines().count(), 2, "{stderr}");
        assert!(
            stderr.lines().nth(1).unwrap().starts_with("  = help: "),
            "{stderr}"
        );
        assert!(stderr.contains(expected), "{stderr}");
        assert!(
            !stderr.contains("SECRETPW") && !stderr.contains("ctx.example.com"),
            "{stderr}"
        );
    }

    // Other variable names.
    let output = ecp(&[
        "serve",
        "--http",
        "--base-url-env",
        "ACME_CONTEXT_BASE_URL",
        "--token-env",
        "ACME_CONTEXT_TOKEN",
    ])
    .env("ACME_CONTEXT_BASE_URL", "https://ctx.example.com")
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("ACME_CONTEXT_TOKEN is not set"));
}

#[test]
fn bad_fixture_and_bad_flags_say_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl");
    std::fs::write(
        &path,
        "{\"id\":\"a\",\"content\":\"x\"}\n{\"id\":\"b\",\"content\":\n",
    )
    .unwrap();
    let output = ecp(&["serve", "--fixture", path.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr.contains(&format!("{}:2:", path.display())),
        "{stderr}"
    );

    let output = ecp(&["serve"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "a backend is required");
    let output = ecp(&["serve", "--fixture", "x", "--budget-ms", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "budget 0 is refused");
}

/// Every request line gets a JSON-RPC answer with the right code, never
/// silence: malformed JSON, a lone surrogate (read as U+FFFD and served),
/// `params` or `arguments` that are not objects, invalid ids, batches, and a
/// line over the cap.
#[test]
fn every_request_is_answered_even_when_malformed() {
    let corpus = corpus();
    let mut child = ecp(&["serve", "--fixture", &corpus])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"release \ud800 train"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"x"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"context_search","arguments":["q"]}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#.to_owned(),
        r#"[{"jsonrpc":"2.0","id":5,"method":"ping"}]"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":6,"method":"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(5 << 20)),
        r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#.to_owned(),
    ];
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).cloned();
    let code = |answer: Option<Value>| answer.and_then(|a| a["error"]["code"].as_i64());
    let served = by_id(json!(1)).expect("the lone-surrogate call is answered");
    assert_eq!(served["result"]["isError"], false, "{served}");
    assert_eq!(code(by_id(json!(2))), Some(-32602));
    assert_eq!(code(by_id(json!(3))), Some(-32602));
    assert!(by_id(json!(8)).is_some_and(|a| a["result"] == json!({})));
    let anonymous: Vec<i64> = answers
        .iter()
        .filter(|a| a["id"].is_null())
        .filter_map(|a| a["error"]["code"].as_i64())
        .collect();
    // The invalid id, the batch, the broken line and the line over the cap.
    assert_eq!(anonymous, [-32600, -32600, -32700, -32600], "{answers:#?}");
}

/// The 2026-07-28 revision through rmcp's own client: `server/discover`
/// instead of `initialize`, then the same tool and the same envelope; a
/// client that asks `initialize` for 2024-11-05 or 2025-11-25 still gets
/// it, and one that asks for a revision nobody knows gets 2025-11-25.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2026_07_28_revision_discovers_lists_and_calls_without_initialize() {
    let corpus = crate::cli::corpus();
    let command = crate::mcp::ecp_command(&["serve", "--fixture", &corpus], &[]);
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = crate::mcp::discover_2026(transport).await;
    let tools = client.list_all_tools().await.unwrap();
    crate::mcp::assert_canonical_tool(&tools);
    let result = crate::mcp::call(&client, json!({"query": "deployment policy"})).await;
    assert_eq!(result.is_error, Some(false));
    let text = crate::mcp::text_of(&result);
    assert!(
        text.starts_with("{\"untrusted_external_context\":"),
        "{text}"
    );
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        result.structured_content.clone().unwrap()
    );
    client.cancel().await.unwrap();

    // Older clients keep their revision over initialize.
    for (asked, agreed) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let mut child = crate::mcp::ecp_command(&["serve", "--fixture", &corpus], &[])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut stdin = child.stdin.take().unwrap();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"}}});
        stdin
            .write_all(format!("{initialize}\n").as_bytes())
            .await
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["result"]["protocolVersion"], agreed, "{answer}");
        drop(stdin);
    }
}
