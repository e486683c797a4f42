//! Issue 46: a target whose endpoint and credential live in a
//! configuration file, as Qwen's own provider
//! (`@qwen-code/external-context-mem0`) reads its InstanceConfig and
//! DialectV1, gets every upstream, fault and output check from `ecp check
//! --upstream` without a wrapper script; the same target without its file
//! does not conform.
//!
//! The target is `tests/python/profile_server.py --api mem0` (reading the
//! files as the package does); the upstream is
//! `tests/python/mem0_api.py`, a loopback stand-in for a Mem0-compatible
//! search API (`POST /v2/memories/search/`, `Authorization: Token`).

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
};

use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const KEY: &str = "m0-live-key-7c2e91";
const QUERY: &str = "release train";
const CONFIG_ENV: &str = "QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG";

/// Every check that needs a call through the upstream; each must pass.
const MUST_PASS: &[&str] = &[
    "fault-timeout",
    "fault-redirect",
    "fault-rate-limit",
    "fault-server-error",
    "fault-malformed",
    "fault-oversized",
    "fault-invalid-utf8",
    "fault-slow-body",
    "no-retry",
    "cancellation",
    "hostile-responses",
    "structured-content",
    "text-serialization",
    "redaction",
];

/// The stand-in API, killed when dropped.
struct Api {
    child: Child,
    base_url: String,
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_api(base: &str) -> Api {
    let mut child = Command::new("python3")
        .arg(Path::new(ROOT).join("tests/python/mem0_api.py"))
        .args(["--base", base])
        .env("MEM0_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    Api {
        child,
        base_url: line.trim().to_owned(),
    }
}

/// The README's dialect, pointed at Mem0's v2 search, and an instance
/// (schemaVersion 2) naming it; returns the instance's path.
pub fn write_qwen_files(dir: &Path) -> PathBuf {
    let dialect = dir.join("memory.dialect.json");
    let dialect_doc = json!({"dialectVersion": 1, "id": "mem0-platform-v2",
        "auth": "authorization-token",
        "search": {"method": "POST", "path": "/v2/memories/search/", "queryLocation": "json",
            "userIdLocation": "json.filters", "agentIdLocation": "omit", "appIdLocation": "omit",
            "limitField": "top_k"},
        "response": {"collection": "root-array", "idField": "id", "contentField": "memory",
            "titleField": "omit", "uriField": "omit", "scoreField": "score",
            "updatedAtField": "updated_at"}});
    std::fs::write(
        &dialect,
        serde_json::to_string_pretty(&dialect_doc).unwrap(),
    )
    .unwrap();
    let instance = dir.join("memory.instance.json");
    let instance_doc = json!({"schemaVersion": 2, "dialectPath": dialect,
        "endpoint": {"origin": "https://api.mem0.example", "basePath": "", "allowInsecureHttp": false},
        "credentialEnv": "MEM0_API_KEY", "scope": {"userId": "repo-memory"}, "timeoutMs": 5000});
    std::fs::write(
        &instance,
        serde_json::to_string_pretty(&instance_doc).unwrap(),
    )
    .unwrap();
    instance
}

fn show(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `ecp check --format json ARGS` with the live credential in ecp's
/// environment (as the administrator's secret manager exports it).
fn check(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Output) {
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", "--format", "json"])
        .args(args)
        .env("MEM0_API_KEY", KEY)
        .env_remove(CONFIG_ENV)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (output.status.code(), output)
}

fn status_of<'a>(report: &'a Value, id: &str) -> Option<&'a str> {
    report["checks"]
        .as_array()?
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["status"].as_str())
}

fn assert_conforms(what: &str, code: Option<i32>, output: &Output) {
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{what}: no report\n{}", show(output)));
    assert_eq!(code, Some(0), "{what}: {report:#}\n{}", show(output));
    assert_eq!(report["failed"], 0, "{what}: {report:#}");
    for id in MUST_PASS {
        assert_eq!(
            status_of(&report, id),
            Some("pass"),
            "{what}: {id}: {report:#}"
        );
    }
    // The live key never reaches the report.
    assert!(!String::from_utf8_lossy(&output.stdout).contains(KEY));
}

