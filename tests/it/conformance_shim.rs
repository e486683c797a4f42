//! The loopback Streamable HTTP shim of `ecp check --conformance`, in front
//! of the independent Python profile server (tests/python), driven by
//! rmcp's own Streamable HTTP client and by raw HTTP: a session a process,
//! IDs kept apart on the shared process, and the refusals. The official
//! suite itself runs through it in tests/e2e/conformance.rs.

use ecp::check::{
    conformance::shim::{MAX_MESSAGE, MAX_SESSIONS, Shim},
    target::Launch,
};
use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
use serde_json::{Value, json};

use crate::check::python_server;

async fn python_shim() -> Shim {
    let server = python_server();
    let launch = Launch::of_command(
        "python3",
        &[&server],
        &[
            ("PROVIDER_CONTEXT_BASE_URL", "http://127.0.0.1:9"),
            ("PROVIDER_CONTEXT_TOKEN", "shim-token"),
        ],
    );
    Shim::start(launch).await.unwrap()
}

fn client() -> reqwest::Client {
    ecp::runtime::install_tls_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn post(shim: &Shim, body: &Value, session: Option<&str>) -> reqwest::Response {
    let mut request = client()
        .post(&shim.url)
        .header("accept", "application/json, text/event-stream")
        .json(body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.unwrap()
}

/// The JSON-RPC message of an answer: the JSON body, or the last event.
async fn message(response: reqwest::Response) -> Value {
    let json = (response.headers().get("content-type"))
        .is_some_and(|t| t.to_str().unwrap().starts_with("application/json"));
    let text = response.text().await.unwrap();
    if json {
        return serde_json::from_str(&text).unwrap();
    }
    let data = (text.lines())
        .rev()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no event in {text:?}"));
    serde_json::from_str(data).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcps_client_meets_the_stdio_server_through_the_shim_one_process_a_session() {
    let shim = python_shim().await;
    ecp::runtime::install_tls_provider();
    let mut names = Vec::new();
    for _ in 0..2 {
        let transport = StreamableHttpClientTransport::from_uri(shim.url.as_str());
        let session = ().serve(transport).await.unwrap();
        let info = session.peer_info().unwrap();
        assert_eq!(
            info.server_info.as_ref().unwrap().name,
            "acme-context-python"
        );
        let tools = session.list_all_tools().await.unwrap();
        names.push(tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>());
        session.cancel().await.unwrap();
    }
    assert_eq!(names, [["context_search"], ["context_search"]]);
    assert_eq!(shim.started(), 2, "each session its own process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_named_kept_and_ended_and_an_unknown_one_is_404() {
    let shim = python_shim().await;
    let initialize = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = post(&shim, &initialize, None).await;
    assert_eq!(answer.status(), 200);
    let session = (answer.headers().get("mcp-session-id"))
        .expect("the session is named")
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(session.len(), 32);
    let said = message(answer).await;
    assert_eq!(said["id"], "init", "the client's ID comes back: {said}");
    assert_eq!(said["result"]["protocolVersion"], "2025-11-25");

    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&shim, &notified, Some(&session)).await.status(), 202);
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    let answer = post(&shim, &ping, Some(&session)).await;
    assert_eq!(
        message(answer).await,
        json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );

    let unknown = post(&shim, &ping, Some("0123456789abcdef0123456789abcdef")).await;
    assert_eq!(unknown.status(), 404);
    let ended = client()
        .delete(&shim.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    assert_eq!(post(&shim, &ping, Some(&session)).await.status(), 404);
}

/// Stateless requests share one process; two clients that both use ID 1 at
/// once each get their own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_process_answers_each_client_under_its_own_id() {
    let shim = python_shim().await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let list =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta}});
    let (listed, pinged) = tokio::join!(
        async { message(post(&shim, &list, None).await).await },
        async { message(post(&shim, &ping, None).await).await },
    );
    assert_eq!(listed["id"], 1);
    assert_eq!(
        listed["result"]["tools"][0]["name"], "context_search",
        "{listed}"
    );
    assert_eq!(pinged["id"], 1);
    assert!(pinged["result"].get("tools").is_none(), "{pinged}");
    assert_eq!(shim.started(), 1);

    // A JSON-only client gets the response as one body.
    let answer = client()
        .post(&shim.url)
        .header("accept", "application/json")
        .json(&ping)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["content-type"], "application/json");
    assert_eq!(message(answer).await["id"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_a_huge_body_a_batch_and_a_get_are_refused() {
    let shim = python_shim().await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let rebound = client()
        .post(&shim.url)
        .header("host", "attacker.example")
        .json(&ping)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);

    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(MAX_MESSAGE)
    );
    let answer = client()
        .post(&shim.url)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 413);

    let batch = post(&shim, &json!([ping]), None).await;
    assert_eq!(batch.status(), 400);
    assert_eq!(message(batch).await["error"]["code"], -32700);

    let get = client().get(&shim.url).send().await.unwrap();
    assert_eq!(get.status(), 405);
    assert_eq!(get.headers()["allow"], "POST, DELETE");
    assert_eq!(shim.started(), 0, "nothing refused started a process");
}

/// More sessions than the limit end the oldest, so that a suite that
/// never says goodbye cannot pile up processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_a_new_session_ends_the_oldest() {
    let shim = python_shim().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}});
    let mut sessions = Vec::new();
    for _ in 0..=MAX_SESSIONS {
        let answer = post(&shim, &initialize, None).await;
        sessions.push(
            answer.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
        message(answer).await;
    }
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    assert_eq!(post(&shim, &ping, Some(&sessions[0])).await.status(), 404);
    let newest = post(&shim, &ping, Some(sessions.last().unwrap())).await;
    assert_eq!(message(newest).await["id"], 2);
}

/// What `--conformance` refuses before anything is installed or started:
/// a baseline entry without a reason (with its line), a token the suite
/// would not send, and a revision it has no requirements for.
#[test]
fn conformance_refusals_come_before_the_install_and_name_the_place() {
    let work = tempfile::tempdir().unwrap();
    let baseline = work.path().join("baseline.yml");
    std::fs::write(
        &baseline,
        "server:\n  # no prompts\n  - prompts-list:prompts-list\n\n  - ping:ping\n",
    )
    .unwrap();
    let nowhere = work.path().join("never-installed");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ecp"))
            .args(args)
            .env(ecp::check::conformance::install::DIR_ENV, &nowhere)
            .env("SOME_TOKEN", "secret")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let refused = run(&[
        "check",
        "--conformance",
        "--conformance-baseline",
        baseline.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("baseline.yml:5: ping:ping: every entry says why"),
        "{stderr}"
    );

    let refused = run(&[
        "check",
        "--conformance",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--token-env",
        "SOME_TOKEN",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("sends no bearer token"), "{stderr}");

    let refused = run(&["check", "--conformance=2024-11-05", "--", "true"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("2025-11-25") && stderr.contains("2026-07-28"),
        "{stderr}"
    );
    assert!(!nowhere.exists(), "nothing was installed");
}
