//! `ecp check`: it passes conforming servers (`ecp serve --http`, a built
//! `ecp new` extension as a folder and as an archive), reports the upstream
//! checks as not exercised, and the run as not established, where they
//! never ran (a target that never calls ecp's upstream, the remote adapter
//! checked by URL with a minted token), and fails each deliberately broken
//! server on the check that names its defect.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
};

use serde_json::{Value, json};

fn ecp_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ecp")
}

/// `target/debug/examples/broken-server`, built by `cargo test`.
fn broken_server() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile = deps.parent().unwrap().parent().unwrap();
    profile.join("examples/broken-server")
}

/// Runs `ecp check --format json` with `args` and returns its report.
pub(crate) fn check(args: &[&str]) -> (Option<i32>, Value) {
    check_with_env(args, &[])
}

/// `check` with extra variables in ecp's environment.
fn check_with_env(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Value) {
    let output = Command::new(ecp_bin())
        .args(["check", "--format", "json"])
        .args(args)
        .envs(env.iter().copied())
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON report from ecp check {args:?}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), report)
}

fn with_status<'a>(report: &'a Value, status: &str) -> Vec<&'a str> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == status)
        .map(|c| c["id"].as_str().unwrap())
        .collect()
}

/// The checks that do not apply to a target: the HTTP headers on stdio,
/// and every protocol check for a target that does not speak 2026-07-28.
pub(crate) fn legitimately_not_applicable(check: &Value) -> bool {
    let reason = check["reason"].as_str().unwrap_or("");
    check["status"] == "not-applicable"
        && ((check["id"] == "http-headers" && reason == "stdio carries no headers")
            || (PROTOCOL_CHECKS.contains(&check["id"].as_str().unwrap_or(""))
                && reason.starts_with("the target speaks ")
                && reason.contains(", not 2026-07-28: ")))
}

const PROTOCOL_CHECKS: [&str; 6] = [
    "discover",
    "result-type",
    "cache-hints",
    "stateless-call",
    "request-meta",
    "http-headers",
];

fn assert_conforms(code: Option<i32>, report: &Value) {
    assert_eq!(
        with_status(report, "fail"),
        Vec::<&str>::new(),
        "{report:#}"
    );
    let not_run: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !["pass", "warn"].contains(&c["status"].as_str().unwrap()))
        .filter(|c| !legitimately_not_applicable(c))
        .collect();
    assert!(not_run.is_empty(), "{not_run:#?}");
    assert_eq!(report["verdict"], "conforms", "{report:#}");
    assert_eq!(report["not_exercised"], 0, "{report:#}");
    assert_eq!(code, Some(0));
    assert!(with_status(report, "pass").len() >= 26);
    // Every canary reached the target, and none came back.
    assert!(
        reason(report, "redaction").contains(
            "clean of the query, the token, the endpoint and the upstream body, each of which reached the target"
        ),
        "{report:#}"
    );
}

/// `ecp check --url URL`, with `token` passed through `--token-env`.
async fn check_url(url: &str, token: Option<&str>) -> std::process::Output {
    let mut command = Command::new(ecp_bin());
    command.args(["check", "--format", "json", "--url", url]);
    if let Some(token) = token {
        command
            .args(["--token-env", "ECP_TEST_BEARER"])
            .env("ECP_TEST_BEARER", token);
    }
    tokio::task::spawn_blocking(move || command.stdin(Stdio::null()).output().unwrap())
        .await
        .unwrap()
}