fn server() -> String {
    Path::new(ROOT)
        .join("tests/python/profile_server.py")
        .display()
        .to_string()
}

#[test]
fn a_target_configured_by_qwens_instance_file_gets_every_check() {
    let api = start_api("/mem0");
    let dir = tempfile::tempdir().unwrap();
    let instance = write_qwen_files(dir.path());
    let original = std::fs::read(&instance).unwrap();
    let flag = format!("{CONFIG_ENV}={}", instance.display());
    let server = server();
    let command = ["python3", server.as_str(), "--api", "mem0"];
    let cassette = dir.path().join("mem0.cassette.json");
    let with_file: Vec<&str> = ["--config-file", &flag, "--upstream", &api.base_url]
        .into_iter()
        .chain(["--record", cassette.to_str().unwrap()])
        .chain(["--query", QUERY, "--"])
        .chain(command)
        .collect();
    let without_file: Vec<&str> = ["--upstream", &api.base_url, "--query", QUERY, "--"]
        .into_iter()
        .chain(command)
        .collect();
    let (runs, bare) = std::thread::scope(|scope| {
        let runs = scope.spawn(|| check(&with_file, &[]));
        let bare = scope.spawn(|| check(&without_file, &[]));
        (runs.join().unwrap(), bare.join().unwrap())
    });
    assert_conforms("with --config-file", runs.0, &runs.1);
    // Without its file the target cannot start: no verdict of conformance.
    assert_ne!(bare.0, Some(0), "{}", show(&bare.1));
    assert!(
        !String::from_utf8_lossy(&bare.1.stdout).contains("\"failed\":0"),
        "{}",
        show(&bare.1)
    );
    // The administrator's file is read, never written.
    assert_eq!(std::fs::read(&instance).unwrap(), original);
    drop(api);
    auto_recall_hook_from_the_cassette(dir.path(), &instance, &cassette);
}

/// Qwen's Auto Recall hook as its package configures it (a schemaVersion 3
/// InstanceConfig with `autoRecall.repositoryRoot`, the same dialect),
/// judged by `ecp check --hook` offline from the MCP server's cassette:
/// the hook makes the same request. The hook is the independent Python
/// one with `--api mem0`; with a planted defect it fails the check named.
fn auto_recall_hook_from_the_cassette(dir: &Path, instance: &Path, cassette: &Path) {
    let root = dir.join("repository");
    std::fs::create_dir_all(&root).unwrap();
    let mut v3: Value = serde_json::from_slice(&std::fs::read(instance).unwrap()).unwrap();
    v3["schemaVersion"] = json!(3);
    v3["autoRecall"] = json!({"repositoryRoot": root});
    v3["timeoutMs"] = json!(1500);
    let v3_path = dir.join("memory.auto-recall.json");
    std::fs::write(&v3_path, v3.to_string()).unwrap();
    let flag = format!("{CONFIG_ENV}={}", v3_path.display());
    let hook = Path::new(ROOT).join("tests/python/auto_recall_hook.py");
    let run = |defect: &str| {
        let args = [
            "--hook",
            "--config-file",
            &flag,
            "--cassette",
            cassette.to_str().unwrap(),
        ];
        let command = [
            "--repository-root",
            root.to_str().unwrap(),
            "--",
            "python3",
            hook.to_str().unwrap(),
        ];
        let args: Vec<&str> = args
            .into_iter()
            .chain(command)
            .chain(["--api", "mem0", "--defect", defect])
            .collect();
        let (code, output) = check(&args, &[]);
        let report: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("no report: {}", show(&output)));
        let failing: Vec<String> = (report["checks"].as_array().into_iter().flatten())
            .filter(|c| c["status"] != "pass")
            .map(|c| {
                format!(
                    "{} {}",
                    c["id"].as_str().unwrap_or(""),
                    c["status"].as_str().unwrap_or("")
                )
            })
            .collect();
        (code, failing, report)
    };
    let (code, failing, report) = run("none");
    assert_eq!((code, failing), (Some(0), vec![]), "{report:#}");
    assert_eq!(report["checks"].as_array().map(Vec::len), Some(10));
    let (code, failing, report) = run("no-strip");
    assert_eq!(code, Some(1), "{report:#}");
    assert!(
        failing.contains(&"hook-stripping fail".to_owned()),
        "{failing:?}"
    );
}

