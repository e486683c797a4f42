//! Issue 29, "any REST API": an extension mapped to a real search service
//! nobody here wrote (tests/support/services.rs: Datasette from PyPI,
//! json-server from npm, on loopback) is proven by `ecp check --upstream`
//! against the live service, recorded, and again from its cassette
//! offline; an independent mapping with one defect fails on the check that
//! names it; and a mapping whose every call fails passes no check that
//! needs a successful call.
//!
//! - Rust: `ecp new kb-context`, its `src/provider.rs` replaced by
//!   `tests/data/any_api/datasette_provider.rs` (Datasette's
//!   `GET kb/docs.json?_search=...&_shape=objects&_size=5`, integer ids).
//! - TypeScript: `ecp new kb-context --template local-ts`, its
//!   `src/provider.ts` replaced by `tests/data/any_api/json_server_provider.ts`
//!   (json-server's `GET docs?q=...&_limit=5`, a top-level array).
//! - Python: `tests/python/profile_server.py --api datasette [--defect X]`.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
};

use serde_json::Value;

use crate::services::{Service, corpus, start_datasette, start_json_server};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What the suite's calls search for: several rows of the corpus hold it,
/// in both services' readings (Datasette: every word; json-server: the
/// phrase).
const QUERY: &str = "release train";

/// A credential the target is given; no cassette may hold it.
const TOKEN: &str = "kb-secret-token-4f1d";

/// The checks that prove something only after a successful baseline call
/// through the same upstream.
const NEED_A_BASELINE: &[&str] = &[
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
    "concurrency",
    "structured-content",
    "text-serialization",
    "text-escaping",
    "text-bound",
];

/// Of those, the ones a mapping on the runtime must PASS (not skip).
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
];

pub(crate) fn show(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `ecp check --format json ARGS`: its exit code and report.
fn check(args: &[&str]) -> (Option<i32>, Value) {
    let (code, report, _) = check_saying(args);
    (code, report)
}

/// [`check`], with what it said on stderr.
fn check_saying(args: &[&str]) -> (Option<i32>, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["check", "--format", "json"])
        .args(args)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .envs(crate::cli::LIGHT_RELEASE)
        .env("KB_CONTEXT_TOKEN", TOKEN)
        .env("PROVIDER_CONTEXT_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no JSON report from ecp check {args:?}:\n{}", show(&output)));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), report, stderr)
}

fn status_of<'a>(report: &'a Value, id: &str) -> Option<&'a str> {
    report["checks"]
        .as_array()?
        .iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["status"].as_str())
}

fn reason_of<'a>(report: &'a Value, id: &str) -> &'a str {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == id))
        .and_then(|c| c["reason"].as_str())
        .unwrap_or("")
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

/// Nothing failed, exit 0, and every check a mapping must pass passed.
fn assert_proven(what: &str, code: Option<i32>, report: &Value) {
    assert_eq!(
        with_status(report, "fail"),
        Vec::<&str>::new(),
        "{what}: {report:#}"
    );
    assert_eq!(code, Some(0), "{what}: {report:#}");
    for id in MUST_PASS {
        assert_eq!(
            status_of(report, id),
            Some("pass"),
            "{what}: {id} must pass ({}): {report:#}",
            reason_of(report, id)
        );
    }
    assert_eq!(report["failed"], 0, "{what}: {report:#}");
}

/// The adapted mapping file, at most 80 lines, written over `dest`.
fn adapt(source: &str, dest: &Path) {
    let text =
        std::fs::read_to_string(Path::new(ROOT).join("tests/data/any_api").join(source)).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 80,
        "{source} is {lines} lines; a mapping fits in 80"
    );
    assert!(
        dest.is_file(),
        "ecp new wrote no {} to replace",
        dest.display()
    );
    std::fs::write(dest, text).unwrap();
}

/// `ecp new --auth none`: the manifest passes the endpoint and no
/// credential variable (issue 47: a service without authentication).
fn no_credential_in_the_manifest(dir: &Path) {
    let manifest = std::fs::read_to_string(dir.join("qwen-extension.json")).unwrap();
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    let env = &manifest["mcpServers"]["kb-context"]["env"];
    assert_eq!(
        env,
        &serde_json::json!({"KB_CONTEXT_BASE_URL": "${KB_CONTEXT_BASE_URL}"}),
        "{manifest:#}"
    );
}