/// A URL target of ecp's own adapter: nothing fails and every protocol
/// check passes, but the checks that need ecp's upstream never ran (ecp
/// cannot point a URL's upstream): not established, exit 2, saying how.
fn assert_not_established_by_url(output: &std::process::Output) {
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(
        with_status(&report, "fail"),
        Vec::<&str>::new(),
        "{report:#}"
    );
    assert!(with_status(&report, "pass").contains(&"input-schema"));
    assert!(
        with_status(&report, "not-exercised").contains(&"render-vectors"),
        "no V1 binding behind a URL"
    );
    // ecp's remote adapter keeps every 2026-07-28 rule over HTTP.
    assert_eq!(report["revisions"], json!(["2025-11-25", "2026-07-28"]));
    assert_eq!(protocol_statuses(&report), all("pass", &[]), "{report:#}");
    assert_eq!(report["verdict"], "not-established", "{report:#}");
    assert_eq!(report["unexercised_groups"], json!(["upstream", "output"]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: conformance is not established")
            && stderr.contains("= help: check the server as ecp starts it"),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(2), "{report:#}");
}

#[test]
fn ecp_serve_http_conforms_even_with_a_dead_proxy_in_the_environment() {
    let dead = format!("http://127.0.0.1:{}", crate::proxy::free_port());
    let (code, report) = check_with_env(
        &["--", ecp_bin(), "serve", "--http"],
        &[
            ("HTTP_PROXY", &dead),
            ("http_proxy", &dead),
            ("NO_PROXY", ""),
        ],
    );
    assert_conforms(code, &report);
}

/// A server that answers from a corpus file of its own never calls ecp's
/// upstream: the upstream and output checks, and the canaries it never
/// got, are not exercised, and the run establishes nothing (exit 2).
#[test]
fn a_target_that_never_calls_the_upstream_is_not_established() {
    let corpus = crate::cli::corpus();
    let (code, report) = check(&["--", ecp_bin(), "serve", "--fixture", &corpus]);
    let not_exercised = with_status(&report, "not-exercised");
    assert!(
        not_exercised.contains(&"render-vectors") && not_exercised.contains(&"cancellation"),
        "{report:#}"
    );
    for check in report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "not-exercised" && c["id"] != "redaction")
    {
        assert!(check["reason"].as_str().unwrap().starts_with(
            "no successful baseline call: the target never called the scripted upstream"
        ));
        assert!(
            check["exercise"]
                .as_str()
                .is_some_and(|how| how.contains("--cassette FILE")),
            "{check:#}"
        );
    }
    assert_eq!(with_status(&report, "not-applicable"), ["http-headers"]);
    // The query reached it and stayed out; ecp's token, endpoint and
    // upstream body never reached it, so they prove nothing.
    assert_eq!(status(&report, "redaction"), "not-exercised", "{report:#}");
    assert_eq!(
        reason(&report, "redaction"),
        "results and stderr clean of the query, which reached the target; the token, the endpoint and the upstream body never did, so nothing shows they would be kept out"
    );
    assert_eq!(
        with_status(&report, "fail"),
        Vec::<&str>::new(),
        "{report:#}"
    );
    assert_eq!(report["verdict"], "not-established", "{report:#}");
    assert_eq!(
        report["unexercised_groups"],
        json!(["inputs", "upstream", "output"])
    );
    assert_eq!(code, Some(2), "no verdict of conformance: {report:#}");
}

#[test]
fn every_broken_server_fails_on_the_check_that_names_its_defect() {
    let cases = [
        ("wrong-schema", "input-schema"),
        ("missing-annotations", "annotations"),
        ("unescaped-angle", "text-escaping"),
        ("text-over-4000", "text-bound"),
        ("echo-query", "input-errors-redacted"),
        ("accepts-unknown-argument", "unknown-argument"),
        ("retries", "no-retry"),
        ("ignores-cancellation", "cancellation"),
        ("leaks-token", "redaction"),
        ("unstable-errors", "fault-server-error"),
    ];
    let server = broken_server();
    assert!(
        server.is_file(),
        "{} is built by cargo test",
        server.display()
    );
    // The runs are I/O-bound (budgets and faults); run them side by side.
    let runs: Vec<_> = cases
        .iter()
        .map(|&(defect, expected)| {
            let server = server.clone();
            std::thread::spawn(move || {
                let (code, report) = check(&["--", server.to_str().unwrap(), "--defect", defect]);
                (defect, expected, code, report)
            })
        })
        .collect();
    for run in runs {
        let (defect, expected, code, report) = run.join().unwrap();
        let failed = with_status(&report, "fail");
        assert!(
            failed.contains(&expected),
            "{defect}: expected {expected} to fail, failed: {failed:?}"
        );
        assert_eq!(report["verdict"], "does-not-conform", "{defect}");
        assert_eq!(code, Some(1), "{defect}");
    }
}

