//! `ecp check`: a conformance runner that speaks MCP to any implementation
//! (an extension folder or archive started as Qwen starts it, any stdio
//! command, or a Streamable HTTP URL) and proves every promise of
//! profile-v1, faults included.
//!
//! - [`target`]: resolving and starting the target, the MCP session;
//! - [`catalogue`]: the checks' stable IDs, titles, groups, skip reasons;
//! - [`embedded`]: the contract data, refused whole when any part is missing;
//! - [`suite`]: the checks themselves;
//! - [`schema`]: judging a declared schema by what it accepts;
//! - [`upstream`]: the scripted Generic HTTP Search V1 upstream on loopback.

pub mod catalogue;
pub mod embedded;
pub mod process;
pub mod schema;
pub mod suite;
pub mod target;
pub mod upstream;

use std::{collections::BTreeMap, time::Duration};

use serde::Serialize;

pub use suite::{CheckResult, Status};
use suite::{Suite, TOKEN_CANARY};
use target::{DEFAULT_CALL_TIMEOUT, Launch, ManifestServer, Session, Target};

use crate::providers::http::{DEFAULT_BASE_URL_ENV, DEFAULT_TOKEN_ENV};

/// Why `ecp check` or `ecp call` could not run at all (exit 2). The
/// target's own failures are findings of the suite, not these.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// ecp's embedded contract data is incomplete: a defect of this build,
    /// refused rather than run with fewer checks.
    #[error("{0}")]
    Embedded(String),
    /// The scripted (or fixture) upstream could not listen on loopback.
    #[error("{0}")]
    Upstream(String),
    /// The target could not be resolved, started or reached.
    #[error("{0}")]
    Target(String),
    /// Settings that cannot go together.
    #[error("{0}")]
    Settings(String),
}

