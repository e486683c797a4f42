//! `ecp check --conformance[=REVISION]`: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, [`install::SUITE`]) judges the
//! target, and its result joins ecp's report.
//!
//! - The suite speaks only Streamable HTTP. A target ecp starts (a folder,
//!   an archive, `-- CMD`) is reached through [`shim`], a loopback HTTP
//!   front that starts the server once per session; a URL is given to the
//!   suite as it is. The suite's checks of the HTTP layer itself (the
//!   scenarios of [`TRANSPORT`], and every check named `-http-`) then
//!   judge the shim, not the server: they are reported as the shim's and
//!   weigh nothing in the verdict.
//! - What a one-tool External Context server legitimately fails is the
//!   profile's baseline for the revision (`contracts/conformance/`), one
//!   reason per entry ([`baseline`]); `--conformance-baseline FILE` gives
//!   another, in the same form. A failure outside the baseline fails
//!   `mcp-conformance`; a baselined check that passes is stale and warns
//!   in `mcp-conformance-baseline`.
//! - A run in which no check of the target passed (everything excused,
//!   skipped or the shim's) leaves `mcp-conformance` not exercised, never
//!   passed.
//! - Every check of the suite is in the report under a stable ID,
//!   `REVISION/SCENARIO:CHECK` (`#2`, `#3`... after a check the scenario
//!   reports more than once), with its status: pass, fail, warn,
//!   expected (baselined, with the reason), stale, shim, info or skipped.
//! - A target that does not speak the revision asked for (its
//!   `initialize` agreed on another, and `server/discover` does not list
//!   it) is not bound by that revision's requirements: both checks are
//!   not applicable, and the suite does not run.
//! - The suite runs on its own Node 22, installed once from npm against
//!   ecp's lockfile ([`install`]).

pub mod baseline;
pub mod install;
pub mod shim;

use std::{path::Path, process::Stdio, time::Duration};

use serde::Serialize;
use serde_json::Value;

pub use baseline::{Baseline, BaselineError};
pub use install::Installed;

use super::{Blocked, CheckResult, Status, catalogue::Check, probe::ProbeTarget};

/// The revisions whose frozen requirement sets the suite runs, newest last.
pub const REVISIONS: &[&str] = &["2025-11-25", "2026-07-28"];
/// The revision a stdio server speaks today (the `initialize` handshake).
pub const DEFAULT_REVISION: &str = "2025-11-25";

/// The scenarios that test the HTTP layer only.
pub const TRANSPORT: &[&str] = &[
    "dns-rebinding-protection",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "server-session-lifecycle",
    "http-header-validation",
    "http-custom-header-server-validation",
    // Mcp-Method and Mcp-Name against the body, for tasks.
    "tasks-request-headers",
];

/// How long the whole suite may take.
const SUITE_TIME: Duration = Duration::from_secs(15 * 60);
/// Results read: folders, and bytes of one `checks.json`.
const MAX_SCENARIOS: usize = 512;
const MAX_CHECKS_BYTES: u64 = 8 * 1024 * 1024;

/// The profile's baseline of `revision`.
pub fn profile_baseline(revision: &str) -> Option<Baseline> {
    let text = match revision {
        "2025-11-25" => include_str!("../../../contracts/conformance/2025-11-25.yml"),
        "2026-07-28" => include_str!("../../../contracts/conformance/2026-07-28.yml"),
        _ => return None,
    };
    let source = format!("the profile's baseline for {revision}");
    Baseline::parse(&source, text).ok()
}

/// What `--conformance` asks for, ready to run.
#[derive(Debug, Clone)]
pub struct Conformance {
    pub revision: String,
    pub installed: Installed,
    pub baseline: Baseline,
}

/// The suite's result, in ecp's report.
#[derive(Debug, Clone, Serialize)]
pub struct ConformanceRun {
    /// The suite's package, pinned.
    pub suite: &'static str,
    pub revision: String,
    /// How the suite reached the target.
    pub via: Via,
    /// Where the baseline came from.
    pub baseline: String,
    pub checks: Vec<SuiteCheck>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// A stdio server, through ecp's loopback HTTP shim.
    Shim,
    /// The target's own HTTP endpoint.
    Http,
}

/// One check of the suite.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteCheck {
    /// `REVISION/SCENARIO:CHECK`.
    pub id: String,
    pub status: SuiteStatus,
    /// The suite's message, or the baseline's reason.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuiteStatus {
    Pass,
    Fail,
    Warn,
    /// Failed, and baselined.
    Expected,
    /// Baselined, and passed.
    Stale,
    /// A check of the HTTP layer, which is the shim's.
    Shim,
    Info,
    Skipped,
}