/// tests/python/profile_server.py: a profile server ecp did not write
/// (Python, standard library only, from the profile), with draft-07
/// schemas of its own, float scores written `1.0` in structuredContent and
/// proxies read by Python's urllib.
pub(crate) fn python_server() -> String {
    std::path::Path::new("tests/python/profile_server.py")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn an_independent_python_server_conforms_even_with_a_dead_proxy_in_the_environment() {
    let dead = format!("http://127.0.0.1:{}", crate::proxy::free_port());
    let proxy_env = [
        ("HTTP_PROXY", dead.as_str()),
        ("http_proxy", dead.as_str()),
        ("HTTPS_PROXY", dead.as_str()),
        ("https_proxy", dead.as_str()),
        ("NO_PROXY", "internal.example"),
    ];
    let server = python_server();
    // Its own draft-07 schemas, and Qwen's published schema files.
    let reports = std::thread::scope(|scope| {
        let runs: Vec<_> = ["own", "qwen"]
            .into_iter()
            .map(|schemas| {
                let (server, proxy_env) = (&server, &proxy_env);
                scope.spawn(move || {
                    check_with_env(&["--", "python3", server, "--schemas", schemas], proxy_env)
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (code, report) in reports {
        assert_conforms(code, &report);
        assert_eq!(
            with_status(&report, "warn"),
            Vec::<&str>::new(),
            "{report:#}"
        );
        assert_eq!(report["warned"], 0);
    }
}

#[test]
fn each_python_defect_is_named_by_its_check() {
    // (defect, status, check, exit code)
    let cases = [
        ("accepts-2001", "fail", "input-schema", 1),
        ("extra-item-properties", "fail", "output-schema", 1),
        ("destructive", "fail", "annotations", 1),
        ("extra-hint", "warn", "annotations", 0),
        ("extra-tool", "warn", "tool-offered", 0),
        ("float-in-text", "fail", "text-serialization", 1),
    ];
    let server = python_server();
    let runs: Vec<_> = cases
        .iter()
        .map(|&(defect, status, id, exit)| {
            let server = server.clone();
            std::thread::spawn(move || {
                let (code, report) = check(&["--", "python3", &server, "--defect", defect]);
                (defect, status, id, exit, code, report)
            })
        })
        .collect();
    for run in runs {
        let (defect, status, id, exit, code, report) = run.join().unwrap();
        let not_passed: Vec<(&str, &str)> = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] != "pass")
            .map(|c| (c["id"].as_str().unwrap(), c["status"].as_str().unwrap()))
            .collect();
        assert!(
            not_passed.contains(&(id, status)),
            "{defect}: expected {id} to {status}: {not_passed:?}"
        );
        assert_eq!(code, Some(exit), "{defect}: {not_passed:?}");
        match defect {
            "accepts-2001" => assert!(
                reason(&report, id).contains("2001 code points"),
                "the reason names the vector: {}",
                reason(&report, id)
            ),
            "extra-hint" => assert!(reason(&report, id).contains("openWorldHint")),
            "extra-tool" => assert!(reason(&report, id).contains("acme_status")),
            // The text is still compared byte for byte with the vectors.
            "float-in-text" => assert!(not_passed.contains(&("render-vectors", "fail"))),
            _ => {}
        }
    }
}

fn status<'a>(report: &'a Value, id: &str) -> &'a str {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
}

pub(crate) fn reason<'a>(report: &'a Value, id: &str) -> &'a str {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["reason"].as_str())
        .unwrap_or("")
}

#[test]
fn a_bare_command_with_another_tool_is_a_warning_a_manifest_decides() {
    let (code, report) = check(&[
        "--",
        broken_server().to_str().unwrap(),
        "--defect",
        "extra-tool",
    ]);
    assert_eq!(with_status(&report, "warn"), ["tool-offered"], "{report:#}");
    assert_eq!(code, Some(0), "a warning does not fail the run");

    // Started from a manifest, `includeTools` decides.
    let dir = tempfile::tempdir().unwrap();
    let manifest = |include: &[&str]| {
        serde_json::json!({
            "name": "acme-context",
            "version": "0.1.0",
            "mcpServers": {"acme-context": {
                "command": "python3",
                "args": [python_server(), "--defect", "extra-tool"],
                "cwd": "${extensionPath}",
                "env": {
                    "PROVIDER_CONTEXT_BASE_URL": "${PROVIDER_CONTEXT_BASE_URL}",
                    "PROVIDER_CONTEXT_TOKEN": "${PROVIDER_CONTEXT_TOKEN}"
                },
                "timeout": 8000,
                "includeTools": include
            }}
        })
        .to_string()
    };
    let path = dir.path().join("qwen-extension.json");
    std::fs::write(&path, manifest(&["context_search"])).unwrap();
    let (code, report) = check(&[dir.path().to_str().unwrap()]);
    assert_conforms(code, &report);
    std::fs::write(&path, manifest(&["context_search", "acme_status"])).unwrap();
    let (code, report) = check(&[dir.path().to_str().unwrap()]);
    assert_eq!(with_status(&report, "fail"), ["tool-offered"], "{report:#}");
    assert_eq!(code, Some(1));
}

/// Qwen fills `${CLAUDE_PLUGIN_ROOT}` as `${extensionPath}` (one filler,
/// `qwen::vars`): `ecp check` starts a server the manifest names by it,
/// from the extension's folder, and leaves no variable literal.
#[test]
fn check_starts_a_manifest_that_names_its_folder_as_claude_plugin_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(python_server(), dir.path().join("server.py")).unwrap();
    let manifest = serde_json::json!({
        "name": "acme-context",
        "version": "0.1.0",
        "mcpServers": {"acme-context": {
            "command": "python3",
            "args": ["${CLAUDE_PLUGIN_ROOT}${/}server.py"],
            "cwd": "${CLAUDE_PLUGIN_ROOT}",
            "env": {
                "PROVIDER_CONTEXT_BASE_URL": "${PROVIDER_CONTEXT_BASE_URL}",
                "PROVIDER_CONTEXT_TOKEN": "${PROVIDER_CONTEXT_TOKEN}"
            },
            "timeout": 8000,
            "includeTools": ["context_search"]
        }}
    });
    std::fs::write(dir.path().join("qwen-extension.json"), manifest.to_string()).unwrap();
    let (code, report) = check(&[dir.path().to_str().unwrap()]);
    assert_conforms(code, &report);
}