/// An extension whose manifest names `QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG`
/// in its server's `env` is recognised without the flag; and one that, as
/// Qwen's own package, names no variable finds it in ecp's environment.
#[test]
fn an_extension_naming_qwens_variable_is_recognised_without_a_flag() {
    let api = start_api("");
    let dir = tempfile::tempdir().unwrap();
    let instance = write_qwen_files(dir.path());
    let server = server();
    let manifest = |env: Value| {
        json!({"name": "external-context-mem0", "version": "0.25.0",
            "mcpServers": {"external-context-mem0": {"command": "python3",
                "args": [server, "--api", "mem0"], "env": env,
                "includeTools": ["context_search"], "timeout": 8000}}})
    };
    let named = dir.path().join("named");
    let inherited = dir.path().join("inherited");
    for (folder, env) in [
        (&named, json!({CONFIG_ENV: instance.display().to_string()})),
        (&inherited, json!({})),
    ] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(
            folder.join("qwen-extension.json"),
            manifest(env).to_string(),
        )
        .unwrap();
    }
    let instance_text = instance.display().to_string();
    let (named_run, inherited_run) = std::thread::scope(|scope| {
        let args = |folder: &Path| {
            vec![
                folder.display().to_string(),
                "--upstream".into(),
                api.base_url.clone(),
                "--query".into(),
                QUERY.into(),
            ]
        };
        let (a, b) = (args(&named), args(&inherited));
        let instance_text = &instance_text;
        let one =
            scope.spawn(move || check(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[]));
        let two = scope.spawn(move || {
            let b: Vec<&str> = b.iter().map(String::as_str).collect();
            check(&b, &[(CONFIG_ENV, instance_text.as_str())])
        });
        (one.join().unwrap(), two.join().unwrap())
    });
    assert_conforms("manifest names the variable", named_run.0, &named_run.1);
    assert_conforms("inherited variable", inherited_run.0, &inherited_run.1);
}

#[test]
fn a_config_file_ecp_cannot_place_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let instance = write_qwen_files(dir.path());
    let mut relative: Value =
        serde_json::from_str(&std::fs::read_to_string(&instance).unwrap()).unwrap();
    relative["dialectPath"] = "memory.dialect.json".into();
    let relative_path = dir.path().join("relative.instance.json");
    std::fs::write(&relative_path, relative.to_string()).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"url": "https://x.example"}"#).unwrap();
    let cases = [
        (
            format!("{CONFIG_ENV}={}", relative_path.display()),
            "is not absolute",
        ),
        (format!("ACME={}", other.display()), "--endpoint-pointer"),
        (
            format!("ACME={}", dir.path().join("missing.json").display()),
            "missing.json",
        ),
        ("no-equals-sign".to_owned(), "not VAR=PATH"),
    ];
    for (flag, said) in cases {
        let (code, output) = check(
            &[
                "--config-file",
                &flag,
                "--upstream",
                "http://127.0.0.1:9/",
                "--",
                "false",
            ],
            &[],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(code, Some(2), "{flag}: {}", show(&output));
        assert!(stderr.starts_with("error: "), "{flag}: {stderr}");
        assert!(
            stderr.contains(said) && stderr.contains("= help: "),
            "{flag}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{flag}: {}", show(&output));
    }
}
