//! `ecp check`: a conformance runner that speaks MCP to any implementation
//! (an extension folder or archive started as Qwen starts it, any stdio
//! command, or a Streamable HTTP URL) and proves every promise of
//! profile-v1, faults included.
//!
//! - [`target`]: resolving and starting the target, the MCP session;
//! - [`suite`]: the checks, with stable IDs;
//! - [`schema`]: judging a declared schema by what it accepts;
//! - [`upstream`]: the scripted Generic HTTP Search V1 upstream on loopback.

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
) -> Result<CheckReport, String> {
    let upstream = suite::start_upstream().await?;
    let (session, include_tools, with_upstream) = match &settings.target {
        Target::Extension(path) => {
            let server = target::from_extension(path, Some((&upstream.base_url, TOKEN_CANARY)))?;
            match server {
                ManifestServer::Local(mut launch) => {
                    target::reach_loopback_directly(&mut launch.env);
                    let binding = launch.binding.is_some();
                    (
                        Session::spawn(&launch).await?,
                        launch.include_tools.clone(),
                        binding,
                    )
                }
                ManifestServer::Remote {
                    url,
                    call_timeout,
                    include_tools,
                } => (
                    Session::connect(&url, settings.bearer.clone(), call_timeout).await?,
                    include_tools,
                    false,
                ),
            }
        }
        Target::Command(command) => {
            let [program, args @ ..] = command.as_slice() else {
                return Err("no command given after --".into());
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
            (Session::spawn(&launch).await?, None, true)
        }
        Target::Url(url) => (
            Session::connect(url, settings.bearer.clone(), DEFAULT_CALL_TIMEOUT).await?,
            None,
            false,
        ),
    };
    let suite = Suite::new(
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

/// `ecp call`: one `context_search` call against a target, its result.
pub async fn call_once(
    settings: &CheckSettings,
    query: &str,
) -> Result<rmcp::model::CallToolResult, String> {
    let session = match &settings.target {
        Target::Extension(path) => match target::from_extension(path, None)? {
            ManifestServer::Local(launch) => Session::spawn(&launch).await?,
            ManifestServer::Remote {
                url, call_timeout, ..
            } => Session::connect(&url, settings.bearer.clone(), call_timeout).await?,
        },
        Target::Command(command) => {
            let [program, args @ ..] = command.as_slice() else {
                return Err("no command given after --".into());
            };
            let launch = Launch {
                program: program.clone(),
                args: args.to_vec(),
                cwd: None,
                env: BTreeMap::new(),
                call_timeout: Duration::from_secs(600),
                include_tools: None,
                binding: None,
                _extracted: None,
            };
            Session::spawn(&launch).await?
        }
        Target::Url(url) => {
            Session::connect(url, settings.bearer.clone(), Duration::from_secs(600)).await?
        }
    };
    let result = session.call(serde_json::json!({ "query": query })).await;
    let stderr = session.stderr();
    session.close().await;
    result.map_err(|error| {
        if stderr.is_empty() {
            error
        } else {
            format!("{error}\nserver stderr:\n{stderr}")
        }
    })
}