impl SuiteStatus {
    pub fn label(self) -> &'static str {
        match self {
            SuiteStatus::Pass => "pass",
            SuiteStatus::Fail => "fail",
            SuiteStatus::Warn => "warn",
            SuiteStatus::Expected => "expected",
            SuiteStatus::Stale => "stale",
            SuiteStatus::Shim => "shim",
            SuiteStatus::Info => "info",
            SuiteStatus::Skipped => "skipped",
        }
    }
}

/// Whether the suite's `check` of `scenario` tests the HTTP layer only.
pub fn is_transport(scenario: &str, check: &str) -> bool {
    TRANSPORT.contains(&scenario) || check.contains("-http-")
}

/// Runs the suite against `target` (a process is reached through the shim).
pub async fn run(
    conformance: &Conformance,
    target: &ProbeTarget,
) -> Result<ConformanceRun, Blocked> {
    let (shim, url, via) = match target {
        ProbeTarget::Process(launch) => {
            let shim = shim::Shim::start(launch.clone()).await.map_err(|error| {
                Blocked::new(format!("cannot start the HTTP shim on loopback: {error}"))
            })?;
            let url = shim.url.clone();
            (Some(shim), url, Via::Shim)
        }
        ProbeTarget::Http { url, bearer, .. } => {
            if bearer.is_some() {
                return Err(Blocked::with_help(
                    "the conformance suite sends no bearer token",
                    "run it against a loopback instance without authorization (--no-auth), or against the extension's folder",
                ));
            }
            (None, url.clone(), Via::Http)
        }
    };
    let work = tempfile::tempdir()
        .map_err(|e| Blocked::new(format!("cannot make a temporary folder: {e}")))?;
    let results = run_suite(conformance, &url, work.path()).await;
    drop(shim);
    let results = results?;
    Ok(ConformanceRun {
        suite: install::SUITE,
        revision: conformance.revision.clone(),
        via,
        baseline: conformance.baseline.source.clone(),
        checks: classify(conformance, via, results),
    })
}

/// One check as the suite wrote it: scenario, check, status, message.
type Raw = (String, String, String, String);

async fn run_suite(conformance: &Conformance, url: &str, work: &Path) -> Result<Vec<Raw>, Blocked> {
    let baseline = work.join("baseline.yml");
    let output = work.join("results");
    let cannot =
        |e: std::io::Error| Blocked::new(format!("cannot write into {}: {e}", work.display()));
    std::fs::write(&baseline, &conformance.baseline.text).map_err(cannot)?;
    let log = std::fs::File::create(work.join("suite.log")).map_err(cannot)?;
    let log_err = log.try_clone().map_err(cannot)?;
    let mut command = tokio::process::Command::new(&conformance.installed.node);
    command
        .arg(&conformance.installed.suite)
        .args([
            "server",
            "--url",
            url,
            "--requirements",
            &conformance.revision,
        ])
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("-o")
        .arg(&output)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .kill_on_drop(true);
    crate::children::own_group(&mut command);
    let mut child = command.spawn().map_err(|error| {
        Blocked::new(format!(
            "cannot run the suite's Node ({}): {error}",
            conformance.installed.node.display()
        ))
    })?;
    let _group = child.id().map(crate::children::Group::new);
    let waited = tokio::time::timeout(SUITE_TIME, child.wait()).await;
    let said = || {
        let text = std::fs::read(work.join("suite.log")).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        crate::text::outside::block(&tail.join("\n"), 20, 300)
    };
    if waited.is_err() {
        return Err(Blocked::new(format!(
            "the suite did not finish within {} minutes; its last lines:\n{}",
            SUITE_TIME.as_secs() / 60,
            said()
        )));
    }
    let checks = read_results(&output);
    if checks.is_empty() {
        return Err(Blocked::new(format!(
            "the suite wrote no result; its last lines:\n{}",
            said()
        )));
    }
    Ok(checks)
}

/// Every check of a run's results: one folder per scenario,
/// `server-SCENARIO-TIMESTAMP/checks.json`, read bounded.
fn read_results(output: &Path) -> Vec<Raw> {
    let Ok(folders) = std::fs::read_dir(output) else {
        return Vec::new();
    };
    let mut all = Vec::new();
    for folder in folders.flatten().take(MAX_SCENARIOS).map(|e| e.path()) {
        let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // server-<scenario>-2026-12-04T22-37-00-209Z
        let Some(scenario) = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(25)?))
        else {
            continue;
        };
        let file = folder.join("checks.json");
        let small = std::fs::metadata(&file).is_ok_and(|m| m.len() <= MAX_CHECKS_BYTES);
        let listed: Vec<Value> = (small.then(|| std::fs::read(&file).ok()).flatten())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        for check in listed {
            let text = |key: &str| check.get(key).and_then(Value::as_str).unwrap_or_default();
            all.push((
                scenario.to_owned(),
                text("id").to_owned(),
                text("status").to_owned(),
                text("errorMessage").to_owned(),
            ));
        }
    }
    all.sort();
    all
}

