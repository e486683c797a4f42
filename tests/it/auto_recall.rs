//! Auto Recall, Qwen's `UserPromptSubmit` hook channel.
//!
//! The query rules exist twice, as a scanner in the Rust runtime and as
//! JavaScript regular expressions in the TypeScript runtime; the vectors
//! file the TypeScript tests read (`runtimes/typescript/test/
//! auto-recall-vectors.json`) is the Rust scanner's output over a table and
//! seeded random prompts, so that JavaScript's own engine holds the Rust
//! one to its backtracking.

use ecp::runtime::hook::auto_recall_query;
use serde_json::{Value, json};

const VECTORS: &str = "runtimes/typescript/test/auto-recall-vectors.json";
const CREDENTIAL: &str = "cred-VALUE-1";

/// Pieces the random prompts are made of: every rule's edges.
const PIECES: &[&str] = &[
    "token",
    "Token",
    "=",
    ":",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\"",
    "'",
    "```",
    "~~~",
    "``",
    "~",
    "api_key",
    "API-KEY",
    "apikey",
    "api.key",
    "Bearer",
    "bearer ",
    "abcdefgh",
    "ABCDEFGHIJKLMNOP",
    ".",
    "-",
    "_",
    ",",
    ";",
    "secret",
    "password",
    "\u{a0}",
    "\u{2028}",
    "\u{85}",
    "\u{feff}",
    "é",
    "\u{1f600}",
    "x",
    "0123456789abcdef0123456789abcdef",
    CREDENTIAL,
    "cred-",
    "what",
    "is",
    "eyJhbGciOi",
    "my-",
    "=\"",
    "\"v",
    "'q w'",
    "/",
    "+",
];

/// A small seeded generator (xorshift), so the vectors are the same on every machine.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn table() -> Vec<String> {
    [
        "how do I rotate the api_key=abc123 for prod",
        "explain ```rust\nfn main() {}\n``` this",
        "explain ~~~ never closed",
        "a ``` b ~~~ c ``` d",
        "call with Bearer abc.def-ghi now",
        "xBearer abc",
        "token eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSM here",
        "key ghp_abcdefghijklmnopqrstuvwxyz0123456789 end",
        "set \"password\": \"hunter 2\", next",
        "'Secret' = 'a b' c",
        "password=\"unterminated and more",
        "-abcdefgh.abcdefgh.abcdefgh- x",
        "a-0123456789abcdef0123456789abcdef- b",
        "why does cred-VALUE-1 fail",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(["a ".repeat(600), "\u{1f600}".repeat(700), "b".repeat(5000)])
    .collect()
}

fn vectors() -> Value {
    let credentials = vec![CREDENTIAL.to_owned()];
    let mut seeded = Seeded(0x05ee_dec9);
    let random = (0..400).map(|_| {
        let pieces = seeded.below(40);
        (0..pieces)
            .map(|_| PIECES[seeded.below(PIECES.len())])
            .collect::<String>()
    });
    let cases: Vec<Value> = table()
        .into_iter()
        .chain(random)
        .map(|prompt| json!({"prompt": prompt, "query": auto_recall_query(&prompt, &credentials)}))
        .collect();
    json!({
        "about": "The Auto Recall query of each prompt, as ecp-runtime's hook/query.rs makes it (written by tests/it/auto_recall.rs; ECP_WRITE_VECTORS=1 rewrites it).",
        "credentials": credentials,
        "cases": cases,
    })
}

#[test]
fn the_typescript_runtimes_vectors_are_the_rust_scanners_output() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(VECTORS);
    let expected = format!("{}\n", serde_json::to_string_pretty(&vectors()).unwrap());
    if std::env::var_os("ECP_WRITE_VECTORS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == expected,
        "{VECTORS} is not what the Rust runtime's scanner makes now: rerun with ECP_WRITE_VECTORS=1, then run the TypeScript runtime's tests"
    );
}

#[test]
fn the_independent_python_hook_makes_the_same_queries() {
    let vectors = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(VECTORS);
    let script = r#"
import json, sys
sys.argv = ["auto_recall_hook.py"]
sys.path.insert(0, "tests/python")
import auto_recall_hook as hook
vectors = json.load(open(sys.stdin.readline().strip()))
wrong = [c for c in vectors["cases"] if hook.safe_query(c["prompt"], vectors["credentials"][0]) != c["query"]]
print(len(vectors["cases"]), len(wrong), json.dumps(wrong[:3]))
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{}", vectors.display()).unwrap();
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    let mut fields = said.trim().splitn(3, ' ');
    let cases: usize = fields.next().unwrap_or("0").parse().unwrap_or(0);
    assert!(cases > 400, "{said}");
    assert_eq!(
        fields.next(),
        Some("0"),
        "queries the Python hook makes otherwise: {said}"
    );
}

fn python_hook() -> String {
    crate::check::python_server().replace("profile_server.py", "auto_recall_hook.py")
}

