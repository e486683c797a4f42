//! End to end in the real clients: Qwen Code 0.24.4 from the npm registry,
//! MCP Inspector's CLI and the official Python MCP SDK, all offline on
//! 127.0.0.1. Run with `cargo xtask e2e`, which installs the pinned peers
//! into `target/e2e-cache/` and points `ECP_E2E_CACHE` at it.
//!
//! Every process is started with `kill_on_drop` or waited for; a failure
//! prints the client's own output.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::OnceLock,
    time::Duration,
};

use ecp::{
    check::upstream::{Reply, SeenRequest, Upstream},
    profile::{self, ProviderItem},
};
use serde_json::{Value, json};

mod auto_recall;
mod channels;
mod conformance;
mod doctor;
#[path = "../support/jwt.rs"]
mod jwt;
#[path = "../support/nginx.rs"]
mod nginx;
mod oauth;
mod release;
#[path = "../support/remote.rs"]
mod remote;

const UPSTREAM_ITEMS: &str = r#"{"items":[{"id":"policy-1","content":"Use the reviewed <deploy> workflow.","title":"Deployment policy","score":1}]}"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cache() -> PathBuf {
    PathBuf::from(
        std::env::var("ECP_E2E_CACHE")
            .expect("ECP_E2E_CACHE: run the suite with `cargo xtask e2e`"),
    )
}

fn qwen_entry() -> PathBuf {
    cache().join("npm/node_modules/@qwen-code/qwen-code/cli-entry.js")
}