/// What every generated extension's tests say while they serve the V1
/// example to a mapping of another API (issue 47).
const RECORD_HINT: &str = "these tests serve the Generic HTTP Search V1 example until your service's own answers are recorded";

/// The extension's own generated tests (`tests` runs them): before its
/// service's answers are recorded they fail, saying how to record them (the
/// mapping no longer reads the V1 example); once `tests/upstream.cassette.json`
/// is recorded they pass, serving that answer. Then live against
/// `service`, recording; then the service stopped and the same suite from
/// the cassette alone. `logged` is what the service's own log shows of the
/// mapping's request.
fn prove_live_then_offline(dir: &Path, service: Service, logged: &str, tests: impl Fn() -> Output) {
    let unrecorded = tests();
    assert!(!unrecorded.status.success(), "{}", show(&unrecorded));
    assert!(
        show(&unrecorded).contains(RECORD_HINT),
        "{}",
        show(&unrecorded)
    );
    let cassette = &dir.join("tests/upstream.cassette.json");
    let target = dir.to_str().unwrap();
    let (code, report, said) = check_saying(&[
        target,
        "--upstream",
        &service.base_url,
        "--query",
        QUERY,
        "--record",
        cassette.to_str().unwrap(),
    ]);
    assert_proven("live", code, &report);
    // The target starts twice (recording, then checking); which build runs
    // is said once.
    assert_eq!(said.matches("note: running ").count(), 1, "{said}");
    let recorded = std::fs::read_to_string(cassette)
        .unwrap_or_else(|e| panic!("--record wrote no {}: {e}", cassette.display()));
    let _: Value = serde_json::from_str(&recorded).expect("the cassette is JSON");
    assert!(
        !recorded.contains(TOKEN),
        "the cassette holds the credential:\n{recorded}"
    );
    assert!(
        recorded.contains("Release train"),
        "the cassette holds the service's answer:\n{recorded}"
    );
    let log = service.output();
    assert!(
        log.contains(logged),
        "the live run reached the service ({logged:?}):\n{log}"
    );
    service.stop();

    let (code, report) = check(&[target, "--cassette", cassette.to_str().unwrap()]);
    assert_proven("offline", code, &report);
    // The same mapping as Qwen's Auto Recall hook, from the same cassette.
    let (code, report) = check(&["--hook", target, "--cassette", cassette.to_str().unwrap()]);
    let failed: Vec<&Value> = (report["checks"].as_array().into_iter().flatten())
        .filter(|c| c["status"] != "pass")
        .collect();
    assert_eq!((code, failed), (Some(0), vec![]), "the hook: {report:#}");
    // One call, offline, with the service's recorded answer.
    let call = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .args(["call", target, QUERY, "--cassette"])
        .arg(cassette)
        .env("CARGO_TARGET_DIR", crate::cli::generated_target())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(call.status.code(), Some(0), "{}", show(&call));
    let result: Value =
        serde_json::from_slice(&call.stdout).unwrap_or_else(|_| panic!("{}", show(&call)));
    assert_eq!(
        result["untrusted_external_context"]["items"][0]["title"], "Release train",
        "{result:#}"
    );
    let recorded = tests();
    assert!(recorded.status.success(), "{}", show(&recorded));
}