fn classify(conformance: &Conformance, via: Via, raw: Vec<Raw>) -> Vec<SuiteCheck> {
    let revision = &conformance.revision;
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    raw.into_iter()
        .map(|(scenario, check, status, message)| {
            let key = format!("{scenario}:{check}");
            let nth = seen.entry(key.clone()).or_default();
            *nth += 1;
            let id = match *nth {
                1 => format!("{revision}/{key}"),
                n => format!("{revision}/{key}#{n}"),
            };
            let expected = conformance.baseline.get(&key);
            let (status, reason) = if via == Via::Shim && is_transport(&scenario, &check) {
                (
                    SuiteStatus::Shim,
                    "a check of the HTTP layer: the shim's, not the server's".to_owned(),
                )
            } else {
                match (status.as_str(), expected) {
                    ("SUCCESS", None) => (SuiteStatus::Pass, String::new()),
                    ("SUCCESS", Some(_)) => {
                        (SuiteStatus::Stale, "baselined, and passes".to_owned())
                    }
                    ("FAILURE" | "WARNING", Some(entry)) => {
                        (SuiteStatus::Expected, entry.reason.clone())
                    }
                    ("FAILURE", None) => (SuiteStatus::Fail, message),
                    ("WARNING", None) => (SuiteStatus::Warn, message),
                    ("INFO", _) => (SuiteStatus::Info, message),
                    _ => (SuiteStatus::Skipped, message),
                }
            };
            SuiteCheck {
                id,
                status,
                reason: crate::text::outside::line(&reason, 500),
            }
        })
        .collect()
}

/// Both checks not applicable: the target does not speak `revision` (it
/// speaks `spoken`), so that revision's requirements do not bind it.
pub fn not_spoken(revision: &str, spoken: &[String]) -> Vec<CheckResult> {
    let why = match spoken {
        [] => {
            format!("the target agreed on no revision, so {revision}'s requirements do not bind it")
        }
        _ => format!(
            "the target speaks {}, not {revision}, so {revision}'s requirements do not bind it",
            spoken.join(" and ")
        ),
    };
    [Check::McpConformance, Check::McpConformanceBaseline]
        .into_iter()
        .map(|check| CheckResult::new(check, Status::NotApplicable, why.clone()))
        .collect()
}