#[test]
fn a_built_extension_conforms_as_a_folder_and_as_an_archive() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("acme-context");
    let new = Command::new(ecp_bin())
        .args([
            "new",
            "acme-context",
            "--yes",
            "--dir",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(new.status.success());
    crate::cli::share_vendored_runtime(&dir);
    // The dev build: what is checked here is the extension's behaviour,
    // not its release profile (the packaging tests build that), without
    // its 100 MB of debug information.
    let built = crate::cli::cargo_dev_build(&dir, "acme-context");
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    let status = Command::new("strip")
        .arg(&built)
        .arg("-o")
        .arg(dir.join("dist/main"))
        .status()
        .unwrap();
    assert!(status.success());
    let built = dir.join("dist/main");

    let (code, report) = check(&[dir.to_str().unwrap()]);
    assert_conforms(code, &report);

    let out = temp.path().join("out");
    let package = Command::new(ecp_bin())
        .args([
            "package",
            dir.to_str().unwrap(),
            "--format",
            "zip",
            "--out-dir",
            out.to_str().unwrap(),
        ])
        .args(["--binary", built.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        package.status.success(),
        "{}",
        String::from_utf8_lossy(&package.stderr)
    );
    let (code, report) = check(&[out.join("linux.x64.acme-context.zip").to_str().unwrap()]);
    assert_conforms(code, &report);
    // The same provider as Qwen's Auto Recall hook, from the folder and
    // from the archive.
    crate::auto_recall::assert_hook_conforms(&dir);
    crate::auto_recall::assert_hook_conforms(&out.join("linux.x64.acme-context.zip"));

    // The same binary as the remote adapter, checked by URL with a token.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use crate::{
            jwt::{Signer, claims, jwks},
            remote::{RemoteServer, auth_args},
        };
        use ecp::check::upstream::{Reply, Upstream};

        let upstream = Upstream::start(|_| Reply::json(r#"{"items":[]}"#)).await;
        let signer = Signer::es256("k1");
        let jwks_path = temp.path().join("jwks.json");
        std::fs::write(&jwks_path, jwks(&[&signer])).unwrap();
        let args = auth_args(&jwks_path);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = RemoteServer::start_program(
            &dir.join("dist/main"),
            &args,
            &[
                ("ACME_CONTEXT_BASE_URL", &upstream.base_url),
                ("ACME_CONTEXT_TOKEN", "upstream-token"),
            ],
        )
        .await;
        let token = signer.token(&claims(&server.url));
        assert_not_established_by_url(&check_url(&server.url, Some(&token)).await);
        assert!(
            server.events("request").len() >= 3,
            "the checks went through dist/main --listen:\n{}",
            server.stderr()
        );
    });
}

#[test]
fn call_prints_one_result() {
    let corpus = crate::cli::corpus();
    let output = Command::new(ecp_bin())
        .args([
            "call",
            "release train",
            "--",
            ecp_bin(),
            "serve",
            "--fixture",
            &corpus,
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed["untrusted_external_context"]["items"][0]["id"],
        "release-train"
    );

    let output = Command::new(ecp_bin())
        .args(["call", "x", "--url", "http://127.0.0.1:9/mcp", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "two targets are refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_adapter_is_checked_by_url_with_a_minted_token() {
    use crate::{
        jwt::{Signer, claims, jwks},
        remote::{RemoteServer, auth_args},
    };

    let signer = Signer::es256("k1");
    let dir = tempfile::tempdir().unwrap();
    let jwks_path = dir.path().join("jwks.json");
    std::fs::write(&jwks_path, jwks(&[&signer])).unwrap();
    let corpus = crate::cli::corpus();
    let mut args = vec!["--fixture".to_owned(), corpus];
    args.extend(auth_args(&jwks_path));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = RemoteServer::start(&args, &[]).await;
    let token = signer.token(&claims(&server.url));
    assert_not_established_by_url(&check_url(&server.url, Some(&token)).await);

    // Without the token the endpoint refuses the handshake: could not run.
    let output = check_url(&server.url, None).await;
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The protocol checks' statuses of a report, in catalogue order.
fn protocol_statuses(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| PROTOCOL_CHECKS.contains(&c["id"].as_str().unwrap()))
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The Python server over HTTP (`--listen 0`, its URL on stdout), with a
/// dead upstream: its calls fail, its protocol answers do not need one.
struct PythonHttp {
    child: std::process::Child,
    url: String,
}

impl PythonHttp {
    fn start(extra: &[&str]) -> PythonHttp {
        use std::io::BufRead;
        let dead = format!("http://127.0.0.1:{}/", crate::proxy::free_port());
        let mut child = Command::new("python3")
            .arg(python_server())
            .args(["--stateless", "--listen", "0"])
            .args(extra)
            .env("PROVIDER_CONTEXT_BASE_URL", dead)
            .env("PROVIDER_CONTEXT_TOKEN", "t")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
        PythonHttp {
            child,
            url: line.trim().to_owned(),
        }
    }
}

impl Drop for PythonHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn all(status: &str, except: &[(&str, &str)]) -> Vec<(String, String)> {
    PROTOCOL_CHECKS
        .iter()
        .map(|id| {
            let status = except
                .iter()
                .find(|(e, _)| e == id)
                .map_or(status, |(_, s)| *s);
            ((*id).to_owned(), status.to_owned())
        })
        .collect()
}

#[test]
fn the_2026_07_28_rules_are_judged_by_the_revision_a_target_speaks() {
    let server = python_server();
    let http = PythonHttp::start(&[]);
    let held = PythonHttp::start(&["--defect", "sse-held"]);
    // Six runs at once: ecp's own runtime and the independent Python
    // server speaking 2026-07-28 beside initialize (over stdio, and the
    // Python one over HTTP), and the Python server of the initialize
    // revisions only.
    let runs: Vec<Vec<String>> = vec![
        vec![
            "--".into(),
            ecp_bin().into(),
            "serve".into(),
            "--http".into(),
        ],
        vec![
            "--".into(),
            "python3".into(),
            server.clone(),
            "--stateless".into(),
        ],
        vec!["--url".into(), http.url.clone()],
        vec!["--".into(), "python3".into(), server.clone()],
        // An older server that answers an unknown method with -32602, as
        // the Python MCP SDK does: still judged by its own revision.
        vec![
            "--".into(),
            "python3".into(),
            server.clone(),
            "--defect".into(),
            "unknown-as-invalid-params".into(),
        ],
        // The Python server over HTTP answering 2026-07-28 requests with
        // event streams held open past the probe's answer time.
        vec!["--url".into(), held.url.clone()],
    ];
    let reports: Vec<(Option<i32>, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|args| {
                scope.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    check(&args)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let both = json!(["2025-11-25", "2026-07-28"]);
    for (code, report) in &reports[..2] {
        assert_conforms(*code, report);
        assert_eq!(report["revisions"], both);
        assert_eq!(
            protocol_statuses(report),
            all("pass", &[("http-headers", "not-applicable")])
        );
    }
    for (_, report) in [&reports[2], &reports[5]] {
        assert_eq!(report["revisions"], both);
        // Its upstream is dead: the call answers isError, nothing to judge.
        assert_eq!(
            protocol_statuses(report),
            all("pass", &[("stateless-call", "not-exercised")]),
            "{report:#}"
        );
        assert!(reason(report, "stateless-call").contains("no envelope to judge"));
    }

    // A server of the initialize revisions only is judged by its revision,
    // whatever error it gives the method it does not know.
    for (report, code) in [(&reports[3], -32601), (&reports[4], -32602)] {
        let (exit, report) = report;
        assert_conforms(*exit, report);
        assert_eq!(report["revisions"], json!(["2025-11-25"]));
        assert_eq!(protocol_statuses(report), all("not-applicable", &[]));
        assert_eq!(
            reason(report, "discover"),
            format!(
                "the target speaks 2025-11-25 (initialize), not 2026-07-28: server/discover answered error {code}"
            )
        );
    }
}

#[test]
fn each_2026_07_28_defect_is_named_by_its_check() {
    let server = python_server();
    let stdio = [
        ("no-result-type", "result-type"),
        ("no-cache-hints", "cache-hints"),
        ("anonymous-discover", "discover"),
        ("lax-meta", "request-meta"),
        ("stateless-unescaped", "stateless-call"),
    ];
    let runs: Vec<_> = stdio
        .iter()
        .map(|&(defect, id)| {
            let server = server.clone();
            std::thread::spawn(move || {
                let (code, report) =
                    check(&["--", "python3", &server, "--stateless", "--defect", defect]);
                (defect, id, code, report)
            })
        })
        .collect();
    // The second process's stderr is watched as the first one's is, and
    // the verdict says when it could not be read to its end.
    let [leak, kept] = ["discover-logs-token", "discover-keeps-stderr"].map(|defect| {
        let server = server.clone();
        std::thread::spawn(move || {
            check(&["--", "python3", &server, "--stateless", "--defect", defect])
        })
    });
    let http = PythonHttp::start(&["--defect", "ignore-headers"]);
    let (_, report) = check(&["--url", &http.url]);
    assert_eq!(
        protocol_statuses(&report),
        all(
            "pass",
            &[
                ("stateless-call", "not-exercised"),
                ("http-headers", "fail")
            ]
        ),
        "{report:#}"
    );
    assert!(
        reason(&report, "http-headers").contains("Mcp-Method tools/call on a tools/list body"),
        "{}",
        reason(&report, "http-headers")
    );
    for run in runs {
        let (defect, id, code, report) = run.join().unwrap();
        assert_eq!(
            protocol_statuses(&report),
            all("pass", &[(id, "fail"), ("http-headers", "not-applicable")]),
            "{defect}: {report:#}"
        );
        assert_eq!(code, Some(1), "{defect}");
    }
    let (code, report) = leak.join().unwrap();
    assert_eq!(
        protocol_statuses(&report),
        all("pass", &[("http-headers", "not-applicable")]),
        "{report:#}"
    );
    let redaction = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "redaction")
        .unwrap();
    assert_eq!(redaction["status"], "fail", "{report:#}");
    assert_eq!(
        reason(&report, "redaction"),
        "stderr of the protocol group's second process holds the token",
        "{report:#}"
    );
    assert_eq!(code, Some(1));
    let (_, report) = kept.join().unwrap();
    assert_eq!(
        reason(&report, "redaction"),
        "results and stderr clean of the query, the token, the endpoint and the upstream body, each of which reached the target (the protocol group's second process's stderr not read to its end: a process it started held it open)",
        "{report:#}"
    );
}

// --- cassettes: what a recording keeps, and what a replay may conclude ----

/// A credential in the shapes a real one takes: a SAS-like signature whose
/// base64 holds `+`, `/` and `=`, with a space form-encoding writes `+`.
const QUERY_SECRET: &str = "sig Kq3/x+Yz9wUe7Rt==";

/// `text` as a JSON string's inside, every character escaped: `/` as
/// `\/`, the others `\uXXXX` alternating lower- and upper-case hex,
/// characters past U+FFFF as surrogate pairs.
fn json_escaped_every_way(text: &str) -> String {
    let mut out = String::new();
    for (at, c) in text.chars().enumerate() {
        if c == '/' {
            out.push_str("\\/");
            continue;
        }
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            if at % 2 == 0 {
                out.push_str(&format!("\\u{unit:04x}"));
            } else {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        }
    }
    out
}

/// A Datasette-shaped upstream on loopback that echoes the credential it
/// was sent in the query (`api_key`), JSON-escaped, and base64-encoded as
/// an HTTP Basic pair and alone, as a debugging echo of a real API does.
fn echoing_upstream(runtime: &tokio::runtime::Runtime) -> ecp::check::upstream::Upstream {
    use base64::Engine as _;
    use ecp::check::upstream::{Reply, Upstream};
    runtime.block_on(Upstream::start(|request| {
        let key: String = request
            .path
            .split_once('?')
            .map(|(_, query)| query)
            .into_iter()
            .flat_map(|query| url::form_urlencoded::parse(query.as_bytes()))
            .find(|(name, _)| name == "api_key")
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("kb-user:{key}"));
        let alone = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&key);
        let body = format!(
            r#"{{"rows":[{{"id":1,"title":"Release train","body":"Trains leave on Tuesdays.","url":"https://kb.example/release","updated":"2026-01-01"}},{{"id":2,"title":"Echo","body":"sent {}"}}],"echo":"{}","url":"{}","auth":"Basic {basic}","token":"{alone}"}}"#,
            json_escaped_every_way(&key),
            json_escaped_every_way(&key),
            request.path.replace('/', "\\/"),
        );
        Reply::Raw {
            status: 200,
            content_type: Some("application/json".into()),
            body: body.into_bytes(),
        }
    }))
}

/// `ecp check ARGS` with `env`, as it ran.
fn check_output(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(ecp_bin())
        .arg("check")
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_recorded_cassette_holds_no_encoded_form_of_the_credential() {
    use base64::Engine as _;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = echoing_upstream(&runtime);
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("kb.cassette.json");
    let server = python_server();
    let mapping = [
        "python3",
        server.as_str(),
        "--api",
        "datasette",
        "--token-in-query",
        "api_key",
    ];
    let mut args = vec![
        "--upstream",
        upstream.base_url.as_str(),
        "--query",
        "release train",
        "--record",
        cassette.to_str().unwrap(),
        "--",
    ];
    args.extend(mapping);
    let (code, report) = check_with_env(&args, &[("PROVIDER_CONTEXT_TOKEN", QUERY_SECRET)]);
    // The target really sent it in its query, form-encoded.
    let sent = upstream.requests();
    assert!(
        sent.iter()
            .any(|r| r.path.contains("api_key=sig+Kq3%2Fx%2BYz9wUe7Rt%3D%3D")),
        "{sent:?}"
    );
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let mut forms = vec![
        QUERY_SECRET.to_owned(),
        "Kq3%2Fx%2BYz9wUe7Rt".to_owned(),
        "Kq3%2fx%2bYz9wUe7Rt".to_owned(),
        json_escaped_every_way(QUERY_SECRET),
        json_escaped_every_way("Kq3/x+Yz9wUe7Rt"),
        "Kq3\\/x+Yz9wUe7Rt".to_owned(),
    ];
    for engine in engines {
        forms.push(engine.encode(QUERY_SECRET));
        let basic = engine.encode(format!("kb-user:{QUERY_SECRET}"));
        // What only the credential decides (past the user's bytes).
        forms.push(basic[12..basic.len() - 4].to_owned());
    }
    for form in &forms {
        assert!(
            !recorded.contains(form.as_str()),
            "the cassette holds {form:?}:\n{recorded}"
        );
    }
    assert!(recorded.contains("api_key=<credential>"), "{recorded}");
    assert!(recorded.contains("Release train"), "{recorded}");
    // The replay (with the suite's own token) still finds its answers.
    assert_conforms(code, &report);
    let (code, report) = check(
        &[
            &["--cassette", cassette.to_str().unwrap(), "--"],
            &mapping[..],
        ]
        .concat(),
    );
    assert_conforms(code, &report);
    drop(upstream);
}

/// A cassette the Python Datasette mapping replays: its one exchange, with
/// `status`, `content_type` and `response`.
fn datasette_cassette(status: u16, content_type: &str, response: &str) -> String {
    json!({
        "ecp_cassette": 1,
        "base_path": "/",
        "exchanges": [{
            "query": "release train",
            "method": "GET",
            "target": "/kb/docs.json?_search=release+train&_shape=objects&_size=5",
            "headers": [["accept", "application/json"]],
            "body": "",
            "status": status,
            "content_type": content_type,
            "response": response,
        }],
    })
    .to_string()
}

const DATASETTE_ROWS: &str = r#"{"rows":[{"id":1,"title":"Release train","body":"Trains leave on Tuesdays.","url":"https://kb.example/release","updated":"2026-01-01"}]}"#;

#[test]
fn a_cassette_that_gives_no_baseline_gives_no_verdict_of_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let server = python_server();
    let run = |name: &str, text: String, format: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap().to_owned();
        let args = [
            "--format",
            format,
            "--cassette",
            &path,
            "--",
            "python3",
            &server,
            "--api",
            "datasette",
        ];
        check_output(&args, &[])
    };
    // As recorded, it conforms.
    let good = run(
        "good.json",
        datasette_cassette(200, "application/json", DATASETTE_ROWS),
        "json",
    );
    let report: Value = serde_json::from_slice(&good.stdout).unwrap();
    assert_conforms(good.status.code(), &report);

    // One edit that leaves no answer to replay: refused before anything runs.
    for (name, status, content_type, says) in [
        (
            "crlf",
            200,
            "application/json\r\nx-injected: 1",
            "content_type",
        ),
        ("switching", 101, "application/json", "status 101"),
        ("continue", 100, "application/json", "status 100"),
        ("not-found", 404, "application/json", "2xx"),
    ] {
        let out = run(
            name,
            datasette_cassette(status, content_type, DATASETTE_ROWS),
            "human",
        );
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{name}: {stdout}\n{stderr}");
        assert!(!stdout.contains("conforms to"), "{name}: {stdout}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says) && stderr.contains("= help:"),
            "{name}: {stderr}"
        );
    }

    // A 2xx answer the mapping cannot use: the suite runs, and says the
    // upstream checks could not run instead of "conforms".
    for format in ["human", "json"] {
        let out = run(
            &format!("unusable-{format}"),
            datasette_cassette(200, "application/json", r#"{"nothing":[]}"#),
            format,
        );
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(!stdout.contains("conforms to"), "{stdout}");
        assert!(
            stderr.contains("error: ") && stderr.contains("= help:"),
            "{stderr}"
        );
        if format == "json" {
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(
                report["undecided"]
                    .as_str()
                    .is_some_and(|why| why.contains("no successful baseline call")),
                "{report:#}"
            );
        }
    }
}

#[test]
fn an_upstream_that_answers_no_call_gives_no_verdict_of_conformance() {
    use ecp::check::upstream::{Reply, Upstream};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::start(|_| Reply::status(404, r#"{"error":"no"}"#)));
    let server = python_server();
    let out = check_output(
        &[
            "--upstream",
            &upstream.base_url,
            "--query",
            "release train",
            "--",
            "python3",
            &server,
            "--api",
            "datasette",
        ],
        &[],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(!stdout.contains("conforms to"), "{stdout}");
    assert!(stdout.contains("no successful baseline call"), "{stdout}");
    assert!(stderr.contains("= help:"), "{stderr}");
}

#[test]
fn a_call_shows_no_form_of_the_credential_its_upstream_echoes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = echoing_upstream(&runtime);
    let server = python_server();
    let output = Command::new(ecp_bin())
        .args(["call", "release train", "--", "python3", &server])
        .args(["--api", "datasette", "--token-in-query", "api_key"])
        .env("PROVIDER_CONTEXT_BASE_URL", &upstream.base_url)
        .env("PROVIDER_CONTEXT_TOKEN", QUERY_SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("sent <credential>"), "{stdout}");
    assert!(!stdout.contains("Kq3/x+Yz9wUe7Rt"), "{stdout}");
}

/// Issue 45, finding 10: `--record PATH` whose PATH is a FIFO, a symlink to
/// a file elsewhere or a folder is refused (exit 2) before the target or
/// the recording proxy starts, and the FIFO, the link and what it names
/// are left as they were (as root, `--record /dev/null` once replaced the
/// machine's `/dev/null` with a regular file).
#[test]
fn record_refuses_a_destination_that_is_not_a_regular_file_before_anything_runs() {
    use std::os::unix::fs::FileTypeExt;
    let temp = tempfile::tempdir().unwrap();
    let fifo = temp.path().join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let outside = temp.path().join("outside.json");
    std::fs::write(&outside, "kept").unwrap();
    let link = temp.path().join("link.json");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let folder = temp.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    let started = temp.path().join("started");
    let script = format!("touch '{}'; exit 3", started.display());
    for (destination, what) in [(&fifo, "a FIFO"), (&link, "a symlink"), (&folder, "folder")] {
        let output = Command::new(ecp_bin())
            .args(["check", "--upstream", "http://127.0.0.1:9/api", "--record"])
            .arg(destination)
            .args(["--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains("error: ") && stderr.contains(what) && stderr.contains("= help: "),
            "{what}: {stderr}"
        );
        assert!(!started.exists(), "{what}: the target was started");
    }
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept");
    assert!(folder.is_dir());
}