#[test]
fn the_services_answer_the_shapes_the_mappings_read() {
    let datasette = start_datasette(&corpus());
    let (status, body) = datasette.get("kb/docs.json?_search=release+train&_shape=objects&_size=5");
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let rows = answer["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{answer:#}");
    assert_eq!(rows[0]["id"], 1, "an INTEGER PRIMARY KEY is a JSON number");
    assert_eq!(rows[0]["title"], "Release train");
    for key in ["body", "url", "updated"] {
        assert!(rows[0][key].is_string(), "{key}: {answer:#}");
    }
    // Six asked, six given: the corpus has more than five hits.
    let (_, body) = datasette.get("kb/docs.json?_search=release+train&_shape=objects&_size=6");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["rows"].as_array().unwrap().len(), 6);
    // No hit is an empty list; an unknown database is a 404.
    let (status, body) = datasette.get("kb/docs.json?_search=zzzz&_shape=objects&_size=5");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["rows"],
        serde_json::json!([])
    );
    assert_eq!(datasette.get("missing/docs.json?_search=x").0, 404);

    let json_server = start_json_server(&corpus());
    let (status, body) = json_server.get("docs?q=release+train&_limit=5");
    assert_eq!(status, 200, "{body}");
    let rows: Value = serde_json::from_str(&body).unwrap();
    let rows = rows.as_array().expect("a top-level array");
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["id"], 1);
    let (_, body) = json_server.get("docs?q=nothing+like+this&_limit=5");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        serde_json::json!([])
    );
    assert_eq!(json_server.get("missing?q=x").0, 404);
}