/// The statuses of a report's checks that did not pass.
fn not_passed(report: &Value) -> Vec<(String, String)> {
    (report["checks"].as_array().into_iter().flatten())
        .filter(|c| c["status"] != "pass")
        .map(|c| {
            (
                c["id"].as_str().unwrap_or("").to_owned(),
                c["status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn an_independent_python_hook_conforms_and_each_planted_defect_is_named_by_its_check() {
    // (defect, the checks that must fail): the Python hook is written from
    // Qwen's contract alone (tests/python/auto_recall_hook.py).
    let cases: &[(&str, &[&str])] = &[
        ("none", &[]),
        ("retry", &["hook-no-retry"]),
        ("reads-prompt", &["hook-submitted-prompt"]),
        ("no-strip", &["hook-stripping", "hook-query-bound"]),
        ("fail-closed", &["hook-fail-open"]),
        ("no-bound", &["hook-query-bound"]),
        ("no-root", &["hook-repository-root"]),
        ("follow-redirect", &["hook-fail-open"]),
        ("logs-prompt", &["hook-redaction"]),
        // Not a defect: the credential as a query parameter, where the
        // API takes it, is no leak of the prompt's credential.
        ("token-in-query", &[]),
        // Not a defect: a service without authentication; the hook is
        // given a credential variable it never reads (a command's default).
        ("no-auth", &[]),
    ];
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap().display().to_string();
    let hook = python_hook();
    let runs: Vec<_> = cases
        .iter()
        .map(|&(defect, failing)| {
            let (root, hook) = (root.clone(), hook.clone());
            std::thread::spawn(move || {
                let args = [
                    "--hook",
                    "--repository-root",
                    &root,
                    "--",
                    "python3",
                    &hook,
                    "--repository-root",
                    &root,
                    "--defect",
                    defect,
                ];
                (defect, failing, crate::check::check(&args))
            })
        })
        .collect();
    for run in runs {
        let (defect, failing, (code, report)) = run.join().unwrap();
        let not_passed = not_passed(&report);
        let failed: Vec<&str> = not_passed
            .iter()
            .filter(|(_, s)| s == "fail")
            .map(|(id, _)| id.as_str())
            .collect();
        for id in failing {
            assert!(
                failed.contains(id),
                "{defect}: {id} should fail: {not_passed:?}"
            );
        }
        if failing.is_empty() {
            assert_eq!(
                not_passed,
                vec![],
                "{defect}: the conforming hook: {report}"
            );
            assert_eq!(code, Some(0));
            assert_eq!(
                report["checks"].as_array().map(Vec::len),
                Some(10),
                "{report}"
            );
        } else {
            assert_eq!(code, Some(1), "{defect}: {not_passed:?}");
        }
    }
}

#[test]
fn a_hook_that_finds_nothing_gets_no_verdict_of_conformance() {
    // Pointed at an endpoint variable it does not read, the hook never
    // searches ecp's upstream: every check is not exercised, exit 2.
    let root = tempfile::tempdir().unwrap();
    let root = root.path().display().to_string();
    let hook = python_hook();
    let args = [
        "--hook",
        "--base-url-env",
        "ELSEWHERE_BASE_URL",
        "--repository-root",
        &root,
        "--",
        "python3",
        &hook,
        "--repository-root",
        &root,
    ];
    let (code, report) = crate::check::check(&args);
    assert_eq!(code, Some(2), "{report}");
    let statuses: Vec<_> = not_passed(&report).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, vec!["not-exercised"; 10], "{report}");
    assert!(
        crate::check::reason(&report, "hook-fail-open")
            .contains("the baseline prompt found no context"),
        "{report}"
    );
}

#[test]
fn a_hook_command_without_its_repository_root_is_refused_before_it_runs() {
    let output = crate::cli::ecp(&["check", "--hook", "--", "python3", &python_hook()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--repository-root DIR"), "{stderr}");
}

/// `ecp check --hook TARGET` (a generated extension's folder or archive,
/// its entry point run with `--hook user-prompt-submit`) conforms, every
/// one of the ten checks passed.
pub(crate) fn assert_hook_conforms(target: &std::path::Path) {
    let (code, report) = crate::check::check(&["--hook", target.to_str().unwrap()]);
    assert_eq!(
        not_passed(&report),
        vec![],
        "{}: {report}",
        target.display()
    );
    assert_eq!(
        report["checks"].as_array().map(Vec::len),
        Some(10),
        "{report}"
    );
    assert_eq!(code, Some(0), "{report}");
}

/// A hook that writes without end is read to its end and kept bounded:
/// 300 MB on stdout and stderr, and ecp's peak memory stays far below it
/// (every run's output used to be kept whole).
#[test]
fn a_hook_that_floods_its_output_is_bounded() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().display().to_string();
    let flood = "head -c 300000000 /dev/zero; head -c 300000000 /dev/zero >&2; echo '{}'";
    let output = std::process::Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kb %M", env!("CARGO_BIN_EXE_ecp")])
        .args([
            "check",
            "--hook",
            "--format",
            "json",
            "--repository-root",
            &root,
            "--",
            "sh",
            "-c",
            flood,
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "not exercised: {stderr}");
    let peak: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak-rss-kb "))
        .and_then(|kb| kb.trim().parse().ok())
        .expect("the peak");
    assert!(peak < 150 * 1024, "ecp peaked at {peak} KB");
}