/// The suite's result as ecp's two checks: `mcp-conformance` and
/// `mcp-conformance-baseline`.
pub fn judge(run: &ConformanceRun) -> Vec<CheckResult> {
    let of =
        |status| -> Vec<&SuiteCheck> { run.checks.iter().filter(|c| c.status == status).collect() };
    let named = |checks: &[&SuiteCheck]| {
        let mut ids: Vec<&str> = checks.iter().take(8).map(|c| c.id.as_str()).collect();
        if checks.len() > 8 {
            ids.push("...");
        }
        ids.join(", ")
    };
    let (failed, warned) = (of(SuiteStatus::Fail), of(SuiteStatus::Warn));
    let counted = format!(
        "{} passed, {} expected (baselined with a reason), {} the shim's, of {} checks",
        of(SuiteStatus::Pass).len(),
        of(SuiteStatus::Expected).len(),
        of(SuiteStatus::Shim).len(),
        run.checks.len()
    );
    let suite = if let Some(first) = failed.first() {
        CheckResult::new(
            Check::McpConformance,
            Status::Fail,
            format!(
                "{} failed outside the baseline: {}; {}: {}",
                failed.len(),
                named(&failed),
                first.id,
                first.reason
            ),
        )
    } else if !warned.is_empty() {
        CheckResult::new(
            Check::McpConformance,
            Status::Warn,
            format!(
                "{} warned outside the baseline: {}",
                warned.len(),
                named(&warned)
            ),
        )
    } else if of(SuiteStatus::Pass).is_empty() {
        // Everything excused, skipped or the shim's: nothing of the target
        // was shown to pass.
        let mut result = CheckResult::new(
            Check::McpConformance,
            Status::NotExercised,
            format!("no check of the target passed: {counted}"),
        );
        result.exercise = Some(
            "a baseline that excuses only what the target fails (--conformance-baseline FILE)",
        );
        result
    } else {
        CheckResult::new(Check::McpConformance, Status::Pass, counted)
    };
    let stale = of(SuiteStatus::Stale);
    let current = if stale.is_empty() {
        CheckResult::new(
            Check::McpConformanceBaseline,
            Status::Pass,
            format!(
                "every baselined check that ran still fails ({})",
                run.baseline
            ),
        )
    } else {
        CheckResult::new(
            Check::McpConformanceBaseline,
            Status::Warn,
            format!(
                "{} baselined but passing (the target does more than the baseline expects): {}",
                stale.len(),
                named(&stale)
            ),
        )
    };
    vec![suite, current]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_baselines_parse_with_a_reason_for_every_entry() {
        for revision in REVISIONS {
            let baseline = profile_baseline(revision).unwrap();
            assert!(!baseline.entries.is_empty(), "{revision}");
            assert!(baseline.entries.iter().all(|e| !e.reason.is_empty()));
        }
        assert!(profile_baseline("2024-11-05").is_none());
    }

    #[test]
    fn the_http_layer_is_the_shims_and_the_rest_is_the_servers() {
        assert!(is_transport(
            "dns-rebinding-protection",
            "localhost-host-rebinding-rejected"
        ));
        assert!(is_transport(
            "server-stateless",
            "sep-2575-http-server-meta-invalid-400"
        ));
        assert!(!is_transport(
            "server-stateless",
            "sep-2575-server-implements-discover"
        ));
        assert!(!is_transport("tools-list", "tools-list"));
    }

    fn conformance() -> Conformance {
        Conformance {
            revision: "2025-11-25".into(),
            installed: Installed {
                node: "node".into(),
                suite: "index.js".into(),
            },
            baseline: Baseline::parse(
                "b",
                "server:\n# no prompts\n- prompts-list:prompts-list\n- ping:ping\n",
            )
            .unwrap(),
        }
    }

    fn raw(scenario: &str, check: &str, status: &str) -> Raw {
        (
            scenario.into(),
            check.into(),
            status.into(),
            format!("{check} said so"),
        )
    }

    #[test]
    fn a_failure_outside_the_baseline_fails_and_a_passing_entry_is_stale() {
        let conformance = conformance();
        let checks = classify(
            &conformance,
            Via::Shim,
            vec![
                raw("prompts-list", "prompts-list", "FAILURE"),
                raw("ping", "ping", "SUCCESS"),
                raw("tools-list", "tools-list", "FAILURE"),
                raw(
                    "dns-rebinding-protection",
                    "localhost-host-rebinding-rejected",
                    "FAILURE",
                ),
                raw("server-initialize", "server-initialize", "SUCCESS"),
                raw("prompts-list", "prompts-list", "FAILURE"),
            ],
        );
        let statuses: Vec<(&str, SuiteStatus)> =
            checks.iter().map(|c| (c.id.as_str(), c.status)).collect();
        assert_eq!(
            statuses,
            [
                (
                    "2025-11-25/prompts-list:prompts-list",
                    SuiteStatus::Expected
                ),
                ("2025-11-25/ping:ping", SuiteStatus::Stale),
                ("2025-11-25/tools-list:tools-list", SuiteStatus::Fail),
                (
                    "2025-11-25/dns-rebinding-protection:localhost-host-rebinding-rejected",
                    SuiteStatus::Shim
                ),
                (
                    "2025-11-25/server-initialize:server-initialize",
                    SuiteStatus::Pass
                ),
                (
                    "2025-11-25/prompts-list:prompts-list#2",
                    SuiteStatus::Expected
                ),
            ]
        );
        assert_eq!(checks[0].reason, "no prompts");
        let run = ConformanceRun {
            suite: install::SUITE,
            revision: conformance.revision.clone(),
            via: Via::Shim,
            baseline: "b".into(),
            checks,
        };
        let judged = judge(&run);
        assert_eq!(judged[0].status, Status::Fail);
        assert!(
            judged[0].reason.contains("tools-list: tools-list said so"),
            "{}",
            judged[0].reason
        );
        assert_eq!(judged[1].status, Status::Warn);
        assert!(judged[1].reason.contains("2025-11-25/ping:ping"));
    }

    #[test]
    fn a_run_where_nothing_of_the_target_passed_is_not_exercised() {
        let checks = classify(
            &conformance(),
            Via::Shim,
            vec![
                raw("prompts-list", "prompts-list", "FAILURE"),
                raw(
                    "dns-rebinding-protection",
                    "localhost-host-rebinding-rejected",
                    "SUCCESS",
                ),
                raw(
                    "caching",
                    "sep-2549-resources-read-caching-hints",
                    "SKIPPED",
                ),
            ],
        );
        let run = ConformanceRun {
            suite: install::SUITE,
            revision: "2025-11-25".into(),
            via: Via::Shim,
            baseline: "b".into(),
            checks,
        };
        let judged = judge(&run);
        assert_eq!(
            judged[0].status,
            Status::NotExercised,
            "{}",
            judged[0].reason
        );
        assert!(judged[0].exercise.is_some());
    }

    #[test]
    fn over_http_the_transport_checks_count() {
        let checks = classify(
            &conformance(),
            Via::Http,
            vec![raw(
                "dns-rebinding-protection",
                "localhost-host-rebinding-rejected",
                "FAILURE",
            )],
        );
        assert_eq!(checks[0].status, SuiteStatus::Fail);
    }
}