/// How to run the suite.
#[derive(Debug, Clone)]
pub struct CheckSettings {
    pub target: Target,
    /// For a command target: the variables that carry the V1 endpoint and
    /// credential (defaults: PROVIDER_CONTEXT_BASE_URL/_TOKEN).
    pub base_url_env: Option<String>,
    pub token_env: Option<String>,
    /// For a URL target: a bearer token for the MCP endpoint itself.
    pub bearer: Option<String>,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub target: String,
    pub checks: Vec<CheckResult>,
    pub passed: usize,
    /// Conforming checks with something to look at (exit status 0).
    pub warned: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

fn describe(target: &Target) -> String {
    match target {
        Target::Extension(path) => path.display().to_string(),
        Target::Command(command) => command.join(" "),
        Target::Url(url) => url.clone(),
    }
}

/// Starts the target and runs every check. `progress` sees each result as
/// it is decided. `Err` when the target cannot be started at all.
pub async fn run(
    settings: &CheckSettings,
    progress: suite::Progress<'_>,
) -> Result<CheckReport, CheckError> {
    let embedded = embedded::Embedded::get().map_err(CheckError::Embedded)?;
    let upstream = suite::start_upstream(embedded)
        .await
        .map_err(CheckError::Upstream)?;
    let (session, include_tools, with_upstream) = match &settings.target {
        Target::Extension(path) => {
            let server = target::from_extension(path, Some((&upstream.base_url, TOKEN_CANARY)))
                .map_err(CheckError::Target)?;
            match server {
                ManifestServer::Local(mut launch) => {
                    if let Some(note) = &launch.note {
                        eprintln!("{note}");
                    }
                    target::reach_loopback_directly(&mut launch.env);
                    let binding = launch.binding.is_some();
                    (
                        Session::spawn(&launch).await.map_err(CheckError::Target)?,
                        launch.include_tools.clone(),
                        binding,
                    )
                }
                ManifestServer::Remote {
                    url,
                    call_timeout,
                    include_tools,
                } => (
                    Session::connect(&url, settings.bearer.clone(), call_timeout)
                        .await
                        .map_err(CheckError::Target)?,
                    include_tools,
                    false,
                ),
            }
        }
        Target::Command(command) => {
            let [program, args @ ..] = command.as_slice() else {
                return Err(CheckError::Settings("no command given after --".into()));
            };
            let base_url_env = settings
                .base_url_env
                .clone()
                .unwrap_or_else(|| DEFAULT_BASE_URL_ENV.into());
            let token_env = settings
                .token_env
                .clone()
                .unwrap_or_else(|| DEFAULT_TOKEN_ENV.into());
            let mut env = BTreeMap::from([
                (base_url_env.clone(), upstream.base_url.clone()),
                (token_env.clone(), TOKEN_CANARY.to_owned()),
            ]);
            target::reach_loopback_directly(&mut env);
            let launch = Launch {
                program: program.clone(),
                note: None,
                args: args.to_vec(),
                cwd: None,
                env,
                call_timeout: DEFAULT_CALL_TIMEOUT,
                include_tools: None,
                binding: Some(target::BindingEnv {
                    base_url: base_url_env,
                    token: token_env,
                }),
                _extracted: None,
            };
            (
                Session::spawn(&launch).await.map_err(CheckError::Target)?,
                None,
                true,
            )
        }
        Target::Url(url) => (
            Session::connect(url, settings.bearer.clone(), DEFAULT_CALL_TIMEOUT)
                .await
                .map_err(CheckError::Target)?,
            None,
            false,
        ),
    };
    let suite = Suite::new(
        embedded,
        &session,
        with_upstream.then_some(&upstream),
        include_tools,
        progress,
    );
    let checks = suite.run().await;
    session.close().await;
    let count = |status| checks.iter().filter(|c| c.status == status).count();
    Ok(CheckReport {
        target: describe(&settings.target),
        passed: count(Status::Pass),
        warned: count(Status::Warn),
        failed: count(Status::Fail),
        skipped: count(Status::Skip),
        checks,
    })
}

/// What `ecp call` got back: the result, and what the server wrote to
/// stderr meanwhile (its redacted category line when the call failed).
#[derive(Debug)]
pub struct CallOutcome {
    pub result: rmcp::model::CallToolResult,
    /// `None` for a URL target (no process to read).
    pub stderr: Option<String>,
}

/// The token a fixture upstream hands out; it is not a secret.
const FIXTURE_TOKEN: &str = "ecp-call-fixture";

/// A Generic HTTP Search V1 endpoint on 127.0.0.1 answering from `corpus`
/// (`ecp call --fixture`): the binding's request in, the corpus's best
/// `limit` items out.
pub async fn fixture_upstream(
    corpus: crate::providers::fixture::FixtureCorpus,
) -> Result<upstream::Upstream, CheckError> {
    upstream::Upstream::try_start(move |request| {
        let body: serde_json::Value = serde_json::from_str(&request.body).unwrap_or_default();
        let limit = body["limit"].as_u64().unwrap_or(5).min(50) as usize;
        let items: Vec<serde_json::Value> = corpus
            .rank(&request.query(), limit)
            .into_iter()
            .map(|item| {
                let mut value = serde_json::json!({"id": item.id, "content": item.content});
                for (key, field) in [
                    ("title", item.title),
                    ("uri", item.uri),
                    ("updated_at", item.updated_at),
                ] {
                    if let Some(field) = field {
                        value[key] = field.into();
                    }
                }
                if let Some(score) = item.score {
                    value["score"] = score.into();
                }
                value
            })
            .collect();
        upstream::Reply::json(serde_json::json!({ "items": items }).to_string())
    })
    .await
    .map_err(|e| {
        CheckError::Upstream(format!(
            "cannot start the fixture endpoint on 127.0.0.1: {e}"
        ))
    })
}

/// `ecp call`: one `context_search` call against a target. With a fixture
/// upstream, the target's endpoint and credential variables point at it.
pub async fn call_once(
    settings: &CheckSettings,
    query: &str,
    fixture: Option<&upstream::Upstream>,
) -> Result<CallOutcome, CheckError> {
    let upstream = fixture.map(|u| (u.base_url.as_str(), FIXTURE_TOKEN));
    let session = match &settings.target {
        Target::Extension(path) => {
            match target::from_extension(path, upstream).map_err(CheckError::Target)? {
                ManifestServer::Local(mut launch) => {
                    if let Some(note) = &launch.note {
                        eprintln!("{note}");
                    }
                    if fixture.is_some() {
                        if launch.binding.is_none() {
                            return Err(CheckError::Settings(
                            "--fixture needs a manifest that passes the endpoint and credential in `env` (`*_BASE_URL`, `*_TOKEN`), as `ecp new` writes it"
                                .into(),
                        ));
                        }
                        target::reach_loopback_directly(&mut launch.env);
                    }
                    let binding = launch.binding.clone();
                    Session::spawn(&launch).await.map_err(|error| {
                    match (binding, fixture) {
                        (Some(binding), None) => format!(
                            "{error}\n  = help: the server needs {} and {} (a live Generic HTTP Search V1 endpoint); without one, try the built-in example corpus: `ecp call {} {query:?} --fixture example`",
                            binding.base_url,
                            binding.token,
                            path.display()
                        ),
                        _ => error,
                    }
                })
                .map_err(CheckError::Target)?
                }
                ManifestServer::Remote {
                    url, call_timeout, ..
                } => {
                    if fixture.is_some() {
                        return Err(CheckError::Settings(
                            "--fixture applies to a local extension, not to a remote (httpUrl) one"
                                .into(),
                        ));
                    }
                    Session::connect(&url, settings.bearer.clone(), call_timeout)
                        .await
                        .map_err(CheckError::Target)?
                }
            }
        }
        Target::Command(command) => {
            let [program, args @ ..] = command.as_slice() else {
                return Err(CheckError::Settings("no command given after --".into()));
            };
            let mut env = BTreeMap::new();
            if let Some(fixture) = fixture {
                env.insert(
                    settings
                        .base_url_env
                        .clone()
                        .unwrap_or_else(|| DEFAULT_BASE_URL_ENV.into()),
                    fixture.base_url.clone(),
                );
                env.insert(
                    settings
                        .token_env
                        .clone()
                        .unwrap_or_else(|| DEFAULT_TOKEN_ENV.into()),
                    FIXTURE_TOKEN.to_owned(),
                );
                target::reach_loopback_directly(&mut env);
            }
            let launch = Launch {
                program: program.clone(),
                note: None,
                args: args.to_vec(),
                cwd: None,
                env,
                call_timeout: Duration::from_secs(600),
                include_tools: None,
                binding: None,
                _extracted: None,
            };
            Session::spawn(&launch).await.map_err(CheckError::Target)?
        }
        Target::Url(url) => {
            if fixture.is_some() {
                return Err(CheckError::Settings(
                    "--fixture applies to a local extension or a command, not to --url".into(),
                ));
            }
            Session::connect(url, settings.bearer.clone(), Duration::from_secs(600))
                .await
                .map_err(CheckError::Target)?
        }
    };
    let result = session.call(serde_json::json!({ "query": query })).await;
    // A failed call's category line may still be on its way.
    if result.as_ref().is_ok_and(|r| r.is_error == Some(true)) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stderr = session.is_process().then(|| session.stderr());
    session.close().await;
    result
        .map(|result| CallOutcome { result, stderr })
        .map_err(CheckError::Target)
}