#[test]
fn a_rust_mapping_of_datasette_is_proven_live_and_from_its_cassette() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("kb-context");
    let new = crate::cli::ecp(&[
        "new",
        "kb-context",
        "--auth",
        "none",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(new.status.success(), "{}", show(&new));
    no_credential_in_the_manifest(&dir);
    adapt("datasette_provider.rs", &dir.join("src/provider.rs"));
    // `ecp check` builds the source folder itself (cargo's dev profile).
    let service = start_datasette(&corpus());
    let cargo_test = || {
        Command::new(env!("CARGO"))
            .args(["test", "--offline", "--quiet"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", crate::cli::generated_target())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    prove_live_then_offline(
        &dir,
        service,
        "GET /kb/docs.json?_search=release",
        cargo_test,
    );
}

fn npm(dir: &Path, args: &[&str]) {
    let output = npm_output(dir, args);
    assert!(output.status.success(), "npm {args:?}: {}", show(&output));
}

/// `npm ARGS` in `dir`, with the shared cache, offline first, quiet.
pub(crate) fn npm_output(dir: &Path, args: &[&str]) -> Output {
    Command::new("npm")
        .args(args)
        .current_dir(dir)
        .env("npm_config_cache", crate::cli::npm_cache())
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_prefer_offline", "true")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("npm: {e}"))
}

#[test]
fn a_typescript_mapping_of_json_server_is_proven_live_and_from_its_cassette() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("kb-context");
    let new = crate::cli::ecp(&[
        "new",
        "kb-context",
        "--template",
        "local-ts",
        "--auth",
        "none",
        "--yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(new.status.success(), "{}", show(&new));
    no_credential_in_the_manifest(&dir);
    adapt("json_server_provider.ts", &dir.join("src/provider.ts"));
    npm(&dir, &["ci"]);
    npm(&dir, &["run", "build"]);
    assert!(dir.join("dist/main.js").is_file());

    // The corpus with every title an array, as search engines store
    // fields (tantivy): the mapping takes the first string.
    let rows: Value = serde_json::from_str(&std::fs::read_to_string(corpus()).unwrap()).unwrap();
    let rows: Vec<Value> = (rows.as_array().unwrap().iter())
        .map(|row| {
            let mut row = row.clone();
            row["title"] = serde_json::json!([row["title"].clone(), "a second value"]);
            row
        })
        .collect();
    let arrays = temp.path().join("array-titles.json");
    std::fs::write(&arrays, serde_json::to_string(&rows).unwrap()).unwrap();
    let service = start_json_server(&arrays);
    prove_live_then_offline(&dir, service, "GET /docs?q=release", || {
        npm_output(&dir, &["test"])
    });
}

/// tests/python/profile_server.py, mapping Datasette's API.
fn python_mapping(extra: &[&str]) -> Vec<String> {
    let server = Path::new(ROOT).join("tests/python/profile_server.py");
    let mut command = vec![
        "python3".to_owned(),
        server.display().to_string(),
        "--api".to_owned(),
        "datasette".to_owned(),
    ];
    command.extend(extra.iter().map(|s| (*s).to_owned()));
    command
}

/// `ecp check --upstream BASE --query QUERY -- python3 profile_server.py
/// --api datasette EXTRA...`.
fn check_python(base_url: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["--upstream", base_url, "--query", QUERY, "--"];
    let command = python_mapping(extra);
    args.extend(command.iter().map(String::as_str));
    check(&args)
}

#[test]
fn each_defective_mapping_fails_on_the_check_that_names_it() {
    let service = start_datasette(&corpus());
    let base_url = service.base_url.clone();
    // (defect, the checks of which one must fail)
    let cases: &[(&str, &[&str])] = &[
        ("retry", &["no-retry"]),
        ("follow-redirect", &["fault-redirect"]),
        ("no-cap", &["fault-oversized"]),
        ("echo-query", &["redaction"]),
        ("six-items", &["structured-content", "hostile-responses"]),
        ("ignore-cancel", &["cancellation"]),
        // Datasette reads the query as FTS5 syntax: the profile's valid
        // input `<script> "x"` is a 400 from the real service.
        ("raw-search", &["valid-inputs"]),
    ];
    // The runs are I/O-bound (budgets and faults); run them side by side,
    // with the conforming mapping.
    let runs = std::thread::scope(|scope| {
        let base_url = &base_url;
        let conforming = scope.spawn(move || check_python(base_url, &[]));
        let defective: Vec<_> = cases
            .iter()
            .map(|&(defect, expected)| {
                scope.spawn(move || {
                    (
                        defect,
                        expected,
                        check_python(base_url, &["--defect", defect]),
                    )
                })
            })
            .collect();
        (
            conforming.join().unwrap(),
            defective
                .into_iter()
                .map(|run| run.join().unwrap())
                .collect::<Vec<_>>(),
        )
    });
    let ((code, report), defective) = runs;
    // Every run is judged before an assertion stops the test.
    let mut wrong = Vec::new();
    for (defect, expected, (code, report)) in defective {
        let failed = with_status(&report, "fail");
        if !expected.iter().any(|id| failed.contains(id)) || code != Some(1) {
            wrong.push(format!(
                "{defect}: expected one of {expected:?} to fail (exit 1); exit {code:?}, failed: {failed:?}\n{report:#}"
            ));
        }
    }
    if !wrong.is_empty() {
        eprintln!("{}", wrong.join("\n\n"));
    }
    assert_proven("the conforming Python mapping", code, &report);
    // Each valid input was answered as the real service answered it.
    assert!(
        reason_of(&report, "valid-inputs")
            .ends_with("calls, each answered as the real service answered it"),
        "{report:#}"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    drop(service);
}

#[test]
fn a_mapping_whose_every_call_fails_passes_nothing_that_needs_a_call() {
    let service = start_datasette(&corpus());
    // A database Datasette does not have: every request is a 404.
    let (code, report) = check_python(&service.base_url, &["--database", "missing"]);
    // It ran (a report), and with no successful call it gives no verdict
    // of conformance: exit 2 (undecided) unless a check failed.
    assert_ne!(code, Some(0), "{report:#}");
    assert!(
        report["undecided"]
            .as_str()
            .is_some_and(|why| why.starts_with("no successful baseline call")),
        "{report:#}"
    );
    assert_eq!(report["verdict"], "not-established", "{report:#}");
    for id in NEED_A_BASELINE {
        assert_eq!(
            status_of(&report, id),
            Some("not-exercised"),
            "{id} without a successful call: {report:#}"
        );
        assert!(
            reason_of(&report, id).starts_with("no successful baseline call"),
            "{id}: {}",
            reason_of(&report, id)
        );
    }
    assert_eq!(
        report["not_exercised"].as_u64().unwrap() as usize,
        with_status(&report, "not-exercised").len()
    );
}

/// The Quickstart's next step (`$EDITOR src/provider.rs` maps another
/// API), then plain `ecp check .` against ecp's scripted V1 upstream: the
/// mapping never gets an answer it can use, so nothing through the
/// upstream ran. That is no verdict of conformance (exit 2), in words and
/// in JSON, and the run says which groups and what command would run them.
#[test]
fn a_remapped_rust_mapping_checked_without_its_api_is_not_established() {
    let temp = tempfile::tempdir().unwrap();
    // A name of its own: the binary's path in the shared target folder is
    // the package's name.
    let dir = temp.path().join("remapped-context");
    let target = dir.to_str().unwrap();
    let new = crate::cli::ecp(&[
        "new",
        "remapped-context",
        "--auth",
        "none",
        "--yes",
        "--dir",
        target,
    ]);
    assert!(new.status.success(), "{}", show(&new));
    adapt("datasette_provider.rs", &dir.join("src/provider.rs"));

    let (code, report) = check(&[target]);
    assert_eq!(code, Some(2), "{report:#}");
    assert_eq!(report["verdict"], "not-established", "{report:#}");
    assert_eq!(report["failed"], 0, "{report:#}");
    for id in MUST_PASS {
        assert_eq!(status_of(&report, id), Some("not-exercised"), "{id}");
    }
    assert_eq!(status_of(&report, "redaction"), Some("not-exercised"));
    assert_eq!(status_of(&report, "http-headers"), Some("not-applicable"));
    let groups = &report["unexercised_groups"];
    assert!(
        groups.as_array().unwrap().iter().any(|g| g == "upstream"),
        "{report:#}"
    );

    let output = crate::cli::ecp(&["check", target]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(!stdout.contains("conforms to"), "{stdout}");
    assert!(
        stdout.contains("conformance to the External Context MCP Profile v1 is NOT established: the inputs, upstream, output and protocol checks were not exercised"),
        "{stdout}"
    );
    assert!(
        stderr.contains("\nerror: conformance is not established: 21 applicable checks were not exercised (inputs, upstream, output and protocol: valid-inputs, upstream-request, "),
        "{stderr}"
    );
    // One way to exercise them all: the mapping's own API.
    assert_eq!(stderr.matches("= help:").count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "= help: a mapping of another API is exercised against that API: `ecp check {target} --upstream URL --query WORDS --record tests/upstream.cassette.json`"
        )) && stderr.contains(&format!("`ecp check {target} --cassette tests/upstream.cassette.json`")),
        "{stderr}"
    );
}

/// Issue 46: a mapping that reads Datasette's integer ids as strings keeps
/// no item of any answer. Every call "succeeds" with nothing, which proves
/// nothing about what the mapping does with an item: no verdict of
/// conformance (exit 2), the reason says so, and the report shows what
/// the mapping made of the real answer (nothing), where a mapping that
/// reads them shows its items.
#[test]
fn a_mapping_that_keeps_no_item_of_a_real_answer_is_not_established() {
    let service = start_datasette(&corpus());
    let base_url = service.base_url.clone();
    let ((code, report), (empty_code, empty), human) = std::thread::scope(|scope| {
        let base_url = &base_url;
        let conforming = scope.spawn(move || check_python(base_url, &[]));
        let empty = scope.spawn(move || check_python(base_url, &["--defect", "string-id"]));
        let human = scope.spawn(move || {
            let mut args = vec!["check", "--upstream", base_url, "--query", QUERY, "--"];
            let command = python_mapping(&["--defect", "string-id"]);
            args.extend(command.iter().map(String::as_str));
            Command::new(env!("CARGO_BIN_EXE_ecp"))
                .args(&args)
                .env("PROVIDER_CONTEXT_TOKEN", TOKEN)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        });
        (
            conforming.join().unwrap(),
            empty.join().unwrap(),
            human.join().unwrap(),
        )
    });
    assert_proven("the conforming Python mapping", code, &report);
    let items = report["mapped"]["items"].as_array().expect("mapped items");
    assert_eq!(items.len(), 5, "{report:#}");
    assert_eq!(items[0]["id"], "1", "{report:#}");
    assert!(
        items[0]["content"].as_str().is_some_and(|c| c
            .starts_with("The release train leaves every second Tuesday")
            && c.ends_with("more characters)")
            && c.chars().count() <= 100),
        "{report:#}"
    );
    assert_eq!(report["mapped"]["query"], QUERY, "{report:#}");

    assert_eq!(empty_code, Some(2), "{empty:#}");
    assert_eq!(empty["verdict"], "not-established", "{empty:#}");
    assert_eq!(empty["mapped"]["items"], serde_json::json!([]), "{empty:#}");
    assert!(
        empty["undecided"]
            .as_str()
            .is_some_and(|why| why.starts_with("the mapping kept no item of the upstream's answer")),
        "{empty:#}"
    );
    for id in ["render-vectors", "fault-malformed", "hostile-responses"] {
        assert_eq!(
            status_of(&empty, id),
            Some("not-exercised"),
            "{id}: {empty:#}"
        );
        assert!(
            reason_of(&empty, id).starts_with("the mapping kept no item"),
            "{id}: {}",
            reason_of(&empty, id)
        );
    }
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert_eq!(human.status.code(), Some(2), "{}", show(&human));
    assert!(
        stdout.contains("mapped: no item kept of the upstream's answer to \"release train\""),
        "{}",
        show(&human)
    );
    assert!(!stdout.contains("conforms to"), "{stdout}");
    drop(service);
}

/// Issue 46: a call that fails because the target's code crashed is told
/// by the crash its stderr shows (the credential taken out), not as a
/// request that never reached the upstream with a hint at the endpoint
/// variable: recording against the real service, and against the
/// scripted upstream.
#[test]
fn a_crash_in_the_target_is_reported_from_its_stderr() {
    let service = start_datasette(&corpus());
    let command = python_mapping(&["--defect", "panic"]);
    let (recording, scripted) = std::thread::scope(|scope| {
        let command = &command;
        let base_url = &service.base_url;
        let recording = scope.spawn(move || {
            let mut args = vec!["check", "--upstream", base_url, "--query", QUERY, "--"];
            args.extend(command.iter().map(String::as_str));
            Command::new(env!("CARGO_BIN_EXE_ecp"))
                .args(&args)
                .env("PROVIDER_CONTEXT_TOKEN", TOKEN)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        });
        let scripted = scope.spawn(move || {
            let mut args = vec!["--"];
            args.extend(command.iter().map(String::as_str));
            check(&args)
        });
        (recording.join().unwrap(), scripted.join().unwrap())
    });
    let panic = "its stderr says: thread 'tokio-runtime-worker' panicked at src/provider.rs:31:42: called `Result::unwrap()` on an `Err` value";
    let stderr = String::from_utf8_lossy(&recording.stderr);
    assert_eq!(recording.status.code(), Some(2), "{}", show(&recording));
    assert!(stderr.contains(panic), "{}", show(&recording));
    assert!(!stderr.contains(TOKEN), "{}", show(&recording));
    assert!(
        !stderr.contains("must take its endpoint"),
        "{}",
        show(&recording)
    );

    let (_, report) = scripted;
    let reason = reason_of(&report, "upstream-request");
    assert!(
        reason.starts_with("no successful baseline call: the target's code crashed; ")
            && reason.contains(panic),
        "{report:#}"
    );
}

/// Issue 46: the redirect fault sends the client to another host (a second
/// loopback listener), so a mapping that follows it is caught there, and
/// one that carries the credential along is told so (not only "a 302
/// redirect gave a success"), through a real service's recorded answers.
#[test]
fn a_followed_redirect_is_seen_on_the_other_host_with_the_token() {
    let service = start_datasette(&corpus());
    let base_url = service.base_url.clone();
    let (keeps, strips) = std::thread::scope(|scope| {
        let base_url = &base_url;
        let keeps =
            scope.spawn(move || check_python(base_url, &["--defect", "redirect-keeps-token"]));
        let strips = scope.spawn(move || check_python(base_url, &["--defect", "follow-redirect"]));
        (keeps.join().unwrap(), strips.join().unwrap())
    });
    let ((keeps_code, keeps), (strips_code, strips)) = (keeps, strips);
    assert_eq!(keeps_code, Some(1), "{keeps:#}");
    assert_eq!(
        status_of(&keeps, "fault-redirect"),
        Some("fail"),
        "{keeps:#}"
    );
    let reason = reason_of(&keeps, "fault-redirect");
    assert!(
        reason.starts_with("the adapter followed the 302 redirect to another host (http://")
            && reason.ends_with("/ecp-redirected) and sent the token there"),
        "{reason}"
    );
    assert!(!reason.contains("127.0.0.1:0"), "{reason}");
    assert_eq!(strips_code, Some(1), "{strips:#}");
    let reason = reason_of(&strips, "fault-redirect");
    assert!(
        reason.starts_with("the adapter followed the 302 redirect to another host")
            && !reason.contains("token"),
        "{reason}"
    );
    drop(service);
}

/// Issue 46: the profile's valid inputs reach the real service. A mapping
/// that hands the query to Datasette's FTS5 query language unescaped
/// fails `valid-inputs` on the input the service refused, with the
/// service's own status; its recorded cassette holds that answer, so the
/// offline run finds the same.
#[test]
fn a_valid_input_the_real_service_refuses_is_the_mappings_finding() {
    let service = start_datasette(&corpus());
    let temp = tempfile::tempdir().unwrap();
    let cassette = temp.path().join("raw.cassette.json");
    let cassette = cassette.to_str().unwrap();
    let command = python_mapping(&["--defect", "raw-search"]);
    let mut args = vec![
        "--upstream",
        &service.base_url,
        "--query",
        QUERY,
        "--record",
        cassette,
        "--",
    ];
    args.extend(command.iter().map(String::as_str));
    let (code, live) = check(&args);
    drop(service);
    let mut offline = vec!["--cassette", cassette, "--"];
    offline.extend(command.iter().map(String::as_str));
    let (offline_code, replayed) = check(&offline);
    for (code, report) in [(code, &live), (offline_code, &replayed)] {
        assert_eq!(code, Some(1), "{report:#}");
        assert_eq!(
            status_of(report, "valid-inputs"),
            Some("fail"),
            "{report:#}"
        );
        assert_eq!(
            reason_of(report, "valid-inputs"),
            "the profile's valid input `angle brackets and quotes` (\"<script> \\\"x\\\"\") gave an error: the real service answered HTTP 400 to the request the mapping made of it (GET /kb/docs.json): escape the query for the service's own syntax (a query language reads quotes, operators and brackets), or send it where the service reads plain text",
            "{report:#}"
        );
    }
    // The other checks are those of a working mapping.
    assert_eq!(with_status(&live, "fail"), ["valid-inputs"], "{live:#}");
    let text = std::fs::read_to_string(cassette).unwrap();
    let recorded: Value = serde_json::from_str(&text).unwrap();
    let inputs: Vec<&str> = (recorded["exchanges"].as_array().unwrap().iter())
        .filter_map(|tape| tape["input"].as_str())
        .collect();
    assert!(inputs.contains(&"angle brackets and quotes"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
}

/// Issue 46: a mapping that rewrites the query's words (a query language
/// wants plain words: hyphens become spaces) never sends ecp's marker
/// words (`fault-timeout`) on. ecp then tells its calls apart by their
/// order, one at a time: the conforming mapping is proven, no fault is
/// "never reached", and a retry is still counted.
#[test]
fn calls_whose_words_the_mapping_rewrites_are_told_apart_by_their_order() {
    let service = start_datasette(&corpus());
    let base_url = service.base_url.clone();
    let ((code, report), (retry_code, retried)) = std::thread::scope(|scope| {
        let base_url = &base_url;
        let plain = scope.spawn(move || check_python(base_url, &["--plain-words"]));
        let retry =
            scope.spawn(move || check_python(base_url, &["--plain-words", "--defect", "retry"]));
        (plain.join().unwrap(), retry.join().unwrap())
    });
    assert_proven("the mapping that sends plain words", code, &report);
    assert!(
        reason_of(&report, "no-retry").contains("told apart by their order, one call at a time"),
        "{report:#}"
    );
    assert_eq!(retry_code, Some(1), "{retried:#}");
    assert_eq!(status_of(&retried, "no-retry"), Some("fail"), "{retried:#}");
    assert!(
        reason_of(&retried, "no-retry").contains("the adapter retried"),
        "{retried:#}"
    );
    drop(service);
}