fn show(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The release profile the generated crates are built with here: the
/// template's without its fat LTO and single codegen unit, as in
/// `tests/it` (`LIGHT_RELEASE` in tests/it/cli.rs says why and what keeps
/// the shipped profile proven). What a client does with the archive does
/// not depend on LTO.
const LIGHT_RELEASE: [(&str, &str); 2] = [
    ("CARGO_PROFILE_RELEASE_LTO", "off"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
];

fn ecp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(args)
        .env("CARGO_TARGET_DIR", root().join("target/generated"))
        .envs(LIGHT_RELEASE)
        .env("CARGO_NET_OFFLINE", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `ecp new acme-context` packaged once for the whole suite: (extension
/// folder, archive).
fn packaged() -> &'static (PathBuf, PathBuf) {
    static PACKAGED: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PACKAGED.get_or_init(|| {
        let dir = root().join("target/e2e-work/acme-context");
        let _ = std::fs::remove_dir_all(root().join("target/e2e-work"));
        let output = ecp(&[
            "new",
            "acme-context",
            "--yes",
            "--dir",
            dir.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", show(&output));
        let output = ecp(&["package", dir.to_str().unwrap(), "--format", "tar.gz"]);
        assert!(output.status.success(), "{}", show(&output));
        let archive = dir.join("dist/linux.x64.acme-context.tar.gz");
        assert!(archive.is_file());
        // dist/main beside the manifest, for the clients that start it directly.
        let unpacked = root().join("target/e2e-work/unpacked");
        std::fs::create_dir_all(&unpacked).unwrap();
        let status = Command::new("tar")
            .arg("xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&unpacked)
            .status()
            .unwrap();
        assert!(status.success());
        (dir, archive)
    })
}

fn dist_main() -> PathBuf {
    packaged();
    root().join("target/e2e-work/unpacked/dist/main")
}

/// A Qwen Code with its own empty HOME.
struct Qwen {
    home: tempfile::TempDir,
}

impl Qwen {
    fn new() -> Qwen {
        Qwen {
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("node");
        command
            .arg(qwen_entry())
            .args(args)
            .env("HOME", self.home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("DASHSCOPE_API_KEY")
            .current_dir(self.home.path())
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.command(args);
        command.envs(env.iter().copied());
        command.output().unwrap()
    }

    /// `qwen extensions install SOURCE --consent`, which must succeed.
    fn install(&self, source: &Path) {
        let source = source.to_str().unwrap();
        let install = self.run(&["extensions", "install", source, "--consent"], &[]);
        assert!(install.status.success(), "{}", show(&install));
    }

    /// A headless `qwen -o json` run against the scripted `model` that may
    /// call only `acme-context`'s context_search.
    fn ask(&self, model: &Upstream, env: &[(&str, &str)]) -> Output {
        let model_url = format!("{}/v1", model.base_url);
        let model_env = [
            ("OPENAI_API_KEY", "dummy"),
            ("OPENAI_BASE_URL", model_url.as_str()),
            ("OPENAI_MODEL", "fake-model"),
        ];
        self.run(
            &[
                "search the handbook",
                "-o",
                "json",
                "--allowed-tools=mcp__acme-context__context_search",
            ],
            &[env, &model_env[..]].concat(),
        )
    }
}

/// The text the profile renders for [`UPSTREAM_ITEMS`].
fn expected_envelope() -> String {
    let items: Value = serde_json::from_str(UPSTREAM_ITEMS).unwrap();
    let items: Vec<ProviderItem> = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(ecp::runtime::ProviderItem::from_json)
        .collect();
    profile::render(&items).text
}

/// One streamed chat completion chunk pair carrying `message`.
fn stream_body(message: &Value, finish: &str) -> Vec<u8> {
    let mut delta = json!({"role": "assistant"});
    if let Some(content) = message.get("content").filter(|c| !c.is_null()) {
        delta["content"] = content.clone();
    }
    if let Some(calls) = message.get("tool_calls") {
        delta["tool_calls"] = calls
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c["index"] = 0.into();
                c
            })
            .collect();
    }
    let chunk = json!({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let end = json!({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
    format!("data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n").into_bytes()
}

/// The fake OpenAI-compatible model: first it calls
/// `mcp__acme-context__context_search` (through `tool_call` when Qwen
/// defers MCP tools), then it echoes the tool result as its answer.
fn fake_model(request: &SeenRequest) -> Reply {
    if request.method == "GET" {
        return Reply::json(
            json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                .to_string(),
        );
    }
    let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tool_result =
        messages
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .map(|m| match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                other => other.to_string(),
            });
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let (message, finish) = match tool_result {
        Some(result) => (
            json!({"role": "assistant", "content": format!("RESULT:{result}")}),
            "stop",
        ),
        None => {
            let arguments = json!({"query": "deployment policy"});
            let call = if tools.contains(&"mcp__acme-context__context_search") {
                json!({"id": "call_1", "type": "function", "function": {
                    "name": "mcp__acme-context__context_search", "arguments": arguments.to_string()}})
            } else {
                json!({"id": "call_1", "type": "function", "function": {"name": "tool_call",
                    "arguments": json!({"name": "mcp__acme-context__context_search", "arguments": arguments}).to_string()}})
            };
            (
                json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                "tool_calls",
            )
        }
    };
    if body["stream"] == true {
        Reply::Typed {
            status: 200,
            content_type: "text/event-stream",
            body: stream_body(&message, finish),
        }
    } else {
        Reply::json(
            json!({"id": "x", "object": "chat.completion", "created": 0, "model": "fake-model",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
            .to_string(),
        )
    }
}

/// The events of a headless `qwen -o json` run and its one tool result.
fn tool_result(headless: &Output) -> (Value, Value) {
    let events: Value =
        serde_json::from_slice(&headless.stdout).unwrap_or_else(|_| panic!("{}", show(headless)));
    let tool_result = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "user")
        .flat_map(|e| {
            e["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|c| c["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {}", show(headless)));
    (events, tool_result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_installs_the_archive_connects_and_the_envelope_reaches_the_model() {
    let (_, archive) = packaged();
    let qwen = Qwen::new();
    qwen.install(archive);
    let list = qwen.run(&["extensions", "list"], &[]);
    let listed =
        String::from_utf8_lossy(&list.stdout).to_string() + &String::from_utf8_lossy(&list.stderr);
    assert!(
        listed.contains("acme-context (0.1.0)") && listed.contains("MCP servers"),
        "{}",
        show(&list)
    );

    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let model = Upstream::start(fake_model).await;
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "e2e-token"),
    ];
    let mcp = tokio::task::block_in_place(|| qwen.run(&["mcp", "list"], &env));
    let mcp_text = String::from_utf8_lossy(&mcp.stdout).to_string();
    assert!(
        mcp_text
            .lines()
            .any(|l| l.contains("acme-context") && l.contains("Connected") && l.contains('✓')),
        "{}",
        show(&mcp)
    );

    let headless = tokio::task::block_in_place(|| qwen.ask(&model, &env));
    assert!(headless.status.success(), "{}", show(&headless));
    let (events, tool_result) = tool_result(&headless);
    assert_eq!(tool_result["is_error"], false, "{}", show(&headless));
    let content = tool_result["content"].as_str().unwrap();
    let expected = expected_envelope();
    // Qwen gives the model JSON.stringify(structuredContent), then the text
    // block: the profile text must be there byte for byte.
    assert!(
        content.lines().any(|l| l == expected),
        "expected line {expected}\nin {content}"
    );
    // And the model saw it: its answer echoes the tool result.
    let answered = events.as_array().unwrap().iter().any(|e| {
        e["type"] == "assistant"
            && e["message"]["content"].as_array().is_some_and(|parts| {
                parts.iter().any(|p| {
                    p["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("RESULT:") && t.contains(&expected))
                })
            })
    });
    assert!(
        answered,
        "the model's answer does not echo the envelope: {}",
        show(&headless)
    );
    assert_eq!(
        upstream.requests().len(),
        1,
        "one call, one upstream request"
    );
}

/// `trust: true` in a manifest: Qwen installs it and, in a headless run
/// with no allow rule for the tool, calls it without asking (without
/// `trust` the same run declines it); `ecp lint` refuses the manifest and
/// `ecp doctor` reports it on the machine it is installed on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_honours_trust_from_a_manifest_and_ecp_lint_and_doctor_say_so() {
    let (dir, _) = packaged();
    let trusted = tempfile::tempdir().unwrap();
    let folder = trusted.path().join("acme-context");
    std::fs::create_dir_all(folder.join("dist")).unwrap();
    std::fs::copy(dist_main(), folder.join("dist/main")).unwrap();
    let manifest = std::fs::read_to_string(dir.join("qwen-extension.json"))
        .unwrap()
        .replace(
            "\"timeout\": 8000,",
            "\"timeout\": 8000,\n      \"trust\": true,",
        );
    std::fs::write(folder.join("qwen-extension.json"), manifest).unwrap();

    // ecp lint refuses it, naming the rule.
    let lint = ecp(&["lint", folder.to_str().unwrap(), "--format", "json"]);
    assert_eq!(lint.status.code(), Some(1), "{}", show(&lint));
    let report: Value = serde_json::from_slice(&lint.stdout).unwrap();
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert_eq!(rules, ["trust"], "{}", show(&lint));

    // Qwen installs it without complaint, and runs the tool unasked.
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let model = Upstream::start(fake_model).await;
    let model_url = format!("{}/v1", model.base_url);
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "t"),
        ("OPENAI_API_KEY", "dummy"),
        ("OPENAI_BASE_URL", model_url.as_str()),
        ("OPENAI_MODEL", "fake-model"),
    ];
    let unasked = |qwen: &Qwen| {
        tokio::task::block_in_place(|| qwen.run(&["search the handbook", "-o", "json"], &env))
    };
    let qwen = Qwen::new();
    qwen.install(&folder);
    let headless = unasked(&qwen);
    let (_, result) = tool_result(&headless);
    assert_eq!(result["is_error"], false, "{}", show(&headless));
    assert_eq!(upstream.requests().len(), 1, "{}", show(&headless));

    // The same extension without `trust`: the run declines the tool.
    let untrusted = Qwen::new();
    untrusted.install(&root().join("target/e2e-work/unpacked"));
    let headless = unasked(&untrusted);
    let (_, result) = tool_result(&headless);
    assert_eq!(result["is_error"], true, "{}", show(&headless));
    assert_eq!(upstream.requests().len(), 1, "no second provider call");

    // ecp doctor, on the machine it is installed on, says so.
    let workspace = tempfile::tempdir().unwrap();
    let (code, report) = doctor::doctor(&qwen, workspace.path(), &env[..2], "acme-context");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        doctor::finding_ids(&report),
        ["server-trusted"],
        "{report:#}"
    );
    let (code, report) = doctor::doctor(&untrusted, workspace.path(), &env[..2], "acme-context");
    assert_eq!(code, 0, "{report:#}");
}

/// Runs a Node or Python client and returns its stdout, failing loudly.
fn client(mut command: Command) -> String {
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(output.status.success(), "{}", show(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// Inspector CLI arguments for one `context_search` call.
const INSPECTOR_CALL: &[&str] = &[
    "--method",
    "tools/call",
    "--tool-name",
    "context_search",
    "--tool-arg",
    "query=deployment policy",
];

fn inspector(server: &[&str], method: &[&str]) -> Value {
    let mut command = Command::new(cache().join("npm/node_modules/.bin/mcp-inspector"));
    command.arg("--cli").args(server).args(method);
    serde_json::from_str(&client(command)).unwrap()
}

fn python(server: &[&str]) -> Value {
    let mut command = Command::new(cache().join("pyenv/bin/python"));
    command
        .arg(root().join("tests/e2e/python_client.py"))
        .arg("deployment policy")
        .arg("--")
        .args(server);
    serde_json::from_str(client(command).lines().last().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_and_the_python_sdk_accept_our_schemas_and_results() {
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let main = dist_main();
    let env_base = format!("ACME_CONTEXT_BASE_URL={}", upstream.base_url);
    let corpus = root().join("templates/corpus/example.jsonl");
    let packaged_server = [
        "env",
        env_base.as_str(),
        "ACME_CONTEXT_TOKEN=e2e",
        main.to_str().unwrap(),
    ];
    let fixture_server = [
        env!("CARGO_BIN_EXE_ecp"),
        "serve",
        "--fixture",
        corpus.to_str().unwrap(),
    ];
    let expected = expected_envelope();

    for server in [&packaged_server[..], &fixture_server[..]] {
        let listed = tokio::task::block_in_place(|| inspector(server, &["--method", "tools/list"]));
        let tools = listed["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{listed:#}");
        assert_eq!(tools[0]["name"], "context_search");
        assert!(tools[0]["outputSchema"].is_object());

        // Inspector's SDK client validates structuredContent against the
        // declared outputSchema before it prints the result.
        let called = tokio::task::block_in_place(|| inspector(server, INSPECTOR_CALL));
        assert_eq!(called["isError"], false, "{called:#}");
        let text = called["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            called["structuredContent"]
        );

        let python = tokio::task::block_in_place(|| python(server));
        assert_eq!(python["tools"], json!(["context_search"]), "{python:#}");
        assert_eq!(python["outputSchema"], true);
        assert_eq!(python["isError"], false);
        assert_eq!(
            serde_json::from_str::<Value>(python["text"].as_str().unwrap()).unwrap(),
            python["structuredContent"]
        );

        if server == &packaged_server[..] {
            assert_eq!(
                text, expected,
                "Inspector saw the profile text byte for byte"
            );
            assert_eq!(python["text"], expected.as_str());
        }
    }
}

/// The remote adapter (the packaged `dist/main --listen`) behind a bearer
/// JWT, spoken to over Streamable HTTP by Qwen Code (an `httpUrl` server
/// with an `Authorization` header in its settings), MCP Inspector's CLI and
/// the Python SDK: all three get the profile text byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_adapter_serves_qwen_inspector_and_the_python_sdk_over_http() {
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let model = Upstream::start(fake_model).await;
    let signer = jwt::Signer::rs256("e2e");
    let keys = tempfile::tempdir().unwrap();
    let jwks = keys.path().join("jwks.json");
    std::fs::write(&jwks, jwt::jwks(&[&signer])).unwrap();
    let args = remote::auth_args(&jwks);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = remote::RemoteServer::start_program(
        &dist_main(),
        &args,
        &[
            ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
            ("ACME_CONTEXT_TOKEN", "e2e-token"),
        ],
    )
    .await;
    let token = signer.token(&jwt::claims(&server.url));
    let expected = expected_envelope();

    let qwen = Qwen::new();
    configure_http_server(&qwen, &server.url, &token);
    assert_qwen_answers(&qwen, &model, &[], "acme-context");

    let bearer = format!("Authorization: Bearer {token}");
    let called = tokio::task::block_in_place(|| {
        inspector(
            &[&server.url, "--transport", "http", "--header", &bearer],
            INSPECTOR_CALL,
        )
    });
    assert_eq!(called["isError"], false, "{called:#}");
    assert_eq!(called["content"][0]["text"], expected.as_str());

    let mut command = Command::new(cache().join("pyenv/bin/python"));
    command
        .arg(root().join("tests/e2e/python_client.py"))
        .args(["deployment policy", "--url", &server.url])
        .env("ECP_E2E_BEARER", &token);
    let python: Value = serde_json::from_str(
        tokio::task::block_in_place(|| client(command))
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(python["tools"], json!(["context_search"]), "{python:#}");
    assert_eq!(python["text"], expected.as_str());

    assert!(!server.stderr().contains(&token), "{}", server.stderr());
    assert!(
        upstream.requests().len() >= 3,
        "Qwen, Inspector and Python each made a call"
    );
}

/// The seed's preferred path as a provider runs it: nginx from Debian, with
/// the `deploy/nginx.conf` that `ecp new --template remote` writes,
/// terminating TLS (a test CA Qwen trusts through `NODE_EXTRA_CA_CERTS`)
/// for three replicas of the packaged `dist/main --listen`; Qwen Code
/// connects over https and the model gets the profile text byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_reaches_three_replicas_over_https_through_nginx() {
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let model = Upstream::start(fake_model).await;
    let work = tempfile::tempdir().unwrap();
    let port = nginx::free_port();
    let url = format!("https://localhost:{port}/mcp");
    let remote_dir = work.path().join("acme-context-remote");
    let made = ecp(&[
        "new",
        "acme-context",
        "--template",
        "remote",
        "--endpoint",
        &url,
        "--yes",
        "--dir",
        remote_dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", show(&made));
    let tls = nginx::TestCa::new(work.path(), "localhost");
    let signer = jwt::Signer::es256("e2e-nginx");
    let jwks = work.path().join("jwks.json");
    std::fs::write(&jwks, jwt::jwks(&[&signer])).unwrap();
    let mut args = vec!["--resource-url".to_owned(), url.clone()];
    args.extend(remote::auth_args(&jwks));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "e2e-token"),
    ];
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(remote::RemoteServer::start_program(&dist_main(), &args, &env).await);
    }
    let addresses: Vec<String> = replicas
        .iter()
        .map(|r| r.origin.trim_start_matches("http://").to_owned())
        .collect();
    let _nginx = nginx::Nginx::start(
        &remote_dir.join("deploy/nginx.conf"),
        work.path(),
        port,
        &addresses,
        &tls,
    );

    let token = signer.token(&jwt::claims(&url));
    let qwen = Qwen::new();
    configure_http_server(&qwen, &url, &token);
    let ca = tls.ca.to_str().unwrap().to_owned();
    let trust = [("NODE_EXTRA_CA_CERTS", ca.as_str())];
    assert_qwen_answers(&qwen, &model, &trust, "acme-context");
    // Qwen's requests went through nginx to the replicas.
    let served: usize = replicas
        .iter()
        .map(|r| {
            r.events("request")
                .iter()
                .filter(|e| e["route"] == "mcp")
                .count()
        })
        .sum();
    assert!(served >= 2, "the replicas served {served} MCP requests");
    assert!(!upstream.requests().is_empty());
}

/// The seed's open question: does a sensitive extension *setting* reach the
/// stdio MCP child? Qwen Code 0.24.4 stores it, but the child sees neither
/// the value as an environment variable nor through `"$VAR"` in `env`. The
/// `settings-credential` lint rule cites this test.
#[test]
fn settings_do_not_reach_the_mcp_child() {
    const INSTALL_SECRET: &str = "synthetic-setting-at-install-5521";
    const SET_SECRET: &str = "synthetic-setting-via-set-9034";
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join("acme-probe");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        root().join("tests/e2e/settings_probe.py"),
        folder.join("probe.py"),
    )
    .unwrap();
    let seen = temp.path().join("seen.json");
    let manifest = json!({
        "name": "acme-probe",
        "version": "0.1.0",
        "settings": [{"name": "Probe secret", "description": "A synthetic secret",
                      "envVar": "ACME_PROBE_SECRET", "sensitive": true}],
        "mcpServers": {"acme-probe": {
            "command": "${extensionPath}${/}probe.py",
            "args": [seen.to_str().unwrap()],
            "env": {"ACME_PROBE_SECRET": "$ACME_PROBE_SECRET"},
            "timeout": 8000
        }}
    });
    std::fs::write(folder.join("qwen-extension.json"), manifest.to_string()).unwrap();

    let qwen = Qwen::new();
    // Installing asks for the setting's value; answer on stdin.
    let install = |value: &str, args: &[&str]| {
        let mut child = qwen
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::thread::sleep(Duration::from_secs(2));
        std::io::Write::write_all(&mut stdin, format!("{value}\n").as_bytes()).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let installed = install(
        INSTALL_SECRET,
        &[
            "extensions",
            "install",
            folder.to_str().unwrap(),
            "--consent",
        ],
    );
    assert!(installed.status.success(), "{}", show(&installed));
    let set = install(
        SET_SECRET,
        &[
            "extensions",
            "settings",
            "set",
            "acme-probe",
            "ACME_PROBE_SECRET",
        ],
    );
    assert!(set.status.success(), "{}", show(&set));
    let listed = qwen.run(&["extensions", "settings", "list", "acme-probe"], &[]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("ACME_PROBE_SECRET"),
        "{}",
        show(&listed)
    );

    // `qwen mcp list` starts the child; the probe records its environment.
    let mcp = qwen.run(&["mcp", "list"], &[]);
    assert!(
        String::from_utf8_lossy(&mcp.stdout).contains("acme-probe"),
        "{}",
        show(&mcp)
    );
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    let env = recorded["env"].as_object().unwrap();
    let delivered = env.values().any(|v| {
        v.as_str()
            .is_some_and(|v| v.contains(INSTALL_SECRET) || v.contains(SET_SECRET))
    });
    let observed = env.get("ACME_PROBE_SECRET").cloned().unwrap_or(Value::Null);
    println!(
        "settings probe: ACME_PROBE_SECRET in the MCP child = {observed}; setting value delivered: {delivered}"
    );
    // Qwen Code 0.24.4: not delivered; the literal placeholder stays.
    assert!(
        !delivered,
        "the setting reached the MCP child: update the settings-credential rule and the docs"
    );
    assert_eq!(observed, "$ACME_PROBE_SECRET");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_clients_validate_structured_content_against_the_output_schema() {
    // The broken server's `invalid-structured-content` adds a property the
    // output schema forbids; both clients must refuse the result, which
    // proves their validation is on when they accept ours.
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let broken = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/broken-server");
    assert!(
        broken.is_file(),
        "cargo xtask e2e builds {}",
        broken.display()
    );
    let base = format!("PROVIDER_CONTEXT_BASE_URL={}", upstream.base_url);
    let server = [
        "env",
        base.as_str(),
        "PROVIDER_CONTEXT_TOKEN=e2e",
        broken.to_str().unwrap(),
        "--defect",
        "invalid-structured-content",
    ];
    let inspector = tokio::task::block_in_place(|| {
        Command::new(cache().join("npm/node_modules/.bin/mcp-inspector"))
            .arg("--cli")
            .args(server)
            .args([
                "--method",
                "tools/call",
                "--tool-name",
                "context_search",
                "--tool-arg",
                "query=x",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    });
    assert!(!inspector.status.success(), "{}", show(&inspector));
    let said = String::from_utf8_lossy(&inspector.stdout).to_string()
        + &String::from_utf8_lossy(&inspector.stderr);
    assert!(
        said.contains("must NOT have additional properties"),
        "{}",
        show(&inspector)
    );

    let python = tokio::task::block_in_place(|| {
        Command::new(cache().join("pyenv/bin/python"))
            .arg(root().join("tests/e2e/python_client.py"))
            .arg("x")
            .arg("--")
            .args(server)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    });
    assert!(!python.status.success(), "{}", show(&python));
    assert!(
        String::from_utf8_lossy(&python.stderr).contains("Additional properties are not allowed"),
        "{}",
        show(&python)
    );
}

/// For an installed `acme-context`: `qwen mcp list` shows it Connected (on
/// a line that also holds `server`, e.g. the command), and a headless run
/// gets the profile text for [`UPSTREAM_ITEMS`] byte for byte. Returns the
/// upstream, for its requests.
async fn answers_through_qwen(qwen: &Qwen, server: &str) -> Upstream {
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let model = Upstream::start(fake_model).await;
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "e2e-token"),
    ];
    assert_qwen_answers(qwen, &model, &env, server);
    upstream
}

/// Qwen's settings with one `httpUrl` server, `acme-context`, that sends a
/// bearer token.
fn configure_http_server(qwen: &Qwen, url: &str, token: &str) {
    let settings = json!({"mcpServers": {"acme-context": {
        "httpUrl": url,
        "headers": {"Authorization": format!("Bearer {token}")},
        "timeout": 8000,
        "includeTools": ["context_search"],
    }}});
    std::fs::create_dir_all(qwen.home.path().join(".qwen")).unwrap();
    std::fs::write(
        qwen.home.path().join(".qwen/settings.json"),
        settings.to_string(),
    )
    .unwrap();
}

/// `qwen mcp list` reports `acme-context` Connected on a line that also
/// names `shown`, and a headless run against the scripted `model` gets the
/// profile's envelope from `context_search` byte for byte.
fn assert_qwen_answers(qwen: &Qwen, model: &Upstream, env: &[(&str, &str)], shown: &str) {
    let mcp = tokio::task::block_in_place(|| qwen.run(&["mcp", "list"], env));
    assert!(
        String::from_utf8_lossy(&mcp.stdout)
            .lines()
            .any(|l| l.contains("acme-context") && l.contains(shown) && l.contains("Connected")),
        "{}",
        show(&mcp)
    );
    let headless = tokio::task::block_in_place(|| qwen.ask(model, env));
    assert!(headless.status.success(), "{}", show(&headless));
    let (_, result) = tool_result(&headless);
    assert_eq!(result["is_error"], false, "{}", show(&headless));
    let expected = expected_envelope();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .lines()
            .any(|l| l == expected),
        "expected line {expected}\n{}",
        show(&headless)
    );
}

/// `ecp new --template local-ts` packaged once for the whole suite: the
/// archive Qwen installs.
fn packaged_typescript() -> PathBuf {
    static PACKAGED: OnceLock<PathBuf> = OnceLock::new();
    PACKAGED.get_or_init(package_typescript).clone()
}

fn package_typescript() -> PathBuf {
    let dir = root().join("target/e2e-work/typescript/acme-context");
    let _ = std::fs::remove_dir_all(&dir);
    let output = ecp(&[
        "new",
        "acme-context",
        "--template",
        "local-ts",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", show(&output));
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["package", dir.to_str().unwrap()])
        .env("npm_config_cache", root().join("target/npm-cache/_npm"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", show(&output));
    dir.join("release/linux.acme-context.tar.gz")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_runs_the_typescript_template_with_node_and_the_envelope_reaches_the_model() {
    let archive = tokio::task::block_in_place(packaged_typescript);
    let qwen = Qwen::new();
    qwen.install(&archive);
    let installed = qwen.home.path().join(".qwen/extensions/acme-context");
    assert!(installed.join("dist/main.js").is_file());
    assert!(
        !installed.join("node_modules").exists(),
        "nothing but the bundle"
    );

    let upstream = answers_through_qwen(&qwen, "node").await;
    let seen = upstream.requests();
    assert_eq!(seen.len(), 1, "one call, one upstream request");
    assert_eq!(seen[0].header("authorization"), Some("Bearer e2e-token"));
}

/// `ecp try` with the real Qwen Code on `PATH` (a `qwen` shim that runs its
/// `cli-entry.js`, as npm's global install does) and `HOME` of its own.
fn ecp_try(qwen: &Qwen, args: &[&str], env: &[(&str, &str)]) -> Output {
    use std::os::unix::fs::PermissionsExt;
    let bin = qwen.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = bin.join("qwen");
    std::fs::write(
        &shim,
        format!("#!/bin/sh\nexec node '{}' \"$@\"\n", qwen_entry().display()),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_ecp"))
        .arg("try")
        .args(args)
        .env("PATH", path)
        .env("HOME", qwen.home.path())
        .env("CARGO_TARGET_DIR", root().join("target/generated"))
        .envs(LIGHT_RELEASE)
        .env("CARGO_NET_OFFLINE", "true")
        .env_remove("ACME_CONTEXT_BASE_URL")
        .env_remove("ACME_CONTEXT_TOKEN")
        .envs(env.iter().copied())
        .current_dir(qwen.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The source Qwen recorded for the installed `acme-context`.
fn installed_source(qwen: &Qwen) -> String {
    let record = qwen
        .home
        .path()
        .join(".qwen/extensions/acme-context/.qwen-extension-install.json");
    let record: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    record["source"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ecp_try_installs_the_archive_into_qwen_and_says_whether_it_connects() {
    let (dir, archive) = packaged();
    let dir = dir.to_str().unwrap();
    let qwen = Qwen::new();

    // Without the endpoint Qwen cannot connect; ecp try says which
    // variables to set.
    let output = tokio::task::block_in_place(|| ecp_try(&qwen, &[dir], &[]));
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let said = String::from_utf8_lossy(&output.stderr);
    // The archive in dist/ was packaged under another HOME, so this user's
    // ecp has no record of making it: packaged again, never trusted.
    assert!(said.contains("was not made by ecp package"), "{said}");
    assert!(
        said.contains("set ACME_CONTEXT_BASE_URL and ACME_CONTEXT_TOKEN"),
        "{said}"
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("Disconnected"),
        "{}",
        show(&output)
    );
    assert_eq!(installed_source(&qwen), archive.display().to_string());

    // With it, the same command replaces its own install and connects.
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let env = [
        ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
        ("ACME_CONTEXT_TOKEN", "e2e-token"),
    ];
    let output = tokio::task::block_in_place(|| ecp_try(&qwen, &[dir], &env));
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("qwen extensions uninstall acme-context"),
        "{}",
        show(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("✓ acme-context") && stdout.contains("Connected"),
        "{stdout}"
    );

    // What someone else installed under the name is left alone without
    // --replace.
    let elsewhere = qwen.home.path().join("elsewhere.tar.gz");
    std::fs::copy(archive, &elsewhere).unwrap();
    let uninstall = qwen.run(&["extensions", "uninstall", "acme-context"], &[]);
    assert!(uninstall.status.success(), "{}", show(&uninstall));
    qwen.install(&elsewhere);
    let output = tokio::task::block_in_place(|| ecp_try(&qwen, &[dir], &env));
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--replace"),
        "{}",
        show(&output)
    );
    assert_eq!(installed_source(&qwen), elsewhere.display().to_string());
    let output = tokio::task::block_in_place(|| ecp_try(&qwen, &[dir, "--replace"], &env));
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    assert_eq!(installed_source(&qwen), archive.display().to_string());
}
